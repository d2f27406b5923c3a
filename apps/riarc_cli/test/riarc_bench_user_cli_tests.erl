%% `bench -m': a user's own system (riarc_user_sys, a server and 20 clients timing their
%% calls) benchmarked bare and under riarc in fresh VMs; a property that rejects gives
%% status 1; bad input gives 2. And `experiment --save-baseline / --baseline'.
-module(riarc_bench_user_cli_tests).

-include_lib("eunit/include/eunit.hrl").

user_args(Out) ->
    ["bench", "-m", "riarc_user_sys", "-f", "main", "-a", "[20, 10]",
     "-pa", filename:dirname(code:which(riarc_user_sys)), "--out", Out].

%% 2 set-ups x 3 runs (1 in the fast tier), after two warm-ups: a row a run, a report
%% with a table and the latencies the system returned, status 0. Peer VMs start in about
%% a second each.
user_bench_ok_test_() ->
    {timeout, 120,
     fun() ->
             Out = tmp_dir("user-ok"),
             Runs = riarc_test_tier:count(1, 3),
             ?assertEqual(0, riarc_bench_cli:run(user_args(Out) ++
                                                 ["--monitors", "riarc_user_sys",
                                                  "--runs", integer_to_list(Runs),
                                                  "--instrumentation", "baseline,riarc"])),
             {ok, Csv} = file:read_file(filename:join(Out, "runs.csv")),
             [Header | Rows] = binary:split(Csv, <<"\n">>, [global, trim_all]),
             ?assertEqual(2 * Runs, length(Rows)),
             Cols = binary:split(Header, <<",">>, [global]),
             Col = fun(Name, Row) ->
                           lists:nth(index(Name, Cols), binary:split(Row, <<",">>, [global]))
                   end,
             ?assertEqual(lists:append(lists:duplicate(Runs, [<<"baseline">>, <<"riarc">>])),
                          [Col(<<"setup">>, R) || R <- Rows]),
             [?assertNotEqual(<<>>, Col(K, R)) || R <- Rows,
                                                 K <- [<<"lat_p50_us">>, <<"lat_p90_us">>, <<"lat_p99_us">>]],
             ?assertEqual([<<"200">>], lists:usort([Col(<<"lat_count">>, R) || R <- Rows])),
             %% 20 clients and the server, every one accepted, in each monitored run.
             ?assertEqual([<<"21">>], lists:usort([Col(<<"accepted">>, R) || R <- Rows,
                                                                            Col(<<"setup">>, R) =:= <<"riarc">>])),
             {ok, Html} = file:read_file(filename:join(Out, "report.html")),
             ?assertNotEqual(nomatch, binary:match(Html, <<"<table">>)),
             ?assertNotEqual(nomatch, binary:match(Html, <<"p99 µs"/utf8>>)),
             ?assertEqual(nomatch, binary:match(Html, <<"http">>))
     end}.

%% Clients exit normally, and this property says they must not: every run rejects.
user_bench_reject_test_() ->
    {timeout, 120,
     fun() ->
             Out = tmp_dir("user-reject"),
             Prop = filename:join(Out, "reject.prop"),
             ok = file:write_file(Prop, "with riarc_user_sys:client(_, _, _) monitor\n"
                                        "  [C <- _, riarc_user_sys:client(_, _, _)]\n"
                                        "  max(X. and([C ** Reason when Reason =:= normal] ff,\n"
                                        "             [C:_ ! _] X, [C ? _] X)).\n"),
             ?assertEqual(1, riarc_bench_cli:run(user_args(Out) ++
                                                 ["--props", Prop, "--runs", "1",
                                                  "--instrumentation", "riarc"])),
             {ok, Csv} = file:read_file(filename:join(Out, "runs.csv")),
             ?assertNotEqual(nomatch, binary:match(Csv, <<"riarc,1,ok">>))
     end}.

user_bench_bad_input_test_() ->
    Out = tmp_dir("user-bad"),
    Ok = user_args(Out) ++ ["--monitors", "riarc_user_sys"],
    Cases = [{"no function", ["bench", "-m", "riarc_user_sys", "--monitors", "riarc_user_sys", "--out", Out]},
             {"no monitors", user_args(Out)},
             {"both monitors and props", Ok ++ ["--props", "x.prop"]},
             {"zero runs", Ok ++ ["--runs", "0"]},
             {"unknown set-up", Ok ++ ["--instrumentation", "baseline,telepathy"]},
             {"unknown module", ["bench", "-m", "no_such_mod", "-f", "main", "--monitors",
                                 "riarc_user_sys", "--out", Out]},
             {"wrong arity", ["bench", "-m", "riarc_user_sys", "-f", "main", "-a", "[1]",
                              "--monitors", "riarc_user_sys", "--out", Out]},
             {"args not a list", ["bench", "-m", "riarc_user_sys", "-f", "main", "-a", "20",
                                  "--monitors", "riarc_user_sys", "--out", Out]},
             {"monitors without spec/1", user_args(Out) ++ ["--monitors", "lists"]},
             {"missing props file", user_args(Out) ++ ["--props", "/nonexistent/x.prop"]},
             {"-pa not a directory", Ok ++ ["-pa", "/nonexistent/ebin"]},
             {"unknown flag", Ok ++ ["--shape", "burst"]},
             {"missing --out", ["bench", "-m", "riarc_user_sys", "-f", "main", "--monitors",
                                 "riarc_user_sys"]}],
    [{Name, ?_assertEqual(2, riarc_bench_cli:run(Args))} || {Name, Args} <- Cases].

user_bench_parse_test() ->
    {ok, {bench_user, Cfg, "o", _}} =
        riarc_bench_cli:parse(["bench", "-m", "m", "-f", "f", "-a", "[1]", "--props", "p.prop",
                               "--runs", "2", "--instrumentation", "riarc,centralised", "--out", "o"]),
    ?assertEqual(#{mfa => {m, f, [1]}, monitors => {props, "p.prop"}, runs => 2,
                   setups => [riarc, centralised], timeout => 300, memory_limit => 8192, pa => []},
                 Cfg),
    %% Without -m, bench is the synthetic driver as before.
    ?assertMatch({ok, {bench, #{shape := steady}, "o"}},
                 riarc_bench_cli:parse(["bench", "--shape", "steady", "--workers", "1",
                                        "--requests", "1", "--out", "o"])).

experiment_baseline_parse_test() ->
    ?assertEqual({ok, {experiment, "c.config", "o", #{save_baseline => "a", baseline => "b"}}},
                 riarc_bench_cli:parse(["experiment", "c.config", "--save-baseline", "a",
                                        "--baseline", "b", "--out", "o"])).

%% One experiment saved as a baseline, the next compared with it.
experiment_baseline_test_() ->
    {timeout, 120,
     fun() ->
             Dir = tmp_dir("baseline"),
             Cfg = filename:join(Dir, "tiny.config"),
             ok = file:write_file(Cfg, "{name, \"tiny\"}. {shapes, [steady]}. {workers, [50]}. "
                                       "{repetitions, 1}. {params, #{requests => 5, time => 2, "
                                       "period => 5, interval => 20}}."),
             A = filename:join(Dir, "a"),
             B = filename:join(Dir, "b"),
             ?assertEqual(0, riarc_bench_cli:run(["experiment", Cfg, "--save-baseline", "tiny",
                                                  "--out", A])),
             ?assert(filelib:is_dir(filename:join([Dir, "baselines", "tiny"]))),
             ?assertEqual(0, riarc_bench_cli:run(["experiment", Cfg, "--baseline", "tiny",
                                                  "--out", B])),
             ?assert(filelib:is_regular(filename:join(B, "baseline-tiny.html"))),
             %% No such baseline: the user's input, status 2, before anything runs.
             C = filename:join(Dir, "c"),
             ?assertEqual(2, riarc_bench_cli:run(["experiment", Cfg, "--baseline", "nope",
                                                  "--out", C])),
             ?assertNot(filelib:is_dir(C))
     end}.

index(X, L) -> index(X, L, 1).
index(X, [X | _], I) -> I;
index(X, [_ | T], I) -> index(X, T, I + 1).

tmp_dir(Name) -> riarc_test_tmp:dir("riarc_bench_user_cli_tests/" ++ Name).
