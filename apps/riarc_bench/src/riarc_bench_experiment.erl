%% @doc Experiments: a config file of Erlang terms lists benchmarks; every repetition of
%% every benchmark runs in a fresh VM started with OTP's `peer' (so that memory, atoms,
%% schedulers and leftovers of one run cannot contaminate the next); repetitions are
%% fixed or chosen by the CV procedure of 000 App. C.5.1; results go to CSV files and an
%% HTML report with gnuplot plots (see `riarc_bench_report').
%%
%% Config (every term ends with a dot; only `shapes', `workers' and `requests' are
%% required; keys marked "list" give one benchmark per element, combined with each other):
%% ```
%% {name, "quick"}.
%% {shapes, [steady, pulse, burst]}.          % list
%% {workers, {1000, 4000, 1000}}.             % From, To, Step -- or a list [500, 2000]
%% {schedulers, [2]}.                         % list; each VM is started with +S K:K
%% {seeds, [1]}.                              % list
%% {instrumentation, [baseline, riarc]}.      % list: baseline | tracing | riarc | centralised | inline
%% {monitors, [none, soundness]}.             % list; baseline and tracing run once, unmonitored
%% {memory_limit, 8192}.                      % MB of resident memory per run's VM
%% {repetitions, 3}.                          % or {cv, #{m => 3, b => 1, epsilon => 0.05, max => 8}}
%% {params, #{requests => 50, time => 10, period => 100, psend => 0.9, precv => 0.9}}.
%% {variants, [#{psend => 0.1, precv => 0.1}, #{psend => 0.9, precv => 0.9}]}.  % list
%% {timeout, 600}.                            % seconds per run
%% {process_limit, 1048576}.                  % each VM's +P (default: the VM's own)
%% '''
%% A run whose VM passes `memory_limit' is killed and recorded as crashed (the paper's
%% missing bars), as is one that passes `timeout'; the experiment goes on with the next.
%% A monitored run in which a process is not accepted (see
%% `riarc_bench_run:failed_verdicts/1') is kept and reported, and makes the whole
%% experiment fail at the end, after the report is written.
%% Output under DIR: `runs.csv' (one summary row per run), `aggregate.csv' (per benchmark:
%% repetitions and mean/sd/CV of each metric), `runs/<benchmark>/rep<i>/' (each run's own
%% files) and `report.html' with `plots/'.
%%
%% ```
%% 1> ok = file:write_file("/tmp/riarc_tiny.config", "{name, \"tiny\"}. {shapes, [steady]}.
%% ..    {workers, [20]}. {instrumentation, [baseline]}. {repetitions, 1}.
%% ..    {params, #{requests => 5, time => 2, period => 10}}.").
%% 2> riarc_bench_experiment:run("/tmp/riarc_tiny.config", #{out => "/tmp/riarc_tiny"}).
%% {ok,"/tmp/riarc_tiny/report.html"}
%% '''
%% `bin/riarc experiment examples/bench/quick.config' runs a real one (a few minutes):
%% ```erl
%% riarc_bench_experiment:run("examples/bench/quick.config", #{out => "bench-results/quick"}).
%% '''
-module(riarc_bench_experiment).

-export([save_baseline/2, save_baseline/3, compare_baseline/2, compare_baseline/3]).
-export([run/2, load/1, benchmarks/1, repetitions/2, cv_done/3, format_error/1,
         cv_metrics/0, aggregate_metrics/0, bench_id/1, variant_label/1]).

-export_type([config/0, bench/0, error_reason/0]).

-type error_reason() :: {config_read, file:filename(), file:posix() | badarg | terminated | system_limit}
                      | {config_syntax, file:filename(), {Line :: integer(), module(), term()}}
                      | {config_term, term()}
                      | {config_value, atom(), term()}
                      | {bench, map(), riarc_bench_model:error_reason()}
                      | {out_dir, file:filename(), file:posix()}
                      | {wrong_verdicts, [failed()], Report :: file:filename()}
                      | {wrong_verdicts_unreported, [failed()], riarc_bench_report:error_reason()}
                      | {riarc_bench_run, riarc_bench_run:error_reason()}
                      | {riarc_bench_peer, riarc_bench_peer:error_reason()}
                      | {riarc_bench_report, riarc_bench_report:error_reason()}
                      | {riarc_bench_writer, riarc_bench_writer:error_reason()}
                      | {riarc_bench_baseline, riarc_bench_baseline:error_reason()}.
%% A run with processes that did not get the expected verdict: benchmark, repetition, how many.
-type failed() :: {string(), pos_integer(), pos_integer()}.

-type config() :: #{name := string(), shapes := [atom()], workers := [pos_integer()],
                    schedulers := [pos_integer()], seeds := [integer()],
                    instrumentation := [atom()], monitors := [none | soundness],
                    memory_limit := pos_integer(), repetitions := reps(), params := map(),
                    variants := [map()], process_limit => pos_integer(),
                    timeout := pos_integer(), file := string()}.
-type reps() :: pos_integer() | {cv, #{m := pos_integer(), b := pos_integer(),
                                      epsilon := float(), max := pos_integer()}}.
%% One benchmark: validated model parameters.
-type bench() :: riarc_bench_model:params().

-define(KEYS, [name, shapes, workers, schedulers, seeds, instrumentation, monitors,
               repetitions, params, variants, timeout, memory_limit, process_limit]).
%% How often a run's VM has its resident memory read, in ms.

%% App. C.5.1: the CV must settle for every measured variable.
-spec cv_metrics() -> [atom()].
cv_metrics() -> riarc_bench_report:cv_metrics().

-spec aggregate_metrics() -> [atom()].
aggregate_metrics() ->
    [duration_ms, throughput, mrt_mean_ms, mrt_p50_ms, mrt_p90_ms, mrt_p99_ms, mem_mean,
     mem_peak, rss_peak, sched_mean, ks_normal, ks_lognormal, ks_gamma].

%%% Config -------------------------------------------------------------------------------

%% Reads and checks a config file; every benchmark's parameters are validated here so a
%% typo fails before the first (possibly long) run.
-spec load(file:filename()) -> {ok, config()} | {error, {?MODULE, error_reason()}}.
load(Path) ->
    case file:consult(Path) of
        {ok, Terms} -> from_terms(Terms, Path);
        {error, {_Line, _Mod, _Term} = Syntax} -> {error, {?MODULE, {config_syntax, Path, Syntax}}};
        {error, Reason} -> {error, {?MODULE, {config_read, Path, Reason}}}
    end.

from_terms(Terms, Path) ->
    case [T || T <- Terms, not (is_tuple(T) andalso tuple_size(T) =:= 2
                                andalso lists:member(element(1, T), ?KEYS))] of
        [Bad | _] -> {error, {?MODULE, {config_term, Bad}}};
        [] ->
            Given = maps:from_list(Terms),
            Cfg = maps:merge(#{name => filename:basename(Path, ".config"), schedulers => [default],
                               seeds => [1], instrumentation => [baseline], monitors => [soundness],
                               repetitions => 3, params => #{}, variants => [#{}],
                               timeout => 600, memory_limit => 8192}, Given),
            check_config(Cfg#{file => Path})
    end.

check_config(Cfg) ->
    Checks = [{shapes, fun nonempty_list/1}, {workers, fun workers_ok/1},
              {schedulers, fun nonempty_list/1}, {seeds, fun nonempty_list/1},
              {instrumentation, fun nonempty_list/1}, {repetitions, fun reps_ok/1},
              {monitors, fun(L) -> nonempty_list(L) andalso L -- [none, soundness] =:= [] end},
              {memory_limit, fun(M) -> is_integer(M) andalso M >= 64 end},
              {params, fun erlang:is_map/1},
              {variants, fun(L) -> nonempty_list(L) andalso lists:all(fun erlang:is_map/1, L) end},
              {timeout, fun(T) -> is_integer(T) andalso T > 0 end}],
    %% Optional: a VM allows 262 144 processes unless told otherwise, and riarc's
    %% max_tracers is an eighth of the limit; a load of more workers than that needs more.
    Optional = [{process_limit, fun(P) -> is_integer(P) andalso P >= 1024 andalso P =< 134217727 end}],
    case [{K, maps:get(K, Cfg, undefined)} || {K, Ok} <- Checks,
                                              not (maps:is_key(K, Cfg) andalso Ok(maps:get(K, Cfg)))]
         ++ [{K, maps:get(K, Cfg)} || {K, Ok} <- Optional, maps:is_key(K, Cfg), not Ok(maps:get(K, Cfg))] of
        [{K, V} | _] -> {error, {?MODULE, {config_value, K, V}}};
        [] ->
            Full = Cfg#{workers := expand(maps:get(workers, Cfg))},
            case first_bad(benchmarks(Full)) of
                ok -> {ok, Full};
                Error -> Error
            end
    end.

nonempty_list(L) -> is_list(L) andalso L =/= [].

workers_ok({From, To, Step}) ->
    is_integer(From) andalso is_integer(To) andalso is_integer(Step) andalso Step > 0
        andalso From =< To;
workers_ok(L) -> nonempty_list(L).

reps_ok(N) when is_integer(N) -> N >= 1;
reps_ok({cv, #{m := M, b := B, epsilon := E, max := Max}}) ->
    is_integer(M) andalso M >= 2 andalso is_integer(B) andalso B >= 1 andalso is_number(E)
        andalso E >= 0 andalso is_integer(Max) andalso Max >= M + B;
reps_ok(_) -> false.

expand({From, To, Step}) -> lists:seq(From, To, Step);
expand(L) -> L.

first_bad([]) -> ok;
first_bad([{error, _} = E | _]) -> E;
first_bad([_ | Rest]) -> first_bad(Rest).

%% Every combination of the list-valued keys, as model parameters (or the model's error).
%% A variant's parameters override `params'; the variant itself is kept under `variant'
%% to name the benchmark.
-spec benchmarks(config()) -> [bench() | {error, {?MODULE, error_reason()}}].
benchmarks(Cfg = #{shapes := Shapes, workers := Ns, schedulers := Ks, seeds := Seeds,
                   instrumentation := Instrs, params := Params, variants := Variants}) ->
    Mons = maps:get(monitors, Cfg, [soundness]),
    [validated(maps:merge(maps:merge(Params, V),
                          #{shape => Shape, workers => N, seed => Seed, instrumentation => I,
                            monitors => Mon, schedulers => K, variant => V}))
     || V <- Variants, {I, Mon} <- setups(Instrs, Mons), K <- Ks, Seed <- Seeds,
        Shape <- Shapes, N <- Ns].

%% Each instrumentation with each kind of monitor; one without monitors runs once.
setups(Instrs, Mons) ->
    lists:append([case riarc_bench_run:has_monitors(I) of
                      true -> [{I, M} || M <- Mons];
                      false -> [{I, none}]
                  end || I <- Instrs]).

%% `default' schedulers: as many as this machine has.
validated(P = #{schedulers := default}) ->
    validated(P#{schedulers := erlang:system_info(schedulers)});
validated(P) ->
    case riarc_bench_model:new(P) of
        {ok, Full} -> Full;
        {error, {riarc_bench_model, Reason}} -> {error, {?MODULE, {bench, P, Reason}}}
    end.

%%% Running ------------------------------------------------------------------------------

%% Runs the whole experiment and returns the path of its HTML report.
-spec run(file:filename(), #{out := file:filename()}) ->
    {ok, file:filename()} | {error, {?MODULE, error_reason()}}.
run(ConfigPath, #{out := Out0}) ->
    Out = filename:absname(Out0),
    case {load(ConfigPath), filelib:ensure_path(Out)} of
        {{ok, Cfg}, ok} -> run_all(Cfg, Out);
        {{ok, _}, {error, Reason}} -> {error, {?MODULE, {out_dir, Out, Reason}}};
        {Error, _} -> Error
    end.

run_all(Cfg, Out) ->
    Benches = benchmarks(Cfg),
    Total = length(Benches),
    T0 = erlang:monotonic_time(millisecond),
    Load0 = loadavg(),
    case run_benches(lists:zip(lists:seq(1, Total), Benches), Total, Cfg, Out, []) of
        {error, _} = Error -> Error;
        {ok, Results} ->
            Elapsed = erlang:monotonic_time(millisecond) - T0,
            case write_csvs(Out, Results) of
                ok ->
                    Report = riarc_bench_report:write(Cfg, Results, Out,
                                                      #{elapsed_ms => Elapsed, loadavg => {Load0, loadavg()}}),
                    verdict_check(Results, Report);
                {error, {riarc_bench_writer, _} = Error} -> {error, {?MODULE, Error}}
            end
    end.

%% A single wrong verdict fails the experiment loudly, once its report is written.
verdict_check(Results, Report) ->
    case [{Id, maps:get(rep, R), N} || #{id := Id, runs := Runs} <- Results, R <- Runs,
                                       (N = riarc_bench_run:failed_verdicts(R)) > 0] of
        [] ->
            case Report of
                {ok, _} -> Report;
                {error, {riarc_bench_report, _} = Error} -> {error, {?MODULE, Error}}
            end;
        Failed ->
            case Report of
                {ok, Path} -> {error, {?MODULE, {wrong_verdicts, Failed, Path}}};
                {error, {riarc_bench_report, Why}} ->
                    {error, {?MODULE, {wrong_verdicts_unreported, Failed, Why}}}
            end
    end.

%% The machine's load average, recorded because other work on the machine skews every
%% measurement; "unknown" where /proc is absent.
loadavg() ->
    case file:read_file("/proc/loadavg") of
        {ok, Bin} -> lists:join(" ", lists:sublist(string:lexemes(binary_to_list(Bin), " "), 3));
        {error, _} -> "unknown"
    end.

%% Benchmarks in order; the first failing one stops the experiment (the runs made so
%% far stay on disk under runs/).
run_benches([], _Total, _Cfg, _Out, Acc) -> {ok, lists:reverse(Acc)};
run_benches([{I, B} | Rest], Total, Cfg, Out, Acc) ->
    case run_bench(B, I, Total, Cfg, Out) of
        {error, _} = Error -> Error;
        Result -> run_benches(Rest, Total, Cfg, Out, [Result | Acc])
    end.

%% One benchmark: its repetitions, each in a new VM. A crash (memory limit, timeout)
%% ends the benchmark's repetitions: at the same load the next one would crash too.
run_bench(Bench, I, Total, Cfg = #{repetitions := Reps}, Out) ->
    Id = bench_id(Bench),
    Label = progress_label(Bench, Cfg),
    RunOne = fun(Rep) ->
                     Dir = filename:join([Out, "runs", Id, "rep" ++ integer_to_list(Rep)]),
                     R = run_in_peer(Bench, Dir, maps:get(timeout, Cfg) * 1000,
                                     maps:get(memory_limit, Cfg), vm_args(Cfg)),
                     progress(I, Total, Label, Rep, R),
                     case R of
                         {error, {crashed, Info}} -> {crashed, Info#{rep => Rep}};
                         _ -> R
                     end
             end,
    case repetitions(Reps, RunOne) of
        {ok, Runs, Chosen, Converged} ->
            #{bench => Bench, id => Id, runs => Runs, chosen => Chosen, converged => Converged,
              crashed => []};
        {crashed, Runs, Info} ->
            #{bench => Bench, id => Id, runs => Runs, chosen => length(Runs), converged => false,
              crashed => [Info]};
        Error -> Error
    end.

-spec bench_id(bench()) -> string().
bench_id(B = #{shape := S, workers := N, schedulers := K, seed := Seed}) ->
    lists:flatten(io_lib:format("~s-n~b-S~b-seed~b-~s~s",
                                [S, N, K, Seed, setup_label(B),
                                 variant_label(maps:get(variant, B, #{}))])).

%% "baseline", "riarc-none" (instrumentation alone), "inline-soundness5us".
setup_label(B = #{instrumentation := I, monitors := M}) ->
    case {riarc_bench_run:has_monitors(I), M} of
        {false, _} -> atom_to_list(I);
        {true, none} -> atom_to_list(I) ++ "-none";
        {true, _} -> lists:flatten(io_lib:format("~s-~s~bus", [I, M, maps:get(cost_us, B, 0)]))
    end.

-spec variant_label(map()) -> string().
variant_label(V) -> riarc_bench_report:variant_label(V).

%% What a benchmark is, in words, for the progress lines ("steady load, 3000 workers,
%% riarc, monitors checking every message"); its directory name (bench_id/1) is in the
%% report. Schedulers, seed and variant are named only when the config varies them.
progress_label(B = #{shape := S, workers := N, instrumentation := I}, Cfg) ->
    Setup = case {I, riarc_bench_run:has_monitors(I), maps:get(monitors, B, none)} of
                {baseline, _, _} -> "unmonitored";
                {tracing, _, _} -> "the VM's tracing alone";
                {_, true, none} -> atom_to_list(I) ++ ", monitors checking nothing";
                {_, true, _} -> atom_to_list(I) ++ ", monitors checking every message";
                {_, false, _} -> atom_to_list(I)
            end,
    Varies = fun(K) -> length(maps:get(K, Cfg, [x])) > 1 end,
    lists:flatten([io_lib:format("~s load, ~b workers, ~s", [S, N, Setup]),
                   [io_lib:format(", ~b schedulers", [maps:get(schedulers, B)]) || Varies(schedulers)],
                   [io_lib:format(", seed ~b", [maps:get(seed, B)]) || Varies(seeds)],
                   [variant_label(maps:get(variant, B, #{})) || Varies(variants)]]).

progress(I, Total, Id, Rep, {ok, S}) ->
    io:format(standard_error, "[experiment] ~b/~b ~s, run ~b: ~b ms, mean response time ~.3f ms, "
              "schedulers busy ~.1f %, memory ~.1f MB (VM peak ~.1f MB)~s~n",
              [I, Total, Id, Rep, maps:get(duration_ms, S), maps:get(mrt_mean_ms, S),
               maps:get(sched_mean, S) * 100, maps:get(mem_mean, S) / 1.0e6,
               maps:get(rss_peak, S, 0) / 1.0e6, verdict_note(S)]);
progress(I, Total, Id, Rep, {error, {crashed, Info}}) ->
    io:format(standard_error, "[experiment] ~b/~b ~s, run ~b CRASHED: ~p~n", [I, Total, Id, Rep, Info]);
progress(I, Total, Id, Rep, {error, {?MODULE, R}}) ->
    io:format(standard_error, "[experiment] ~b/~b ~s, run ~b failed: ~ts~n",
              [I, Total, Id, Rep, format_error(R)]).

verdict_note(S = #{instrumentation := I}) ->
    case {riarc_bench_run:has_monitors(I), riarc_bench_run:failed_verdicts(S)} of
        {false, _} -> "";
        {true, 0} -> io_lib:format(", ~b monitored, verdicts as expected", [maps:get(monitored, S)]);
        {true, N} -> io_lib:format(", ~b monitored, ~b WRONG VERDICTS", [maps:get(monitored, S), N])
    end.

%% Fixed repetitions, or App. C.5.1: run m, then b more at a time, until the CV of every
%% metric moves by at most epsilon between two batches (then m, the smaller count, is the
%% one chosen) or `max' runs were made. All runs made are kept for the aggregates.
-spec repetitions(reps(), fun((pos_integer()) -> {ok, map()} | {crashed, map()} | {error, E})) ->
    {ok, [map()], pos_integer(), boolean()} | {crashed, [map()], map()} | {error, E}.
repetitions(N, RunOne) when is_integer(N) ->
    case run_reps(1, N, RunOne, []) of
        {ok, Runs} -> {ok, Runs, N, true};
        Other -> Other
    end;
repetitions({cv, #{m := M} = P}, RunOne) ->
    case run_reps(1, M, RunOne, []) of
        {ok, Runs} -> cv_loop(Runs, M, P, RunOne);
        Other -> Other
    end.

cv_loop(Runs, M, P = #{b := B, epsilon := E, max := Max}, RunOne) ->
    Have = length(Runs),
    case Have + B > Max of
        true -> {ok, Runs, Have, false};
        false ->
            case run_reps(Have + 1, Have + B, RunOne, []) of
                {ok, More} ->
                    All = Runs ++ More,
                    case cv_done(Runs, All, E) of
                        true -> {ok, All, M, true};
                        false -> cv_loop(All, Have + B, P, RunOne)
                    end;
                {crashed, More, Info} -> {crashed, Runs ++ More, Info};
                Error -> Error
            end
    end.

%% True when |cv' - cv| =< epsilon for every metric of cv_metrics().
-spec cv_done([map()], [map()], number()) -> boolean().
cv_done(Before, After, Epsilon) ->
    lists:all(fun(K) -> abs(cv_of(K, After) - cv_of(K, Before)) =< Epsilon end, cv_metrics()).

cv_of(K, Runs) -> riarc_bench_stats:cv([maps:get(K, R) || R <- Runs]).

run_reps(I, N, _RunOne, Acc) when I > N -> {ok, lists:reverse(Acc)};
run_reps(I, N, RunOne, Acc) ->
    case RunOne(I) of
        {ok, S} -> run_reps(I + 1, N, RunOne, [S#{rep => I} | Acc]);
        {crashed, Info} -> {crashed, lists:reverse(Acc), Info};
        {error, _} = E -> E
    end.

%% A fresh VM with K schedulers per run (riarc_bench_peer), killed past the memory limit
%% or the time limit: such a run is recorded as crashed, the paper's missing bars.
run_in_peer(Bench = #{schedulers := K}, Dir, Timeout, LimitMb, VmArgs) ->
    S = integer_to_list(K),
    case riarc_bench_peer:call({riarc_bench_run, run, [Bench, #{out => Dir}]}, ["+S", S ++ ":" ++ S | VmArgs],
                               Timeout, LimitMb) of
        {ok, {ok, Summary}, #{rss_peak_kb := Kb}} -> {ok, Summary#{rss_peak => 1024 * Kb}};
        %% An overload detach is recorded as a crash is: the set-up could not monitor
        %% this load to its end, and the experiment goes on.
        {ok, {error, {riarc_bench_run, {overload, _, Over}}}, #{rss_peak_kb := Kb}} ->
            {error, {crashed, #{why => overload, overload => Over, rss_peak => 1024 * Kb}}};
        {ok, {error, {riarc_bench_run, _} = Error}, _} -> {error, {?MODULE, Error}};
        {error, {riarc_bench_peer, {timeout, _, Kb}}} ->
            {error, {crashed, #{why => timeout, limit_s => Timeout div 1000, rss_peak => 1024 * Kb}}};
        {error, {riarc_bench_peer, {memory_limit, _, Kb}}} ->
            {error, {crashed, #{why => memory_limit, limit_mb => LimitMb, rss_peak => 1024 * Kb}}};
        {error, {riarc_bench_peer, _} = Error} -> {error, {?MODULE, Error}}
    end.

%% The run VMs' own flags from the config: the same for every set-up.
vm_args(#{process_limit := P}) -> ["+P", integer_to_list(P)];
vm_args(#{}) -> [].

%%% Baselines ----------------------------------------------------------------------------

%% @doc After `run/2' into Out: keeps its results as baseline Name (see
%% `riarc_bench_baseline'; the CLI's `--save-baseline NAME').
-spec save_baseline(file:filename(), string()) ->
    {ok, file:filename()} | {error, {?MODULE, error_reason()}}.
save_baseline(Out, Name) -> save_baseline(Out, Name, #{}).

-spec save_baseline(file:filename(), string(), riarc_bench_baseline:opts()) ->
    {ok, file:filename()} | {error, {?MODULE, error_reason()}}.
save_baseline(Out, Name, Opts) -> baseline_result(riarc_bench_baseline:save(Out, Name, Opts)).

%% @doc After `run/2' into Out: compares it with baseline Name and writes
%% Out/baseline-NAME.html and .csv (the CLI's `--baseline NAME').
-spec compare_baseline(file:filename(), string()) -> {ok, map()} | {error, {?MODULE, error_reason()}}.
compare_baseline(Out, Name) -> compare_baseline(Out, Name, #{}).

-spec compare_baseline(file:filename(), string(), riarc_bench_baseline:opts()) ->
    {ok, map()} | {error, {?MODULE, error_reason()}}.
compare_baseline(Out, Name, Opts) -> baseline_result(riarc_bench_baseline:compare(Out, Name, Opts)).

baseline_result({ok, _} = Ok) -> Ok;
baseline_result({error, {riarc_bench_baseline, _} = Error}) -> {error, {?MODULE, Error}}.

%%% CSV output ---------------------------------------------------------------------------

write_csvs(Out, Results) ->
    RunCols = [benchmark, rep | riarc_bench_run:summary_columns()],
    RunRows = [[Id, maps:get(rep, R) | riarc_bench_run:summary_row(R)]
               || #{id := Id, runs := Runs} <- Results, R <- Runs],
    case riarc_bench_writer:write_csv(filename:join(Out, "runs.csv"), RunCols, RunRows) of
        ok -> write_aggregate(Out, Results);
        Error -> Error
    end.

write_aggregate(Out, Results) ->
    AggCols = [benchmark, shape, workers, requests, schedulers, seed, instrumentation, monitors,
               cost_us, reps, reps_chosen, converged, crashed, monitored, wrong_verdicts]
        ++ lists:append([[metric_col(M, mean), metric_col(M, sd), metric_col(M, cv)]
                         || M <- aggregate_metrics()]),
    AggRows = [aggregate_row(R) || R <- Results],
    riarc_bench_writer:write_csv(filename:join(Out, "aggregate.csv"), AggCols, AggRows).

metric_col(M, Stat) -> list_to_atom(atom_to_list(M) ++ "_" ++ atom_to_list(Stat)).

aggregate_row(#{id := Id, bench := B, runs := Runs, chosen := Chosen, converged := Conv,
                crashed := Crashed}) ->
    [Id | [maps:get(K, B) || K <- [shape, workers, requests, schedulers, seed, instrumentation,
                                    monitors, cost_us]]]
        ++ [length(Runs), Chosen, Conv, crash_label(Crashed),
            lists:sum([maps:get(monitored, R, 0) || R <- Runs]),
            lists:sum([riarc_bench_run:failed_verdicts(R) || R <- Runs])]
        ++ lists:append([mean_sd_cv([V || R <- Runs, is_number(V = maps:get(M, R, ""))])
                         || M <- aggregate_metrics()]).

%% "" when no run crashed, else why the first crash happened (e.g. "memory_limit").
-spec crash_label([map()]) -> string().
crash_label([]) -> "";
crash_label([#{why := Why} | _]) -> atom_to_list(Why).

mean_sd_cv([]) -> ["", "", ""];
mean_sd_cv(Xs) ->
    {M, S} = riarc_bench_stats:mean_sd(Xs),
    [M, S, riarc_bench_stats:cv(Xs)].

%%% Errors -------------------------------------------------------------------------------

%% @doc One sentence for an error of load/1, run/2 and the baseline functions.
-spec format_error(error_reason()) -> string().
format_error({config_read, Path, Reason}) ->
    fmt("cannot read the config file ~ts: ~ts", [Path, file:format_error(Reason)]);
format_error({config_syntax, Path, {Line, Mod, Term}}) ->
    fmt("the config file ~ts has a syntax error on line ~p: ~ts", [Path, Line, Mod:format_error(Term)]);
format_error({config_term, T}) ->
    fmt("the config term ~0tp is not one of {Key, Value} with Key in ~0tp", [T, ?KEYS]);
format_error({config_value, repetitions, V}) ->
    fmt("repetitions must be an integer >= 1 or {cv, #{m => M >= 2, b => B >= 1, "
        "epsilon => E >= 0, max => Max >= M + B}}, not ~0tp", [V]);
format_error({config_value, workers, V}) when V =/= undefined ->
    fmt("workers must be {From, To, Step} with From =< To and Step > 0, or a list, not ~0tp", [V]);
format_error({config_value, K, undefined}) -> fmt("the config must give ~s", [K]);
format_error({config_value, K, V}) -> fmt("the config value of ~s is invalid: ~0tp", [K, V]);
format_error({bench, P, Reason}) ->
    fmt("benchmark ~0tp: ~ts", [maps:with([shape, workers, seed], P), riarc_bench_model:format_error(Reason)]);
format_error({out_dir, Out, Reason}) ->
    fmt("cannot create the output directory ~ts: ~ts", [Out, file:format_error(Reason)]);
format_error({wrong_verdicts, Failed, Report}) ->
    fmt("~b run(s) had processes without the expected verdict (~ts); see not_accepted.txt in "
        "each run's directory and the report ~ts",
        [length(Failed), failed_text(Failed), Report]);
format_error({wrong_verdicts_unreported, Failed, Reason}) ->
    fmt("~b run(s) had processes without the expected verdict (~ts), and the report failed: ~ts",
        [length(Failed), failed_text(Failed), riarc_bench_report:format_error(Reason)]);
format_error({riarc_bench_run, Reason}) -> riarc_bench_run:format_error(Reason);
format_error({riarc_bench_peer, Reason}) -> riarc_bench_peer:format_error(Reason);
format_error({riarc_bench_report, Reason}) -> riarc_bench_report:format_error(Reason);
format_error({riarc_bench_writer, Reason}) -> riarc_bench_writer:format_error(Reason);
format_error({riarc_bench_baseline, Reason}) -> riarc_bench_baseline:format_error(Reason).

failed_text(Failed) ->
    lists:join(", ", [io_lib:format("~s rep ~b: ~b", [Id, Rep, N]) || {Id, Rep, N} <- Failed]).

fmt(F, A) -> lists:flatten(io_lib:format(F, A)).
