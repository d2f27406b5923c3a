%% Clean after any end (issue 29): the node-wide state a session changes (the send and
%% receive match specifications, the call pattern on remote starts) is put back when the
%% session ends in any way, killed or with riarc's supervisor killed, not only by stop/1.
-module(riarc_cleanup_tests).

-include_lib("eunit/include/eunit.hrl").

-export([sleeper/0]).

-spec sleeper() -> ok.
sleeper() -> receive stop -> ok end.

%% A session that filters: its patterns differ from the node's own.
start() ->
    Patterns = #{send => false, 'receive' => [{['_', '_', {error, '_'}], [], []}]},
    {ok, S} = riarc:start({?MODULE, sleeper, []}, fun(_) -> {ok, fun M(_) -> M end} end,
                          #{trace_patterns => Patterns}),
    ?assertNotEqual(before(), riarc_trace_pattern:installed()),
    S.

before() -> persistent_term:get({?MODULE, before}).

%% The keeper ends once it has let go of the last holder: after its end the patterns are
%% the node's own again.
await_keeper() ->
    case whereis(riarc_pattern_keeper) of
        undefined -> ok;
        K ->
            Ref = monitor(process, K),
            receive {'DOWN', Ref, process, K, _} -> ok end
    end.

cleanup_test_() ->
    {setup,
     fun() ->
             {ok, _} = application:ensure_all_started(riarc),
             persistent_term:put({?MODULE, before}, riarc_trace_pattern:installed())
     end,
     fun(_) -> persistent_term:erase({?MODULE, before}) end,
     [{"session killed", fun session_killed/0},
      {"supervisor killed", fun supervisor_killed/0},
      {"stopped", fun stopped/0}]}.

session_killed() ->
    S = start(),
    #{processes := [P]} = riarc:alive(S),
    Ref = monitor(process, S),
    exit(S, kill),
    receive {'DOWN', Ref, process, S, killed} -> ok end,
    ok = await_keeper(),
    ?assertEqual(before(), riarc_trace_pattern:installed()),
    P ! stop.

%% The monitored system kills riarc's supervisor: the sessions under it end, and the
%% keeper, linked to none of them, puts the patterns back.
supervisor_killed() ->
    S = start(),
    #{processes := [P]} = riarc:alive(S),
    Sup = whereis(riarc_sup),
    Ref = monitor(process, Sup),
    exit(Sup, kill),
    receive {'DOWN', Ref, process, Sup, killed} -> ok end,
    ok = await_keeper(),
    ?assertEqual(before(), riarc_trace_pattern:installed()),
    P ! stop,
    %% The application's master may still be taking it down: stop/1 waits for that.
    _ = application:stop(riarc),
    {ok, _} = application:ensure_all_started(riarc).

stopped() ->
    S = start(),
    #{processes := [P]} = riarc:alive(S),
    P ! stop,
    {ok, _} = riarc:stop(S),
    ok = await_keeper(),
    ?assertEqual(before(), riarc_trace_pattern:installed()).
