%% @doc Tests of the node-global send, receive and call trace patterns held by sessions
%% (riarc_trace_pattern): the union of the holders, the patterns of before put back when
%% the last one lets go, dead holders dropped, and what the VM then traces.
%% ```
%% $ rebar3 eunit --module=riarc_trace_pattern_tests
%% '''
-module(riarc_trace_pattern_tests).

-include_lib("eunit/include/eunit.hrl").

-define(ERRORS, [{['_', '_', {error, '_'}], [], []}]).
-define(STOPS, [{['_', '_', stop], [], []}]).
%% The call pattern held with any patterns: every start of a process on another node.
-define(SPAWN_CALL, {local, []}).
-define(UNTRACE_CALLS, [{local, []}, {local, []}, {local, []}]).
-define(TIMER_CALLS, [{global, [{['_', '_', timeout], [], []}]}, {global, [{['_', '_', timeout, '_'], [], []}]}]).

%% What riarc's holders installed, the keeper's meta patterns on erlang:trace/3 and
%% erlang:trace_pattern/2,3 checked apart: they name the keeper (riarc_untrace's flag
%% list left out; every call of trace_pattern, with its caller).
held() ->
    I = #{untrace_meta := [{Keeper, MS} | Patterns]} = riarc_trace_pattern:installed(),
    ?assertEqual(whereis(riarc_pattern_keeper), Keeper),
    ?assertMatch([{['$1', false, '$2'], [_, _], []}], MS),
    ?assertEqual([{Keeper, [{'_', [], [{message, {caller}}]}]} || _ <- [2, 3]], Patterns),
    maps:remove(untrace_meta, I).

union_and_restore_test() ->
    Before = riarc_trace_pattern:installed(),
    A = make_ref(), B = make_ref(),
    ok = riarc_trace_pattern:hold(A, self(), #{send => false, 'receive' => ?ERRORS}),
    ?assertEqual(#{send => false, 'receive' => riarc_route:receive_pattern(?ERRORS),
                   spawn_call => ?SPAWN_CALL, untrace_calls => ?UNTRACE_CALLS,
                   timer_calls => ?TIMER_CALLS},
                 held()),
    ok = riarc_trace_pattern:hold(B, self(), #{send => [{['_', '_'], [], []}], 'receive' => ?STOPS}),
    ?assertEqual(#{send => [{['_', '_'], [], []}],
                   'receive' => riarc_route:receive_pattern(lists:usort(?ERRORS ++ ?STOPS)),
                   spawn_call => ?SPAWN_CALL, untrace_calls => ?UNTRACE_CALLS,
                   timer_calls => ?TIMER_CALLS},
                 held()),
    ok = riarc_trace_pattern:release(A),
    ?assertEqual(#{send => [{['_', '_'], [], []}], 'receive' => riarc_route:receive_pattern(?STOPS),
                   spawn_call => ?SPAWN_CALL, untrace_calls => ?UNTRACE_CALLS,
                   timer_calls => ?TIMER_CALLS},
                 held()),
    ok = riarc_trace_pattern:release(B),
    ?assertEqual(Before, riarc_trace_pattern:installed()).

%% A holder that keeps every message (a session monitoring with a fun) keeps the others
%% from narrowing the patterns.
all_wins_test() ->
    A = make_ref(), B = make_ref(),
    ok = riarc_trace_pattern:hold(A, self(), #{send => false, 'receive' => ?ERRORS}),
    ok = riarc_trace_pattern:hold(B, self(), #{}),
    ?assertEqual(#{send => true, 'receive' => riarc_route:receive_pattern(true),
                   spawn_call => ?SPAWN_CALL, untrace_calls => ?UNTRACE_CALLS,
                   timer_calls => ?TIMER_CALLS},
                 held()),
    ok = riarc_trace_pattern:release(A),
    ok = riarc_trace_pattern:release(B).

dead_holder_dropped_test() ->
    Before = riarc_trace_pattern:installed(),
    {Pid, Ref} = spawn_monitor(fun() -> ok end),
    receive {'DOWN', Ref, process, Pid, _} -> ok end,
    ok = riarc_trace_pattern:hold(make_ref(), Pid, #{send => false}),
    %% The holder is dead already: nothing is held, nothing changed.
    ?assertEqual(Before, riarc_trace_pattern:installed()).

%% What the VM then traces: a process receiving an error and a stop is seen receiving the
%% error only; timeouts still come.
vm_traces_only_kept_messages_test() ->
    K = make_ref(),
    ok = riarc_trace_pattern:hold(K, self(), #{send => false, 'receive' => ?ERRORS}),
    try
        P = spawn(fun() -> receive go -> ok end,
                           receive after 1 -> ok end,
                           receive {error, _} -> ok end,
                           receive stop -> ok end end),
        erlang:trace(P, true, ['receive', send, procs]),
        P ! go, P ! {error, x}, P ! stop,
        Ref = monitor(process, P),
        receive {'DOWN', Ref, process, P, _} -> ok end,
        Msgs = collect(P),
        ?assertEqual([{error, x}], [M || {trace, _, 'receive', M} <- Msgs, M =/= timeout]),
        %% The receive timeout is traced, marked by riarc's clause (a process tracer
        %% gets the mark as a fifth element).
        ?assert(lists:member({trace, P, 'receive', timeout, clock_service}, Msgs)),
        ?assertEqual([], [M || {trace, _, send, M, _} <- Msgs])
    after
        riarc_trace_pattern:release(K)
    end.

collect(P) ->
    Ref = erlang:trace_delivered(P),
    receive {trace_delivered, P, Ref} -> ok end,
    collect_all([]).

collect_all(Acc) ->
    receive
        {trace, _, _, _} = M -> collect_all([M | Acc]);
        {trace, _, _, _, _} = M -> collect_all([M | Acc])
    after 0 -> lists:reverse(Acc)
    end.

valid_test() ->
    ?assert(riarc_trace_pattern:valid(#{send => false, 'receive' => ?ERRORS})),
    ?assertNot(riarc_trace_pattern:valid(#{send => [{['_', '_'], [{no_such_bif, '$1'}], []}]})),
    ?assertNot(riarc_trace_pattern:valid(#{recv => true})),
    ?assertNot(riarc_trace_pattern:valid(true)).

%% A call pattern another tool had on the function remote starts go through is put back
%% as it was when the last holder lets go.
spawn_call_restored_test() ->
    Fun = {erts_internal, dist_spawn_request, 4},
    MS = [{'_', [], [{return_trace}]}],
    1 = erlang:trace_pattern(Fun, MS, [local]),
    try
        K = make_ref(),
        ok = riarc_trace_pattern:hold(K, self(), #{}),
        ?assertMatch(#{spawn_call := ?SPAWN_CALL}, riarc_trace_pattern:installed()),
        ok = riarc_trace_pattern:release(K),
        ?assertMatch(#{spawn_call := {local, MS}}, riarc_trace_pattern:installed())
    after
        erlang:trace_pattern(Fun, false, [local])
    end.

%% A call event decoded: a start on another node names the node and the call the child
%% runs (an erpc process as its call); any other call is one of P's ignored events.
call_event_test() ->
    P = self(),
    Start = fun(MFA) -> {erts_internal, dist_spawn_request, [n@h, MFA, [], spawn_request]} end,
    ?assertEqual({remote_spawn, P, n@h, {m, f, [1]}},
                 riarc_trace_pattern:call_event(P, Start({m, f, [1]}))),
    ?assertEqual({remote_spawn, P, n@h, {m, f, [1]}},
                 riarc_trace_pattern:call_event(P, Start({erpc, execute_call, [make_ref(), m, f, [1]]}))),
    ?assertEqual({ignored, P}, riarc_trace_pattern:call_event(P, {lists, reverse, [[]]})),
    %% Calls that change tracing: every erlang:trace/3, and the patterns riarc relies on.
    ?assertMatch({cut, P, {trace, [_, false, [send]]}},
                 riarc_trace_pattern:call_event(P, {erlang, trace, [P, false, [send]]})),
    ?assertMatch({cut, P, {trace_pattern, ['receive', false, []]}},
                 riarc_trace_pattern:call_event(P, {erlang, trace_pattern, ['receive', false, []]})),
    ?assertMatch({cut, P, _},
                 riarc_trace_pattern:call_event(P, {erlang, trace_pattern, [{erlang, '_', '_'}, false]})),
    ?assertEqual({ignored, P},
                 riarc_trace_pattern:call_event(P, {erlang, trace_pattern, [{lists, sort, 1}, true, []]})).

%% Whose view a call may cut: the caller's alone, the caller's and (through what its
%% later children inherit) any other's, or any partition's.
cut_scope_test() ->
    P = self(),
    Q = spawn(fun() -> ok end),
    ?assertEqual(own, riarc_trace_pattern:cut_scope(P, {trace, [P, false, [all]]})),
    ?assertEqual(own, riarc_trace_pattern:cut_scope(P, {trace, [P, false, [send, set_on_spawn]]})),
    ?assertEqual(own, riarc_trace_pattern:cut_scope(P, {trace, [P, false, [procs, 'receive']]})),
    ?assertEqual(own, riarc_trace_pattern:cut_scope(P, {trace, [P, true, [send, {tracer, Q}]]})),
    ?assertEqual(inherited, riarc_trace_pattern:cut_scope(P, {trace, [P, false, [send, 'receive']]})),
    ?assertEqual(inherited, riarc_trace_pattern:cut_scope(P, {trace, [P, false, [call]]})),
    %% A flag riarc does not set: the caller's partition, as any own call.
    ?assertEqual(own, riarc_trace_pattern:cut_scope(P, {trace, [P, false, [garbage_collection]]})),
    ?assertEqual(all, riarc_trace_pattern:cut_scope(P, {trace, [Q, false, [all]]})),
    ?assertEqual(all, riarc_trace_pattern:cut_scope(P, {trace, [all, false, [send]]})),
    ?assertEqual(all, riarc_trace_pattern:cut_scope(P, {trace_pattern, ['receive', false, []]})).

%% Children traced but never seen to start: a cut took `procs' and left `set_on_spawn'.
hides_children_test() ->
    P = self(),
    ?assert(riarc_trace_pattern:hides_children({trace, [P, false, [send, 'receive', procs]]})),
    ?assert(riarc_trace_pattern:hides_children({trace, [P, false, [procs]]})),
    ?assertNot(riarc_trace_pattern:hides_children({trace, [P, false, [procs, set_on_spawn]]})),
    ?assertNot(riarc_trace_pattern:hides_children({trace, [P, false, [all]]})),
    ?assertNot(riarc_trace_pattern:hides_children({trace, [P, false, [send, 'receive']]})),
    ?assertNot(riarc_trace_pattern:hides_children({trace, [P, true, [procs]]})),
    ?assert(riarc_trace_pattern:hides_children({flags_removed, [set_on_spawn, call]})),
    ?assertNot(riarc_trace_pattern:hides_children({flags_removed, []})),
    ?assertNot(riarc_trace_pattern:hides_children({flags_removed, [procs, set_on_spawn]})),
    ?assertNot(riarc_trace_pattern:hides_children({tracer_replaced, P})).

%% While anything is held, a call that takes another process's flags is in the keeper's
%% log, whoever makes it, and look/1 reads it once: not a process's call on itself (its
%% own event, in order), nor riarc's own (riarc_untrace), nor one made before the mark.
%% A release of a key held no more (the keeper's late one, after its owner's session let
%% go) changes nothing held, and installs nothing: the receive pattern someone turned
%% off since the last look stays off, and the next look finds it. Before, riarc put it
%% back, the look found the patterns intact, and a message taken meanwhile was never seen.
late_release_test() ->
    Before = riarc_trace_pattern:installed(),
    K = make_ref(),
    ok = riarc_trace_pattern:hold(K, self(), #{}),
    Mark = riarc_trace_pattern:untrace_mark(),
    try
        {ok, Mark1} = riarc_trace_pattern:look(Mark),
        _ = apply(erlang, trace_pattern, ['receive', false, []]),
        ok = riarc_trace_pattern:release(make_ref()),
        ?assertMatch(#{'receive' := false}, riarc_trace_pattern:installed()),
        ?assertMatch({{changed, #{installed := #{'receive' := false}}}, _}, riarc_trace_pattern:look(Mark1))
    after
        ok = riarc_trace_pattern:release(K)
    end,
    ?assertEqual(Before, riarc_trace_pattern:installed()).

%% Another session's start (a second holder) or end (a holder let go) installs the
%% holders' patterns again, over a receive pattern someone turned off since the last
%% look: each look after it still finds the change, once. The change is made while the
%% keeper is dead (killed), so that no meta pattern logs the call: only the install can
%% find it. Before, the install put the pattern back, the look found the patterns
%% intact, and a message taken meanwhile was never seen.
overwritten_test_() ->
    [{"a session " ++ atom_to_list(Change), fun() -> overwritten(Change) end}
     || Change <- [starts, ends]].

overwritten(Change) ->
    Before = riarc_trace_pattern:installed(),
    {K, K2} = {make_ref(), make_ref()},
    ok = riarc_trace_pattern:hold(K, self(), #{'receive' => ?ERRORS}),
    %% The second holder's start is the change in the first case; in the second it is
    %% there before the look, and its end is the change.
    Second = fun() -> ok = riarc_trace_pattern:hold(K2, self(), #{send => false, 'receive' => ?ERRORS}) end,
    Ends = Change =:= ends,
    try
        _ = Ends andalso Second(),
        Mark = riarc_trace_pattern:untrace_mark(),
        Other = riarc_trace_pattern:untrace_mark(),
        {ok, Mark1} = riarc_trace_pattern:look(Mark),
        Keeper = whereis(riarc_pattern_keeper),
        KRef = monitor(process, Keeper),
        exit(Keeper, kill),
        receive {'DOWN', KRef, process, Keeper, _} -> ok end,
        _ = apply(erlang, trace_pattern, ['receive', false, []]),
        case Ends of
            true -> ok = riarc_trace_pattern:release(K2);
            false -> Second()
        end,
        %% Put back by the install: only the log shows the change.
        ?assertEqual(riarc_route:receive_pattern(?ERRORS), maps:get('receive', riarc_trace_pattern:installed())),
        {{changed, Info}, Mark2} = riarc_trace_pattern:look(Mark1),
        ?assertMatch(#{overwritten := [#{installed := #{'receive' := false}}]}, Info),
        ?assertEqual([overwritten], maps:keys(Info)),
        %% Read once by each looker; every looker reads it.
        ?assertEqual({ok, Mark2}, riarc_trace_pattern:look(Mark2)),
        ?assertMatch({{changed, #{overwritten := [_]}}, _}, riarc_trace_pattern:look(Other))
    after
        ok = riarc_trace_pattern:release(K2),
        ok = riarc_trace_pattern:release(K)
    end,
    ?assertEqual(Before, riarc_trace_pattern:installed()).

%% A process riarc does not trace turns the receive pattern off and puts it back between
%% two looks: nothing a look compares shows it, the keeper's meta pattern on
%% erlang:trace_pattern/3 does, once to each looker. A call on a function riarc does not
%% rely on is not logged, nor one that counts calls (a profiler's), nor are riarc's own
%% (another session's start and end).
put_back_test() ->
    Before = riarc_trace_pattern:installed(),
    {K, K2} = {make_ref(), make_ref()},
    ok = riarc_trace_pattern:hold(K, self(), #{}),
    try
        {ok, Mark} = riarc_trace_pattern:look(riarc_trace_pattern:untrace_mark()),
        #{'receive' := Receive} = riarc_trace_pattern:installed(),
        Outsider = spawn_monitor_call(fun() ->
                                              _ = apply(erlang, trace_pattern, ['receive', false, []]),
                                              _ = apply(erlang, trace_pattern, ['receive', Receive, []]),
                                              _ = erlang:trace_pattern({lists, seq, 2}, false, [local]),
                                              %% A profiler's: counts leave riarc's patterns.
                                              _ = erlang:trace_pattern({erlang, trace, 3}, true, [call_count]),
                                              _ = erlang:trace_pattern({erlang, trace, 3}, false, [call_count]),
                                              ok
                                      end),
        ok = riarc_trace_pattern:hold(K2, self(), #{send => false}),
        ok = riarc_trace_pattern:release(K2),
        {{changed, Info}, Mark1} = riarc_trace_pattern:look(Mark),
        ?assertEqual(#{untraced => [#{caller => Outsider, call => {trace_pattern, ['receive', false, []]}},
                                    #{caller => Outsider, call => {trace_pattern, ['receive', Receive, []]}}]},
                     Info),
        ?assertEqual({ok, Mark1}, riarc_trace_pattern:look(Mark1))
    after
        ok = riarc_trace_pattern:release(K)
    end,
    ?assertEqual(Before, riarc_trace_pattern:installed()).

%% next_look/1 answers once a look is answered after it: none comes while nobody looks;
%% one comes from a process that keeps looking.
next_look_test() ->
    Before = riarc_trace_pattern:installed(),
    K = make_ref(),
    ok = riarc_trace_pattern:hold(K, self(), #{}),
    Looker = spawn_link(fun() -> keep_looking(riarc_trace_pattern:untrace_mark()) end),
    try
        ?assertEqual(ok, riarc_trace_pattern:next_look(60000)),
        ?assertEqual(ok, riarc_trace_pattern:next_look(60000))
    after
        unlink(Looker),
        Ref = monitor(process, Looker),
        exit(Looker, kill),
        receive {'DOWN', Ref, _, _, _} -> ok end
    end,
    ?assertEqual(timeout, riarc_trace_pattern:next_look(0)),
    %% The wait that timed out gets no late answer: a look answers it (dropped), and the
    %% look after it is answered after that, by the same keeper.
    {ok, Mark} = riarc_trace_pattern:look(riarc_trace_pattern:untrace_mark()),
    {ok, _} = riarc_trace_pattern:look(Mark),
    ?assertEqual([], [M || M = {_, looked} <- element(2, process_info(self(), messages))]),
    ok = riarc_trace_pattern:release(K),
    ?assertEqual(Before, riarc_trace_pattern:installed()).

keep_looking(Mark) ->
    {ok, Mark1} = riarc_trace_pattern:look(Mark),
    keep_looking(Mark1).

outside_untrace_test() ->
    Before = riarc_trace_pattern:installed(),
    Traced0 = riarc_test_traced:traced(),
    K = make_ref(),
    ok = riarc_trace_pattern:hold(K, self(), #{}),
    %% Neither outlives the test: a process left traced would be found by later tests.
    Sink = spawn(fun Drop() -> receive _ -> Drop() end end),
    P = spawn(fun() -> receive stop -> ok end end),
    try
        Traced = fun() -> 1 = erlang:trace(P, true, [send, 'receive', {tracer, Sink}]) end,
        Traced(),
        _ = spawn_monitor_call(fun() -> erlang:trace(P, false, [send]) end),
        Mark = riarc_trace_pattern:untrace_mark(),
        ?assertEqual({ok, Mark}, riarc_trace_pattern:look(Mark)),
        _ = spawn_monitor_call(fun() -> erlang:trace(self(), false, [all]) end),
        _ = riarc_untrace:untrace(P),
        Traced(),
        {ok, Mark1} = riarc_trace_pattern:look(Mark),
        Outsider = spawn_monitor_call(fun() -> erlang:trace(P, false, ['receive']) end),
        {{changed, #{untraced := [Call]} = Info}, Mark2} = riarc_trace_pattern:look(Mark1),
        ?assertEqual(#{caller => Outsider, call => {trace, [P, false, ['receive']]}}, Call),
        ?assertNot(is_map_key(expected, Info)),
        %% Read once.
        ?assertEqual({ok, Mark2}, riarc_trace_pattern:look(Mark2))
    after
        [begin Ref = monitor(process, X), exit(X, kill), receive {'DOWN', Ref, _, _, _} -> ok end end
         || X <- [P, Sink]],
        ok = riarc_trace_pattern:release(K)
    end,
    ok = riarc_test_traced:untraced(Traced0),
    ?assertEqual(Before, riarc_trace_pattern:installed()).

%% A process that makes a call and ends; its pid once it has.
spawn_monitor_call(Fun) ->
    {Pid, Ref} = spawn_monitor(fun() -> _ = Fun() end),
    receive {'DOWN', Ref, process, Pid, _} -> Pid end.
