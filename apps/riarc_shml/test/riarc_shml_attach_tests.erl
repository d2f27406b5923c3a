%% A property written for `run' works unchanged with `attach': the attached process's
%% first event reaches the property as its start, so a clause that opens with the start
%% (`[S <- _, M:F()]') keeps watching instead of accepting at once (issue 28).
-module(riarc_shml_attach_tests).

-include_lib("eunit/include/eunit.hrl").

-export([server/0]).

%% Answers every `{put, From, N}' with ok, and with an error every fifth time.
-spec server() -> ok.
server() -> server(1).

server(K) ->
    receive
        {put, From, _N} when K rem 5 =:= 0 -> From ! {self(), {error, full}}, server(K + 1);
        {put, From, _N} -> From ! {self(), ok}, server(K + 1);
        stop -> ok
    end.

-define(PROP, "with riarc_shml_attach_tests:server() monitor\n"
              "  [S <- _, riarc_shml_attach_tests:server()]\n"
              "  max(X. and([S:_ ! {_, {error, _}}] ff, [S:_ ! _] X)).\n").

attach_test_() ->
    [{atom_to_list(How), fun() -> attach(How) end} || How <- [run, attach]].

attach(How) ->
    {ok, Mod} = riarc_shml:load_string(?PROP, riarc_shml_attach_props, "attach.prop"),
    Self = self(),
    {ok, S} = case How of
                  run -> riarc:start({?MODULE, server, []}, Mod, #{});
                  attach -> riarc:attach(spawn(?MODULE, server, []), Mod, #{})
              end,
    #{processes := [Server]} = riarc:alive(S),
    [begin Server ! {put, Self, N}, receive {Server, _} -> ok end end || N <- lists:seq(1, 6)],
    Server ! stop,
    {ok, R = #{verdicts := [V]}} = riarc_session:finish(S, 10000),
    ?assertMatch(#{verdict := reject, why := #{words := <<"ff reached", _/binary>>}}, V),
    ?assertEqual(1, riarc_result:status(R)).
