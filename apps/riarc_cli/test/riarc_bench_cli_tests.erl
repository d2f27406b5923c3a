%% The load driver's commands (bench, experiment, study): parsing, bad input (exit 2), a
%% small bench run (exit 0).
-module(riarc_bench_cli_tests).

-include_lib("eunit/include/eunit.hrl").

cli_bad_input_test_() ->
    Ok = ["bench", "--shape", "steady", "--workers", "10", "--requests", "5", "--out", tmp_dir("cli")],
    Replace = fun(Flag, V) -> replace(Ok, Flag, V) end,
    Cases = [{"negative n", Replace("--workers", "-5")},
             {"psend above 1", Replace("--psend", "1.5")},
             {"precv below 0", Replace("--precv", "-0.2")},
             {"unknown shape", Replace("--shape", "square")},
             {"not a number", Replace("--rate", "fast")},
             {"missing --workers", lists:sublist(Ok, 3) ++ lists:nthtail(5, Ok)},
             {"unknown flag", Ok ++ ["--colour", "red"]},
             {"flag without value", Ok ++ ["--seed"]},
             {"too many schedulers", Replace("--schedulers", "100000")},
             {"unknown command", ["frobnicate"]},
             {"experiment without --out", ["experiment", "x.config"]},
             {"experiment, missing config", ["experiment", "/nonexistent/x.config", "--out", tmp_dir("cli")]},
             {"unknown monitors", Ok ++ ["--monitors", "psychic"]},
             {"negative cost", Ok ++ ["--cost", "-1"]},
             {"unknown instrumentation", Replace("--instrumentation", "telepathy")},
             {"study without experiments", ["study", "--out", tmp_dir("cli")]},
             {"study, bad level", ["study", "high", "--out", tmp_dir("cli")]}],
    [{Name, ?_assertEqual(2, riarc_bench_cli:run(Args))} || {Name, Args} <- Cases].

%% The command line's own errors read in the project's style, and every error of the
%% load driver's modules gets exit status 2 (bad input) or 1 (a failed run) by its tag.
cli_errors_test_() ->
    Own = [no_command, {unknown_command, "frobnicate"}, {not_for_experiment, "workers"},
           {args, {unknown_flag, "--colour"}}],
    [?_assertMatch([C | _] when C < $A orelse C > $Z, riarc_bench_cli:format_error(R)) || R <- Own]
        ++ [?_assertEqual({error, {riarc_bench_cli, {unknown_command, "frobnicate"}}},
                          riarc_bench_cli:parse(["frobnicate"]))].

%% What the user reads on stderr: the sentence of the module that refused the input,
%% after the command's name.
cli_sentences_test() ->
    Ok = ["bench", "--shape", "steady", "--workers", "10", "--requests", "5"],
    {_, Err1, 2} = riarc_capture:capture_all(
                     fun() -> riarc_bench_cli:run(replace(Ok, "--workers", "-5") ++ ["--out", tmp_dir("cli")]) end),
    ?assertMatch([_ | _], string:find(Err1, "riarc bench: the parameter workers must be an integer >= 1, not -5\n")),
    {_, Err2, 2} = riarc_capture:capture_all(
                     fun() -> riarc_bench_cli:run(Ok ++ ["--schedulers", "100000", "--out", tmp_dir("cli")]) end),
    ?assertMatch([_ | _], string:find(Err2, "riarc bench: this VM has ")),
    {_, Err3, 2} = riarc_capture:capture_all(fun() -> riarc_bench_cli:run(["frobnicate"]) end),
    ?assertEqual("riarc: unknown command frobnicate\n", Err3).

exit_status_test_() ->
    Model = {bad_param, workers, -1, "an integer >= 1"},
    Cases = [{2, {riarc_bench_model, Model}},
             {2, {riarc_bench_run, {riarc_bench_model, Model}}},
             {2, {riarc_bench_run, {schedulers, 64, 2}}},
             {2, {riarc_bench_run, {out_dir, "/proc/x", eacces}}},
             {1, {riarc_bench_run, {master_crashed, killed}}},
             {1, {riarc_bench_run, no_master_result}},
             {2, {riarc_bench_experiment, {config_read, "/x.config", enoent}}},
             {2, {riarc_bench_experiment, {config_syntax, "/x.config", {1, erl_parse, "x"}}}},
             {2, {riarc_bench_experiment, {config_term, x}}},
             {2, {riarc_bench_experiment, {config_value, workers, x}}},
             {2, {riarc_bench_experiment, {bench, #{}, Model}}},
             {2, {riarc_bench_experiment, {out_dir, "/proc/x", eacces}}},
             {2, {riarc_bench_experiment, {riarc_bench_baseline, {no_runs, "/x"}}}},
             {1, {riarc_bench_experiment, {wrong_verdicts, [], "r.html"}}},
             {1, {riarc_bench_experiment, {riarc_bench_run, {schedulers, 64, 2}}}},
             {1, {riarc_bench_experiment, {riarc_bench_peer, {peer_start, timeout}}}},
             {2, {riarc_bench_user, {undef, {m, f, 0}}}},
             {2, {riarc_bench_user, {bad_runs, 0}}},
             {2, {riarc_bench_user, {riarc_shml, {file, "/x.prop", enoent}}}},
             {2, {riarc_bench_user, {out_dir, "/proc/x", eacces}}},
             {1, {riarc_bench_user, {timeout, 300}}},
             {1, {riarc_bench_user, {root_crashed, badarith}}},
             {1, {riarc_bench_study, {read, "/x/aggregate.csv", enoent}}},
             {2, {riarc_bench_study, {out_dir, "/proc/x", eacces}}}],
    [?_assertEqual(Status, riarc_bench_cli:exit_status(E)) || {Status, E} <- Cases].

replace(Args, Flag, V) ->
    case lists:member(Flag, Args) of
        true -> replace_value(Args, Flag, V);
        false -> Args ++ [Flag, V]
    end.

replace_value([Flag, _ | Rest], Flag, V) -> [Flag, V | Rest];
replace_value([A | Rest], Flag, V) -> [A | replace_value(Rest, Flag, V)].

cli_parse_test() ->
    ?assertEqual({ok, {bench, #{shape => burst, workers => 10, requests => 2, pinch => 2.5}, "d"}},
                 riarc_bench_cli:parse(["bench", "--shape", "burst", "--workers", "10",
                                        "--requests", "2", "--pinch", "2.5", "--out", "d"])),
    ?assertEqual({ok, {experiment, "c.config", "o"}},
                 riarc_bench_cli:parse(["experiment", "c.config", "--out", "o"])).

cli_bench_ok_test() ->
    ?assertEqual(0, riarc_bench_cli:run(["bench", "--shape", "pulse", "--workers", "50", "--requests", "5",
                                         "--time", "2", "--period", "5ms", "--out", tmp_dir("cliok")])).

%%% Experiments ----------------------------------------------------------------------------

tmp_dir(Name) -> riarc_test_tmp:dir("riarc_bench_cli_tests/" ++ Name).

%%% Where bench writes without --out ---------------------------------------------------------

%% A new directory per run, named for its time (UTC), never an earlier run's.
default_out_test() ->
    Dir = tmp_dir("default_out"),
    {ok, Cwd} = file:get_cwd(),
    ok = file:set_cwd(Dir),
    try
        T = 1795772712,                          % 2026-11-27 09:45:12 UTC
        ?assertEqual("bench-results/20261127-094512", riarc_bench_cli:default_out(T)),
        ok = filelib:ensure_path("bench-results/20261127-094512"),
        ?assertEqual("bench-results/20261127-094512-2", riarc_bench_cli:default_out(T))
    after ok = file:set_cwd(Cwd)
    end.

%% A tiny bench run without --out: it says where it writes, and writes there.
cli_bench_default_out_test_() ->
    {timeout, 60, fun() ->
        Dir = tmp_dir("default_run"),
        {ok, Cwd} = file:get_cwd(),
        ok = file:set_cwd(Dir),
        try
            {Out, Status} = riarc_capture:capture(fun() ->
                riarc_bench_cli:run(["bench", "--shape", "pulse", "--workers", "20", "--requests", "5",
                                     "--time", "2", "--period", "5ms"]) end),
            ?assertEqual(0, Status),
            {match, [Where]} = re:run(Out, "riarc bench: writing to (bench-results/[0-9]{8}-[0-9]{6})\n",
                                      [{capture, all_but_first, list}]),
            ?assert(filelib:is_regular(filename:join(Where, "summary.csv")))
        after ok = file:set_cwd(Cwd)
        end
    end}.
