%% Monitor isolation (issue 16, deliver 3), the shed and backpressure policies (deliver 2) and payload
%% truncation (deliver 1): a monitor that loops, is slow, eats reductions or heap gets
%% `error' with reason `{monitor_budget, _}' for its own partition only, routing never
%% waits for it, and stop/1 returns whatever monitors are doing.
-module(riarc_isolation_tests).

-include_lib("eunit/include/eunit.hrl").

-export([parent/1, child/0, big/1, flood/1, paced/2, waiter/0]).
%% This module is also a Spec module whose monitors run inline by default.
-export([spec/1, analysis/0]).

%% The root spawns a child and waits for its exit, then ends; the child sends its parent
%% a message and ends.
-spec parent(pid()) -> ok.
parent(Col) ->
    C = spawn(?MODULE, child, []),
    Ref = monitor(process, C),
    receive {'DOWN', Ref, process, C, _} -> ok end,
    Col ! {system_done, self()},
    ok.

-spec child() -> ok.
child() -> ok.

%% Rounds of Burst messages to itself, a millisecond apart: its tracer keeps up, a monitor
%% of a millisecond an event does not.
-spec paced(non_neg_integer(), pos_integer()) -> ok.
paced(0, _Burst) -> ok;
paced(Rounds, Burst) ->
    ok = flood(Burst),
    receive after 1 -> ok end,
    paced(Rounds - 1, Burst).

%% Sends itself a message of Bytes bytes and a small one.
-spec big(pos_integer()) -> ok.
big(Bytes) ->
    self() ! {big, binary:copy(<<0>>, Bytes)},
    self() ! small,
    receive {big, _} -> ok end,
    receive small -> ok end.

-spec flood(pos_integer()) -> ok.
flood(N) ->
    [self() ! {n, I} || I <- lists:seq(1, N)],
    [receive {n, I} -> ok end || I <- lists:seq(1, N)],
    ok.

accept_at_exit() -> fun M({exit, _, _}) -> accept; M(_) -> M end.

loop_forever() -> loop_forever().

verdict_of(Name, Vs) ->
    [V] = [V || V = #{mfa := {?MODULE, F, _}} <- Vs, F =:= Name],
    V.

no_trace_flags() ->
    [P || {P, _} <- maps:get(processes, riarc_test_peer:traced(node()))].

%% A monitor that loops for ever on the root's very first event (its init): the system
%% starts and runs all the same, the child's partition is accepted, the root's gets
%% error/monitor_budget, and the run ends soon after the loop reaches its budget. The
%% budget is in reductions, the loop's own work: a wall-time budget short enough for a
%% quick test would also be passed by the child's monitor, waiting for a scheduler that
%% the loop and the machine's other work hold (255 ms for its first step was seen at
%% a budget of 200 ms).
loop_on_init_test_() ->
    {timeout, 60, fun loop_on_init/0}.

loop_on_init() ->
    Col = self(),
    Spec = fun({?MODULE, parent, _}) -> {ok, fun(_) -> loop_forever() end};
              ({?MODULE, child, _}) -> {ok, accept_at_exit()}
           end,
    {ok, R = #{verdicts := Vs}} =
        riarc:run({?MODULE, parent, [Col]}, Spec,
                  #{monitor_budget => #{time_ms => 60000, reductions => 20000000}}),
    receive {system_done, _} -> ok end,
    ?assertMatch(#{verdict := error, reason := {monitor_budget, #{reductions := _, step := 1}}},
                 verdict_of(parent, Vs)),
    ?assertMatch(#{verdict := accept}, verdict_of(child, Vs)),
    ?assertEqual(1, riarc_result:status(R)),
    ?assertEqual([], no_trace_flags()).

%% Routing does not wait for analysis: while the root's monitor is stuck in a step (with a
%% budget far longer than the test), the child's partition is decided; stop/1 then
%% returns at once with that verdict, and the stuck partition is inconclusive.
routing_does_not_wait_test_() ->
    {timeout, 60, fun routing_does_not_wait/0}.

routing_does_not_wait() ->
    Col = self(),
    Spec = fun({?MODULE, parent, _}) -> {ok, fun(_) -> loop_forever() end};
              ({?MODULE, child, _}) ->
                   {ok, fun M({exit, _, _}) -> Col ! child_accepted, accept; M(_) -> M end}
           end,
    {ok, S} = riarc:start({?MODULE, parent, [Col]}, Spec,
                          #{monitor_budget => #{time_ms => 600000, reductions => infinity}}),
    receive child_accepted -> ok end,
    receive {system_done, _} -> ok end,
    %% stop/1 did not wait for the stuck step (600 s): the test's timeout would say so.
    {ok, #{verdicts := Vs}} = riarc:stop(S),
    ?assertMatch(#{verdict := accept}, verdict_of(child, Vs)),
    ?assertMatch(#{verdict := inconclusive, reason := {stopped, #{unanalysed := _}}},
                 verdict_of(parent, Vs)).

%% A step that ends, but over the reduction budget: error, decided by the step itself.
reductions_budget_test() ->
    Busy = fun M({init, _, _, _}) -> _ = lists:seq(1, 200000), M; M(_) -> M end,
    Spec = fun({?MODULE, flood, _}) -> {ok, Busy} end,
    {ok, #{verdicts := [V]}} =
        riarc:run({?MODULE, flood, [3]}, Spec,
                  #{monitor_budget => #{reductions => 10000, time_ms => 60000}}),
    ?assertMatch(#{verdict := error,
                   reason := {monitor_budget, #{reductions := _, max_reductions := 10000}},
                   explanation := #{deciding_event := {init, _, _, _}}}, V).

%% A step that builds more heap than allowed: the VM ends the analysis, the partition's
%% verdict says so.
heap_budget_test() ->
    Hog = fun M({init, _, _, _}) -> M(lists:seq(1, 1000000)); M(L) when is_list(L) -> M; M(_) -> M end,
    Spec = fun({?MODULE, flood, _}) -> {ok, Hog} end,
    {ok, #{verdicts := [V]}} =
        riarc:run({?MODULE, flood, [3]}, Spec, #{monitor_budget => #{heap_words => 100000}}),
    ?assertMatch(#{verdict := error, reason := {monitor_budget, #{heap_words := 100000}}}, V).

%% The same for a child's partition in a session that lists each partition from its
%% start (option lineage, as on a followed node): the entry it lists meanwhile (verdict
%% none) does not stand in for the verdict the session gives when the VM ends the
%% analysis.
heap_budget_lineage_test() ->
    Col = self(),
    Hog = fun M({init, _, _, _}) -> M(lists:seq(1, 1000000)); M(L) when is_list(L) -> M; M(_) -> M end,
    Spec = fun({?MODULE, parent, _}) -> {ok, accept_at_exit()};
              ({?MODULE, child, _}) -> {ok, Hog}
           end,
    {ok, #{verdicts := Vs}} =
        riarc:run({?MODULE, parent, [Col]}, Spec, #{monitor_budget => #{heap_words => 100000},
                                                      lineage => true}),
    receive {system_done, _} -> ok end,
    ?assertMatch(#{verdict := error, reason := {monitor_budget, #{heap_words := 100000}},
                   parent := P, within := P} when is_pid(P), verdict_of(child, Vs)),
    ?assertEqual(false, maps:is_key(open, verdict_of(child, Vs))).

%% Policy shed: the slow monitor's partition loses its events, counted, and is
%% inconclusive; riarc does not detach the rest (no overload in the result), and the
%% fast partition next to it is accepted.
shed_test_() ->
    {timeout, 120, fun shed/0}.

shed() ->
    Slow = fun M(_) -> receive after 1 -> M end end,
    Col = self(),
    Spec = fun({?MODULE, parent, _}) -> {ok, Slow};
              ({?MODULE, child, _}) -> {ok, accept_at_exit()}
           end,
    PacedSpec = fun({?MODULE, paced, _}) -> {ok, Slow}; (_) -> undefined end,
    {ok, R = #{verdicts := [V]}} =
        riarc:run({?MODULE, paced, [200, 50]}, PacedSpec,
                  #{events => [send, recv], limits => #{max_queue => 2000, policy => shed}}),
    ?assertEqual(undefined, maps:get(overload, R)),
    ?assertMatch(#{verdict := inconclusive, reason := {shed, #{dropped := _, analysed := _}}}, V),
    #{reason := {shed, #{dropped := D, analysed := A}}} = V,
    %% Every one of the partition's events (init, 20 000 message events, 200 timeouts, exit) either was
    %% analysed or is counted as dropped: nothing is silently missing.
    ?assertEqual(20202, D + A),
    ?assertEqual(1, riarc_result:status(R)),
    %% Shedding one partition leaves the others alone.
    {ok, #{verdicts := Vs}} = riarc:run({?MODULE, parent, [Col]}, Spec,
                                        #{limits => #{max_queue => 2000, policy => shed}}),
    receive {system_done, _} -> ok end,
    ?assertMatch(#{verdict := accept}, verdict_of(child, Vs)).

%% Policy backpressure: a monitor slower than its process holds the process back (it is
%% suspended while the monitor catches up) instead of losing events: the verdict is the
%% real one, on the whole trace. When the monitor cannot catch up within max_suspend,
%% the partition is shed as under policy shed, and the process runs on.
backpressure_test_() ->
    {timeout, 120, fun backpressure/0}.

backpressure() ->
    %% About 0.1 ms an event (a 1 ms sleep every 50th send): slower than the paced process
    %% makes them, while it runs. Five of its sleeps to each of the process's: a loaded
    %% machine stretches every sleep alike (at load average 10, a 1 ms sleep took some
    %% 100 ms), so the monitor stays the slower, and the run stays within its bound
    %% (a monitor sleeping at every tenth send of paced(200, 50), 1000 sleeps, took it past
    %% two minutes). It tells the test when it finds the process held back (suspended).
    Col = self(),
    Slowish = fun M({exit, _, normal}) -> accept;
                 M({send, P, _, {n, I}}) when I rem 50 =:= 0 ->
                     _ = erlang:process_info(P, status) =:= {status, suspended} andalso (Col ! held),
                     receive after 1 -> M end;
                 M(_) -> M
              end,
    Spec = fun({?MODULE, paced, _}) -> {ok, Slowish} end,
    {ok, R = #{verdicts := [V]}} =
        riarc:run({?MODULE, paced, [40, 250]}, Spec,
                  #{events => [send, recv],
                    limits => #{max_queue => 2000, policy => backpressure, max_suspend => 60000}}),
    %% Nothing dropped: the verdict is on the whole trace (under shed it would be
    %% inconclusive, under stop an overload): init, 20 000 message events, 40 timeouts,
    %% exit.
    ?assertMatch(#{verdict := accept, events := 20042}, V),
    %% The process was held back (the monitor said so before its verdict).
    ?assertEqual(held, receive held -> held after 0 -> never_held end),
    ?assertEqual(undefined, maps:get(overload, R)),
    ?assertEqual(0, riarc_result:status(R)),
    %% Too slow to catch up in time: shed, inconclusive with its counts.
    Slow = fun M(_) -> receive after 1 -> M end end,
    {ok, R2 = #{verdicts := [V2]}} =
        riarc:run({?MODULE, paced, [40, 250]}, fun(_) -> {ok, Slow} end,
                  #{events => [send, recv],
                    limits => #{max_queue => 2000, policy => backpressure, max_suspend => 50}}),
    ?assertMatch(#{verdict := inconclusive, reason := {shed, #{dropped := _, analysed := _}}}, V2),
    #{reason := {shed, #{dropped := D, analysed := A}}} = V2,
    ?assertEqual(20042, D + A),
    ?assertEqual(1, riarc_result:status(R2)).

%% Limit max_payload: a message larger than it reaches the monitor as a marked term with
%% its size; a smaller one as it is; wherever the monitor runs.
truncation_test_() ->
    [{atom_to_list(W), fun() -> truncation(W) end} || W <- [isolated, inline]].

truncation(Where) ->
    Col = self(),
    %% Tagged: this test process runs other modules' tests too, whose strays must not
    %% be read as this run's events.
    Tag = make_ref(),
    Rec = fun M(E) -> Col ! {Tag, E}, M end,
    Spec = fun({?MODULE, big, _}) -> {ok, Rec} end,
    {ok, _} = riarc:run({?MODULE, big, [100000]}, Spec,
                        #{events => [recv], limits => #{max_payload => 1000}, analysis => Where}),
    Seen = collect_seen(Tag),
    ?assertMatch([{init, _, _, _}, {recv, _, {riarc_truncated, Size}}, {recv, _, small},
                  {exit, _, normal}] when Size > 100000, Seen),
    %% infinity: whole.
    {ok, _} = riarc:run({?MODULE, big, [100000]}, Spec,
                        #{events => [recv], limits => #{max_payload => infinity}, analysis => Where}),
    ?assertMatch([_, {recv, _, {big, <<0, _/binary>>}}, _, _], collect_seen(Tag)).

%% Where monitors run: `isolated', an analysis process for the partition; `inline', none
%% (the tracer steps the monitor); a Spec module's analysis/0 sets the default, and a
%% step budget given without saying where puts them in processes of their own.
where_monitors_run_test_() ->
    Fun = fun(MFA) -> spec(MFA) end,
    [{Name, fun() -> ?assertEqual(N, analysers(Spec, Opts)) end}
     || {Name, Spec, Opts, N} <- [{"a fun, default", Fun, #{}, 1},
                                  {"a fun, inline", Fun, #{analysis => inline}, 0},
                                  {"a Spec module saying inline", ?MODULE, #{}, 0},
                                  {"the module, isolated", ?MODULE, #{analysis => isolated}, 1},
                                  {"the module with a budget", ?MODULE, #{monitor_budget => #{time_ms => 5000}}, 1}]].

%% The analysis processes of a session monitoring the waiter: the session monitors each
%% as it is announced, and every announcement of the root's reaches it before the root's
%% launch, which riarc:start/3 waits for. What the session monitors besides its owner and
%% its tracers: an analysis process may not have run yet (riarc's processes are of low
%% priority), so its initial call is still proc_lib's.
analysers(Spec, Opts) ->
    {ok, S} = riarc:start({?MODULE, waiter, []}, Spec, Opts#{log => false}),
    {monitors, Ms} = erlang:process_info(S, monitors),
    #{processes := [Root], tracers := Tracers} = riarc:alive(S),
    As = [P || {process, P} <- Ms, is_pid(P), not lists:member(P, [self() | Tracers])],
    Root ! stop,
    {ok, _} = riarc:stop(S),
    length(As).

%% @private Spec module: the waiter accepts at its exit.
-spec spec(term()) -> {ok, riarc_monitor:monitor()} | undefined.
spec({?MODULE, waiter, []}) -> {ok, fun M({exit, _, normal}) -> accept; M(_) -> M end};
spec(_) -> undefined.

%% @private
-spec analysis() -> inline.
analysis() -> inline.

-spec waiter() -> ok.
waiter() -> receive stop -> ok end.

collect_seen(Tag) ->
    receive {Tag, E} -> [E | collect_seen(Tag)]
    after 0 -> []
    end.

%% Bad budgets and limits are bad input.
options_test() ->
    Spec = fun(_) -> undefined end,
    [?assertMatch({error, {riarc, {bad_option, K, _}}}, riarc:run({?MODULE, child, []}, Spec, #{K => V}))
     || {K, V} <- [{monitor_budget, #{time_ms => 0}}, {monitor_budget, #{foo => 1}},
                   {monitor_budget, x}, {limits, #{policy => drop}}, {limits, #{max_suspend => 0}},
                   {limits, #{max_payload => -1}}, {analysis, elsewhere}]],
    %% A budget cannot be kept for a monitor in its tracer: asking for both is an error.
    {error, {riarc, E = {inline_budget, #{time_ms := 10}}}} =
        riarc:run({?MODULE, child, []}, Spec, #{analysis => inline, monitor_budget => #{time_ms => 10}}),
    ?assertMatch("monitor_budget " ++ _, riarc:format_error(E)).

%% Limit max_payload keeps the promise: a monitor that would reject the big message
%% itself cannot reject its mark, and accepts at the end; that accept, reached after a
%% message was cut out, is inconclusive, saying where and how big. A verdict reached
%% before the cut stands; with no limit the reject is reached. Wherever the monitor runs.
truncated_verdicts_test_() ->
    [{atom_to_list(W), fun() -> truncated_verdicts(W) end} || W <- [isolated, inline]].

truncated_verdicts(Where) ->
    NoBig = fun M({recv, _, {big, _}}) -> reject; M({exit, _, _}) -> accept; M(_) -> M end,
    Early = fun(_) -> accept end,
    Run = fun(Mon, Max) ->
                  {ok, #{verdicts := [V]} = R} =
                      riarc:run({?MODULE, big, [100000]}, fun({?MODULE, big, _}) -> {ok, Mon} end,
                                #{events => [recv], limits => #{max_payload => Max}, analysis => Where}),
                  {V, riarc_result:status(R)}
          end,
    {Cut, Status} = Run(NoBig, 1000),
    ?assertMatch(#{verdict := inconclusive, reason := {payload_truncated, #{event_no := 2, bytes := B}}}
                   when B > 100000, Cut),
    ?assertEqual(1, Status),
    ?assertMatch({#{verdict := reject}, 1}, Run(NoBig, infinity)),
    ?assertMatch({#{verdict := accept}, 0}, Run(Early, 1000)).
