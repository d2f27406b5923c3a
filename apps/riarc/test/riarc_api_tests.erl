%% The API for long-running systems (start/verdicts/stop) and the command line's contract
%% (output lines and exit statuses).
-module(riarc_api_tests).

-include_lib("eunit/include/eunit.hrl").

-export([service/0]).

%% A service that runs until told to stop, answering pings.
service() ->
    receive
        {ping, From} -> From ! pong, service();
        stop -> ok
    end.

start_verdicts_stop_test() ->
    Test = self(),
    Spec = fun({?MODULE, service, []}) ->
                   {ok, fun M(E = {recv, _, {ping, _}}) -> Test ! {seen, E}, reject; M(_) -> M end};
              (_) -> undefined
           end,
    {ok, S} = riarc:start({?MODULE, service, []}, Spec, #{log => false}),
    #{processes := [Root]} = riarc:alive(S),
    ?assert(is_list(riarc:verdicts(S))),
    Root ! {ping, self()},
    receive pong -> ok end,
    receive {seen, _} -> ok end,
    {ok, #{verdicts := [#{pid := Root, verdict := reject, events := 2}]}} = riarc:stop(S),
    %% Monitoring stopped; the service did not.
    ?assert(is_process_alive(Root)),
    ?assertEqual({tracer, []}, erlang:trace_info(Root, tracer)),
    Root ! stop.

%% A process some of whose events a tracer could not deliver (reported when that tracer
%% ends) gets the verdict error, whatever its monitor said on the partial trace.
incomplete_trace_test() ->
    Spec = fun(_) -> {ok, fun(_) -> accept end} end,
    {ok, S} = riarc:start({?MODULE, service, []}, Spec, #{log => false}),
    #{processes := [Root]} = riarc:alive(S),
    S ! {riarc_incomplete, self(), #{Root => [{recv, Root, lost}]}},
    {ok, #{verdicts := [V]}} = riarc:stop(S),
    ?assertMatch(#{pid := Root, verdict := error,
                   reason := {incomplete_trace, #{lost_events := 1, verdict_on_partial_trace := accept}}}, V),
    Root ! stop.

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
