%% Tests of the report statistics: order statistics and Tukey's fences against values
%% computed by hand, the bootstrap interval's known cases, "n too small", and PropEr
%% properties of the intervals (they contain the median, lie within the data, narrow
%% with more data, and call separated samples significant).
-module(riarc_bench_ci_tests).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").


close(A, B) -> abs(A - B) =< 1.0e-9 * max(1.0, abs(B)).

%% Type 7 by hand: h = (n - 1) p; [10, 20, 30, 40] at p = 0.25 gives h = 0.75, so
%% 10 + 0.75 * 10 = 17.5; the median of an even count is the mean of the middle two.
quantile_test() ->
    ?assertEqual(2.5, riarc_bench_ci:median([4, 1, 3, 2])),
    ?assertEqual(3.0, riarc_bench_ci:median([5, 1, 3])),
    ?assertEqual(17.5, riarc_bench_ci:quantile([40, 10, 30, 20], 0.25)),
    ?assertEqual(32.5, riarc_bench_ci:quantile([40, 10, 30, 20], 0.75)),
    ?assertEqual(40.0, riarc_bench_ci:quantile([40, 10, 30, 20], 1.0)),
    ?assertEqual(7.0, riarc_bench_ci:median([7])).

%% [1, 2, 3, 4, 100]: Q1 = 2, Q3 = 4, IQR = 2, fences -1 and 7, so 100 is flagged.
tukey_test() ->
    ?assertEqual([100.0], riarc_bench_ci:tukey([1, 2, 3, 4, 100])),
    ?assertEqual([], riarc_bench_ci:tukey([1, 2, 3, 4, 5])),
    ?assertEqual([-50.0], riarc_bench_ci:tukey([10, 11, 12, 13, -50])),
    %% Three values cannot have an outlier.
    ?assertEqual([], riarc_bench_ci:tukey([1, 2, 1000])).

%% n = 3: a resample's median is the smallest value with probability
%% 3 (1/3)^2 (2/3) + (1/3)^3 = 7/27, far above 2.5 %, and likewise the largest,
%% so the interval is the range of the data.
three_values_interval_is_the_range_test() ->
    S = riarc_bench_ci:summary([3, 1, 2]),
    ?assertMatch(#{n := 3, enough := true, median := 2.0, lo := 1.0, hi := 3.0}, S),
    ?assertEqual("2.00 [1.00, 3.00]", riarc_bench_ci:format(S)).

constant_data_test() ->
    ?assertMatch(#{median := 5.0, lo := 5.0, hi := 5.0, outliers := []},
                 riarc_bench_ci:summary([5, 5, 5, 5])).

%% Fewer than three repetitions: no interval, no CV, and the text says so.
n_too_small_test() ->
    S = riarc_bench_ci:summary([3.0, 4.0]),
    ?assertMatch(#{n := 2, enough := false, median := 3.5}, S),
    ?assertNot(maps:is_key(lo, S)),
    ?assertEqual("3.50 (n too small)", riarc_bench_ci:format(S)),
    ?assertEqual("n/a", riarc_bench_ci:format(riarc_bench_ci:summary([]))),
    C = riarc_bench_ci:compare([2.0], [1.0]),
    ?assertMatch(#{enough := false, significant := false, ratio := 2.0}, C),
    ?assertEqual("+100 % (n too small)", riarc_bench_ci:format_compare(C)).

%% Scaling applies to every number shown.
format_scale_test() ->
    ?assertEqual("2.00 [1.00, 3.00]", riarc_bench_ci:format(riarc_bench_ci:summary([1.0e6, 2.0e6, 3.0e6]), 1.0e-6)).

%% Separated samples: every resampled set-up median exceeds every resampled baseline
%% median, so the whole ratio interval lies above 1. The point ratio is 21 / 10.5 = 2.
separated_is_significant_test() ->
    C = riarc_bench_ci:compare([20, 21, 22], [10, 10.5, 11]),
    ?assertMatch(#{enough := true, significant := true, ratio := 2.0}, C),
    #{lo := Lo, hi := Hi} = C,
    %% The extreme resamples give 20 / 11 and 22 / 10.
    ?assert(Lo >= 20 / 11 - 1.0e-12),
    ?assert(Hi =< 22 / 10 + 1.0e-12),
    ?assertMatch("+100 % [" ++ _, riarc_bench_ci:format_compare(C)),
    ?assertEqual(nomatch, string:find(riarc_bench_ci:format_compare(C), "not significant")).

%% Overlapping samples with the same median: the ratio is 1 and not significant.
overlap_is_not_significant_test() ->
    C = riarc_bench_ci:compare([9, 10, 11, 12, 8], [10, 9, 12, 11, 8]),
    ?assertMatch(#{significant := false, ratio := 1.0}, C),
    ?assertNotEqual(nomatch, string:find(riarc_bench_ci:format_compare(C), "not significant")).

%% A zero baseline has no ratio, only a difference.
zero_baseline_test() ->
    C = riarc_bench_ci:compare([1, 2, 3], [0, 0, 0]),
    ?assertNot(maps:is_key(ratio, C)),
    ?assertEqual(2.0, maps:get(diff, C)),
    ?assertEqual(none, riarc_bench_ci:overhead(C)),
    ?assertMatch("difference +2.00" ++ _, riarc_bench_ci:format_compare(C)).

%% The same data give the same interval (the bootstrap is seeded).
deterministic_test() ->
    Xs = [1.3, 7.2, 3.3, 9.9, 4.1, 2.0],
    ?assertEqual(riarc_bench_ci:summary(Xs), riarc_bench_ci:summary(Xs)).

%%% Properties ----------------------------------------------------------------------------

sample() -> ?LET({A, B, C, Rest}, {val(), val(), val(), list(val())}, [A, B, C | Rest]).
val() -> float(-1.0e3, 1.0e3).

%% The interval contains the median and lies within the range of the data.
prop_interval_contains_median() ->
    ?FORALL(Xs, sample(),
            begin
                #{median := M, lo := Lo, hi := Hi} = riarc_bench_ci:summary(Xs),
                Lo =< M andalso M =< Hi andalso lists:min(Xs) =< Lo andalso Hi =< lists:max(Xs)
                    andalso close(M, riarc_bench_ci:median(Xs))
            end).

%% Four times the data (each value repeated) give an interval no wider than before
%% (up to the Monte-Carlo error of the percentiles, here 1 % of the range).
prop_narrows_with_more_data() ->
    ?FORALL(Xs, sample(),
            begin
                #{lo := L1, hi := H1} = riarc_bench_ci:summary(Xs),
                #{lo := L4, hi := H4} = riarc_bench_ci:summary(Xs ++ Xs ++ Xs ++ Xs),
                Range = lists:max(Xs) - lists:min(Xs),
                H4 - L4 =< H1 - L1 + 0.01 * Range
            end).

%% A set-up whose every run exceeds every baseline run is significantly slower, and the
%% ratio's interval contains the point ratio.
prop_separated_significant() ->
    ?FORALL({Base, Gap, Extra}, {sample(), float(0.001, 100.0), sample()},
            begin
                B = [abs(X) + 1 || X <- Base],
                S = [lists:max(B) + Gap + abs(X) || X <- Extra],
                C = riarc_bench_ci:compare(S, B),
                #{significant := Sig, ratio := R, lo := Lo, hi := Hi} = C,
                Sig andalso Lo > 1 andalso Lo =< R andalso R =< Hi
            end).

%% From a fixed seed (riarc_test_tier), so that a failure is reproducible.
qc(Prop, N) ->
    riarc_test_tier:quickcheck(Prop, {N, N}, [{seed, {20, 24, 1}}, {to_file, user}, {max_size, 30}]).

properties_test_() ->
    {timeout, 120,
     [?_assert(qc(prop_interval_contains_median(), 100)),
      ?_assert(qc(prop_narrows_with_more_data(), 60)),
      ?_assert(qc(prop_separated_significant(), 60))]}.
