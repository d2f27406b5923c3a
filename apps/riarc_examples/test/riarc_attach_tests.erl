%% Attaching to a running system: the demo's supervision tree started by itself, riarc
%% attached to it while it serves, clients hitting it, then detached. The dispenser's
%% monitor opens with the attached event, sees the traffic from then on, catches the
%% race in some run, and nothing is left traced afterwards; the process count is back.
-module(riarc_attach_tests).

-include_lib("eunit/include/eunit.hrl").

%% A Spec recording every event of the dispenser's partition, to the test.
recording(Test) ->
    fun({riarc_demo_tickets, init, _}) -> {ok, rec(Test)};
       (_) -> undefined
    end.
rec(Test) -> fun(E) -> Test ! {event, E}, rec(Test) end.

start_tree(Mode) ->
    {ok, Sup} = riarc_demo_tickets_sup:start_link(Mode),
    unlink(Sup),
    Sup.

stop_tree(Sup) ->
    Ref = monitor(process, Sup),
    exit(Sup, shutdown),
    receive {'DOWN', Ref, process, Sup, _} -> ok end.

clients(N, Tickets) ->
    Ps = [spawn_monitor(riarc_demo, client, [self(), Tickets]) || _ <- lists:seq(1, N)],
    [receive {'DOWN', R, process, _, normal} -> ok end || {_, R} <- Ps].

supervisor_tree_test() ->
    Sup = start_tree(racy),
    Server = whereis(riarc_demo_tickets),
    {ok, _} = application:ensure_all_started(riarc),
    Before = erlang:processes(),
    {ok, S} = riarc:attach({supervisor, Sup}, recording(self()), #{log => false}),
    SRef = monitor(process, S),
    ?assertEqual(lists:sort([Sup, Server]), lists:sort(maps:get(processes, riarc:alive(S)))),
    clients(4, 10),
    {ok, #{verdicts := Vs}} = riarc:stop(S),
    %% The monitor's first event is the attached event, with the MFA as Λ sees it.
    [First | Rest] = events(),
    ?assertEqual({attached, Server, {riarc_demo_tickets, init, ['$unknown']}}, First),
    %% 4 clients x 10 calls reached the server while attached.
    ?assertEqual(40, length([x || {recv, P, {'$gen_call', _, next}} <- Rest, P =:= Server])),
    ?assertMatch([#{pid := Server, mfa := {riarc_demo_tickets, init, _}}], Vs),
    %% Detached: nothing of the tree is traced, and riarc's processes are gone.
    [?assertEqual({P, {flags, []}}, {P, erlang:trace_info(P, flags)}) || P <- [Sup, Server]],
    receive {'DOWN', SRef, process, S, _} -> ok end,
    %% Race: riarc's tracers, analysis processes and pattern keeper end on their own once
    %% they see the session go, which may be just after its 'DOWN' reached us. Each must
    %% end (bounded, by monitors): none is left.
    ?assertEqual(ok, await_gone(erlang:processes() -- Before)),
    stop_tree(Sup).

await_gone(Ps) ->
    Refs = [{P, monitor(process, P)} || P <- Ps],
    [receive {'DOWN', R, process, P, _} -> ok
     after 10000 -> error({left_alive, P, erlang:process_info(P, [initial_call, current_function])})
     end || {P, R} <- Refs],
    ok.

events() ->
    receive {event, E} -> [E | events()] after 0 -> [] end.

%% The demo's own monitors, attached to the racy dispenser: the race shows as a reject in
%% some run of clients (as it does when riarc starts the system itself).
catches_the_race_test_() ->
    {timeout, 120, fun() ->
        Verdicts = [begin
                        Sup = start_tree(racy),
                        {ok, S} = riarc:attach(riarc_demo_tickets, riarc_demo_monitors, #{log => false}),
                        clients(8, 20),
                        {ok, #{verdicts := [#{verdict := V}]}} = riarc:stop(S),
                        stop_tree(Sup),
                        V
                    end || _ <- lists:seq(1, 10)],
        ?assert(lists:member(reject, Verdicts))
    end}.

errors_test_() ->
    [?_assertMatch({error, {riarc, {not_registered, no_such_name}}},
                   riarc:attach(no_such_name, riarc_demo_monitors, #{})),
     ?_assertMatch({error, {riarc, {not_running, no_such_app}}},
                   riarc:attach({application, no_such_app}, riarc_demo_monitors, #{})),
     ?_assertMatch({error, {riarc, {not_a_supervisor, _}}},
                   riarc:attach({supervisor, self()}, riarc_demo_monitors, #{})),
     ?_assertMatch({error, {riarc, {bad_target, "x"}}}, riarc:attach("x", riarc_demo_monitors, #{})),
     ?_assertEqual("no process is registered as no_such_name",
                   riarc:format_error({riarc, {not_registered, no_such_name}}))].
