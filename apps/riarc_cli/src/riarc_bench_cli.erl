%% @doc Command line of the load driver: `bench', `experiment' and `study', which
%% `bin/riarc' (riarc_cli) hands over here with the command as the first argument. The
%% commands are declared in commands/0 and parsed by riarc_cli_args, the parser of every
%% command of `bin/riarc'.
%%
%%   bench --shape steady|pulse|burst --workers N --requests W [--time T] [--rate L]
%%         [--spread S] [--pinch P] [--psend P] [--precv P] [--period TIME] [--seed S]
%%         [--schedulers K] [--instrumentation baseline|tracing|riarc|centralised|inline]
%%         [--monitors none|soundness] [--cost US] [--events recv|all] [--interval TIME]
%%         [--sample F] [--out DIR]
%%   bench -m MOD -f FUN [-a ARGS] (--monitors MOD | --props FILE) [--runs N]
%%         [--instrumentation baseline,riarc,...] [-pa DIR] [--timeout TIME]
%%         [--memory-limit MB] [--out DIR]   (your own system, see riarc_bench_user)
%%   experiment CONFIG [--save-baseline NAME] [--baseline NAME] --out DIR
%%   study LABEL=EXPERIMENT_DIR... --out DIR     (what each set-up costs: sentences, table, plots)
%%
%% Bad input is reported as one sentence on stderr with exit status 2; a run that fails
%% exits with 1, and so does a monitored run in which a single process was not accepted
%% (with `--monitors none', not left without a verdict); success with 0. `bench -m' exits
%% with 1 when a monitored run of the user's system got a reject or error verdict.
%%
%% ```
%% $ bin/riarc bench --shape pulse --workers 5000 --requests 50 --time 10 --period 100ms --out /tmp/p
%% $ bin/riarc bench --shape steady --workers -3 --requests 5 --out /tmp/x
%% riarc bench: the parameter workers must be an integer >= 1, not -3
%% $ bin/riarc bench --shape steady --workers 3 --requests 5 --out /tmp/x --bogus 1
%% riarc bench: unknown option --bogus
%% usage: riarc bench --shape steady|pulse|burst --workers N --requests W [--time T] ...
%% 1> riarc_bench_cli:parse(["bench", "--shape", "burst", "--workers", "10", "--requests", "2", "--out", "d"]).
%% {ok,{bench,#{requests => 2,shape => burst,workers => 10},"d"}}
%% '''
-module(riarc_bench_cli).

-export([run/1, parse/1, format_error/1, commands/0, exit_status/1, default_out/1]).
-export_type([error_reason/0]).

-type error_reason() :: no_command
                      | {unknown_command, string()}
                      | {not_for_experiment, string()}
                      | {args, riarc_cli_args:reason()}.

-type command() :: {bench, map(), string()} | {experiment, string(), string()}
                 | {experiment, string(), string(), map()}
                 | {bench_user, riarc_bench_user:config(), string(), riarc_cli_args:opts()}
                 | {study, [{string(), string()}], string()}.

%% @doc Runs the command and returns the exit status, without halting.
-spec run([string()]) -> 0 | 1 | 2.
run(Args = [Name | Rest]) when Name =:= "bench"; Name =:= "experiment"; Name =:= "study" ->
    Cmd = command(Name, Rest),
    case parse(Args) of
        {ok, C} -> execute(C);
        help ->
            io:put_chars(riarc_cli_args:usage(Cmd)),
            0;
        {error, {?MODULE, Reason}} ->
            riarc_cli_args:bad_input(Cmd, format_error(for_command(Reason, Name)))
    end;
run(Args) ->
    {error, {?MODULE, Reason}} = parse(Args),
    io:format(standard_error, "riarc: ~ts~n", [format_error(Reason)]),
    2.

execute({bench, Params, Out}) ->
    case riarc_bench_model:new(Params) of
        {error, Error} -> fail("bench", Error);
        {ok, _} ->
            announce(Out),
            case riarc_bench_run:run(Params, #{out => Out, progress => true}) of
                {ok, Summary} ->
                    report(Summary, Out),
                    verdict_status(Summary, Out);
                {error, Error} -> fail("bench", Error)
            end
    end;
execute({study, Levels, Out}) ->
    case riarc_bench_study:write(Levels, Out) of
        {ok, #{rows := Rows, table := Table, html := Html}} ->
            %% The sentences, not the table: the table is in the report and overhead.md.
            io:put_chars([[L, $\n] || L <- riarc_demo_summary:cost_lines(Rows)]),
            io:format("every set-up, as a table: ~ts~nthe report, with plots: ~ts~n", [Table, Html]),
            0;
        {error, Error} -> fail("study", Error)
    end;
execute({bench_user, Cfg, Out, Opts}) ->
    %% The user's -pa and --lib directories go on this VM's path, which every run's VM
    %% inherits, and which the checks of riarc_bench_user need to find the modules.
    ok = riarc_cli_args:add_code_paths(Opts),
    announce(Out),
    case riarc_bench_user:run(Cfg, #{out => Out, progress => true}) of
        {ok, R = #{failed := Failed, crashed := Crashed, csv := Csv, html := Html}} ->
            io:put_chars(riarc_bench_user_report:table(R)),
            io:format("files: ~ts, ~ts~n", [Csv, Html]),
            user_status(Failed, Crashed);
        {error, Error} -> fail("bench", Error)
    end;
execute({experiment, Config, Out}) -> execute({experiment, Config, Out, #{}});
execute({experiment, Config, Out, Baselines = #{baseline := B}}) ->
    %% A baseline that is not there is known now, not after a run of possibly hours.
    Kept = filename:join([riarc_bench_baseline:store(Out, #{}), B, "runs.csv"]),
    case filelib:is_regular(Kept) of
        true -> experiment(Config, Out, Baselines);
        false ->
            fail("experiment", {riarc_bench_experiment,
                                {riarc_bench_baseline, {no_baseline, B, filename:dirname(Kept)}}})
    end;
execute({experiment, Config, Out, Baselines}) -> experiment(Config, Out, Baselines).

experiment(Config, Out, Baselines) ->
    case riarc_bench_experiment:run(Config, #{out => Out}) of
        {ok, Report} ->
            io:format("report: ~ts~n", [Report]),
            baselines(Out, Baselines);
        {error, Error} -> fail("experiment", Error)
    end.

%% A reject or error verdict of the user's own properties is what the user must hear
%% first: the cost figures of a system that broke its properties are not the point.
user_status(0, 0) -> 0;
user_status(Failed, Crashed) ->
    [complain("bench", fmt("~b monitored run(s) gave a reject or error verdict: your system "
                           "broke a property (see the verdicts column)", [Failed]))
     || Failed > 0],
    [complain("bench", fmt("~b run(s) did not finish (see the status column of runs.csv)",
                           [Crashed])) || Crashed > 0],
    1.

%% After a successful experiment: --save-baseline keeps it, --baseline compares it with
%% a kept one (riarc_bench_baseline). Saving comes second so that `--baseline x
%% --save-baseline x' compares with the previous x and then replaces it.
baselines(Out, Opts) ->
    Compare = case Opts of
                  #{baseline := B} ->
                      case riarc_bench_experiment:compare_baseline(Out, B) of
                          {ok, #{html := H, csv := C, significant := N}} ->
                              io:format("baseline ~ts: ~b significant change(s); ~ts, ~ts~n",
                                        [B, N, H, C]),
                              0;
                          {error, E1} -> fail("experiment", E1)
                      end;
                  _ -> 0
              end,
    Save = case Opts of
               #{save_baseline := S} ->
                   case riarc_bench_experiment:save_baseline(Out, S) of
                       {ok, Dir} -> io:format("baseline ~ts saved in ~ts~n", [S, Dir]), 0;
                       {error, E2} -> fail("experiment", E2)
                   end;
               _ -> 0
           end,
    max(Compare, Save).

report(S, Out) ->
    io:format("~s load, ~b workers x ~b requests: ~b messages in ~b ms (~.1f msg/s); "
              "every request acknowledged: ~s~n"
              "response time: mean ~.3f ms, median ~.3f, 90th percentile ~.3f, 99th ~.3f, "
              "max ~.3f (~b requests timed)~n"
              "memory: mean ~.1f MB, peak ~.1f MB; schedulers busy ~.1f % of the time~n"
              "how well the response times fit a distribution (Kolmogorov-Smirnov distance, "
              "smaller is better): normal ~s, log-normal ~s, gamma ~s~n"
              "files: ~ts/{summary,timeseries,rt_sample}.csv~n",
              [maps:get(shape, S), maps:get(workers, S), maps:get(requests, S),
               maps:get(messages, S), maps:get(duration_ms, S), float(maps:get(throughput, S)),
               yes_no(maps:get(ack_errors, S) =:= 0 andalso maps:get(acks, S) =:= maps:get(batch_total, S)),
               maps:get(mrt_mean_ms, S), maps:get(mrt_p50_ms, S), maps:get(mrt_p90_ms, S),
               maps:get(mrt_p99_ms, S), maps:get(mrt_max_ms, S), maps:get(rt_count, S),
               maps:get(mem_mean, S) / 1.0e6, maps:get(mem_peak, S) / 1.0e6,
               maps:get(sched_mean, S) * 100,
               ks(ks_normal, S), ks(ks_lognormal, S), ks(ks_gamma, S), Out]),
    Mode = maps:get(instrumentation, S),
    case riarc_bench_run:has_monitors(Mode) of
        false -> ok;
        true -> io:format("~s, ~s: ~b processes monitored, ~b accepted, "
                          "~b rejected, ~b error, ~b without verdict~n",
                          [Mode, monitors_label(S), maps:get(monitored, S),
                           maps:get(accepted, S), maps:get(rejected, S),
                           maps:get(verdict_errors, S), maps:get(inconclusive, S)])
    end.

monitors_label(#{monitors := none}) -> "monitors that check nothing";
monitors_label(#{monitors := M, cost_us := C}) -> io_lib:format("~s monitors at ~b us per event", [M, C]).

%% A single wrong verdict fails the run loudly: the traces the monitors saw were not sound.
verdict_status(S, Out) ->
    case riarc_bench_run:failed_verdicts(S) of
        0 -> 0;
        N ->
            complain("bench", fmt("~b of ~b monitored processes did not get the expected verdict; "
                                  "they are listed in ~ts",
                                  [N, maps:get(monitored, S), filename:join(Out, "not_accepted.txt")])),
            1
    end.

%% An error of a command: its sentence, and the exit status its tag gives.
fail(Cmd, Error) ->
    complain(Cmd, riarc:format_error(Error)),
    exit_status(Error).

%% @doc Whether an error is the user's input (exit status 2: a bad value, an impossible request
%% such as more schedulers than the VM has, an unusable --out, a config or property file
%% that does not read, a baseline that is not there) or a run that failed (1): errors of
%% the runs themselves (riarc_bench_run's inside an experiment, the peers', the writers'),
%% of a study's experiments, and verdicts that were not as expected.
-spec exit_status({module(), term()}) -> 1 | 2.
exit_status({riarc_bench_model, _}) -> 2;
exit_status({riarc_bench_run, {riarc_bench_model, _}}) -> 2;
exit_status({riarc_bench_run, {Tag, _, _}}) when Tag =:= schedulers; Tag =:= out_dir -> 2;
exit_status({riarc_bench_experiment, {Tag, _}}) when Tag =:= config_term;
                                                      Tag =:= riarc_bench_baseline -> 2;
exit_status({riarc_bench_experiment, {Tag, _, _}}) when Tag =:= config_read; Tag =:= config_syntax;
                                                         Tag =:= config_value; Tag =:= bench;
                                                         Tag =:= out_dir -> 2;
exit_status({riarc_bench_user, {Tag, _}}) when Tag =:= undef; Tag =:= bad_runs;
                                                Tag =:= bad_timeout; Tag =:= bad_memory_limit;
                                                Tag =:= bad_setups; Tag =:= bad_args;
                                                Tag =:= bad_monitors; Tag =:= riarc_shml -> 2;
exit_status({riarc_bench_user, {out_dir, _, _}}) -> 2;
exit_status({riarc_bench_study, {out_dir, _, _}}) -> 2;
exit_status({_, _}) -> 1.

yes_no(true) -> "yes";
yes_no(false) -> "NO".

ks(K, S) ->
    case maps:get(K, S) of
        V when is_float(V) -> io_lib:format("~.3f", [V]);
        _ -> "n/a"
    end.

complain(Cmd, Sentence) ->
    io:format(standard_error, "riarc ~s: ~ts~n", [Cmd, Sentence]).

%%% Parsing ----------------------------------------------------------------------------

%% @doc The declarations of bench, experiment and study, for riarc_cli_args. Only the
%% syntax is checked there; the values are checked by riarc_bench_model so that the CLI
%% and experiment configs agree (which is why `--workers -3' parses).
-spec commands() -> [riarc_cli_args:command()].
commands() -> [command(N) || N <- ["bench", "experiment", "study"]].

command("bench") ->
    #{name => "bench",
      summary => "one run of the load driver",
      description => "One run of the load driver (docs/bench.md): a master, N workers and W "
                 "requests each,
under the given instrumentation; writes its CSV files to "
                 "DIR.
With -m MOD, your own system instead: see `riarc bench -m MOD --help'.",
      flags => [F || {_, F} <- bench_flags()] ++ [bench_out_flag()]};
command("experiment") ->
    #{name => "experiment",
      summary => "a series of bench runs, from a config file",
      description => "A series of bench runs as a config file describes them (docs/bench.md), "
                 "with a report
in DIR.",
      flags => [out_flag(),
                #{name => "--save-baseline", key => save_baseline, type => string,
                  metavar => "NAME", help => "keep this experiment's results as baseline NAME"},
                #{name => "--baseline", key => baseline, type => string, metavar => "NAME",
                  help => "compare this experiment with baseline NAME (baseline-NAME.html)"}],
      positionals => [#{key => config, metavar => "CONFIG", required => true,
                        help => "the experiment's config file (examples/bench/*.config)"}]};
command("study") ->
    #{name => "study",
      summary => "what each set-up costs, from several experiments",
      description => "What each monitoring set-up costs against the unmonitored system, as a "
                 "table and plots,\nfrom experiments already run (docs/evaluation.md). Prints "
                 "one line per concurrency level\nand where the full report is.",
      flags => [out_flag()],
      positionals => [#{key => levels, metavar => "LABEL=EXPERIMENT_DIR", required => true,
                        repeat => true, type => {check, fun level/1},
                        help => "an experiment's output directory, labelled (high=bench-results/high)"}]}.

%% `bench' with `-m' (or `--module') benchmarks the user's own system: a command of its
%% own for the parser, the same name for the user.
command("bench", Args) ->
    case lists:member("-m", Args) orelse lists:any(fun(A) -> lists:prefix("--module", A) end, Args) of
        true -> user_command();
        false -> command("bench")
    end;
command(Name, _) -> command(Name).

user_command() ->
    #{name => "bench",
      summary => "what monitoring costs on your own system",
      description => "Runs M:F(ARGS) bare and under each set-up, N times each in fresh VMs, "
                     "interleaved,\nafter one warm-up per set-up; writes DIR/runs.csv and "
                     "DIR/report.html and prints\nthe medians with 95 % intervals and the "
                     "ratios to the baseline (docs/bench.md,\n\"Your own system\"). When "
                     "M:F returns {latencies_us, [Integer]}, their p50/p90/p99 too.",
      flags => [#{name => "--module", short => "-m", key => module, type => atom,
                  metavar => "MOD", required => true, help => "the module of your system's entry point"},
                #{name => "--function", short => "-f", key => function, type => atom,
                  metavar => "FUN", required => true, help => "its function"},
                #{name => "--args", short => "-a", key => args, type => term_list,
                  metavar => "ARGS", default => [], help => "its arguments, an Erlang list such as '[8, 20]'"},
                #{name => "--runs", key => runs, type => {int, 1}, metavar => "N", default => 5,
                  help => "counted runs per set-up (after one warm-up)"},
                #{name => "--instrumentation", key => setups, metavar => "SETUPS",
                  type => {check, fun riarc_bench_user:parse_setups/1}, default => [baseline, riarc],
                  help => lists:flatten(["comma-separated: " | lists:join(",", [atom_to_list(S) || S <- riarc_bench_user:setups()])])},
                #{name => "--timeout", key => timeout, type => {duration, second}, metavar => "TIME",
                  default => 300, help => "time per run before its VM is killed (seconds, or 2m)"},
                #{name => "--memory-limit", key => memory_limit, type => {int, 64}, metavar => "MB",
                  default => 8192, help => "resident memory per run's VM before it is killed"},
                bench_out_flag()]
          ++ riarc_cli_args:code_flags() ++ riarc_cli_monitors:flags(),
      one_of => [[monitors, props]]}.

out_flag() ->
    #{name => "--out", key => out, type => string, metavar => "DIR", required => true,
      help => "the output directory"}.

%% `bench' is often run to have a look: without --out its files go to a fresh directory
%% of their own (default_out/1), never over an earlier run's.
bench_out_flag() ->
    #{name => "--out", key => out, type => string, metavar => "DIR",
      help => "the output directory (default: a new bench-results/YYYYMMDD-HHMMSS)"}.

%% @doc The directory of a `bench' run without --out: `bench-results/YYYYMMDD-HHMMSS'
%% (UTC) for the given system time in seconds, with `-2', `-3'... when a run of the same
%% second already has it. Makes no directory: the run creates it.
-spec default_out(integer()) -> file:filename().
default_out(Seconds) ->
    {{Y, Mo, D}, {H, Mi, S}} = calendar:system_time_to_universal_time(Seconds, second),
    Base = filename:join("bench-results", fmt("~4..0b~2..0b~2..0b-~2..0b~2..0b~2..0b",
                                              [Y, Mo, D, H, Mi, S])),
    free_dir(Base, 1).

free_dir(Base, N) ->
    Dir = case N of 1 -> Base; _ -> Base ++ "-" ++ integer_to_list(N) end,
    case filelib:is_file(Dir) of
        true -> free_dir(Base, N + 1);
        false -> Dir
    end.

out_dir(Opts = #{out := Out}) -> {Opts, Out};
out_dir(Opts) ->
    Out = default_out(erlang:system_time(second)),
    {Opts#{out => Out}, Out}.

%% Where a bench run writes is said before it starts, so that even a run that fails
%% half-way tells where its files are.
announce(Out) ->
    io:format("riarc bench: writing to ~ts~n", [Out]).

bench_flags() ->
    Flag = fun(Key, Type, Meta, Required, Help) ->
                   Name = case Key of cost_us -> "cost"; _ -> atom_to_list(Key) end,
                   F = #{name => "--" ++ Name, key => Key, type => Type, help => Help},
                   F1 = case Meta of "" -> F; _ -> F#{metavar => Meta} end,
                   {Name, F1#{required => Required}}
           end,
    [Flag(shape, {enum, [steady, pulse, burst]}, "", true, "the load's shape over time"),
     Flag(workers, int, "N", true, "the number of workers"),
     Flag(requests, int, "W", true, "the requests of each worker"),
     Flag(time, int, "T", false, "the load's duration in seconds (pulse, burst)"),
     Flag(rate, number, "L", false, "requests per second (steady)"),
     Flag(spread, number, "S", false, "the spread of the pulse"),
     Flag(pinch, number, "P", false, "the pinch of the burst"),
     Flag(psend, number, "P", false, "probability that a worker sends on"),
     Flag(precv, number, "P", false, "probability that a worker receives"),
     Flag(period, {duration, millisecond}, "TIME", false,
          "the wall-clock length of one time unit (seconds, or 200ms)"),
     Flag(seed, int, "S", false, "the random seed"),
     Flag(schedulers, int, "K", false, "schedulers online for the run"),
     Flag(instrumentation, {enum, riarc_bench_run:setups()}, "", false, "what watches the system"),
     Flag(monitors, {enum, [none, soundness]}, "", false, "the monitors' analysis"),
     Flag(cost_us, int, "US", false, "the monitors' cost per event, in microseconds"),
     Flag(events, {enum, [recv, all]}, "", false, "the events traced"),
     Flag(interval, {duration, millisecond}, "TIME", false, "the sampling interval (seconds, or 100ms)"),
     Flag(sample, number, "F", false, "the fraction of response times sampled")].

level(Arg) ->
    case string:split(Arg, "=") of
        [Label, Dir] when Label =/= "", Dir =/= "" -> {ok, {Label, Dir}};
        _ -> {error, "LABEL=EXPERIMENT_DIR"}
    end.

%% @doc Turns the arguments into a command (`help' for `--help' or `-h').
-spec parse([string()]) -> {ok, command()} | help | {error, {?MODULE, error_reason()}}.
parse([Name | Args]) when Name =:= "bench"; Name =:= "experiment"; Name =:= "study" ->
    case riarc_cli_args:parse(command(Name, Args), Args) of
        {ok, Opts = #{module := _}} -> {ok, to_user_command(Opts)};
        {ok, Opts} -> {ok, to_command(Name, Opts)};
        help -> help;
        {error, Reason} -> {error, {?MODULE, {args, Reason}}}
    end;
parse([Cmd | _]) -> {error, {?MODULE, {unknown_command, Cmd}}};
parse([]) -> {error, {?MODULE, no_command}}.

to_command("bench", Opts0) ->
    {Opts, Out} = out_dir(Opts0),
    {bench, maps:remove(out, Opts), Out};
%% Without baseline flags the command keeps its older, shorter form.
to_command("experiment", Opts = #{config := C, out := Out}) ->
    case maps:with([save_baseline, baseline], Opts) of
        B when map_size(B) =:= 0 -> {experiment, C, Out};
        B -> {experiment, C, Out, B}
    end;
to_command("study", #{levels := Ls, out := Out}) -> {study, Ls, Out}.

to_user_command(O0 = #{module := M, function := F, args := A}) ->
    {O, Out} = out_dir(O0),
    Mons = case O of
               #{monitors := Mod} -> {module, Mod};
               #{props := File} -> {props, File}
           end,
    Cfg = (maps:with([runs, setups, timeout, memory_limit], O))#{
            mfa => {M, F, A}, monitors => Mons, pa => maps:get(pa, O, [])},
    {bench_user, Cfg, Out, maps:with([pa, lib], O)}.

%% A bench flag on `experiment' is no typo: it belongs in the config file.
for_command({args, {unknown_flag, "--" ++ F}} = Reason, "experiment") ->
    case lists:keymember(F, 1, bench_flags()) of
        true -> {not_for_experiment, F};
        false -> Reason
    end;
for_command(Reason, _Name) -> Reason.

%% @doc One sentence for an error of parse/1.
-spec format_error(error_reason()) -> string().
format_error(no_command) -> "no command given";
format_error({unknown_command, C}) -> fmt("unknown command ~ts", [C]);
format_error({not_for_experiment, K}) ->
    fmt("the option --~s belongs in the experiment's config file, not on the command line", [K]);
format_error({args, Reason}) -> riarc_cli_args:format_error(Reason).

fmt(F, A) -> lists:flatten(io_lib:format(F, A)).
