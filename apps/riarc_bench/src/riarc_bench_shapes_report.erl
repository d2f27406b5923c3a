%% @doc The table of `make bench-shapes' (issues 17 and 30), read from the `runs.csv' that
%% `bin/riarc bench -m riarc_bench_shapes ...' (riarc_bench_user) wrote for each shape:
%% per shape and set-up the median wall time [95 % interval], its ratio to the baseline,
%% to the tracing floor (the VM's tracing with riarc's own flags and trace patterns, into
%% a sink) and to centralised monitoring, the events traced, and where the system measured them (the load driver) the
%% median of the runs' mean response times (MRT) and its ratio to centralised
%% monitoring's; then the issue's targets, each a ratio of medians with its bootstrap
%% interval and whether it is met.
%% ```
%% 1> ok = filelib:ensure_dir("/tmp/riarc_shapes/pingpong/x").
%% 2> ok = file:write_file("/tmp/riarc_shapes/pingpong/runs.csv", "setup,rep,status,wall_ms,events\n"
%% ..    "baseline,1,ok,10.0,0\ntracing,1,ok,20.0,5\nriarc,1,ok,21.0,5\n").
%% 3> {ok, Md} = riarc_bench_shapes_report:summary("/tmp/riarc_shapes", ["pingpong"]).
%% 4> io:put_chars(Md).
%% | shape | set-up | runs | wall ms [95 % CI] | x baseline [95 % CI] | x floor [95 % CI] | ...
%% ...
%% 5> riarc_bench_shapes_report:summary("/tmp/no_such_dir", ["flat"]).
%% {error,{riarc_bench_shapes_report,{riarc_bench_study,{read,"/tmp/no_such_dir/flat/runs.csv",enoent}}}}
%% '''
-module(riarc_bench_shapes_report).

-export([main/1, summary/2, target/2, verdict/2, format_error/1]).
-export_type([error_reason/0]).

-type error_reason() :: {riarc_bench_study, term()}.
%% A target: the ratio of two set-ups' medians of a metric within one shape's runs.
-type target() :: #{shape := string(), metric := wall_ms | lat_mean_us, setup := string(),
                    versus := string(), bound := float(), what := string()}.

%% Issue 30's targets (and issue 17's that it keeps), on the shapes scripts/bench-shapes
%% runs: riarc no dearer than centralised monitoring anywhere, in time and in the
%% system's response time.
-define(TARGETS,
        [#{shape => "load-alone", metric => lat_mean_us, setup => "riarc", versus => "centralised",
           bound => 1.0, what => "load driver, burst n = 3000, instrumentation alone: MRT, riarc / centralised"},
         #{shape => "load-burst", metric => lat_mean_us, setup => "riarc", versus => "centralised",
           bound => 1.0, what => "load driver, burst n = 3000, the property: MRT, riarc / centralised"},
         #{shape => "flat", metric => wall_ms, setup => "riarc", versus => "centralised",
           bound => 1.0, what => "flat: riarc / centralised"},
         #{shape => "chains", metric => wall_ms, setup => "riarc", versus => "centralised",
           bound => 1.0, what => "chains: riarc / centralised"},
         #{shape => "wide", metric => wall_ms, setup => "riarc", versus => "centralised",
           bound => 1.0, what => "wide trees: riarc / centralised"},
         #{shape => "pingpong", metric => wall_ms, setup => "riarc", versus => "centralised",
           bound => 1.0, what => "ping-pong: riarc / centralised"},
         #{shape => "flat", metric => wall_ms, setup => "riarc", versus => "baseline",
           bound => 1.5, what => "flat with the property's trace patterns: riarc / unmonitored"},
         #{shape => "flat", metric => wall_ms, setup => "tracing", versus => "baseline",
           bound => none, what => "flat: the floor with the same patterns / unmonitored"},
         #{shape => "flat", metric => wall_ms, setup => "riarc", versus => "tracing",
           bound => none, what => "flat: riarc / the floor with the same patterns (riarc's own cost)"},
         #{shape => "chains", metric => wall_ms, setup => "riarc", versus => "baseline",
           bound => 10.0, what => "chains, 100 of depth 100: riarc / unmonitored"},
         #{shape => "pingpong", metric => wall_ms, setup => "riarc", versus => "tracing",
           bound => 1.05, what => "ping-pong: riarc / the floor"}]).

-define(PAIRS, [{"riarc_inline", "riarc_isolated"}, {"riarc_low", "riarc_normal"}]).
-define(SETUPS, ["baseline", "tracing", "riarc", "riarc_isolated", "riarc_inline", "riarc_low",
                 "riarc_normal", "riarc_evm", "riarc_paper", "centralised", "inline"]).

%% @doc Prints the summary of the shapes under Dir (the script's bench-results/shapes);
%% exit status 0, or 2 when a shape's runs.csv cannot be read.
-spec main([string()]) -> no_return().
main([Dir | Shapes]) ->
    case summary(Dir, Shapes) of
        {ok, Md} -> io:put_chars(Md), halt(0);
        {error, {?MODULE, Reason}} ->
            io:format(standard_error, "riarc: ~ts~n", [format_error(Reason)]),
            halt(2)
    end.

%% @doc The Markdown table of the shapes (directories under Dir, each with a runs.csv),
%% then the targets whose shapes are among them.
-spec summary(file:filename(), [string()]) -> {ok, binary()} | {error, {?MODULE, error_reason()}}.
summary(Dir, Shapes) ->
    try [{S, read(filename:join([Dir, S, "runs.csv"]))} || S <- Shapes] of
        Runs ->
            Targets = [target(T, proplists:get_value(Sh, Runs))
                       || T = #{shape := Sh} <- ?TARGETS, lists:keymember(Sh, 1, Runs)],
            {ok, iolist_to_binary([table(Runs), "\n", pairs(Runs), targets(Targets)])}
    catch throw:{read, E} -> {error, {?MODULE, E}}
    end.

%% @doc One sentence for an error of summary/2.
-spec format_error(error_reason()) -> string().
format_error({riarc_bench_study, R}) -> riarc_bench_study:format_error(R).

read(Path) ->
    case riarc_bench_study:read_aggregate(Path) of
        {ok, Rows} -> [R || R = #{status := "ok"} <- Rows];
        {error, {riarc_bench_study, R}} -> throw({read, {riarc_bench_study, R}})
    end.

%% The values of one metric over a set-up's successful runs.
values(Rows, Setup, Metric) ->
    [V || R = #{setup := S} <- Rows, S =:= Setup, is_number(V = maps:get(Metric, R, ""))].

setups(Rows) -> [S || S <- ?SETUPS, values(Rows, S, wall_ms) =/= []].

table(Runs) ->
    ["| shape | set-up | runs | wall ms [95 % CI] | x baseline [95 % CI] | x floor [95 % CI] "
     "| x centralised [95 % CI] | events traced | MRT ms [95 % CI] | MRT x centralised [95 % CI] |\n",
     "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
     [[row(Shape, Rows, S) || S <- setups(Rows)] || {Shape, Rows} <- Runs]].

row(Shape, Rows, S) ->
    Wall = values(Rows, S, wall_ms),
    Ratio = fun(Metric, Other) when Other =/= S ->
                    case values(Rows, Other, Metric) of
                        [] -> "-";
                        Ys -> ratio(riarc_bench_ci:compare(values(Rows, S, Metric), Ys))
                    end;
               (_, _) -> "-"
            end,
    Events = case values(Rows, S, events) of
                 [] -> "-";
                 Es -> riarc_bench_ci:num(riarc_bench_ci:median(Es))
             end,
    {Mrt, MrtVs} = case values(Rows, S, lat_mean_us) of
                       [] -> {"-", "-"};
                       Ms -> {riarc_bench_ci:format(riarc_bench_ci:summary(Ms), 1.0e-3),
                              Ratio(lat_mean_us, "centralised")}
                   end,
    io_lib:format("| ~s | ~s | ~b | ~s | ~s | ~s | ~s | ~s | ~s | ~s |~n",
                  [Shape, S, length(Wall), riarc_bench_ci:format(riarc_bench_ci:summary(Wall)),
                   Ratio(wall_ms, "baseline"), Ratio(wall_ms, "tracing"), Ratio(wall_ms, "centralised"),
                   Events, Mrt, MrtVs]).

%% Two variants of riarc measured side by side in the same batches (riarc_bench_user's
%% set-ups): where the monitors run (option analysis) and the tracers' priority (option
%% tracer_priority). Per shape that has both: the ratio of their medians, and which is
%% cheaper when the interval says so.
pairs(Runs) ->
    Rows = [pair_row(Shape, Rows, A, B, Metric)
            || {A, B} <- ?PAIRS, {Shape, Rows} <- Runs, Metric <- [wall_ms, lat_mean_us],
               values(Rows, A, Metric) =/= [], values(Rows, B, Metric) =/= []],
    case Rows of
        [] -> [];
        _ -> ["| shape | metric | set-up / other set-up | ratio of medians [95 % CI] | cheaper |\n",
              "| --- | --- | --- | --- | --- |\n", Rows, "\n"]
    end.

pair_row(Shape, Rows, A, B, Metric) ->
    C = riarc_bench_ci:compare(values(Rows, A, Metric), values(Rows, B, Metric)),
    Cheaper = case C of
                  #{hi := Hi} when Hi < 1 -> A;
                  #{lo := Lo} when Lo > 1 -> B;
                  _ -> "neither (the interval holds 1)"
              end,
    io_lib:format("| ~s | ~s | ~s / ~s | ~s | ~s |~n",
                  [Shape, metric(Metric), A, B, ratio(C), Cheaper]).

metric(wall_ms) -> "wall";
metric(lat_mean_us) -> "MRT".

%% @doc A target measured on one shape's successful runs (maps with setup and the
%% metric): the ratio of the two set-ups' medians with its interval.
-spec target(target(), [map()]) -> #{comparison := riarc_bench_ci:comparison(), _ => _}.
target(T = #{metric := M, setup := S, versus := V}, Rows) ->
    T#{comparison => riarc_bench_ci:compare(values(Rows, S, M), values(Rows, V, M))}.

targets(Ts) ->
    ["| target | bound | ratio of medians [95 % CI] | verdict |\n",
     "| --- | --- | --- | --- |\n",
     [io_lib:format("| ~ts | ~s | ~s | ~ts |~n",
                    [W, bound(B), ratio(C), verdict(B, C)])
      || #{what := W, bound := B, comparison := C} <- Ts]].

bound(none) -> "-";
bound(B) -> io_lib:format("<= ~.2f", [B]).

ratio(#{ratio := R, lo := Lo, hi := Hi}) -> io_lib:format("~.2f [~.2f, ~.2f]", [R, Lo, Hi]);
ratio(#{ratio := R}) -> io_lib:format("~.2f (n too small)", [R]);
ratio(_) -> "-".

%% @doc Whether a ratio meets its bound: met or missed by the median, and by how much
%% (the median over the bound, in per cent); the interval says whether the runs can
%% tell.
%% ```
%% 1> riarc_bench_shapes_report:verdict(1.5, #{ratio => 3.0, lo => 2.0, hi => 4.0}).
%% "missed by +100 % (the whole interval is above)"
%% '''
-spec verdict(float() | none, map()) -> string().
verdict(none, _) -> "(context)";
verdict(B, #{ratio := R} = C) ->
    Lo = maps:get(lo, C, R),
    Hi = maps:get(hi, C, R),
    if
        Hi =< B -> "met (the whole interval)";
        R =< B -> "met at the median (the interval reaches " ++ riarc_bench_ci:num(Hi) ++ ")";
        Lo > B -> "missed by " ++ pct(R / B) ++ " (the whole interval is above)";
        true -> "missed by " ++ pct(R / B) ++ " at the median (the interval reaches down to "
                    ++ riarc_bench_ci:num(Lo) ++ ")"
    end;
verdict(_, _) -> "not measured".

pct(X) -> "+" ++ riarc_bench_ci:num(100 * (X - 1)) ++ " %".
