%% `bin/riarc run' end to end, in a fresh VM: verdict lines, exit statuses and errors.
-module(riarc_cli_tests).

-include_lib("eunit/include/eunit.hrl").

%% bin/riarc, as a user runs it.
cli_test_() ->
    [{timeout, 300, F} || F <- [fun cli_run_accept/0, fun cli_run_reject/0, fun cli_bad_input/0,
                                fun cli_unknown_command/0]].

root() ->
    %% _build/test/lib/riarc/ebin -> the project's top directory
    Ebin = filename:dirname(code:which(riarc)),
    filename:join(lists:sublist(filename:split(Ebin), length(filename:split(Ebin)) - 5)).

cli(Args) ->
    Out = os:cmd("cd " ++ root() ++ " && bin/riarc " ++ Args ++ " 2>/dev/null; echo \"status=$?\""),
    Lines = string:split(string:trim(Out), "\n", all),
    {lists:droplast(Lines), lists:last(Lines)}.

%% The safe dispenser: no verdict is reject or error, so the status is 0.
cli_run_accept() ->
    {Lines, Status} = cli("run -m riarc_demo -f main -a '[6, 20, safe]' --monitors riarc_demo_monitors"),
    ?assertEqual(7, length(Lines)),
    [?assertMatch([_Pid, _MFA, _Verdict], string:split(L, " ", all)) || L <- Lines],
    ?assert(lists:any(fun(L) -> lists:suffix("riarc_demo_tickets:init/3 none", L) orelse
                                    lists:suffix("riarc_demo_tickets:init/1 none", L) end, Lines)),
    ?assertEqual(6, length([L || L <- Lines, lists:suffix("riarc_demo:client/2 accept", L)])),
    ?assertEqual("status=0", Status).

%% A property that P breaks every time (it spawns): status 1, its line says reject.
cli_run_reject() ->
    File = filename:join(root(), "_build/test/never_spawn.prop"),
    ok = file:write_file(File, "with riarc_demo_pqr:p() monitor\n  [P <- _, riarc_demo_pqr:p()] [P -> _, _:_()] ff.\n"),
    {Lines, Status} = cli("run -m riarc_demo_pqr -f p --props " ++ File),
    ?assertMatch([_], Lines),
    ?assert(lists:suffix("riarc_demo_pqr:p/0 reject", hd(Lines))),
    ?assertEqual("status=1", Status).

cli_bad_input() ->
    ?assertMatch({_, "status=2"}, cli("run -m nosuch -f main --monitors riarc_demo_monitors")),
    ?assertMatch({_, "status=2"}, cli("run -m riarc_demo -f main -a 'notalist' --monitors riarc_demo_monitors")),
    ?assertMatch({_, "status=2"}, cli("run -m riarc_demo -f main")).

cli_unknown_command() ->
    ?assertMatch({_, "status=2"}, cli("frobnicate")).
