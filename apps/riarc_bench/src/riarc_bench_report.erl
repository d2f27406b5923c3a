%% @doc The HTML report of an experiment (`report.html', one self-contained page with its
%% SVG plots in `plots/'): a reading guide, a sortable table of every benchmark (medians
%% over the repetitions with 95 % bootstrap intervals from `riarc_bench_ci', outliers
%% flagged, "n too small" below three runs, the ratio to the baseline where one ran),
%% grouped bar charts (set-up x shape) with the intervals as error bars, box plots of
%% the per-run values, metrics against n where more than one n ran, time series with
%% one fixed colour per set-up, and the realism check of 004 §4.1 (response-time
%% histogram with the normal, log-normal and gamma MLE fits and their Kolmogorov-Smirnov
%% statistics).
%%
%% It only reads what `riarc_bench_experiment' gathered and the runs' CSV files, so a
%% report can be redrawn without rerunning anything.
%%
%% ```
%% 1> riarc_bench_report:variant_label(#{psend => 0.1, precv => 0.9}).   % a benchmark's name
%% "-precv0.9-psend0.1"
%% 2> riarc_bench_report:histogram([1.0, 2.0, 2.5, 3.0, 10.0], 3).   % {bin centre, density}
%% [{1.6666666666666667,0.24},{5.0,0.0},{8.333333333333334,0.06}]
%% '''
%% write/4 draws the whole report of an experiment from its configuration and results
%% (what `bin/riarc experiment' does after the runs):
%% ```erl
%% riarc_bench_report:write(Cfg, Results, "bench-results/quick", #{elapsed_ms => 61000}).
%% {ok,"bench-results/quick/report.html"}
%% '''
-module(riarc_bench_report).

-export([cv_metrics/0, variant_label/1, write/4, histogram/2, setup_key/1, metrics/0, format_error/1]).

-export_type([error_reason/0]).

-type error_reason() :: {write, file:filename(), file:posix() | badarg | terminated | system_limit}.

%% {Metric, label, scale factor applied to the value}
-define(METRICS,
        [{mrt_mean_ms, "mean response time (ms)", 1},
         {mrt_p99_ms, "p99 response time (ms)", 1},
         {mem_mean, "mean memory (MB)", 1.0e-6},
         {sched_mean, "scheduler utilisation (%)", 100},
         {duration_ms, "running time (ms)", 1}]).

%% {Column in timeseries.csv, name, label, scale}
-define(TS_PLOTS,
        [{5, created, "workers created", 1},
         {2, sched_util, "scheduler utilisation (%)", 100},
         {3, mem_total, "memory (MB)", 1.0e-6},
         {10, mrt_interval_ms, "mean response time in the sampling window (ms)", 1}]).

%% @doc The metrics the reports compare, with their labels and display scales.
-spec metrics() -> [{atom(), string(), number()}].
metrics() -> ?METRICS.

-spec write(riarc_bench_experiment:config(), [map()], file:filename(), map()) ->
    {ok, file:filename()} | {error, {?MODULE, error_reason()}}.
write(Cfg, Results, Out, Info) ->
    Plots = filename:join(Out, "plots"),
    ok = filelib:ensure_path(Plots),
    %% Plots from an earlier report of the same directory would otherwise linger.
    _ = [file:delete(F) || F <- filelib:wildcard(filename:join(Plots, "*.{svg,png,dat}"))],
    Entries = entries(Results, Cfg),
    %% A benchmark whose every run crashed has no point to draw (the paper's missing bars).
    Ran = [E || E = #{runs := [_ | _]} <- Entries],
    Fits = [write_fit_data(Plots, E) || E <- largest_per_series(Ran)],
    {Figures, Cmds} = lists:unzip(plots(Out, Plots, Ran) ++ [fit_plot(Plots, F) || F <- Fits]),
    Gnuplot = case Ran of
                  [] -> ok;
                  _ -> riarc_bench_plot:run(Plots, Cmds)
              end,
    Html = html(Cfg, Entries, Figures, Fits, Gnuplot, Info, Out),
    Path = filename:join(Out, "report.html"),
    case file:write_file(Path, Html) of
        ok -> {ok, Path};
        {error, Reason} -> {error, {?MODULE, {write, Path, Reason}}}
    end.

%%% What each benchmark is -------------------------------------------------------------

%% Each result with what the report needs: its shape and n, its set-up key (the same
%% for every report and study, so that colours match), and the rest of what varies in
%% the config (schedulers, seeds, variants), which together with the set-up names a
%% series.
entries(Results, Cfg) ->
    Varying = [K || {K, CfgKey} <- [{schedulers, schedulers}, {seed, seeds}],
                    length(maps:get(CfgKey, Cfg, [x])) > 1],
    Variants = length(maps:get(variants, Cfg, [#{}])) > 1,
    [begin
         Rest = lists:append([["-", label_part(K, maps:get(K, B))] || K <- Varying])
             ++ case Variants of
                    true -> variant_label(maps:get(variant, B, #{}));
                    false -> ""
                end,
         R#{shape => atom_to_list(maps:get(shape, B)), n => maps:get(workers, B),
            setup => setup_key(B), rest => lists:flatten(Rest),
            line => setup_key(B) ++ lists:flatten(Rest)}
     end || R = #{bench := B} <- Results].

%% @doc The set-up of a benchmark as the plots name it: "baseline", "tracing",
%% "riarc-none" (instrumentation alone), "riarc-soundness", ...
-spec setup_key(map()) -> string().
setup_key(#{instrumentation := I} = B) ->
    case riarc_bench_run:has_monitors(I) of
        false -> atom_to_list(I);
        true -> atom_to_list(I) ++ "-" ++ atom_to_list(maps:get(monitors, B, soundness))
    end.

label_part(schedulers, K) -> "S" ++ integer_to_list(K);
label_part(seed, S) -> "seed" ++ integer_to_list(S).

values(M, #{runs := Runs}) -> [V || R <- Runs, is_number(V = maps:get(M, R, ""))].

summary(M, E) -> riarc_bench_ci:summary(values(M, E)).

shapes(Es) -> ordered([S || #{shape := S} <- Es], ["steady", "pulse", "burst"]).
lines(Es) -> ordered([L || #{line := L} <- Es],
                     ["baseline", "tracing", "riarc-none", "riarc-soundness", "centralised-none",
                      "centralised-soundness", "inline-none", "inline-soundness", "mit"]).

%% Known names in their natural order, then the others sorted.
ordered(Xs, Known) ->
    U = lists:usort(Xs),
    [K || K <- Known, lists:member(K, U)] ++ [X || X <- U, not lists:member(X, Known)].

largest_per_series(Es) ->
    [lists:last(lists:sort(fun(A, B) -> maps:get(n, A) =< maps:get(n, B) end, G))
     || {_, G} <- maps:to_list(group(fun(#{shape := S, line := L}) -> {S, L} end, Es))].

group(Key, Es) ->
    lists:foldl(fun(E, Acc) -> maps:update_with(Key(E), fun(L) -> L ++ [E] end, [E], Acc) end,
                #{}, Es).

%%% Plots --------------------------------------------------------------------------------

%% [{Figure, GnuplotCommands}]. With a single series per shape the shapes are the
%% series (one plot compares them); otherwise each shape gets its own line plots with
%% one line per set-up. Bars and boxes always group by shape, one bar per series, at
%% the largest n of each shape.
plots(_Out, _Plots, []) -> [];
plots(Out, Plots, Es) ->
    Shapes = shapes(Es),
    Lines = lines(Es),
    Top = [E || S <- Shapes,
                Of <- [[E || E = #{shape := S1} <- Es, S1 =:= S]],
                N <- [lists:max([maps:get(n, E) || E <- Of])],
                E = #{n := N1} <- Of, N1 =:= N],
    TopNote = case lists:usort([N || #{n := N} <- Top]) of
                  [N] -> io_lib:format("~b workers", [N]);
                  _ -> "largest number of workers of each load"
              end,
    Bars = [fig(riarc_bench_plot:bars(Plots, "bars-" ++ atom_to_list(M),
                                      lists:flatten([Label, ", ", TopNote, ": median and 95 % interval"]),
                                      Label,
                                      [{S, maps:from_list([{L, scaled(riarc_bench_ci:summary(values(M, E)), Scale)}
                                                           || E = #{shape := S1, line := L} <- Top, S1 =:= S])}
                                       || S <- Shapes], Lines),
                "bars-" ++ atom_to_list(M),
                [Label, " (", TopNote, "): bars are medians, error bars their 95 % intervals"])
            || {M, Label, Scale} <- ?METRICS],
    Boxes = [fig(riarc_bench_plot:boxes(Plots, "box-" ++ atom_to_list(M),
                                        lists:flatten([Label, ", ", TopNote, ": every run"]), Label,
                                        [{S, maps:from_list([{L, [V * Scale || V <- values(M, E)]}
                                                             || E = #{shape := S1, line := L} <- Top, S1 =:= S])}
                                         || S <- Shapes], Lines),
                 "box-" ++ atom_to_list(M), [Label, " (", TopNote, "): one dot per run"])
             || {M, Label, Scale} <- ?METRICS],
    AgainstN = [fig(Cmds, Name, Caption)
                || {M, Label, Scale} <- ?METRICS,
                   {Name, Caption, Cmds} <- against_n(Plots, Es, Shapes, Lines, M, Label, Scale),
                   Cmds =/= []],
    Ts = [fig(riarc_bench_plot:timeseries(Plots, Name, Title, Label, Col, Scale,
                                          [{Key, ts_file(Out, E)} || {Key, E} <- Series]),
              Name, Title)
          || {Col, TsName, Label, Scale} <- ?TS_PLOTS,
             {Suffix, Series} <- ts_groups(Top, Shapes, Lines),
             Name <- ["ts-" ++ atom_to_list(TsName) ++ Suffix],
             Title <- [lists:flatten([Label, " over time", title_suffix(Suffix), " (", TopNote,
                                      ", first run)"])]],
    Bars ++ Boxes ++ AgainstN ++ Ts.

against_n(Plots, Es, Shapes, [_] = _Lines, M, Label, Scale) ->
    Name = "n-" ++ atom_to_list(M),
    [{Name, [Label, " against the number of workers, one line per load"],
      riarc_bench_plot:against_n(Plots, Name, Label ++ " against the number of workers", Label,
                                 [{S, [{N, scaled(summary(M, E), Scale)} || E = #{shape := S1, n := N} <- Es, S1 =:= S]}
                                  || S <- Shapes], Shapes)}];
against_n(Plots, Es, Shapes, Lines, M, Label, Scale) ->
    [{Name, [Label, " against the number of workers, ", S],
      riarc_bench_plot:against_n(Plots, Name, lists:flatten([Label, " against the number of workers, ", S]), Label,
                                 [{L, [{N, scaled(summary(M, E), Scale)}
                                       || E = #{shape := S1, line := L1, n := N} <- Es, S1 =:= S, L1 =:= L]}
                                  || L <- Lines], Lines)}
     || S <- Shapes, Name <- ["n-" ++ atom_to_list(M) ++ "-" ++ S]].

%% One time-series plot for all shapes when each shape has one series; else one per shape.
ts_groups(Top, Shapes, [_]) ->
    [{"", [{S, E} || S <- Shapes, E = #{shape := S1} <- Top, S1 =:= S]}];
ts_groups(Top, Shapes, Lines) ->
    [{"-" ++ S, [{L, E} || L <- Lines, E = #{shape := S1, line := L1} <- Top, S1 =:= S, L1 =:= L]}
     || S <- Shapes].

title_suffix("") -> "";
title_suffix("-" ++ S) -> ", " ++ S.

ts_file(Out, #{id := Id}) -> filename:join([Out, "runs", Id, "rep1", "timeseries.csv"]).

fig(Cmds, Name, Caption) -> {{"plots/" ++ Name ++ ".svg", Caption}, Cmds}.

scaled(S = #{median := M}, Scale) ->
    S#{median := M * Scale,
       lo => maps:get(lo, S, M) * Scale, hi => maps:get(hi, S, M) * Scale,
       outliers => [O * Scale || O <- maps:get(outliers, S, [])]};
scaled(S, _) -> S.

%%% The realism check --------------------------------------------------------------------

%% Histogram of the response-time sample of the first repetition, with the densities of
%% the three fitted distributions at the bin centres.
write_fit_data(Plots, #{id := Id, shape := S, line := L, runs := [Run | _]}) ->
    Sample = read_sample(Run),
    Fits = maps:get(fits, Run, #{}),
    Bins = histogram(Sample, 40),
    Rows = [[X, D | [pdf(Name, Fits, X) || Name <- [normal, lognormal, gamma]]] || {X, D} <- Bins],
    Name = "fit-" ++ S ++ "-" ++ L,
    Dat = filename:join(Plots, Name ++ ".dat"),
    ok = file:write_file(Dat, [[lists:join($\s, [riarc_bench_writer:field(F) || F <- Row]), $\n]
                               || Row <- Rows]),
    #{name => Name, label => S ++ " " ++ L, id => Id, fits => Fits, n => length(Sample), dat => Dat}.

fit_plot(Plots, #{name := Name, label := Label, dat := Dat, n := N}) ->
    Title = lists:flatten(["Response times, ", Label, ": fitted distributions"]),
    Cmds = case N of
               0 -> [];
               _ -> riarc_bench_plot:fit(Plots, Name, Title, Dat)
           end,
    {{"plots/" ++ Name ++ ".svg", Title}, Cmds}.

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

%%% HTML ---------------------------------------------------------------------------------

%% Only figures whose file gnuplot did write are shown: no broken images.
html(Cfg, Entries, Figures, Fits, Gnuplot, Info, Out) ->
    Name = maps:get(name, Cfg),
    Drawn = [F || F = {Src, _} <- Figures, filelib:is_regular(filename:join(Out, Src))],
    Section = fun(Prefix) -> [F || F = {"plots/" ++ Rest, _} <- Drawn, lists:prefix(Prefix, Rest)] end,
    riarc_bench_html:page(
      "Experiment " ++ Name, guide(Cfg, Entries),
      [setup_section(Cfg, Entries, Info),
       gnuplot_note(Gnuplot),
       "<h2>Results</h2>\n", results_table(Cfg, Entries),
       figures("Set-ups side by side", Section("bars-")),
       figures("Every run", Section("box-")),
       figures("Against the number of workers", Section("n-")),
       figures("Over one run", Section("ts-")),
       fits_section(Fits, Section("fit-")),
       "<h2>Files</h2><p><a href=\"aggregate.csv\">aggregate.csv</a>, <a href=\"runs.csv\">runs.csv</a>, "
       "runs/&lt;benchmark&gt;/rep&lt;i&gt;/{summary,timeseries,rt_sample}.csv</p>\n"]).

guide(Cfg, Entries) ->
    Reps = case maps:get(repetitions, Cfg) of
               N when is_integer(N) -> io_lib:format("~b time~s", [N, plural(N)]);
               {cv, _} -> "until its runs varied little (coefficient of variation settled)"
           end,
    Few = [E || E = #{runs := Runs} <- Entries, length(Runs) < riarc_bench_ci:min_n()],
    ["Every benchmark ran ", Reps, ", each in a fresh VM. A cell shows the <b>median</b> "
     "over the runs and, in brackets, its <b>95 % confidence interval</b> (bootstrap "
     "percentile, seeded, so a redrawn report gives the same interval). ",
     case Few of
         [] -> "";
         _ -> io_lib:format("<span class=\"small\">Values in orange</span> (~b of the ~b "
                            "benchmarks here) come from fewer than three runs, too few for an "
                            "interval or a spread. ", [length(Few), length(Entries)])
     end,
     "The interval is about noise between runs on this machine, which was shared (see the load "
     "average below). The <i>x unmonitored</i> columns give a set-up's median as a multiple of "
     "the unmonitored system's (2.00x: twice as much); a difference is real only when that "
     "interval excludes 1x, otherwise it is marked <span class=\"ns\">no measurable "
     "difference</span> and may be chance. "
     "<span class=\"out\">&dagger;</span> marks a run far outside the others (Tukey's fences), "
     "most likely disturbed by other work. With 3 to 5 runs the intervals are wide and nearly "
     "the range of the runs. In the plots every set-up keeps one colour; bars are medians with "
     "their intervals, box plots show every run. Click a column header to sort."].

plural(1) -> "";
plural(_) -> "s".

setup_section(Cfg, Entries, Info) ->
    Config = case file:read_file(maps:get(file, Cfg)) of
                 {ok, Bin} -> Bin;
                 {error, _} -> <<>>
             end,
    Runs = lists:sum([length(Rs) || #{runs := Rs} <- Entries]),
    {Before, After} = maps:get(loadavg, Info, {"unknown", "unknown"}),
    ["<h2>Set-up</h2>\n",
     io_lib:format("<p>~b benchmarks, ~b runs, each in a fresh VM, in ~.1f s. "
                   "Machine: ~b logical processors, Erlang/OTP ~s (ERTS ~s); report written ~s UTC. "
                   "Load average (1, 5, 15 min) before: ~ts; after: ~ts.</p>\n",
                   [length(Entries), Runs, maps:get(elapsed_ms, Info, 0) / 1000,
                    erlang:system_info(logical_processors), erlang:system_info(otp_release),
                    erlang:system_info(version), utc_now(), Before, After]),
     "<details><summary>Config <code>", riarc_bench_html:esc(maps:get(file, Cfg)), "</code></summary><pre>",
     riarc_bench_html:esc(Config), "</pre></details>\n"].

gnuplot_note(ok) -> "";
gnuplot_note({error, {riarc_bench_plot, Why}}) ->
    ["<p><b>Plots missing:</b> ", riarc_bench_html:esc(riarc_bench_plot:format_error(Why)), "</p>\n"].

results_table(Cfg, Entries) ->
    Bases = maps:from_list([{{S, N, Rest}, E} || E = #{setup := "baseline", shape := S, n := N, rest := Rest,
                                                      runs := [_ | _]} <- Entries]),
    HasBase = map_size(Bases) > 0 andalso length(lines(Entries)) > 1,
    [{_, MrtL, MrtS}, {_, P99L, P99S}, {_, MemL, MemS}, {_, SchedL, SchedS}, {_, DurL, DurS}] = ?METRICS,
    Cols = [{"load", text}, {"workers", num}, {"set-up", text}, {"runs", num}, {"runs chosen", text},
            {MrtL, num}]
        ++ [{"mean response time x unmonitored", num} || HasBase]
        ++ [{MemL, num}]
        ++ [{"memory x unmonitored", num} || HasBase]
        ++ [{P99L, num}, {SchedL, num}, {DurL, num}, {"throughput (msg/s)", num}]
        ++ [{"spread (CV) of " ++ cv_label(M), num} || M <- cv_metrics()]
        ++ [{"crashed", text}, {"benchmark (runs/...)", text}],
    Rows = [[S, N, L, length(Runs), reps_cell(Cfg, E), ci_cell(mrt_mean_ms, MrtS, E)]
             ++ [vs_cell(mrt_mean_ms, E, Bases) || HasBase]
             ++ [ci_cell(mem_mean, MemS, E)]
             ++ [vs_cell(mem_mean, E, Bases) || HasBase]
             ++ [ci_cell(mrt_p99_ms, P99S, E), ci_cell(sched_mean, SchedS, E),
                 ci_cell(duration_ms, DurS, E), ci_cell(throughput, 1, E)]
             ++ [cv_cell(M, E) || M <- cv_metrics()]
             ++ [crashed_cell(maps:get(crashed, E, [])), Id]
            || E = #{id := Id, shape := S, n := N, line := L, runs := Runs} <- Entries],
    riarc_bench_html:table(Cols, Rows).

cv_label(M) ->
    case lists:keyfind(M, 1, ?METRICS) of
        {_, Label, _} -> hd(string:split(Label, " ("));
        false -> atom_to_list(M)
    end.

%% Fixed repetitions never looked at the CV, so "settled" would claim too much.
reps_cell(Cfg, #{runs := Runs, chosen := Chosen, converged := Conv}) ->
    case {maps:get(repetitions, Cfg), length(Runs) < riarc_bench_ci:min_n()} of
        {_, true} -> {raw, "<span class=\"small\">too few</span>"};
        {N, false} when is_integer(N) -> "fixed";
        {{cv, _}, false} when Conv -> io_lib:format("settled after ~b", [Chosen]);
        {{cv, _}, false} -> "not settled"
    end.

ci_cell(M, Scale, E) ->
    case summary(M, E) of
        #{n := 0} -> {"n/a", ""};
        S = #{median := Med} ->
            %% Too few runs: the median alone, in the colour the guide explains once.
            Text = riarc_bench_html:esc(case S of
                                            #{enough := false} -> riarc_bench_ci:num(Med * Scale);
                                            _ -> riarc_bench_ci:format(S, Scale)
                                        end),
            Class = case S of #{enough := false} -> " class=\"small\""; _ -> "" end,
            Out = case maps:get(outliers, S, []) of
                      [] -> "";
                      Os -> ["<span class=\"out\" title=\"outside Tukey's fences: ",
                             lists:join(", ", [riarc_bench_ci:num(O * Scale) || O <- Os]), "\">&dagger;</span>"]
                  end,
            {raw, ["<span", Class, ">", Text, "</span>", Out]}
    end.

vs_cell(M, E = #{setup := Setup, shape := S, n := N, rest := Rest}, Bases) ->
    case {Setup, maps:find({S, N, Rest}, Bases)} of
        {"baseline", _} -> "";
        {_, error} -> "no baseline";
        {_, {ok, B}} -> compare_cell(riarc_bench_ci:compare(values(M, E), values(M, B)))
    end.

%% The ratio to a baseline as a cell: bold when significant, grey when not.
compare_cell(C) ->
    Text = riarc_bench_html:esc(riarc_bench_ci:format_ratio(C)),
    Class = case C of
                #{enough := false} -> "small";
                #{significant := true} -> "sig";
                _ -> "ns"
            end,
    {raw, ["<span class=\"", Class, "\">", Text, "</span>"]}.

cv_cell(M, E) ->
    case values(M, E) of
        Vs when length(Vs) < 3 -> "";
        Vs -> io_lib:format("~.1f %", [100 * riarc_bench_stats:cv(Vs)])
    end.

crashed_cell([]) -> "";
crashed_cell([#{why := Why, rep := Rep} | _]) -> io_lib:format("run ~b: ~s", [Rep, Why]).

figures(_Title, []) -> [];
figures(Title, Figs) ->
    ["<h2>", Title, "</h2>\n<div class=\"figs\">\n",
     [riarc_bench_html:figure(Src, Caption) || {Src, Caption} <- Figs], "</div>\n"].

fits_section([], _) -> [];
fits_section(Fits, Figs) ->
    Rows = [[Label, Id, N] ++ [ks_cell(D, F) || D <- [normal, lognormal, gamma]] ++ [best(F)]
            || #{label := Label, id := Id, fits := F, n := N} <- Fits],
    ["<h2>Do the response times look like a real system's?</h2>\n<p>Normal, log-normal and gamma "
     "distributions fitted (maximum likelihood) to the sampled response times of the largest "
     "benchmark of each series (first run); D is the largest gap between the data's and the "
     "fit's cumulative distribution (Kolmogorov-Smirnov; smaller is a better fit). Real "
     "systems' response times are usually skewed, closer to log-normal or gamma.</p>\n",
     riarc_bench_html:table([{"series", text}, {"benchmark", text}, {"sample", num}, {"D normal", num},
                             {"D log-normal", num}, {"D gamma", num}, {"best", text}], Rows),
     "<div class=\"figs\">\n", [riarc_bench_html:figure(Src, C) || {Src, C} <- Figs], "</div>\n"].

ks_cell(D, F) ->
    case F of
        #{D := #{ks := K}} -> io_lib:format("~.3f", [K]);
        _ -> "n/a"
    end.

best(F) when map_size(F) =:= 0 -> "n/a";
best(F) ->
    {_, Name} = lists:min([{K, N} || {N, #{ks := K}} <- maps:to_list(F)]),
    atom_to_list(Name).

utc_now() ->
    calendar:system_time_to_rfc3339(erlang:system_time(second), [{offset, "Z"}]).

%% @doc One sentence for an error of write/4.
-spec format_error(error_reason()) -> string().
format_error({write, Path, Reason}) ->
    lists:flatten(io_lib:format("cannot write the report ~ts: ~ts", [Path, file:format_error(Reason)])).

%% @doc The metrics whose coefficient of variation decides when repetitions have settled.
-spec cv_metrics() -> [atom()].
cv_metrics() -> [mrt_mean_ms, mem_mean, sched_mean, duration_ms].

%% "-psend0.1-precv0.1" for #{psend => 0.1, precv => 0.1}; "" for no variant.
%% @doc A benchmark variant's part of its name.
-spec variant_label(map()) -> string().
variant_label(V) ->
    lists:append(["-" ++ atom_to_list(K) ++ value_label(X) || {K, X} <- lists:sort(maps:to_list(V))]).

value_label(X) when is_float(X) -> float_to_list(X, [short]);
value_label(X) -> lists:flatten(io_lib:format("~p", [X])).
