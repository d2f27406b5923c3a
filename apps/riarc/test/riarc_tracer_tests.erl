%% Soundness of the online RIARC choreography: every monitor gets exactly the local traces
%% of its processes, under every arrangement and under perturbations that force the races
%% of figs. 5 and 6; nothing is left alive afterwards.
-module(riarc_tracer_tests).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-export([wait_forever/1, flood/1, link_of_chain/3, chain_root/2]).

%% Runs per arrangement: a multiple of 3, so that each perturbation gets its share.
-define(RUNS_PER_ARRANGEMENT, riarc_test_tier:count(30, 1000)).

%% Every arrangement of P, Q and R into tracers the spawn tree allows: each process
%% monitored on its own or left in its parent's partition (C1-C5 of §4.2 when P is
%% monitored; partial instrumentation C6, C7, ... when some are not).
arrangements() ->
    [{P, Q, R} || P <- [true, false], Q <- [true, false], R <- [true, false]].

%% Each with every placement of the monitors (placements/0): where a monitor runs, and
%% whether its partition has a tracer of its own, must not change what it sees.
pqr_arrangements_test_() ->
    [{lists:flatten(io_lib:format("P/Q/R own=~p, analysis ~s, ~b runs", [A, W, ?RUNS_PER_ARRANGEMENT])),
      {timeout, 300, fun() -> pqr_runs(A, W, ?RUNS_PER_ARRANGEMENT) end}}
     || A <- arrangements(), W <- placements()].

%% Where monitors run: in analysis processes of their own (isolated), in their tracers
%% with partitions adopted (inline, riarc_tracer_adopted: one tracer in all here), or in
%% their tracers with a tracer for every partition, as in the paper (option adopt 0).
placements() -> [isolated, inline, paper].

placement(paper) -> #{analysis => inline, adopt => 0};
placement(Where) -> #{analysis => Where}.

%% Whether a placement starts a tracer (and takes a process over) for each partition.
takes_over(inline) -> false;
takes_over(_) -> true.

%% A tracer tells the session its last words (its partition's verdict, its statistics, its
%% counts) in one message as it ends. In a system that spawns faster than tracers take
%% over (chains), tracers end before the session has seen them start, and its monitor of
%% them says only noproc: here every tracer ends while the session is held, and every
%% verdict and every tracer's statistics still reach the result.
last_words_test_() ->
    {timeout, 60, fun() ->
        Mon = fun M({exit, _, normal}) -> accept; M(_) -> M end,
        Spec = fun({?MODULE, link_of_chain, _}) -> {ok, Mon};
                  ({?MODULE, chain_root, _}) -> undefined
               end,
        [begin
             {ok, S} = riarc:start({?MODULE, chain_root, [20, self()]}, Spec, placement(Where)),
             true = erlang:suspend_process(S),
             receive {root, Root} -> Root ! go end,
             Links = [receive {link, L} -> monitor(process, L) end || _ <- lists:seq(0, 20)],
             _ = [receive {'DOWN', Ref, process, _, _} -> ok end || Ref <- Links],
             ok = await_tracers(S),
             true = erlang:resume_process(S),
             {ok, R = #{verdicts := Vs}} = riarc_session:finish(S, 30000),
             %% Each link: its init, its spawn (none for the last), its sends, its exit;
             %% the root: its go, its send, its receive, its spawn, its exit.
             ?assertEqual(lists:duplicate(20, {accept, 5}) ++ [{accept, 4}],
                          lists:sort(fun({_, A}, {_, B}) -> A >= B end,
                                     [{V, N} || #{verdict := V, events := N} <- Vs])),
             %% The tracers' statistics: every link's init event, made by the tracer
             %% that took its spawn, is routed to its own tracer; adopted partitions
             %% have none of their own.
             case takes_over(Where) of
                 true ->
                     ?assertMatch(#{spawned := 22}, maps:get(tracers, R)),
                     ?assert(maps:get(routed, R) >= 20);
                 false ->
                     ?assertMatch(#{spawned := 1}, maps:get(tracers, R))
             end,
             ?assertEqual(20 * 4 + 3 + 5, maps:get(events, R)),
             ?assertEqual(0, riarc_result:status(R))
         end || Where <- placements()]
    end}.

%% Waits until every tracer of Session has ended (and every analysis process, which ends
%% with its tracer's partition).
await_tracers(Session) ->
    Ours = [P || P <- erlang:processes(),
                 {dictionary, D} <- [erlang:process_info(P, dictionary)],
                 lists:member(proplists:get_value('$initial_call', D),
                              [{riarc_tracer, root_init, 4}, {riarc_tracer, tracer_init, 5},
                               {riarc_analysis, init, 4}]),
                 lists:member(Session, proplists:get_value('$ancestors', D, []))],
    case Ours of
        [] -> ok;
        _ ->
            _ = [receive {'DOWN', Ref, process, _, _} -> ok end
                 || Ref <- [monitor(process, P) || P <- Ours]],
            await_tracers(Session)
    end.

%% @private Starts a chain of N + 1 processes once Test says go.
-spec chain_root(non_neg_integer(), pid()) -> ok.
chain_root(N, Test) ->
    Test ! {root, self()},
    receive go -> ok end,
    _ = spawn(?MODULE, link_of_chain, [N, self(), Test]),
    ok.

%% @private A chain of N + 1 processes, each spawning the next; each tells Test it is
%% there.
-spec link_of_chain(non_neg_integer(), pid(), pid()) -> ok.
link_of_chain(0, Parent, Test) -> Test ! {link, self()}, Parent ! up, ok;
link_of_chain(N, Parent, Test) ->
    _ = spawn(?MODULE, link_of_chain, [N - 1, self(), Test]),
    Test ! {link, self()},
    Parent ! up,
    ok.

%% Runs alternate between slow tracers (a tracer slow to act on a spawn: Q's events all
%% reach P's tracer and are routed, fig. 5), a slow Q (Q's tracer takes it over early, so
%% direct events of Q arrive while the routed ones are still coming, fig. 6), and neither.
pqr_runs({P, Q, R}, Where, N) ->
    Routed = [pqr_once({P, Q, R}, Where, I) || I <- lists:seq(1, N)],
    %% The perturbations must make the runs differ, or they force no race at all
    %% (where there are takeovers to race with).
    case {P, Q, R} =:= {true, true, true} andalso takes_over(Where) of
        true -> ?assert(lists:max(Routed) > lists:min(Routed));
        false -> ok
    end.

pqr_once(PQR, Where, I) ->
    pqr_once(PQR, Where, I, #{}).

pqr_once({P, Q, R}, Where, I, Opts) ->
    {Perturb, SlowQ} = case I rem 3 of 0 -> {300, 0}; 1 -> {undefined, 2000}; 2 -> {undefined, 0} end,
    Script = riarc_test_sys:pqr(P, Q, R, SlowQ),
    {ok, Result, Logs, Seen} = riarc_test_sys:run(Script, self(), maps:merge(Opts#{perturb => Perturb}, placement(Where))),
    ?assertEqual(ok, riarc_test_sys:check(Result, Logs, Seen)),
    Own = length([x || #{own := true} <- scripts(Script)]),
    ?assertMatch(#{tracers := #{spawned := _}}, Result),
    #{tracers := #{spawned := Spawned}} = Result,
    %% Λ alone decides the arrangement: one tracer for the root plus one per monitored
    %% non-root process, unless the root's tracer adopts their partitions.
    case takes_over(Where) of
        true -> ?assertEqual(1 + Own - own_root(Script), Spawned);
        false -> ?assertEqual(1, Spawned)
    end,
    maps:get(routed, Result).

scripts(S = #{acts := Acts}) -> [S | lists:append([scripts(C) || {spawn, C} <- Acts])].
own_root(#{own := true}) -> 1;
own_root(_) -> 0.

%% Random systems: random spawn trees and message exchanges; every process's trace is
%% complete and consistent for its monitor, and nothing is left alive.
prop_random_systems() ->
    ?FORALL({Script, Perturb, Where}, {riarc_test_sys:prop_script(), oneof([undefined, 200]),
                                       oneof([isolated, inline])},
            begin
                {ok, Result, Logs, Seen} = riarc_test_sys:run(Script, self(), #{perturb => Perturb,
                                                                                analysis => Where}),
                Check = riarc_test_sys:check(Result, Logs, Seen),
                ?WHENFAIL(io:format("script ~p~nanalysis ~s~nproblems ~p~n", [Script, Where, Check]),
                          Check =:= ok)
            end).

random_systems_test_() ->
    {timeout, 300,
     ?_assert(riarc_test_tier:quickcheck(prop_random_systems(), {40, 300}))}.

%% A spawn storm: with process tracers the VM often delivers children's events before
%% their parent's spawn event (A4 does not hold online); with the routing table rarely.
%% Whether it happens is the VM's choice, so the storm asserts soundness only; the
%% reordering itself is tested on the core, in every order, by core_reorders_test and
%% riarc_explore.
storm_test_() ->
    {timeout, 300, [{atom_to_list(B), fun() -> storm(B) end} || B <- [route, evm]]}.

storm(Backend) ->
    Raw = {true, 0, [{{I rem 2 =:= 0, 1, []}, 0} || I <- lists:seq(1, riarc_test_tier:count(500, 2000))]},
    Script = riarc_test_sys:finalize(Raw),
    %% Each process's log message is large (it names every message): delivered whole.
    {ok, Result, Logs, Seen} = riarc_test_sys:run(Script, self(), #{backend => Backend,
                                                                    limits => #{max_payload => infinity}}),
    ?assertEqual(ok, riarc_test_sys:check(Result, Logs, Seen)).

%% App. B on the pure core: a child's events that arrive before its parent's spawn event
%% wait, and reach the monitor after the child's init event, in their own order.
core_reorders_test() ->
    Self = self(),
    Tag = make_ref(),
    Mon = fun Rec(Acc) -> fun({exit, p, _} = E) -> Self ! {Tag, lists:reverse([E | Acc])}, accept;
                             (E) -> Rec([E | Acc]) end end,
    %% A routing-table backend with no table and no seal, as the model checker's: it
    %% takes the VM's trace messages as they are.
    B = riarc_backend:new(riarc_backend_route, #{table => undefined, flags => []}),
    Cfg = #{lambda => riarc_lambda:new(fun({m, p, []}) -> {ok, Mon([])}; (_) -> undefined end),
            backend => B, session => self(), checks => true, perturb => undefined,
            start_tracer => fun(_, _, _, _) -> error(unexpected) end,
            init_from_spawn => true, self => t0},
    {St0, [{send, _, {riarc_partition, t0, p, {m, p, []}}}]} =
        riarc_tracer_core:init_root(Cfg, p, {m, p, []}, {init, p, x, {m, p, []}}),
    In = [{trace, c, send, hi, p}, {trace, c, exit, normal},
          {trace, p, spawn, c, {m, c, []}}, {trace, p, 'receive', hi}, {trace, p, exit, normal}],
    lists:foldl(fun(M, St) -> {St1, _} = riarc_tracer_core:handle(M, St), St1 end, St0, In),
    ?assertEqual({Tag, [{init, p, x, {m, p, []}}, {spawn, p, c, {m, c, []}}, {init, c, p, {m, c, []}},
                         {send, c, p, hi}, {exit, c, normal}, {recv, p, hi}, {exit, p, normal}]},
                 receive {Tag, _} = X -> X end).

%% Race: a stop that reaches a tracer before routing has settled. The events it holds for
%% a process whose tracer has not asked for them, or that wait for their spawn event, and
%% a takeover not yet acknowledged, are reported (riarc_stopped_short), never dropped
%% without a word: their partitions would otherwise end with the verdict none.
core_stop_short_test() ->
    Mon = fun Rec() -> fun(_) -> Rec() end end,
    B = riarc_backend:new(riarc_backend_route, #{table => undefined, flags => []}),
    Lambda = riarc_lambda:new(fun({m, F, []}) when F =:= p; F =:= c -> {ok, Mon()}; (_) -> undefined end),
    Cfg = #{lambda => Lambda, backend => B, session => s, checks => true, perturb => undefined,
            start_tracer => fun(_, c, _, _) -> t1 end, init_from_spawn => true, self => t0,
            analysis => inline},
    Stop = {riarc_ctl, self(), make_ref(), stop},
    Short = fun(Fx) -> [I || {riarc_stopped_short, t0, I} <- told(Fx)] end,
    Run = fun(In, St0) -> lists:foldl(fun(M, St) -> {St1, _} = riarc_tracer_core:handle(M, St), St1 end, St0, In) end,
    {P0, _} = riarc_tracer_core:init_root(Cfg, p, {m, p, []}, none),
    %% C has a tracer of its own (t1); C's child D inherits C's partition, and its events
    %% wait here for t1 to ask for D; X's wait for a spawn event that has not come.
    P1 = Run([{trace, p, spawn, c, {m, c, []}}, {trace, c, spawn, d, {m, d, []}},
              {trace, d, send, hi, p}, {trace, x, exit, normal}], P0),
    {_, Fx1} = riarc_tracer_core:handle(Stop, P1),
    ?assertEqual([#{own => true, lost => #{d => 2, x => 1}}], Short(Fx1)),
    ?assert(stopped(Fx1)),
    %% Settled: nothing to report.
    {_, Fx2} = riarc_tracer_core:handle(Stop, Run([{trace, p, 'receive', hi}], P0)),
    ?assertEqual([], Short(Fx2)),
    %% A tracer whose takeover is not acknowledged: its own trace may lack events.
    {T0, _} = riarc_tracer_core:init_tracer(Cfg, Mon(), c, {m, c, []}, t9),
    {_, Fx3} = riarc_tracer_core:handle(Stop, T0),
    ?assertEqual([#{own => true, lost => #{}}], Short(Fx3)).

%% Adoption on the pure core (riarc_tracer_adopted): a tracer that may adopt one
%% partition keeps C's (no tracer started, no route), whose child D joins it; C's and
%% D's events reach C's monitor only, its reports carry the key {t0, c}, and the
%% partition ends, verdict none, when its last process exits. The next partition (E's)
%% gets a tracer of its own, and a view lost on D cuts C's partition, not the tracer's.
core_adoption_test() ->
    Self = self(),
    Tag = make_ref(),
    Mon = fun Rec(Acc) -> fun(E) -> Self ! {Tag, lists:reverse([E | Acc])}, Rec([E | Acc]) end end,
    B = riarc_backend:new(riarc_backend_route, #{table => undefined, flags => []}),
    Lambda = riarc_lambda:new(fun({m, F, []}) when F =:= p; F =:= c; F =:= e -> {ok, Mon([])};
                                 (_) -> undefined end),
    Cfg = #{lambda => Lambda, backend => B, session => s, checks => true, perturb => undefined,
            start_tracer => fun(_, e, _, _) -> t1 end, init_from_spawn => true, self => t0,
            analysis => inline, adopt => fun(N) -> N < 1 end},
    Run = fun(In, St0) -> lists:foldl(fun(M, {St, Fx}) -> {St1, Fx1} = riarc_tracer_core:handle(M, St), {St1, Fx ++ Fx1} end, {St0, []}, In) end,
    {P0, _} = riarc_tracer_core:init_root(Cfg, p, {m, p, []}, none),
    {P1, Fx1} = Run([{trace, p, spawn, c, {m, c, []}}, {trace, c, spawn, d, {m, d, []}},
                     {trace, d, send, hi, p}, {trace, p, spawn, e, {m, e, []}}], P0),
    ?assertEqual([{riarc_adopted, t0, {t0, c}, c, {m, c, []}, {p, p}}], [M || {send, s, M = {riarc_adopted, _, _, _, _, _}} <- Fx1]),
    ?assertEqual([t1], [T || {started, T, _} <- Fx1]),
    ?assertEqual(#{e => t1}, maps:get(pi, riarc_tracer_core:state_map(P1))),
    ?assertEqual([c], maps:get(adopted, riarc_tracer_core:state_map(P1))),
    %% A view lost on D cuts C's partition.
    {P2, Fx2} = riarc_tracer_core:view_lost(d, {tracer_replaced, x}, P1),
    ?assertEqual([{riarc_cut, {t0, c}, d, {tracer_replaced, x}}], told(Fx2)),
    %% Flags lost by someone riarc does not trace, those a child inherits and is seen by
    %% kept: a later child of D's would be seen to start and end only, so the cut may
    %% reach any partition (riarc_session_entries's inherited cut).
    Left = {flags_removed, [procs, set_on_spawn]},
    {_, FxL} = riarc_tracer_core:view_lost(d, Left, P1),
    ?assertEqual([{riarc_cut, {t0, c}, d, Left}, {riarc_cut, {t0, c}, d, {inherited, Left}}], told(FxL)),
    {P3, Fx3} = Run([{trace, c, exit, normal}, {trace, d, exit, normal}], P2),
    ?assertMatch([{riarc_verdict, {t0, c}, c, {m, c, []}, none, _, 6}], [M || M = {riarc_verdict, _, _, _, _, _, _} <- told(Fx3)]),
    ?assertEqual([], maps:get(adopted, riarc_tracer_core:state_map(P3))),
    Seen = lists:last([L || L <- flush_seen(Tag), hd(L) =:= {init, c, p, {m, c, []}}]),
    ?assertEqual([{init, c, p, {m, c, []}}, {spawn, c, d, {m, d, []}}, {init, d, c, {m, d, []}},
                  {send, d, p, hi}, {exit, c, normal}, {exit, d, normal}], Seen),
    %% A stop before routing has settled: the adopted partition is told too.
    {_, Fx4} = riarc_tracer_core:handle({riarc_ctl, self(), make_ref(), stop},
                                        element(1, Run([{trace, x, exit, normal}], P1))),
    ?assertEqual([{t0, #{own => true, lost => #{x => 1}}}, {{t0, c}, #{own => true, lost => #{}}}],
                 [{K, I} || {riarc_stopped_short, K, I} <- told(Fx4)]),
    ?assertMatch([{riarc_verdict, t0, p, _, none, _, _}, {riarc_verdict, {t0, c}, c, _, none, _, _}],
                 lists:sort([M || M = {riarc_verdict, _, _, _, _, _, _} <- told(Fx4)])).

%% A process whose own call cut its view is judged by that call, in order with its
%% events: a look that later finds its flags gone reports nothing more (before, it cut
%% the partition whatever its verdict, so a reject reached before the call read as an
%% error once the process outlived a look). Without the call, the look reports.
own_call_then_look_test() ->
    P0 = inline_root(),
    Lost = {flags_removed, [procs, call, set_on_spawn]},
    {_, Fx0} = riarc_tracer_core:view_lost(p, Lost, P0),
    ?assertEqual([{riarc_cut, t0, p, Lost}, {riarc_cut, t0, p, {inherited, Lost}}], told(Fx0)),
    Call = {trace, [p, false, [send, 'receive']]},
    {P1, Fx1} = riarc_tracer_core:handle({trace, p, call, {erlang, trace, [p, false, [send, 'receive']]}}, P0),
    ?assertEqual([{riarc_cut, t0, p, Call}, {riarc_cut, t0, p, {inherited, Call}}], told(Fx1)),
    {_, Fx2} = riarc_tracer_core:view_lost(p, Lost, P1),
    ?assertEqual([], told(Fx2)).

%% A process whose own call took `procs' (its exit will not be traced) and that has
%% ended since: the probe's finding ends its trace, and the tracer with it, its verdict
%% still the call's (before, the look left it to the call and the tracer waited for its
%% exit for ever). While it lives, a look that finds flags left changes nothing.
own_procs_call_then_probe_test() ->
    P0 = inline_root(),
    Flags = [send, 'receive', procs],
    {P1, Fx1} = riarc_tracer_core:handle({trace, p, call, {erlang, trace, [p, false, Flags]}}, P0),
    ?assertEqual([{riarc_cut, t0, p, {trace, [p, false, Flags]}}], told(Fx1)),
    ?assertNot(stopped(Fx1)),
    {P2, Fx2} = riarc_tracer_core:view_lost(p, {flags_removed, [call, set_on_spawn]}, P1),
    ?assertEqual({[], false, [p]}, {told(Fx2), stopped(Fx2), riarc_tracer_core:gamma(P2)}),
    {P3, Fx3} = riarc_tracer_core:view_lost(p, {flags_removed, []}, P2),
    ?assertEqual([], riarc_tracer_core:gamma(P3)),
    ?assert(stopped(Fx3)),
    ?assertMatch([{riarc_verdict, t0, p, _, none, _, _}],
                 [M || M = {riarc_verdict, _, _, _, _, _, _} <- told(Fx3)]).

%% A root tracer's core for root p, its monitor (one that never decides) in the tracer.
inline_root() ->
    B = riarc_backend:new(riarc_backend_route, #{table => undefined, flags => []}),
    Cfg = #{lambda => riarc_lambda:new(fun(_) -> {ok, fun M(_) -> M end} end), backend => B,
            session => s, checks => true, perturb => undefined, init_from_spawn => true,
            self => t0, analysis => inline},
    {P0, _} = riarc_tracer_core:init_root(Cfg, p, {m, p, []}, none),
    P0.

%% A monitor that crashes gets the verdict error for its own processes only, wherever it
%% runs.
crashing_monitor_test_() ->
    [{atom_to_list(W), fun() -> crashing_monitor(W) end} || W <- [isolated, inline]].

crashing_monitor(Where) ->
    Col = self(),
    Spec = fun({riarc_test_sys, proc, [#{id := q}, _, _]}) -> {ok, fun(_) -> error(boom) end};
              ({riarc_test_sys, proc, [#{id := Id}, _, _]}) -> {ok, riarc_test_sys:recorder(Col, Id)}
           end,
    Script = riarc_test_sys:pqr(true, true, true),
    {ok, #{verdicts := Vs, violations := []}} =
        riarc:run({riarc_test_sys, proc, [Script, self(), Col]}, Spec, #{log => false, analysis => Where}),
    Logs = maps:from_list([receive {log, P, L} -> {P, L} end || _ <- [p, q, r]]),
    Verdicts = maps:from_list([{Id, V} || #{mfa := {_, _, [#{id := Id} | _]}, verdict := V} <- Vs]),
    ?assertEqual(#{p => none, q => error, r => none}, Verdicts),
    %% The crash stopped nothing: the system finished and R's monitor saw all of R.
    ?assertEqual(3, map_size(Logs)),
    [{RPid, RLog}] = [{P, L} || {P, L = [{init, _, _, {_, _, [#{id := r} | _]}} | _]} <- maps:to_list(Logs)],
    REvents = [E || {mon, r, E} <- flush()],
    ?assertEqual(riarc_test_sys:expected(RPid, RLog), REvents).

flush() -> receive M -> [M | flush()] after 0 -> [] end.

%% A monitor's verdict stops its analysis; the verdict and event count are reported.
verdict_stops_analysis_test_() ->
    [{atom_to_list(W), fun() -> verdict_stops_analysis(W) end} || W <- [isolated, inline]].

verdict_stops_analysis(Where) ->
    Spec = fun(_) -> {ok, fun M({send, _, _, _}) -> reject; M(_) -> M end} end,
    Script = riarc_test_sys:pqr(true, true, true),
    {ok, #{verdicts := Vs}} = riarc:run({riarc_test_sys, proc, [Script, self(), self()]}, Spec,
                                        #{log => false, analysis => Where}),
    _ = flush(),
    ByRole = maps:from_list([{Id, {V, N}} || #{mfa := {_, _, [#{id := Id} | _]}, verdict := V,
                                              events := N} <- Vs]),
    %% P: init, spawn, send -> reject at its third event. Q: init, recv, spawn, send(log).
    %% R: init, send(log) -> reject at the second.
    ?assertEqual(#{p => {reject, 3}, q => {reject, 4}, r => {reject, 2}}, ByRole).

%% run/3 rejects bad input with an error and a sentence.
errors_test_() ->
    [?_assertMatch({error, {riarc, {undef, {nosuch, f, 0}}}}, riarc:run({nosuch, f, []}, fun(_) -> undefined end, #{})),
     ?_assertMatch({error, {riarc, {bad_spec, 42}}}, riarc:run({riarc_demo_pqr, p, []}, 42, #{})),
     ?_assertMatch({error, {riarc, {bad_option, events, [oops]}}},
                   riarc:run({riarc_demo_pqr, p, []}, fun(_) -> undefined end, #{events => [oops]})),
     ?_assertEqual("the system's entry point nosuch:f/0 does not exist (is the module on the code path?)",
                   riarc:format_error({riarc, {undef, {nosuch, f, 0}}}))].

%% A run that does not end is an error naming what is still alive; the system is left
%% running, untraced.
timeout_test() ->
    Self = self(),
    {ok, R = #{errors := [E = {riarc_session, {timeout, 200, #{tracers := [_], processes := [Root]}}}],
               verdicts := [V]}} =
        riarc:run({riarc_tracer_tests, wait_forever, [Self]}, fun(_) -> {ok, fun M(_) -> M end} end,
                  #{timeout => 200, log => false}),
    ?assert(is_process_alive(Root)),
    ?assertEqual({flags, []}, erlang:trace_info(Root, flags)),
    Root ! stop,
    %% The partition the timeout cut short is not `none' (ended without a verdict).
    ?assertMatch(#{verdict := inconclusive, reason := {timeout, 200}}, V),
    ?assertEqual(1, riarc_result:status(R)),
    ?assertMatch("the run did not end" ++ _, riarc:format_error(E)).

wait_forever(_) -> receive stop -> ok end.

%% Only the message events asked for are traced; spawn and exit always are.
events_option_test() ->
    Col = self(),
    Script = riarc_test_sys:pqr(true, false, false),
    {ok, #{violations := []}} = riarc:run({riarc_test_sys, proc, [Script, self(), Col]},
                                          riarc_test_sys:spec(Col), #{log => false, events => []}),
    _ = [receive {log, _, _} -> ok end || _ <- [p, q, r]],
    Kinds = lists:usort([element(1, E) || {mon, p, E} <- flush()]),
    ?assertEqual([exit, init, spawn], Kinds).

%% One partition spanning nodes on the pure core: a start on a followed node that Λ puts
%% in the partition is told to the session and awaited; the relayed events (with the
%% token only) reach the monitor after the start, in their order; TRYGC waits for the
%% relayed end, and a child given up (lost) ends the wait with an error for the partition.
core_relay_test() ->
    Self = self(),
    %% Tagged: this test process runs other modules' tests too, which must not read these.
    Tag = make_ref(),
    Mon = fun Rec(Acc) -> fun(E) -> Self ! {Tag, lists:reverse([E | Acc])}, Rec([E | Acc]) end end,
    B = riarc_backend:new(riarc_backend_route, #{table => undefined, flags => []}),
    Cfg = #{lambda => riarc_lambda:new(fun({m, p, []}) -> {ok, Mon([])}; (_) -> undefined end),
            backend => B, session => self(), checks => true, perturb => undefined,
            start_tracer => fun(_, _, _, _) -> error(unexpected) end,
            init_from_spawn => true, self => t0, token => tk, relay_nodes => [n@h],
            analysis => inline},
    {St0, _} = riarc_tracer_core:init_root(Cfg, p, {m, p, []}, none),
    Call = {trace, p, call, {erts_internal, dist_spawn_request, [n@h, {m, c, [1]}, [], spawn_request]}},
    Step = fun(M, St) -> {St1, Fx} = riarc_tracer_core:handle(M, St), {St1, Fx} end,
    {St1, Fx1} = Step(Call, St0),
    ?assertEqual([{send, self(), {riarc_remote_child, t0, relayed, #{parent => p, node => n@h, mfa => {m, c, [1]}}}}], Fx1),
    %% Forged: no token.
    {St2, [{send, _, {riarc_forged, t0, relayed}}]} = Step({riarc_relayed, bad, events, [{exit, c, normal}]}, St1),
    {St3, []} = Step({riarc_relayed, tk, events, [{init, c, p, {m, c, [1]}}, {send, c, p, hi}]}, St2),
    %% P ends: Γ = Π = ∅, but the relayed child has not.
    {St4, Fx4} = Step({trace, p, exit, normal}, St3),
    ?assertNot(stopped(Fx4)),
    {St5, []} = Step({riarc_relayed, tk, events, [{exit, c, normal}]}, St4),
    {_, Fx6} = Step({riarc_relayed, tk, 'end', c}, St5),
    ?assert(stopped(Fx6)),
    Seen = lists:last(flush_seen(Tag)),
    ?assertEqual([{init, c, p, {m, c, [1]}}, {send, c, p, hi}, {exit, p, normal}, {exit, c, normal}], Seen),
    %% Given up: the partition is told to be an error, and the tracer ends.
    {St7, _} = Step(Call, St0),
    {St8, _} = Step({trace, p, exit, normal}, St7),
    Info = #{parent => p, node => n@h, lost => nodedown},
    {_, Fx9} = Step({riarc_relayed, tk, lost, {1, Info}}, St8),
    ?assertMatch([{riarc_remote_child, t0, partition, Info} | _], told(Fx9)),
    ?assert(stopped(Fx9)),
    _ = flush_seen(Tag).

%% What a step of the core tells the session or another tracer, its last words (effect
%% stop) included.
told(Fx) ->
    lists:append([case F of {send, _, M} -> [M]; {stop, Told, _} -> Told; _ -> [] end || F <- Fx]).

stopped(Fx) -> lists:keymember(stop, 1, Fx).

flush_seen(Tag) ->
    receive {Tag, S} -> [S | flush_seen(Tag)] after 0 -> [] end.

%%% Option tracer_priority

%% riarc's tracers and analysis processes run at the priority asked for; anything else
%% is bad input.
tracer_priority_test_() ->
    [{atom_to_list(P), fun() -> priorities(P) end} || P <- [low, normal]]
    ++ [?_assertMatch({error, {riarc, {bad_option, tracer_priority, high}}},
                      riarc:run({riarc_demo_pqr, p, []}, fun(_) -> undefined end,
                                #{tracer_priority => high}))].

priorities(Prio) ->
    Self = self(),
    {ok, S} = riarc:start({?MODULE, wait_forever, [Self]}, fun(_) -> {ok, fun M(_) -> M end} end,
                          #{log => false, analysis => isolated, tracer_priority => Prio}),
    #{tracers := [T], processes := [Root]} = riarc:alive(S),
    %% The partition's analysis process: the tracer's one monitor that is not of its
    %% session.
    {monitors, Ms} = process_info(T, monitors),
    [An] = [P || {process, P} <- Ms, P =/= S],
    ?assertEqual([{priority, Prio}, {priority, Prio}],
                 [process_info(P, priority) || P <- [T, An]]),
    %% The system's own processes keep theirs.
    ?assertEqual({priority, normal}, process_info(Root, priority)),
    {ok, _} = riarc:stop(S),
    Root ! stop.

%% Low priority under load: with busy processes of normal priority on every scheduler,
%% riarc's tracers run only in the gaps they leave. Every monitor still gets exactly its
%% processes' local traces, in every arrangement of P, Q and R, wherever monitors run
%% (the fast tier: one run of each, the perturbations taking turns; the full tier: 30).
low_priority_loaded_test_() ->
    N = riarc_test_tier:count(1, 30),
    Cases = lists:zip(lists:seq(0, 23), [{A, W} || A <- arrangements(), W <- placements()]),
    {timeout, 300, fun() ->
        riarc_test_load:loaded(fun() ->
                                       [pqr_once(A, W, K + I, #{tracer_priority => low})
                                        || {K, {A, W}} <- Cases, I <- lists:seq(0, N - 1)]
                               end)
    end}.

%% And a tracer that falls behind under load meets the limit: riarc detaches and says so.
%% The monitor accepts only the whole trace (every one of its process's messages, then
%% its exit) and rejects an exit with any receive missing, so a lost event shows as a
%% reject. Under overload the exit status is 1 and the verdict inconclusive, or accept
%% when the monitor had the whole trace before riarc detached (seen with one busy
%% process); never reject. Which happens depends on the load.
low_priority_overload_test_() ->
    {timeout, 300, fun() ->
        N = 20000,
        Whole = fun M(K) -> fun({recv, _, {flood, _}}) -> M(K + 1);
                               ({exit, _, normal}) when K =:= N -> accept;
                               ({exit, _, _}) -> reject;
                               (_) -> M(K) end end,
        Spec = fun({?MODULE, flood, _}) -> {ok, Whole(0)}; (_) -> undefined end,
        {ok, R} = riarc_test_load:loaded(fun() ->
                                                 riarc:run({?MODULE, flood, [N]}, Spec,
                                                           #{log => false, events => [recv], tracer_priority => low,
                                                             limits => #{max_queue => 2000}})
                                         end),
        #{verdicts := [V]} = R,
        case maps:get(overload, R) of
            undefined ->
                ?assertMatch(#{verdict := accept}, V),
                ?assertEqual(0, riarc_result:status(R));
            _ ->
                case V of
                    #{verdict := accept, events := Events} -> ?assertEqual(N + 2, Events);
                    _ -> ?assertMatch(#{verdict := inconclusive, reason := {overload, _}}, V)
                end,
                ?assertEqual(1, riarc_result:status(R))
        end
    end}.

%% Sends itself N messages, then takes them.
flood(N) ->
    _ = [self() ! {flood, I} || I <- lists:seq(1, N)],
    _ = [receive {flood, I} -> ok end || I <- lists:seq(1, N)],
    ok.

