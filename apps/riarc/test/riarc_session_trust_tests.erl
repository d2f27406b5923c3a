%% The session's trust boundary (riarc_session_trust): only the session's token makes a
%% message riarc's own; 'DOWN' and 'EXIT' about a live process were not sent by the VM;
%% anything else in riarc's shape is forged.
-module(riarc_session_trust_tests).

-include_lib("eunit/include/eunit.hrl").

token_test() ->
    Token = make_ref(),
    ?assertEqual({trusted, hello}, riarc_session_trust:check({riarc_s, Token, hello}, Token, none)),
    %% Another token is not the session's: routed on, then refused as forged.
    Forged = {riarc_s, make_ref(), hello},
    ?assertEqual(other, riarc_session_trust:check(Forged, Token, none)),
    ?assertEqual(forged, riarc_session_trust:unknown(Forged)).

down_exit_test() ->
    Token = make_ref(),
    Live = self(),
    {Dead, Ref} = spawn_monitor(fun() -> ok end),
    receive {'DOWN', Ref, process, Dead, normal} -> ok end,
    ?assertEqual(forged, riarc_session_trust:check({'DOWN', make_ref(), process, Live, normal}, Token, none)),
    ?assertEqual(forged, riarc_session_trust:check({'EXIT', Live, killed}, Token, none)),
    ?assertEqual(other, riarc_session_trust:check({'DOWN', Ref, process, Dead, normal}, Token, none)),
    ?assertEqual(other, riarc_session_trust:check({'EXIT', Dead, normal}, Token, none)).

unknown_test() ->
    ?assertEqual(forged, riarc_session_trust:unknown({riarc_verdict, x, y})),
    ?assertEqual(ignore, riarc_session_trust:unknown({other, 1})),
    ?assertEqual(ignore, riarc_session_trust:unknown({riarc_alone})),
    ?assertEqual(ignore, riarc_session_trust:unknown(riarc_atom)),
    ?assertEqual(ignore, riarc_session_trust:unknown("riarc_")).
