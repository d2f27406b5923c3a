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
%% <li>`plots/': the analogues of Figs. 7 and 8 (each metric against n, one line per
%%     set-up, one plot per shape and level) and of Fig. 9 (memory and scheduler
%%     utilisation over a whole run at the largest n);</li>
%% <li>`index.html' with both.</li>
%% </ul>
%% Overhead is (set-up - baseline) / baseline, in per cent, of the means over repetitions.
%%
%% ```
%% 1> riarc_bench_study:write([{"high", "bench-results/high"}, {"moderate", "bench-results/moderate"}],
%%                            "bench-results/study").
%% {ok, #{table => "bench-results/study/overhead.md", html => "bench-results/study/index.html",
%%        text => <<"| level | shape | set-up | ...">>}}
%% '''
-module(riarc_bench_study).

-export([write/2, overhead/2, read_aggregate/1, format_error/1]).

-export_type([row/0]).

%% One benchmark of aggregate.csv, as a map from column to value.
-type row() :: #{atom() => number() | string()}.

%% {column of aggregate.csv, what it is, scale to the unit shown}
-define(METRICS, [{mrt_mean_ms_mean, "MRT (ms)", 1},
                  {mem_mean_mean, "memory (MB)", 1.0e-6},
                  {sched_mean_mean, "sched. (%)", 100}]).

%% {column of timeseries.csv, name, label, scale} for the Fig. 9 analogue.
-define(TS, [{3, mem_total, "memory (MB)", 1.0e-6}, {2, sched_util, "scheduler utilisation (%)", 100}]).

%% @doc Writes the study for the given levels, each `{Label, ExperimentDir}'.
-spec write([{string(), file:filename()}], file:filename()) ->
    {ok, #{table := file:filename(), html := file:filename(), text := binary()}} | {error, term()}.
write(Levels, Out) ->
    case read_levels(Levels, []) of
        {ok, Read} ->
            Plots = filename:join(Out, "plots"),
            ok = filelib:ensure_path(Plots),
            Table = lists:append([overhead(L, Rows) || {L, _Dir, Rows} <- Read]),
            Md = iolist_to_binary(markdown(Table)),
            ok = file:write_file(filename:join(Out, "overhead.md"), Md),
            ok = riarc_bench_writer:write_csv(filename:join(Out, "overhead.csv"), csv_header(),
                                              [csv_row(T) || T <- Table]),
            Gnuplot = plot(Read, Plots),
            Html = filename:join(Out, "index.html"),
            ok = file:write_file(Html, html(Read, Md, Gnuplot, Plots)),
            {ok, #{table => filename:join(Out, "overhead.md"), html => Html, text => Md}};
        Error -> Error
    end.

read_levels([], Acc) -> {ok, lists:reverse(Acc)};
read_levels([{Label, Dir} | Rest], Acc) ->
    case read_aggregate(filename:join(Dir, "aggregate.csv")) of
        {ok, Rows} -> read_levels(Rest, [{Label, Dir, Rows} | Acc]);
        Error -> Error
    end.

%%% The overhead table (Table 3) ---------------------------------------------------------

%% @doc The overhead rows of one level: for each shape, at the largest n the baseline ran
%% at, every other set-up against that baseline.
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
               base => Base, row => R, crashed => maps:get(crashed, R, "")}
             || R <- Rows, maps:get(workers, R) =:= N,
                maps:get(instrumentation, R) =/= "baseline"]
    end.

has_runs(R) -> is_number(maps:get(mrt_mean_ms_mean, R, "")).

setup_label(#{instrumentation := "tracing"}) -> "VM tracing alone (the outline floor)";
setup_label(R) ->
    case maps:get(monitors, R) of
        "none" -> maps:get(instrumentation, R) ++ " (instrumentation alone)";
        M -> io_lib:format("~s + ~s monitors, ~s us/event",
                           [maps:get(instrumentation, R), M, num(maps:get(cost_us, R))])
    end.

%% Per cent over the baseline, or why there is none.
pct(Key, #{row := R, base := B}) ->
    case {maps:get(Key, R, ""), maps:get(Key, B, "")} of
        {V, Base} when is_number(V), is_number(Base), Base > 0 -> {ok, 100 * (V - Base) / Base, V, Base};
        _ -> none
    end.

markdown(Table) ->
    Head = ["| level | shape | n | set-up |",
            [[" ", L, " overhead (set-up / baseline) |"] || {_, L, _} <- ?METRICS],
            " verdicts as expected |\n",
            "|---|---|---|---|", ["---|" || _ <- ?METRICS], "---|\n"],
    [Head, [md_row(T) || T <- Table]].

md_row(T = #{level := L, shape := S, workers := N, setup := Setup, crashed := Crashed}) ->
    Cells = case {Crashed, has_runs(maps:get(row, T))} of
                {_, false} -> [io_lib:format(" crashed (~s) |", [Crashed]) || _ <- ?METRICS];
                _ -> [md_cell(pct(K, T), Scale) || {K, _, Scale} <- ?METRICS]
            end,
    ["| ", L, " | ", S, " | ", integer_to_list(N), " | ", Setup, " |", Cells,
     verdict_cell(maps:get(row, T)), "\n"].

%% "15001 of 15001" over all repetitions; a wrong verdict is shouted.
verdict_cell(R) ->
    case {maps:get(monitored, R, ""), maps:get(wrong_verdicts, R, "")} of
        {0, _} -> " (no monitors) |";
        {M, 0} when is_integer(M) -> io_lib:format(" ~b of ~b |", [M, M]);
        {M, W} when is_integer(M), is_integer(W) -> io_lib:format(" **~b WRONG** of ~b |", [W, M]);
        _ -> " n/a |"
    end.

md_cell(none, _) -> " n/a |";
md_cell({ok, Pct, V, Base}, Scale) ->
    io_lib:format(" ~s% (~s / ~s) |", [signed(Pct), num(V * Scale), num(Base * Scale)]).

csv_header() ->
    [level, shape, workers, setup, crashed, monitored, wrong_verdicts
     | lists:append([[K, list_to_atom(atom_to_list(K) ++ "_baseline"),
                      list_to_atom(atom_to_list(K) ++ "_overhead_pct")] || {K, _, _} <- ?METRICS])].

csv_row(T = #{level := L, shape := S, workers := N, setup := Setup, crashed := C}) ->
    [L, S, N, lists:flatten(Setup), C, maps:get(monitored, maps:get(row, T), ""),
     maps:get(wrong_verdicts, maps:get(row, T), "")
     | lists:append([case pct(K, T) of
                         {ok, P, V, B} -> [V, B, P];
                         none -> ["", "", ""]
                     end || {K, _, _} <- ?METRICS])].

%%% Plots (Figs. 7-9) --------------------------------------------------------------------

plot(Read, Plots) ->
    Script = ["set terminal pngcairo size 640,420 font 'sans,10'\nset grid\nset key top left\n",
              "set offsets graph 0.05, graph 0.05, graph 0.05, 0\n",
              [level_plots(L, Rows, Plots) || {L, _Dir, Rows} <- Read],
              [ts_plots(L, Dir, Rows, Plots) || {L, Dir, Rows} <- Read]],
    Path = filename:join(Plots, "study.gp"),
    ok = file:write_file(Path, Script),
    case os:find_executable("gnuplot") of
        false -> {error, "gnuplot is not installed: no plots were drawn"};
        Exe -> gnuplot(Exe, Path)
    end.

%% Figs. 7-8: a metric against n, one line per set-up, per shape. Levels with a single n
%% (moderate concurrency) are left to the table.
level_plots(Level, Rows, Plots) ->
    case lists:usort([maps:get(workers, R) || R <- Rows]) of
        [_] -> [];
        _ ->
            [[shape_plot(Level, S, K, Label, Scale, [R || R <- Rows, maps:get(shape, R) =:= S], Plots)
              || {K, Label, Scale} <- ?METRICS]
             || S <- lists:usort([maps:get(shape, R) || R <- Rows])]
    end.

shape_plot(Level, Shape, K, Label, Scale, Rows, Plots) ->
    Setups = lists:usort([plot_setup(R) || R <- Rows]),
    Lines = [begin
                 Dat = filename:join(Plots, lists:flatten([Level, "-", Shape, "-", Su, "-", atom_to_list(K), ".dat"])),
                 Pts = lists:sort([{maps:get(workers, R), maps:get(K, R), sd_of(K, R)}
                                   || R <- Rows, plot_setup(R) =:= Su, has_runs(R)]),
                 ok = file:write_file(Dat, [io_lib:format("~b ~p ~p~n", [N, V * Scale, Sd * Scale])
                                            || {N, V, Sd} <- Pts]),
                 io_lib:format("'~ts' using 1:2:3 with yerrorlines title '~s'", [Dat, Su])
             end || Su <- Setups],
    Png = filename:join(Plots, lists:flatten([Level, "-", Shape, "-", atom_to_list(K), ".png"])),
    io_lib:format("set output '~ts'\nset xlabel 'workers (n)'\nset ylabel '~s'\n"
                  "set title '~s concurrency, ~s: ~s against n'\nplot ~ts\n",
                  [Png, Label, Level, Shape, Label, lists:join(", ", Lines)]).

sd_of(K, R) ->
    Sd = list_to_atom(lists:sublist(atom_to_list(K), length(atom_to_list(K)) - 5) ++ "_sd"),
    case maps:get(Sd, R, 0) of
        V when is_number(V) -> V;
        _ -> 0
    end.

plot_setup(R) ->
    case maps:get(instrumentation, R) of
        "baseline" -> "baseline";
        "tracing" -> "tracing";
        I -> I ++ "-" ++ maps:get(monitors, R)
    end.

%% Fig. 9: memory and scheduler utilisation over a whole run (first repetition) at the
%% largest n, one line per set-up, per shape.
ts_plots(Level, Dir, Rows, Plots) ->
    N = lists:max([maps:get(workers, R) || R <- Rows]),
    Top = [R || R <- Rows, maps:get(workers, R) =:= N, has_runs(R)],
    [[begin
          Lines = [io_lib:format("'~ts' using ($1/1000):($~b*~p) every ::1 with lines title '~s'",
                                 [filename:join([Dir, "runs", maps:get(benchmark, R), "rep1", "timeseries.csv"]),
                                  Col, Scale, plot_setup(R)])
                   || R <- Top, maps:get(shape, R) =:= S],
          Png = filename:join(Plots, lists:flatten([Level, "-", S, "-ts-", atom_to_list(Name), ".png"])),
          io_lib:format("set output '~ts'\nset datafile separator ','\nset xrange [0:*]\nset xlabel 'time (s)'\n"
                        "set ylabel '~s'\nset title '~s concurrency, ~s, n = ~b: ~s over the run'\n"
                        "plot ~ts\nset datafile separator whitespace\nset autoscale x\n",
                        [Png, Label, Level, S, N, Label, lists:join(", ", Lines)])
      end || {Col, Name, Label, Scale} <- ?TS]
     || S <- lists:usort([maps:get(shape, R) || R <- Top])].

gnuplot(Exe, Path) ->
    Port = open_port({spawn_executable, Exe}, [{args, [Path]}, exit_status, stderr_to_stdout, binary]),
    collect(Port, []).

collect(Port, Acc) ->
    receive
        {Port, {data, D}} -> collect(Port, [D | Acc]);
        {Port, {exit_status, 0}} -> ok;
        {Port, {exit_status, S}} ->
            {error, io_lib:format("gnuplot exited with ~b: ~ts", [S, lists:reverse(Acc)])}
    end.

%%% HTML ---------------------------------------------------------------------------------

html(Read, Md, Gnuplot, Plots) ->
    Pngs = lists:sort(filelib:wildcard("*.png", Plots)),
    ["<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>riarc: the study of 000 &sect;5</title>"
     "<style>body{font-family:sans-serif;max-width:1300px;margin:auto}img{max-width:32%}"
     "pre{font-size:85%}</style></head><body>\n<h1>Inline, centralised and riarc monitoring against the baseline</h1>\n",
     "<p>Experiments: ", lists:join(", ", [io_lib:format("~s (<code>~ts</code>)", [L, D]) || {L, D, _} <- Read]),
     ". Overhead = (set-up &minus; baseline) / baseline at the largest n of each level.</p>\n",
     case Gnuplot of ok -> ""; {error, Why} -> ["<p><b>Plots missing:</b> ", Why, "</p>"] end,
     "<h2>Overhead (Table 3 analogue)</h2>\n<pre>", Md, "</pre>\n<h2>Plots</h2>\n",
     [["<img src=\"plots/", P, "\" alt=\"", P, "\">\n"] || P <- Pngs],
     "</body></html>\n"].

%%% aggregate.csv ------------------------------------------------------------------------

%% @doc Reads an experiment's aggregate.csv: numbers become numbers, the rest strings.
-spec read_aggregate(file:filename()) -> {ok, [row()]} | {error, term()}.
read_aggregate(Path) ->
    case file:read_file(Path) of
        {ok, Bin} ->
            case binary:split(Bin, <<"\n">>, [global, trim_all]) of
                [Header | Lines] ->
                    Cols = [binary_to_atom(C) || C <- binary:split(Header, <<",">>, [global])],
                    {ok, [maps:from_list(lists:zip(Cols, [value(F) || F <- binary:split(L, <<",">>, [global])]))
                          || L <- Lines]};
                [] -> {error, {empty, Path}}
            end;
        {error, Reason} -> {error, {read, Path, Reason}}
    end.

value(F) ->
    S = binary_to_list(F),
    try list_to_integer(S)
    catch error:badarg ->
            try list_to_float(S) catch error:badarg -> S end
    end.

-spec format_error(term()) -> string().
format_error({read, Path, Reason}) ->
    lists:flatten(io_lib:format("Cannot read ~ts: ~ts (run the experiment first).",
                                [Path, file:format_error(Reason)]));
format_error({empty, Path}) ->
    lists:flatten(io_lib:format("~ts is empty.", [Path])).

signed(P) when P >= 0 -> "+" ++ num(P);
signed(P) -> num(P).

num(X) when is_integer(X) -> integer_to_list(X);
num(X) when abs(X) >= 100 -> float_to_list(float(X), [{decimals, 0}]);
num(X) when abs(X) >= 1 -> float_to_list(float(X), [{decimals, 1}]);
num(X) -> float_to_list(float(X), [{decimals, 3}]).
