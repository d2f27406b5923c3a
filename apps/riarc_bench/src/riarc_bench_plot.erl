%% @doc The plots of the reports, drawn by gnuplot into SVG files: grouped bar charts
%% with 95 % intervals as error bars, box plots of per-run values, metrics against n
%% (only where there is more than one n) and time series. Each function writes its data
%% files and returns the gnuplot commands for one plot; `run/2' draws them all with one
%% gnuplot process.
%%
%% Every set-up has one fixed colour, the same in every plot of every report, taken from
%% the Okabe-Ito palette (distinguishable with the common colour-vision deficiencies);
%% legends sit outside the data.
%%
%% ```
%% 1> Dir = "/tmp/p", ok = filelib:ensure_path(Dir).
%% 2> S = fun riarc_bench_ci:summary/1.
%% 3> Cmds = riarc_bench_plot:bars(Dir, "mrt", "MRT", "ms",
%%        [{"Steady", #{"baseline" => S([1, 2, 3]), "riarc-soundness" => S([4, 5, 6])}}],
%%        ["baseline", "riarc-soundness"]).
%% 4> riarc_bench_plot:run(Dir, [Cmds]).
%% ok
%% 5> filelib:is_regular("/tmp/p/mrt.svg").
%% true
%% '''
-module(riarc_bench_plot).

-export([colour/2, bars/6, boxes/6, against_n/6, timeseries/7, fit/4, run/2, format_error/1]).

-export_type([line/0, error_reason/0]).

%% One line or bar series: its label, and the labels of every series of the report (so
%% that a label outside the fixed set-ups gets the same colour in every plot).
-type line() :: string().
-type error_reason() :: no_gnuplot | {gnuplot, ExitStatus :: integer(), Output :: binary()}.

-define(OKABE_ITO, ["#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7",
                    "#F0E442", "#000000"]).
-define(TERMINAL, "set terminal svg size 760,430 font 'sans,12' background '#ffffff'\n").

%% A series' name in a legend: the set-ups in plain words (their keys stay the keys of
%% the colours and files); anything else as it is.
legend("baseline") -> "unmonitored";
legend("tracing") -> "VM tracing alone";
legend(Key) ->
    case string:split(Key, "-") of
        [I, "none"] -> I ++ ", checking nothing";
        [I, "soundness"] -> I ++ ", checking every message";
        _ -> Key
    end.

%% @doc The colour of a series. Set-ups have a fixed one whatever else is plotted:
%% the baseline black, bare tracing grey, and for riarc, riarc with monitors in its
%% tracers, centralised and inline a light shade for instrumentation alone and a dark one
%% with monitors. Any other label (shapes, variants) takes the palette in the order of
%% `All', so it is stable within a report.
-spec colour(line(), [line()]) -> string().
colour(Label, All) ->
    Fixed = [{"baseline", "#000000"}, {"tracing", "#999999"},
             {"riarc_inline-none", "#88CCEE"}, {"riarc_inline", "#332288"},
             {"riarc-none", "#56B4E9"}, {"riarc", "#0072B2"},
             {"centralised-none", "#E69F00"}, {"centralised", "#D55E00"},
             {"inline-none", "#CC79A7"}, {"inline", "#009E73"},
             {"mit", "#F0E442"}],
    case [C || {Prefix, C} <- Fixed, lists:prefix(Prefix, Label)] of
        [C | _] -> C;
        [] ->
            Others = [L || L <- lists:usort(All)],
            I = index(Label, Others, 0),
            lists:nth(I rem length(?OKABE_ITO) + 1, ?OKABE_ITO)
    end.

index(_L, [], I) -> I;
index(L, [L | _], I) -> I;
index(L, [_ | Rest], I) -> index(L, Rest, I + 1).

head(Svg, Title, XLabel, YLabel) ->
    ["reset\n", ?TERMINAL, "set output '", Svg, "'\n",
     "set border 3\nset tics nomirror\nset grid ytics lc rgb '#dddddd'\n",
     "set datafile separator whitespace\nset datafile missing '?'\n",
     "set key outside right top vertical Left reverse noautotitle\n",
     "set title ", quote(Title), "\nset xlabel ", quote(XLabel), "\nset ylabel ", quote(YLabel), "\n"].

%% gnuplot strings in single quotes: a quote inside is doubled.
quote(S) -> [$', string:replace(lists:flatten(S), "'", "''", all), $'].

%% @doc Grouped bars: one group per element of Groups (e.g. a shape), one bar per set-up
%% in Setups, the median with its 95 % interval as the error bar. A set-up absent from a
%% group (crashed, not run) leaves its bar missing; one with fewer than three runs has a
%% bar without an error bar.
-spec bars(file:filename(), string(), string(), string(),
           [{string(), #{line() => riarc_bench_ci:summary()}}], [line()]) -> iodata().
bars(Dir, Name, Title, YLabel, Groups, Setups) ->
    Dat = filename:join(Dir, Name ++ ".dat"),
    Rows = [[dq(G) | lists:append([bar_cells(maps:get(S, M, #{n => 0, enough => false}))
                                   || S <- Setups])]
            || {G, M} <- Groups],
    ok = file:write_file(Dat, [[lists:join($\s, R), $\n] || R <- Rows]),
    Plots = [io_lib:format("'~ts' using ~b:~b:~b~s title ~s lc rgb '~s'",
                           [Dat, 2 + 3 * I, 3 + 3 * I, 4 + 3 * I,
                            case I of 0 -> ":xtic(1)"; _ -> "" end, quote(legend(S)), colour(S, Setups)])
             || {I, S} <- lists:zip(lists:seq(0, length(Setups) - 1), Setups)],
    [head(svg(Dir, Name), Title, "", YLabel),
     "set style data histogram\nset style histogram errorbars gap 1.5 lw 1.2\n",
     "set style fill solid 0.85 border rgb '#333333'\nset yrange [0:*]\nset xtics scale 0\n",
     "plot ", lists:join(", ", Plots), "\n"].

bar_cells(#{median := M, lo := Lo, hi := Hi}) -> [num(M), num(Lo), num(Hi)];
bar_cells(#{median := M}) -> [num(M), num(M), num(M)];
bar_cells(_) -> ["?", "?", "?"].

%% @doc Box plots of per-run values: for each group, one box per set-up (whiskers at
%% Tukey's fences, outliers as dots) with every run drawn over it. gnuplot draws a box
%% from four values on; three runs are shown as three dots, which is what they are.
-spec boxes(file:filename(), string(), string(), string(), [{string(), #{line() => [number()]}}],
            [line()]) -> iodata().
boxes(Dir, Name, Title, YLabel, Groups, Setups) ->
    Dat = filename:join(Dir, Name ++ ".dat"),
    K = length(Setups),
    Blocks = [{G, S, X, Vs}
              || {GI, {G, M}} <- enumerate(Groups), {SI, S} <- enumerate(Setups),
                 X <- [GI * (K + 1) + SI + 1], Vs <- [maps:get(S, M, [])], Vs =/= []],
    ok = file:write_file(Dat, lists:join("\n\n", [[[num(V), $\n] || V <- Vs]
                                                    || {_, _, _, Vs} <- Blocks])),
    Ticks = [io_lib:format("~s ~p", [quote(G), GI * (K + 1) + (K + 1) / 2])
             || {GI, {G, _}} <- enumerate(Groups)],
    Boxes = [io_lib:format("'~ts' index ~b using (~b):1:(0.7) with boxplot lw 1.2 lc rgb '~s' fs transparent solid 0.35, "
                           "'' index ~b using (~b):1 with points pt 7 ps 0.6 lc rgb '~s'",
                           [Dat, I, X, colour(S, Setups), I, X, colour(S, Setups)])
             || {I, {_, S, X, _}} <- enumerate(Blocks)],
    Keys = [io_lib:format("NaN with boxes fs solid 0.6 lc rgb '~s' title ~s", [colour(S, Setups), quote(legend(S))])
            || S <- Setups],
    [head(svg(Dir, Name), Title, "", YLabel),
     "set style boxplot outliers pointtype 7\nset style data boxplot\n",
     io_lib:format("set xrange [0:~b]\n", [length(Groups) * (K + 1)]),
     "set xtics (", lists:join(", ", Ticks), ") scale 0\n",
     case Blocks of
         [] -> "set label 1 'no runs' at graph 0.5, 0.5 center\nplot NaN\n";
         _ -> ["plot ", lists:join(", ", Boxes ++ Keys), "\n"]
     end].

enumerate(L) -> lists:zip(lists:seq(0, length(L) - 1), L).

%% @doc A metric against the number of workers, one line per series with 95 % intervals
%% as error bars. Returns [] (no plot) unless some series has more than one n: a single
%% n would only stack its points in one column.
-spec against_n(file:filename(), string(), string(), string(),
                [{line(), [{pos_integer(), riarc_bench_ci:summary()}]}], [line()]) -> iodata().
against_n(Dir, Name, Title, YLabel, Lines, All) ->
    case lists:usort([N || {_, Pts} <- Lines, {N, _} <- Pts]) of
        [_, _ | _] ->
            Plots = [begin
                         Dat = filename:join(Dir, Name ++ "-" ++ safe(L) ++ ".dat"),
                         ok = file:write_file(Dat, [[integer_to_list(N), $\s, lists:join($\s, bar_cells(S)), $\n]
                                                    || {N, S = #{median := _}} <- lists:sort(Pts)]),
                         io_lib:format("'~ts' using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '~s' title ~s",
                                       [Dat, colour(L, All), quote(legend(L))])
                     end || {L, Pts} <- Lines],
            [head(svg(Dir, Name), Title, "workers (n)", YLabel),
             "set offsets graph 0.05, graph 0.05, graph 0.05, 0\nset yrange [0:*]\n",
             "plot ", lists:join(", ", Plots), "\n"];
        _ -> []
    end.

%% @doc One column of several runs' timeseries.csv over time, one line per series.
%% Col is the 1-based column; values are multiplied by Scale.
-spec timeseries(file:filename(), string(), string(), string(), pos_integer(), number(),
                 [{line(), file:filename()}]) -> iodata().
timeseries(Dir, Name, Title, YLabel, Col, Scale, Lines) ->
    All = [L || {L, _} <- Lines],
    Plots = [io_lib:format("'~ts' using ($1/1000):($~b*~p) every ::1 with lines lw 1.6 lc rgb '~s' title ~s",
                           [Csv, Col, Scale, colour(L, All), quote(legend(L))])
             || {L, Csv} <- Lines],
    [head(svg(Dir, Name), Title, "time (s)", YLabel),
     "set datafile separator ','\nset xrange [0:*]\nset yrange [0:*]\n",
     "plot ", lists:join(", ", Plots), "\n"].

%% @doc The realism check (004 §4.1): a histogram of response times (column 2 of Dat,
%% against the bin centres in column 1) with the normal, log-normal and gamma densities
%% fitted to it (columns 3-5).
-spec fit(file:filename(), string(), string(), file:filename()) -> iodata().
fit(Dir, Name, Title, Dat) ->
    [head(svg(Dir, Name), Title, "response time (ms)", "density"),
     "set xrange [0:*]\nset style fill solid 0.3 noborder\n",
     io_lib:format("plot '~ts' using 1:2 with boxes lc rgb '#999999' title 'sample', "
                   "'' using 1:3 with lines lw 2 lc rgb '#0072B2' title 'normal', "
                   "'' using 1:4 with lines lw 2 lc rgb '#D55E00' title 'log-normal', "
                   "'' using 1:5 with lines lw 2 dt 2 lc rgb '#009E73' title 'gamma'\n", [Dat])].

svg(Dir, Name) -> filename:join(Dir, Name ++ ".svg").

%% File names from labels: letters, digits, '-', '_' and '.' only.
safe(L) -> [case C of
                _ when C >= $a, C =< $z; C >= $A, C =< $Z; C >= $0, C =< $9 -> C;
                $- -> C; $_ -> C; $. -> C;
                _ -> $_
            end || C <- lists:flatten(L)].

dq(S) -> [$", [C || C <- lists:flatten(S), C =/= $"], $"].

num(X) when is_integer(X) -> integer_to_list(X);
num(X) -> float_to_list(float(X), [{decimals, 6}, compact]).

%% @doc Writes the commands to Dir/plots.gp and runs gnuplot on them.
-spec run(file:filename(), [iodata()]) -> ok | {error, {?MODULE, error_reason()}}.
run(Dir, Commands) ->
    Script = filename:join(Dir, "plots.gp"),
    ok = file:write_file(Script, Commands),
    case os:find_executable("gnuplot") of
        false -> {error, {?MODULE, no_gnuplot}};
        Exe ->
            Port = open_port({spawn_executable, Exe}, [{args, [Script]}, exit_status,
                                                       stderr_to_stdout, binary]),
            collect(Port, [])
    end.

collect(Port, Acc) ->
    receive
        {Port, {data, D}} -> collect(Port, [D | Acc]);
        {Port, {exit_status, 0}} -> ok;
        {Port, {exit_status, S}} ->
            {error, {?MODULE, {gnuplot, S, iolist_to_binary(lists:reverse(Acc))}}}
    end.

%% @doc One sentence for an error of run/2.
-spec format_error(error_reason()) -> string().
format_error(no_gnuplot) -> "gnuplot is not installed: no plots were drawn";
format_error({gnuplot, S, Out}) ->
    lists:flatten(io_lib:format("gnuplot exited with ~b: ~ts", [S, string:trim(Out)])).
