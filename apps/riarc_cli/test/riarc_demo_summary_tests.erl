%% The lines `make demo' ends with (riarc_demo_summary:lines/3), from fixed results: at
%% most five, plain words, every cost a ratio with its interval and the scale it was
%% measured at. The demo itself (minutes) is not run here.
-module(riarc_demo_summary_tests).

-include_lib("eunit/include/eunit.hrl").

%% Words of the papers and of the code that a reader of the demo should not meet.
-define(JARGON, ["paper", " 000 ", " 004 ", "(000", "Table 3", "Fig.", "§", "seed", "MRT", "n too small",
                 "rep ", "baseline", "soundness", "%"]).

row(Level, Shape, N, Key, Mrt, Mem) ->
    #{level => Level, shape => Shape, workers => N, key => Key, crashed => "",
      row => #{requests => 100},
      cmp => #{mrt_mean_ms_mean => riarc_bench_ci:compare(Mrt, [1.0, 1.1, 1.2]),
               mem_mean_mean => riarc_bench_ci:compare(Mem, [10.0, 10.0, 10.5]),
               sched_mean_mean => riarc_bench_ci:compare([0.5, 0.5, 0.5], [0.1, 0.1, 0.1])}}.

%% What the demo measures: two levels, two loads, three monitoring set-ups.
rows() ->
    [row(L, S, N, K, [3.0, 3.3, 3.6], [20.0, 21.0, 22.0])
     || {L, N} <- [{"moderate", 30}, {"high", 3000}], S <- ["burst", "steady"],
        K <- ["riarc-soundness", "centralised-soundness", "inline-soundness"]].

caught() -> #{runs => 3, caught => 3, rejects => 6}.

at_most_five_plain_lines_test() ->
    Lines = riarc_demo_summary:lines(caught(), rows(), "bench-results/demo-study/index.html"),
    ?assert(length(Lines) =< 5),
    ?assertEqual(4, length(Lines)),
    [?assertEqual({L, W, nomatch}, {L, W, string:find(L, W)}) || L <- Lines, W <- ?JARGON],
    [?assertEqual(nomatch, string:find(L, "\n")) || L <- Lines].

caught_line_test() ->
    [L | _] = riarc_demo_summary:lines(caught(), rows(), "r.html"),
    ?assertMatch("riarc caught the double-booking race in all 3 monitored runs: 6 rejects" ++ _, L),
    [Some | _] = riarc_demo_summary:lines(#{runs => 3, caught => 2, rejects => 3}, rows(), "r.html"),
    ?assertMatch("riarc caught the double-booking race in 2 of 3 monitored runs" ++ _, Some),
    %% No race, no claim of a catch.
    [None | _] = riarc_demo_summary:lines(#{runs => 3, caught => 0, rejects => 0}, rows(), "r.html"),
    ?assertEqual(nomatch, string:find(None, "caught the")).

%% Each cost line: the scale, then a ratio with its interval for response time and for
%% memory; high concurrency first, steady load quoted, riarc's set-up (not the others').
cost_lines_test() ->
    [_, High, Moderate, Report] = riarc_demo_summary:lines(caught(), rows(), "r.html"),
    ?assertMatch("With 3000 workers sending 100 requests each (steady load), riarc's monitoring" ++ _, High),
    ?assertMatch("With 30 workers sending 100 requests each (steady load), riarc's monitoring" ++ _, Moderate),
    Ratio = "[0-9.]+x \\([0-9.]+ to [0-9.]+\\)",
    [?assertMatch({match, [_, _]}, re:run(L, Ratio, [global, {capture, first, list}]))
     || L <- [High, Moderate]],
    ?assertNotEqual(nomatch, string:find(High, "mean response time 3.00x (2.50 to 3.60) of unmonitored")),
    ?assertMatch("The full table " ++ _, Report),
    ?assertNotEqual(nomatch, string:find(Report, "r.html")).

%% With too few runs the ratio has no interval: the sentence says so once, not per number.
few_runs_test() ->
    Few = [row("high", "steady", 3000, "riarc-soundness", [3.0], [20.0])],
    [_, L, _] = riarc_demo_summary:lines(caught(), Few, "r.html"),
    ?assertNotEqual(nomatch, string:find(L, "2.73x of unmonitored")),
    ?assertEqual(1, length(string:split(L, "too few", all)) - 1).

%% A set-up whose runs crashed has no cost to quote: the line says the runs did not finish.
crashed_test() ->
    Crashed = [#{level => "high", shape => "steady", workers => 3000, key => "riarc-soundness",
                 crashed => "memory limit", row => #{requests => 100}, cmp => #{}}],
    [_, L, _] = riarc_demo_summary:lines(caught(), Crashed, "r.html"),
    ?assertNotEqual(nomatch, string:find(L, "did not finish (memory limit)")),
    ?assertEqual(nomatch, re:run(L, "[0-9]x")).

%% No result for riarc at all (another set-up only): no cost line rather than a made-up one.
no_riarc_test() ->
    Rows = [R || R = #{key := K} <- rows(), K =/= "riarc-soundness"],
    ?assertEqual(2, length(riarc_demo_summary:lines(caught(), Rows, "r.html"))).

%% `demo --quick' measures no cost: the caught line alone.
quick_test() ->
    ?assertMatch(["riarc caught the double-booking race" ++ _],
                 riarc_demo_summary:lines(caught(), [], undefined)).
