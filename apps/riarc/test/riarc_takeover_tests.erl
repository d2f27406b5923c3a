%% The takeover under load, through the whole stack (riarc:run/3, the routing-table
%% backend, the tracers): thousands of fresh workers, each taken over by its own tracer
%% right after its spawn while three feeders send it numbered messages, with spinner
%% processes loading every scheduler. Every worker's monitor checks that it saw every
%% feeder's messages, each exactly once and in the order sent, then its exit: nothing
%% lost, duplicated, late or out of order, and no incomplete trace anywhere.
-module(riarc_takeover_tests).

-include_lib("eunit/include/eunit.hrl").

-export([master/2, worker/0, feeder/3, spec/1, analyse/2, timeouts/0]).

-define(FEEDERS, 3).
-define(PER_FEEDER, 10).

%% The system: the master spawns N workers, then three feeders that each send every
%% worker ?PER_FEEDER numbered messages and a last one; the master ends when all
%% workers have.
-spec master(pos_integer(), pid()) -> ok.
master(N, Test) ->
    Ws = [spawn_monitor(?MODULE, worker, []) || _ <- lists:seq(1, N)],
    Pids = [W || {W, _} <- Ws],
    _ = [spawn(?MODULE, feeder, [I, Pids, self()]) || I <- lists:seq(1, ?FEEDERS)],
    [receive {'DOWN', R, process, W, _} -> ok end || {W, R} <- Ws],
    Test ! {master_done, self()},
    ok.

-spec feeder(pos_integer(), [pid()], pid()) -> ok.
feeder(I, Workers, _Master) ->
    _ = [[W ! {f, I, K} || W <- Workers] || K <- lists:seq(1, ?PER_FEEDER)],
    _ = [W ! {last, I} || W <- Workers],
    ok.

-spec worker() -> ok.
worker() -> wloop(?FEEDERS).

wloop(0) -> ok;
wloop(L) ->
    receive
        {last, _} -> wloop(L - 1);
        {f, _, _} -> wloop(L)
    end.

%% Workers get a monitor each (so each is taken over by its own tracer); the master and
%% the feeders stay in the root's partition.
-spec spec(term()) -> {ok, riarc_monitor:monitor()} | undefined.
spec({?MODULE, worker, []}) -> {ok, {?MODULE, #{}}};
spec(_) -> undefined.

%% The worker's monitor: per feeder, the next number expected; a feeder's last message
%% only after all its numbers; at the exit, every feeder done.
-spec analyse(riarc_event:event(), map()) -> {next, map()} | accept | reject.
analyse({recv, _, {f, I, K}}, Next) ->
    case maps:get(I, Next, 1) of
        K -> {next, Next#{I => K + 1}};
        _ -> reject
    end;
analyse({recv, _, {last, I}}, Next) ->
    case maps:get(I, Next, 1) of
        N when N =:= ?PER_FEEDER + 1 -> {next, Next#{I => done}};
        _ -> reject
    end;
analyse({exit, _, normal}, Next) ->
    case lists:all(fun(I) -> maps:get(I, Next, 1) =:= done end, lists:seq(1, ?FEEDERS)) of
        true -> accept;
        false -> reject
    end;
analyse(_, Next) ->
    {next, Next}.

run(N) ->
    run(N, #{}).

run(N, Opts) ->
    riarc_test_load:loaded(fun() ->
                                   {ok, R} = riarc:run({?MODULE, master, [N, self()]}, fun spec/1,
                                                       maps:merge(#{log => false, events => [recv], timeout => 120000}, Opts)),
                                   receive {master_done, _} -> ok end,
                                   R
                           end).

fresh_workers_under_load_test_() ->
    {timeout, 300, fun() ->
        N = riarc_test_tier:count(500, 2000),
        R = #{verdicts := Vs} = run(N),
        ?assertEqual([], maps:get(violations, R)),
        ?assertEqual([], maps:get(errors, R)),
        Bad = [V || V = #{verdict := Verdict} <- Vs, Verdict =/= accept],
        ?assertEqual([], Bad),
        ?assertEqual(N, length(Vs))
    end}.

%% The same with monitors in their tracers, whose partitions a tracer may adopt
%% (riarc_tracer_adopted): all of them (the master's tracer keeps every worker: one
%% tracer in all), none (a tracer and a takeover per worker, as in the paper), or the
%% first 16 (both at once). Every worker's trace is whole either way.
adoption_under_load_test_() ->
    {timeout, 300, fun() ->
        N = riarc_test_tier:count(300, 1000),
        [begin
             R = #{verdicts := Vs} = run(N, #{analysis => inline, adopt => Adopt}),
             ?assertEqual({Adopt, [], []}, {Adopt, maps:get(violations, R), maps:get(errors, R)}),
             ?assertEqual({Adopt, []}, {Adopt, [V || V = #{verdict := X} <- Vs, X =/= accept]}),
             ?assertEqual({Adopt, N}, {Adopt, length(Vs)}),
             ?assertEqual({Adopt, Tracers}, {Adopt, maps:get(spawned, maps:get(tracers, R))})
         end || {Adopt, Tracers} <- [{infinity, 1}, {0, N + 1}, {16, N + 1 - 16}]]
    end}.

%% The same, many smaller runs in a row: a race that shows once in twenty runs shows here
%% (full tier).
repeated_under_load_test_() ->
    riarc_test_tier:slow({timeout, 300, fun() ->
        [begin
             #{verdicts := Vs, violations := [], errors := []} = run(200),
             ?assertEqual({I, []}, {I, [V || V = #{verdict := X} <- Vs, X =/= accept]})
         end || I <- lists:seq(1, 20)]
    end}).

%% A receive that times out is its own event, never a message `timeout'.
timeout_event_test() ->
    Self = self(),
    Spec = fun(_) -> {ok, riarc_testkit_recorder(Self)} end,
    {ok, #{verdicts := [_]}} =
        riarc:run({?MODULE, timeouts, []}, Spec, #{log => false}),
    Events = receive {events, Es} -> Es end,
    ?assertEqual([{timeout}, {recv, timeout}],
                 [case E of {timeout, _} -> {timeout}; {recv, _, M} -> {recv, M} end
                  || E <- Events, element(1, E) =:= timeout orelse element(1, E) =:= recv]).

-spec timeouts() -> ok.
timeouts() ->
    receive never -> ok after 1 -> ok end,
    self() ! timeout,
    receive timeout -> ok end.

%% A monitor that sends the events it saw to the test at the exit.
riarc_testkit_recorder(To) -> rec(To, []).
rec(To, Acc) ->
    fun({exit, _, _} = E) -> To ! {events, lists:reverse([E | Acc])}, accept;
       (E) -> rec(To, [E | Acc])
    end.
