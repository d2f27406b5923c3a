%% Tests of whole runs (the master-worker system, collector and files), the monitors,
%% the CLI's refusal of impossible input, and the experiment harness (config checking,
%% the CV procedure, one tiny experiment in peer VMs).
-module(riarc_bench_run_tests).

-include_lib("eunit/include/eunit.hrl").

tmp_dir(Name) -> riarc_test_tmp:dir("riarc_bench_run_tests/" ++ Name).

%% n = 2000: every request is acknowledged exactly once and every worker terminates.
%% Termination is observed with monitors (a dead worker answers `noproc'), never by sleeping.
run_2000_workers_test_() ->
    {timeout, 60,
     fun() ->
             Params = #{shape => burst, workers => 2000, requests => 10, time => 5, period => 10,
                        interval => 20, seed => 7},
             {ok, S} = riarc_bench_run:run(Params, #{out => tmp_dir("run2000"), keep_pids => true}),
             Batches = maps:get(batches, riarc_bench_model:build(element(2, riarc_bench_model:new(Params)))),
             ?assertEqual(2000, maps:get(created, S)),
             ?assertEqual(2000, maps:get(ended, S)),
             ?assertEqual(0, maps:get(ack_errors, S)),
             ?assertEqual(lists:sum(Batches), maps:get(requests_sent, S)),
             ?assertEqual(lists:sum(Batches), maps:get(acks, S)),
             %% chunk + ack per request, term + end per worker
             ?assertEqual(2 * lists:sum(Batches) + 2 * 2000, maps:get(messages, S)),
             Pids = maps:get(pids, S),
             ?assertEqual(2000, length(lists:usort(Pids))),
             Refs = [monitor(process, P) || P <- Pids],
             [receive {'DOWN', R, process, _, Why} -> ?assert(Why =:= noproc orelse Why =:= normal) end
              || R <- Refs],
             ?assert(maps:get(rt_count, S) > 0),
             ?assert(maps:get(mrt_p50_ms, S) =< maps:get(mrt_p99_ms, S)),
             ?assert(maps:get(mrt_p99_ms, S) =< maps:get(mrt_max_ms, S))
     end}.

%% The run's files: a summary row with every column, a time series with samples.
run_files_test() ->
    Dir = tmp_dir("files"),
    {ok, _} = riarc_bench_run:run(#{shape => steady, workers => 300, requests => 20, rate => 100,
                                    period => 20, interval => 10}, #{out => Dir}),
    {ok, Sum} = file:read_file(filename:join(Dir, "summary.csv")),
    [Header, Row] = binary:split(Sum, <<"\n">>, [global, trim_all]),
    Cols = binary:split(Header, <<",">>, [global]),
    ?assertEqual(length(riarc_bench_run:summary_columns()), length(Cols)),
    ?assertEqual(length(Cols), length(binary:split(Row, <<",">>, [global]))),
    {ok, Ts} = file:read_file(filename:join(Dir, "timeseries.csv")),
    [TsHeader | Samples] = binary:split(Ts, <<"\n">>, [global, trim_all]),
    ?assertEqual(length(riarc_bench_collector:columns()),
                 length(binary:split(TsHeader, <<",">>, [global]))),
    ?assert(length(Samples) >= 1).

%% Low probabilities still complete (slowly reacting master).
low_probabilities_test() ->
    {ok, S} = riarc_bench_run:run(#{shape => pulse, workers => 200, requests => 10, time => 4,
                                    period => 5, psend => 0.1, precv => 0.1},
                                  #{out => tmp_dir("lowp")}),
    ?assertEqual({200, 0}, {maps:get(ended, S), maps:get(ack_errors, S)}).

%% The monitors accept a correct trace and reject an out-of-order one.
monitor_test() ->
    Spec = riarc_bench_monitor:spec(),
    Feed = fun(E, M) when is_function(M) -> M(E); (_, V) -> V end,
    Msg = fun(Tag, R) -> {self(), {Tag, {1, R, 2}}, none} end,
    {ok, W} = Spec({riarc_bench_worker, init, [self(), 1, 2]}),
    Good = [{recv, self(), Msg(chunk, 1)}, {recv, self(), Msg(chunk, 2)},
            {recv, self(), Msg(term, 2)}, {exit, self(), normal}],
    ?assertEqual(accept, lists:foldl(Feed, W, Good)),
    ?assertEqual(reject, lists:foldl(Feed, W, [{recv, self(), Msg(chunk, 2)}])),
    {ok, M} = Spec({riarc_bench_master, start, [#{}]}),
    Master = [{spawn, self(), self(), {riarc_bench_worker, init, [self(), 1, 2]}},
              {recv, self(), Msg(ack, 1)}, {recv, self(), Msg(ack, 2)},
              {recv, self(), Msg('end', 2)}, {exit, self(), normal}],
    ?assertEqual(accept, lists:foldl(Feed, M, Master)),
    ?assertEqual(undefined, Spec({lists, seq, [1, 2]})).

%% Every monitored set-up (000 fig. 1a-c) runs the same system to completion with the
%% same monitors: the master and each worker get a monitor; with the soundness monitors
%% every one accepts, with none (instrumentation alone) every one ends without a verdict.
setups_test_() ->
    [{lists:flatten(io_lib:format("~s, monitors ~s", [I, M])),
      {timeout, 60, fun() -> setup_case(I, M) end}}
     || I <- [riarc, riarc_inline, centralised, inline], M <- [soundness, none]].

setup_case(I, M) ->
    {ok, S} = riarc_bench_run:run(#{shape => burst, workers => 100, requests => 10, time => 2,
                                    period => 10, instrumentation => I, monitors => M,
                                    cost_us => 5},
                                  #{out => tmp_dir(atom_to_list(I) ++ "-" ++ atom_to_list(M))}),
    ?assertEqual({100, 0}, {maps:get(ended, S), maps:get(ack_errors, S)}),
    ?assertEqual(101, maps:get(monitored, S)),
    ?assertEqual(0, riarc_bench_run:failed_verdicts(S)),
    case M of
        soundness -> ?assertEqual(101, maps:get(accepted, S));
        none -> ?assertEqual(101, maps:get(inconclusive, S))
    end.

%% The inline set-up puts the original modules back afterwards.
inline_restores_modules_test_() ->
    {timeout, 60,
     fun() ->
             Before = [M:module_info(md5) || M <- [riarc_bench_master, riarc_bench_worker]],
             {ok, _} = riarc_bench_run:run(#{shape => steady, workers => 20, requests => 5,
                                             rate => 10, period => 5, instrumentation => inline},
                                           #{out => tmp_dir("inline-restore")}),
             ?assertEqual(Before, [M:module_info(md5) || M <- [riarc_bench_master, riarc_bench_worker]])
     end}.

%% Which verdicts fail a run: anything but accept under the soundness monitors, anything
%% but none under monitors none; the baseline has nothing to fail.
failed_verdicts_test() ->
    S = #{instrumentation => riarc, monitors => soundness, monitored => 5, accepted => 4,
          inconclusive => 0},
    ?assertEqual(1, riarc_bench_run:failed_verdicts(S)),
    ?assertEqual(0, riarc_bench_run:failed_verdicts(S#{accepted := 5})),
    ?assertEqual(5, riarc_bench_run:failed_verdicts(S#{monitors := none})),
    ?assertEqual(0, riarc_bench_run:failed_verdicts(S#{monitors := none, inconclusive := 5})),
    ?assertEqual(0, riarc_bench_run:failed_verdicts(#{instrumentation => baseline})),
    Sentence = riarc_bench_experiment:format_error(
                 {wrong_verdicts, [{"steady-n10-S2-seed1-riarc-soundness5us", 2, 3}], "r.html"}),
    ?assertMatch({match, _}, re:run(Sentence, "rep 2: 3")).

%% The monitors the set-ups share: `none' never decides, the cost is spent on every event
%% and does not change a verdict.
monitor_options_test() ->
    Feed = fun(E, M) when is_function(M) -> M(E); (_, V) -> V end,
    Msg = fun(Tag, R) -> {self(), {Tag, {1, R, 1}}, none} end,
    Trace = [{recv, self(), Msg(chunk, 1)}, {recv, self(), Msg(term, 1)}, {exit, self(), normal}],
    WorkerMfa = {riarc_bench_worker, init, [self(), 1, 1]},
    {ok, Idle} = (riarc_bench_monitor:spec(#{monitors => none}))(WorkerMfa),
    ?assert(is_function(lists:foldl(Feed, Idle, Trace), 1)),
    {ok, Costly} = (riarc_bench_monitor:spec(#{monitors => soundness, cost_us => 200}))(WorkerMfa),
    T0 = erlang:monotonic_time(microsecond),
    ?assertEqual(accept, lists:foldl(Feed, Costly, Trace)),
    ?assert(erlang:monotonic_time(microsecond) - T0 >= 3 * 200),
    ?assertEqual(undefined, (riarc_bench_monitor:spec(#{monitors => none}))({lists, seq, [1, 2]})).

%%% CLI ------------------------------------------------------------------------------------

write_config(Name, Text) ->
    Path = filename:join(tmp_dir("cfg"), Name),
    ok = file:write_file(Path, Text),
    Path.

%% Runs the experiment configured by Text, its output in a directory of its own, Name;
%% that directory and the report.
experiment(Name, Text) ->
    Out = tmp_dir(Name),
    {ok, Report} = riarc_bench_experiment:run(write_config(Name ++ ".config", Text), #{out => Out}),
    {Out, Report}.

config_errors_test_() ->
    Bad = [{"n below 1", "{shapes, [steady]}. {workers, [0]}. {params, #{requests => 5}}."},
           {"bad probability", "{shapes, [steady]}. {workers, [10]}. {params, #{requests => 5, psend => 2}}."},
           {"unknown key", "{shapes, [steady]}. {workers, [10]}. {colour, red}."},
           {"bad range", "{shapes, [steady]}. {workers, {10, 5, 1}}. {params, #{requests => 5}}."},
           {"bad cv", "{shapes, [steady]}. {workers, [10]}. {params, #{requests => 5}}. "
                      "{repetitions, {cv, #{m => 1}}}."},
           {"syntax", "{shapes, [steady]"},
           {"bad process limit", "{shapes, [steady]}. {workers, [10]}. {params, #{requests => 5}}. "
                                 "{process_limit, 10}."}],
    Tags = [bench, bench, config_term, config_value, config_value, config_syntax, config_value],
    [{Name, fun() ->
                    {error, {riarc_bench_experiment, R}} =
                        riarc_bench_experiment:load(write_config("bad.config", Text)),
                    ?assertEqual(Tag, element(1, R)),
                    ?assert(io_lib:char_list(riarc_bench_experiment:format_error(R)))
            end} || {{Name, Text}, Tag} <- lists:zip(Bad, Tags)].

config_expands_test() ->
    {ok, Cfg} = riarc_bench_experiment:load(
                  write_config("ok.config", "{shapes, [steady, burst]}. {workers, {100, 300, 100}}. "
                                            "{seeds, [1, 2]}. {params, #{requests => 5}}.")),
    Benches = riarc_bench_experiment:benchmarks(Cfg),
    ?assertEqual(2 * 3 * 2, length(Benches)),
    ?assertNot(is_map_key(process_limit, Cfg)),
    {ok, #{process_limit := 1048576}} = riarc_bench_experiment:load(
        write_config("ok.config", "{shapes, [steady]}. {workers, [10]}. {params, #{requests => 5}}. "
                                  "{process_limit, 1048576}.")),
    ?assertEqual(12, length(lists:usort([riarc_bench_experiment:bench_id(B) || B <- Benches]))).

%% App. C.5.1: with a metric whose CV keeps changing by more than epsilon, more runs are
%% made until `max'; with a steady one, the first m is chosen.
cv_procedure_test() ->
    Steady = fun(I) -> {ok, run_metrics(10 + I rem 2)} end,
    ?assertMatch({ok, Runs, 3, true} when length(Runs) =:= 4,
                 riarc_bench_experiment:repetitions({cv, #{m => 3, b => 1, epsilon => 0.05, max => 10}}, Steady)),
    Wild = fun(I) -> {ok, run_metrics(math:pow(10, I))} end,
    ?assertMatch({ok, Runs, 6, false} when length(Runs) =:= 6,
                 riarc_bench_experiment:repetitions({cv, #{m => 2, b => 2, epsilon => 0.01, max => 6}}, Wild)),
    ?assertMatch({ok, [_, _], 2, true}, riarc_bench_experiment:repetitions(2, Steady)).

run_metrics(V) -> maps:from_list([{K, V} || K <- riarc_bench_experiment:cv_metrics()]).

%% A whole (tiny) experiment: fresh peer VMs, CSVs and an HTML report.
tiny_experiment_test_() ->
    {timeout, 120,
     fun() ->
             {Out, Report} =
                 experiment("tiny", "{name, \"tiny\"}. {shapes, [steady, pulse]}. {workers, [100, 200]}. "
                                    "{repetitions, 2}. {params, #{requests => 5, time => 2, period => 5, interval => 20}}."),
             ?assert(filelib:is_regular(Report)),
             {ok, Agg} = file:read_file(filename:join(Out, "aggregate.csv")),
             ?assertEqual(1 + 4, length(binary:split(Agg, <<"\n">>, [global, trim_all]))),
             {ok, Runs} = file:read_file(filename:join(Out, "runs.csv")),
             ?assertEqual(1 + 8, length(binary:split(Runs, <<"\n">>, [global, trim_all]))),
             %% The report: real tables, every image drawn, two runs said to be too few.
             Html = riarc_bench_report_check:tables(riarc_bench_report_check:html(Report)),
             ?assertNotEqual(nomatch, binary:match(Html, <<"class=\"small\">too few<">>)),
             ?assertEqual(nomatch, binary:match(Html, <<"n too small">>)),
             ?assertEqual(nomatch, binary:match(Html, <<"&plusmn; 0.000">>)),
             ?assertEqual(nomatch, binary:match(Html, <<"CV settled">>)),
             %% Two n: the metric-against-n plots exist; bars and boxes too.
             ?assert(filelib:is_regular(filename:join([Out, "plots", "n-mrt_mean_ms.svg"]))),
             ?assert(filelib:is_regular(filename:join([Out, "plots", "bars-mrt_mean_ms.svg"]))),
             ?assert(filelib:is_regular(filename:join([Out, "plots", "box-mrt_mean_ms.svg"]))),
             %% A baseline of this experiment, compared with itself: nothing significant,
             %% and two runs are too few for an interval.
             {ok, Saved} = riarc_bench_experiment:save_baseline(Out, "tiny", #{store => filename:join(Out, "bl")}),
             ?assert(filelib:is_regular(filename:join(Saved, "runs.csv"))),
             {ok, #{html := Cmp, significant := 0, rows := Rows}} =
                 riarc_bench_experiment:compare_baseline(Out, "tiny", #{store => filename:join(Out, "bl")}),
             ?assertEqual(4 * 6, length(Rows)),
             ?assertNotEqual(nomatch, binary:match(riarc_bench_report_check:tables(riarc_bench_report_check:html(Cmp)),
                                                  <<"class=\"small\"">>)),
             {error, {riarc_bench_experiment, E}} = riarc_bench_experiment:compare_baseline(Out, "absent"),
             ?assertMatch({match, _}, re:run(riarc_bench_experiment:format_error(E), "save one")),
             {error, {riarc_bench_experiment, {riarc_bench_baseline, {bad_name, "../x"}} = E2}} =
                 riarc_bench_experiment:save_baseline(Out, "../x"),
             ?assert(io_lib:char_list(riarc_bench_experiment:format_error(E2)))
     end}.

%% One n only: no plot against n (its points would stack in one column).
single_n_experiment_test_() ->
    {timeout, 120,
     fun() ->
             {Out, Report} =
                 experiment("single", "{name, \"single\"}. {shapes, [steady]}. {workers, [100]}. "
                                      "{instrumentation, [baseline, tracing]}. {repetitions, 3}. "
                                      "{params, #{requests => 5, time => 2, period => 5, interval => 20}}."),
             Html = riarc_bench_report_check:tables(riarc_bench_report_check:html(Report)),
             ?assertEqual([], filelib:wildcard(filename:join([Out, "plots", "n-*.svg"]))),
             ?assertEqual(nomatch, binary:match(Html, <<"plots/n-">>)),
             %% Three runs: intervals, and a comparison with the baseline.
             ?assertEqual(nomatch, binary:match(Html, <<"class=\"small\"">>)),
             ?assertNotEqual(nomatch, binary:match(Html, <<"mean response time x unmonitored">>))
     end}.

%% A run whose VM passes the memory ceiling is killed and recorded as crashed, and the
%% experiment goes on to the next benchmark. The first benchmark (burst, n = 20000 created
%% within 0.1 s) holds well over 64 MB; the second (n = 50) stays far below.
memory_ceiling_test_() ->
    {timeout, 120,
     fun() ->
             {Out, _Report} =
                 experiment("ceiling", "{name, \"ceiling\"}. {shapes, [burst]}. {workers, [20000, 50]}. "
                                       "{repetitions, 2}. {memory_limit, 64}. "
                                       "{params, #{requests => 100, time => 2, period => 50, interval => 20}}."),
             {ok, [Big, Small]} = riarc_bench_study:read_aggregate(filename:join(Out, "aggregate.csv")),
             ?assertEqual({20000, "memory_limit", 0}, {maps:get(workers, Big), maps:get(crashed, Big),
                                                       maps:get(reps, Big)}),
             ?assertEqual({50, "", 2}, {maps:get(workers, Small), maps:get(crashed, Small),
                                        maps:get(reps, Small)})
     end}.
