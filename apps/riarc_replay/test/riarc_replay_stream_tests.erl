%% riarc_replay_stream on its own: what a process records (runs of its mergeable type
%% merged into REPEAT, other events, side values, across chunks) reads back in a replay
%% as the same events in the same order, and then the end of the stream.
-module(riarc_replay_stream_tests).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").
-include("../src/riarc_replay_rt.hrl").

round_trip_test_() ->
    {timeout, 120, ?_assert(riarc_test_tier:quickcheck(prop_round_trip(), {100, 1000}))}.

prop_round_trip() ->
    ?FORALL({Merge, Events}, {oneof([?EV_RECV, ?EV_SEND]), events()},
            begin
                {Stream, Sides} = record(Merge, Events),
                ?WHENFAIL(io:format("~p~n", [{Merge, Events}]),
                          replay(Merge, Events, Stream, Sides) =:= eos)
            end).

%% Up to three chunks' worth, so that chunks are cut inside runs too.
events() ->
    ?LET(N, range(0, 700), vector(N, event())).

%% Runs: a data that goes up by a small step from the one before, often.
event() ->
    frequency([{6, {merge, range(0, 3)}},
               {1, {merge_at, range(0, 1 bsl 40)}},
               {2, {plain, elements([?EV_RECV, ?EV_RECV_EXT, ?EV_TIMEOUT, ?EV_SEND, ?EV_ETS,
                                     ?EV_FROM, ?EV_MONO, ?EV_UNIQUE, ?EV_DELAY]),
                    range(-(1 bsl 63), 1 bsl 63 - 1)}},
               {1, {side, elements([?EV_MONO, ?EV_RAND_INT, ?EV_TIMESTAMP]), term()}}]).

%% Records Events in a process of a recording run of its own; returns its chunks joined
%% and its side table, as the controller joins them.
record(Merge, Events) ->
    Tab = ets:new(stream_test, [public]),
    {Pid, Ref} = spawn_monitor(fun() ->
        Run = {record, receiver, Tab, self(), counters:new(1, [])},
        put(?KEY, #replay_run{run = Run, mode = record, strategy = receiver, tab = Tab, idx = 0,
                              lid = [], progress = element(5, Run), seq = atomics:new(1, [])}),
        ok = riarc_replay_stream:init(),
        _ = lists:foldl(fun(E, Last) -> write(Merge, E, Last) end, 0, Events),
        _ = riarc_replay_stream:close(get(?KEY)),
        exit(recorded)
    end),
    receive {'DOWN', Ref, process, Pid, Why} -> ?assertEqual(recorded, Why) end,
    Chunks = lists:sort(ets:match(Tab, {{chunk, 0, '$1'}, '$2', '$3'})),
    ets:delete(Tab),
    {iolist_to_binary([C || [_, C, _] <- Chunks]), lists:append([S || [_, _, S] <- Chunks])}.

%% The data of each mergeable event, from the one before.
write(Merge, {merge, Step}, Last) ->
    ok = riarc_replay_stream:record_run(Merge, Last + Step),
    Last + Step;
write(Merge, {merge_at, D}, _Last) ->
    ok = riarc_replay_stream:record_run(Merge, D),
    D;
write(_Merge, {plain, T, D}, Last) ->
    _ = riarc_replay_stream:record_event(T, D, get(?KEY)),
    Last;
write(_Merge, {side, T, V}, Last) ->
    put(?KEY, riarc_replay_stream:record_side(T, V, get(?KEY))),
    Last.

%% Reads the events back as a replaying process does, in a process of its own; returns
%% what is left then (eos when the stream held exactly Events), or the first difference.
replay(Merge, Events, Stream, Sides) ->
    {Pid, Ref} = spawn_monitor(fun() ->
        Run = {replay, receiver, none, self(), counters:new(1, [])},
        S0 = #replay_run{run = Run, mode = replay, strategy = receiver, idx = 0, lid = [],
                         stream = Stream, sides = list_to_tuple(Sides), progress = element(5, Run)},
        put(?KEY, S0),
        {S, _} = lists:foldl(fun(E, {S, Last}) -> read(Merge, E, S, Last) end, {S0, 0}, Events),
        exit({left, riarc_replay_stream:next_event(S)})
    end),
    receive
        {'DOWN', Ref, process, Pid, {left, Left}} -> Left;
        {'DOWN', Ref, process, Pid, Why} -> Why
    end.

read(Merge, {merge, Step}, S, Last) ->
    {riarc_replay_stream:skip(expect({Merge, Last + Step}, S)), Last + Step};
read(Merge, {merge_at, D}, S, _Last) ->
    {riarc_replay_stream:skip(expect({Merge, D}, S)), D};
read(_Merge, {plain, T, D}, S, Last) ->
    {riarc_replay_stream:skip(expect({T, D}, S)), Last};
read(_Merge, {side, T, V}, S, Last) ->
    ?assertEqual({side, V}, riarc_replay_stream:take(T, value, S)),
    {get(?KEY), Last}.

expect(Event, S) ->
    ?assertEqual(Event, riarc_replay_stream:next_event(S)),
    S.

%% A process that waits with a run open (of step 1, of step 2, of step 0) has it written
%% by salvage/1 from a copy of its state: the chunk reads back as every event recorded.
salvage_test_() ->
    [{"step " ++ integer_to_list(Step),
      fun() ->
              Events = [{plain, ?EV_ETS, 7}, {merge_at, 100}] ++ [{merge, Step} || _ <- lists:seq(1, 5)],
              Tab = ets:new(salvage_test, [public]),
              Self = self(),
              Pid = spawn(fun() ->
                  Run = {record, receiver, Tab, self(), counters:new(1, [])},
                  put(?KEY, #replay_run{run = Run, mode = record, strategy = receiver, tab = Tab, idx = 0,
                                        lid = [], progress = element(5, Run), seq = atomics:new(1, [])}),
                  ok = riarc_replay_stream:init(),
                  _ = lists:foldl(fun(E, Last) -> write(?EV_RECV, E, Last) end, 0, Events),
                  Self ! {recorded, self()},
                  receive after infinity -> ok end
              end),
              receive {recorded, Pid} -> ok end,
              ok = riarc_replay_stream:salvage(Pid),
              exit(Pid, kill),
              [[Chunk]] = ets:match(Tab, {{chunk, 0, '_'}, '$1', '_'}),
              ets:delete(Tab),
              ?assertEqual(eos, replay(?EV_RECV, Events, Chunk, []))
      end} || Step <- [1, 2, 0]].
