%% Tests of the model: Order queues (sum, length, goodness of fit), batch sizes, seeds
%% and parameter validation.
-module(riarc_bench_model_tests).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-define(N, 5000).

shapes() ->
    [#{shape => steady, n => ?N, rate => 250.0},                % t = 20
     #{shape => pulse, n => ?N, time => 20, spread => 4.0},
     #{shape => burst, n => ?N, time => 20, pinch => 20.0}].

seeded(Seed) -> rand:seed_s(exsss, {Seed, 7, 7}).

%% Kolmogorov-Smirnov on the continuous creation instants against the shape's
%% (truncated) distribution. Seeded, so deterministic; 1.63/sqrt(n) is the 1 % critical
%% value, so a correct generator would fail this for only 1 seed in 100.
instants_fit_target_distribution_test_() ->
    [{atom_to_list(maps:get(shape, S)),
      fun() ->
              {Xs, _} = riarc_bench_shape:instants(S, seeded(1)),
              D = riarc_bench_stats:ks(Xs, fun(X) -> riarc_bench_shape:cdf(S, X) end),
              ?assert(D < 1.63 / math:sqrt(?N))
      end} || S <- shapes()].

%% Chi-square of the Order queue's counts against n times each unit's probability, at
%% the 1 % level (Wilson-Hilferty approximation of the critical value). Units expected
%% to hold fewer than 5 workers are left out, as usual for this test.
order_queue_fits_by_chi_square_test_() ->
    [{atom_to_list(maps:get(shape, S)),
      fun() ->
              {Q, _} = riarc_bench_shape:order(S, seeded(2)),
              T = length(Q),
              Exp = [?N * (riarc_bench_shape:cdf(S, float(I + 1)) - riarc_bench_shape:cdf(S, float(I)))
                     || I <- lists:seq(0, T - 1)],
              Cells = [{O, E} || {O, E} <- lists:zip(Q, Exp), E >= 5],
              Chi2 = lists:sum([(O - E) * (O - E) / E || {O, E} <- Cells]),
              ?assert(Chi2 < chi2_critical(length(Cells) - 1, 2.326))
      end} || S <- shapes()].

chi2_critical(K, Z) ->
    A = 2 / (9 * K),
    K * math:pow(1 - A + Z * math:sqrt(A), 3).

%% Steady: t = ceil(n / lambda) units, each holding about lambda workers.
steady_timeline_test() ->
    S = #{shape => steady, n => 1001, rate => 100.0},
    {Q, _} = riarc_bench_shape:order(S, seeded(3)),
    ?assertEqual(11, length(Q)),
    ?assertEqual(1001, lists:sum(Q)).

%% Every Order queue has t entries summing to exactly n.
prop_order_sums_to_n() ->
    ?FORALL({Shape, N, T, Seed}, {oneof([steady, pulse, burst]), range(0, 3000), range(1, 50), integer()},
            begin
                S = #{shape => Shape, n => N, time => T, rate => max(1, N) / T,
                      spread => T / 4, pinch => float(T)},
                {Q, _} = riarc_bench_shape:order(S, seeded(Seed)),
                lists:sum(Q) =:= N andalso length(Q) =:= riarc_bench_shape:time_units(S)
            end).

order_sums_to_n_test() ->
    ?assert(riarc_test_tier:quickcheck(prop_order_sums_to_n(), {50, 150})).

params(Extra) ->
    {ok, P} = riarc_bench_model:new(maps:merge(#{shape => pulse, workers => 3000, requests => 100}, Extra)),
    P.

%% Same seed, same model; another seed, another model.
seed_reproduces_model_test() ->
    P = params(#{seed => 42}),
    M1 = riarc_bench_model:build(P),
    ?assertEqual(M1, riarc_bench_model:build(P)),
    ?assertNotEqual(M1, riarc_bench_model:build(params(#{seed => 43}))),
    %% The streams are independent: Pr(send) does not change the model.
    ?assertEqual(M1, riarc_bench_model:build(params(#{seed => 42, psend => 0.3}))).

%% Batches ~ Normal(w, 0.02 w), at least 1.
batch_sizes_test() ->
    #{batches := B} = riarc_bench_model:build(params(#{})),
    ?assertEqual(3000, length(B)),
    {Mean, Sd} = riarc_bench_stats:mean_sd(B),
    ?assert(abs(Mean - 100) < 0.2),
    ?assert(abs(Sd - 2) < 0.2),
    #{batches := Small} = riarc_bench_model:build(params(#{requests => 1})),
    ?assert(lists:all(fun(X) -> X >= 1 end, Small)).

defaults_test() ->
    P = params(#{time => 100}),
    ?assertEqual({0.9, 0.9, 1000, 25.0}, {maps:get(psend, P), maps:get(precv, P),
                                          maps:get(period, P), maps:get(spread, P)}),
    {ok, S} = riarc_bench_model:new(#{shape => steady, workers => 500000, requests => 100, rate => 5000}),
    ?assertEqual(100, maps:get(time, S)),
    {ok, B} = riarc_bench_model:new(#{shape => burst, workers => 10, requests => 1, time => 100}),
    ?assertEqual(100.0, maps:get(pinch, B)).

impossible_params_test_() ->
    Base = #{shape => steady, workers => 10, requests => 5},
    Bad = [{workers, -1}, {workers, 0}, {requests, 0}, {psend, 1.5}, {precv, -0.1},
           {psend, 0}, {shape, square}, {period, 0}, {rate, -3}, {time, 2.5},
           {instrumentation, magic}],
    [{lists:flatten(io_lib:format("~p", [KV])),
      fun() ->
              {error, {riarc_bench_model, R}} = riarc_bench_model:new(maps:put(K, V, Base)),
              ?assertMatch({bad_param, K, V, _}, R),
              ?assert(is_list(riarc_bench_model:format_error(R)))
      end} || {K, V} = KV <- Bad]
        ++ [?_assertMatch({error, {riarc_bench_model, {missing_param, workers}}},
                          riarc_bench_model:new(maps:remove(workers, Base)))].
