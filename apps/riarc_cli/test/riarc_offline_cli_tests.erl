%% The offline commands of the command line (riarc_offline_cli:run/1 returns the exit
%% status main/1 halts with): check, record and verify, and their exit statuses.
-module(riarc_offline_cli_tests).

-include_lib("eunit/include/eunit.hrl").

%% A Spec module for the CLI tests.
-export([spec/1]).

-define(M, riarc_demo_pqr).

tmp(Name) ->
    filename:join(os:getenv("TMPDIR", "/tmp"), "riarc_offline_cli_tests_" ++ os:getpid() ++ "_" ++ Name).

%% Q must not receive anything; everybody else accepts on a normal exit.
spec({?M, q, _}) -> {ok, fun M({recv, _, _}) -> reject; M(_) -> M end};
spec(_) -> {ok, fun M({exit, _, normal}) -> accept; M(_) -> M end}.

cli_test_() ->
    {timeout, 300, fun cli_checks/0}.

cli_checks() ->
    Text = tmp("cli.txt"),
    ok = file:write_file(Text, "{init, r, undefined, {riarc_demo_pqr, r, []}}.\n{exit, r, normal}.\n"),
    {Out0, 0} = cli(["check", "--trace", Text, "--monitors", "riarc_offline_cli_tests"]),
    ?assertEqual("r riarc_demo_pqr:r/0 accept\n", Out0),
    Rec = tmp("cli.rtrc"),
    {Out1, 0} = cli(["record", "-m", "riarc_demo_pqr", "-f", "p", "-o", Rec]),
    ?assertMatch("recorded 10 events to " ++ _, Out1),
    {Out2, 1} = cli(["check", "--trace", Rec, "--monitors", "riarc_offline_cli_tests"]),
    ?assertEqual(["accept", "accept", "reject"],
                 lists:sort([lists:last(string:lexemes(L, " ")) || L <- string:lexemes(Out2, "\n"),
                                                                    hd(L) =/= $\s])),
    ?assertMatch({_, 2}, cli(["check", "--trace", tmp("none"), "--monitors", "riarc_offline_cli_tests"])),
    ?assertMatch({_, 2}, cli(["check", "--trace", Rec, "--monitors", "no_such_module"])),
    ?assertMatch({_, 2}, cli(["check", "--trace", Rec])),
    ?assertMatch({_, 2}, cli(["record", "-m", "riarc_demo_pqr", "-f", "p", "-o", Rec, "-a", "[oops"])),
    ?assertMatch({_, 2}, cli(["verify", "--max-procs", "none"])),
    {Out3, 0} = cli(["verify", "--max-procs", "2"]),
    ?assertNotEqual(nomatch, string:find(Out3, "all 25342 replays passed")).

%% Runs a command with its standard output captured.
cli(Args) -> riarc_capture:capture(fun() -> riarc_offline_cli:run(Args) end).

%%% ---------------------------------------------------------------------------
%%% dbg trace files
%%% ---------------------------------------------------------------------------
