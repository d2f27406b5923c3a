%% The demo's property, as Erlang monitors: it holds for one client (no concurrency, no
%% race) and catches the lost update with concurrent clients.
-module(riarc_demo_tests).

-include_lib("eunit/include/eunit.hrl").

server_verdict(Clients) ->
    {ok, #{verdicts := Vs, violations := []}} =
        riarc:run({riarc_demo, main, [Clients, 25]}, riarc_demo_monitors, #{log => false}),
    ?assertEqual(Clients, length([x || #{mfa := {riarc_demo, client, _}, verdict := accept} <- Vs])),
    [V] = [V || #{mfa := {riarc_demo_tickets, init, _}, verdict := V} <- Vs],
    V.

one_client_no_race_test() ->
    ?assertEqual(none, server_verdict(1)).

%% The race is a race: tried up to ten times, it shows at least once (every time in
%% practice on this machine, 5 of 5 runs).
concurrent_clients_race_test_() ->
    {timeout, 120, ?_assert(lists:member(reject, until_reject(10)))}.

until_reject(0) -> [];
until_reject(N) ->
    case server_verdict(8) of
        reject -> [reject];
        V -> [V | until_reject(N - 1)]
    end.

%% The property itself, on hand-written events: the server's replies to its helpers'
%% reads are not tickets; a ticket handed out twice is.
property_test_() ->
    S = server, H1 = helper1, H2 = helper2,
    Run = fun(Events) ->
                  {ok, M} = riarc_demo_monitors:spec({riarc_demo_tickets, init, [0]}),
                  lists:foldl(fun(E, {next, Mon}) -> riarc_monitor:analyse(Mon, E);
                                 (_, Verdict) -> Verdict end, {next, M}, Events)
          end,
    R1 = make_ref(), R2 = make_ref(),
    Init = {init, S, root, {riarc_demo_tickets, init, [0]}},
    [?_assertMatch({next, _}, Run([Init, {send, S, H1, {R1, 0}}, {send, H1, c1, {R2, 0}},
                                   {send, S, H2, {R1, 1}}, {send, H2, c2, {R2, 1}}])),
     ?_assertEqual({verdict, reject}, Run([Init, {send, H1, c1, {R1, 0}}, {send, H2, c2, {[alias | R2], 0}}]))].
