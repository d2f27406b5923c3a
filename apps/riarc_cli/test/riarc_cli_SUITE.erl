% `bin/riarc' end to end, in a fresh VM as a user runs it: verdict lines, exit statuses,
% errors, help, a closed standard output and the up-to-date check of the build. A Common
% Test suite, the tier for the command line, peer VMs and whatever is slow (`make test'
% runs it after EUnit's unit tests).
-module(riarc_cli_SUITE).

-import(riarc_test_cli, [cli/1, cli/2, root/0, testkit_pa/0]).

-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, suite/0]).
-export([cli_run_accept/1, cli_run_reject/1, cli_bad_input/1, cli_unknown_command/1, cli_help/1, cli_bad_flags/1, cli_closed_stdout/1, cli_no_rebuild/1, cli_check_mfa/1, cli_limits/1]).

-spec all() -> [atom() | {group, atom()}].
all() -> [cli_run_accept, cli_run_reject, cli_bad_input, cli_unknown_command, cli_help,
          cli_check_mfa] ++ riarc_test_tier:slow_groups([slow]).

%% The full tier's cases (make test-all): riarc_test_tier.
-spec groups() -> [{atom(), list(), [atom()]}].
groups() -> [{slow, [], [cli_bad_flags, cli_closed_stdout, cli_no_rebuild, cli_limits]}].

-spec suite() -> list().
suite() -> [{timetrap, {minutes, 5}}].




%% The safe dispenser: no verdict is reject or error, so the status is 0.
cli_run_accept(_Config) ->
    {Out, Status} = cli("run -m riarc_demo -f main -a '[6, 20, safe]' --monitors riarc_demo_monitors"),
    Lines = riarc_test_cli:verdicts(Out),
    ?assertEqual(7, length(Lines)),
    %% Under every verdict, one line says why.
    ?assertEqual(14, length(Out)),
    [?assertMatch([_Pid, _MFA, _Verdict], string:split(L, " ", all)) || L <- Lines],
    ?assert(lists:any(fun(L) -> lists:suffix("riarc_demo_tickets:init/3 none", L) orelse
                                    lists:suffix("riarc_demo_tickets:init/1 none", L) end, Lines)),
    ?assertEqual(6, length([L || L <- Lines, lists:suffix("riarc_demo:client/2 accept", L)])),
    ?assertEqual("status=0", Status).

%% A property that P breaks every time (it spawns): status 1, its line says reject.
cli_run_reject(_Config) ->
    File = filename:join(root(), "_build/test/never_spawn.prop"),
    ok = file:write_file(File, "with riarc_demo_pqr:p() monitor\n  [P <- _, riarc_demo_pqr:p()] [P -> _, _:_()] ff.\n"),
    {[Line | Explanation], Status} = cli("run " ++ testkit_pa() ++ " -m riarc_demo_pqr -f p --props " ++ File),
    ?assert(lists:suffix("riarc_demo_pqr:p/0 reject", Line)),
    %% The explanation: P's events up to its spawn, which decided.
    ?assertMatch(["    last events (=> decided):", "       {init," ++ _, "    => {spawn," ++ _,
                  "    decided at event 2, {spawn," ++ _], Explanation),
    ?assertNotEqual(nomatch, string:find(lists:last(Explanation), "ff reached after the necessity at")),
    ?assertEqual("status=1", Status).

cli_bad_input(_Config) ->
    ?assertMatch({_, "status=2"}, cli("run -m nosuch -f main --monitors riarc_demo_monitors")),
    ?assertMatch({_, "status=2"}, cli("run -m riarc_demo -f main -a 'notalist' --monitors riarc_demo_monitors")),
    ?assertMatch({_, "status=2"}, cli("run -m riarc_demo -f main")).

cli_unknown_command(_Config) ->
    ?assertMatch({_, "status=2"}, cli("frobnicate")).

%% `help', `help CMD', `CMD --help' and `--version' print to stdout and exit 0; so does
%% `demo --help', without running the demo. bin/riarc alone prints the same usage to
%% standard error and exits 2.
cli_help(_Config) ->
    {Usage, "status=0"} = cli("help"),
    ?assertMatch(["usage: riarc COMMAND" ++ _ | _], Usage),
    ?assertEqual({[], "status=2"}, cli("")),
    ?assertEqual({Usage, "status=2"}, cli("", " 2>&1")),
    %% Every command's help in the full tier, one of them in the fast one.
    [?assertMatch({["usage: riarc " ++ _ | _], "status=0"}, cli(C))
     || C <- riarc_test_tier:pick(?FUNCTION_NAME,
                                  ["help run", "record -h", "check --help", "run --help", "verify --help",
                                   "compile --help", "bench --help", "experiment --help", "study -h",
                                   "demo --help"])],
    {[Version], "status=0"} = cli("--version"),
    ?assertMatch("riarc " ++ _, Version).

%% Unknown and conflicting flags: one sentence, the usage line, status 2.
cli_bad_flags(_Config) ->
    {Lines, "status=2"} = cli("run -m riarc_demo -f main --monitors riarc_demo_monitors --bogus 1", " 2>&1"),
    ?assertMatch(["riarc run: unknown option --bogus", "usage: riarc run " ++ _ | _], Lines),
    {Lines2, "status=2"} = cli("run -m riarc_demo -f main --monitors riarc_demo_monitors --props x.prop", " 2>&1"),
    ?assertMatch(["riarc run: --monitors and --props cannot be given together", "usage: riarc run " ++ _ | _],
                 Lines2),
    ?assertMatch({["riarc compile: unknown option --bogus" | _], "status=2"}, cli("compile x.prop --bogus", " 2>&1")),
    ?assertMatch({["riarc bench: unknown option --bogus" | _], "status=2"}, cli("bench --bogus 1", " 2>&1")).

%% The reader goes away (`true' exits at once; `head -1' after one line): riarc ends
%% quietly, and leaves no erl_crash.dump in the current directory.
cli_closed_stdout(_Config) ->
    Dir = filename:join(root(), "_build/test/riarc_cli_epipe"),
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    _ = file:delete(filename:join(Dir, "erl_crash.dump")),
    Run = filename:join(root(), "bin/riarc") ++ " run -m riarc_demo -f main -a '[40, 2, safe]' "
          "--monitors riarc_demo_monitors",
    Err = filename:join(Dir, "stderr"),
    [begin
         %% /bin/sh has no PIPESTATUS: the writer's status goes through a file.
         St = filename:join(Dir, "status"),
         _ = os:cmd("cd " ++ Dir ++ " && (" ++ Cmd ++ " 2>" ++ Err ++ "; echo $? >" ++ St ++ ") | " ++ Reader),
         {ok, Status} = file:read_file(St),
         ?assert(lists:member(Status, [<<"0\n">>, <<"141\n">>])),
         ?assertEqual({ok, <<>>}, file:read_file(Err))
     end || Cmd <- [Run, filename:join(root(), "bin/riarc") ++ " help"], Reader <- ["true", "head -1"]],
    ?assertNot(filelib:is_regular(filename:join(Dir, "erl_crash.dump"))).

%% Nothing changed since the last build: bin/riarc neither rebuilds nor touches the stamp.
cli_no_rebuild(_Config) ->
    {_, "status=0"} = cli("--version"),
    Stamp = filename:join(root(), "_build/default/.riarc-built"),
    {ok, Before} = file:read_file_info(Stamp, [{time, posix}]),
    {_, "status=0"} = cli("--version"),
    ?assertEqual({ok, Before}, file:read_file_info(Stamp, [{time, posix}])).

%% `check' prints what `run' prints: pid, initial call, verdict.
cli_check_mfa(_Config) ->
    Trace = filename:join(root(), "_build/test/riarc_cli_pqr.rtrc"),
    {_, "status=0"} = cli("record " ++ testkit_pa() ++ " -m riarc_demo_pqr -f p -o " ++ Trace),
    {Out, "status=0"} = cli("check --trace " ++ Trace ++ " --props examples/props/pqr.prop"),
    Lines = riarc_test_cli:verdicts(Out),
    ?assertEqual(["riarc_demo_pqr:p/0", "riarc_demo_pqr:q/0", "riarc_demo_pqr:r/0"],
                 lists:sort([lists:nth(2, string:lexemes(L, " ")) || L <- Lines])),
    [?assertMatch([_, _, "accept"], string:lexemes(L, " ")) || L <- Lines].

%% The safety limits on the command line: given, they reach riarc (a run within them is
%% as without them); a value riarc cannot take is bad input.
cli_limits(_Config) ->
    {Lines, Status} = cli("run -m riarc_demo -f main -a '[6, 20, safe]' --monitors riarc_demo_monitors "
                          "--policy shed --max-queue 100000 --max-tracers 1000 --max-payload 65536 "
                          "--monitor-budget 5s"),
    ?assertEqual(7, length(riarc_test_cli:verdicts(Lines))),
    ?assertEqual("status=0", Status),
    {[Err | _], "status=2"} = cli("run -m riarc_demo -f main --monitors riarc_demo_monitors --policy never", " 2>&1"),
    ?assertEqual("riarc run: --policy takes one of stop, shed, backpressure, not never", Err),
    ?assertMatch({_, "status=2"}, cli("run -m riarc_demo -f main --monitors riarc_demo_monitors --max-queue 0")),
    %% The session's event budget and a tracer's memory: within them, as without; a run
    %% over the budget stops and says so, status 1.
    {Lines2, "status=0"} = cli("run -m riarc_demo -f main -a '[6, 20, safe]' --monitors riarc_demo_monitors "
                               "--max-events 1000000 --max-queue-bytes 1073741824"),
    ?assertEqual(7, length(riarc_test_cli:verdicts(Lines2))),
    {Cut, "status=1"} = cli("run -m riarc_demo -f main -a '[6, 20, safe]' --monitors riarc_demo_monitors "
                            "--max-events 10", " 2>&1"),
    ?assert(lists:any(fun(L) -> lists:prefix("riarc: warning: overload ({max_events,", L) end, Cut)),
    ?assertMatch({_, "status=2"}, cli("run -m riarc_demo -f main --monitors riarc_demo_monitors --max-events 0")),
    ?assertMatch({_, "status=2"}, cli("run -m riarc_demo -f main --monitors riarc_demo_monitors --max-queue-bytes x")).
