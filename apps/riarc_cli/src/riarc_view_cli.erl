%% @doc The command line's views of a run for people: `--chart FILE' on `run', `check',
%% `replay' and `attach' (a message sequence chart of each reject and error, riarc_chart,
%% written once the result is known), and the `export' command (a recording to the
%% Chrome trace-event format or to the same chart, riarc_trace_export).
%% ```
%% $ bin/riarc check --trace pqr.rtrc --props bad.prop --chart why.html
%% <0.90.0> riarc_demo_pqr:p/0 reject
%% ...
%% riarc: the chart of 1 reject or error is in why.html
%% $ bin/riarc export --trace pqr.rtrc --format chrome -o pqr.json
%% exported 10 events of pqr.rtrc to pqr.json (chrome)
%% '''
%% A chart is written whatever the verdicts: with no reject or error, the page says so,
%% so that a script can rely on the file. `export' exits 0 when the whole trace was
%% exported, 1 when it was cut at `--max-events' or the file ended in a torn record (the
%% output says so too), 2 on bad input (a file that is not a trace, say).
%% ```
%% 1> riarc_view_cli:chart(#{}, {ok, riarc_result:make(#{})}, 0).
%% 0
%% 2> riarc_view_cli:run(["export", "--trace", "/nonexistent.rtrc", "-o", "/tmp/x.json"]).
%% 2
%% '''
-module(riarc_view_cli).

-export([commands/0, run/1, chart_flag/0, chart/3]).

%% @doc The flag `--chart FILE', for the commands that give verdicts.
-spec chart_flag() -> riarc_cli_args:flag().
chart_flag() ->
    #{name => "--chart", key => chart, type => string, metavar => "FILE",
      help => "write a chart of each reject and error to FILE (HTML; docs/cli.md)"}.

%% @doc With `--chart FILE' among Opts, writes the chart of a command's result to FILE
%% and says so on standard error; the command's Status, or 2 when FILE cannot be
%% written. Without a result (the command failed) nothing is written.
-spec chart(riarc_cli_args:opts(), {ok, riarc_result:t()} | {error, term()}, non_neg_integer()) ->
    non_neg_integer().
chart(#{chart := File}, {ok, R = #{verdicts := Vs}}, Status) ->
    Charted = length(riarc_chart:charted(Vs)),
    Page = riarc_chart:html(Vs, note(R, #{title => "riarc: rejects and errors"})),
    case file:write_file(File, Page) of
        ok when Charted =:= 0 ->
            say("no rejects or errors; ~ts says so", [File]),
            Status;
        ok ->
            say("the chart of ~b reject(s) or error(s) is in ~ts", [Charted, File]),
            Status;
        {error, Why} ->
            say("cannot write the chart to ~ts: ~ts", [File, file:format_error(Why)]),
            2
    end;
chart(_Opts, _Result, Status) ->
    Status.

%% What made the result less than its verdicts say (errors, an overload), on the page too.
note(R, Opts) ->
    Errors = [riarc:format_error(E) || E <- maps:get(errors, R, []), not is_atom(E)],
    Over = case maps:get(overload, R, undefined) of
               undefined -> [];
               O -> [flat("overload (~0tP): riarc detached; undecided partitions are "
                          "inconclusive", [O, 6])]
           end,
    case Errors ++ Over of
        [] -> Opts;
        Notes -> Opts#{note => lists:flatten(lists:join("; ", Notes))}
    end.

%%% export

%% @doc The declaration of `export' (riarc_cli_args parses it).
-spec commands() -> [riarc_cli_args:command()].
commands() ->
    [#{name => "export",
       summary => "export a recording for trace viewers, or as a chart",
       description => "Exports a recorded trace file (riarc's binary or text format, or a dbg "
                      "trace) to the Chrome\ntrace-event format (JSON: open it in Perfetto or "
                      "chrome://tracing) or to a message sequence\nchart (one HTML page). At most "
                      "--max-events events are exported; a longer trace is cut,\nsaid on standard "
                      "error and in the output, and the status is 1.",
       flags => [#{name => "--trace", key => trace, type => string, metavar => "FILE",
                   required => true, help => "the trace file"},
                 #{name => "--wrap", key => wrap, type => string, metavar => "TAIL",
                   help => "FILE is the prefix of a dbg wrap set whose files end in TAIL"},
                 #{name => "--format", key => format, type => {enum, [chrome, html]},
                   default => chrome, help => "chrome (trace-event JSON) or html (the chart)"},
                 #{name => "--out", short => "-o", key => out, type => string, metavar => "OUT",
                   required => true, help => "the file to write"},
                 #{name => "--max-events", key => max_events, type => {int, 1}, metavar => "N",
                   default => riarc_trace_export:default_max_events(),
                   help => "export at most N events"}]}].

%% @doc Runs `export ARGS...'; returns the exit status.
-spec run([string()]) -> 0 | 1 | 2.
run(["export" | Args]) ->
    [Cmd] = commands(),
    riarc_cli_args:run(Cmd, Args, fun export/1);
run(_) ->
    say("give the command export", []),
    2.

export(O = #{trace := File, out := Out, format := Format, max_events := Max}) ->
    Source = case O of
                 #{wrap := Tail} -> {dbg_wrap, File, Tail};
                 #{} -> File
             end,
    case riarc_trace_export:export(Source, Out, #{format => Format, max_events => Max}) of
        {ok, Info = #{events := N, cut := Cut}} ->
            _ = Cut andalso say("warning: ~ts (--max-events)", [riarc_trace_export:cut_sentence(Max)]),
            Torn = maps:get(truncated, Info, false),
            _ = is_integer(Torn) andalso say("warning: ~ts", [riarc_trace_export:truncated_sentence(Torn)]),
            io:format("exported ~b events of ~ts to ~ts (~s)~n", [N, File, Out, Format]),
            case Cut orelse is_integer(Torn) of
                true -> 1;
                false -> 0
            end;
        {error, Reason} ->
            say("~ts", [riarc:format_error(Reason)]),
            2
    end.

say(Fmt, Args) ->
    io:format(standard_error, "riarc: " ++ Fmt ++ "~n", Args).

flat(Fmt, Args) -> lists:flatten(io_lib:format(Fmt, Args)).
