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

%% bin/riarc, as a user runs it.
cli_test_() ->
    [{timeout, 300, F} || F <- [fun cli_run_reject/0, fun cli_bad_input/0,
                                fun cli_unknown_command/0]].

root() ->
    %% _build/test/lib/riarc/ebin -> the project's top directory
    Ebin = filename:dirname(code:which(riarc)),
    filename:join(lists:sublist(filename:split(Ebin), length(filename:split(Ebin)) - 5)).

cli(Args) ->
    Out = os:cmd("cd " ++ root() ++ " && bin/riarc " ++ Args ++ " 2>/dev/null; echo \"status=$?\""),
    Lines = string:split(string:trim(Out), "\n", all),
    {lists:droplast(Lines), lists:last(Lines)}.

cli_run_reject() ->
    {Lines, Status} = cli("run -m riarc_demo -f main -a '[6, 20]' --monitors riarc_demo_monitors"),
    ?assertEqual(7, length(Lines)),
    [?assertMatch([_Pid, _MFA, _Verdict], string:split(L, " ", all)) || L <- Lines],
    ?assert(lists:any(fun(L) -> lists:suffix("riarc_demo_tickets:init/1 reject", L) end, Lines)),
    ?assertEqual("status=1", Status).

cli_bad_input() ->
    ?assertMatch({_, "status=2"}, cli("run -m nosuch -f main --monitors riarc_demo_monitors")),
    ?assertMatch({_, "status=2"}, cli("run -m riarc_demo -f main -a 'notalist' --monitors riarc_demo_monitors")),
    ?assertMatch({_, "status=2"}, cli("run -m riarc_demo -f main")).

cli_unknown_command() ->
    ?assertMatch({_, "status=2"}, cli("frobnicate")).
