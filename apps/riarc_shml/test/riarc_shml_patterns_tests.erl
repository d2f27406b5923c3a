%% @doc Tests of the trace patterns a property compiles to (riarc_shml_patterns): the
%% patterns of chosen formulae, cases where filtering would change a verdict (so every
%% message must be kept), and runs of a small system under riarc with and without the
%% patterns: same verdicts, fewer events, the VM's patterns put back afterwards.
%% ```
%% $ rebar3 eunit --module=riarc_shml_patterns_tests
%% '''
-module(riarc_shml_patterns_tests).

-include_lib("eunit/include/eunit.hrl").

-export([main/2, main_held/2, server/0, worker/3, waiting/1]).

clause(Formula) ->
    {ok, [C]} = riarc_shml:parse_string("with m:f(L) monitor [_ <- _, m:f(_)] " ++ Formula ++ ".",
                                        "t.prop"),
    riarc_shml_patterns:clause(C).

%%% Patterns of chosen formulae

no_error_file_test() ->
    {ok, Cs} = riarc_shml:parse_file("examples/props/no_error.prop"),
    Expected = #{'receive' => [{['_', '_', {error, '_'}], [], []}], send => false},
    ?assertEqual(Expected, riarc_shml_patterns:module(Cs)),
    {ok, Mod} = riarc_shml:load_file("examples/props/no_error.prop"),
    ?assertEqual(Expected, Mod:trace_patterns()),
    %% The one-line clauses and the sHML one filter the same receives.
    [C1, C2, C3] = [riarc_shml_patterns:clause(C) || C <- Cs],
    ?assertEqual(#{recv => [{['_', '_', {error, '_'}], [], []}], send => false}, C1),
    ?assertEqual(C1, C2),
    ?assertEqual(C1, C3).

kinds_not_mentioned_are_false_test() ->
    ?assertEqual(#{send => false, recv => false}, clause("[_ ** R when R =/= normal] ff")).

guards_translated_test() ->
    ?assertEqual(#{recv => [{['_', '_', {temp, '$1'}], [{'>', '$1', {const, 100}}], []}],
                   send => false},
                 clause("max(X. and([_ ? {temp, T} when T > 100] ff, [_ ? _] X))")).

guard_alternatives_are_clauses_test() ->
    #{recv := MS} = clause("max(X. and([_ ? {t, T} when T > 100; is_atom(T)] ff, [_ ? _] X))"),
    ?assertEqual(2, length(MS)),
    ?assert(riarc_shml_patterns:keeps(MS, [n, s, {t, 101}])),
    ?assert(riarc_shml_patterns:keeps(MS, [n, s, {t, x}])),
    ?assertNot(riarc_shml_patterns:keeps(MS, [n, s, {t, 5}])).

%% A variable bound earlier is not known to the VM: the pattern widens to any value, and
%% a guard test naming it is left out.
outer_variables_widen_test() ->
    #{recv := MS} = clause("max(X. and([_ ? {temp, T} when T > L] ff, [_ ? {limit, L}] ff, "
                           "[_ ? _] X))"),
    ?assert(riarc_shml_patterns:keeps(MS, [n, s, {temp, 1}])),
    ?assert(riarc_shml_patterns:keeps(MS, [n, s, {limit, 3}])),
    ?assertNot(riarc_shml_patterns:keeps(MS, [n, s, other])).

%% Atoms a match specification would read as variables are matched by a test.
special_atoms_test() ->
    #{recv := MS} = clause("max(X. and([_ ? {'$1', '_'}] ff, [_ ? _] X))"),
    ?assert(riarc_shml_patterns:keeps(MS, [n, s, {'$1', '_'}])),
    ?assertNot(riarc_shml_patterns:keeps(MS, [n, s, {a, b}])).

maps_and_lists_test() ->
    #{recv := MS} = clause("max(X. and([_ ? #{k := [1 | _]}] ff, [_ ? \"ab\" ++ _] ff, "
                           "[_ ? _] X))"),
    ?assert(riarc_shml_patterns:keeps(MS, [n, s, #{k => [1, 2]}])),
    ?assert(riarc_shml_patterns:keeps(MS, [n, s, "abc"])),
    ?assertNot(riarc_shml_patterns:keeps(MS, [n, s, #{k => [2]}])),
    ?assertNot(riarc_shml_patterns:keeps(MS, [n, s, "b"])).

%%% Kinds a clause does not mention, and clauses without an init action

bare(Src) ->
    {ok, [C]} = riarc_shml:parse_string(Src, "t.prop"),
    riarc_shml_patterns:clause(C).

%% A clause naming timeouts and no receive sees no receive: none is traced (timeouts
%% always are).
timeouts_only_trace_no_receive_test() ->
    ?assertEqual(#{send => false, recv => false},
                 bare("with m:f() monitor max(X. and([_ ?? timeout] ff, [_ ** _] X)).")).

%% Without an init action the start keeps the first state: the loops there filter too.
no_init_action_filters_test() ->
    ?assertEqual(#{recv => [{['_', '_', {error, '_'}], [], []}], send => false},
                 bare("with m:f(_) monitor max(X. and([_ ? {error, _}] ff, [_ ? _] X)).")).

%% ... but a first state the loops do not give back is a block of its own: a receive of
%% c drops [_ ? a] ff there, so every receive counts.
first_state_is_a_block_test() ->
    Src = "with m:f() monitor and([_ ? a] ff, max(X. and([_ ? b] ff, [_ ? _] X))).",
    ?assertMatch(#{recv := true}, bare(Src)),
    {ok, Cs} = riarc_shml:parse_string(Src, "t.prop"),
    Init = {init, c, p, {m, f, []}},
    ?assertEqual(none, riarc_shml_tests:verdict(Src, {m, f, []}, [Init, {recv, c, x}, {recv, c, a}])),
    ?assertEqual(none, riarc_shml_tests:ref_verdict(Cs, {m, f, []}, [Init, {recv, c, x}, {recv, c, a}])).

%%% Where no message may be left out

%% Without a loop, a receive that matches nothing discharges [_ ? a]: every receive counts.
no_loop_keeps_all_test() ->
    ?assertMatch(#{recv := true}, clause("[_ ? a] [_ ? b] ff")).

%% The loop names the monitored process: it does not match the receives of the other
%% processes of the partition, which then end the monitor.
loop_on_bound_process_keeps_all_test() ->
    {ok, [C]} = riarc_shml:parse_string(
                  "with m:f() monitor [P <- _, m:f()] max(X. and([P ? {error, _}] ff, [P ? _] X)).",
                  "t.prop"),
    ?assertMatch(#{recv := true}, riarc_shml_patterns:clause(C)).

%% The loop binds a variable its continuation uses: each receive changes the state.
loop_binding_used_variable_keeps_all_test() ->
    ?assertMatch(#{recv := true},
                 clause("max(X. [_ ? V] and(X, [_:_ ! V] ff))")).

%% A universal necessity that adds to the state (here [_ ? 1] ff) is no loop: filtered,
%% `init, recv 5, recv 1' would lose the reject.
growing_necessity_keeps_all_test() ->
    Src = "with m:f() monitor [_ <- _, m:f()] "
          "max(X. and([_ ? _] and(X, [_ ? 1] ff), [_:_ ! _] X)).",
    {ok, Cs} = riarc_shml:parse_string(Src, "t.prop"),
    ?assertMatch(#{'receive' := true}, riarc_shml_patterns:module(Cs)),
    ?assertEqual(reject, riarc_shml_ref:verdict(Cs, {m, f, []},
                                               [{init, a, b, {m, f, []}}, {recv, a, 5},
                                                {recv, a, 1}])).

%% A block is covered by several loops together: and(X, Y) after the first match.
covered_by_two_loops_test() ->
    ?assertMatch(#{recv := [{['_', '_', {t, '_'}], [], []}]},
                 clause("max(X. and([_ ? {t, _}] and(X, max(Y. and([_ ? {t, _}] ff, "
                        "[_ ? _] Y))), [_ ? _] X))")).

%%% Loops on specific messages: all but their stutters are kept

keeps(MS, Msg) -> riarc_shml_patterns:keeps(MS, [n, s, Msg]).

%% A receive that matches no necessity ends the monitor (accept): it must be kept; one
%% the loop gives the state back on may go.
specific_loop_leaves_out_its_stutters_test() ->
    Src = "with m:f() monitor [_ <- _, m:f()] max(X. and([_ ? {resp, _, _}] X, "
          "[_ ? {error, _}] ff)).",
    {ok, [C] = Cs} = riarc_shml:parse_string(Src, "t.prop"),
    #{recv := MS} = riarc_shml_patterns:clause(C),
    ?assert(keeps(MS, {error, x})),
    ?assert(keeps(MS, done)),
    ?assert(keeps(MS, {resp, 1})),
    ?assertNot(keeps(MS, {resp, 1, 2})),
    Init = {init, a, b, {m, f, []}},
    Full = [Init, {recv, a, {resp, 1, 2}}, {recv, a, done}, {recv, a, {error, x}}],
    Kept = [E || E = {K, _, _, _} <- Full, K =:= init]
        ++ [E || E = {recv, _, M} <- Full, keeps(MS, M)],
    ?assertEqual(accept, riarc_shml_ref:verdict(Cs, {m, f, []}, Full)),
    ?assertEqual(accept, riarc_shml_ref:verdict(Cs, {m, f, []}, Kept)).

repeated_variable_test() ->
    #{recv := MS} = clause("max(X. and([_ ? {t, Z, Z}] X, [_ ? e] ff))"),
    ?assert(keeps(MS, {t, 1, 0})),
    ?assertNot(keeps(MS, {t, 1, 1})).

loop_guard_test() ->
    #{recv := MS} = clause("max(X. and([_ ? {resp, N, _} when N > 0] X, [_ ? e] ff))"),
    ?assert(keeps(MS, {resp, 0, x})),
    ?assertNot(keeps(MS, {resp, 1, x})).

%% A guard that raises an exception on a message does not match it: `Z orelse ...' on 2
%% or 3; on false it is false.
boolean_guard_test() ->
    #{recv := MS} = clause("max(X. and([_ ? Z when Z orelse Z =:= 2] X, [_ ? e] ff))"),
    ?assert(keeps(MS, 3)),
    ?assert(keeps(MS, 2)),
    ?assert(keeps(MS, false)),
    ?assertNot(keeps(MS, true)).

lists_and_maps_test() ->
    #{recv := MS} = clause("max(X. and([_ ? [1 | _]] X, [_ ? #{k := V} when is_atom(V)] X, "
                           "[_ ? e] ff))"),
    ?assert(keeps(MS, [])),
    ?assert(keeps(MS, [2])),
    ?assert(keeps(MS, #{k => 1})),
    ?assert(keeps(MS, #{j => a})),
    ?assertNot(keeps(MS, [1 | x])),
    ?assertNot(keeps(MS, #{k => a, j => 1})).

%% What the VM cannot decide is no stutter: a test that may raise an exception
%% (element/2), a variable bound earlier, a named process.
unsaid_loops_keep_all_test() ->
    ?assertMatch(#{recv := true},
                 clause("max(X. and([_ ? Z when element(1, Z) =:= t] X, [_ ? e] ff))")),
    ?assertMatch(#{recv := true}, clause("max(X. and([_ ? {t, L}] X, [_ ? e] ff))")),
    ?assertMatch(#{recv := true}, clause("max(X. and([_ ? {t, Z} when Z > L] X, [_ ? e] ff))")),
    ?assertMatch(#{recv := true}, clause("max(X. and([a ? {t, _}] X, [_ ? e] ff))")),
    ?assertMatch(#{send := true}, clause("max(X. and([_:b ! {t, _}] X, [_:_ ! e] ff))")).

%% The first state is given back only by both loops together: a stutter matches both;
%% {t, 0} drops [_ ? {t, 1}] Y and [_ ? 3] ff, a change.
joint_cover_test() ->
    #{recv := MS} = clause("and(max(X. and([_ ? {t, _}] X, [_ ? 2] ff)), "
                           "max(Y. and([_ ? {t, 1}] Y, [_ ? 3] ff)))"),
    ?assert(keeps(MS, {t, 0})),
    ?assert(keeps(MS, 2)),
    ?assertNot(keeps(MS, {t, 1})).

%%% Online: a server, workers, round trips; one worker may get {error, _}

%% @private The system: N workers, K round trips each; worker Bad (0: none) gets an error.
-spec main_held(pos_integer(), {pos_integer(), non_neg_integer()}) -> ok.
main_held(N, KB) ->
    receive go -> main(N, KB) end.

%% @private
-spec main(pos_integer(), {pos_integer(), non_neg_integer()}) -> ok.
main(N, {K, Bad}) ->
    Srv = spawn(?MODULE, server, []),
    Ws = [spawn_monitor(?MODULE, worker, [Srv, K, I =:= Bad]) || I <- lists:seq(1, N)],
    _ = [receive {'DOWN', R, process, P, _} -> ok end || {P, R} <- Ws],
    Srv ! stop,
    ok.

%% @private
-spec server() -> ok.
server() ->
    receive
        {req, From, true} -> From ! {error, bad}, server();
        {req, From, false} -> From ! {ok, 1}, server();
        stop -> ok
    end.

%% @private
-spec worker(pid(), non_neg_integer(), boolean()) -> ok.
worker(_Srv, 0, _Bad) -> ok;
worker(Srv, K, Bad) ->
    Srv ! {req, self(), Bad andalso K =:= 1},
    receive {_, _} -> ok end,
    worker(Srv, K - 1, Bad).

verdicts(Mod, Bad, Opts) ->
    {ok, R} = riarc:run({?MODULE, main, [10, {50, Bad}]}, Mod, Opts#{timeout => 60000}),
    {lists:sort([{MFA, V} || #{mfa := MFA, verdict := V} <- maps:get(verdicts, R)]),
     maps:get(events, R)}.

online_test_() ->
    {timeout, 120, fun online/0}.

online() ->
    {ok, Mod} = riarc_shml:load_file("examples/props/no_error.prop"),
    %% While a session filters, the VM's patterns are the property's (with riarc's clause
    %% for receive timeouts), and the call pattern every session holds.
    %% Held until the patterns are read: a system that ran to its end first would have
    %% ended the session, and its patterns with it.
    {ok, S} = riarc:start({?MODULE, main_held, [2, {1, 0}]}, Mod, #{}),
    During = riarc_trace_pattern:installed(),
    #{processes := [Root]} = riarc:alive(S),
    Root ! go,
    {ok, _} = riarc_session:finish(S, 60000),
    ?assertEqual(#{send => false,
                   'receive' => riarc_route:receive_pattern([{['_', '_', {error, '_'}], [], []}]),
                   spawn_call => {local, []}},
                 maps:without([untrace_calls, timer_calls, untrace_meta], During)),
    [begin
         {Filtered, NF} = verdicts(Mod, Bad, #{}),
         {Full, NA} = verdicts(Mod, Bad, #{trace_patterns => #{}}),
         ?assertEqual(Full, Filtered),
         %% Nothing but the one {error, _} is received by a pattern: a fraction of events.
         ?assert(NF * 5 < NA),
         Rejects = [V || {_, reject} = V <- Filtered],
         ?assertEqual(case Bad of 0 -> 0; _ -> 1 end, length(Rejects))
     end || Bad <- [0, 3]],
    %% Afterwards every message is traced again.
    #{send := SendP, 'receive' := RecvP} = riarc_trace_pattern:installed(),
    ?assert(riarc_shml_patterns:keeps(SendP, [self(), hello])),
    ?assert(riarc_shml_patterns:keeps(RecvP, [node(), self(), hello])).

%% Node-global patterns: a session that monitors with a fun (every message) while another
%% filters still gets every event, as many as when it runs alone.
concurrent_sessions_test_() ->
    {timeout, 120, fun concurrent_sessions/0}.

concurrent_sessions() ->
    {ok, Mod} = riarc_shml:load_file("examples/props/no_error.prop"),
    Every = fun(_) -> {ok, fun M(_) -> M end} end,
    Alone = events_of(riarc:run({?MODULE, main, [5, {20, 0}]}, Every, #{})),
    %% The filtering session's system waits for `go' until the other session is over.
    {ok, A} = riarc:start({?MODULE, waiting, [self()]}, Mod, #{}),
    Waiting = receive {waiting, P} -> P end,
    ?assertMatch(#{send := false}, riarc_trace_pattern:installed()),
    Together = events_of(riarc:run({?MODULE, main, [5, {20, 0}]}, Every, #{})),
    Waiting ! go,
    {ok, _} = riarc_session:finish(A, 60000),
    ?assertEqual(Alone, Together).

events_of({ok, #{events := N}}) -> N.

%% @private A system that waits for `go'.
-spec waiting(pid()) -> ok.
waiting(Test) ->
    Test ! {waiting, self()},
    receive go -> ok end.
