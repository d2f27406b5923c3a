%% @doc One benchmark run: the model, the master-worker system inside an
%% instrumentation set-up, the collector and its writer, and the run's files:
%%
%%   DIR/timeseries.csv  one row per collector sample (see `riarc_bench_collector:columns/0')
%%   DIR/summary.csv     one row: every parameter and the run's metrics
%%   DIR/rt_sample.csv   a uniform sample of response times (ms) for distribution fits
%%
%% Instrumentation set-ups are plain maps `#{name, description, run}' where `run' takes
%% the master's MFA and the parameters and returns once the whole system has stopped:
%% `baseline' spawns the master directly; `riarc' (000 fig. 1c), `centralised' (fig. 1b)
%% and `inline' (fig. 1a) run it under the monitors of `riarc_bench_monitor:spec/1'
%% chosen by the parameters `monitors' (none | soundness) and `cost_us'.
%%
%% ```
%% 1> {ok, S} = riarc_bench_run:run(#{shape => burst, workers => 200, requests => 20,
%%                                    time => 5, period => 20}, #{out => "/tmp/b"}).
%% 2> maps:with([acks, ack_errors], S).
%% #{ack_errors => 0,acks => 3992}
%% 3> maps:get(mrt_mean_ms, S).
%% 0.149...
%% '''
-module(riarc_bench_run).

-export([run/2, setups/0, riarc_variants/0, setup/1, has_monitors/1, summary_columns/0, summary_row/1,
         format_error/1, failed_verdicts/1]).

-export_type([opts/0, summary/0, setup/0, error_reason/0, monitoring_error/0]).

-type error_reason() :: {schedulers, Asked :: pos_integer(), Max :: pos_integer()}
                      | {out_dir, file:filename(), file:posix()}
                      | {master_crashed, term()}
                      | {monitoring, setup_name(), monitoring_error()}
                      | {monitoring_crashed, setup_name(), error | exit | throw, term()}
                      | no_master_result
                      | {overload, setup_name(), term()}
                      | {riarc_bench_model, riarc_bench_model:error_reason()}
                      | {riarc_bench_writer, riarc_bench_writer:error_reason()}
                      | {riarc_bench_mit, riarc_bench_mit:error_reason()}.
%% What a monitored set-up returned: an error of riarc's own modules or of the comparison
%% methods', each `{Module, Reason}' that riarc:format_error/1 turns into Module's sentence.
-type monitoring_error() :: {riarc_central, riarc_central:error_reason()}
                          | {riarc_inline, riarc_inline:error_reason()}
                          | {module(), term()}.
-type setup_name() :: atom().

-type opts() :: #{out := file:filename(), progress => boolean(), keep_pids => boolean()}.
-type summary() :: #{atom() => term()}.
%% `run' returns extra summary fields (e.g. verdict counts) or an error.
-type setup() :: #{name := atom(), description := string(),
                   run := fun((call(), riarc_bench_model:params()) ->
                                      {ok, map()} | {error, {?MODULE, error_reason()}})}.
-type call() :: {module(), atom(), list()}.

%% The modules the inline set-up weaves monitors into (000 fig. 1a).
-define(INLINE_MODULES, [riarc_bench_master, riarc_bench_worker]).

-spec setups() -> [atom()].
setups() -> riarc_bench_model:instrumentations().

%% @doc The set-ups that are riarc with some of its options set (riarc:run/3), here and
%% in riarc_bench_user: riarc_isolated, riarc_inline: every monitor in an analysis process
%% of its own, or in its tracer, whatever the Spec module says (option `analysis');
%% riarc_low, riarc_normal: riarc's tracers and analysis processes at that priority
%% (option `tracer_priority'); riarc_evm: over process tracers (option `backend');
%% riarc_paper: a tracer for every partition, as in the RIARC paper (option `adopt' 0:
%% no partition adopted).
-spec riarc_variants() -> #{atom() => riarc:opts()}.
riarc_variants() ->
    #{riarc_isolated => #{analysis => isolated}, riarc_inline => #{analysis => inline},
      riarc_low => #{tracer_priority => low}, riarc_normal => #{tracer_priority => normal},
      riarc_evm => #{backend => evm}, riarc_paper => #{adopt => 0}}.

variant(Name) ->
    #{Name := Extra} = riarc_variants(),
    fun(MFA, Spec, Opts) -> riarc:run(MFA, Spec, maps:merge(Opts, Extra)) end.

%% @doc Whether a set-up runs monitors at all: the baseline and bare tracing do not, so
%% they run once per benchmark, unmonitored, and have no verdicts to count. Nor does
%% `mit' (004 §4.2's idle-time monitor), which measures rather than decides.
-spec has_monitors(atom()) -> boolean().
has_monitors(I) -> not lists:member(I, [baseline, tracing, mit]).

-spec setup(atom()) -> setup().
setup(baseline) ->
    #{name => baseline, description => "no monitoring", run => fun run_baseline/2};
setup(tracing) ->
    #{name => tracing,
      description => "VM tracing alone, into one process that discards: the floor of outline monitoring",
      run => fun run_tracing/2};
setup(riarc) ->
    #{name => riarc, description => "riarc decentralised outline monitoring (000 fig. 1c)",
      run => monitored(fun riarc:run/3)};
%% The study's monitors are a module's, which riarc runs each in an analysis process of
%% its own by default (option `analysis', riarc:run/3). This set-up runs them in their
%% tracers, the placement a property file's monitors get, where a tracer adopts its
%% children's partitions.
setup(riarc_inline) ->
    #{name => riarc_inline,
      description => "riarc with every monitor in its tracer (option analysis => inline), partitions adopted",
      run => monitored(variant(riarc_inline))};
setup(riarc_evm) ->
    #{name => riarc_evm,
      description => "riarc over process tracers, the fallback when the routing table's NIF cannot load",
      run => monitored(variant(riarc_evm))};
setup(centralised) ->
    #{name => centralised,
      description => "one tracer, per-process monitors by trace slicing (000 fig. 1b)",
      run => monitored(fun riarc_central:run/3)};
setup(mit) ->
    #{name => mit,
      description => "004 §4.2: workers measure their mean idle time, merged by weighted Welford",
      run => fun run_mit/2};
setup(inline) ->
    #{name => inline, description => "monitors woven into the processes (000 fig. 1a)",
      run => fun run_inline/2}.

run_baseline({M, F, A}, _P) ->
    {_Pid, Ref} = spawn_monitor(M, F, A),
    receive
        {'DOWN', Ref, process, _, normal} -> {ok, #{}};
        {'DOWN', Ref, process, _, Reason} -> {error, {?MODULE, {master_crashed, Reason}}}
    end.

run_mit(MFA, P) ->
    case riarc_bench_mit:run(MFA, P) of
        {ok, _} = Ok -> Ok;
        {error, {riarc_bench_mit, _} = Error} -> {error, {?MODULE, Error}}
    end.

%% The cost of the VM's tracing by itself: the events every outline set-up asks for, sent
%% to a process that drops them. What riarc or centralised monitoring costs beyond this
%% is their own doing; this much no outline method can avoid on this VM.
run_tracing({M, F, A}, P) ->
    Sink = spawn_opt(fun Drop() -> receive stop -> ok; _ -> Drop() end end,
                     [{message_queue_data, off_heap}]),
    Flags = [procs, set_on_spawn, 'receive' | [send || maps:get(events, P, recv) =:= all]],
    {Pid, Ref} = spawn_monitor(fun() -> receive go -> apply(M, F, A) end end),
    1 = erlang:trace(Pid, true, [{tracer, Sink} | Flags]),
    Pid ! go,
    receive
        {'DOWN', Ref, process, _, Reason} ->
            Sink ! stop,
            case Reason of
                normal -> {ok, #{}};
                _ -> {error, {?MODULE, {master_crashed, Reason}}}
            end
    end.

%% Every monitored set-up runs the same monitors (riarc_bench_monitor:spec/1) on the same
%% events with the same options; only where the monitors run differs. The soundness
%% monitors need only receive events (and spawn and exit, which every set-up has anyway),
%% so by default only those are instrumented, as riarc does for a property that names no
%% send; `events => all' instruments sends too, as the paper's experiments did.
%% Invariant checking is a testing aid of the riarc core and is off here, as it is not
%% part of the algorithm being measured.
monitored(Run) ->
    fun(MFA, P) ->
            Spec = riarc_bench_monitor:spec(maps:with([monitors, cost_us], P)),
            Events = case maps:get(events, P, recv) of
                         recv -> [recv];
                         all -> [send, recv]
                     end,
            Opts = #{timeout => infinity, log => false, invariants => false, events => Events},
            try Run(MFA, Spec, Opts) of
                %% The monitoring detached from the system at a safety limit: the run
                %% stopped being measured there (the paper's missing bars), which is no
                %% fault of the master's, whose result never comes.
                {ok, #{overload := Over}} when Over =/= undefined ->
                    {error, {?MODULE, {overload, maps:get(instrumentation, P), Over}}};
                {ok, Result} -> {ok, verdict_counts(Result)};
                {error, Reason} -> {error, {?MODULE, {monitoring, maps:get(instrumentation, P), Reason}}}
            catch
                Class:Reason ->
                    {error, {?MODULE, {monitoring_crashed, maps:get(instrumentation, P), Class, Reason}}}
            end
    end.

%% Inline monitoring needs woven code: the master and worker modules are recompiled with
%% riarc_inline's parse transform for the run and put back afterwards (a benchmark VM is
%% fresh, but a `bench' run in a user's VM must leave it as it found it).
run_inline(MFA, P) ->
    case riarc_inline:instrument(?INLINE_MODULES) of
        ok ->
            try (monitored(fun(M, S, O) -> riarc_inline:run(M, S, maps:remove(invariants, O)) end))(MFA, P)
            after ok = riarc_inline:restore(?INLINE_MODULES)
            end;
        {error, Reason} -> {error, {?MODULE, {monitoring, inline, Reason}}}
    end.

%% Verdicts are counted, not logged: a run has one per worker.
verdict_counts(#{verdicts := Verdicts}) ->
    Count = fun(V) -> length([E || E = #{verdict := V1} <- Verdicts, V1 =:= V]) end,
    #{monitored => length(Verdicts), accepted => Count(accept), rejected => Count(reject),
      verdict_errors => Count(error), inconclusive => Count(none),
      not_accepted => [E || E = #{verdict := V} <- Verdicts, V =/= accept]}.

%% @doc The verdicts a run must not have: with the soundness monitors every process must
%% be accepted (a reject or error is an unsound trace or a broken run, and fails the run
%% loudly); with `monitors => none' every verdict must be `none'.
-spec failed_verdicts(summary()) -> non_neg_integer().
failed_verdicts(S = #{instrumentation := I}) ->
    case {has_monitors(I), maps:get(monitors, S, soundness)} of
        {false, _} -> 0;
        {true, none} -> maps:get(monitored, S, 0) - maps:get(inconclusive, S, 0);
        {true, _} -> maps:get(monitored, S, 0) - maps:get(accepted, S, 0)
    end.

%% Runs one benchmark and writes its files under `out'.
-spec run(map(), opts()) -> {ok, summary()} | {error, {?MODULE, error_reason()}}.
run(Given, Opts = #{out := Out}) ->
    case riarc_bench_model:new(Given) of
        {ok, P} ->
            case {ensure_dir(Out), schedulers(P)} of
                {ok, {ok, K}} -> with_schedulers(K, fun() -> run_model(P#{schedulers => K}, Opts) end);
                {ok, Error} -> Error;
                {Error, _} -> Error
            end;
        {error, {riarc_bench_model, _} = Error} -> {error, {?MODULE, Error}}
    end.

ensure_dir(Out) ->
    case filelib:ensure_path(Out) of
        ok -> ok;
        {error, Reason} -> {error, {?MODULE, {out_dir, Out, Reason}}}
    end.

%% The run uses K schedulers of this VM (experiments start each VM with +S K instead).
schedulers(P) ->
    Max = erlang:system_info(schedulers),
    case maps:get(schedulers, P, erlang:system_info(schedulers_online)) of
        K when K =< Max -> {ok, K};
        K -> {error, {?MODULE, {schedulers, K, Max}}}
    end.

with_schedulers(K, Fun) ->
    Old = erlang:system_flag(schedulers_online, K),
    try Fun() after erlang:system_flag(schedulers_online, Old) end.

run_model(P, Opts = #{out := Out}) ->
    case riarc_bench_writer:start(filename:join(Out, "timeseries.csv"), riarc_bench_collector:columns()) of
        {ok, Writer} -> run_model(P, Opts, Writer);
        {error, {riarc_bench_writer, _} = Error} -> {error, {?MODULE, Error}}
    end.

run_model(P, Opts = #{out := Out}, Writer) ->
    Model = riarc_bench_model:build(P),
    Counters = counters:new(riarc_bench_master:counter(size), []),
    Collector = riarc_bench_collector:start(
                  #{writer => Writer, interval => maps:get(interval, P), counters => Counters,
                    progress => maps:get(progress, Opts, false), workers => maps:get(workers, P),
                    seed => maps:get(seed, P)}),
    Cfg = (riarc_bench_master:config(P, self(), Collector, Counters))#{
            keep_pids => maps:get(keep_pids, Opts, false)},
    #{run := RunSystem} = setup(maps:get(instrumentation, P)),
    Outcome = RunSystem({riarc_bench_master, start, [Cfg]}, P),
    Stats = riarc_bench_collector:stop(Collector),
    ok = riarc_bench_writer:close(Writer),
    case {Outcome, master_result()} of
        {{ok, Extra}, {ok, Result}} -> finish(P, Model, maps:merge(Result, Extra), Stats, Out);
        {{ok, _}, Error} -> Error;
        {Error, _} -> Error
    end.

%% The master reports before it exits, so its result is already here.
master_result() ->
    receive {riarc_bench_master, _, Result} -> {ok, Result}
    after 0 -> {error, {?MODULE, no_master_result}}
    end.

finish(P, Model, Result, Stats, Out) ->
    Sample = maps:get(rt_sample_ms, Stats),
    Fits = riarc_bench_stats:fits(Sample),
    Ks = maps:from_list([{list_to_atom("ks_" ++ atom_to_list(D)), ks_of(D, Fits)}
                         || D <- [normal, lognormal, gamma]]),
    %% What a measuring set-up adds (riarc_bench_mit's idle times) goes into the summary too.
    Measured = maps:with([mit_mean_ms, mit_sd_ms, mit_periods, mit_workers], Result),
    Summary = maps:merge(maps:merge(maps:merge(maps:merge(P, maps:remove(rt_sample_ms, Stats)), Ks), Measured),
                         #{duration_ms => maps:get(duration_ms, Result),
                           messages => maps:get(messages, Result),
                           requests_sent => maps:get(requests, Result),
                           acks => maps:get(acks, Result),
                           ack_errors => maps:get(ack_errors, Result),
                           created => maps:get(created, Result),
                           ended => maps:get(ended, Result),
                           throughput => throughput(Result),
                           batch_total => lists:sum(maps:get(batches, Model)),
                           fits => Fits, pids => maps:get(pids, Result), out => Out,
                           monitored => maps:get(monitored, Result, 0),
                           accepted => maps:get(accepted, Result, 0),
                           rejected => maps:get(rejected, Result, 0),
                           verdict_errors => maps:get(verdict_errors, Result, 0),
                           inconclusive => maps:get(inconclusive, Result, 0)}),
    Files = [{"summary.csv", summary_columns(), [summary_row(Summary)]},
             {"rt_sample.csv", [rt_ms], [[X] || X <- Sample]}],
    ok = write_not_accepted(Out, maps:get(not_accepted, Result, [])),
    case write_all(Out, Files) of
        ok -> {ok, Summary};
        {error, {riarc_bench_writer, _} = Error} -> {error, {?MODULE, Error}}
    end.

%% Under monitoring, the verdicts other than accept, one term per line, for diagnosis:
%% with riarc_bench_monitor a reject means a trace was incomplete or out of order.
write_not_accepted(_Out, []) -> ok;
write_not_accepted(Out, Entries) ->
    file:write_file(filename:join(Out, "not_accepted.txt"),
                    [io_lib:format("~0p.~n", [E]) || E <- Entries]).

ks_of(D, Fits) ->
    case Fits of
        #{D := #{ks := Ks}} -> Ks;
        _ -> ""
    end.

throughput(#{messages := M, duration_ms := D}) when D > 0 -> M * 1000 / D;
throughput(_) -> 0.0.

write_all(_Out, []) -> ok;
write_all(Out, [{Name, Header, Rows} | Rest]) ->
    case riarc_bench_writer:write_csv(filename:join(Out, Name), Header, Rows) of
        ok -> write_all(Out, Rest);
        Error -> Error
    end.

%% The summary's columns: the parameters, then the measurements.
-spec summary_columns() -> [atom()].
summary_columns() ->
    [shape, workers, requests, time, rate, spread, pinch, psend, precv, period, seed,
     schedulers, instrumentation, monitors, cost_us, events, interval, sample,
     duration_ms, messages, throughput, requests_sent, acks, ack_errors, rt_count,
     mrt_mean_ms, mrt_sd_ms, mrt_p50_ms, mrt_p90_ms, mrt_p99_ms, mrt_max_ms,
     mem_mean, mem_peak, mem_processes_mean, rss_peak, sched_mean, samples,
     ks_normal, ks_lognormal, ks_gamma, monitored, accepted, rejected, verdict_errors,
     inconclusive, mit_mean_ms, mit_sd_ms, mit_periods, mit_workers].

%% A summary as CSV fields; parameters a shape does not use are left empty.
-spec summary_row(summary()) -> [riarc_bench_writer:field()].
summary_row(S) ->
    [maps:get(C, S, "") || C <- summary_columns()].

%% @doc One sentence for an error of run/2.
-spec format_error(error_reason()) -> string().
format_error({schedulers, K, Max}) ->
    flat("this VM has ~b schedulers, so --schedulers ~b is impossible "
         "(use an experiment to start a VM with more)", [Max, K]);
format_error({out_dir, Out, Reason}) ->
    flat("cannot create the output directory ~ts: ~ts", [Out, file:format_error(Reason)]);
format_error({master_crashed, Reason}) ->
    flat("the master process crashed: ~0tP", [Reason, 20]);
format_error({monitoring, Mode, Reason}) ->
    flat("the ~s monitoring set-up failed: ~ts", [Mode, riarc:format_error(Reason)]);
format_error({monitoring_crashed, Mode, Class, Reason}) ->
    flat("the ~s monitoring set-up crashed: ~p:~0tP", [Mode, Class, Reason, 20]);
format_error({overload, Mode, Over}) ->
    flat("the ~s monitoring set-up detached from the system at a safety limit (~0tP): the "
         "run was not monitored to its end", [Mode, Over, 12]);
format_error(no_master_result) ->
    "the master stopped without reporting its result";
format_error({riarc_bench_model, Reason}) ->
    riarc_bench_model:format_error(Reason);
format_error({riarc_bench_writer, Reason}) ->
    riarc_bench_writer:format_error(Reason);
format_error({riarc_bench_mit, Reason}) ->
    riarc_bench_mit:format_error(Reason).

flat(F, A) -> lists:flatten(io_lib:format(F, A)).
