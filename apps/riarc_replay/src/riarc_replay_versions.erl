%% @doc The sender side's versioned receive (003, sender side), in a recording and in a
%% replay. A message to a process of the run carries a version taken from the receiver's
%% counter (the sender records it); the receiver takes versioned messages in version
%% order, buffering those that arrive before a lower one, and records only what breaks
%% that order: a plain message taken instead (RECV_EXT, with the count of versioned
%% receives before it) or a timeout. {@link riarc_replay_rt:recv/2} calls it for a
%% process of the sender side, and a woven receive inline (mode rv) calls took_ver/2
%% and took_timer/2; the messages both strategies share are {@link riarc_replay_take}'s.
%%
%% A process keeps {Vnext, Count} under '$riarc_rr_ver': the lowest version not arrived
%% yet, and the versioned receives since the last plain or timed-out one.
%% ```
%% 1> put('$riarc_rr_ver', {1, 0}).
%% undefined
%% 2> riarc_replay_versions:took_ver(1, hello).
%% true
%% 3> get('$riarc_rr_ver').
%% {2,1}
%% 4> riarc_replay_versions:reset_count().
%% 1
%% 5> get('$riarc_rr_ver').
%% {2,0}
%% '''
-module(riarc_replay_versions).

%% What a woven receive calls inline (riarc_replay_transform).
-export([took_ver/2, took_timer/2]).
%% Used by riarc_replay_rt.
-export([recv/3, reset_count/0]).
%% The replay's watchdog.
-export([wait_named/1]).

-include("riarc_replay_rt.hrl").

%%% Inline -------------------------------------------------------------------------------

%% @doc Recording, sender side, nothing buffered (mode rv): a woven receive took, inline,
%% the message V of version N. True when N is the lowest version not received yet, the
%% first candidate (take_in_order/4); otherwise V is buffered and the receive starts
%% again through riarc_replay_rt:recv/2, which sees the buffer.
-spec took_ver(pos_integer(), term()) -> boolean().
took_ver(N, V) ->
    case get(?VER) of
        {N, C} ->
            put(?VER, {N + 1, C + 1}),
            %% No event is written here: every 256 versions it looks at the mailbox's
            %% length (see riarc_replay_stream:record_run/2).
            _ = N band 255 =/= 0 orelse riarc_replay_stream:queue_off_heap(),
            true;
        _ ->
            _ = add_versioned(N, V, get(?KEY)),
            false
    end.

%% @doc Recording, sender side: a woven receive took, inline, a timer's wrapped message
%% V (D as for riarc_replay_rt:took/2); gives V.
-spec took_timer(non_neg_integer(), term()) -> term().
took_timer(D, V) ->
    S = get(?KEY),
    S1 = riarc_replay_stream:record_event(?EV_RECV_EXT, reset_count(), S),
    _ = riarc_replay_stream:record_event(?EV_RECV, D, S1),
    riarc_replay_take:fired(V, S1),
    V.

%%% The receive --------------------------------------------------------------------------

%% @doc Sender side (both modes): versioned messages are received in version order. A
%% message of version v is a candidate only once every version below v has arrived; the
%% receive takes the first candidate its clauses match. What this process records itself
%% is whether the receive took a plain message instead, or timed out. F and the result
%% are as for riarc_replay_rt:recv/2.
-spec recv(riarc_replay_take:clauses(), timeout(), #replay_run{}) ->
    {pos_integer(), term()} | '$riarc_rr_timeout'.
recv(F, Timeout, S = #replay_run{mode = replay}) ->
    %% A versioned receive writes no event, so a plain or timed-out receive's event says
    %% how many versioned receives came before it (since the last such event): it is
    %% this receive's only if the count is the one we are at.
    {_, N} = get(?VER),
    case riarc_replay_stream:next_event(S) of
        {?EV_RECV_EXT, N} ->
            _ = reset_count(),
            riarc_replay_take:replay_plain(F, riarc_replay_stream:skip(S));
        {?EV_TIMEOUT, N} when Timeout =/= infinity ->
            _ = reset_count(),
            _ = riarc_replay_stream:skip(S),
            '$riarc_rr_timeout';
        _ ->
            case gb_trees:is_empty(S#replay_run.vbuf) of
                true -> versioned_first(F, S);
                false -> versioned_wait(F, drain(S))
            end
    end;
recv(F, Timeout, S = #replay_run{mode = record}) ->
    Deadline = case Timeout of
                   infinity -> infinity;
                   _ -> erlang:monotonic_time(millisecond) + Timeout
               end,
    versioned_record(F, Deadline, S).

%% Replay, nothing buffered: the first versioned message to come is the first candidate
%% when it is the lowest version not received (every lower one has been) and the clauses
%% take it, as in the recording (versioned_record/3); then nothing need be buffered, and a
%% receiver whose versions arrive in order (a counter's 500 000 increments) never fills
%% the buffer. Otherwise it is buffered with everything else there is.
versioned_first(F, S) ->
    {V, M} = next_versioned(),
    case take_in_order(V, M, F, S) of
        no -> versioned_wait(F, drain(add_versioned(V, M, S)));
        Taken -> Taken
    end.

%% Step (003, sender side): the version that arrives when nothing is buffered and every
%% lower version has been received is the first candidate in version order; taken at
%% once when the receive's clauses take it, in the recording and in the replay alike.
take_in_order(V, M, F, #replay_run{vbuf = Buf}) ->
    case gb_trees:is_empty(Buf) andalso get(?VER) of
        {V, N} ->
            case F(match, M, 0) of
                0 -> no;
                K -> put(?VER, {V + 1, N + 1}), {K, M}
            end;
        _ ->
            no
    end.

%% @doc The count of versioned receives since the last plain or timed-out one, which
%% this receive's event holds; the count starts again.
-spec reset_count() -> non_neg_integer().
reset_count() ->
    {Next, N} = get(?VER),
    put(?VER, {Next, 0}),
    N.

%% Replay: the next versioned message from the mailbox. The watchdog's reason is set
%% for every wait, blocking or not (a look that does not block would be `after 0', a
%% timeout the monitors would be shown: riarc_replay_wait), so it is an atom the
%% watchdog reads with the process's state (wait_named/1).
next_versioned() ->
    put(?WAIT, receive_versioned),
    receive {'$riarc_rv', V, M} -> erase(?WAIT), {V, M} end.

%% @doc What a process of a replay waiting in next_versioned/0 waits for, from its
%% process dictionary Dict (the watchdog's report): the lowest version not arrived, or,
%% at the end of its recording, nothing more (where the recorded process was when the
%% run ended).
-spec wait_named([{term(), term()}]) -> term().
wait_named(Dict) ->
    S = proplists:get_value(?KEY, Dict),
    case riarc_replay_stream:next_event(S) of
        eos -> {end_of_recording, {'receive', versioned}};
        _ -> {receive_versioned_message, element(1, proplists:get_value(?VER, Dict))}
    end.

%% Replay: moves every versioned message in the mailbox to the version buffer.
drain(S = #replay_run{vbuf = Buf}) ->
    case drain_buf(Buf) of
        Buf ->
            S;
        Buf1 ->
            S1 = S#replay_run{vbuf = Buf1},
            put(?KEY, S1),
            S1
    end.

%% Those before a probe of the mailbox (riarc_replay_wait:probe/0): what `after 0'
%% would see, without a timeout.
drain_buf(Buf) ->
    drain_buf(Buf, riarc_replay_wait:probe()).

drain_buf(Buf, Probe) ->
    receive
        {'$riarc_rv', V, M} -> drain_buf(insert_versioned(V, M, Buf), Probe);
        {?PROBE, Probe} -> Buf
    end.

%% Buffers version V; when it is the lowest that had not arrived, the lowest is now the
%% first version after V not buffered.
insert_versioned(V, M, Buf) ->
    Buf1 = gb_trees:insert(V, M, Buf),
    _ = case get(?VER) of
            {V, N} -> put(?VER, {advance_from(V + 1, Buf1), N});
            _ -> ok
        end,
    Buf1.

advance_from(N, Buf) ->
    case gb_trees:is_defined(N, Buf) of
        true -> advance_from(N + 1, Buf);
        false -> N
    end.

add_versioned(V, M, S = #replay_run{vbuf = Buf, mode = Mode}) ->
    S1 = S#replay_run{vbuf = insert_versioned(V, M, Buf)},
    put(?KEY, S1),
    _ = Mode =:= record andalso put(?MODE, rv_buffered),
    S1.

%% The first candidate (version below Vnext) the clauses take, if any.
candidate(F, #replay_run{vbuf = Buf}) ->
    case gb_trees:is_empty(Buf) of
        true -> none;
        false -> candidate(F, gb_trees:next(gb_trees:iterator(Buf)), element(1, get(?VER)))
    end.

candidate(_F, none, _Next) -> none;
candidate(_F, {V, _M, _It}, Next) when V >= Next -> none;
candidate(F, {V, M, It}, Next) ->
    case F(match, M, 0) of
        0 -> candidate(F, gb_trees:next(It), Next);
        K -> {K, V, M}
    end.

take_candidate(V, S = #replay_run{vbuf = Buf, mode = Mode}) ->
    {Next, N} = get(?VER),
    put(?VER, {Next, N + 1}),
    Buf1 = gb_trees:delete(V, Buf),
    _ = Mode =:= record andalso gb_trees:is_empty(Buf1) andalso put(?MODE, rv),
    put(?KEY, S#replay_run{vbuf = Buf1}).

versioned_wait(F, S) ->
    case candidate(F, S) of
        {K, V, M} ->
            take_candidate(V, S),
            {K, M};
        none ->
            {V, M} = next_versioned(),
            versioned_wait(F, add_versioned(V, M, S))
    end.

%% Recording: the receive looks at the mailbox in its own order (the versioned messages
%% and the plain ones its clauses take) and buffers versioned messages only while one
%% is not a candidate yet, or not one the clauses take (take_in_order/4).
versioned_record(F, Deadline, S) ->
    case candidate(F, S) of
        {K, V, M} ->
            take_candidate(V, S),
            {K, M};
        none ->
            Left = case Deadline of
                       infinity -> infinity;
                       _ -> max(0, Deadline - erlang:monotonic_time(millisecond))
                   end,
            case F(ver, none, Left) of
                {ver, V, M} ->
                    case take_in_order(V, M, F, S) of
                        no -> versioned_record(F, Deadline, add_versioned(V, M, S));
                        Taken -> Taken
                    end;
                {K, ext, M} ->
                    _ = riarc_replay_take:record_plain(M, reset_count(), S),
                    {K, M};
                {K, D, M} ->
                    %% A timer's message, wrapped as on the receiver side (see riarc_replay_timers).
                    {K, took_timer(D, M)};
                '$riarc_rr_timeout' ->
                    _ = riarc_replay_stream:record_event(?EV_TIMEOUT, reset_count(), S),
                    '$riarc_rr_timeout'
            end
    end.
