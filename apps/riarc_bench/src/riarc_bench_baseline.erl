%% @doc Named baselines: keep an experiment's per-run results under a name, and compare a
%% later experiment with them, benchmark by benchmark, with the statistics of the reports
%% (`riarc_bench_ci': medians, the ratio now / baseline with its 95 % bootstrap interval,
%% significant only when the interval excludes 1, "n too small" below three runs).
%%
%% A baseline is a directory STORE/NAME holding the experiment's `runs.csv' and
%% `aggregate.csv' and a `baseline.meta' (when, from where, on which machine). The store
%% defaults to `baselines' beside the experiment's directory (`bench-results/baselines'
%% for `--out bench-results/quick'). Benchmarks are matched by their id (shape, n,
%% schedulers, seed, set-up, variant), so both experiments should come from the same
%% config.
%%
%% ```
%% 1> ok = file:write_file("/tmp/riarc_tiny.config", "{name, \"tiny\"}. {shapes, [steady]}.
%% ..    {workers, [20]}. {instrumentation, [baseline]}. {repetitions, 3}.
%% ..    {params, #{requests => 5, time => 2, period => 10}}.").
%% 2> {ok, _} = riarc_bench_experiment:run("/tmp/riarc_tiny.config", #{out => "/tmp/riarc_b/quick"}).
%% 3> riarc_bench_baseline:save("/tmp/riarc_b/quick", "before-fix").
%% {ok,"/tmp/riarc_b/baselines/before-fix"}
%% %% ... change the code, run the experiment again into the same directory ...
%% 4> {ok, _} = riarc_bench_experiment:run("/tmp/riarc_tiny.config", #{out => "/tmp/riarc_b/quick"}).
%% 5> {ok, #{html := H, significant := S}} = riarc_bench_baseline:compare("/tmp/riarc_b/quick", "before-fix").
%% 6> H.
%% "/tmp/riarc_b/quick/baseline-before-fix.html"
%% '''
-module(riarc_bench_baseline).

-export([save/2, save/3, compare/2, compare/3, store/2, format_error/1]).

-type opts() :: #{store => file:filename()}.
-export_type([opts/0, error_reason/0]).

-type error_reason() :: {bad_name, term()}
                      | {no_runs, file:filename()}
                      | {no_baseline, Name :: string(), file:filename()}
                      | {mkdir, file:filename(), file:posix() | badarg | terminated | system_limit}
                      | {copy, file:filename(), file:posix() | badarg | terminated | system_limit}.

-define(FILES, ["runs.csv", "aggregate.csv"]).

%% @doc The directory baselines are kept in, for an experiment directory and options.
-spec store(file:filename(), opts()) -> file:filename().
store(ExpDir, Opts) ->
    maps:get(store, Opts, filename:join(filename:dirname(filename:absname(ExpDir)), "baselines")).

%% @doc Saves the results of the experiment in ExpDir as baseline Name (replacing an older
%% one of that name).
-spec save(file:filename(), string()) -> {ok, file:filename()} | {error, {?MODULE, error_reason()}}.
save(ExpDir, Name) -> save(ExpDir, Name, #{}).

-spec save(file:filename(), string(), opts()) -> {ok, file:filename()} | {error, {?MODULE, error_reason()}}.
save(ExpDir, Name, Opts) ->
    Dir = filename:join(store(ExpDir, Opts), Name),
    case {valid_name(Name), filelib:is_regular(filename:join(ExpDir, "runs.csv"))} of
        {false, _} -> {error, {?MODULE, {bad_name, Name}}};
        {true, false} -> {error, {?MODULE, {no_runs, ExpDir}}};
        {true, true} ->
            case filelib:ensure_path(Dir) of
                ok -> copy(ExpDir, Dir, Name);
                {error, Reason} -> {error, {?MODULE, {mkdir, Dir, Reason}}}
            end
    end.

copy(ExpDir, Dir, Name) ->
    Copies = [{F, file:copy(filename:join(ExpDir, F), filename:join(Dir, F))} || F <- ?FILES],
    case [{F, R} || {F, {error, R}} <- Copies, F =:= "runs.csv"] of
        [{F, R} | _] -> {error, {?MODULE, {copy, filename:join(ExpDir, F), R}}};
        [] ->
            Meta = #{name => Name, source => filename:absname(ExpDir),
                     saved => calendar:system_time_to_rfc3339(erlang:system_time(second), [{offset, "Z"}]),
                     otp => erlang:system_info(otp_release),
                     logical_processors => erlang:system_info(logical_processors)},
            ok = file:write_file(filename:join(Dir, "baseline.meta"), io_lib:format("~p.~n", [Meta])),
            {ok, Dir}
    end.

%% Names become directory names: nothing that could climb out of the store.
valid_name(Name) ->
    Name =/= "" andalso Name =/= "." andalso Name =/= ".."
        andalso lists:all(fun(C) -> (C >= $a andalso C =< $z) orelse (C >= $A andalso C =< $Z)
                                        orelse (C >= $0 andalso C =< $9) orelse lists:member(C, "-_.")
                          end, Name).

%% @doc Compares the experiment in ExpDir with baseline Name and writes
%% ExpDir/baseline-NAME.html and .csv. Returns their paths, the comparison rows, and the
%% number of significant differences.
-spec compare(file:filename(), string()) ->
    {ok, #{html := file:filename(), csv := file:filename(), rows := [map()],
           significant := non_neg_integer()}} | {error, {?MODULE, error_reason()}}.
compare(ExpDir, Name) -> compare(ExpDir, Name, #{}).

-spec compare(file:filename(), string(), opts()) ->
    {ok, #{html := file:filename(), csv := file:filename(), rows := [map()],
           significant := non_neg_integer()}} | {error, {?MODULE, error_reason()}}.
compare(ExpDir, Name, Opts) ->
    Dir = filename:join(store(ExpDir, Opts), Name),
    case {valid_name(Name), read(Dir), read(ExpDir)} of
        {false, _, _} -> {error, {?MODULE, {bad_name, Name}}};
        {_, {error, _}, _} -> {error, {?MODULE, {no_baseline, Name, Dir}}};
        {_, _, {error, _}} -> {error, {?MODULE, {no_runs, ExpDir}}};
        {true, {ok, Base}, {ok, Now}} ->
            Rows = rows(Now, Base),
            Html = filename:join(ExpDir, "baseline-" ++ Name ++ ".html"),
            Csv = filename:join(ExpDir, "baseline-" ++ Name ++ ".csv"),
            ok = file:write_file(Html, html(Name, Dir, ExpDir, Rows, Now, Base)),
            ok = riarc_bench_writer:write_csv(Csv, csv_header(), [csv_row(R) || R <- Rows]),
            {ok, #{html => Html, csv => Csv, rows => Rows,
                   significant => length([R || R = #{cmp := #{significant := true}} <- Rows])}}
    end.

read(Dir) -> riarc_bench_study:read_runs(Dir).

metrics() -> riarc_bench_report:metrics() ++ [{throughput, "throughput (msg/s)", 1}].

%% One row per benchmark and metric present in both.
rows(Now, Base) ->
    [#{benchmark => B, metric => M, label => Label, scale => Scale,
       cmp => riarc_bench_ci:compare(values(M, maps:get(B, Now)), values(M, maps:get(B, Base)))}
     || B <- lists:sort(maps:keys(Now)), maps:is_key(B, Base), {M, Label, Scale} <- metrics()].

values(M, Runs) -> [V || R <- Runs, is_number(V = maps:get(M, R, ""))].

csv_header() ->
    [benchmark, metric, n_now, median_now, n_baseline, median_baseline, ratio, ratio_lo, ratio_hi,
     significant].

csv_row(#{benchmark := B, metric := M, cmp := C = #{setup := S, base := Ba}}) ->
    [B, M, maps:get(n, S), maps:get(median, S, ""), maps:get(n, Ba), maps:get(median, Ba, ""),
     maps:get(ratio, C, ""), maps:get(lo, C, ""), maps:get(hi, C, ""), maps:get(significant, C)].

html(Name, Dir, ExpDir, Rows, Now, Base) ->
    OnlyNow = lists:sort(maps:keys(Now) -- maps:keys(Base)),
    OnlyBase = lists:sort(maps:keys(Base) -- maps:keys(Now)),
    Cols = [{"benchmark", text}, {"metric", text}, {"now", num}, {"baseline " ++ Name, num},
            {"change (now / baseline - 1)", num}],
    Table = [[B, Label, riarc_bench_html:ci_cell(S, Scale), riarc_bench_html:ci_cell(Ba, Scale), riarc_bench_html:change_cell(C)]
             || #{benchmark := B, label := Label, scale := Scale, cmp := C = #{setup := S, base := Ba}} <- Rows],
    riarc_bench_html:page(
      "Against baseline " ++ Name,
      ["Each row compares one metric of one benchmark of this experiment (<code>",
       riarc_bench_html:esc(filename:absname(ExpDir)), "</code>) with the same benchmark in the "
       "saved baseline <code>", riarc_bench_html:esc(Dir), "</code>. Values are medians over "
       "the runs with their 95 % bootstrap intervals; the change is the ratio of the medians "
       "(now / baseline: 1.10x is 10 % more), with its interval. Only a <span class=\"sig\">bold</span> "
       "change, whose interval excludes 1x, is a difference the runs can tell from noise; "
       "<span class=\"ns\">no measurable difference</span> ones may be chance. "
       "<span class=\"small\">Values in orange</span> come from fewer than three runs on either "
       "side, too few for an interval. Click a column header to sort."],
      [riarc_bench_html:table(Cols, Table),
       [["<p>Only in this experiment: ", riarc_bench_html:esc(lists:join(", ", OnlyNow)), ".</p>\n"] || OnlyNow =/= []],
       [["<p>Only in the baseline: ", riarc_bench_html:esc(lists:join(", ", OnlyBase)), ".</p>\n"] || OnlyBase =/= []]]).

%% @doc One sentence for an error of save/2,3 or compare/2,3.
-spec format_error(error_reason()) -> string().
format_error({bad_name, Name}) ->
    fmt("the baseline name ~0tp may only use letters, digits, '-', '_' and '.'", [Name]);
format_error({no_runs, Dir}) ->
    fmt("~ts has no runs.csv: run the experiment there first", [Dir]);
format_error({no_baseline, Name, Dir}) ->
    fmt("there is no baseline ~ts (looked for ~ts/runs.csv); save one with --save-baseline ~ts",
        [Name, Dir, Name]);
format_error({mkdir, Dir, Reason}) ->
    fmt("cannot create ~ts: ~ts", [Dir, file:format_error(Reason)]);
format_error({copy, Path, Reason}) ->
    fmt("cannot copy ~ts: ~ts", [Path, file:format_error(Reason)]).

fmt(F, A) -> lists:flatten(io_lib:format(F, A)).
