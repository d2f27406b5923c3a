%% The offline engine over every interleaving of P/Q/R that riarc_interleave enumerates:
%% App. B.1 reordering keeps each process's order and puts each child after its spawn,
%% and checking gives the same verdicts on every interleaving.
-module(riarc_interleave_offline_tests).

-include_lib("eunit/include/eunit.hrl").

%% Over every interleaving of P/Q/R: the output keeps each process's order, puts each
%% child after its spawn, and leaves the consistent interleavings as they are.
reordering_all_interleavings_test() ->
    Is = riarc_interleave:interleavings(riarc_interleave:pqr()),
    Consistent = [ok || I <- Is, begin
                                     {Out, _} = riarc_backend_log:replay(I, [p]),
                                     [?assertEqual(own(I, S), own(Out, S)) || S <- [p, q, r]],
                                     ?assert(causal(Out)),
                                     causal(I) andalso (Out =:= I orelse error({changed, I, Out}))
                                 end],
    ?assert(length(Consistent) > 0).

own(Es, S) -> [E || E <- Es, riarc_event:origin(E) =:= S].

causal(Es) -> causal(Es, #{p => true}).
causal([], _) -> true;
causal([E | Es], Known) ->
    S = riarc_event:origin(E),
    is_map_key(S, Known) andalso
        causal(Es, case E of {spawn, _, C, _} -> Known#{C => true}; _ -> Known end).

reject_test() ->
    Spec = fun({riarc_demo_pqr, q, _}) -> {ok, fun({recv, _, req}) -> reject; (_) -> accept end};
              (_) -> undefined end,
    [I | _] = riarc_interleave:interleavings(riarc_interleave:pqr()),
    {ok, #{verdicts := Vs}} = riarc_offline:check({events, I}, Spec, #{}),
    ?assertMatch([#{pid := q, verdict := accept}], Vs),
    Spec2 = fun({riarc_demo_pqr, q, _}) -> {ok, fun M({init, _, _, _}) -> M; M(_) -> reject end};
               (_) -> undefined end,
    {ok, #{verdicts := Vs2}} = riarc_offline:check({events, I}, Spec2, #{}),
    ?assertMatch([#{pid := q, verdict := reject}], Vs2).
