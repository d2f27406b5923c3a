%% @doc The comparative study of 000 §5 on this machine: inline, centralised and riarc
%% monitoring against the unmonitored baseline, from experiments already run by
%% `riarc_bench_experiment' (one per concurrency level).
%%
%% It reads each experiment's `aggregate.csv' and run directories and writes, under OUT:
%% <ul>
%% <li>`overhead.md' and `overhead.csv': the analogue of Table 3, the percentage overhead
%%     of every set-up over the baseline of the same shape at the level's largest n, for
%%     mean response time, mean memory and mean scheduler utilisation, with the absolute
%%     values beside it; a set-up whose runs crashed is marked so;</li>
%% <li>`plots/' (SVG): grouped bars of every set-up per shape with 95 % intervals,
%%     box plots of the runs, the analogues of Figs. 7 and 8 (each metric against n, one
%%     line per set-up, where a level has more than one n) and of Fig. 9 (memory and
%%     scheduler utilisation over a whole run at the largest n), one colour per set-up;</li>
%% <li>`index.html': one self-contained page with a reading guide, the table as a
%%     sortable HTML table, and the plots.</li>
%% </ul>
%% Overhead is (set-up - baseline) / baseline, in per cent, of the medians over the
%% repetitions (each experiment's `runs.csv'), with its 95 % bootstrap interval from
%% `riarc_bench_ci'; a difference whose interval includes 0 is marked not significant,
%% and fewer than three runs "n too small". Without a `runs.csv' the aggregate means are
%% used as single values, so every cell says "n too small".
%%
%% ```
%% 1> ok = file:write_file("/tmp/riarc_tiny.config", "{name, \"tiny\"}. {shapes, [steady]}.
%% ..    {workers, [20]}. {instrumentation, [baseline]}. {repetitions, 3}.
%% ..    {params, #{requests => 5, time => 2, period => 10}}.").
%% 2> {ok, _} = riarc_bench_experiment:run("/tmp/riarc_tiny.config", #{out => "/tmp/riarc_s/high"}).
%% 3> {ok, _} = riarc_bench_experiment:run("/tmp/riarc_tiny.config", #{out => "/tmp/riarc_s/moderate"}).
%% 4> {ok, #{table := T, html := H}} = riarc_bench_study:write([{"high", "/tmp/riarc_s/high"},
%% ..                                  {"moderate", "/tmp/riarc_s/moderate"}], "/tmp/riarc_s/study").
%% 5> {T, H}.
%% {"/tmp/riarc_s/study/overhead.md","/tmp/riarc_s/study/index.html"}
%% '''
-module(riarc_bench_study).

-export([write/2, overhead/2, read_aggregate/1, read_runs/1, format_error/1]).

-export_type([row/0, error_reason/0]).

%% One benchmark of aggregate.csv, as a map from column to value.
-type row() :: #{atom() => number() | string()}.
-type error_reason() :: {read, file:filename(), file:posix() | badarg | terminated | system_limit}
                      | {empty, file:filename()}
                      | {out_dir, file:filename(), file:posix()}.

%% {column of aggregate.csv, what it is, scale to the unit shown}
-define(METRICS, [{mrt_mean_ms_mean, "mean response time (ms)", 1},
                  {mem_mean_mean, "memory (MB)", 1.0e-6},
                  {sched_mean_mean, "scheduler use (%)", 100}]).

%% {column of timeseries.csv, name, label, scale} for the Fig. 9 analogue.
-define(TS, [{3, mem_total, "memory (MB)", 1.0e-6}, {2, sched_util, "scheduler utilisation (%)", 100}]).

%% @doc Writes the study for the given levels, each `{Label, ExperimentDir}'.
-spec write([{string(), file:filename()}], file:filename()) ->
    {ok, #{table := file:filename(), html := file:filename(), text := binary(), rows := [map()]}}
    | {error, {?MODULE, error_reason()}}.
write(Levels, Out) ->
    case read_levels(Levels, []) of
        {ok, Read} ->
            Plots = filename:join(Out, "plots"),
            case filelib:ensure_path(Plots) of
                ok -> write_files(Read, Out, Plots);
                {error, Reason} -> {error, {?MODULE, {out_dir, Out, Reason}}}
            end;
        Error -> Error
    end.

%% The plots directory exists; the files of the study go beside it.
write_files(Read, Out, Plots) ->
    _ = [file:delete(F) || F <- filelib:wildcard(filename:join(Plots, "*.{svg,png,dat}"))],
    Table = lists:append([overhead(L, Rows) || {L, _Dir, Rows} <- Read]),
    Md = unicode:characters_to_binary(markdown(Table)),
    ok = file:write_file(filename:join(Out, "overhead.md"), Md),
    ok = riarc_bench_writer:write_csv(filename:join(Out, "overhead.csv"), csv_header(),
                                      [csv_row(T) || T <- Table]),
    {Figures, Cmds} = lists:unzip(plots(Read, Plots)),
    Gnuplot = riarc_bench_plot:run(Plots, Cmds),
    Html = filename:join(Out, "index.html"),
    Drawn = [F || F = {Src, _} <- Figures, filelib:is_regular(filename:join(Out, Src))],
    ok = file:write_file(Html, html(Read, Table, Gnuplot, Drawn)),
    {ok, #{table => filename:join(Out, "overhead.md"), html => Html, text => Md, rows => Table}}.

%% Each aggregate row gets its runs (from runs.csv) under `runs'.
read_levels([], Acc) -> {ok, lists:reverse(Acc)};
read_levels([{Label, Dir} | Rest], Acc) ->
    case read_aggregate(filename:join(Dir, "aggregate.csv")) of
        {ok, Rows} ->
            Runs = case read_runs(Dir) of
                       {ok, R} -> R;
                       {error, _} -> #{}
                   end,
            read_levels(Rest, [{Label, Dir, [Row#{runs => maps:get(B, Runs, none)}
                                             || Row = #{benchmark := B} <- Rows]} | Acc]);
        Error -> Error
    end.

%% @doc An experiment's runs.csv, as the rows of each benchmark.
-spec read_runs(file:filename()) -> {ok, #{string() => [row()]}} | {error, {?MODULE, error_reason()}}.
read_runs(Dir) ->
    case read_aggregate(filename:join(Dir, "runs.csv")) of
        {ok, Rows} ->
            {ok, lists:foldl(fun(R = #{benchmark := B}, Acc) ->
                                     maps:update_with(B, fun(L) -> L ++ [R] end, [R], Acc)
                             end, #{}, Rows)};
        Error -> Error
    end.

%%% The overhead table (Table 3) ---------------------------------------------------------

%% @doc The overhead rows of one level: for each shape, at the largest n the baseline ran
%% at, every other set-up against that baseline, each metric as a `riarc_bench_ci'
%% comparison (under `cmp').
-spec overhead(string(), [row()]) -> [map()].
overhead(Level, Rows) ->
    Shapes = lists:usort([maps:get(shape, R) || R <- Rows]),
    lists:append([shape_overhead(Level, S, [R || R <- Rows, maps:get(shape, R) =:= S])
                  || S <- Shapes]).

shape_overhead(Level, Shape, Rows) ->
    case [R || R <- Rows, maps:get(instrumentation, R) =:= "baseline", has_runs(R)] of
        [] -> [];
        Bases ->
            N = lists:max([maps:get(workers, B) || B <- Bases]),
            [Base] = [B || B <- Bases, maps:get(workers, B) =:= N],
            [#{level => Level, shape => Shape, workers => N, setup => setup_label(R),
               key => plot_setup(R), base => Base, row => R, crashed => maps:get(crashed, R, ""),
               cmp => maps:from_list([{K, riarc_bench_ci:compare(values(K, R), values(K, Base))}
                                      || {K, _, _} <- ?METRICS, has_runs(R)])}
             || R <- Rows, maps:get(workers, R) =:= N,
                maps:get(instrumentation, R) =/= "baseline"]
    end.

has_runs(R) -> is_number(maps:get(mrt_mean_ms_mean, R, "")).

%% The per-run values of an aggregate column (mrt_mean_ms_mean: the runs' mrt_mean_ms);
%% without runs.csv, the aggregate mean alone.
values(K, R) ->
    case maps:get(runs, R, none) of
        Runs when is_list(Runs) ->
            M = run_key(K),
            [V || Run <- Runs, is_number(V = maps:get(M, Run, ""))];
        none ->
            [V || V <- [maps:get(K, R, "")], is_number(V)]
    end.

run_key(K) ->
    S = atom_to_list(K),
    list_to_atom(lists:sublist(S, length(S) - length("_mean"))).

%% Plain words: what watches the system and what its monitors do.
setup_label(#{instrumentation := "tracing"}) -> "the VM's tracing alone, no monitors (the least any outside monitoring costs)";
setup_label(R) ->
    case maps:get(monitors, R) of
        "none" -> maps:get(instrumentation, R) ++ ", monitors that check nothing";
        _ -> lists:flatten(io_lib:format("~s, monitors checking every message (~s us per event)",
                                         [maps:get(instrumentation, R), num(maps:get(cost_us, R))]))
    end.

markdown(Table) ->
    Head = ["| concurrency | load | workers | set-up |",
            [[" ", L, ": x unmonitored (95 % interval) [set-up vs unmonitored] |"] || {_, L, _} <- ?METRICS],
            " verdicts as expected |\n",
            "|---|---|---|---|", ["---|" || _ <- ?METRICS], "---|\n"],
    Few = [T || T = #{cmp := Cmp} <- Table, #{enough := false} <- maps:values(Cmp)],
    [Head, [md_row(T) || T <- Table],
     "\nEach cell: the set-up's median over its runs as a multiple of the unmonitored "
     "system's (2.00x: twice as much), the 95 % interval of that ratio in parentheses, then "
     "the two medians in brackets. \"no measurable difference\": the interval includes 1x.\n",
     case Few of
         [] -> "";
         _ -> ["Fewer than ", integer_to_list(riarc_bench_ci:min_n()), " runs per set-up here, "
               "too few for intervals: the ratios without one are single measurements "
               "(`make bench` runs more).\n"]
     end].

md_row(T = #{level := L, shape := S, workers := N, setup := Setup, crashed := Crashed}) ->
    Cells = case {Crashed, has_runs(maps:get(row, T))} of
                {_, false} -> [io_lib:format(" crashed (~s) |", [Crashed]) || _ <- ?METRICS];
                _ -> [[" ", cmp_text(maps:get(K, maps:get(cmp, T)), Scale), " |"] || {K, _, Scale} <- ?METRICS]
            end,
    ["| ", L, " | ", S, " | ", integer_to_list(N), " | ", Setup, " |", Cells,
     verdict_cell(maps:get(row, T)), "\n"].

%% "1.50x (1.31 to 1.72) [3.0 vs 2.0]": the ratio, its interval when there is one (the
%% table's note says once why some have none), the two medians.
cmp_text(C = #{setup := #{median := V}, base := #{median := B}}, Scale) ->
    io_lib:format("~s [~s vs ~s]", [riarc_bench_ci:format_ratio(C), num(V * Scale), num(B * Scale)]);
cmp_text(_, _) -> "n/a".

%% "15001 of 15001" over all repetitions; a wrong verdict is shouted. A set-up whose runs
%% all crashed counted no monitor: it gave no verdicts, which is not having no monitors.
verdict_cell(R) -> [" ", verdict_text(R), " |"].

verdict_text(R) ->
    Ran = maps:get(crashed, R, "") =:= "" orelse has_runs(R),
    case {Ran, maps:get(monitored, R, ""), maps:get(wrong_verdicts, R, "")} of
        {false, _, _} -> "no verdicts (crashed)";
        {true, 0, _} -> "(no monitors)";
        {true, M, 0} when is_integer(M) -> io_lib:format("~b of ~b", [M, M]);
        {true, M, W} when is_integer(M), is_integer(W) -> io_lib:format("**~b WRONG** of ~b", [W, M]);
        _ -> "n/a"
    end.

csv_header() ->
    [level, shape, workers, setup, crashed, monitored, wrong_verdicts
     | lists:append([[K, list_to_atom(atom_to_list(K) ++ "_baseline"),
                      list_to_atom(atom_to_list(K) ++ "_overhead_pct"),
                      list_to_atom(atom_to_list(K) ++ "_overhead_lo"),
                      list_to_atom(atom_to_list(K) ++ "_overhead_hi"),
                      list_to_atom(atom_to_list(K) ++ "_significant"),
                      list_to_atom(atom_to_list(K) ++ "_n")] || {K, _, _} <- ?METRICS])].

%% Values are medians (the column names keep the aggregate's, which they come from).
csv_row(T = #{level := L, shape := S, workers := N, setup := Setup, crashed := C}) ->
    [L, S, N, Setup, C, maps:get(monitored, maps:get(row, T), ""),
     maps:get(wrong_verdicts, maps:get(row, T), "")
     | lists:append([csv_cells(maps:get(K, maps:get(cmp, T), none)) || {K, _, _} <- ?METRICS])].

csv_cells(C = #{setup := #{median := V, n := Nr}, base := #{median := B}}) ->
    case riarc_bench_ci:overhead(C) of
        {P, {Lo, Hi}} -> [V, B, P, Lo, Hi, maps:get(significant, C), Nr];
        {P, none} -> [V, B, P, "", "", "", Nr];
        none -> [V, B, "", "", "", "", Nr]
    end;
csv_cells(_) -> ["", "", "", "", "", "", ""].

%%% Plots ----------------------------------------------------------------------------------

%% [{Figure, gnuplot commands}]: per level, grouped bars and box plots of each metric at
%% the largest n (Table 3's n), each metric against n per shape where the level has more
%% than one n (Figs. 7-8), and the Fig. 9 time series per shape.
plots(Read, Plots) ->
    lists:append([level_plots(L, Dir, Rows, Plots) || {L, Dir, Rows} <- Read]).

level_plots(Level, Dir, Rows0, Plots) ->
    Rows = [R || R <- Rows0, has_runs(R)],
    case Rows of
        [] -> [];
        _ -> level_plots(Level, Dir, Rows, Rows0, Plots)
    end.

level_plots(Level, Dir, Rows, Rows0, Plots) ->
    Shapes = shapes([maps:get(shape, R) || R <- Rows0]),
    Setups = setups([plot_setup(R) || R <- Rows0]),
    N = lists:max([maps:get(workers, R) || R <- Rows]),
    Top = [R || R <- Rows, maps:get(workers, R) =:= N],
    At = fun(S) -> [R || R <- Top, maps:get(shape, R) =:= S] end,
    Note = io_lib:format("~s concurrency, ~b workers", [Level, N]),
    Bars = [fig(riarc_bench_plot:bars(Plots, Name, lists:flatten([Label, ", ", Note]), Label,
                                      [{S, maps:from_list([{plot_setup(R), scaled(riarc_bench_ci:summary(values(K, R)), Scale)}
                                                           || R <- At(S)])} || S <- Shapes], Setups),
                Name, [Label, ", ", Note, ": medians with 95 % intervals"])
            || {K, Label, Scale} <- ?METRICS, Name <- [Level ++ "-bars-" ++ atom_to_list(K)]],
    Boxes = [fig(riarc_bench_plot:boxes(Plots, Name, lists:flatten([Label, ", ", Note, ": every run"]), Label,
                                        [{S, maps:from_list([{plot_setup(R), [V * Scale || V <- values(K, R)]}
                                                             || R <- At(S)])} || S <- Shapes], Setups),
                 Name, [Label, ", ", Note, ": one dot per run"])
             || {K, Label, Scale} <- ?METRICS, Name <- [Level ++ "-box-" ++ atom_to_list(K)]],
    AgainstN = [fig(Cmds, Name, [Label, " against n, ", Level, " concurrency, ", S])
                || {K, Label, Scale} <- ?METRICS, S <- Shapes,
                   Name <- [lists:flatten([Level, "-", S, "-", atom_to_list(K)])],
                   Cmds <- [riarc_bench_plot:against_n(
                              Plots, Name, lists:flatten([Level, " concurrency, ", S, ": ", Label, " against n"]), Label,
                              [{Su, lists:sort([{maps:get(workers, R), scaled(riarc_bench_ci:summary(values(K, R)), Scale)}
                                                || R <- Rows, maps:get(shape, R) =:= S, plot_setup(R) =:= Su])}
                               || Su <- Setups], Setups)],
                   Cmds =/= []],
    Ts = [fig(riarc_bench_plot:timeseries(Plots, Name, Title, Label, Col, Scale,
                                          [{plot_setup(R), filename:join([Dir, "runs", maps:get(benchmark, R), "rep1",
                                                                          "timeseries.csv"])}
                                           || Su <- Setups, R <- At(S), plot_setup(R) =:= Su]),
              Name, Title)
          || {Col, TsName, Label, Scale} <- ?TS, S <- Shapes, At(S) =/= [],
             Name <- [lists:flatten([Level, "-", S, "-ts-", atom_to_list(TsName)])],
             Title <- [lists:flatten([Level, " concurrency, ", S, ", ", integer_to_list(N), " workers: ",
                                      Label, " over the run (first run)"])]],
    Bars ++ Boxes ++ AgainstN ++ Ts.

fig(Cmds, Name, Caption) -> {{"plots/" ++ Name ++ ".svg", Caption}, Cmds}.

scaled(S = #{median := M}, Scale) ->
    S#{median := M * Scale, lo => maps:get(lo, S, M) * Scale, hi => maps:get(hi, S, M) * Scale};
scaled(S, _) -> S.

shapes(Xs) -> ordered(Xs, ["steady", "pulse", "burst"]).
setups(Xs) -> ordered(Xs, ["baseline", "tracing", "riarc-none", "riarc-soundness", "centralised-none",
                           "centralised-soundness", "inline-none", "inline-soundness", "mit"]).

ordered(Xs, Known) ->
    U = lists:usort(Xs),
    [K || K <- Known, lists:member(K, U)] ++ [X || X <- U, not lists:member(X, Known)].

%% The same names as riarc_bench_report:setup_key/1, so colours match across reports.
plot_setup(R) ->
    case maps:get(instrumentation, R) of
        "baseline" -> "baseline";
        "tracing" -> "tracing";
        I -> I ++ "-" ++ maps:get(monitors, R)
    end.

%%% HTML ---------------------------------------------------------------------------------

html(Read, Table, Gnuplot, Figures) ->
    Section = fun(Tag) -> [F || F = {Src, _} <- Figures, string:find(Src, Tag) =/= nomatch] end,
    Bars = Section("-bars-"),
    Boxes = Section("-box-"),
    Ts = Section("-ts-"),
    AgainstN = Figures -- (Bars ++ Boxes ++ Ts),
    riarc_bench_html:page(
      "Inline, centralised and riarc monitoring against the unmonitored system", guide(Table),
      ["<p>Experiments: ",
       lists:join(", ", [[riarc_bench_html:esc(L), " (<code>", riarc_bench_html:esc(D), "</code>)"]
                         || {L, D, _} <- Read]),
       ". Each experiment has its own report (<code>report.html</code> in its directory).</p>\n",
       case Gnuplot of
           ok -> "";
           {error, {riarc_bench_plot, Why}} -> ["<p><b>Plots missing:</b> ", riarc_bench_html:esc(riarc_bench_plot:format_error(Why)), "</p>"]
       end,
       "<h2>What each set-up costs against the unmonitored system (largest number of workers)</h2>\n",
       table(Table),
       "<p>Also as <a href=\"overhead.md\">overhead.md</a> and <a href=\"overhead.csv\">overhead.csv</a>.</p>\n",
       figures("Set-ups side by side", Bars),
       figures("Every run", Boxes),
       figures("Against the number of workers", AgainstN),
       figures("Over one run", Ts)]).

guide(Table) ->
    Reps = lists:usort([maps:get(n, maps:get(setup, C)) || #{cmp := Cmp} <- Table, C <- maps:values(Cmp)]),
    ["Each row compares one monitoring set-up with the unmonitored system under the same "
     "load and number of workers (the largest of its level). A value is the <b>median</b> over "
     "the runs (", runs_text(Reps), "); the cost is the set-up's median as a multiple of the "
     "unmonitored one (2.00x: twice as much), with its <b>95 % confidence interval</b> in "
     "parentheses (bootstrap percentile over the runs of both, seeded). The machine was shared "
     "and runs vary, so a cost is only a finding when its interval excludes 1x: "
     "<span class=\"sig\">bold</span> ones do; <span class=\"ns\">grey ones, marked no measurable "
     "difference</span>, may be chance. <span class=\"small\">Values in orange</span> come "
     "from fewer than three runs, too few for an interval; with three to five runs the "
     "interval is about the range of the runs. In the plots every set-up has one colour "
     "throughout; bars are medians with their intervals, box plots show every run. Click a "
     "column header to sort."].

runs_text([]) -> "no runs";
runs_text([N]) -> io_lib:format("~b run~s each", [N, case N of 1 -> ""; _ -> "s" end]);
runs_text(Ns) -> io_lib:format("~b to ~b runs each", [lists:min(Ns), lists:max(Ns)]).

table(Table) ->
    Cols = [{"concurrency", text}, {"load", text}, {"workers", num}, {"set-up", text}, {"runs", num}]
        ++ lists:append([[{L ++ " set-up", num}, {L ++ " unmonitored", num}, {L ++ " x unmonitored", num}]
                         || {_, L, _} <- ?METRICS])
        ++ [{"verdicts as expected", text}],
    Rows = [[L, S, N, Setup, runs_of(T)]
             ++ lists:append([metric_cells(T, K, Scale) || {K, _, Scale} <- ?METRICS])
             ++ [{raw, string:replace(string:replace(lists:flatten(verdict_text(maps:get(row, T))),
                                                     "**", "<b>"), "**", "</b>")}]
            || T = #{level := L, shape := S, workers := N, setup := Setup} <- Table],
    riarc_bench_html:table(Cols, Rows).

runs_of(#{cmp := Cmp}) ->
    case [maps:get(n, maps:get(setup, C)) || C <- maps:values(Cmp)] of
        [] -> 0;
        Ns -> lists:min(Ns)
    end.

metric_cells(#{crashed := Crashed, cmp := Cmp}, K, Scale) ->
    case Cmp of
        #{K := C = #{setup := S, base := B}} ->
            [riarc_bench_html:ci_cell(S, Scale), riarc_bench_html:ci_cell(B, Scale), riarc_bench_html:change_cell(C)];
        _ -> [{"crashed (" ++ Crashed ++ ")", ""}, "", ""]
    end.

figures(_Title, []) -> [];
figures(Title, Figs) ->
    ["<h2>", Title, "</h2>\n<div class=\"figs\">\n",
     [riarc_bench_html:figure(Src, Caption) || {Src, Caption} <- Figs], "</div>\n"].

%%% aggregate.csv ------------------------------------------------------------------------

%% @doc Reads an experiment's aggregate.csv: numbers become numbers, the rest strings.
-spec read_aggregate(file:filename()) -> {ok, [row()]} | {error, {?MODULE, error_reason()}}.
read_aggregate(Path) ->
    case file:read_file(Path) of
        {ok, Bin} ->
            case binary:split(Bin, <<"\n">>, [global, trim_all]) of
                [Header | Lines] ->
                    Cols = [binary_to_atom(C) || C <- binary:split(Header, <<",">>, [global])],
                    {ok, [maps:from_list(lists:zip(Cols, [value(F) || F <- binary:split(L, <<",">>, [global])]))
                          || L <- Lines]};
                [] -> {error, {?MODULE, {empty, Path}}}
            end;
        {error, Reason} -> {error, {?MODULE, {read, Path, Reason}}}
    end.

value(F) ->
    S = binary_to_list(F),
    try list_to_integer(S)
    catch error:badarg ->
            try list_to_float(S) catch error:badarg -> S end
    end.

%% @doc One sentence for an error of write/2, read_aggregate/1 or read_runs/1.
-spec format_error(error_reason()) -> string().
format_error({read, Path, Reason}) ->
    lists:flatten(io_lib:format("cannot read ~ts: ~ts (run the experiment first)",
                                [Path, file:format_error(Reason)]));
format_error({empty, Path}) ->
    lists:flatten(io_lib:format("~ts is empty", [Path]));
format_error({out_dir, Out, Reason}) ->
    lists:flatten(io_lib:format("cannot create the output directory ~ts: ~ts",
                                [Out, file:format_error(Reason)])).


num(X) when is_integer(X) -> integer_to_list(X);
num(X) when abs(X) >= 100 -> float_to_list(float(X), [{decimals, 0}]);
num(X) when abs(X) >= 1 -> float_to_list(float(X), [{decimals, 1}]);
num(X) -> float_to_list(float(X), [{decimals, 3}]).
