%% Tests of the study's overhead table (the analogue of 000 Table 3), on aggregates
%% written by hand so that every number is known.
-module(riarc_bench_study_tests).

-include_lib("eunit/include/eunit.hrl").

tmp_dir(Name) -> riarc_test_tmp:dir("riarc_bench_study_tests/" ++ Name).

-define(COLS, "benchmark,shape,workers,instrumentation,monitors,cost_us,crashed,monitored,"
              "wrong_verdicts,mrt_mean_ms_mean,mrt_mean_ms_sd,mem_mean_mean,mem_mean_sd,"
              "sched_mean_mean,sched_mean_sd\n").

%% Baseline at n = 100 and n = 200; riarc at both, inline crashed at 200.
aggregate() ->
    [?COLS,
     "steady-n100-baseline,steady,100,baseline,none,5,,0,0,1.0,0.1,1000000,0,0.1,0\n",
     "steady-n200-baseline,steady,200,baseline,none,5,,0,0,2.0,0.1,2000000,0,0.2,0\n",
     "steady-n100-riarc,steady,100,riarc,soundness,5,,101,0,9.0,0.1,9000000,0,0.9,0\n",
     "steady-n200-riarc,steady,200,riarc,soundness,5,,201,0,3.0,0.1,2500000,0,0.3,0\n",
     "steady-n200-inline,steady,200,inline,soundness,5,memory_limit,0,0,,,,,,\n",
     "steady-n200-central,steady,200,centralised,soundness,5,,201,2,4.0,0.1,4000000,0,0.2,0\n"].

write_aggregate(Name) ->
    Dir = tmp_dir(Name),
    ok = file:write_file(filename:join(Dir, "aggregate.csv"), aggregate()),
    _ = file:delete(filename:join(Dir, "runs.csv")),
    Dir.

%% Per-run values for three benchmarks at n = 200: baseline MRT 1.9, 2.0, 2.1; riarc
%% 2.9, 3.0, 3.1 (medians 2.0 and 3.0: +50 %, every resample above); centralised two
%% runs only (n too small).
runs() ->
    ["benchmark,rep,mrt_mean_ms,mem_mean,sched_mean\n",
     "steady-n200-baseline,1,1.9,2000000,0.2\n", "steady-n200-baseline,2,2.0,2000000,0.2\n",
     "steady-n200-baseline,3,2.1,2000000,0.2\n",
     "steady-n200-riarc,1,2.9,2500000,0.3\n", "steady-n200-riarc,2,3.0,2500000,0.3\n",
     "steady-n200-riarc,3,3.1,2500000,0.3\n",
     "steady-n200-central,1,4.0,4000000,0.2\n", "steady-n200-central,2,4.0,4000000,0.2\n"].

%% Overhead is taken at the largest n, against the baseline of the same shape and n.
overhead_test() ->
    {ok, Rows} = riarc_bench_study:read_aggregate(filename:join(write_aggregate("agg"), "aggregate.csv")),
    Table = riarc_bench_study:overhead("high", Rows),
    ?assertEqual([200, 200, 200], [maps:get(workers, T) || T <- Table]),
    ?assertEqual(["centralised", "inline", "riarc"],
                 lists:sort([maps:get(instrumentation, maps:get(row, T)) || T <- Table])).

%% The table's text: 1.5 times the response time and 1.25 times the memory for riarc
%% (ratios, not percentages), a crashed set-up marked as such, and wrong verdicts shouted.
table_text_test() ->
    Dir = write_aggregate("study-in"),
    Out = tmp_dir("study-out"),
    {ok, #{text := Text, table := Md}} = riarc_bench_study:write([{"high", Dir}], Out),
    ?assert(filelib:is_regular(Md)),
    Lines = binary:split(Text, <<"\n">>, [global, trim_all]),
    [Riarc] = [L || L <- Lines, binary:match(L, <<"| riarc, ">>) =/= nomatch],
    ?assertMatch({match, _}, re:run(Riarc, "\\| 1\\.50x \\[3\\.0 vs 2\\.0\\]")),
    ?assertMatch({match, _}, re:run(Riarc, "\\| 1\\.25x \\[2\\.5 vs 2\\.0\\]")),
    ?assertMatch({match, _}, re:run(Riarc, "201 of 201")),
    [Inline] = [L || L <- Lines, binary:match(L, <<"inline">>) =/= nomatch],
    ?assertMatch({match, _}, re:run(Inline, "crashed \\(memory_limit\\)")),
    %% Its monitors gave no verdicts: not a set-up without monitors.
    ?assertMatch({match, _}, re:run(Inline, "\\| no verdicts \\(crashed\\) \\|$")),
    [Central] = [L || L <- Lines, binary:match(L, <<"centralised">>) =/= nomatch],
    ?assertMatch({match, _}, re:run(Central, "2 WRONG")),
    {ok, Csv} = file:read_file(filename:join(Out, "overhead.csv")),
    ?assertEqual(4, length(binary:split(Csv, <<"\n">>, [global, trim_all]))).

%% With runs.csv: ratios with intervals, significance, too few runs said once; and the
%% page is real HTML with every plot present.
study_with_runs_test() ->
    Dir = write_aggregate("study-runs"),
    ok = file:write_file(filename:join(Dir, "runs.csv"), runs()),
    Out = tmp_dir("study-runs-out"),
    {ok, #{text := Text, html := Html}} = riarc_bench_study:write([{"high", Dir}], Out),
    Lines = binary:split(Text, <<"\n">>, [global, trim_all]),
    [Riarc] = [L || L <- Lines, binary:match(L, <<"| riarc, ">>) =/= nomatch],
    ?assertMatch({match, _}, re:run(Riarc, "\\| 1\\.50x \\([0-9.]+ to [0-9.]+\\) \\[3\\.0 vs 2\\.0\\]")),
    ?assertEqual(nomatch, re:run(Riarc, "^[^|]*\\|[^|]*\\|[^|]*\\|[^|]*\\|[^|]*no measurable difference")),
    %% Two runs of centralised: its ratios have no interval, and the note says why once.
    [Central] = [L || L <- Lines, binary:match(L, <<"centralised">>) =/= nomatch],
    ?assertEqual(nomatch, re:run(Central, " to ")),
    ?assertEqual(1, length([L || L <- Lines, binary:match(L, <<"too few for intervals">>) =/= nomatch])),
    ?assertEqual(nomatch, re:run(Text, "[+-][0-9.]+ ?%")),
    Page = riarc_bench_report_check:tables(riarc_bench_report_check:html(Html)),
    ?assertNotEqual(nomatch, binary:match(Page, <<"class=\"small\"">>)),
    ?assertEqual(nomatch, binary:match(Page, <<"n too small">>)),
    ?assertNotEqual(nomatch, binary:match(Page, <<"class=\"sig\"">>)),
    %% Grouped bars and box plots at n = 200, and against n for the two n of the level.
    Svgs = filelib:wildcard("*.svg", filename:join(Out, "plots")),
    ?assert(lists:member("high-bars-mrt_mean_ms_mean.svg", Svgs)),
    ?assert(lists:member("high-box-mrt_mean_ms_mean.svg", Svgs)),
    ?assertNotEqual(nomatch, binary:match(Page, <<"high-bars-mrt_mean_ms_mean.svg">>)).

missing_experiment_test() ->
    {error, {riarc_bench_study, E}} = riarc_bench_study:write([{"high", "/nonexistent/dir"}], tmp_dir("study-missing")),
    ?assertMatch({match, _}, re:run(riarc_bench_study:format_error(E), "run the experiment first")).
