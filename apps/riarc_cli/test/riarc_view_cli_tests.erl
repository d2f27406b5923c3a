%% The command line's views: `--chart FILE' on run and check writes the chart once the
%% result is known (a page saying there is no reject or error when so), and `export'
%% writes a recording's Chrome trace or chart, cut at --max-events with a sentence and
%% status 1, a bad file being status 2 with nothing written; replay's chart in the full
%% tier. (attach writes its chart through the same riarc_view_cli:chart/3.)
-module(riarc_view_cli_tests).

-include_lib("eunit/include/eunit.hrl").

dir() -> riarc_test_tmp:dir("riarc_view_cli_tests").

%% P (riarc_demo_pqr) never sends req: false, P sends req to Q.
bad_prop() ->
    File = filename:join(dir(), "never_req.prop"),
    ok = file:write_file(File, "with riarc_demo_pqr:p() monitor\n"
                               "  [P <- _, riarc_demo_pqr:p()]\n"
                               "  max(X. and([P:_ ! req] ff,\n"
                               "             [_ <- _, _:_()] X, [_ -> _, _:_()] X, [_ ? _] X, [_ ** _] X)).\n"),
    File.

cli(Args) ->
    {Out, Err, Status} = riarc_capture:capture_all(fun() -> riarc_cli:run(Args) end),
    {Out, Err, Status}.

recorded() ->
    File = filename:join(dir(), "pqr.rtrc"),
    {_, _, 0} = cli(["record", "-m", "riarc_demo_pqr", "-f", "p", "-o", File]),
    File.

chart_test_() ->
    {timeout, 120, fun chart/0}.

chart() ->
    Prop = bad_prop(),
    Trace = recorded(),
    %% check: a reject, charted with its clause (line 3 of the property).
    Chart = filename:join(dir(), "check.html"),
    _ = file:delete(Chart),
    {_, Err, 1} = cli(["check", "--trace", Trace, "--props", Prop, "--chart", Chart]),
    ?assertMatch({match, _}, re:run(Err, "the chart of 1 reject\\(s\\) or error\\(s\\) is in ")),
    {ok, Html} = file:read_file(Chart),
    ?assertMatch({_, _}, binary:match(Html, iolist_to_binary(["decided by the property clause at ",
                                                              Prop, ":3"]))),
    ?assertEqual(1, length(binary:matches(Html, <<" deciding\">">>))),
    %% check with nothing rejected: the file is written all the same, and says so.
    Clean = filename:join(dir(), "clean.html"),
    {_, Err1, 0} = cli(["check", "--trace", Trace, "--props", pqr_prop(), "--chart", Clean]),
    ?assertMatch({match, _}, re:run(Err1, "no rejects or errors; ")),
    {ok, CleanHtml} = file:read_file(Clean),
    ?assertMatch({_, _}, binary:match(CleanHtml, <<"no rejects or errors">>)),
    %% run: the same reject, online.
    RunChart = filename:join(dir(), "run.html"),
    {_, _, 1} = cli(["run", "-m", "riarc_demo_pqr", "-f", "p", "--props", Prop, "--chart", RunChart]),
    {ok, RunHtml} = file:read_file(RunChart),
    ?assertEqual(1, length(binary:matches(RunHtml, <<"<svg ">>))),
    ?assertMatch({match, _}, re:run(RunHtml, "class=\"ev send deciding\"><title>\\{send,&lt;[0-9.]+&gt;,&lt;[0-9.]+&gt;,req\\}")),
    %% A chart that cannot be written: said, status 2.
    {_, Err2, 2} = cli(["check", "--trace", Trace, "--props", Prop, "--chart", "/nonexistent-dir/c.html"]),
    ?assertMatch({match, _}, re:run(Err2, "cannot write the chart to /nonexistent-dir/c.html")).

pqr_prop() ->
    filename:join(riarc_test_cli:root(), "examples/props/pqr.prop").

export_test_() ->
    {timeout, 120, fun export/0}.

export() ->
    Trace = recorded(),
    Json = filename:join(dir(), "pqr.json"),
    {Out, "", 0} = cli(["export", "--trace", Trace, "--format", "chrome", "-o", Json]),
    ?assertEqual("exported 10 events of " ++ Trace ++ " to " ++ Json ++ " (chrome)\n", Out),
    {ok, Bin} = file:read_file(Json),
    {ok, #{<<"traceEvents">> := Evs}} = riarc_json:decode(Bin),
    ?assertEqual(10, length([E || E = #{<<"ph">> := <<"X">>} <- Evs])),
    %% Cut at --max-events: the sentence on stderr and in the file, status 1.
    Html = filename:join(dir(), "pqr.html"),
    {_, Err, 1} = cli(["export", "--trace", Trace, "--format", "html", "-o", Html, "--max-events", "3"]),
    Sentence = riarc_trace_export:cut_sentence(3),
    ?assertNotEqual(nomatch, string:find(Err, Sentence ++ " (--max-events)")),
    {ok, HtmlBin} = file:read_file(Html),
    ?assertMatch({_, _}, binary:match(HtmlBin, list_to_binary(Sentence))),
    %% A file that is not a trace: one sentence, status 2, nothing written.
    Bad = filename:join(dir(), "bad.bin"),
    ok = file:write_file(Bad, <<0, 1, 2, 255, 254>>),
    Never = filename:join(dir(), "never.json"),
    _ = file:delete(Never),
    {"", Err2, 2} = cli(["export", "--trace", Bad, "-o", Never]),
    ?assertMatch({match, _}, re:run(Err2, "^riarc: .*not a trace file")),
    ?assertNot(filelib:is_file(Never)),
    %% Bad input to the command itself.
    {_, _, 2} = cli(["export", "--trace", Trace, "-o", Json, "--format", "svg"]),
    {_, _, 2} = cli(["export", "--trace", Trace]).

%% replay --chart: the recorded run replayed under the property, its reject charted.
%% Full tier (two peer-node runs); the fast tier charts run's and check's results, which
%% go through the same riarc_view_cli:chart/3.
replay_chart_test_() ->
    riarc_test_tier:slow({timeout, 120, fun replay_chart/0}).

replay_chart() ->
    Prop = bad_prop(),
    File = filename:join(dir(), "pqr.rr"),
    {_, _, 0} = cli(["record", "--replayable", "-m", "riarc_demo_pqr", "-f", "p", "-o", File]),
    Chart = filename:join(dir(), "replay.html"),
    _ = file:delete(Chart),
    {Out, _, 1} = cli(["replay", File, "--props", Prop, "--chart", Chart]),
    ?assertNotEqual(nomatch, string:find(Out, "riarc_demo_pqr:p/0 reject")),
    {ok, Html} = file:read_file(Chart),
    ?assertEqual(1, length(binary:matches(Html, <<"<svg ">>))),
    ?assertMatch({match, _}, re:run(Html, "class=\"ev send deciding\"><title>\\{send,[^}]*,req\\}")).
