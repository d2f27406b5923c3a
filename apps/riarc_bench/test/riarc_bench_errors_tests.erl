%% The benchmark app's one error model: every clause of every module's error_reason()
%% formats to one flat, non-empty sentence in the project's style (lower case first, no
%% final full stop), including the reasons that delegate to another module.
-module(riarc_bench_errors_tests).

-include_lib("eunit/include/eunit.hrl").

%% {Module, Reason}: at least one sample of every alternative of Module:error_reason().
samples() ->
    Model = {bad_param, workers, -1, "an integer >= 1"},
    Writer = {write, "/tmp/x.csv", enospc},
    Report = {write, "/tmp/report.html", eacces},
    Peer = {timeout, 2000, 1024},
    Run = {schedulers, 64, 2},
    [{riarc_bench_model, {missing_param, workers}},
     {riarc_bench_model, Model},
     {riarc_bench_writer, {open, "/tmp/x.csv", eacces}},
     {riarc_bench_writer, Writer},
     {riarc_bench_plot, no_gnuplot},
     {riarc_bench_plot, {gnuplot, 1, <<"line 3: undefined variable\n">>}},
     {riarc_bench_report, Report},
     {riarc_bench_study, {read, "/x/aggregate.csv", enoent}},
     {riarc_bench_study, {empty, "/x/aggregate.csv"}},
     {riarc_bench_study, {out_dir, "/proc/x", eacces}},
     {riarc_bench_baseline, {bad_name, "../x"}},
     {riarc_bench_baseline, {no_runs, "/x"}},
     {riarc_bench_baseline, {no_baseline, "old", "/x/baselines/old"}},
     {riarc_bench_baseline, {mkdir, "/x/baselines/old", eacces}},
     {riarc_bench_baseline, {copy, "/x/runs.csv", enoent}},
     {riarc_bench_mit, already_running},
     {riarc_bench_mit, {master_crashed, {badarg, [{m, f, 1, []}]}}},
     {riarc_bench_peer, Peer},
     {riarc_bench_peer, {memory_limit, 64, 70000}},
     {riarc_bench_peer, {peer, error, undef}},
     {riarc_bench_peer, {peer_start, timeout}},
     {riarc_central, {central_tracer_crashed, killed}},
     {riarc_central, {timeout, 200, [self()]}},
     {riarc_central, {timeout, 200, unknown}},
     {riarc_central, {riarc, {bad_spec, 42}}},
     {riarc_inline, inline_run_active},
     {riarc_inline, {timeout, 200, [self()]}},
     {riarc_inline, {riarc, {bad_mfa, nonsense}}},
     {riarc_inline, {riarc_weave, {not_loaded, x}}},
     {riarc_bench_run, Run},
     {riarc_bench_run, {out_dir, "/proc/x", eacces}},
     {riarc_bench_run, {master_crashed, shutdown}},
     {riarc_bench_run, {monitoring, centralised, {riarc_central, {central_tracer_crashed, killed}}}},
     {riarc_bench_run, {monitoring, inline, {riarc_inline, {riarc_weave, {not_loaded, x}}}}},
     {riarc_bench_run, {monitoring, riarc, {riarc, {bad_option, events, [oops]}}}},
     {riarc_bench_run, {monitoring_crashed, riarc, error, badarg}},
     {riarc_bench_run, no_master_result},
     {riarc_bench_run, {overload, riarc, {tracers, 5, 4}}},
     {riarc_bench_run, {riarc_bench_model, Model}},
     {riarc_bench_run, {riarc_bench_writer, Writer}},
     {riarc_bench_run, {riarc_bench_mit, already_running}},
     {riarc_bench_experiment, {config_read, "/x.config", enoent}},
     {riarc_bench_experiment, {config_syntax, "/x.config", {3, erl_parse, ["syntax error before: ", "'.'"]}}},
     {riarc_bench_experiment, {config_term, {colour, red}}},
     {riarc_bench_experiment, {config_value, repetitions, 0}},
     {riarc_bench_experiment, {config_value, workers, {10, 5, 1}}},
     {riarc_bench_experiment, {config_value, shapes, undefined}},
     {riarc_bench_experiment, {config_value, timeout, -1}},
     {riarc_bench_experiment, {bench, #{shape => steady, workers => -1, seed => 1}, Model}},
     {riarc_bench_experiment, {out_dir, "/proc/x", eacces}},
     {riarc_bench_experiment, {wrong_verdicts, [{"steady-n10", 1, 2}], "/x/report.html"}},
     {riarc_bench_experiment, {wrong_verdicts_unreported, [{"steady-n10", 1, 2}], Report}},
     {riarc_bench_experiment, {riarc_bench_run, Run}},
     {riarc_bench_experiment, {riarc_bench_peer, Peer}},
     {riarc_bench_experiment, {riarc_bench_report, Report}},
     {riarc_bench_experiment, {riarc_bench_writer, Writer}},
     {riarc_bench_experiment, {riarc_bench_baseline, {no_runs, "/x"}}},
     {riarc_bench_user, {undef, {my_sys, main, 0}}},
     {riarc_bench_user, {bad_runs, 0}},
     {riarc_bench_user, {bad_timeout, 0}},
     {riarc_bench_user, {bad_memory_limit, 8}},
     {riarc_bench_user, {bad_setups, [psychic]}},
     {riarc_bench_user, {bad_args, x}},
     {riarc_bench_user, {bad_monitors, lists}},
     {riarc_bench_user, {riarc_shml, {file, "/x.prop", enoent}}},
     {riarc_bench_user, {out_dir, "/proc/x", eacces}},
     {riarc_bench_user, {timeout, 300}},
     {riarc_bench_user, {memory_limit, 8192}},
     {riarc_bench_user, {root_crashed, {badarith, []}}},
     {riarc_bench_user, {monitoring, riarc, {riarc_session, {root_tracer_down, killed}}}},
     {riarc_bench_user, {monitoring, inline, {riarc_inline, inline_run_active}}},
     {riarc_bench_user, {riarc_bench_peer, {peer_start, timeout}}},
     {riarc_bench_takeover, {file, "/x.csv", enoent}},
     {riarc_bench_takeover, {bad_row, "/x.csv", 3}}].

every_reason_formats_test_() ->
    [{lists:flatten(io_lib:format("~0tp", [E])),
      fun() ->
              S = M:format_error(R),
              ?assert(io_lib:char_list(S)),
              ?assertNotEqual("", S),
              ?assertEqual(S, lists:flatten(S)),
              %% One style: no capital opening a sentence of our own, no final full stop.
              ?assertNotEqual($., lists:last(S)),
              ?assertEqual(S, riarc:format_error(E))
      end} || E = {M, R} <- samples()].

%% The sentences of our own start in lower case (a path, a module or a number may open
%% one; a capital letter may not).
lower_case_test_() ->
    [?_assertNot(is_capital(hd(M:format_error(R)))) || {M, R} <- samples()].

is_capital(C) -> C >= $A andalso C =< $Z.

%% Every module that returns errors is sampled, with at least as many samples as
%% format_error/1 has clauses (counted in the module's abstract code), so that a clause
%% added without a sample here fails.
every_clause_sampled_test_() ->
    Modules = lists:usort([M || {M, _} <- samples()]),
    [{atom_to_list(M),
      ?_assert(length([x || {Mod, _} <- samples(), Mod =:= M]) >= format_error_clauses(M))}
     || M <- Modules].

format_error_clauses(M) ->
    {ok, {M, [{abstract_code, {raw_abstract_v1, Forms}}]}} =
        beam_lib:chunks(code:which(M), [abstract_code]),
    hd([length(Cs) || {function, _, format_error, 1, Cs} <- Forms]).
