%% The session's distribution part as the session holds it (riarc_session_follow): with
%% none, every call answers for none; with one, each call reaches the module with its
%% state and the new state is kept. This module plays the distribution module: its
%% state counts the calls that change it.
-module(riarc_session_follow_tests).

-include_lib("eunit/include/eunit.hrl").

%% riarc_distribution's part callbacks, played.
-export([tracer_cfg/2, handle_info/3, remote_child/5, wait/2, stop_followers/2, entries/2, held/1]).

tracer_cfg(Cfg, N) -> Cfg#{played => N}.
handle_info(mine, _Ctx, N) -> {changed, N + 1, [{forged, 1}]};
handle_info(_Msg, _Ctx, _N) -> unknown.
remote_child(_Tracer, Kind, _Info, _Ctx, N) -> {N + 1, [{error, Kind}]}.
wait(false, N) -> {wait_closed, N + 1};
wait(true, _N) -> done.
stop_followers(Cut, N) -> {Cut, N}.
entries(Finished, N) -> [#{finished => Finished, n => N}].
held(N) -> N.

none_test() ->
    ?assertEqual(done, riarc_session_follow:wait(true, undefined)),
    ?assertEqual(done, riarc_session_follow:wait(false, undefined)),
    ?assertEqual([], riarc_session_follow:entries(false, undefined)),
    ?assertEqual(0, riarc_session_follow:held(undefined)),
    ?assertEqual(unknown, riarc_session_follow:handle_info(hello, #{}, undefined)),
    ?assertEqual(none, riarc_session_follow:remote_child(self(), relayed, #{}, #{}, undefined)),
    ?assertEqual(#{a => 1}, riarc_session_follow:tracer_cfg(#{a => 1}, undefined)),
    ?assertEqual(undefined, riarc_session_follow:stop_followers(cut, undefined)).

part_test() ->
    D = {?MODULE, 0},
    ?assertEqual(#{a => 1, played => 0}, riarc_session_follow:tracer_cfg(#{a => 1}, D)),
    ?assertEqual(unknown, riarc_session_follow:handle_info(hello, #{}, D)),
    ?assertEqual({changed, {?MODULE, 1}, [{forged, 1}]}, riarc_session_follow:handle_info(mine, #{}, D)),
    ?assertEqual({{?MODULE, 1}, [{error, own}]}, riarc_session_follow:remote_child(self(), own, #{}, #{}, D)),
    ?assertEqual({wait_closed, {?MODULE, 1}}, riarc_session_follow:wait(false, D)),
    ?assertEqual(done, riarc_session_follow:wait(true, D)),
    ?assertEqual({?MODULE, {cut, 0}}, riarc_session_follow:stop_followers(cut, D)),
    ?assertEqual([#{finished => true, n => 0}], riarc_session_follow:entries(true, D)),
    ?assertEqual(7, riarc_session_follow:held({?MODULE, 7})).
