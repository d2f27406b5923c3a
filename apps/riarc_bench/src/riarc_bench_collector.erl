%% @doc The collector (004 §3.3, fig. 2): samples the VM every `interval' ms and keeps
%% the response-time statistics.
%%
%% Each sample reads scheduler utilisation from the scheduler wall time (the collector
%% turns the `scheduler_wall_time' flag on itself, and the flag lives exactly as long as
%% the collector does), `erlang:memory(total)' and `erlang:memory(processes)', and the
%% master's progress counters, then hands a row to the writer process without waiting.
%% Response times arrive from the master in batches (`{rt, [Microseconds]}'); they feed a
%% Welford mean, a histogram for p50/p90/p99/max, and a bounded reservoir for the
%% distribution fits. An optional progress line goes to stderr at every sample.
%%
%% ```
%% 1> {ok, W} = riarc_bench_writer:start("/tmp/ts.csv", riarc_bench_collector:columns()).
%% 2> C = riarc_bench_collector:start(#{writer => W, interval => 100}).
%% 3> C ! {rt, [120, 95, 300]}.
%% 4> maps:with([mrt_mean_ms, mrt_max_ms], riarc_bench_collector:stop(C)).
%% #{mrt_max_ms => 0.3,mrt_mean_ms => 0.1716666666666667}
%% '''
-module(riarc_bench_collector).

-include("riarc_bench_counters.hrl").

-export([start/1, stop/1, columns/0]).

-export_type([opts/0, stats/0]).

-type opts() :: #{writer := pid(), interval => pos_integer(),
                  counters => counters:counters_ref(), progress => boolean(),
                  workers => pos_integer(), seed => integer(), reservoir => pos_integer()}.
-type stats() :: #{atom() => number() | [number()]}.

-spec columns() -> [atom()].
columns() ->
    [elapsed_ms, sched_util, mem_total, mem_processes, created, ended, requests, acks,
     messages, mrt_interval_ms, mrt_mean_ms, rt_count].

%% Starts a collector linked to the caller and takes the first scheduler sample.
-spec start(opts()) -> pid().
start(Opts) ->
    Self = self(),
    Ref = make_ref(),
    Pid = spawn_link(fun() -> init(Self, Ref, Opts) end),
    receive {Ref, ready} -> Pid end.

%% Takes a last sample, stops the collector and returns the run's statistics.
-spec stop(pid()) -> stats().
stop(Pid) ->
    Ref = monitor(process, Pid),
    Pid ! {stop, self(), Ref},
    receive
        {Ref, Stats} -> demonitor(Ref, [flush]), Stats;
        {'DOWN', Ref, process, _, Reason} -> error({collector_died, Reason})
    end.

init(Parent, Ref, Opts) ->
    %% 004 §3.3: scheduler (not OS CPU) utilisation, since idle schedulers spin.
    _ = erlang:system_flag(scheduler_wall_time, true),
    Interval = maps:get(interval, Opts, 500),
    Now = erlang:monotonic_time(millisecond),
    S = #{opts => Opts, interval => Interval, t0 => Now, sched => scheduler:sample(),
          all => riarc_bench_stats:welford_new(), window => riarc_bench_stats:welford_new(),
          hist => riarc_bench_stats:hist_new(),
          reservoir => riarc_bench_stats:reservoir_new(maps:get(reservoir, Opts, 5000),
                                                       maps:get(seed, Opts, 1)),
          util => riarc_bench_stats:welford_new(), mem => riarc_bench_stats:welford_new(),
          procs => riarc_bench_stats:welford_new(), mem_peak => 0,
          timer => erlang:send_after(Interval, self(), tick)},
    Parent ! {Ref, ready},
    loop(S).

loop(S) ->
    receive
        {rt, Rts} -> loop(add_rts(Rts, S));
        tick -> loop(tick(sample(S)));
        {stop, From, Ref} ->
            _ = erlang:cancel_timer(maps:get(timer, S)),
            S1 = sample(S),
            progress_done(S1),
            From ! {Ref, summary(S1)}
    end.

tick(S = #{interval := I}) -> S#{timer := erlang:send_after(I, self(), tick)}.

add_rts(Rts, S = #{all := A, window := Win, hist := H, reservoir := R}) ->
    Add = fun(F, Acc) -> lists:foldl(F, Acc, Rts) end,
    S#{all := Add(fun riarc_bench_stats:welford_add/2, A),
       window := Add(fun riarc_bench_stats:welford_add/2, Win),
       hist := Add(fun riarc_bench_stats:hist_add/2, H),
       reservoir := Add(fun riarc_bench_stats:reservoir_add/2, R)}.

%% One sample: utilisation since the previous sample, memory now, progress counters,
%% and the mean response time of the responses dequeued in this window.
sample(S = #{sched := Sched0, t0 := T0, opts := Opts}) ->
    Sched = scheduler:sample(),
    Util = total_util(scheduler:utilization(Sched0, Sched)),
    [{total, MemTotal}, {processes, MemProcs}] = erlang:memory([total, processes]),
    Counts = read_counters(maps:get(counters, Opts, undefined)),
    #{window := Win, all := All} = S,
    Elapsed = erlang:monotonic_time(millisecond) - T0,
    Row = [Elapsed, Util, MemTotal, MemProcs | Counts]
        ++ [window_mrt(Win), us_to_ms(mean_or_zero(All)),
            riarc_bench_stats:count(All)],
    ok = riarc_bench_writer:row(maps:get(writer, Opts), Row),
    progress(Opts, Elapsed, Counts, Util, All),
    S#{sched := Sched, window := riarc_bench_stats:welford_new(),
       util := riarc_bench_stats:welford_add(Util, maps:get(util, S)),
       mem := riarc_bench_stats:welford_add(MemTotal, maps:get(mem, S)),
       procs := riarc_bench_stats:welford_add(MemProcs, maps:get(procs, S)),
       mem_peak := max(MemTotal, maps:get(mem_peak, S))}.

total_util(Util) ->
    case lists:keyfind(total, 1, Util) of
        {total, F, _} -> F;
        false -> 0.0
    end.

read_counters(undefined) -> [0, 0, 0, 0, 0];
read_counters(C) ->
    [counters:get(C, I) || I <- [?C_CREATED, ?C_ENDED, ?C_REQUESTS, ?C_ACKS, ?C_MESSAGES]].

mean_or_zero(W) ->
    case riarc_bench_stats:count(W) of
        0 -> 0.0;
        _ -> riarc_bench_stats:mean(W)
    end.

us_to_ms(Us) -> Us / 1000.

%% A window in which no sampled response was dequeued has no mean: the field stays
%% empty (a 0 would read as "instant responses" in plots).
window_mrt(Win) ->
    case riarc_bench_stats:count(Win) of
        0 -> "";
        _ -> us_to_ms(riarc_bench_stats:mean(Win))
    end.

progress(#{progress := true, workers := N}, Elapsed, [Created, Ended, _Req, Acks, _Msgs], Util, All) ->
    io:format(standard_error, "\r[bench] ~6.1fs  workers ~b/~b created, ~b done  acks ~b  "
              "mean response ~.3f ms  schedulers busy ~5.1f%   ",
              [Elapsed / 1000, Created, N, Ended, Acks, us_to_ms(mean_or_zero(All)), Util * 100]);
progress(_, _, _, _, _) -> ok.

progress_done(#{opts := #{progress := true}}) -> io:format(standard_error, "~n", []);
progress_done(_) -> ok.

summary(#{all := All, hist := H, reservoir := R, util := U, mem := M, procs := P,
          mem_peak := Peak}) ->
    Pct = fun(Q) -> us_to_ms(riarc_bench_stats:percentile(H, Q)) end,
    #{mrt_mean_ms => us_to_ms(mean_or_zero(All)), mrt_sd_ms => us_to_ms(riarc_bench_stats:sd(All)),
      rt_count => riarc_bench_stats:count(All),
      mrt_p50_ms => Pct(0.5), mrt_p90_ms => Pct(0.9), mrt_p99_ms => Pct(0.99),
      mrt_max_ms => us_to_ms(riarc_bench_stats:hist_max(H)),
      sched_mean => mean_or_zero(U), mem_mean => mean_or_zero(M), mem_peak => Peak,
      mem_processes_mean => mean_or_zero(P), samples => riarc_bench_stats:count(U),
      rt_sample_ms => [us_to_ms(X) || X <- riarc_bench_stats:reservoir_list(R)]}.
