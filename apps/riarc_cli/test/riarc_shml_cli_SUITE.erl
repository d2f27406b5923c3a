% `bin/riarc compile' as a user runs it, in a fresh VM: once the project is built, it
% neither checks the toolchain nor rebuilds (rebar3 and dpkg-query are replaced by stubs
% that leave a mark and fail), and `--module NAME' names the compiled module. A Common
% Test suite: it runs bin/riarc as an OS process.
-module(riarc_shml_cli_SUITE).

-include_lib("stdlib/include/assert.hrl").

-export([all/0, suite/0]).
-export([compile_when_built/1]).

-spec all() -> [atom()].
all() -> [compile_when_built].

-spec suite() -> list().
suite() -> [{timetrap, {minutes, 5}}].

root() ->
    %% _build/test/lib/riarc/ebin -> the project's top directory
    Ebin = filename:dirname(code:which(riarc)),
    filename:join(lists:sublist(filename:split(Ebin), length(filename:split(Ebin)) - 5)).

sh(Cmd) ->
    Out = os:cmd(Cmd ++ "; echo \"status=$?\""),
    Lines = string:split(string:trim(Out), "\n", all),
    {lists:droplast(Lines), lists:last(Lines)}.

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
