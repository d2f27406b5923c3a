%% The overload part's decisions (riarc_session_overload): which effects, in which order,
%% for each policy, the watchdog, stop/1's grace and an analysis announced after a
%% detach. The session carries them out as listed, so the order is what is checked.
-module(riarc_session_overload_tests).

-include_lib("eunit/include/eunit.hrl").

limits(Policy) ->
    riarc_session_limits:new(riarc_opts:limits(#{limits => #{policy => Policy}}), riarc_opts:budget(#{})).

%% A book with one analysis An of Tracer's partition.
book(An, Tracer) ->
    {As, [{monitor, An}]} = riarc_session_analyses:up(An, Tracer, atomics:new(4, [{signed, true}]),
                                                       riarc_session_analyses:new()),
    As.

shed_test() ->
    As = book(an, tracer),
    What = {analysis, tracer, 5, 3},
    {L1, Fx} = riarc_session_overload:act(What, limits(shed), As),
    %% Shedding one partition is no detach: the session goes on watching the others.
    ?assertEqual(undefined, riarc_session_limits:overload(L1)),
    ?assertMatch([{warning, _, [What]},
                  {kill, an},
                  {entry, tracer, 0, {inconclusive, {shed, #{dropped := 5, max_queue := 3}}}},
                  {shed_count, tracer}], Fx).

shed_without_analysis_test() ->
    %% Nothing of the partition's runs any more: nothing to shed, nothing said.
    ?assertMatch({_, []}, riarc_session_overload:act({analysis, tracer, 5, 3}, limits(shed),
                                                     riarc_session_analyses:new())).

detach_test() ->
    As = book(an, tracer),
    What = {tracers, 11, 10},
    {L1, Fx} = riarc_session_overload:act(What, limits(shed), As),
    ?assertEqual(What, riarc_session_limits:overload(L1)),
    %% The detach first, then the log line (it may be slow), then the partitions told,
    %% then the analyses ended as inconclusive.
    ?assertMatch([detach, {warning, _, [What]}, {republish, _},
                  {kill, an}, {entry, tracer, 0, {inconclusive, {overload, What}}}], Fx),
    {republish, Undecided} = lists:keyfind(republish, 1, Fx),
    ?assert(Undecided(#{verdict => none})),
    ?assertNot(Undecided(#{verdict => accept})),
    %% Detached already: a second overload does nothing.
    ?assertEqual({L1, []}, riarc_session_overload:act({max_events, 12, 10}, L1, As)).

analysis_up_test() ->
    Clock = atomics:new(4, [{signed, true}]),
    %% Before any overload: watched, and the watchdog set.
    ?assertMatch({_, [{monitor, an}, watchdog]},
                 riarc_session_overload:analysis_up(an, tracer, Clock, limits(stop),
                                                    riarc_session_analyses:new())),
    %% After a detach (policy stop): ended at once, inconclusive.
    {L1, _} = riarc_session_overload:act({tracers, 11, 10}, limits(stop), riarc_session_analyses:new()),
    {As, Fx} = riarc_session_overload:analysis_up(an, tracer, Clock, L1, riarc_session_analyses:new()),
    ?assertEqual([an], riarc_session_analyses:pids(As)),
    ?assertEqual([{monitor, an}, {kill, an},
                  {entry, tracer, 0, {inconclusive, {overload, {tracers, 11, 10}}}}], Fx).

watchdog_test() ->
    %% No step is in progress: nothing is over its budget, and the timer is set again.
    ?assertMatch({_, [watchdog]}, riarc_session_overload:watchdog_fired(limits(stop), book(an, tracer))).

grace_test() ->
    An = spawn(fun() -> receive stop -> ok end end),
    As = book(An, tracer),
    %% A short step budget: the grace is at most one step's.
    L = riarc_session_limits:grace(riarc_session_limits:new(riarc_opts:limits(#{}),
                                                            riarc_opts:budget(#{monitor_budget => #{time_ms => 20}}))),
    ?assertEqual(false, riarc_session_overload:grace_over(make_ref(), L, As)),
    Ref = receive {riarc_grace, R} -> R end,
    {L1, Fx} = riarc_session_overload:grace_over(Ref, L, As),
    ?assertEqual([{kill, An}, {entry, tracer, 0, {inconclusive, {stopped, #{unanalysed => 0}}}}], Fx),
    %% Once over, the same timer ends nothing more.
    ?assertEqual(false, riarc_session_overload:grace_over(Ref, L1, As)),
    An ! stop.

%% The book answers which analyses a tracer's partition still has from an index kept by
%% tracer (the session asks at every end): as the analyses come and go, it agrees with
%% the running analyses, tracer by tracer.
of_tracer_index_test() ->
    Clock = atomics:new(4, [{signed, true}]),
    Up = fun({An, T}, A) -> element(1, riarc_session_analyses:up(An, T, Clock, A)) end,
    A1 = lists:foldl(Up, riarc_session_analyses:new(), [{a1, t1}, {a2, t1}, {a3, t2}]),
    ?assertEqual([a1, a2], lists:sort(riarc_session_analyses:of_tracer(t1, A1))),
    ?assertEqual([a3], riarc_session_analyses:of_tracer(t2, A1)),
    {t1, A2, _} = riarc_session_analyses:down(a1, normal, undefined, A1),
    ?assertEqual([a2], riarc_session_analyses:of_tracer(t1, A2)),
    {t1, A3, _} = riarc_session_analyses:down(a2, normal, undefined, A2),
    ?assertEqual([], riarc_session_analyses:of_tracer(t1, A3)),
    ?assertEqual([a3], riarc_session_analyses:of_tracer(t2, A3)),
    ?assertEqual(unknown, riarc_session_analyses:down(a1, normal, undefined, A3)),
    %% Its cost does not grow with the other partitions' analyses: counted in reductions
    %% (a walk of 20 000 running analyses took tens of thousands).
    Big = lists:foldl(Up, A3, [{{an, I}, {t, I}} || I <- lists:seq(1, 20000)]),
    Reds = fun() ->
                   {reductions, R0} = process_info(self(), reductions),
                   [a3] = riarc_session_analyses:of_tracer(t2, Big),
                   {reductions, R1} = process_info(self(), reductions),
                   R1 - R0
           end,
    ?assert(Reds() < 200, Reds()).
