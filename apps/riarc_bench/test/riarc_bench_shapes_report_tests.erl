%% riarc_bench_shapes_report: the table and issue 30's targets from runs.csv files, and
%% the verdict on a bound (met or missed, by how much, and whether the interval can tell).
-module(riarc_bench_shapes_report_tests).

-include_lib("eunit/include/eunit.hrl").

verdict_test_() ->
    V = fun riarc_bench_shapes_report:verdict/2,
    [?_assertEqual("met (the whole interval)", V(1.5, #{ratio => 1.1, lo => 1.0, hi => 1.4})),
     ?_assertMatch("met at the median" ++ _, V(1.5, #{ratio => 1.2, lo => 1.0, hi => 1.8})),
     ?_assertEqual("missed by +100 % (the whole interval is above)",
                   V(1.5, #{ratio => 3.0, lo => 2.0, hi => 4.0})),
     ?_assertMatch("missed by +33.3 % at the median" ++ _, V(1.5, #{ratio => 2.0, lo => 1.2, hi => 3.0})),
     ?_assertEqual("(context)", V(none, #{ratio => 2.0})),
     ?_assertEqual("not measured", V(1.5, #{enough => false}))].

%% Two shapes written as riarc_bench_user writes them (a failed run among them, left
%% out): the ping-pong target is missed, the load driver's MRT target (riarc no slower
%% than centralised) missed too.
summary_test() ->
    Dir = riarc_test_tmp:dir("riarc_bench_shapes_report_tests"),
    Write = fun(Shape, Lines) ->
                    ok = filelib:ensure_dir(filename:join([Dir, Shape, "x"])),
                    ok = file:write_file(filename:join([Dir, Shape, "runs.csv"]),
                                         ["setup,rep,status,wall_ms,events,lat_mean_us\n" | Lines])
            end,
    Write("pingpong", [io_lib:format("~s,~b,ok,~b,~b,\n", [S, I, W + I, E])
                       || I <- [1, 2, 3], {S, W, E} <- [{baseline, 10, 0}, {tracing, 20, 5},
                                                         {riarc, 40, 5}]]
                      ++ ["riarc,4,error,,,\n"]),
    Write("load-alone", [io_lib:format("~s,~b,ok,1000,~b,~b\n", [S, I, E, M + I])
                         || I <- [1, 2, 3], {S, E, M} <- [{baseline, 0, 100}, {riarc, 9, 200},
                                                           {centralised, 9, 180}]]),
    {ok, Md} = riarc_bench_shapes_report:summary(Dir, ["pingpong", "load-alone"]),
    Text = binary_to_list(Md),
    ?assertNotEqual(nomatch, string:find(Text, "| pingpong | riarc | 3 | 42.0 [41.0, 43.0] |")),
    ?assertNotEqual(nomatch, string:find(Text, "ping-pong: riarc / the floor | <= 1.05 | 1.91")),
    ?assertNotEqual(nomatch, string:find(Text, "missed by +81.8 %")),
    %% MRT in ms: the median of the runs' means, 202 µs.
    ?assertNotEqual(nomatch, string:find(Text, "| load-alone | riarc | 3 | 1000 [1000, 1000] | 1.00")),
    ?assertNotEqual(nomatch, string:find(Text, "| 0.202 [0.201, 0.203] | 1.11")),
    %% Wall time against centralised monitoring's: level.
    ?assertNotEqual(nomatch, string:find(Text, "| load-alone | riarc | 3 | 1000 [1000, 1000] | 1.00 [1.00, 1.00] | - | 1.00")),
    ?assertNotEqual(nomatch, string:find(Text, "MRT, riarc / centralised | <= 1.00 | 1.11")),
    ?assertNotEqual(nomatch, string:find(Text, "missed by +11.0 % (the whole interval is above)")),
    %% Shapes not given have no targets: no flat line.
    ?assertEqual(nomatch, string:find(Text, "flat")),
    ok = file:del_dir_r(Dir).

missing_test() ->
    {error, {riarc_bench_shapes_report, R}} =
        riarc_bench_shapes_report:summary("/nonexistent-riarc", ["flat"]),
    ?assert(io_lib:char_list(riarc_bench_shapes_report:format_error(R))).

%% Two variants of riarc side by side: monitors in their tracers against in processes of
%% their own (cheaper, the interval says so), tracers at low against normal priority
%% (no difference the runs can tell); a shape without both variants has no such row.
pairs_test() ->
    Dir = riarc_test_tmp:dir("riarc_bench_shapes_report_pairs"),
    ok = filelib:ensure_dir(filename:join([Dir, "chains", "x"])),
    Rows = [io_lib:format("~s,~b,ok,~b,0\n", [S, I, W + I])
            || I <- [1, 2, 3, 4, 5], {S, W} <- [{baseline, 10}, {riarc_inline, 50},
                                                {riarc_isolated, 100}, {riarc_low, 70},
                                                {riarc_normal, 70}]],
    ok = file:write_file(filename:join([Dir, "chains", "runs.csv"]),
                         ["setup,rep,status,wall_ms,events\n" | Rows]),
    {ok, Md} = riarc_bench_shapes_report:summary(Dir, ["chains"]),
    Text = binary_to_list(Md),
    ?assertNotEqual(nomatch, string:find(Text, "| chains | wall | riarc_inline / riarc_isolated | 0.51 [0.50, 0.53] | riarc_inline |")),
    ?assertNotEqual(nomatch, string:find(Text, "| chains | wall | riarc_low / riarc_normal | 1.00")),
    ?assertNotEqual(nomatch, string:find(Text, "neither (the interval holds 1)")),
    ?assertEqual(nomatch, string:find(Text, "| MRT |")),
    ok = file:del_dir_r(Dir).
