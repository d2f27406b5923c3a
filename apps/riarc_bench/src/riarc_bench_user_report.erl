%% @doc The load driver's report on a user's own system ({@link riarc_bench_user}): the
%% statistics of the runs per set-up (riarc_bench_ci's medians with their 95 % intervals,
%% and ratios to the baseline), the table `bin/riarc bench -m' prints, and the
%% self-contained `report.html' with its plots. It reads the rows the driver collected
%% and runs nothing itself: what a run measured is the driver's.
%% ```
%% 1> Rows = [#{setup => S, rep => I, status => ok, wall_ms => W, mem_peak => 3.0e7,
%% ..           monitored => 1, accepted => 1, rejected => 0, errors => 0, inconclusive => 0}
%% ..         || {S, Ws} <- [{baseline, [40.0, 42.0, 41.0]}, {riarc, [60.0, 63.0, 61.0]}],
%% ..            {I, W} <- lists:enumerate(Ws)].
%% 2> Summary = riarc_bench_user_report:summarise([baseline, riarc], Rows).
%% 3> io:put_chars(riarc_bench_user_report:table(#{summary => Summary})).
%% set-up    runs  wall ms [95 % CI]  x unmonitored (95 % CI)  memory MB [CI]     verdicts                                    latency us
%% baseline  3     41.0 [40.0, 42.0]  1x (reference)           30.0 [30.0, 30.0]  -                                           -
%% riarc     3     61.0 [60.0, 63.0]  1.49x (1.43 to 1.57)     30.0 [30.0, 30.0]  3 accept, 0 reject, 0 error, 0 open (of 3)  -
%% ok
%% '''
-module(riarc_bench_user_report).

-export([summarise/2, table/1, write_report/4]).

%% @doc Per set-up: the summaries of its successful runs, and the comparison of its wall
%% time and memory with the baseline's.
-spec summarise([atom()], [map()]) -> [{atom(), map()}].
summarise(Setups, Rows) ->
    Vals = fun(S, K) -> [V || #{setup := S1, status := ok} = R <- Rows, S1 =:= S,
                              is_number(V = maps:get(K, R, undefined))] end,
    [{S, #{runs => length([x || #{setup := S1, status := ok} <- Rows, S1 =:= S]),
           failed_runs => length([x || #{setup := S1, status := error} <- Rows, S1 =:= S]),
           wall => riarc_bench_ci:summary(Vals(S, wall_ms)),
           wall_vs => riarc_bench_ci:compare(Vals(S, wall_ms), Vals(baseline, wall_ms)),
           mem => riarc_bench_ci:summary(Vals(S, mem_peak)),
           mem_vs => riarc_bench_ci:compare(Vals(S, mem_peak), Vals(baseline, mem_peak)),
           rss => riarc_bench_ci:summary(Vals(S, rss_peak)),
           events => riarc_bench_ci:summary(Vals(S, events)),
           lat => [{P, riarc_bench_ci:summary(Vals(S, K))}
                   || {P, K} <- [{"mean", lat_mean_us}, {"p50", lat_p50_us},
                                 {"p90", lat_p90_us}, {"p99", lat_p99_us}],
                      Vals(S, K) =/= []],
           verdicts => maps:from_list([{K, lists:sum(Vals(S, K))}
                                       || K <- [monitored, accepted, rejected, errors,
                                                inconclusive]])}}
     || S <- Setups].

ratio_text(baseline, _) -> "1x (reference)";
ratio_text(_, C) -> riarc_bench_ci:format_ratio(C).

%% A median with its interval; with too few runs the median alone (the table's last line
%% says why, once).
value_text(#{enough := false, median := M}, Scale) -> riarc_bench_ci:num(M * Scale);
value_text(S, Scale) -> riarc_bench_ci:format(S, Scale).

verdict_text(baseline, _) -> "-";
verdict_text(tracing, _) -> "-";
verdict_text(_, #{monitored := M, accepted := A, rejected := R, errors := E, inconclusive := I}) ->
    lists:flatten(io_lib:format("~b accept, ~b reject, ~b error, ~b open (of ~b)",
                                [A, R, E, I, M])).

lat_text([]) -> "-";
lat_text(Ls) ->
    string:join([P ++ " " ++ value_text(S, 1) || {P, S} <- Ls], "; ").

%% @doc The table `bench -m' prints: per set-up the median wall time [95 % CI], its ratio
%% to the baseline [CI] marked "significant" when the interval excludes 1, the median
%% peak memory and the verdicts.
%% ```
%% 1> {ok, R} = riarc_bench_user:run(Cfg, #{out => "/tmp/u"}), io:put_chars(riarc_bench_user_report:table(R)).
%% set-up       runs  wall ms [95 % CI]    x unmonitored (95 % CI)   memory MB  verdicts
%% baseline     5     41.2 [39.0, 44.1]    1x (reference)            22.1       -
%% '''
-spec table(#{summary := [{atom(), map()}], _ => _}) -> iolist().
table(#{summary := Summary}) ->
    Lines = [["set-up", "runs", "wall ms [95 % CI]", "x unmonitored (95 % CI)", "memory MB [CI]",
              "verdicts", "latency us"]]
        ++ [[atom_to_list(S), integer_to_list(Runs), value_text(W, 1),
             ratio_text(S, WV), value_text(Mem, 1.0e-6),
             verdict_text(S, V), lat_text(L)]
            || {S, #{runs := Runs, wall := W, wall_vs := WV, mem := Mem, verdicts := V,
                     lat := L}} <- Summary],
    Widths = [lists:max([string:length(lists:nth(I, L)) || L <- Lines])
              || I <- lists:seq(1, 7)],
    Few = [x || {_, #{wall := #{enough := false}}} <- Summary],
    [[[string:trim([string:pad(C, W + 2) || {C, W} <- lists:zip(L, Widths)], trailing), $\n]
      || L <- Lines],
     [io_lib:format("fewer than ~b runs: no intervals (give --runs ~b or more)~n",
                    [riarc_bench_ci:min_n(), riarc_bench_ci:min_n()]) || Few =/= []]].

%% @doc Writes Out/report.html (and its plots under Out/plots) for the runs' summary: per
%% set-up its medians and ratios, the latencies the user's code measured, and how the
%% runs were made. Returns the page's file name.
-spec write_report(file:filename(), #{mfa := {module(), atom(), list()},
                                      monitors := {module, module()} | {props, file:filename()},
                                      runs := pos_integer(), _ => _},
                   [atom()], [{atom(), map()}]) -> file:filename().
write_report(Out, #{mfa := {M, F, A}, monitors := Mons, runs := N}, Setups, Summary) ->
    Plots = filename:join(Out, "plots"),
    ok = filelib:ensure_dir(filename:join(Plots, "x")),
    Labels = [atom_to_list(S) || S <- Setups],
    Wall = maps:from_list([{atom_to_list(S), maps:get(wall, X)} || {S, X} <- Summary]),
    Mem = maps:from_list([{atom_to_list(S), scale(maps:get(mem, X), 1.0e-6)} || {S, X} <- Summary]),
    Cmds = [riarc_bench_plot:bars(Plots, "wall", "wall time per run (median, 95 % CI)",
                                  "ms", [{"wall time", Wall}], Labels),
            riarc_bench_plot:bars(Plots, "memory", "peak erlang:memory(total) (median, 95 % CI)",
                                  "MB", [{"memory", Mem}], Labels)],
    Figures = case riarc_bench_plot:run(Plots, Cmds) of
                  ok -> ["<div class=\"figs\">",
                         riarc_bench_html:figure("plots/wall.svg", "wall time per set-up"),
                         riarc_bench_html:figure("plots/memory.svg", "peak memory per set-up"),
                         "</div>\n"];
                  {error, {riarc_bench_plot, E}} -> ["<p>", riarc_bench_html:esc(riarc_bench_plot:format_error(E)), "</p>\n"]
              end,
    Cols = [{"set-up", text}, {"runs", num}, {"wall ms [95 % CI]", num},
            {"wall x unmonitored (95 % CI)", num}, {"memory MB [CI]", num},
            {"memory x unmonitored (95 % CI)", num}, {"RSS peak MB", num}, {"events traced", num},
            {"verdicts (all runs)", text}],
    Rows = [[atom_to_list(S), integer_to_list(Runs + Failed),
             cell(value_text(W, 1), W), ratio_cell(S, WV),
             cell(value_text(Mem1, 1.0e-6), Mem1), ratio_cell(S, MV),
             cell(value_text(Rss, 1.0e-6), Rss), cell(value_text(Ev, 1), Ev),
             verdict_text(S, V)]
            || {S, #{runs := Runs, failed_runs := Failed, wall := W, wall_vs := WV,
                     mem := Mem1, mem_vs := MV, rss := Rss, events := Ev, verdicts := V}}
                   <- Summary],
    %% The latencies the user's own code measured ({latencies_us, L}): per run the mean
    %% and p50/p90/p99, then per set-up the median of those over the runs.
    LatRows = [[atom_to_list(S) | [lat_cell(P, L) || P <- ["mean", "p50", "p90", "p99"]]]
               || {S, #{lat := L}} <- Summary, L =/= []],
    Lat = case LatRows of
              [] -> [];
              _ -> ["<h2>Latencies your system measured</h2>\n<p>M:F returned "
                    "<code>{latencies_us, L}</code>: the mean (for response times, the "
                    "MRT) and percentiles of each run's L, then their median over the runs "
                    "[95 % CI], in µs.</p>\n",
                    riarc_bench_html:table([{"set-up", text}, {"mean µs", num}, {"p50 µs", num},
                                            {"p90 µs", num}, {"p99 µs", num}], LatRows)]
          end,
    Guide = ["Your system ", riarc_bench_html:esc(io_lib:format("~s:~s/~b", [M, F, length(A)])),
             " with the monitors ", riarc_bench_html:esc(mons_label(Mons)), ", ",
             integer_to_list(N), " counted runs per set-up, each in a fresh VM, interleaved, "
             "after one uncounted warm-up per set-up. A cell is the median over the runs and "
             "its 95 % bootstrap interval; a ratio to the baseline is marked significant when "
             "its interval excludes 1. Fewer than three runs give no interval: the value alone. "
             "Memory is the peak of erlang:memory(total); the RSS peak is the VM's VmHWM."],
    Body = ["<h2>Set-ups</h2>\n", riarc_bench_html:table(Cols, Rows), Lat, Figures,
            "<p>Every run: <code>runs.csv</code> next to this page.</p>\n"],
    Html = filename:join(Out, "report.html"),
    ok = file:write_file(Html, riarc_bench_html:page("riarc bench: your own system", Guide, Body)),
    Html.

lat_cell(P, L) ->
    case lists:keyfind(P, 1, L) of
        {P, S} -> cell(value_text(S, 1), S);
        false -> "n/a"
    end.

scale(S = #{median := _}, K) ->
    maps:map(fun(Key, V) when Key =:= median; Key =:= lo; Key =:= hi -> V * K;
                (_, V) -> V end, S);
scale(S, _) -> S.

cell(Text, #{median := M}) -> {Text, M};
cell(Text, _) -> Text.

ratio_cell(S, C = #{ratio := R}) ->
    Text = ratio_text(S, C),
    case C of
        #{significant := true} when S =/= baseline ->
            {raw, ["<span class=\"sig\">", riarc_bench_html:esc(Text), "</span>"]};
        _ -> {Text, R}
    end;
ratio_cell(S, C) -> ratio_text(S, C).

mons_label({module, Mod}) -> atom_to_list(Mod);
mons_label({props, File}) -> File.
