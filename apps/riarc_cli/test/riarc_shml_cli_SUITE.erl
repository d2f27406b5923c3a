% `bin/riarc compile' as a user runs it, in a fresh VM: once the project is built, it
% neither checks the toolchain nor rebuilds (rebar3 and dpkg-query are replaced by stubs
% that leave a mark and fail), and `--module NAME' names the compiled module; monitors
% that matched nothing are warned of on standard error, and `--strict' makes that exit
% status 2, for `run' and `check'. A Common Test suite: it runs bin/riarc as an OS process.
-module(riarc_shml_cli_SUITE).

-import(riarc_test_cli, [root/0, sh/1, testkit_pa/0]).

-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, suite/0]).
-export([compile_when_built/1, matched_nothing/1]).

-spec all() -> [atom() | {group, atom()}].
all() -> [matched_nothing] ++ riarc_test_tier:slow_groups([slow]).

%% The full tier's cases (make test-all): riarc_test_tier.
-spec groups() -> [{atom(), list(), [atom()]}].
groups() -> [{slow, [], [compile_when_built]}].

-spec suite() -> list().
suite() -> [{timetrap, {minutes, 5}}].



compile_when_built(Config) ->
    Root = root(),
    Priv = proplists:get_value(priv_dir, Config),
    %% Built and stamped first (a no-op when it is already).
    {_, "status=0"} = sh("cd " ++ Root ++ " && bin/riarc --version >/dev/null 2>&1"),
    Stamp = filename:join(Root, "_build/default/.riarc-built"),
    {ok, Before} = file:read_file_info(Stamp, [{time, posix}]),
    Stubs = filename:join(Priv, "stubs"),
    Mark = filename:join(Priv, "toolchain-called"),
    ok = filelib:ensure_dir(filename:join(Stubs, "x")),
    [begin
         F = filename:join(Stubs, Tool),
         ok = file:write_file(F, "#!/bin/sh\necho \"" ++ Tool ++ " $*\" >> " ++ Mark ++ "\nexit 1\n"),
         ok = file:change_mode(F, 8#755)
     end || Tool <- ["rebar3", "dpkg-query", "dpkg", "apt-get", "sudo"]],
    Out = filename:join(Priv, "out"),
    ok = filelib:ensure_dir(filename:join(Out, "x")),
    {Lines, Status} = sh("cd " ++ Root ++ " && PATH=" ++ Stubs ++ ":$PATH bin/riarc compile "
                         "examples/props/no_error.prop -o " ++ Out ++ " --module suite_no_error 2>&1"),
    ?assertEqual("status=0", Status),
    ?assertEqual([filename:join(Out, "suite_no_error.beam") ++ ": module suite_no_error, traces recv, send"],
                 Lines),
    ?assertNot(filelib:is_regular(Mark)),
    ?assertEqual({ok, Before}, file:read_file_info(Stamp, [{time, posix}])),
    {ok, {suite_no_error, [{exports, Exports}]}} =
        beam_lib:chunks(filename:join(Out, "suite_no_error.beam"), [exports]),
    ?assert(lists:member({trace_patterns, 0}, Exports)).

matched_nothing(Config) ->
    Root = root(),
    Priv = proplists:get_value(priv_dir, Config),
    Props = filename:join(Priv, "two.prop"),
    ok = file:write_file(Props, "with riarc_demo_pqr:p() monitor [P <- _, riarc_demo_pqr:p()] "
                                "[P ** R when R =/= normal] ff.\n"
                                "with riarc_demo_pqr:nosuch() monitor ff.\n"
                                "with Bank:init(_) monitor ff.\n"),
    Riarc = "cd " ++ Root ++ " && bin/riarc ",
    Unmatched = "riarc: warning: " ++ Props ++ ":2:1: the clause `with riarc_demo_pqr:nosuch()' "
                "matched no process in this run",
    Static = Props ++ ":3:6: warning: Bank in `with' is a variable",
    %% Warned, standard output as before, status as the verdicts say.
    {Lines, "status=0"} = sh(Riarc ++ "run " ++ testkit_pa() ++ " -m riarc_demo_pqr -f p --props " ++ Props ++ " 2>&1"),
    ?assert(lists:member(Unmatched, Lines)),
    ?assert(lists:any(fun(L) -> lists:prefix(Static, L) end, Lines)),
    {Quiet, "status=0"} = sh(Riarc ++ "run " ++ testkit_pa() ++ " -m riarc_demo_pqr -f p --props " ++ Props ++ " 2>/dev/null"),
    ?assertMatch([_], riarc_test_cli:verdicts(Quiet)),
    {_, "status=2"} = sh(Riarc ++ "run " ++ testkit_pa() ++ " -m riarc_demo_pqr -f p --strict --props " ++ Props ++ " 2>/dev/null"),
    %% A Spec module that monitors none of the system's processes.
    {NoneLines, "status=2"} = sh(Riarc ++ "run " ++ testkit_pa() ++ " -m riarc_demo_pqr -f p --strict "
                                 "--monitors riarc_demo_monitors 2>&1"),
    ?assertEqual(["riarc: warning: no process was monitored: riarc_demo_monitors gave none of "
                  "the system's processes a monitor"], NoneLines),
    %% check: the same, offline.
    Trace = filename:join(Priv, "pqr.rtrc"),
    {_, "status=0"} = sh(Riarc ++ "record " ++ testkit_pa() ++ " -m riarc_demo_pqr -f p -o " ++ Trace ++ " 2>&1"),
    {CheckLines, "status=0"} = sh(Riarc ++ "check --trace " ++ Trace ++ " --props " ++ Props ++ " 2>&1"),
    ?assert(lists:member(Unmatched, CheckLines)),
    {_, "status=2"} = sh(Riarc ++ "check --strict --trace " ++ Trace ++ " --props " ++ Props ++ " 2>&1"),
    %% Nothing to warn of: --strict changes nothing.
    {_, "status=0"} = sh(Riarc ++ "run " ++ testkit_pa() ++ " -m riarc_demo_pqr -f p --strict --props examples/props/pqr.prop").
