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
             {"missing --out", lists:sublist(Ok, 7)},
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
                                         "--time", "2", "--period", "5", "--out", tmp_dir("cliok")])).

%%% Experiments ----------------------------------------------------------------------------

tmp_dir(Name) ->
    Dir = filename:join([os:getenv("TMPDIR", "/tmp"), "riarc_bench_cli_tests",
                         Name ++ "-" ++ os:getpid()]),
    ok = filelib:ensure_path(Dir),
    Dir.
