%% The demo's property, as Erlang monitors: no false alarm on the safe dispenser under
%% concurrent clients, and the lost update caught on the racy one.
-module(riarc_demo_tests).

-include_lib("eunit/include/eunit.hrl").

verdicts(Mode) ->
    {ok, #{verdicts := Vs, violations := []}} =
        riarc:run({riarc_demo, main, [8, 25, Mode]}, riarc_demo_monitors, #{log => false}),
    ?assertEqual(9, length(Vs)),
    Vs.

safe_dispenser_test() ->
    Vs = verdicts(safe),
    ?assertEqual([none], [V || #{mfa := {riarc_demo_tickets, init, _}, verdict := V} <- Vs]),
    ?assertEqual(8, length([x || #{mfa := {riarc_demo, client, _}, verdict := accept} <- Vs])).

%% The race is a race: tried up to ten times, it shows at least once (every time in
%% practice on this machine). The dispenser's monitor, or a client that got the same
%% ticket twice, rejects.
racy_dispenser_test_() ->
    {timeout, 120, ?_assert(caught(10))}.

caught(0) -> false;
caught(N) ->
    Vs = verdicts(racy),
    ?assertEqual([], [V || V = #{verdict := error} <- Vs]),
    case [V || V = #{verdict := reject} <- Vs] of
        [] -> caught(N - 1);
        _ -> true
    end.

%% The property itself, on hand-written events: the server's replies to its helpers'
%% reads are not tickets; a ticket handed out twice is.
property_test_() ->
    S = server, H1 = helper1, H2 = helper2,
    Run = fun(Events) ->
                  {ok, M} = riarc_demo_monitors:spec({riarc_demo_tickets, init, [racy]}),
                  lists:foldl(fun(E, {next, Mon}) -> riarc_monitor:analyse(Mon, E);
                                 (_, Verdict) -> Verdict end, {next, M}, Events)
          end,
    R1 = make_ref(), R2 = make_ref(),
    Init = {init, S, root, {riarc_demo_tickets, init, [racy]}},
    [?_assertMatch({next, _}, Run([Init, {send, S, H1, {R1, 0}}, {send, H1, c1, {R2, 0}},
                                   {send, S, H2, {R1, 1}}, {send, H2, c2, {R2, 1}}])),
     ?_assertEqual({verdict, reject}, Run([Init, {send, H1, c1, {R1, 0}}, {send, H2, c2, {[alias | R2], 0}}]))].

%% gen_server and supervisor processes are matched by their callback modules.
supervisor_tree_test() ->
    Self = self(),
    Spec = fun({riarc_demo_tickets, init, [racy]} = MFA) -> {ok, riarc_test_sys:recorder(Self, MFA)};
              ({riarc_demo_tickets_sup, init, [racy]} = MFA) -> {ok, riarc_test_sys:recorder(Self, MFA)};
              ({riarc_demo, client, [_, 3]} = MFA) -> {ok, riarc_test_sys:recorder(Self, MFA)};
              (_) -> undefined
           end,
    {ok, #{verdicts := Vs, violations := []}} =
        riarc:run({riarc_demo, main, [2, 3]}, Spec, #{log => false}),
    MFAs = lists:sort([MFA || #{mfa := MFA} <- Vs]),
    ?assertMatch([{riarc_demo, client, [_, 3]}, {riarc_demo, client, [_, 3]},
                  {riarc_demo_tickets, init, [racy]}, {riarc_demo_tickets_sup, init, [racy]}], MFAs),
    Seen = flush(),
    %% The server's partition holds its helpers (funs, left to it by Λ): for each of the
    %% 2 x 3 tickets it saw the server's reply to a helper's read and the helper's reply
    %% to the client.
    ServerEvents = [E || {mon, {riarc_demo_tickets, init, _}, E} <- Seen],
    ?assertEqual(12, length([x || {send, _, _, {_, N}} <- ServerEvents, is_integer(N)])),
    %% Every monitor opened with its process's init event and closed with its exit.
    [?assertMatch([{init, _, _, MFA} | _], [E || {mon, M, E} <- Seen, M =:= MFA]) || MFA <- MFAs],
    [?assertMatch({exit, _, _}, lists:last([E || {mon, M, E} <- Seen, M =:= MFA])) || MFA <- MFAs].

flush() -> receive M -> [M | flush()] after 0 -> [] end.
