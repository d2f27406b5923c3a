%% `--format json' and the system's own log output. The JSON lines of run, check and
%% replay parse (riarc_json), end with one summary object, and agree with the text output
%% of the same run: the same verdict per process, the same exit status. A system whose
%% process crashes logs an error report: never on standard output, in either format; on
%% standard error, or in `--system-log FILE' when given. The commands run in this VM
%% (riarc_cli:run/1, output captured) except where the VM's own logger is the point: there
%% bin/riarc runs as an OS process, as a user runs it.
-module(riarc_json_cli_tests).

-include_lib("eunit/include/eunit.hrl").

-import(riarc_test_cli, [root/0]).

%%% helpers ----------------------------------------------------------------------------

cli(Args) ->
    riarc_capture:capture_all(fun() -> riarc_cli:run(Args) end).

tmp(Name) ->
    filename:join(riarc_test_tmp:dir("json_cli"), Name).

prop(Name) ->
    filename:join([root(), "examples", "props", Name]).

%% A property that P of riarc_demo_pqr breaks (it spawns Q): a reject with an explanation.
never_spawn() ->
    File = tmp("never_spawn.prop"),
    ok = file:write_file(File, "with riarc_demo_pqr:p() monitor\n"
                               "  [P <- _, riarc_demo_pqr:p()] [P -> _, _:_()] ff.\n"),
    File.

%% The objects of JSON Lines output: every line one object, the last the summary (and
%% only the last), whose exit status is Status. Returns the verdict objects and the summary.
json(Out, Status) ->
    Lines = string:lexemes(Out, "\n"),
    Objects = [begin
                   {ok, O} = riarc_json:decode(unicode:characters_to_binary(L)),
                   ?assert(is_map(O)),
                   O
               end || L <- Lines],
    {Verdicts, [Summary]} = lists:split(length(Objects) - 1, Objects),
    ?assertMatch(#{<<"summary">> := true}, Summary),
    ?assertEqual(Status, maps:get(<<"exit_status">>, Summary)),
    [?assertNot(is_map_key(<<"summary">>, V)) || V <- Verdicts],
    {Verdicts, Summary}.

%% {Pid, MFA, Verdict} of each verdict line of text output, and of each JSON object.
text_verdicts(Out) ->
    lists:sort([list_to_tuple(string:lexemes(L, " "))
                || L <- riarc_test_cli:verdicts(string:lexemes(Out, "\n")), lists:prefix("<", L)]).

json_verdicts(Objects) ->
    lists:sort([{binary_to_list(P), binary_to_list(M), binary_to_list(V)}
                || #{<<"pid">> := P, <<"mfa">> := M, <<"verdict">> := V} <- Objects]).

%% The summary's verdict counts agree with the verdict objects.
counts_agree(Verdicts, #{<<"verdicts">> := Counts}) ->
    Expected = lists:foldl(fun(#{<<"verdict">> := V}, M) -> maps:update_with(V, fun(N) -> N + 1 end, 1, M) end,
                           #{}, Verdicts),
    ?assertEqual(Expected, Counts).

%%% one result, printed both ways ----------------------------------------------------------

%% The very same result through both formats: the same processes, verdicts and status.
same_result_test() ->
    {ok, Spec, Opts} = riarc_cli_monitors:spec_of(#{props => never_spawn()}),
    {ok, R} = riarc:run({riarc_demo_pqr, p, []}, Spec, Opts#{log => false}),
    ReportOpts = #{spec => Spec, strict => false},
    {Text, _, TextStatus} = riarc_capture:capture_all(fun() -> riarc_cli_report:result(R, ReportOpts) end),
    {Json, JsonErr, JsonStatus} =
        riarc_capture:capture_all(fun() -> riarc_cli_report:result(R, ReportOpts#{format => json}) end),
    ?assertEqual(1, TextStatus),
    ?assertEqual(TextStatus, JsonStatus),
    ?assertEqual("", JsonErr),
    {Verdicts, Summary} = json(Json, JsonStatus),
    ?assertEqual(text_verdicts(Text), json_verdicts(Verdicts)),
    counts_agree(Verdicts, Summary),
    %% The reject's explanation: its events as text, the deciding one last, as in the text.
    [#{<<"explanation">> := #{<<"events">> := Events, <<"deciding_event">> := D}}] =
        [V || V = #{<<"verdict">> := <<"reject">>} <- Verdicts],
    ?assertEqual(D, lists:last(Events)),
    ?assertMatch(<<"{spawn,", _/binary>>, D),
    ?assertNotEqual(nomatch, string:find(Text, "    => " ++ binary_to_list(D))).

%%% run ----------------------------------------------------------------------------------

run_test_() ->
    {timeout, 60, fun run_agrees/0}.

run_agrees() ->
    [begin
         Args = ["run", "-m", "riarc_demo_pqr", "-f", "p", "--props", Props],
         {Text, _, TextStatus} = cli(Args),
         {Json, _, JsonStatus} = cli(Args ++ ["--format", "json"]),
         ?assertEqual(Status, TextStatus),
         ?assertEqual(TextStatus, JsonStatus),
         {Verdicts, Summary} = json(Json, JsonStatus),
         counts_agree(Verdicts, Summary),
         %% Two runs, two sets of pids: the processes are told apart by initial call.
         ?assertEqual(lists:sort([{M, V} || {_, M, V} <- text_verdicts(Text)]),
                      lists:sort([{M, V} || {_, M, V} <- json_verdicts(Verdicts)])),
         ?assertEqual(length(Verdicts), length(text_verdicts(Text)))
     end || {Props, Status} <- [{prop("pqr.prop"), 0}, {never_spawn(), 1}]].

%% Failures after the options were read are the summary's errors in json, status as in text.
run_failure_test() ->
    Args = ["run", "-m", "riarc_demo_pqr", "-f", "p", "--monitors", "no_such_spec_module"],
    {_, TextErr, 2} = cli(Args),
    ?assertNotEqual(nomatch, string:find(TextErr, "no_such_spec_module")),
    {Json, "", 2} = cli(Args ++ ["--format", "json"]),
    {[], #{<<"errors">> := [Error]}} = json(Json, 2),
    ?assertNotEqual(nomatch, binary:match(Error, <<"no_such_spec_module">>)).

%%% check --------------------------------------------------------------------------------

check_test_() ->
    {timeout, 60, fun check_agrees/0}.

check_agrees() ->
    Trace = tmp("pqr.rtrc"),
    {_, _, 0} = cli(["record", "-m", "riarc_demo_pqr", "-f", "p", "-o", Trace]),
    Args = ["check", "--trace", Trace, "--props", prop("pqr.prop")],
    {Text, _, 0} = cli(Args),
    {Json, "", 0} = cli(Args ++ ["--format", "json"]),
    {Verdicts, Summary} = json(Json, 0),
    %% One recording: the same pids in both.
    ?assertEqual(text_verdicts(Text), json_verdicts(Verdicts)),
    ?assertEqual(3, length(Verdicts)),
    counts_agree(Verdicts, Summary),
    %% A cut recording: the warning on stderr in text, in the summary in json.
    {ok, Bin} = file:read_file(Trace),
    Cut = tmp("cut.rtrc"),
    ok = file:write_file(Cut, binary:part(Bin, 0, byte_size(Bin) * 2 div 3)),
    CutArgs = ["check", "--trace", Cut, "--props", prop("pqr.prop")],
    {CutText, CutErr, CutStatus} = cli(CutArgs),
    {CutJson, "", CutJsonStatus} = cli(CutArgs ++ ["--format", "json"]),
    ?assertEqual(CutStatus, CutJsonStatus),
    %% The partitions still open where the file is cut are inconclusive: never a clean
    %% status for a trace riarc knows is cut.
    ?assertEqual(1, CutStatus),
    ?assertNotEqual(nomatch, string:find(CutText, " inconclusive\n")),
    {CutVerdicts, #{<<"warnings">> := Warnings}} = json(CutJson, CutJsonStatus),
    ?assertEqual(text_verdicts(CutText), json_verdicts(CutVerdicts)),
    ?assertNotEqual(nomatch, string:find(CutErr, "is truncated at byte")),
    ?assertMatch([_], [W || W <- Warnings, binary:match(W, <<"is truncated at byte">>) =/= nomatch]).

%%% replay -------------------------------------------------------------------------------

%% Each replay runs in a peer node (about 1.5 s): the full tier's.
replay_test_() ->
    riarc_test_tier:slow({timeout, 120, fun replay_agrees/0}).

replay_agrees() ->
    File = tmp("tickets.rr"),
    {_, _, 0} = cli(["record", "--replayable", "-m", "riarc_demo", "-f", "tickets", "-a", "[3, 4]",
                     "-o", File]),
    Args = ["replay", File, "--props", prop("demo.prop")],
    {Text, _, TextStatus} = cli(Args),
    {Json, "", JsonStatus} = cli(Args ++ ["--format", "json"]),
    ?assertEqual(TextStatus, JsonStatus),
    {Verdicts, Summary} = json(Json, JsonStatus),
    ?assertNotEqual([], Verdicts),
    %% A replay runs the recorded run again: the same processes, the same verdicts.
    ?assertEqual(text_verdicts(Text), json_verdicts(Verdicts)),
    counts_agree(Verdicts, Summary),
    %% The replay's own lines are the summary's fields.
    {match, [Result, N]} = re:run(Text, "^result: (.*)\nreplayed (\\d+) events", [multiline, {capture, all_but_first, list}]),
    ?assertEqual(list_to_binary(riarc_term_show:show(parse(Result))), maps:get(<<"result">>, Summary)),
    ?assertEqual(list_to_integer(N), maps:get(<<"replayed_events">>, Summary)).

parse(Text) ->
    {ok, Tokens, _} = erl_scan:string(Text ++ "."),
    {ok, Term} = erl_parse:parse_term(Tokens),
    Term.

%%% the system's own log output ------------------------------------------------------------

%% A system whose one process crashes (erlang:error/1, spawned): the VM logs an error
%% report for it, which a property that wants a normal exit also rejects.
crash_prop() ->
    File = tmp("crash.prop"),
    ok = file:write_file(File, "with erlang:error(_) monitor\n"
                               "  [P <- _, erlang:error(_)]\n"
                               "  [P ** Reason when Reason =/= normal] ff.\n"),
    File.

crash_run(Extra) ->
    Err = tmp("stderr"),
    {Out, Status} = riarc_test_cli:cli("run -m erlang -f spawn -a '[erlang, error, [{boom, <<0:800000>>}]]' "
                                       "--props " ++ crash_prop() ++ " " ++ Extra, " 2>" ++ Err),
    {ok, ErrText} = file:read_file(Err),
    {Out, ErrText, Status}.

report(Text) ->
    binary:match(iolist_to_binary(Text), <<"=ERROR REPORT">>) =/= nomatch
        andalso binary:match(iolist_to_binary(Text), <<"{boom,">>) =/= nomatch.

system_log_test_() ->
    {timeout, 120, fun system_log/0}.

system_log() ->
    %% Text: the verdict on stdout, the report on stderr.
    {Out, Err, "status=1"} = crash_run(""),
    ?assertNot(report(lists:join("\n", Out))),
    ?assertMatch(["<" ++ _], riarc_test_cli:verdicts(Out)),
    ?assert(lists:suffix(" erlang:error/1 reject", hd(riarc_test_cli:verdicts(Out)))),
    ?assert(report(Err)),
    %% The explanation bounds the 100 kB binary the process crashed with.
    ?assert(lists:all(fun(L) -> length(L) < 800 end, Out)),
    ?assert(lists:any(fun(L) -> string:find(L, "...>> (100000 bytes)") =/= nomatch end, Out)),
    %% JSON and --system-log through bin/riarc in the full tier (system_log_in_vm_test
    %% covers the file in this VM).
    case riarc_test_tier:tier() of
        all -> system_log_json_and_file();
        fast -> ok
    end.

system_log_json_and_file() ->
    %% JSON: only JSON on stdout, the report on stderr.
    {JsonOut, JsonErr, "status=1"} = crash_run("--format json"),
    {[V], _} = json(lists:join("\n", JsonOut), 1),
    ?assertMatch(#{<<"verdict">> := <<"reject">>, <<"mfa">> := <<"erlang:error/1">>}, V),
    ?assert(report(JsonErr)),
    %% --system-log FILE: the report there, not on stderr nor stdout.
    Log = tmp("system.log"),
    _ = file:delete(Log),
    {LogOut, LogErr, "status=1"} = crash_run("--format json --system-log " ++ Log),
    _ = json(lists:join("\n", LogOut), 1),
    ?assertNot(report(LogErr)),
    {ok, LogText} = file:read_file(Log),
    ?assert(report(LogText)).

%% A file that cannot be written is bad input, said before anything runs.
system_log_unwritable_test() ->
    Dir = riarc_test_tmp:dir("json_cli"),
    {"", Err, 2} = cli(["run", "-m", "riarc_demo_pqr", "-f", "p", "--props", prop("pqr.prop"),
                        "--system-log", Dir]),
    ?assertNotEqual(nomatch, string:find(Err, "cannot write the system log to " ++ Dir)).

%% In this VM: while a command runs, the default handler is silent and a log event goes
%% to the file; after it, the default handler is as it was and the file handler gone.
system_log_in_vm_test() ->
    Log = tmp("in_vm.log"),
    _ = file:delete(Log),
    Level = fun() -> case logger:get_handler_config(default) of
                         {ok, #{level := L}} -> L;
                         {error, _} -> no_default
                     end end,
    Before = Level(),
    During = riarc_cli_syslog:with(#{system_log => Log}, fun() ->
                 logger:error("riarc_json_cli_tests ~s", ["in the system log"]),
                 {Level(), lists:member(riarc_system_log, logger:get_handler_ids())}
             end),
    ?assertEqual({case Before of no_default -> no_default; _ -> none end, true}, During),
    ?assertEqual(Before, Level()),
    ?assertNot(lists:member(riarc_system_log, logger:get_handler_ids())),
    {ok, Text} = file:read_file(Log),
    ?assertNotEqual(nomatch, binary:match(Text, <<"riarc_json_cli_tests in the system log">>)).

%% The VM's own standard output process, ending because the reader went away, is not the
%% system's log: dropped by who logged it. A system's report that merely names user_sup
%% is kept.
system_log_drops_own_stdout_test() ->
    Log = tmp("own_stdout.log"),
    _ = file:delete(Log),
    User = whereis(user),
    ok = riarc_cli_syslog:with(#{system_log => Log}, fun() ->
             logger:error("riarc_json_cli_tests own stdout ~p", [epipe], #{pid => User}),
             logger:error(#{label => {supervisor, child_terminated},
                            report => [{supervisor, {local, kernel_sup}},
                                       {errorContext, child_terminated},
                                       {reason, riarc_json_cli_tests_own_stdout},
                                       {offender, [{pid, User}, {id, user}]}]}),
             logger:error(#{label => {supervisor, child_terminated}, supervisor => user_sup,
                            text => "riarc_json_cli_tests a system's report"}),
             ok
         end),
    {ok, Text} = file:read_file(Log),
    ?assertEqual(nomatch, binary:match(Text, <<"riarc_json_cli_tests own stdout">>)),
    ?assertEqual(nomatch, binary:match(Text, <<"riarc_json_cli_tests_own_stdout">>)),
    ?assertNotEqual(nomatch, binary:match(Text, <<"riarc_json_cli_tests a system's report">>)).
