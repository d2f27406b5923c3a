%% @doc The end of `make demo' (`bin/riarc demo'): what monitoring costs, measured on a
%% small scale (measure/1: two small experiments of the load driver and their comparison,
%% written as an HTML report), and the summary the demo ends with (lines/3): at most
%% five plain sentences, what riarc caught and what its monitoring cost, each cost as a
%% ratio to the unmonitored system with its 95 % interval and the scale it was measured
%% at, then where the full table is.
%% ```
%% 1> C = riarc_bench_ci:compare([3.0, 3.3, 3.6], [1.0, 1.1, 1.2]).
%% 2> M = riarc_bench_ci:compare([20.0, 21.0, 22.0], [10.0, 10.0, 10.0]).
%% 3> Row = #{level => "high", shape => "steady", workers => 3000, key => "riarc-soundness",
%% ..        crashed => "", row => #{requests => 100},
%% ..        cmp => #{mrt_mean_ms_mean => C, mem_mean_mean => M}}.
%% 4> [L1, L2, L3] = riarc_demo_summary:lines(#{runs => 3, caught => 3, rejects => 6}, [Row], "r.html").
%% 5> L1.
%% "riarc caught the double-booking race in all 3 monitored runs: 6 rejects, each shown above with the events that led to it."
%% 6> L2.
%% "With 3000 workers sending 100 requests each (steady load), riarc's monitoring made the system's mean response time 3.00x (2.50 to 3.60) of unmonitored, and its memory 2.10x (2.00 to 2.20)."
%% 7> L3.
%% "The full table (riarc, centralised and inline monitoring, both loads, memory and scheduler use) is in r.html"
%% '''
-module(riarc_demo_summary).

-export([measure/1, lines/3, cost_lines/1, format_error/1]).

-export_type([caught/0, error_reason/0]).

%% What the demo's monitored runs found: how many runs, in how many the race was
%% caught, and the reject verdicts in all.
-type caught() :: #{runs := non_neg_integer(), caught := non_neg_integer(),
                    rejects := non_neg_integer()}.

-type error_reason() :: {experiment, string(), term()} | {study, term()}.

%% {label, config file, output directory} of each experiment, high concurrency first.
-define(LEVELS, [{"high", "examples/bench/demo-high.config", "bench-results/demo-high"},
                 {"moderate", "examples/bench/demo-moderate.config", "bench-results/demo-moderate"}]).
-define(STUDY, "bench-results/demo-study").
%% The set-up the cost sentences are about, and the load they quote.
-define(SETUP, "riarc-soundness").
-define(SHAPE, "steady").

%% @doc Runs the two small experiments (each run in a fresh VM; progress on standard
%% error) and their comparison; returns the comparison's rows (riarc_bench_study:overhead/2)
%% and the path of its HTML report. Paths are relative to the project's top directory.
-spec measure(#{}) -> {ok, #{rows := [map()], html := file:filename()}}
                      | {error, {?MODULE, error_reason()}}.
measure(#{}) ->
    measure(?LEVELS, []).

measure([], Done) ->
    case riarc_bench_study:write(lists:reverse(Done), ?STUDY) of
        {ok, #{rows := Rows, html := Html}} -> {ok, #{rows => Rows, html => Html}};
        {error, Reason} -> {error, {?MODULE, {study, Reason}}}
    end;
measure([{Label, Config, Out} | Rest], Done) ->
    case riarc_bench_experiment:run(Config, #{out => Out}) of
        {ok, _Report} -> measure(Rest, [{Label, Out} | Done]);
        {error, Reason} -> {error, {?MODULE, {experiment, Label, Reason}}}
    end.

%% @doc The summary: what was caught, one cost sentence per level measured (at most
%% three), and where the full table is. At most five lines, in plain words. With no
%% report (`demo --quick' measures nothing), what was caught alone.
-spec lines(caught(), [map()], file:filename() | undefined) -> [string()].
lines(Caught, _Rows, undefined) ->
    [caught_line(Caught)];
lines(Caught, Rows, Report) ->
    [caught_line(Caught)] ++ lists:sublist(cost_lines(Rows), 3)
        ++ [fmt("The full table (riarc, centralised and inline monitoring, both loads, memory and "
                "scheduler use) is in ~ts", [Report])].

%% @doc One cost sentence per level of a comparison (riarc_bench_study:write/2's rows)
%% that measured riarc with its monitors: what `study' prints, and the demo's middle lines.
-spec cost_lines([map()]) -> [string()].
cost_lines(Rows) ->
    Levels = lists:usort([L || #{level := L} <- Rows]),
    [C || L <- order(Levels), C <- [cost_line([R || R = #{level := L1} <- Rows, L1 =:= L])],
          C =/= none].

%% "high" before "moderate", whatever the labels sort as.
order(Levels) ->
    [L || L <- ["high", "moderate"], lists:member(L, Levels)]
        ++ [L || L <- Levels, not lists:member(L, ["high", "moderate"])].

caught_line(#{runs := 0}) ->
    "No monitored run of the ticket service finished, so nothing could be caught (see the errors above).";
caught_line(#{caught := 0, runs := N}) ->
    fmt("The double-booking race did not strike in these ~b monitored runs, so there was nothing "
        "to catch this time: run the demo again.", [N]);
caught_line(#{caught := N, runs := N, rejects := R}) ->
    fmt("riarc caught the double-booking race in all ~b monitored runs: ~b rejects, each shown "
        "above with the events that led to it.", [N, R]);
caught_line(#{caught := K, runs := N, rejects := R}) ->
    fmt("riarc caught the double-booking race in ~b of ~b monitored runs (the race does not "
        "strike every run): ~b rejects, each shown above with the events that led to it.", [K, N, R]).

%% One level: riarc with its monitors against the unmonitored system under steady load
%% (or the first load measured, when steady was not).
cost_line(Rows) ->
    case [R || R = #{key := ?SETUP} <- Rows] of
        [] -> none;
        Riarc ->
            Row = case [R || R = #{shape := ?SHAPE} <- Riarc] of
                      [R | _] -> R;
                      [] -> hd(Riarc)
                  end,
            cost_sentence(Row)
    end.

cost_sentence(R = #{workers := N, shape := Shape, cmp := Cmp}) ->
    Scale = fmt("With ~b workers sending ~ts requests each (~ts load)",
                [N, requests(R), Shape]),
    case Cmp of
        #{mrt_mean_ms_mean := Mrt, mem_mean_mean := Mem} ->
            fmt("~ts, riarc's monitoring made the system's mean response time ~ts of "
                "unmonitored, and its memory ~ts~ts.",
                [Scale, ratio(Mrt), ratio(Mem), few_runs([Mrt, Mem])]);
        _ ->
            fmt("~ts, the runs under riarc's monitoring did not finish (~ts): the report "
                "says why.", [Scale, crashed(R)])
    end.

requests(#{row := #{requests := W}}) when is_integer(W) -> integer_to_list(W);
requests(_) -> "some".

crashed(#{crashed := C}) when C =/= "" -> C;
crashed(_) -> "no result".

%% "3.00x (2.73 to 3.27)"; without an interval the ratio alone, and few_runs/1 says why
%% once for the sentence.
ratio(C = #{ratio := _}) -> riarc_bench_ci:format_ratio(C);
ratio(_) -> "not measurable (no unmonitored value to compare with)".

few_runs(Cs) ->
    case [C || C = #{enough := false} <- Cs] of
        [] -> "";
        _ -> fmt(" (fewer than ~b runs each, too few for an interval)", [riarc_bench_ci:min_n()])
    end.

%% @doc One sentence for an error of measure/1.
-spec format_error(error_reason()) -> string().
format_error({experiment, Label, Reason}) ->
    fmt("the ~ts-concurrency experiment failed: ~ts", [Label, riarc:format_error(Reason)]);
format_error({study, Reason}) ->
    fmt("the comparison of the experiments failed: ~ts", [riarc:format_error(Reason)]).

fmt(F, A) -> lists:flatten(io_lib:format(F, A)).
