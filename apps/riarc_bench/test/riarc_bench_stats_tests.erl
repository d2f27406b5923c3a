%% Tests of the statistics: Welford against exact formulas, histogram percentiles,
%% maximum-likelihood fits and the KS statistic, the coefficient of variation.
-module(riarc_bench_stats_tests).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

welford(Xs) -> lists:foldl(fun riarc_bench_stats:welford_add/2, riarc_bench_stats:welford_new(), Xs).

exact(Xs) ->
    N = length(Xs),
    M = lists:sum(Xs) / N,
    {M, lists:sum([(X - M) * (X - M) || X <- Xs]) / (N - 1)}.

close(A, B, Scale) -> abs(A - B) =< 1.0e-9 * max(1.0, Scale).

prop_welford_exact() ->
    ?FORALL(Xs, ?LET({A, B, Rest}, {float(-1.0e6, 1.0e6), float(-1.0e6, 1.0e6), list(float(-1.0e6, 1.0e6))},
                     [A, B | Rest]),
            begin
                W = welford(Xs),
                {M, V} = exact(Xs),
                Scale = lists:max([abs(X) || X <- Xs]),
                close(riarc_bench_stats:mean(W), M, Scale)
                    andalso close(riarc_bench_stats:variance(W), V, Scale * Scale)
                    andalso riarc_bench_stats:count(W) =:= length(Xs)
            end).

prop_welford_merge() ->
    ?FORALL({As, Bs}, {list(float(-1.0e3, 1.0e3)), list(float(-1.0e3, 1.0e3))},
            ?IMPLIES(length(As) + length(Bs) >= 2,
                     begin
                         Merged = riarc_bench_stats:welford_merge(welford(As), welford(Bs)),
                         Whole = welford(As ++ Bs),
                         close(riarc_bench_stats:mean(Merged), riarc_bench_stats:mean(Whole), 1.0e3)
                             andalso close(riarc_bench_stats:variance(Merged),
                                           riarc_bench_stats:variance(Whole), 1.0e6)
                     end)).

welford_test() ->
    ?assert(riarc_test_tier:quickcheck(prop_welford_exact(), {300, 300})),
    ?assert(riarc_test_tier:quickcheck(prop_welford_merge(), {200, 200})).

welford_known_values_test() ->
    W = welford([2, 4, 4, 4, 5, 5, 7, 9]),
    ?assertEqual(5.0, riarc_bench_stats:mean(W)),
    ?assert(abs(riarc_bench_stats:variance(W) - 32 / 7) < 1.0e-12),
    ?assertEqual(0.0, riarc_bench_stats:variance(welford([3]))).

%% A percentile from the histogram is within one bucket (< 1 %) of the exact one.
prop_percentile() ->
    ?FORALL({Xs, Q}, {non_empty(list(range(0, 5000000))), float(0.0, 1.0)},
            begin
                H = lists:foldl(fun riarc_bench_stats:hist_add/2, riarc_bench_stats:hist_new(), Xs),
                Sorted = lists:sort(Xs),
                Exact = lists:nth(max(1, ceil(Q * length(Xs))), Sorted),
                Got = riarc_bench_stats:percentile(H, Q),
                abs(Got - Exact) =< max(1, Exact / 64)
                    andalso riarc_bench_stats:hist_max(H) =:= lists:max(Xs)
            end).

percentile_test() ->
    ?assert(riarc_test_tier:quickcheck(prop_percentile(), {200, 200})).

sample(Fun, N, Seed) ->
    {Xs, _} = lists:mapfoldl(fun(_, R) -> Fun(R) end, rand:seed_s(exsss, Seed), lists:seq(1, N)),
    Xs.

best(Fits) ->
    {_, Name} = lists:min([{K, N} || {N, #{ks := K}} <- maps:to_list(Fits)]),
    Name.

%% Each family's MLE recovers its parameters and fits its own samples best.
fits_test_() ->
    Normal = fun(R) -> rand:normal_s(10.0, 4.0, R) end,
    LogNormal = fun(R) -> {Z, R1} = rand:normal_s(R), {math:exp(1.0 + 0.8 * Z), R1} end,
    Gamma3 = fun(R0) ->  % sum of 3 exponentials with mean 2: gamma(k = 3, theta = 2)
                     lists:foldl(fun(_, {S, R}) -> {U, R1} = rand:uniform_real_s(R), {S - 2 * math:log(U), R1} end,
                                 {0.0, R0}, [1, 2, 3])
             end,
    [?_assertMatch(normal, best(riarc_bench_stats:fits(sample(Normal, 3000, 1)))),
     ?_assertMatch(lognormal, best(riarc_bench_stats:fits(sample(LogNormal, 3000, 2)))),
     ?_assertMatch(gamma, best(riarc_bench_stats:fits(sample(Gamma3, 3000, 3)))),
     fun() ->
             #{gamma := #{dist := {gamma, K, Theta}}} = riarc_bench_stats:fits(sample(Gamma3, 5000, 4)),
             ?assert(abs(K - 3) < 0.25),
             ?assert(abs(Theta - 2) < 0.2)
     end,
     fun() ->
             #{lognormal := #{dist := {lognormal, Mu, Sigma}}} =
                 riarc_bench_stats:fits(sample(LogNormal, 5000, 5)),
             ?assert(abs(Mu - 1.0) < 0.05),
             ?assert(abs(Sigma - 0.8) < 0.05)
     end].

cdf_known_values_test() ->
    ?assert(abs(riarc_bench_stats:cdf({gamma, 2.0, 1.0}, 1.0) - (1 - 2 / math:exp(1))) < 1.0e-12),
    ?assert(abs(riarc_bench_stats:cdf({gamma, 1.0, 3.0}, 30.0) - (1 - math:exp(-10))) < 1.0e-12),
    ?assert(abs(riarc_bench_stats:cdf({normal, 0.0, 1.0}, 1.96) - 0.9750021) < 1.0e-6).

ks_uniform_test() ->
    %% The perfect grid i/n is at distance 1/n from the uniform CDF.
    Xs = [I / 100 || I <- lists:seq(1, 100)],
    ?assert(abs(riarc_bench_stats:ks(Xs, fun(X) -> X end) - 0.01) < 1.0e-12).

reservoir_test() ->
    R = lists:foldl(fun riarc_bench_stats:reservoir_add/2, riarc_bench_stats:reservoir_new(100, 1),
                    lists:seq(1, 10000)),
    L = riarc_bench_stats:reservoir_list(R),
    ?assertEqual(100, length(L)),
    %% A uniform sample of 1..10000 has its mean near 5000.
    ?assert(abs(lists:sum(L) / 100 - 5000) < 1000).

cv_test() ->
    ?assertEqual(0.0, riarc_bench_stats:cv([5, 5, 5])),
    ?assert(abs(riarc_bench_stats:cv([1, 2, 3]) - 0.5) < 1.0e-12).
