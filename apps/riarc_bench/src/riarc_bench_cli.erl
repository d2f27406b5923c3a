%% @doc Command line of the load driver, called by `bin/riarc' for `bench' and
%% `experiment' (the subcommand is the first argument).
%%
%%   bench --shape steady|pulse|burst --workers N --requests W [--time T] [--rate L]
%%         [--spread S] [--pinch P] [--psend P] [--precv P] [--period MS] [--seed S]
%%         [--schedulers K] [--instrumentation baseline|tracing|riarc|centralised|inline]
%%         [--monitors none|soundness] [--cost US] [--events recv|all] [--interval MS]
%%         [--sample F] --out DIR
%%   experiment CONFIG --out DIR
%%   study LABEL=EXPERIMENT_DIR... --out DIR     (the overhead table and plots of 000 §5)
%%
%% Bad input is reported as one sentence on stderr with exit status 2; a run that fails
%% exits with 1, and so does a monitored run in which a single process was not accepted
%% (with `--monitors none', not left without a verdict); success with 0.
%%
%% ```
%% $ bin/riarc bench --shape pulse --workers 5000 --requests 50 --time 10 --period 100 --out /tmp/p
%% $ bin/riarc bench --shape steady --workers -3 --requests 5 --out /tmp/x
%% riarc bench: The parameter workers must be an integer >= 1, not -3.
%% 1> riarc_bench_cli:parse(["bench", "--shape", "burst", "--workers", "10", "--requests", "2", "--out", "d"]).
%% {ok,{bench,#{requests => 2,shape => burst,workers => 10},"d"}}
%% '''
-module(riarc_bench_cli).

-export([main/1, run/1, parse/1, format_error/1]).

-type command() :: {bench, map(), string()} | {experiment, string(), string()}
                 | {study, [{string(), string()}], string()}.

%% Runs the command and halts the VM with its status.
-spec main([string()]) -> no_return().
main(Args) ->
    erlang:halt(run(Args)).

%% Runs the command and returns the exit status, without halting (for tests).
-spec run([string()]) -> 0 | 1 | 2.
run(Args) ->
    case parse(Args) of
        {ok, Cmd} -> execute(Cmd);
        {error, Reason} ->
            complain(command_name(Args), format_error(Reason)),
            usage(),
            2
    end.

execute({bench, Params, Out}) ->
    case riarc_bench_model:new(Params) of
        {error, Reason} ->
            complain("bench", riarc_bench_model:format_error(Reason)),
            2;
        {ok, _} ->
            case riarc_bench_run:run(Params, #{out => Out, progress => true}) of
                {ok, Summary} ->
                    report(Summary, Out),
                    verdict_status(Summary, Out);
                {error, Reason} ->
                    complain("bench", riarc_bench_run:format_error(Reason)),
                    status(Reason)
            end
    end;
execute({study, Levels, Out}) ->
    case riarc_bench_study:write(Levels, Out) of
        {ok, #{text := Table, html := Html}} ->
            io:format("~ts~nreport: ~ts~n", [Table, Html]),
            0;
        {error, Reason} ->
            complain("study", riarc_bench_study:format_error(Reason)),
            1
    end;
execute({experiment, Config, Out}) ->
    case riarc_bench_experiment:run(Config, #{out => Out}) of
        {ok, Report} ->
            io:format("report: ~ts~n", [Report]),
            0;
        {error, Reason} ->
            complain("experiment", riarc_bench_experiment:format_error(Reason)),
            case riarc_bench_experiment:is_input_error(Reason) of
                true -> 2;
                false -> 1
            end
    end.

report(S, Out) ->
    io:format("~s n=~b w=~b: ~b messages in ~b ms (~.1f msg/s), every request acknowledged: ~s~n"
              "MRT mean ~.3f ms, p50 ~.3f, p90 ~.3f, p99 ~.3f, max ~.3f (~b sampled)~n"
              "memory mean ~.1f MB, peak ~.1f MB; scheduler utilisation mean ~.1f %~n"
              "KS of MLE fits to response times: normal ~s, log-normal ~s, gamma ~s~n"
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

monitors_label(#{monitors := none}) -> "instrumentation alone (no analysis)";
monitors_label(#{monitors := M, cost_us := C}) -> io_lib:format("~s monitors at ~b us per event", [M, C]).

%% A single wrong verdict fails the run loudly: the traces the monitors saw were not sound.
verdict_status(S, Out) ->
    case riarc_bench_run:failed_verdicts(S) of
        0 -> 0;
        N ->
            complain("bench", fmt("~b of ~b monitored processes did not get the expected verdict; "
                                  "they are listed in ~ts.",
                                  [N, maps:get(monitored, S), filename:join(Out, "not_accepted.txt")])),
            1
    end.

%% Impossible requests (more schedulers than the VM has, an unusable --out) are bad
%% input; anything else went wrong during the run.
status({schedulers, _, _}) -> 2;
status({out_dir, _, _}) -> 2;
status(_) -> 1.

yes_no(true) -> "yes";
yes_no(false) -> "NO".

ks(K, S) ->
    case maps:get(K, S) of
        V when is_float(V) -> io_lib:format("~.3f", [V]);
        _ -> "n/a"
    end.

complain(Cmd, Sentence) ->
    io:format(standard_error, "riarc ~s: ~ts~n", [Cmd, Sentence]).

usage() ->
    io:format(standard_error,
              "usage: riarc bench --shape steady|pulse|burst --workers N --requests W [--time T]~n"
              "         [--rate L] [--spread S] [--pinch P] [--psend P] [--precv P] [--period MS]~n"
              "         [--seed S] [--schedulers K]~n"
              "         [--instrumentation baseline|tracing|riarc|centralised|inline]~n"
              "         [--monitors none|soundness] [--cost US] [--events recv|all]~n"
              "         [--interval MS] [--sample F]~n"
              "         --out DIR~n"
              "       riarc experiment CONFIG --out DIR~n"
              "       riarc study LABEL=EXPERIMENT_DIR... --out DIR~n", []).

command_name(["experiment" | _]) -> "experiment";
command_name(["study" | _]) -> "study";
command_name(_) -> "bench".

%%% Parsing ----------------------------------------------------------------------------

%% Turns the arguments into a command; only the syntax is checked here, the values are
%% checked by riarc_bench_model so that the CLI and experiment configs agree.
-spec parse([string()]) -> {ok, command()} | {error, term()}.
parse(["bench" | Args]) ->
    case flags(Args, #{}) of
        {ok, #{out := Out} = Flags} -> {ok, {bench, maps:remove(out, Flags), Out}};
        {ok, _} -> {error, missing_out};
        Error -> Error
    end;
parse(["experiment", Config | Args]) when hd(Config) =/= $- ->
    case flags(Args, #{}) of
        {ok, #{out := Out} = Flags} when map_size(Flags) =:= 1 -> {ok, {experiment, Config, Out}};
        {ok, #{out := _} = Flags} -> {error, {not_for_experiment, hd(maps:keys(maps:remove(out, Flags)))}};
        {ok, _} -> {error, missing_out};
        Error -> Error
    end;
parse(["experiment" | _]) -> {error, missing_config};
parse(["study" | Args]) -> study_args(Args, [], undefined);
parse([Cmd | _]) -> {error, {unknown_command, Cmd}};
parse([]) -> {error, no_command}.

study_args([], [], _) -> {error, missing_levels};
study_args([], _, undefined) -> {error, missing_out};
study_args([], Levels, Out) -> {ok, {study, lists:reverse(Levels), Out}};
study_args(["--out", Out | Rest], Levels, _) -> study_args(Rest, Levels, Out);
study_args([Arg | Rest], Levels, Out) ->
    case string:split(Arg, "=") of
        [Label, Dir] when Label =/= "", Dir =/= "" -> study_args(Rest, [{Label, Dir} | Levels], Out);
        _ -> {error, {unexpected, Arg}}
    end.

flags([], Acc) -> {ok, Acc};
flags(["--" ++ Name, Value | Rest], Acc) ->
    case flag(Name) of
        {Key, Type} ->
            case value(Type, Value) of
                {ok, V} -> flags(Rest, Acc#{Key => V});
                error -> {error, {bad_value, Name, Value, Type}}
            end;
        undefined -> {error, {unknown_flag, Name}}
    end;
flags(["--" ++ Name], _Acc) ->
    case flag(Name) of
        undefined -> {error, {unknown_flag, Name}};
        _ -> {error, {missing_value, Name}}
    end;
flags([Arg | _], _Acc) -> {error, {unexpected, Arg}}.

flag("shape") -> {shape, {atom, [steady, pulse, burst]}};
flag("workers") -> {workers, integer};
flag("requests") -> {requests, integer};
flag("time") -> {time, integer};
flag("rate") -> {rate, number};
flag("spread") -> {spread, number};
flag("pinch") -> {pinch, number};
flag("psend") -> {psend, number};
flag("precv") -> {precv, number};
flag("period") -> {period, integer};
flag("seed") -> {seed, integer};
flag("schedulers") -> {schedulers, integer};
flag("instrumentation") -> {instrumentation, {atom, riarc_bench_run:setups()}};
flag("monitors") -> {monitors, {atom, [none, soundness]}};
flag("cost") -> {cost_us, integer};
flag("events") -> {events, {atom, [recv, all]}};
flag("interval") -> {interval, integer};
flag("sample") -> {sample, number};
flag("out") -> {out, string};
flag(_) -> undefined.

value(string, V) -> {ok, V};
value(integer, V) ->
    try {ok, list_to_integer(V)} catch error:badarg -> error end;
value(number, V) ->
    case value(integer, V) of
        {ok, I} -> {ok, I};
        error -> try {ok, list_to_float(V)} catch error:badarg -> error end
    end;
value({atom, Allowed}, V) ->
    case [A || A <- Allowed, atom_to_list(A) =:= V] of
        [A] -> {ok, A};
        [] -> error
    end.

-spec format_error(term()) -> string().
format_error(no_command) -> "No command given.";
format_error(missing_out) -> "The output directory is missing: give --out DIR.";
format_error(missing_config) -> "The experiment's CONFIG file is missing.";
format_error(missing_levels) ->
    "Name at least one experiment as LABEL=DIR (e.g. high=bench-results/high).";
format_error({unknown_command, C}) -> fmt("Unknown command ~ts.", [C]);
format_error({unknown_flag, F}) -> fmt("Unknown option --~ts.", [F]);
format_error({missing_value, F}) -> fmt("The option --~ts needs a value.", [F]);
format_error({unexpected, A}) -> fmt("Unexpected argument ~ts.", [A]);
format_error({not_for_experiment, K}) ->
    fmt("The option --~s belongs in the experiment's config file, not on the command line.", [K]);
format_error({bad_value, F, V, {atom, Allowed}}) ->
    fmt("--~ts must be one of ~ts, not ~ts.",
        [F, lists:join(", ", [atom_to_list(A) || A <- Allowed]), V]);
format_error({bad_value, F, V, integer}) -> fmt("--~ts must be an integer, not ~ts.", [F, V]);
format_error({bad_value, F, V, number}) -> fmt("--~ts must be a number, not ~ts.", [F, V]);
format_error(Other) -> fmt("~p", [Other]).

fmt(F, A) -> lists:flatten(io_lib:format(F, A)).
