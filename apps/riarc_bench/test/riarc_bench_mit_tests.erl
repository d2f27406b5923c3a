%% Tests of the MIT case study (004 §4.2): the weighted Welford accumulator against values
%% computed by hand and against a direct two-pass computation over the pooled data
%% (unit test and PropEr), and a run of the load driver under the `mit' set-up.
-module(riarc_bench_mit_tests).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

close(A, B, Scale) -> abs(A - B) =< 1.0e-9 * max(1.0, Scale).

%% Direct computation: mean and (n - 1) variance of everything at once.
direct(Xs) ->
    N = length(Xs),
    M = lists:sum(Xs) / N,
    {M, case N of 1 -> 0.0; _ -> lists:sum([(X - M) * (X - M) || X <- Xs]) / (N - 1) end}.

%% By hand: worker A saw idle times 1, 2, 3 (mean 2), worker B 10 (mean 10). Pooled:
%% mean 16 / 4 = 4, squared deviations 9 + 4 + 1 + 36 = 50, variance 50 / 3. An
%% unweighted mean of the workers' means would say 6.
hand_computed_test() ->
    A = riarc_bench_mit:of_list([1, 2, 3]),
    B = riarc_bench_mit:of_list([10]),
    M = riarc_bench_mit:merge(A, B),
    ?assertEqual(4.0, riarc_bench_mit:weight(M)),
    ?assert(close(riarc_bench_mit:mean(M), 4.0, 1)),
    ?assert(close(riarc_bench_mit:variance(M), 50 / 3, 1)),
    %% West's weighted update with the workers' means and counts gives the same mean.
    W = riarc_bench_mit:add(10.0, 1, riarc_bench_mit:add(2.0, 3, riarc_bench_mit:new())),
    ?assert(close(riarc_bench_mit:mean(W), 4.0, 1)),
    %% Merging with nothing changes nothing.
    ?assertEqual(riarc_bench_mit:mean(A), riarc_bench_mit:mean(riarc_bench_mit:merge(riarc_bench_mit:new(), A))),
    ?assertEqual(0.0, riarc_bench_mit:variance(riarc_bench_mit:of_list([5]))).

%% Per-worker lists of idle times, merged across workers in any order, give the pooled
%% mean and variance.
prop_merge_equals_pooled() ->
    ?FORALL(Workers, non_empty(list(non_empty(list(float(0.0, 1.0e3))))),
            begin
                Accs = [riarc_bench_mit:of_list(Xs) || Xs <- Workers],
                Merged = lists:foldl(fun riarc_bench_mit:merge/2, riarc_bench_mit:new(), Accs),
                Reversed = lists:foldl(fun riarc_bench_mit:merge/2, riarc_bench_mit:new(), lists:reverse(Accs)),
                Pooled = lists:append(Workers),
                {M, V} = direct(Pooled),
                close(riarc_bench_mit:mean(Merged), M, 1.0e3)
                    andalso close(riarc_bench_mit:variance(Merged), V, 1.0e6)
                    andalso close(riarc_bench_mit:mean(Reversed), M, 1.0e3)
                    andalso riarc_bench_mit:weight(Merged) == length(Pooled)
            end).

merge_property_test_() ->
    {timeout, 60,
     fun() ->
             ?assert(riarc_test_tier:quickcheck(prop_merge_equals_pooled(), {100, 300},
                                                [{seed, {4, 2, 36}}, {to_file, user}]))
     end}.

%% Under the load driver: every worker reports, and each saw one idle period per message
%% it took (its requests and the term).
mit_run_test_() ->
    {timeout, 60,
     fun() ->
             Dir = riarc_test_tmp:dir("riarc_bench_tests/mit"),
             {ok, S} = riarc_bench_run:run(#{shape => pulse, workers => 300, requests => 10, time => 3,
                                             period => 10, instrumentation => mit}, #{out => Dir}),
             ?assertEqual({300, 0}, {maps:get(ended, S), maps:get(ack_errors, S)}),
             ?assertEqual(300, maps:get(mit_workers, S)),
             ?assertEqual(maps:get(batch_total, S) + 300, maps:get(mit_periods, S)),
             ?assert(maps:get(mit_mean_ms, S) >= 0),
             ?assertEqual(0, riarc_bench_run:failed_verdicts(S)),
             {ok, Sum} = file:read_file(filename:join(Dir, "summary.csv")),
             [Header | _] = binary:split(Sum, <<"\n">>),
             ?assertNotEqual(nomatch, binary:match(Header, <<"mit_mean_ms">>))
     end}.
