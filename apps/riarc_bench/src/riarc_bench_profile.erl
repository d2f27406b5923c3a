%% @doc What limits riarc on ping-pong (issue 17's target: riarc within 1.05 x the VM's
%% tracing floor), measured in one VM in two ways.
%%
%% 1. Where the time goes in the running system: `riarc_bench_shapes:pingpong(P, R)' with
%%    the property "never receives {error, _}" bare, under the tracing floor (the VM's
%%    tracing with riarc's flags and trace patterns into a sink, riarc_bench_user's
%%    `tracing'), under riarc, and under riarc with only the root monitored (one tracer,
%%    no takeover, one analysis process); then the same with every message traced (the
%%    monitors without their trace patterns). Each the median of `Reps' runs, the set-ups
%%    interleaved. From these: riarc's cost per monitored process (a tracer, its
%%    takeover, its analysis process) and per traced event above the floor.
%% 2. Where one event's time goes inside riarc, ns per event by part, on the trace
%%    messages one pinger really produces (recorded with every message traced): the
%%    check of the routing table's seal and the decoding (riarc_backend:event/2), the
%%    tracer core's step (riarc_tracer_core:handle/2: routing and the analyse effect),
%%    the batching of events to the partition's analysis process (what riarc_tracer's
%%    loop does with an analyse effect: a list cell, and one message per 64 events),
%%    and the analysis process itself (riarc_analysis, running the property's monitor,
%%    with its per-step budget accounting), against the analysis step alone
%%    (riarc_analysis_core:step/2). The VM's own delivery of a trace event is part 1's floor
%%    minus the baseline, per event.
%% 3. `load/2': the load driver's system, burst, instrumentation alone
%%    (riarc_bench_alone), bare, under the floor, riarc and centralised monitoring: per
%%    set-up the wall time, the VM's CPU time (statistics(runtime), every scheduler), its
%%    context switches and the MRT, and per traced event the CPU time and the context
%%    switches each set-up adds to the floor: the cost per event that a faster master
%%    (a lower MRT) would need to be spared.
%% 4. `eprof/2': eprof over riarc's own processes (the session, every tracer, every
%%    analysis process) during one ping-pong run with the property's patterns, the
%%    functions sorted by time: what a monitored process's tracer spends its time on.
%%    The system waits for a `go' (gated/3) until eprof follows the session and the root
%%    tracer, so that every tracer and analysis process they start is followed too; the
%%    system's own processes are not (riarc traces them).
%% ```
%% 1> R = riarc_bench_profile:pingpong(10, 200, 1).
%% 2> io:put_chars(riarc_bench_profile:format(R)).
%% ping-pong 10 x 200, median of 1 runs (ms): ...
%% '''
-module(riarc_bench_profile).

-export([main/1, pingpong/3, parts/1, format/1, eprof/2, load/2, format_load/1]).
%% The gated system of eprof/2.
-export([gated/2]).

-define(PROP, "examples/props/no_error.prop").
%% riarc_tracer's batch size (its ?BATCH): events to the analysis per message.
-define(BATCH, 64).

%% @doc `erl -eval 'riarc_bench_profile:main(["50", "1000", "5"])'': prints the profile.
-spec main([string()]) -> no_return().
main(["load", N, Reps]) ->
    io:put_chars(format_load(load(list_to_integer(N), list_to_integer(Reps)))),
    halt(0);
main(["eprof", P, R]) ->
    ok = eprof(list_to_integer(P), list_to_integer(R)),
    halt(0);
main([P, R, Reps]) ->
    io:put_chars(format(pingpong(list_to_integer(P), list_to_integer(R), list_to_integer(Reps)))),
    halt(0).

%% @doc Both measurements on pingpong(P, R), Reps runs of each set-up.
-spec pingpong(pos_integer(), pos_integer(), pos_integer()) -> map().
pingpong(P, R, Reps) ->
    {ok, Mod} = riarc_shml:load_file(?PROP),
    Sys = {riarc_bench_shapes, pingpong, [P, R]},
    Props = {props, ?PROP},
    All = {module, riarc_bench_shapes},
    Setups = [{baseline, fun() -> user(baseline, Sys, Props) end},
              {floor, fun() -> user(tracing, Sys, Props) end},
              {riarc, fun() -> user(riarc, Sys, Props) end},
              {riarc_root_only, fun() -> root_only(Sys, Mod, Mod:trace_patterns()) end},
              {floor_all, fun() -> user(tracing, Sys, All) end},
              {riarc_all, fun() -> user(riarc, Sys, All) end},
              {riarc_root_only_all, fun() -> root_only(Sys, Mod, #{}) end}],
    _ = [F() || {_, F} <- Setups],                      % warm-up: code loaded, caches
    Runs = [{S, F()} || _ <- lists:seq(1, Reps), {S, F} <- Setups],
    Med = fun(S, K) -> riarc_bench_ci:median([maps:get(K, X) || {S1, X} <- Runs, S1 =:= S]) end,
    Wall = maps:from_list([{S, Med(S, wall_ms)} || {S, _} <- Setups]),
    Events = maps:from_list([{S, Med(S, events)} || {S, _} <- Setups]),
    #{p => P, r => R, reps => Reps, wall_ms => Wall, events => Events,
      processes => 2 * P + 1, parts => parts(Mod)}.

user(Setup, Sys, Mons) ->
    {ok, X} = riarc_bench_user:run_one(Setup, Sys, Mons, []),
    X.

%% riarc with only the root monitored: every process in the root's partition, so one
%% tracer, no takeover and one analysis process; the same flags and patterns.
root_only(Sys, Mod, Patterns) ->
    Spec = fun(MFA) when MFA =:= Sys -> Mod:spec(MFA); (_) -> undefined end,
    T0 = erlang:monotonic_time(microsecond),
    {ok, R} = riarc:run(Sys, Spec, #{timeout => infinity, events => Mod:trace_flags(),
                                     log => false, invariants => false,
                                     trace_patterns => Patterns}),
    #{wall_ms => (erlang:monotonic_time(microsecond) - T0) / 1000,
      events => maps:get(events, R, 0)}.

%%% Part 2: ns per event by part -------------------------------------------------------

%% @doc ns per event of each part of riarc's work on one event, over the events of one
%% pinger (1000 round trips) replayed until at least 200 000 events are timed.
-spec parts(module()) -> #{atom() => number()}.
parts(Mod) ->
    {Pinger, MFA, Msgs} = record_pinger(1000),
    Seal = 16#5ea1,
    Sealed = [{riarc_sealed, Seal, M} || M <- Msgs],
    Backend = riarc_backend:new(riarc_backend_route, #{seal => Seal}),
    K = max(1, 200000 div length(Msgs)),
    N = K * length(Msgs),
    {ok, Mon} = Mod:spec(MFA),
    %% The monitor opens with the process's init event, as a tracer gives it.
    Events = [{init, Pinger, self(), MFA}
              | [E || M <- Sealed, {ok, E} <- [riarc_backend:event(Backend, M)]]],
    Decode = timed(N, fun() -> rep(K, fun() -> [riarc_backend:event(Backend, M) || M <- Sealed] end) end),
    Core = timed(N, fun() -> rep(K, fun() -> core(Backend, Pinger, MFA, Mod, Sealed) end) end),
    Batch = timed(N, fun() -> rep(K, fun() -> batch(Events) end) end),
    Step = timed(N, fun() -> rep(K, fun() -> step(Pinger, MFA, Mon, Events) end) end),
    Analyser = timed(N, fun() -> rep(K, fun() -> analyser(Pinger, MFA, Mon, Events) end) end),
    %% Instrumentation alone: a monitor that does nothing, in the same analysis process.
    Idle = fun I(_) -> I end,
    IdleAnalyser = timed(N, fun() -> rep(K, fun() -> analyser(Pinger, MFA, Idle, Events) end) end),
    Accounting = timed(N, fun() -> accounting(N) end),
    #{events_per_pinger => length(Msgs), decode_ns => Decode, core_ns => Core,
      batch_ns => Batch, analysis_step_ns => Step, analyser_ns => Analyser,
      idle_analyser_ns => IdleAnalyser, accounting_ns => Accounting}.

%% The trace messages of one pinger, every message traced (its sends and receives; its
%% spawn of the ponger and its exit left out, so that the replay is steady state).
record_pinger(R) ->
    Self = self(),
    Sink = spawn(fun() -> collect(Self, []) end),
    Root = spawn(fun() -> receive go -> riarc_bench_shapes:pinger(Self, R) end end),
    1 = erlang:trace(Root, true, [send, 'receive', {tracer, Sink}]),
    Root ! go,
    receive done -> ok end,
    Ref = erlang:trace_delivered(Root),
    receive {trace_delivered, Root, Ref} -> ok end,
    Sink ! {stop, self()},
    Msgs = receive {Sink, Ms} -> Ms end,
    Steady = [M || M <- Msgs, element(3, M) =:= send orelse element(3, M) =:= 'receive',
                   element(4, M) =/= go, element(4, M) =/= done],
    {Root, {riarc_bench_shapes, pinger, [Self, R]}, Steady}.

collect(Owner, Acc) ->
    receive
        {stop, Owner} -> Owner ! {self(), lists:reverse(Acc)};
        M -> collect(Owner, [M | Acc])
    end.

%% The tracer core of the pinger's partition (the root tracer in direct mode, analysis in
%% its own process: each event becomes an `analyse' effect), one step per message.
core(Backend, Pinger, MFA, Mod, Msgs) ->
    Cfg = #{lambda => riarc_lambda:new(fun(M) -> Mod:spec(M) end), backend => Backend,
            session => self(), checks => false, perturb => undefined,
            %% The replayed events hold no spawn: no tracer is ever started.
            start_tracer => fun(_, _, _, _) -> no_tracer end,
            init_from_spawn => true, self => self(), analysis => isolated},
    {St0, _} = riarc_tracer_core:init_root(Cfg, Pinger, MFA, {init, Pinger, self(), MFA}),
    lists:foldl(fun(M, St) -> {St1, [{analyse, _}]} = riarc_tracer_core:handle(M, St), St1 end,
                St0, Msgs).

%% riarc_tracer's handling of `analyse' effects: each event consed onto the buffer, the
%% buffer sent, reversed, to the analysis process every ?BATCH events (here a process
%% that drops them).
batch(Events) ->
    Sink = spawn(fun Drop() -> receive stop -> ok; _ -> Drop() end end),
    Key = make_ref(),
    {Buf, _} = lists:foldl(fun(E, {B, NB}) when NB + 1 >= ?BATCH ->
                                   Sink ! {riarc_evts, Key, lists:reverse([E | B])}, {[], 0};
                              (E, {B, NB}) -> {[E | B], NB + 1}
                           end, {[], 0}, Events),
    Sink ! {riarc_evts, Key, lists:reverse(Buf)},
    Sink ! stop.

%% The analysis step alone: the property's monitor, event by event.
step(Pinger, MFA, Mon, Events) ->
    A0 = riarc_analysis_core:new(self(), 0, {Pinger, MFA}, Mon),
    lists:foldl(fun(E, A) -> {next, A1, []} = riarc_analysis_core:step(E, A), A1 end, A0, Events).

%% The real analysis process, fed as a tracer feeds it (batches of ?BATCH), until its
%% verdict (none: the events end without one) reaches this process as its session.
analyser(Pinger, MFA, Mon, Events) ->
    {An, Key, _Clock} = riarc_analysis:start(#{session => self(), explain => 0}, self(),
                                             {Pinger, MFA}, Mon),
    _ = [riarc_analysis:events(An, Key, B) || B <- chunks(Events)],
    ok = riarc_analysis:finish(An, Key),
    receive {riarc_s, _, {riarc_verdict, _, _, _, none, _, _}} -> ok end,
    unlink(An).

%% What riarc_analysis does around each monitor step for its budget (riarc_analysis's
%% step/2, the same calls in the same order): the step count, the reductions and the
%% clock before and after, the watcher's atomics.
accounting(0) -> ok;
accounting(N) ->
    Clock = get_clock(),
    _ = atomics:add_get(Clock, 1, 1),
    {reductions, R0} = erlang:process_info(self(), reductions),
    T0 = erlang:monotonic_time(millisecond),
    atomics:put(Clock, 3, T0),
    atomics:put(Clock, 4, R0),
    atomics:put(Clock, 2, 1),
    atomics:put(Clock, 2, 0),
    _ = erlang:monotonic_time(millisecond) - T0,
    {reductions, _} = erlang:process_info(self(), reductions),
    accounting(N - 1).

get_clock() ->
    case get(clock) of
        undefined -> C = atomics:new(4, [{signed, true}]), put(clock, C), C;
        C -> C
    end.

chunks([]) -> [];
chunks(L) when length(L) =< ?BATCH -> [L];
chunks(L) -> {H, T} = lists:split(?BATCH, L), [H | chunks(T)].

rep(0, _F) -> ok;
rep(K, F) -> _ = F(), rep(K - 1, F).

%% ns per event of F over N events, in a fresh process (its own heap), median of 3; a
%% part that crashes fails the profile instead of leaving it waiting.
timed(N, F) ->
    Self = self(),
    One = fun() ->
                  {Pid, Ref} = spawn_monitor(fun() ->
                                                     T0 = erlang:monotonic_time(nanosecond),
                                                     _ = F(),
                                                     Self ! {self(), erlang:monotonic_time(nanosecond) - T0}
                                             end),
                  receive
                      {Pid, Ns} -> demonitor(Ref, [flush]), Ns / N;
                      {'DOWN', Ref, process, Pid, Why} -> error({part_failed, Why})
                  end
          end,
    riarc_bench_ci:median([One() || _ <- [1, 2, 3]]).

%%% Output ------------------------------------------------------------------------------

%% @doc The profile as text: the set-ups' medians, the costs derived from them, and the
%% parts of one event.
-spec format(map()) -> iolist().
format(#{p := P, r := R, reps := Reps, wall_ms := W, events := Ev, processes := NP,
         parts := Parts}) ->
    F = fun(X) -> riarc_bench_ci:num(X) end,
    Row = fun(S, What) ->
                  io_lib:format("  ~-20s ~10s ms ~10s events  ~ts~n",
                                [S, F(maps:get(S, W)), F(maps:get(S, Ev)), What])
          end,
    PerProc = 1000 * (maps:get(riarc, W) - maps:get(riarc_root_only, W)) / (NP - 1),
    EvAll = maps:get(floor_all, Ev),
    Delivery = 1.0e6 * (maps:get(floor_all, W) - maps:get(baseline, W)) / max(1, EvAll),
    AboveAll = 1.0e6 * (maps:get(riarc_root_only_all, W) - maps:get(riarc_root_only, W)
                        - (maps:get(floor_all, W) - maps:get(floor, W)))
        / max(1, maps:get(riarc_root_only_all, Ev) - maps:get(riarc_root_only, Ev)),
    #{decode_ns := D, core_ns := C, batch_ns := B, analysis_step_ns := St,
      analyser_ns := An} = Parts,
    [io_lib:format("ping-pong ~b x ~b (~b processes), median of ~b runs in one VM:~n",
                   [P, R, NP, Reps]),
     Row(baseline, "unmonitored"),
     Row(floor, "VM tracing, riarc's flags and the property's patterns, into a sink"),
     Row(riarc, "riarc, the property (its patterns), one tracer per process"),
     Row(riarc_root_only, "riarc, the same, only the root monitored (one tracer)"),
     Row(floor_all, "VM tracing of every message into a sink"),
     Row(riarc_all, "riarc, every message traced, one tracer per process"),
     Row(riarc_root_only_all, "riarc, every message traced, only the root monitored"),
     io_lib:format("riarc / floor: ~s; riarc above the floor: ~s ms, of which one tracer, "
                   "its session and one analysis (root only - floor): ~s ms, and per further "
                   "monitored process (tracer, takeover, analysis process): ~s us~n",
                   [F(maps:get(riarc, W) / maps:get(floor, W)),
                    F(maps:get(riarc, W) - maps:get(floor, W)),
                    F(maps:get(riarc_root_only, W) - maps:get(floor, W)), F(PerProc)]),
     io_lib:format("every message traced: the VM's delivery of a trace event into a sink "
                   "(floor_all - baseline, per event): ~s ns; riarc above that floor, per "
                   "event (one tracer, root only): ~s ns~n", [F(Delivery), F(AboveAll)]),
     io_lib:format("one event inside riarc (~b events of one pinger replayed), ns per event:~n"
                   "  seal check and decoding (riarc_backend:event/2)        ~s~n"
                   "  tracer core step (riarc_tracer_core:handle/2)          ~s (decoding included)~n"
                   "  batching to the analysis process (64 per message)      ~s~n"
                   "  analysis process (riarc_analysis, budget accounting)   ~s~n"
                   "    of which the monitor's step (riarc_analysis_core:step/2)  ~s~n"
                   "    and the budget accounting around each step           ~s~n"
                   "  analysis process with a monitor that does nothing      ~s~n",
                   [maps:get(events_per_pinger, Parts), F(D), F(C), F(B), F(An), F(St),
                    F(maps:get(accounting_ns, Parts)), F(maps:get(idle_analyser_ns, Parts))])].

%%% Part 3: eprof over riarc's processes ------------------------------------------------

%% @doc Prints eprof's totals (time per function, sorted) over the session, the tracers
%% and the analysis processes of one run of pingpong(P, R) with the property's patterns.
-spec eprof(pos_integer(), pos_integer()) -> ok.
eprof(P, R) ->
    {ok, Mod} = riarc_shml:load_file(?PROP),
    {ok, S} = riarc:start({?MODULE, gated, [P, R]}, Mod, #{log => false, invariants => false}),
    #{tracers := Ts, processes := [Root]} = riarc:alive(S),
    {ok, _} = eprof:start(),
    profiling = eprof:start_profiling([S | Ts], {'_', '_', '_'}, [set_on_spawn]),
    Root ! go,
    {ok, _} = riarc_session:finish(S, infinity),
    profiling_stopped = eprof:stop_profiling(),
    eprof:analyze(total, [{sort, time}]),
    stopped = eprof:stop(),
    ok.

%% @private pingpong(P, R) once told to go.
-spec gated(pos_integer(), pos_integer()) -> ok.
gated(P, R) ->
    receive go -> riarc_bench_shapes:pingpong(P, R) end.

%%% Part 3: the load driver's CPU and context switches per event ------------------------

%% @doc load(burst, N) with instrumentation alone under each set-up, Reps interleaved
%% runs in this VM after one warm-up each; medians per set-up.
-spec load(pos_integer(), pos_integer()) -> map().
load(N, Reps) ->
    Sys = {riarc_bench_shapes, load, [burst, N]},
    One = fun(S) ->
                  {Cs0, _} = statistics(context_switches),
                  {Cpu0, _} = statistics(runtime),
                  {ok, R} = riarc_bench_user:run_one(S, Sys, {module, riarc_bench_alone}, []),
                  {Cs1, _} = statistics(context_switches),
                  {Cpu1, _} = statistics(runtime),
                  R#{cs => Cs1 - Cs0, cpu_ms => Cpu1 - Cpu0}
          end,
    Setups = [baseline, tracing, riarc, centralised],
    _ = [One(S) || S <- Setups],
    Runs = [{S, One(S)} || _ <- lists:seq(1, Reps), S <- Setups],
    Med = fun(S, K) -> riarc_bench_ci:median([maps:get(K, X, 0) || {S1, X} <- Runs, S1 =:= S]) end,
    #{n => N, reps => Reps,
      setups => [{S, maps:from_list([{K, Med(S, K)} || K <- [wall_ms, cpu_ms, cs, events, lat_mean_us]])}
                 || S <- Setups]}.

%% @doc load/2's result as text.
-spec format_load(map()) -> iolist().
format_load(#{n := N, reps := Reps, setups := Ss}) ->
    F = fun(X) -> riarc_bench_ci:num(X) end,
    #{cpu_ms := FloorCpu, cs := FloorCs} = proplists:get_value(tracing, Ss),
    [io_lib:format("load driver, burst, n = ~b, instrumentation alone, median of ~b runs in one VM:~n"
                   "  set-up        wall ms    CPU ms  ctx switches    events  MRT ms  "
                   "CPU us/event above the floor  switches/event above the floor~n", [N, Reps]),
     [io_lib:format("  ~-12s ~8s ~9s ~13s ~9s ~7s  ~28s  ~s~n",
                    [S, F(W), F(Cpu), F(Cs), F(Ev), F(M / 1000),
                     above(S, 1000 * (Cpu - FloorCpu), Ev), above(S, Cs - FloorCs, Ev)])
      || {S, #{wall_ms := W, cpu_ms := Cpu, cs := Cs, events := Ev, lat_mean_us := M}} <- Ss]].

above(S, _, _) when S =:= baseline; S =:= tracing -> "-";
above(_, X, Ev) when Ev > 0 -> riarc_bench_ci:num(X / Ev);
above(_, _, _) -> "-".
