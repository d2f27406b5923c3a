%% @doc The projection changes no verdict: on random properties (two clauses, as source
%% text) and random traces, the trace riarc collects under the compiled module's trace
%% flags and trace patterns (the message events the patterns drop removed, each decided by
%% the VM's own match specification test) gives the same verdict, by the reference
%% interpreter and by the compiled monitor, as the full trace by the reference
%% interpreter. The formulae are biased towards loops, on every message or on specific
%% ones (riarc_shml_prop_tests:formula/1 and loop_action/2), and the test checks that the
%% patterns do drop events in a good share of the cases, and under the stutter guard of
%% loops on specific messages in some, so that it cannot pass by keeping everything.
%% ```
%% $ rebar3 eunit --module=riarc_shml_patterns_prop_tests
%% '''
-module(riarc_shml_patterns_prop_tests).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-define(NUMTESTS, 400).
-define(SEED, {17, 3, 2026}).

-export([check/2, formula/0]).

%% The fast tier: the reference interpreter only. riarc_shml_patterns_SUITE runs more
%% cases with the compiled monitor too.
projection_keeps_verdicts_test_() ->
    {timeout, 300, fun() -> check(riarc_test_tier:count(150, ?NUMTESTS), false) end}.

%% @doc Runs the property on N cases (seeded), the compiled monitor checked too when
%% Compiled; fails unless every case passes and a quarter of the traces lost events.
-spec check(pos_integer(), boolean()) -> ok.
check(N, Compiled) ->
    Stats = ets:new(stats, [public]),
    ets:insert(Stats, [{cases, 0}, {filtered, 0}, {stutters, 0}]),
    Ok = riarc_test_tier:quickcheck(prop_projection_keeps_verdicts(Stats, Compiled), {N, N},
                                    [{seed, ?SEED}, {to_file, user}]),
    [{cases, Cases}] = ets:lookup(Stats, cases),
    [{filtered, Filtered}] = ets:lookup(Stats, filtered),
    [{stutters, Stutters}] = ets:lookup(Stats, stutters),
    io:format(user, "~nprojection: ~b of ~b traces lost events to the patterns, ~b of them "
              "under a stutter guard of loops on specific messages (seed ~p)~n",
              [Filtered, Cases, Stutters, ?SEED]),
    ?assert(Ok),
    %% The patterns are not all `true': a quarter of the traces at least lose events, and
    %% a tenth lose them under patterns that keep all but the stutters of specific loops.
    ?assert(Filtered * 4 >= Cases),
    ?assert(Stutters * 10 >= Cases),
    ok.

prop_projection_keeps_verdicts(Stats, WithCompiled) ->
    ?FORALL({F1, F2, Events}, {formula(), formula(), list(event())},
            begin
                %% Past the init event, as properties are written (a formula that does
                %% not start with an init action is decided on the init event).
                Src = lists:flatten(["with m:f(W) monitor [_ <- _, _:_(_)] ", F1,
                                     ".\nwith m:g(W) monitor [_ <- _, _:_(_)] ", F2, "."]),
                {ok, Clauses} = riarc_shml:parse_string(Src, "random.prop"),
                Flags = lists:usort(lists:append([riarc_shml_compile:kinds(C) || C <- Clauses])),
                Patterns = riarc_shml_patterns:module(Clauses),
                Checks = [begin
                              %% The first event of a partition's trace is its process's
                              %% init event, never a message.
                              Trace = [{init, a, b, MFA} | Events],
                              Kept = [E || E <- Trace, collected(E, Flags, Patterns)],
                              ets:update_counter(Stats, cases, 1),
                              Lost = length(Kept) < length([E || E <- Trace, kind_traced(E, Flags)]),
                              _ = [ets:update_counter(Stats, filtered, 1) || Lost],
                              _ = [ets:update_counter(Stats, stutters, 1)
                                   || Lost, stutter_guard(Patterns)],
                              %% (PropEr 1.2 cannot report a crashing property on OTP 25.)
                              Compiled = case WithCompiled of
                                             true -> try riarc_shml_tests:verdict(Src, MFA, Kept)
                                                     catch C:R -> {crashed, C, R} end;
                                             false -> not_checked
                                         end,
                              {MFA, riarc_shml_tests:ref_verdict(Clauses, MFA, Trace),
                               riarc_shml_tests:ref_verdict(Clauses, MFA, Kept), Compiled, Kept}
                          end || MFA <- [{m, f, [1]}, {m, g, [1]}]],
                ?WHENFAIL(io:format(user, "seed ~p~n~ts~npatterns: ~p~nevents: ~p~n"
                                    "{MFA, full, filtered, compiled on filtered, kept}: ~p~n",
                                    [?SEED, Src, Patterns, Events, Checks]),
                          lists:all(fun({_, Full, Filtered, Compiled, _}) ->
                                            Full =:= Filtered andalso
                                                (Compiled =:= not_checked orelse Full =:= Compiled)
                                    end, Checks))
            end).

%% Random formulae biased towards loops (riarc_shml_prop_tests:formula/1), or one max
%% whose loops match specific messages (riarc_shml_prop_tests:loop_action/2), beside
%% necessities that reject and random formulae (which may leave blocks uncovered).
formula() ->
    frequency([{1, riarc_shml_prop_tests:formula(8)},
               {2, ?LET({Others, Loops},
                        {?LET(N, choose(0, 3), vector(N, frequency(
                                                        [{3, check()},
                                                         {1, resize(8, riarc_shml_prop_tests:formula(8))}]))),
                         ?LET(N, choose(1, 3),
                              vector(N, riarc_shml_prop_tests:loop_action("Z9", ["W"])))},
                        ["max(X9. and(", lists:join(", ", Others ++ [[L, "X9"] || L <- Loops]),
                         "))"])}]).

%% A necessity that rejects on a message (or an exit).
check() ->
    oneof(["[_ ? {t, 0, _}] ff", "[_ ? {t, 2}] ff", "[_ ? [_ | x]] ff", "[_ ? 2] ff",
           "[_ ? M when is_map(M)] ff", "[_:_ ! {t, _, _}] ff", "[_:_ ! 2] ff",
           "[_ ** crash] ff", "[_ ? {t, W}] ff", "[_ ? true] [_ ? a] ff"]).

%% Whether a pattern keeps all but the stutters of loops on specific messages: a clause
%% `not' of their test (riarc_shml_patterns).
stutter_guard(Patterns) ->
    lists:any(fun(MS) -> is_list(MS) andalso lists:any(fun({_, [{'not', _}], _}) -> true;
                                                           (_) -> false
                                                       end, MS)
              end, maps:values(Patterns)).

%% The shared events, and messages of more shapes for the loops on specific messages.
event() ->
    frequency([{3, riarc_shml_prop_tests:event()},
               {1, {recv, oneof([a, b]), msg()}},
               {1, {send, oneof([a, b]), oneof([a, b]), msg()}}]).

msg() ->
    oneof([{t, 0, 0}, {t, 1, 0}, {t, a}, {t, 2}, [1 | x], [1], [2], #{k => 1}, #{k => a},
           true, a]).

%% Whether riarc would collect the event: its kind is traced and the VM's match
%% specification (for receives, riarc's receive pattern around the property's) keeps it.
collected(E, Flags, #{send := S, 'receive' := R}) ->
    kind_traced(E, Flags) andalso
        case E of
            {send, _, To, Msg} -> riarc_shml_patterns:keeps(S, [To, Msg]);
            {recv, _, Msg} ->
                riarc_shml_patterns:keeps(riarc_route:receive_pattern(R), [node(), self(), Msg]);
            {timeout, _} ->
                riarc_shml_patterns:keeps(riarc_route:receive_pattern(R),
                                          [clock_service, undefined, timeout]);
            _ -> true
        end.

kind_traced({send, _, _, _}, Flags) -> lists:member(send, Flags);
kind_traced({recv, _, _}, Flags) -> lists:member(recv, Flags);
kind_traced({timeout, _}, Flags) -> lists:member(recv, Flags);
kind_traced(_, _) -> true.
