%% @doc Test support: the command line as a user runs it. The project's top directory (from
%% where the tests' build put riarc), and `bin/riarc' or any shell command run there as an
%% OS process, giving its standard output's lines and its exit status.
%% ```
%% 1> filelib:is_regular(filename:join(riarc_test_cli:root(), "bin/riarc")).
%% true
%% 2> riarc_test_cli:sh("echo hi; false").
%% {["hi"],"status=1"}
%% '''
-module(riarc_test_cli).

-export([root/0, sh/1, cli/1, cli/2, testkit_pa/0, verdicts/1]).

%% @doc The project's top directory: _build/PROFILE/lib/riarc/ebin, five levels up.
-spec root() -> file:filename().
root() ->
    Ebin = filename:dirname(filename:absname(code:which(riarc))),
    filename:join(lists:sublist(filename:split(Ebin), length(filename:split(Ebin)) - 5)).

%% @doc The flag of `bin/riarc' that puts the test systems (this app's modules, such as
%% riarc_demo_pqr) on its code path: bin/riarc runs the default build, which does not
%% ship them.
-spec testkit_pa() -> string().
testkit_pa() ->
    "-pa " ++ filename:dirname(code:which(riarc_demo_pqr)).

%% @doc A shell command's standard output, as lines, and `"status=N"'.
-spec sh(string()) -> {[string()], string()}.
sh(Cmd) ->
    Out = os:cmd(Cmd ++ "; echo \"status=$?\""),
    Lines = string:split(string:trim(Out), "\n", all),
    {lists:droplast(Lines), lists:last(Lines)}.

%% @doc `bin/riarc ARGS' in the top directory, its standard error dropped.
-spec cli(string()) -> {[string()], string()}.
cli(Args) ->
    cli(Args, " 2>/dev/null").

%% @doc The verdict lines of a command's output: those not indented (an explanation and
%% the why line under each verdict are).
-spec verdicts([string()]) -> [string()].
verdicts(Lines) -> [L || L <- Lines, not lists:prefix(" ", L)].

%% @doc The same; Redirect says what becomes of standard error (" 2>&1": among the lines).
-spec cli(string(), string()) -> {[string()], string()}.
cli(Args, Redirect) ->
    sh("cd " ++ root() ++ " && bin/riarc " ++ Args ++ Redirect).
