%% @doc ETS and mnesia in a record &amp; replay run: woven code (see
%% {@link riarc_replay_transform}) calls ets/2 for an ETS operation and mnesia/2 for a
%% mnesia transaction, activity or dirty operation. Each takes the turn of the shared
%% object (the table; the run's mnesia), recorded as an ETS event in the process's
%% stream ({@link riarc_replay_stream}) and waited for in a replay. Outside a run, and
%% on a private table, each does what the plain operation does.
%% ```
%% 1> T = ets:new(t, [public]), riarc_replay_ets:ets(insert, [T, {k, 1}]).
%% true
%% 2> riarc_replay_ets:ets(lookup, [T, k]).
%% [{k,1}]
%% 3> riarc_replay_ets:mnesia(error_description, [bad_type]).
%% "Bad type on some provided arguments"
%% '''
-module(riarc_replay_ets).

-export([ets/2, mnesia/2]).

-include("riarc_replay_rt.hrl").

%% Inside a mnesia transaction, activity or dirty operation (which holds the run's
%% mnesia turn).
-define(TXN, '$riarc_rr_txn').

%% @doc Woven `ets:Op(Args...)' on a table that is not private: the operation takes the
%% table's next turn. Recording: a per-table lock (an atomics compare-exchange) makes
%% "do the operation, take the version" atomic, and the version is written. Replay: the
%% process waits until the table is at the recorded version, does the operation and
%% moves the version on (003's lock replay). Reads take turns too: a lookup racing with
%% an insert is as nondeterministic as two inserts.
-spec ets(atom(), list()) -> term().
ets(Op, Args = [Tab | _]) ->
    case get(?KEY) of
        undefined ->
            apply(ets, Op, Args);
        S ->
            case table(Tab, S) of
                private -> apply(ets, Op, Args);
                Ref -> ets_turn(Op, Args, Ref, get(?KEY))
            end
    end.

%% The table's lock (index 1) and version (index 2), shared by every process of the run
%% through the run's table; private tables and tables that do not exist are not
%% shared.
table(Tab, S = #replay_run{tabs = Tabs, tab = RunTab}) ->
    case Tabs of
        #{Tab := Ref} ->
            Ref;
        #{} ->
            Ref = case ets:info(Tab, protection) of
                      private -> private;
                      undefined -> private;
                      _ ->
                          Id = case ets:info(Tab, named_table) of
                                   true -> Tab;
                                   false -> ets:info(Tab, id)
                               end,
                          New = atomics:new(2, []),
                          _ = ets:insert_new(RunTab, {{table, Id}, New}),
                          ets:lookup_element(RunTab, {table, Id}, 2)
                  end,
            put(?KEY, S#replay_run{tabs = Tabs#{Tab => Ref}}),
            Ref
    end.

ets_turn(Op, Args, Ref, S) ->
    turn(ets, Op, Args, Ref, S).

%% Step (003, lock replay): the operation holds the shared object's turn. Recording: the
%% lock makes "do it, take the version" atomic and the version is written; replay: wait
%% until the object is at the recorded version, do it, move the version on.
turn(Mod, Op, Args, Ref, #replay_run{mode = record}) ->
    lock(Ref),
    %% The turn is written before the operation runs, where the replay takes it: a
    %% transaction's or an activity's fun records events of its own (a receive, a random
    %% number), and those come after the turn in both.
    V = atomics:get(Ref, 2),
    _ = riarc_replay_stream:record_event(?EV_ETS, V, get(?KEY)),
    try
        apply(Mod, Op, Args)
    after
        atomics:put(Ref, 2, V + 1),
        atomics:put(Ref, 1, 0)
    end;
turn(Mod, Op, Args, Ref, S = #replay_run{mode = replay}) ->
    V = riarc_replay_stream:take(?EV_ETS, {Mod, Op}, S),
    wait_turn(Ref, V, 0),
    try
        apply(Mod, Op, Args)
    after
        atomics:put(Ref, 2, V + 1)
    end.

%% @doc Woven `mnesia:transaction/1,2,3' and `mnesia:sync_transaction/1,2,3' (003's STM
%% replay: the commit order): a transaction of a process of the run takes the turn of
%% the run's mnesia, a lock and version shared by the run's processes like an ETS
%% table's, for its whole length. Recording therefore runs the run's transactions one at
%% a time (a legal execution: mnesia's transactions are serialisable; none restarts
%% for a conflict with another of the run) and writes the turn (an `ETS' event); the
%% replay runs them in the recorded order. An activity (`activity/2,4', `async_dirty',
%% `sync_dirty', `ets') takes the turn for its whole fun as a transaction does; a dirty
%% operation outside them takes it for itself, so that dirty operations, which race
%% like unrecorded ETS operations, are ordered among themselves and with the
%% transactions as in the recording (a dirty read and write of one record by two
%% processes loses the same update in the replay). Anything inside a transaction or an
%% activity is part of it and takes no turn.
-spec mnesia(atom(), list()) -> term().
mnesia(Op, Args) ->
    case {get(?KEY), get(?TXN)} of
        {S = #replay_run{}, undefined} ->
            Ref = shared_ref(mnesia, S),
            put(?TXN, true),
            try turn(mnesia, Op, Args, Ref, get(?KEY))
            after erase(?TXN)
            end;
        _ ->
            apply(mnesia, Op, Args)
    end.

%% The lock and version of a shared object of the run, by name.
shared_ref(Name, S = #replay_run{tabs = Tabs, tab = RunTab}) ->
    case Tabs of
        #{{shared, Name} := Ref} ->
            Ref;
        #{} ->
            _ = ets:insert_new(RunTab, {{table, {shared, Name}}, atomics:new(2, [])}),
            Ref = ets:lookup_element(RunTab, {table, {shared, Name}}, 2),
            put(?KEY, S#replay_run{tabs = Tabs#{{shared, Name} => Ref}}),
            Ref
    end.

lock(Ref) ->
    case atomics:compare_exchange(Ref, 1, 0, 1) of
        ok -> ok;
        _ -> erlang:yield(), lock(Ref)
    end.

%% Waiting for a turn is not a receive the watchdog can see. The process whose turn it is
%% is usually runnable, so yielding lets it run; only after many yields does the waiter
%% say what it waits for (?WAIT) and back off 1 ms at a time.
-define(YIELDS, 5000).

wait_turn(Ref, V, Spins) ->
    case atomics:get(Ref, 2) of
        V ->
            case Spins > ?YIELDS of
                true -> erase(?WAIT);
                false -> ok
            end,
            ok;
        _ when Spins < ?YIELDS ->
            erlang:yield(),
            wait_turn(Ref, V, Spins + 1);
        Now ->
            put(?WAIT, {ets_turn, V, {table_at, Now}}),
            riarc_replay_wait:nap(),
            wait_turn(Ref, V, Spins + 1)
    end.
