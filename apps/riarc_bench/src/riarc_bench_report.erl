%% @doc The HTML report of an experiment, with plots drawn by gnuplot: each metric
%% against the number of workers (one line per shape, error bars = sd over repetitions),
%% the time series of the largest benchmark of each shape, and the realism check of
%% 004 §4.1 (response-time histogram with the normal, log-normal and gamma MLE fits and
%% their Kolmogorov-Smirnov statistics).
%%
%% It only reads what `riarc_bench_experiment' gathered and the runs' CSV files, so a
%% report can be redrawn without rerunning anything.
%%
%% ```
%% 1> riarc_bench_report:write(Cfg, Results, "bench-results/quick", #{elapsed_ms => 61000}).
%% {ok,"bench-results/quick/report.html"}
%% '''
-module(riarc_bench_report).

-export([write/4, histogram/2]).

%% {Metric, axis label, scale factor applied to the value}
-define(METRIC_PLOTS,
        [{mrt_mean_ms, "mean response time (ms)", 1},
         {mrt_p99_ms, "p99 response time (ms)", 1},
         {mem_mean, "mean memory, erlang:memory(total) (MB)", 1.0e-6},
         {sched_mean, "mean scheduler utilisation (%)", 100},
         {duration_ms, "running time (ms)", 1},
         {throughput, "throughput (messages/s)", 1}]).

%% {Column in timeseries.csv, name, label, scale}
-define(TS_PLOTS,
        [{5, created, "workers created", 1},
         {2, sched_util, "scheduler utilisation (%)", 100},
         {3, mem_total, "memory (MB)", 1.0e-6},
         {10, mrt_interval_ms, "MRT in the sampling window (ms)", 1}]).

-spec write(riarc_bench_experiment:config(), [map()], file:filename(), map()) ->
    {ok, file:filename()} | {error, term()}.
write(Cfg, Results, Out, Info) ->
    Plots = filename:join(Out, "plots"),
    ok = filelib:ensure_path(Plots),
    %% A benchmark whose every run crashed has no point to draw (the paper's missing bars).
    Series = series([R || R = #{runs := [_ | _]} <- Results], Cfg),
    ok = write_series_data(Plots, Series),
    Fits = [write_fit_data(Plots, Label, largest(Rs)) || {Label, Rs} <- Series],
    Script = gnuplot_script(Out, Series),
    Gnuplot = run_gnuplot(filename:join(Plots, "plots.gp"), Script),
    Html = html(Cfg, Results, Series, Fits, Gnuplot, Info),
    Path = filename:join(Out, "report.html"),
    case file:write_file(Path, Html) of
        ok -> {ok, Path};
        {error, Reason} -> {error, {write, Path, Reason}}
    end.

%% Benchmarks grouped into lines: by shape, and by whichever of instrumentation,
%% schedulers and seed take more than one value in the config.
series(Results, Cfg) ->
    Varying = [K || {K, CfgKey} <- [{instrumentation, instrumentation},
                                    {monitors, monitors}, {schedulers, schedulers},
                                    {seed, seeds}],
                    length(maps:get(CfgKey, Cfg, [x])) > 1],
    Variant = case length(maps:get(variants, Cfg)) > 1 of
                  true -> fun(B) -> riarc_bench_experiment:variant_label(maps:get(variant, B, #{})) end;
                  false -> fun(_) -> "" end
              end,
    Label = fun(#{bench := B}) ->
                    string:join([atom_to_list(maps:get(shape, B))
                                 | [label_part(K, maps:get(K, B)) || K <- Varying]], "-") ++ Variant(B)
            end,
    Groups = lists:foldl(fun(R, Acc) -> maps:update_with(Label(R), fun(L) -> [R | L] end, [R], Acc) end,
                         #{}, Results),
    [{L, lists:sort(fun(A, B) -> workers(A) =< workers(B) end, Rs)} || {L, Rs} <- lists:sort(maps:to_list(Groups))].

label_part(schedulers, K) -> "S" ++ integer_to_list(K);
label_part(monitors, none) -> "none";
label_part(monitors, M) -> atom_to_list(M);
label_part(seed, S) -> "seed" ++ integer_to_list(S);
label_part(_, V) -> atom_to_list(V).

workers(#{bench := #{workers := N}}) -> N.

largest(Rs) -> lists:last(Rs).

%%% Data files ---------------------------------------------------------------------------

write_series_data(Plots, Series) ->
    lists:foreach(
      fun({Label, Rs}) ->
              Rows = [[workers(R) | lists:append([mean_sd(M, R) || {M, _, _} <- ?METRIC_PLOTS])] || R <- Rs],
              write_dat(filename:join(Plots, Label ++ ".dat"), Rows)
      end, Series).

%% gnuplot's default data format: space-separated columns.
write_dat(Path, Rows) ->
    ok = file:write_file(Path, [[lists:join($\s, [riarc_bench_writer:field(F) || F <- Row]), $\n]
                                || Row <- Rows]).

mean_sd(M, #{runs := Runs}) ->
    {Mean, Sd} = riarc_bench_stats:mean_sd([maps:get(M, R) || R <- Runs]),
    [Mean, Sd].

%% Histogram of the response-time sample of the first repetition, with the densities of
%% the three fitted distributions at the bin centres.
write_fit_data(Plots, Label, #{id := Id, runs := [Run | _]}) ->
    Sample = read_sample(Run),
    Fits = maps:get(fits, Run, #{}),
    Bins = histogram(Sample, 40),
    Rows = [[X, D | [pdf(Name, Fits, X) || Name <- [normal, lognormal, gamma]]] || {X, D} <- Bins],
    write_dat(filename:join(Plots, "fit-" ++ Label ++ ".dat"), Rows),
    {Label, Id, Fits, length(Sample)}.

read_sample(#{out := Dir}) -> read_sample_file(filename:join(Dir, "rt_sample.csv"));
read_sample(_) -> [].

read_sample_file(Path) ->
    case file:read_file(Path) of
        {ok, Bin} ->
            [_Header | Lines] = binary:split(Bin, <<"\n">>, [global, trim_all]),
            [binary_to_float(L) || L <- Lines];
        {error, _} -> []
    end.

pdf(Name, Fits, X) ->
    case Fits of
        #{Name := #{dist := D}} -> riarc_bench_stats:pdf(D, X);
        _ -> 0.0
    end.

%% Bins up to the 99th percentile, so one extreme value does not squash the picture.
-spec histogram([float()], pos_integer()) -> [{float(), float()}].
histogram([], _Bins) -> [];
histogram(Xs, Bins) ->
    Sorted = lists:sort(Xs),
    N = length(Sorted),
    Hi = lists:nth(max(1, ceil(0.99 * N)), Sorted),
    W = case Hi > 0 of true -> Hi / Bins; false -> 1.0 end,
    Counts = lists:foldl(fun(X, Acc) when X =< Hi ->
                                 I = min(Bins - 1, trunc(X / W)),
                                 maps:update_with(I, fun(C) -> C + 1 end, 1, Acc);
                            (_, Acc) -> Acc
                         end, #{}, Sorted),
    [{(I + 0.5) * W, maps:get(I, Counts, 0) / (N * W)} || I <- lists:seq(0, Bins - 1)].

%%% gnuplot ------------------------------------------------------------------------------

gnuplot_script(Out, Series) ->
    Plots = filename:join(Out, "plots"),
    Head = ["set terminal pngcairo size 720,440 font 'sans,10'\n",
            "set grid\nset key top left\nset datafile separator whitespace\n",
            %% Room at the ends, or the error bars of the first and last n are cut off.
            "set offsets graph 0.05, graph 0.05, graph 0.05, 0\n"],
    Metric = [metric_plot(Plots, Series, I, M, Label, Scale)
              || {I, {M, Label, Scale}} <- lists:zip(lists:seq(0, length(?METRIC_PLOTS) - 1), ?METRIC_PLOTS)],
    Ts = [ts_plot(Out, Plots, Series, Col, Name, Label, Scale) || {Col, Name, Label, Scale} <- ?TS_PLOTS],
    Fit = [fit_plot(Plots, Label) || {Label, _} <- Series],
    [Head, Metric, Ts, Fit].

metric_plot(Plots, Series, I, M, Label, Scale) ->
    MeanCol = 2 + 2 * I,
    Lines = [io_lib:format("'~ts' using 1:($~b*~p):($~b*~p) with yerrorlines title '~s'",
                           [filename:join(Plots, L ++ ".dat"), MeanCol, Scale, MeanCol + 1, Scale, L])
             || {L, _} <- Series],
    io_lib:format("set output '~ts'\nset xlabel 'workers (n)'\nset ylabel '~s'\n"
                  "set title '~s against workers'\nplot ~ts\n",
                  [filename:join(Plots, atom_to_list(M) ++ ".png"), Label, Label, lists:join(", ", Lines)]).

ts_plot(Out, Plots, Series, Col, Name, Label, Scale) ->
    Lines = [io_lib:format("'~ts' using ($1/1000):($~b*~p) every ::1 with lines title '~s n=~b'",
                           [filename:join([Out, "runs", Id, "rep1", "timeseries.csv"]), Col, Scale, L, N])
             || {L, Rs} <- Series, #{id := Id, bench := #{workers := N}} <- [largest(Rs)]],
    io_lib:format("set output '~ts'\nset datafile separator ','\nset xrange [0:*]\nset xlabel 'time (s)'\n"
                  "set ylabel '~s'\nset title '~s over time (largest n, first repetition)'\nplot ~ts\n"
                  "set datafile separator whitespace\nset autoscale x\n",
                  [filename:join(Plots, "ts_" ++ atom_to_list(Name) ++ ".png"), Label, Label,
                   lists:join(", ", Lines)]).

fit_plot(Plots, Label) ->
    Dat = filename:join(Plots, "fit-" ++ Label ++ ".dat"),
    io_lib:format("set output '~ts'\nset xrange [0:*]\nset xlabel 'response time (ms)'\nset ylabel 'density'\n"
                  "set title 'Response times, ~s: MLE fits'\nset key top right\nset style fill solid 0.3\n"
                  "plot '~ts' using 1:2 with boxes title 'sample', '' using 1:3 with lines lw 2 title 'normal', "
                  "'' using 1:4 with lines lw 2 title 'log-normal', '' using 1:5 with lines lw 2 title 'gamma'\n"
                  "set key top left\nset style fill empty\nset autoscale x\n",
                  [filename:join(Plots, "fit-" ++ Label ++ ".png"), Label, Dat]).

run_gnuplot(ScriptPath, Script) ->
    ok = file:write_file(ScriptPath, Script),
    case os:find_executable("gnuplot") of
        false -> {error, "gnuplot is not installed: no plots were drawn"};
        Exe ->
            Port = open_port({spawn_executable, Exe}, [{args, [ScriptPath]}, exit_status,
                                                       stderr_to_stdout, binary]),
            collect(Port, [])
    end.

collect(Port, Acc) ->
    receive
        {Port, {data, D}} -> collect(Port, [D | Acc]);
        {Port, {exit_status, 0}} -> {ok, iolist_to_binary(lists:reverse(Acc))};
        {Port, {exit_status, S}} ->
            {error, io_lib:format("gnuplot exited with ~b: ~ts", [S, lists:reverse(Acc)])}
    end.

%%% HTML ---------------------------------------------------------------------------------

html(Cfg, Results, Series, Fits, Gnuplot, Info) ->
    ["<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>riarc bench: ",
     esc(maps:get(name, Cfg)), "</title>\n<style>body{font-family:sans-serif;max-width:1200px;margin:auto}"
     "table{border-collapse:collapse;font-size:90%}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
     "img{max-width:49%}</style></head><body>\n",
     "<h1>Experiment ", esc(maps:get(name, Cfg)), "</h1>\n",
     setup_section(Cfg, Results, Info),
     gnuplot_note(Gnuplot),
     aggregate_table(Results),
     "<h2>Metrics against workers</h2>\n<p>Mean over repetitions; error bars: one standard deviation.</p>\n",
     [img(atom_to_list(M) ++ ".png") || {M, _, _} <- ?METRIC_PLOTS],
     "<h2>Time series</h2>\n<p>First repetition of the largest benchmark of each line, one point per collector sample.</p>\n",
     [img("ts_" ++ atom_to_list(N) ++ ".png") || {_, N, _, _} <- ?TS_PLOTS],
     fits_section(Series, Fits),
     "<h2>Files</h2><p><a href=\"aggregate.csv\">aggregate.csv</a>, <a href=\"runs.csv\">runs.csv</a>, "
     "runs/&lt;benchmark&gt;/rep&lt;i&gt;/{summary,timeseries,rt_sample}.csv</p>\n</body></html>\n"].

setup_section(Cfg, Results, #{elapsed_ms := Elapsed, loadavg := {Before, After}}) ->
    Config = case file:read_file(maps:get(file, Cfg)) of
                 {ok, Bin} -> Bin;
                 {error, _} -> <<>>
             end,
    Runs = lists:sum([length(Rs) || #{runs := Rs} <- Results]),
    io_lib:format("<h2>Set-up</h2>\n<p>~b benchmarks, ~b runs, each in a fresh VM, in ~.1f s. "
                  "Machine: ~b logical processors, Erlang/OTP ~s (ERTS ~s); report written ~s UTC. "
                  "Load average (1, 5, 15 min) before: ~ts; after: ~ts.</p>\n"
                  "<p>Config <code>~ts</code>:</p><pre>~ts</pre>\n",
                  [length(Results), Runs, Elapsed / 1000, erlang:system_info(logical_processors),
                   erlang:system_info(otp_release), erlang:system_info(version), utc_now(),
                   Before, After,
                   esc(maps:get(file, Cfg)), esc(binary_to_list(Config))]).

gnuplot_note({ok, _}) -> "";
gnuplot_note({error, Why}) -> ["<p><b>Plots missing:</b> ", esc(lists:flatten(Why)), "</p>\n"].

aggregate_table(Results) ->
    Cols = [{duration_ms, "running time (ms)", 1}, {mrt_mean_ms, "MRT (ms)", 1},
            {mrt_p99_ms, "p99 (ms)", 1}, {mem_mean, "memory (MB)", 1.0e-6},
            {sched_mean, "sched. util. (%)", 100}, {throughput, "msg/s", 1}],
    Head = ["<tr><th>benchmark</th><th>runs</th><th>chosen m</th><th>CV settled</th>",
            [["<th>", L, "</th>"] || {_, L, _} <- Cols],
            [["<th>CV ", atom_to_list(M), "</th>"] || M <- riarc_bench_experiment:cv_metrics()],
            "<th>crashed</th></tr>\n"],
    Rows = [["<tr><td style=\"text-align:left\">", Id, "</td>",
             td(length(Runs)), td(Chosen), td(Conv),
             [cell(M, Scale, Runs) || {M, _, Scale} <- Cols],
             [cv_cell(M, Runs) || M <- riarc_bench_experiment:cv_metrics()],
             crashed_cell(maps:get(crashed, R, [])),
             "</tr>\n"]
            || R = #{id := Id, runs := Runs, chosen := Chosen, converged := Conv} <- Results],
    ["<h2>Results</h2>\n<p>Mean &plusmn; sd over the runs of each benchmark; CV = sd/mean "
     "(000 App. C.5.1).</p>\n<table>", Head, Rows, "</table>\n"].

cell(_M, _Scale, []) -> td("&mdash;");
cell(M, Scale, Runs) ->
    {Mean, Sd} = riarc_bench_stats:mean_sd([maps:get(M, R) * Scale || R <- Runs]),
    td(io_lib:format("~s &plusmn; ~s", [num(Mean), num(Sd)])).

cv_cell(_M, []) -> td("&mdash;");
cv_cell(M, Runs) ->
    td(io_lib:format("~.2f %", [100 * riarc_bench_stats:cv([maps:get(M, R) || R <- Runs])])).

crashed_cell([]) -> td("");
crashed_cell([#{why := Why, rep := Rep} | _]) ->
    td(io_lib:format("rep ~b: ~s", [Rep, Why])).

fits_section(Series, Fits) ->
    Rows = [["<tr><td style=\"text-align:left\">", Label, " (", Id, ")</td>", td(N),
             [td(ks_cell(D, F)) || D <- [normal, lognormal, gamma]], td(best(F)), "</tr>\n"]
            || {Label, Id, F, N} <- Fits],
    ["<h2>Realism check (004 &sect;4.1)</h2>\n<p>Normal, log-normal and gamma distributions fitted "
     "by maximum likelihood to the sampled response times of the largest benchmark of each line "
     "(first repetition); the Kolmogorov-Smirnov statistic D of each fit (smaller is better).</p>\n"
     "<table><tr><th>benchmark</th><th>sample</th><th>D normal</th><th>D log-normal</th>"
     "<th>D gamma</th><th>best</th></tr>\n", Rows, "</table>\n",
     [img("fit-" ++ Label ++ ".png") || {Label, _} <- Series]].

ks_cell(D, F) ->
    case F of
        #{D := #{ks := K}} -> io_lib:format("~.3f", [K]);
        _ -> "n/a"
    end.

best(F) when map_size(F) =:= 0 -> "n/a";
best(F) ->
    {_, Name} = lists:min([{K, N} || {N, #{ks := K}} <- maps:to_list(F)]),
    atom_to_list(Name).

img(File) -> ["<img src=\"plots/", File, "\" alt=\"", File, "\">\n"].
td(V) when is_integer(V) -> ["<td>", integer_to_list(V), "</td>"];
td(V) when is_atom(V) -> ["<td>", atom_to_list(V), "</td>"];
td(V) -> ["<td>", V, "</td>"].

num(X) when abs(X) >= 100 -> float_to_list(float(X), [{decimals, 0}]);
num(X) when abs(X) >= 1 -> float_to_list(float(X), [{decimals, 2}]);
num(X) -> float_to_list(float(X), [{decimals, 3}]).

utc_now() ->
    calendar:system_time_to_rfc3339(erlang:system_time(second), [{offset, "Z"}]).

esc(S) ->
    lists:flatmap(fun($<) -> "&lt;"; ($>) -> "&gt;"; ($&) -> "&amp;"; (C) -> [C] end, S).
