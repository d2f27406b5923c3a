% `bin/riarc record --replayable --until-reject' and `bin/riarc replay --props/--monitors'
% end to end, as a user runs them (bin/riarc as an OS process): hunt the demo's ticket
% race until riarc's monitors reject a run, keep that recording, replay it three times
% under the same monitors, and see the same reject each time. Every run is a peer node
% with OTP's behaviours woven (about 1.5 s each); every wait is bounded by riarc_replay's
% timeout and watchdog and the suite's timetrap.
-module(riarc_replay_cli_SUITE).

-import(riarc_test_cli, [cli/1, cli/2]).

-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, suite/0]).
-export([hunt_reject_then_replay_props/1, replay_monitors_module/1, monitor_flags_bad_input/1]).

-define(PROPS, "examples/props/demo.prop").
-define(SYS, " -m riarc_demo -f tickets -a '[8, 20]'").

-spec all() -> [atom() | {group, atom()}].
all() -> [] ++ riarc_test_tier:slow_groups([slow]).

%% The full tier's cases (make test-all): riarc_test_tier.
-spec groups() -> [{atom(), list(), [atom()]}].
groups() -> [{slow, [], [hunt_reject_then_replay_props, replay_monitors_module,
          monitor_flags_bad_input]}].

-spec suite() -> list().
suite() -> [{timetrap, {minutes, 8}}].


tmp(Name) ->
    filename:join(riarc_test_tmp:dir("riarc_replay_cli_SUITE"), Name).



%% The hunt keeps the first recording the property file rejects (status 1: a reject was
%% printed, as `run' prints it); three replays under the same property file hand out the
%% same tickets, duplicates included, and print the same verdicts, the dispenser's reject
%% among them; the ticket that decided the reject is one the replay handed out twice.
hunt_reject_then_replay_props(_Config) ->
    File = tmp("hunt.rr"),
    try
        {Rec, RecStatus} = cli("record --replayable --until-reject 20 --props " ++ ?PROPS ++ ?SYS
                               ++ " -o " ++ File),
        ct:log("recording:~n~s", [lists:join("\n", Rec)]),
        ?assertEqual("status=1", RecStatus),
        ?assert(lists:any(fun(L) -> re:run(L, "^recording \\d+ of 20: rejected$") =/= nomatch end, Rec)),
        ?assertMatch("recorded " ++ _, lists:last(Rec)),
        RecVerdicts = verdict_lines(Rec),
        ?assertMatch([_ | _], [V || V = {"riarc_demo_tickets:init/1", "reject"} <- RecVerdicts]),
        Replays = [cli("replay " ++ File ++ " --props " ++ ?PROPS) || _ <- [1, 2, 3]],
        [ct:log("replay:~n~s", [lists:join("\n", Ls)]) || {Ls, _} <- Replays],
        [?assertEqual("status=1", S) || {_, S} <- Replays],
        [?assertEqual(RecVerdicts, verdict_lines(Ls)) || {Ls, _} <- Replays],
        Results = [result_of(Ls) || {Ls, _} <- Replays],
        [R1 | _] = Results,
        ?assertEqual([R1, R1, R1], Results),
        Dups = riarc_demo:duplicates(R1),
        ?assertNotEqual([], Dups),
        [?assert(lists:member(deciding_ticket(Ls), Dups)) || {Ls, _} <- Replays],
        %% Without the monitors, the same file replays to the same tickets, status 0.
        {Plain, "status=0"} = cli("replay " ++ File),
        ?assertEqual(R1, result_of(Plain)),
        ?assertEqual([], verdict_lines(Plain))
    after
        file:delete(File)
    end.

%% --monitors with a module on the code path: the demo's Erlang monitors.
replay_monitors_module(_Config) ->
    File = tmp("mods.rr"),
    try
        {_, "status=1"} = cli("record --replayable --until-reject 20 --monitors riarc_demo_monitors"
                              ++ ?SYS ++ " -o " ++ File),
        {Ls, "status=1"} = cli("replay " ++ File ++ " --monitors riarc_demo_monitors"),
        ?assertMatch([_ | _], [V || V = {"riarc_demo_tickets:init/1", "reject"} <- verdict_lines(Ls)]),
        ?assert(lists:member(deciding_ticket(Ls), riarc_demo:duplicates(result_of(Ls))))
    after
        file:delete(File)
    end.

%% Bad input: status 2 and one sentence.
monitor_flags_bad_input(_Config) ->
    {[Err | _], "status=2"} = cli("record --replayable --until-reject 2" ++ ?SYS ++ " -o x.rr", " 2>&1"),
    ?assertEqual("riarc: --until-reject needs --monitors or --props", Err),
    {[Err2 | _], "status=2"} = cli("record --monitors riarc_demo_monitors" ++ ?SYS ++ " -o x.rr", " 2>&1"),
    ?assertEqual("riarc record: --monitors needs --replayable", Err2),
    {[Err3 | _], "status=2"} = cli("replay x.rr --props nosuch.prop", " 2>&1"),
    ?assertMatch("riarc replay: nosuch.prop" ++ _, Err3),
    {[Err4 | _], "status=2"} = cli("record --replayable --until-reject 2 --until-result riarc_demo:has_duplicate"
                                   ++ ?SYS ++ " -o x.rr", " 2>&1"),
    ?assertMatch("riarc record: " ++ _, Err4).

%% The verdict lines (`PID MOD:FUN/A VERDICT'), as {MFA, Verdict}, sorted: pids are the
%% peer node's and need not be the same in every run.
verdict_lines(Lines) ->
    lists:sort([{MFA, V} || L <- Lines, [_Pid, MFA, V] <- [string:lexemes(L, " ")],
                            lists:member(V, ["accept", "reject", "error", "none", "inconclusive"])]).

%% The term after "result: " (printed with ~tp: it may take several lines).
result_of(Lines) ->
    {match, [Text]} = re:run(lists:join("\n", Lines), "^result: (.*?)\\nreplayed ",
                             [dotall, multiline, {capture, all_but_first, list}]),
    {ok, Tokens, _} = erl_scan:string(Text ++ "."),
    {ok, Term} = erl_parse:parse_term(Tokens),
    Term.

%% The ticket of the event that decided the reject: `=> {send,P,Alias,{Tag,N}}'.
deciding_ticket(Lines) ->
    [D] = [string:trim(L) || L <- Lines, lists:prefix("=>", string:trim(L))],
    {match, [N]} = re:run(D, ",(\\d+)}}$", [{capture, all_but_first, list}]),
    list_to_integer(N).
