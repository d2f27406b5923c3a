%% The offline commands of the command line (riarc_offline_cli:run/1 returns the exit
%% status main/1 halts with): check, record and verify, and their exit statuses.
-module(riarc_offline_cli_tests).

-include_lib("eunit/include/eunit.hrl").

%% A Spec module for the CLI tests.
-export([spec/1]).

-define(M, riarc_demo_pqr).

tmp(Name) ->
    filename:join(riarc_test_tmp:dir("riarc_offline_cli_tests"), Name).

%% Q must not receive anything; everybody else accepts on a normal exit.
spec({?M, q, _}) -> {ok, fun M({recv, _, _}) -> reject; M(_) -> M end};
spec(_) -> {ok, fun M({exit, _, normal}) -> accept; M(_) -> M end}.

cli_test_() ->
    {timeout, 300, fun cli_checks/0}.

cli_checks() ->
    %% The trace's names exist on this node, as they do where a recording is checked
    %% with the system's code at hand (made here: a list of atoms is compiled away).
    _ = [list_to_atom(A) || A <- ["r", "riarc_demo_pqr"]],
    Text = tmp("cli.txt"),
    ok = file:write_file(Text, "{init, r, undefined, {riarc_demo_pqr, r, []}}.\n{exit, r, normal}.\n"),
    {Out0, 0} = cli(["check", "--trace", Text, "--monitors", "riarc_offline_cli_tests"]),
    ?assertEqual("r riarc_demo_pqr:r/0 accept\n    decided at event 2, {exit,r,normal}\n", Out0),
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
    %% verify replays P/Q/R's 25 200 interleavings whatever --max-procs says: the full tier.
    case riarc_test_tier:tier() of
        all ->
            {Out3, 0} = cli(["verify", "--max-procs", "2"]),
            ?assertNotEqual(nomatch, string:find(Out3, "all 25342 replays passed"));
        fast ->
            ok
    end.

%% Every warning of a check goes to standard error, and a check that monitored nothing
%% does not exit 0.
warnings_test_() ->
    {timeout, 120, fun warnings/0}.

%% check under the same limits as a run: three roots where two tracers may live is
%% inconclusive for each, status 1, and says which limit.
limits_test() ->
    Trace = tmp("roots.txt"),
    ok = file:write_file(Trace, [[io_lib:format("{init, r~b, undefined, {riarc_demo_pqr, r, []}}.~n", [I])
                                  || I <- [1, 2, 3]],
                                 [io_lib:format("{exit, r~b, normal}.~n", [I]) || I <- [1, 2, 3]]]),
    {Out, Err, 1} = cli_all(["check", "--trace", Trace, "--monitors", "riarc_offline_cli_tests",
                             "--max-tracers", "2"]),
    ?assertEqual(3, length([L || L <- string:lexemes(Out, "\n"), lists:suffix(" inconclusive", L)])),
    ?assertMatch([_ | _], [L || L <- Err, string:find(L, "limit max_tracers") =/= nomatch]).

warnings() ->
    Trace = tmp("warn.txt"),
    %% An atom this node does not have, written only as text here.
    Unknown = "riarc_zz_cli_no_such_atom_" ++ integer_to_list(erlang:unique_integer([positive])),
    ok = file:write_file(Trace, ["{init, r, undefined, {riarc_demo_pqr, r, []}}.\n",
                                 "{recv, r, ", Unknown, "}.\n{exit, r, normal}.\n"]),
    Props = tmp("warn.prop"),
    ok = file:write_file(Props, "with riarc_demo_pqr:r() never receive {error, _},\n"
                                "with riarc_demo_pqr:nosuch() never receive {error, _}.\n"),
    {Out, Err, 0} = cli_all(["check", "--trace", Trace, "--props", Props]),
    ?assertEqual("r riarc_demo_pqr:r/0 accept\n    decided at event 3, {exit,r,normal}: the process exited: "
                 "nothing left that could fail\n", Out),
    ?assertMatch([_], [L || L <- Err, string:find(L, "1 atom(s) of the recording do not exist") =/= nomatch]),
    ?assertMatch([_], [L || L <- Err, string:find(L, "riarc_demo_pqr:nosuch()' matched no process") =/= nomatch]),
    %% Nothing monitored: said, and status 1 (2 with --strict).
    None = tmp("none.prop"),
    ok = file:write_file(None, "with riarc_demo_pqr:nosuch() never receive {error, _}.\n"),
    {"", Err1, 1} = cli_all(["check", "--trace", Trace, "--props", None]),
    ?assertMatch([_], [L || L <- Err1, string:find(L, "riarc: warning: no process was monitored") =/= nomatch]),
    ?assertMatch([_], [L || L <- Err1, string:find(L, "do not exist on this node") =/= nomatch]),
    {"", _, 2} = cli_all(["check", "--strict", "--trace", Trace, "--props", None]).

%% Standard output as text, standard error as lines, and the status.
cli_all(Args) ->
    {Out, Err, Status} = riarc_capture:capture_all(fun() -> riarc_offline_cli:run(Args) end),
    {Out, string:lexemes(Err, "\n"), Status}.

%% Runs a command with its standard output captured.
cli(Args) -> riarc_capture:capture(fun() -> riarc_offline_cli:run(Args) end).

%%% ---------------------------------------------------------------------------
%%% dbg trace files
%%% ---------------------------------------------------------------------------
