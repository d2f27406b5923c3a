%% @doc The messages a receive of a run takes that the stream names, with either
%% strategy: a wrapped message by its sender and sequence number (RECV; on the sender
%% side only a timer's), and plain messages (RECV_EXT, and FROM for the 'EXIT' or 'DOWN'
%% of a process of the run). Recording writes what was taken; a replay takes the same
%% message again. The receiver side's receive ({@link riarc_replay_rt}) and the sender
%% side's versioned one ({@link riarc_replay_versions}) both call it; it calls neither.
%%
%% Only an exit signal's message from a process of the run has a source to name: its
%% FROM data is the kind (1 'EXIT', 2 'DOWN') and the process's index.
%% ```
%% 1> Tab = ets:new(run, [public]).
%% 2> ets:insert(Tab, {self(), 3, undefined}).
%% true
%% 3> riarc_replay_take:plain_source({'EXIT', self(), boom}, Tab).
%% {1,3}
%% 4> riarc_replay_take:plain_source({'DOWN', make_ref(), process, self(), normal}, Tab).
%% {2,3}
%% 5> riarc_replay_take:plain_source(hello, Tab).
%% none
%% '''
-module(riarc_replay_take).

%% Recording.
-export([record_plain/3, plain_source/2]).
%% Replay.
-export([take_wrapped/3, replay_plain/2]).
%% Both.
-export([fired/2]).
%% The replay's watchdog.
-export([wait_named/2]).
-export_type([clauses/0]).

-include("riarc_replay_rt.hrl").

%% Replay: plain messages an unkeyed receive took out of the mailbox that a keyed one
%% (RECV_EXT + FROM) is to take, oldest first (see replay_plain/2).
-define(HELD, '$riarc_rr_held').
%% Replay: wrapped messages taken out of the mailbox before the one a RECV named, by
%% their RECV data (sender:24, seq:40), until a RECV names them (see wait_wrapped/2).
-define(RBUF, '$riarc_rr_rbuf').

%% The fun the weaver made of a receive's clauses (riarc_replay_transform).
-type clauses() :: fun((rec | ext | ver | match, term(), timeout()) -> term()).

%% @doc A start_timer message was taken: its ref no longer needs its real timer (a later
%% cancel_timer of it finds nothing, as for a timer that fired). Here, not in
%% riarc_replay_timers: that module calls the receive (riarc_replay_rt), which calls this
%% one, and modules call in no cycle.
-spec fired(term(), #replay_run{}) -> true.
fired({timeout, Ref, _}, #replay_run{tab = Tab}) when is_reference(Ref) ->
    ets:delete(Tab, {timer, Ref});
fired(_, _) ->
    true.

%%% Recording ----------------------------------------------------------------------------

%% @doc Recording of a receive that took a plain message: RECV_EXT (data N: see {@link
%% riarc_replay_versions:recv/3}), and FROM when the message is an 'EXIT' or 'DOWN' of a
%% process of the run. Plain messages from different processes race (two children's exits at a
%% supervisor, the 'DOWN's of a pool's workers); naming the source makes the replay
%% take the same one, while one source's signals keep their order in every run. Returns
%% the state (see riarc_replay_stream:record_event/3).
-spec record_plain(term(), non_neg_integer(), #replay_run{}) -> #replay_run{}.
record_plain(V, N, S = #replay_run{tab = Tab}) ->
    S1 = riarc_replay_stream:record_event(?EV_RECV_EXT, N, S),
    case plain_source(V, Tab) of
        none -> S1;
        {Kind, Idx} -> riarc_replay_stream:record_event(?EV_FROM, (Kind bsl 32) bor Idx, S1)
    end.

%% @doc The process of the run, by its index in the run's table Tab, whose exit signal
%% the plain message V is, with the kind (1 'EXIT', 2 'DOWN'); none for any other message.
-spec plain_source(term(), ets:tid()) -> {1 | 2, non_neg_integer()} | none.
plain_source(V, Tab) ->
    case plain_from(V) of
        {Kind, P} ->
            case ets:lookup(Tab, P) of
                [{_, Idx, _}] -> {Kind, Idx};
                [] -> none
            end;
        none ->
            none
    end.

%% The kind (1 'EXIT', 2 'DOWN') and the process of an exit signal's message.
plain_from({'EXIT', P, _}) when is_pid(P) -> {1, P};
plain_from({'DOWN', _, process, P, _}) when is_pid(P) -> {2, P};
plain_from(_) -> none.

%%% Replay -------------------------------------------------------------------------------

%% @doc Replay of RECV: exactly the recorded message, by its sender and sequence number;
%% the receive's own clauses must still take it. Gives {ClauseIndex, Message}.
-spec take_wrapped(non_neg_integer(), clauses(), #replay_run{}) -> {pos_integer(), term()}.
take_wrapped(D, F, S) ->
    Sender = D bsr ?SEQ_BITS,
    Seq = D band (1 bsl ?SEQ_BITS - 1),
    V = case get(?RBUF) of
            #{D := Msg} = Buf ->
                put(?RBUF, maps:remove(D, Buf)),
                Msg;
            _ ->
                wait_wrapped(D, S)
        end,
    fired(V, S),
    case F(match, V, 0) of
        0 ->
            riarc_replay_stream:diverge(S, {receive_message, sender_lid(Sender, S), Seq},
                                        {no_clause_matches, V});
        K -> {K, V}
    end.

%% The wrapped message D names, from the mailbox: the wrapped messages before it go to
%% the buffer, so that each is looked at once. A selective receive on (sender, seq) would
%% scan them again at every receive: where the replay's timing queues many messages
%% ahead of the recorded one (a bank teller's replies from 50 accounts), that is
%% quadratic in the mailbox's length.
%% The watchdog's reason names the RECV's data; the watchdog names the sender
%% (wait_named/2). Set for every wait, blocking or not: a look that does not
%% block would be `after 0', a timeout the monitors would be shown (riarc_replay_wait).
wait_wrapped(D, S) ->
    put(?WAIT, {receive_message, D}),
    receive
        {'$riarc_rr', D1, Msg} -> erase(?WAIT), wrapped(D1, Msg, D, S)
    end.

wrapped(D1, Msg, D, S) ->
    case D1 of
        D ->
            Msg;
        Other ->
            put(?RBUF, maps:put(Other, Msg, dict_get(?RBUF, #{}))),
            wait_wrapped(D, S)
    end.

%% A process-dictionary entry of the replay's, or Default before it is first written.
dict_get(Key, Default) ->
    case get(Key) of
        undefined -> Default;
        Value -> Value
    end.

%% @doc Replay of RECV_EXT, S past it. With FROM: the first plain message of that kind from
%% that process (held, or in the mailbox), which the clauses must take. On the sender
%% side, RECV after it: the wrapped timer message it names. Otherwise: the first plain
%% message the receive's clauses take that is not the 'EXIT' or 'DOWN' of a process of
%% the run, since the recording would have named such a message; one taken on the way is
%% held for the keyed receive that will name it (it is not a message any unkeyed receive
%% took in the recording). Gives {ClauseIndex, Message}.
-spec replay_plain(clauses(), #replay_run{}) -> {pos_integer(), term()}.
replay_plain(F, S = #replay_run{strategy = Strategy, tab = Tab}) ->
    case riarc_replay_stream:next_event(S) of
        {?EV_FROM, D} ->
            keyed_take(D bsr 32, D band 16#ffffffff, F, riarc_replay_stream:skip(S));
        {?EV_RECV, D} when Strategy =:= sender ->
            take_wrapped(D, F, riarc_replay_stream:skip(S));
        _ ->
            put(?WAIT, receive_unwrapped_message),
            R = unkeyed_take(F, Tab),
            erase(?WAIT),
            R
    end.

unkeyed_take(F, Tab) ->
    {K, ext, V} = F(ext, none, infinity),
    case plain_source(V, Tab) of
        none ->
            {K, V};
        _ ->
            put(?HELD, dict_get(?HELD, []) ++ [V]),
            unkeyed_take(F, Tab)
    end.

keyed_take(Kind, Idx, F, S) ->
    Pid = keyed_pid(Idx, S),
    Want = {from, Kind, sender_lid(Idx, S)},
    V = case take_held({Kind, Pid}, dict_get(?HELD, []), []) of
            {ok, M} ->
                M;
            none ->
                put(?WAIT, Want),
                M = case Kind of
                        1 -> receive {'EXIT', Pid, _} = M1 -> M1 end;
                        _ -> receive {'DOWN', _, process, Pid, _} = M2 -> M2 end
                    end,
                erase(?WAIT),
                M
        end,
    case F(match, V, 0) of
        0 -> riarc_replay_stream:diverge(S, Want, {no_clause_matches, V});
        K -> {K, V}
    end.

take_held(_From, [], _Before) ->
    none;
take_held(From, [M | Ms], Before) ->
    case plain_from(M) of
        From -> put(?HELD, lists:reverse(Before, Ms)), {ok, M};
        _ -> take_held(From, Ms, [M | Before])
    end.

%% The replay's pid of the process with index Idx. A message from it can only be here
%% once it has started, and it registers itself as it starts (riarc_replay_rt:child/2); until then the
%% receive waits for it to start, bounded by the watchdog.
keyed_pid(Idx, S = #replay_run{tab = Tab}) ->
    case ets:lookup(Tab, {pid, Idx}) of
        [{_, Pid}] ->
            Pid;
        [] ->
            put(?WAIT, {process_started, sender_lid(Idx, S)}),
            riarc_replay_wait:nap(),
            keyed_pid(Idx, S)
    end.

sender_lid(Idx, #replay_run{tab = Tab}) ->
    index_lid(Idx, Tab).

index_lid(Idx, Tab) ->
    case ets:lookup(Tab, {lid, Idx}) of
        [{_, Lid}] -> Lid;
        [] -> Idx
    end.

%% @doc What a process of a replay waits for (its '$riarc_rr_wait'), for the watchdog's
%% report: a wrapped message's sender named by its logical id, as wait_wrapped/2 leaves
%% it to the watchdog (the run's table Tab), since it sets the wait for every message.
-spec wait_named(term(), ets:tid()) -> term().
wait_named({receive_message, D}, Tab) ->
    {receive_message, index_lid(D bsr ?SEQ_BITS, Tab), D band (1 bsl ?SEQ_BITS - 1)};
wait_named(W, _Tab) ->
    W.
