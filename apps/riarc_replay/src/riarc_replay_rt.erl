%% @doc The per-process runtime of record &amp; replay: woven code (see
%% {@link riarc_replay_transform}) calls it at every nondeterministic operation. A process
%% takes part in a run when it was spawned by woven code of a run (or is a run's root);
%% its state is in its process dictionary under the key `$riarc_rr'. Outside a run every
%% function does what the plain operation does (a wrapped message that reaches such a
%% process is unwrapped).
%%
%% Each process appends fixed 9-byte records (1-byte type, 8-byte data) to its own
%% stream; values that do not fit in 8 bytes go to the process's side table and the data
%% is their index there; a run of RECV (or SEND) events whose data go up by one step is
%% written as its first event and REPEAT. Streams are written to the run's ETS table in chunks: every 256
%% events and when the process ends; a process that waits when it is ended by another
%% (the controller at the end of the run, a woven exit/2, the exit of a linked process)
%% has its pending events written by that one first (salvage/1). The event types are listed
%% in docs/replay.md.
%% ```
%% 1> riarc_replay_rt:active().
%% false
%% 2> riarc_replay_rt:send(self(), hello), riarc_replay_rt:recv(fun(rec, _, T) -> receive M -> {1, ext, M} after T -> '$riarc_rr_timeout' end end, 0).
%% {1,hello}
%% '''
-module(riarc_replay_rt).
%% now/0 is woven because programs still call it; the runtime calls it for them.
-compile({nowarn_deprecated_function, [{erlang, now, 0}]}).
%% spawn/3 here is the woven spawn (a ticker spawns as woven code does).
-compile({no_auto_import, [spawn/3]}).

-export([active/0, send/2, send/3, recv/2, spawn/3, ets/2,
         took/4, took_plain/2, took_ver/3, took_timer/4, took_timeout/0,
         monotonic_time/0, monotonic_time/1, system_time/0, system_time/1,
         timestamp/0, now/0, uniform/0, uniform/1, unique_integer/0, unique_integer/1,
         make_ref/0, send_after/3, send_after/4, start_timer/3, start_timer/4,
         cancel_timer/1, cancel_timer/2, read_timer/1, read_timer/2,
         timer_send_after/2, timer_send_after/3, timer_cancel/1, timer_send_interval/2,
         timer_send_interval/3, timer_apply_after/4, timer_apply_interval/4,
         exit_signal/2, mnesia/2]).
%% Used by the run controller (riarc_replay) and as spawn entry points.
-export([start_root/2, child/2, event_name/1, format_error/1, salvage/1]).
-export_type([run/0, error_reason/0, event/0]).

-define(KEY, '$riarc_rr').
-define(WAIT, '$riarc_rr_wait').
%% What a sender knows of the processes it sends to: #{Pid => false | 0 | Version
%% counter}, filled on first contact, so a send to a known peer reads it and changes
%% nothing.
-define(PEERS, '$riarc_rr_peers').
%% Inside a mnesia transaction, activity or dirty operation (which holds the run's
%% mnesia turn).
-define(TXN, '$riarc_rr_txn').
%% Recording: the events not written yet, as the chunk's binary (9-byte records, oldest
%% first) that each event appends to. Kept out of the #rr record, so that recording an
%% event updates one small process-dictionary entry, not the 18-field record; appending
%% to the binary reuses its buffer, and the chunk needs no conversion when it is written.
-define(BUF, '$riarc_rr_buf').
-define(CHUNK, 256).
%% Recording: the pending run, not in ?BUF yet: consecutive events of the process's
%% mergeable type (RECV on the receiver side, SEND on the sender side) whose data goes
%% up by the same step each time (a sender's messages taken one after the other, or
%% every P-th of them when it sends to P processes in turn; versions taken one after
%% the other, or the same version of P receivers in turn) are written as the first
%% event and REPEAT(N, Step). The first event is written as any; ?RUN is then -1 - D
%% (the event written last was of this kind, with data D), or, once a run is open, the
%% data that extends it (an integer from 0), else none. An open run's first data is
%% ?RUN0, its step ?STEP and, for a step of 0 only, its N ?RUNN; N is derived from the
%% others for a step above 0. Extending a run is two gets and one put of small
%% integers; an event that does not costs one get and one put more than appending.
-define(RUN, '$riarc_rr_run').
-define(RUN0, '$riarc_rr_run0').
-define(STEP, '$riarc_rr_step').
-define(RUNN, '$riarc_rr_runn').
-define(STEP_BITS, 24).
%% What a woven receive does inline (riarc_replay_transform): rr (recording, receiver
%% side), rv (recording, sender side, nothing in the version buffer); anything else
%% calls recv/2.
-define(MODE, '$riarc_rr_mode').
%% Sender side: {Vnext, Vcount}: the lowest version that has not arrived yet, and the
%% versioned receives since the last plain or timed-out one (the version buffer itself,
%% which changes only when messages arrive out of order, is #replay_run.vbuf).
-define(VER, '$riarc_rr_ver').
%% Replay: plain messages an unkeyed receive took out of the mailbox that a keyed one
%% (RECV_EXT + FROM) is to take, oldest first (see replay_plain/2).
-define(HELD, '$riarc_rr_held').
%% Replay: wrapped messages taken out of the mailbox before the one a RECV named, by
%% their RECV data (sender:24, seq:40), until a RECV names them (see wait_wrapped/2).
-define(RBUF, '$riarc_rr_rbuf').
%% Receiver side: this process's wrapped sends so far (the next message's seq), slot 1 of
%% #replay_run.seq, an atomics array of the process: one call, and nothing allocated, per send.
-define(SEQ_BITS, 40).
-define(MAX_IDX, (1 bsl 24 - 1)).

%% Event types (the 1-byte header). A value type with bit 7 set means: the data is an
%% index into the process's side table, which holds the value.
-define(EV_RECV, 1).        % receiver side: took the message (sender index:24, seq:40)
-define(EV_RECV_EXT, 2).    % took a message no woven sender wrapped
%% What a woven process receives from itself when its receive times out (timed_out/1).
-define(TIMEOUT_MARK, '$riarc_rr_timed_out').
-define(EV_TIMEOUT, 3).     % the receive's `after' fired
-define(EV_SEND, 4).        % sender side: the receiver's version this message got
-define(EV_ETS, 5).         % the table's turn (version) of this ETS operation
-define(EV_FROM, 6).        % the plain message the RECV_EXT before took: kind:32, index:32
-define(EV_REPEAT, 7).      % the event before it (RECV or SEND) N:40 more times, data + Step:24 each
-define(EV_MONO, 16).
-define(EV_SYSTIME, 17).
-define(EV_TIMESTAMP, 18).  % {Mega, Sec, Micro} packed as 20+20+24 bits
-define(EV_NOW, 19).        % same packing
-define(EV_RAND_FLOAT, 20). % the IEEE 754 double's bits
-define(EV_RAND_INT, 21).
-define(EV_UNIQUE, 22).
-define(EV_REF, 23).        % data: the ordinal of this ref among the process's refs
-define(EV_TIMER, 24).      % cancel_timer/read_timer: ms left, -1 for false
-define(EV_DELAY, 25).      % an absolute timer's delay in ms, from its start
-define(SIDE, 16#80).

-type event() :: {0..255, integer()}.
-type mode() :: record | replay.
-type strategy() :: receiver | sender.
%% What every process of a run shares: mode, strategy, the run's ETS table, the
%% controller, the progress counter the replay watchdog reads.
-type run() :: {mode(), strategy(), ets:tid(), pid(), counters:counters_ref()}.
-type error_reason() :: {diverged, [pos_integer()], term(), term()}.

-record(replay_run, {run :: run(),
             mode :: mode(),
             strategy :: strategy(),
             tab :: ets:tid(),
             idx :: non_neg_integer(),
             lid :: [pos_integer()],
             kids = 0 :: non_neg_integer(),
             refs = 0 :: non_neg_integer(),
             %% Recording: the next chunk's number, and side values (the events are
             %% under ?BUF).
             chunk = 0 :: non_neg_integer(),
             side = [] :: [term()],
             nside = 0 :: non_neg_integer(),
             %% Replay: the process's stream and side table, and where it is.
             stream = <<>> :: binary(),
             pos = 0 :: non_neg_integer(),
             sides = {} :: tuple(),
             progress :: counters:counters_ref(),
             %% Replay: a REPEAT being replayed: events of type rtype left, and the
             %% next one's data.
             rep = 0 :: non_neg_integer(),
             rtype = 0 :: 0..255,
             rdata = 0 :: integer(),
             rstep = 0 :: non_neg_integer(),
             seq :: atomics:atomics_ref(),
             %% Sender side: versioned messages taken out of the mailbox, not yet
             %% received (the lowest version not arrived yet is under ?VER).
             vbuf = gb_trees:empty() :: gb_trees:tree(),
             tabs = #{} :: #{term() => atomics:atomics_ref() | private}}).

%% @doc Whether the calling process takes part in a run.
-spec active() -> boolean().
active() ->
    get(?KEY) =/= undefined.

%% @doc A sentence for each error_reason().
-spec format_error(error_reason()) -> string().
format_error({diverged, Lid, Expected, Got}) ->
    lists:flatten(io_lib:format("process ~w diverged from the recording: the recording has ~0tp "
                                "where the program did ~0tp", [Lid, Expected, Got])).

%%% Processes ----------------------------------------------------------------------------

%% @doc Starts a run's root (logical id [], index 0) for the controller of Run.
-spec start_root(run(), {module(), atom(), list()}) -> pid().
start_root(Run = {_, Strategy, Tab, _Ctl, _}, MFA) ->
    Ver = version_ref(Strategy),
    Pid = erlang:spawn(?MODULE, child, [{Run, 0, [], Ver}, {root, MFA}]),
    true = ets:insert(Tab, {Pid, 0, Ver}),
    Pid.

version_ref(sender) -> atomics:new(1, []);
version_ref(receiver) -> undefined.

%% @doc Woven spawn: `Kind' is the spawn BIF, `What' a fun or {M, F, A}, `Opts' the
%% spawn_opt options. The k-th child of the process with logical id L has id L ++ [k].
-spec spawn(spawn | spawn_link | spawn_monitor | spawn_opt, function() | {module(), atom(), list()},
            list()) -> pid() | {pid(), reference()}.
spawn(Kind, What, Opts) ->
    case get(?KEY) of
        undefined ->
            plain_spawn(Kind, What, Opts);
        S = #replay_run{run = Run, tab = Tab, lid = Lid, kids = K0} ->
            K = K0 + 1,
            ChildLid = Lid ++ [K],
            Idx = child_index(S, ChildLid),
            Ver = version_ref(S#replay_run.strategy),
            put(?KEY, S#replay_run{kids = K}),
            Res = plain_spawn(Kind, ?MODULE, child, [{Run, Idx, ChildLid, Ver}, What], Opts),
            Pid = case Res of
                      {P, _} -> P;
                      P -> P
                  end,
            %% Registered before the program sees the pid, so that every message to it
            %% from woven code is wrapped.
            true = ets:insert(Tab, {Pid, Idx, Ver}),
            element(4, Run) ! {riarc_rr_spawned, Idx, Pid},
            Res
    end.

child_index(S = #replay_run{mode = record, tab = Tab}, Lid) ->
    case ets:update_counter(Tab, '$next_idx', 1) of
        Idx when Idx =< ?MAX_IDX ->
            true = ets:insert(Tab, {{lid, Idx}, Lid}),
            Idx;
        _ ->
            diverge(S, {at_most, ?MAX_IDX, processes}, {spawn, Lid})
    end;
child_index(S = #replay_run{mode = replay, tab = Tab}, Lid) ->
    case ets:lookup(Tab, {idx, Lid}) of
        [{_, Idx}] -> Idx;
        [] -> diverge(S, no_such_process, {spawn, Lid})
    end.

plain_spawn(Kind, What, Opts) when is_function(What) ->
    case Kind of
        spawn_opt -> erlang:spawn_opt(What, Opts);
        _ -> erlang:Kind(What)
    end;
plain_spawn(Kind, {M, F, A}, Opts) ->
    plain_spawn(Kind, M, F, A, Opts).

plain_spawn(spawn_opt, M, F, A, Opts) -> erlang:spawn_opt(M, F, A, Opts);
plain_spawn(Kind, M, F, A, _Opts) -> erlang:Kind(M, F, A).

%% @doc The entry point of every process of a run.
-spec child({run(), non_neg_integer(), [pos_integer()], atomics:atomics_ref() | undefined},
            function() | {module(), atom(), list()} | {root, {module(), atom(), list()}}) -> term().
child({Run = {Mode, Strategy, Tab, Ctl, Progress}, Idx, Lid, Ver}, What) ->
    S0 = #replay_run{run = Run, mode = Mode, strategy = Strategy, tab = Tab, idx = Idx, lid = Lid,
             progress = Progress, seq = atomics:new(1, [])},
    %% Race: the parent registers this process once spawn has returned, and this process
    %% may have linked, exited or been monitored by then; registered here first, every
    %% 'EXIT' or 'DOWN' it causes names a process of the run (plain_source/2), in the
    %% recording and in the replay, which also finds its pid by index (keyed_pid/2).
    true = ets:insert(Tab, {self(), Idx, Ver}),
    S = case Mode of
            record -> S0;
            replay ->
                true = ets:insert(Tab, {{pid, Idx}, self()}),
                _ = process_flag(message_queue_data, off_heap),
                case ets:lookup(Tab, {stream, Idx}) of
                    [{_, Stream, Sides}] -> S0#replay_run{stream = Stream, sides = Sides};
                    [] -> S0
                end
        end,
    put(?KEY, S),
    put(?PEERS, #{}),
    put(?BUF, <<>>),
    put(?RUN, none),
    _ = case {Mode, Strategy} of
            {record, receiver} -> put(?MODE, rr);
            {record, sender} -> put(?MODE, rv);
            _ -> ok
        end,
    put(?VER, {1, 0}),
    case What of
        {root, {M, F, A}} ->
            Result = try {ok, apply(M, F, A)}
                     catch Class:Reason:St -> {Class, Reason, St}
                     end,
            finish(),
            Ctl ! {riarc_rr_root, Result},
            %% The root ends as the plain one would: a crash is its exit reason, which
            %% the run's monitors see (the controller has the result already).
            case Result of
                {ok, _} -> Result;
                {C, R, Stack} -> erlang:raise(C, R, Stack)
            end;
        _ ->
            try
                case What of
                    {M, F, A} -> apply(M, F, A);
                    Fun -> Fun()
                end
            of
                Value -> finish(), Value
            catch
                exit:normal:St ->
                    finish(),
                    erlang:raise(exit, normal, St);
                Class:Reason:St ->
                    %% This exit kills the linked processes that do not trap exits.
                    finish(),
                    ok = salvage_links(),
                    erlang:raise(Class, Reason, St)
            end
    end.

salvage_links() ->
    case get(?KEY) of
        #replay_run{mode = record, tab = Tab} ->
            {links, Ls} = erlang:process_info(self(), links),
            _ = [salvage_tree(L, Tab) || L <- Ls, is_pid(L), ets:member(Tab, L),
                                         erlang:process_info(L, trap_exit) =:= {trap_exit, false}],
            ok;
        _ ->
            ok
    end.

%% Recording: the last chunk. Replay: a process that ends with events left did less than
%% the recorded one.
finish() ->
    case get(?KEY) of
        S = #replay_run{mode = record} ->
            _ = flush(S, true),
            ok;
        S = #replay_run{mode = replay} ->
            case next_event(S) of
                eos -> ok;
                Ev -> diverge(S, event_name(Ev), process_ended)
            end;
        _ ->
            ok
    end.

%%% Events -------------------------------------------------------------------------------

%% Returns the state, which is S unless a chunk was written (then the new state is also
%% stored: a caller that keeps S as it was need not store it). The pending run goes
%% first.
record_event(T, D, S) ->
    case get(?RUN) of
        none ->
            append(<<T:8, D:64>>, S);
        Next when is_integer(Next), Next >= 0 ->
            put(?RUN, none),
            append(<<(repeat_bin(Next))/binary, T:8, D:64>>, S);
        _ ->
            put(?RUN, none),
            append(<<T:8, D:64>>, S)
    end.

%% An event of type T, the process's mergeable type (RECV on the receiver side, SEND on
%% the sender side): extends the open run when D is its next data, opens one when the
%% event written last was of this type and D can follow it, else is written as it is
%% (after the open run's REPEAT). A process whose messages keep coming in one run writes
%% no chunk, which is where it would move a long mailbox off the heap
%% (queue_off_heap/0): it looks about every 256 / Step events of a run (every 256
%% messages of one sender, as a chunk of 256 events did; a look costs about 20 ns).
record_run(T, D) ->
    case get(?RUN) of
        D ->
            case get(?STEP) of
                0 ->
                    _ = put(?RUNN, get(?RUNN) + 1);
                Step ->
                    _ = put(?RUN, D + Step),
                    _ = D band 255 >= Step orelse queue_off_heap()
            end,
            ok;
        Last when is_integer(Last), Last < 0, D >= -1 - Last, D + 1 + Last < 1 bsl ?STEP_BITS,
                  D bsr ?SEQ_BITS =:= (-1 - Last) bsr ?SEQ_BITS ->
            %% D is the run's first repeat: not written.
            D0 = -1 - Last,
            Step = D - D0,
            put(?RUN0, D0),
            put(?STEP, Step),
            put(?RUNN, 1),
            _ = put(?RUN, D + Step),
            ok;
        Next when is_integer(Next), Next >= 0 ->
            ok = append(<<(repeat_bin(Next))/binary, T:8, D:64>>),
            _ = put(?RUN, -1 - D),
            ok;
        _ ->
            ok = append(<<T:8, D:64>>),
            _ = put(?RUN, -1 - D),
            ok
    end.

%% The open run's REPEAT, if a run is open.
close_run(S) ->
    case put(?RUN, none) of
        Next when is_integer(Next), Next >= 0 -> append(repeat_bin(Next), S);
        _ -> S
    end.

repeat_bin(Next) ->
    repeat_bin(get(?RUN0), Next, get(?STEP), get(?RUNN)).

%% REPEAT of a run from D0 whose next data would be Next (its N derived; counted for a
%% step of 0).
repeat_bin(D0, Next, Step, N0) ->
    N = case Step of
            0 -> N0;
            _ -> (Next - D0) div Step - 1
        end,
    <<?EV_REPEAT:8, N:(64 - ?STEP_BITS), Step:?STEP_BITS>>.

%% Appends to the pending events; returns ok (the state is read only when a chunk is
%% written).
append(Bin) ->
    case get(?BUF) of
        Buf when byte_size(Buf) < 9 * (?CHUNK - 2) ->
            _ = put(?BUF, <<Buf/binary, Bin/binary>>),
            ok;
        Buf ->
            put(?BUF, <<Buf/binary, Bin/binary>>),
            _ = flush(get(?KEY), false),
            ok
    end.

append(Bin, S) ->
    case get(?BUF) of
        Buf when byte_size(Buf) < 9 * (?CHUNK - 2) ->
            put(?BUF, <<Buf/binary, Bin/binary>>),
            S;
        Buf ->
            put(?BUF, <<Buf/binary, Bin/binary>>),
            flush(S, false)
    end.

record_side(T, Value, S = #replay_run{side = Side, nside = NS}) ->
    record_event(T bor ?SIDE, NS, S#replay_run{side = [Value | Side], nside = NS + 1}).

%% Writes the pending events as the next chunk of the process's stream (the last one:
%% with the pending run).
flush(S0, Last) ->
    S = case Last of
            true -> close_run(S0);
            false -> S0
        end,
    case get(?BUF) of
        <<>> when not Last ->
            S;
        Buf ->
            S1 = write_chunk(S, Buf),
            put(?BUF, <<>>),
            put(?KEY, S1),
            _ = Last orelse queue_off_heap(),
            S1
    end.

%% A woven receive allocates (the recorded event, the receive's fun) where the plain one
%% may allocate nothing, so a recorded process collects garbage more often, and each
%% collection of a process whose mailbox is on its heap copies the whole mailbox: a
%% counter with 10^5 messages queued spends most of its time there (riarc_replay_savina's
%% counting: 4x its plain run time). So a recorded process whose mailbox is long when it
%% writes a chunk keeps its mailbox off the heap from then on (message_queue_data: the
%% same messages in the same order, only where they are stored).
-define(LONG_QUEUE, 1000).

queue_off_heap() ->
    case erlang:process_info(self(), message_queue_len) of
        {message_queue_len, L} when L > ?LONG_QUEUE -> process_flag(message_queue_data, off_heap);
        _ -> on_heap
    end.

%% The copy drops the spare room the appends left in the binary's buffer.
write_chunk(S = #replay_run{tab = Tab, idx = Idx, chunk = C, side = Side}, Buf) ->
    true = ets:insert(Tab, {{chunk, Idx, C}, binary:copy(Buf), lists:reverse(Side)}),
    S#replay_run{chunk = C + 1, side = []}.

%% @doc Writes the pending events of Pid, a process of a recording run, as its next
%% chunk, from a copy of its state: a process does not write when it blocks (that would
%% cost a table write per receive), so whatever ends a waiting process writes for it
%% first: the controller at the end of the run, a woven `exit/2' (exit_signal/2), a
%% process of the run that ends abnormally for the processes its exit kills. If Pid runs
%% on and writes that chunk itself, its write holds the same events and more and
%% replaces this one. Race: a process killed while running loses the events since it was
%% copied (see docs/replay.md).
-spec salvage(pid()) -> ok.
salvage(Pid) ->
    case erlang:process_info(Pid, dictionary) of
        {dictionary, D} ->
            case {lists:keyfind(?KEY, 1, D), lists:keyfind(?BUF, 1, D)} of
                {{_, S = #replay_run{mode = record}}, {_, Buf0}} ->
                    Get = fun(K) -> case lists:keyfind(K, 1, D) of {_, Value} -> Value; false -> none end end,
                    Buf = case Get(?RUN) of
                              Next when is_integer(Next), Next >= 0 ->
                                  <<Buf0/binary, (repeat_bin(Get(?RUN0), Next, Get(?STEP), Get(?RUNN)))/binary>>;
                              _ ->
                                  Buf0
                          end,
                    _ = byte_size(Buf) > 0 andalso write_chunk(S, Buf),
                    ok;
                _ ->
                    ok
            end;
        undefined ->
            ok
    end.

%% Salvages Pid and, since an exit signal that kills Pid kills its links in turn, every
%% process of the run linked to it (transitively) that does not trap exits.
salvage_tree(Pid, Tab) ->
    salvage_tree([Pid], Tab, #{}).

salvage_tree([], _Tab, _Seen) ->
    ok;
salvage_tree([P | Ps], Tab, Seen) when is_map_key(P, Seen) ->
    salvage_tree(Ps, Tab, Seen);
salvage_tree([P | Ps], Tab, Seen) ->
    ok = salvage(P),
    Next = case erlang:process_info(P, links) of
               {links, Ls} -> [L || L <- Ls, is_pid(L), not is_map_key(L, Seen), ets:member(Tab, L),
                                    erlang:process_info(L, trap_exit) =:= {trap_exit, false}];
               undefined -> []
           end,
    salvage_tree(Next ++ Ps, Tab, Seen#{P => true}).

%% @doc Woven `exit(Pid, Reason)' (erlang:exit/2): in a recording, the target's pending
%% events (and those of the links its exit takes along) are written before the signal.
-spec exit_signal(pid() | port(), term()) -> true.
exit_signal(To, Reason) ->
    _ = case get(?KEY) of
            #replay_run{mode = record, tab = Tab} when is_pid(To), Reason =/= normal ->
                ets:member(Tab, To) andalso salvage_tree(To, Tab);
            _ ->
                ok
        end,
    erlang:exit(To, Reason).

%% The next event of a replaying process, or eos at the end of its stream; within a
%% REPEAT, the next of its events.
next_event(#replay_run{rep = 0, stream = Stream, pos = Pos}) when Pos + 9 =< byte_size(Stream) ->
    <<_:Pos/binary, T:8, D:64/signed, _/binary>> = Stream,
    {T, D};
next_event(#replay_run{rep = 0}) ->
    eos;
next_event(#replay_run{rtype = T, rdata = D}) ->
    {T, D}.

%% Past the next event: an event followed by REPEAT(N) starts N more of its kind.
advance(S = #replay_run{rep = 0, stream = Stream, pos = Pos}) ->
    case Stream of
        <<_:Pos/binary, T:8, D:64/signed, ?EV_REPEAT:8, N:(64 - ?STEP_BITS), Step:?STEP_BITS, _/binary>> ->
            S#replay_run{pos = Pos + 18, rep = N, rtype = T, rdata = D + Step, rstep = Step};
        _ ->
            S#replay_run{pos = Pos + 9}
    end;
advance(S = #replay_run{rep = R, rdata = D, rstep = Step}) ->
    S#replay_run{rep = R - 1, rdata = D + Step}.

%% Consumes the next event, which must be of type T; returns its data (or its side
%% value). Anything else is a divergence.
take(T, Got, S = #replay_run{progress = Progress, sides = Sides}) ->
    case next_event(S) of
        {T, D} ->
            counters:add(Progress, 1, 1),
            put(?KEY, advance(S)),
            D;
        {TS, D} when TS =:= T bor ?SIDE, D >= 0, D < tuple_size(Sides) ->
            counters:add(Progress, 1, 1),
            put(?KEY, advance(S)),
            {side, element(D + 1, Sides)};
        Other ->
            diverge(S, event_name(Other), Got)
    end.

skip(S = #replay_run{progress = Progress}) ->
    counters:add(Progress, 1, 1),
    S1 = advance(S),
    put(?KEY, S1),
    S1.

%% Tells the controller, which ends the run (and this process) at once.
-spec diverge(#replay_run{}, term(), term()) -> no_return().
diverge(#replay_run{lid = Lid, run = Run}, Expected, Got) ->
    element(4, Run) ! {riarc_rr_diverged, self(), Lid, Expected, Got},
    receive after infinity -> exit(diverged) end.

%% @doc What an event is, in words, for divergence reports and the docs.
-spec event_name(event() | eos) -> term().
event_name(eos) -> end_of_recording;
event_name({?EV_RECV, D}) -> {receive_message, {sender, D bsr ?SEQ_BITS}, {seq, D band (1 bsl ?SEQ_BITS - 1)}};
event_name({?EV_RECV_EXT, _}) -> receive_unwrapped_message;
event_name({?EV_TIMEOUT, _}) -> receive_timeout;
event_name({?EV_SEND, V}) -> {send, {version, V}};
event_name({?EV_ETS, V}) -> {ets, {turn, V}};
event_name({?EV_FROM, D}) -> {from, D bsr 32, {index, D band 16#ffffffff}};
event_name({?EV_REPEAT, D}) -> {repeat, D bsr ?STEP_BITS, {step, D band (1 bsl ?STEP_BITS - 1)}};
event_name({T, _}) when T >= ?EV_MONO, T =< ?EV_DELAY -> {value, value_name(T)};
event_name({T, _}) when T > ?SIDE, T band 16#7f >= ?EV_MONO, T band 16#7f =< ?EV_DELAY ->
    {value, value_name(T band 16#7f)};
event_name({T, D}) -> {unknown_event, T, D}.

value_name(?EV_MONO) -> monotonic_time;
value_name(?EV_SYSTIME) -> system_time;
value_name(?EV_TIMESTAMP) -> timestamp;
value_name(?EV_NOW) -> now;
value_name(?EV_RAND_FLOAT) -> uniform;
value_name(?EV_RAND_INT) -> uniform;
value_name(?EV_UNIQUE) -> unique_integer;
value_name(?EV_REF) -> make_ref;
value_name(?EV_TIMER) -> timer_left;
value_name(?EV_DELAY) -> timer_delay.

%%% Send ---------------------------------------------------------------------------------

%% @doc Woven `To ! Msg'.
-spec send(term(), term()) -> term().
send(To, Msg) when is_pid(To) ->
    %% The common case, without the {Pid, Info} of peer/2: a known peer's Info is one
    %% map lookup, and on the receiver side it holds what the wrapping needs.
    case get(?PEERS) of
        #{To := Info} -> send_info(To, Info, Msg);
        undefined -> erlang:send(To, Msg);
        _ -> send_info(To, peer_info(To, get(?KEY)), Msg)
    end;
send(To, Msg) ->
    case get(?KEY) of
        undefined ->
            erlang:send(To, Msg);
        S ->
            case peer(To, S) of
                false -> erlang:send(To, Msg);
                {Pid, Info} -> erlang:send(Pid, wrap(Info, Msg, S)), Msg
            end
    end.

%% @doc Woven `erlang:send(To, Msg, Opts)'.
-spec send(term(), term(), [nosuspend | noconnect]) -> ok | nosuspend | noconnect.
send(To, Msg, Opts) ->
    case get(?KEY) of
        undefined ->
            erlang:send(To, Msg, Opts);
        S ->
            case peer(To, S) of
                false -> erlang:send(To, Msg, Opts);
                {Pid, Info} -> erlang:send(Pid, wrap(Info, Msg, S), Opts)
            end
    end.

send_info(To, false, Msg) ->
    erlang:send(To, Msg);
send_info(To, {Idx, Seq}, Msg) ->
    erlang:send(To, {'$riarc_rr', Idx, atomics:add_get(Seq, 1, 1) - 1, Msg}),
    Msg;
send_info(To, replay, Msg) ->
    erlang:send(To, wrap(replay, Msg, get(?KEY))),
    Msg;
send_info(To, Ver, Msg) ->
    %% Sender side, recording (see wrap/3).
    V = atomics:add_get(Ver, 1, 1),
    ok = record_run(?EV_SEND, V),
    erlang:send(To, {'$riarc_rv', V, Msg}),
    Msg.

%% A receiver that takes part in the run: its pid and what the sender needs for it (on
%% the receiver side, this process's own index and sequence counter, as wrap_seq/2
%% uses them; on the sender side, the receiver's version counter, or `replay', whose
%% versions come from the stream). Anything else (a name not
%% registered, a port, an alias, a remote process, a process not spawned by woven code)
%% gets the plain message.
peer(To, S) when is_atom(To) ->
    case whereis(To) of
        Pid when is_pid(Pid) -> peer(Pid, S);
        _ -> false
    end;
peer(To, S) when is_pid(To) ->
    case peer_info(To, S) of
        false -> false;
        Info -> {To, Info}
    end;
peer(_To, _S) ->
    false.

%% At most this many peers are remembered: a process that talks to ever new processes
%% (a server of short-lived clients) starts afresh then; the run's table has the answer.
-define(MAX_PEERS, 4096).

peer_info(Pid, S = #replay_run{tab = Tab, strategy = Strategy}) ->
    case get(?PEERS) of
        #{Pid := Info} ->
            Info;
        Peers ->
            Info = case ets:lookup(Tab, Pid) of
                       [{_, _Idx, _}] when Strategy =:= sender, S#replay_run.mode =:= replay -> replay;
                       [{_, _Idx, Ver}] when Strategy =:= sender -> Ver;
                       [{_, _Idx, _}] -> {S#replay_run.idx, S#replay_run.seq};
                       [] -> false
                   end,
            put(?PEERS, case map_size(Peers) < ?MAX_PEERS of
                            true -> Peers#{Pid => Info};
                            false -> #{Pid => Info}
                        end),
            Info
    end.

%% Receiver side: {'$riarc_rr', SenderIndex, Seq, Msg}, Seq counting this process's
%% wrapped messages (to any receiver: the pair (sender, seq) names one message in every
%% run, since each sender's program order is replayed). Sender side: {'$riarc_rv',
%% Version, Msg}, the version taken from the receiver's counter (recording) or from this
%% process's stream (replay).
wrap(_, Msg, S = #replay_run{strategy = receiver}) ->
    wrap_seq(Msg, S);
wrap(Ver, Msg, #replay_run{strategy = sender, mode = record}) ->
    V = atomics:add_get(Ver, 1, 1),
    ok = record_run(?EV_SEND, V),
    {'$riarc_rv', V, Msg};
wrap(_Ver, Msg, S = #replay_run{strategy = sender, mode = replay}) ->
    V = take(?EV_SEND, send, S),
    {'$riarc_rv', V, Msg}.

%%% Receive ------------------------------------------------------------------------------

%% @doc Woven receive. F is the fun the weaver made of the receive's clauses (see
%% {@link riarc_replay_transform}); Timeout the `after' value (infinity when there is
%% none). Returns {ClauseIndex, Message} or '$riarc_rr_timeout'.
-spec recv(fun((rec | ext | ver | match, term(), timeout()) -> term()), timeout()) ->
    {pos_integer(), term()} | '$riarc_rr_timeout'.
recv(F, Timeout) ->
    case get(?KEY) of
        undefined -> plain_recv(F, Timeout);
        S = #replay_run{mode = record, strategy = receiver} -> timed_out(record_recv(F, Timeout, S));
        S = #replay_run{mode = replay, strategy = receiver} -> timed_out(replay_recv(F, Timeout, S));
        S = #replay_run{strategy = sender} -> timed_out(versioned_recv(F, Timeout, S))
    end.

%% The program's receive took its `after' branch, recorded or replayed. The VM's own
%% timeout events of a woven run say nothing of that (the woven receive looks at the
%% mailbox with `after 0' first; a replayed timeout waits for nothing), so the runtime
%% marks it with a message to itself, which riarc's monitors see as the plain run's
%% timeout (riarc_replay_monitor:event/1).
timed_out('$riarc_rr_timeout') ->
    self() ! ?TIMEOUT_MARK,
    receive ?TIMEOUT_MARK -> '$riarc_rr_timeout' end;
timed_out(Taken) ->
    Taken.

%% @doc Recording, receiver side: what a woven receive calls when it took, inline, the
%% wrapped message V (sender index S, sequence number Q) with its clause K.
-spec took(non_neg_integer(), non_neg_integer(), term(), pos_integer()) -> {pos_integer(), term()}.
took(Sender, Seq, V, K) ->
    _ = case V of
            {timeout, _, _} -> fired(V, get(?KEY));
            _ -> true
        end,
    ok = record_run(?EV_RECV, (Sender bsl ?SEQ_BITS) bor Seq),
    {K, V}.

%% @doc Recording: a woven receive took, inline, the plain message V with its clause K.
-spec took_plain(term(), pos_integer()) -> {pos_integer(), term()}.
took_plain(V, K) ->
    _ = case get(?KEY) of
            S = #replay_run{strategy = receiver} -> record_plain(V, 0, S);
            S -> record_plain(V, reset_count(), S)
        end,
    {K, V}.

%% @doc Recording: a woven receive's `after' fired (inline).
-spec took_timeout() -> '$riarc_rr_timeout'.
took_timeout() ->
    _ = case get(?KEY) of
            S = #replay_run{strategy = receiver} -> record_event(?EV_TIMEOUT, 0, S);
            S -> record_event(?EV_TIMEOUT, reset_count(), S)
        end,
    timed_out('$riarc_rr_timeout').

%% @doc Recording, sender side, nothing buffered (mode rv): a woven receive took, inline,
%% the message V of version N with its clause K. It is the first candidate when N is the
%% lowest version not received yet (take_in_order/4); otherwise it is buffered and the
%% receive starts again through recv/2, which sees the buffer ('$riarc_rr_again').
-spec took_ver(pos_integer(), term(), pos_integer()) -> {pos_integer(), term()} | '$riarc_rr_again'.
took_ver(N, V, K) ->
    case get(?VER) of
        {N, C} ->
            put(?VER, {N + 1, C + 1}),
            %% No event is written here: every 256 versions it looks at the mailbox's
            %% length (see record_run/1).
            _ = N band 255 =/= 0 orelse queue_off_heap(),
            {K, V};
        _ ->
            _ = add_versioned(N, V, get(?KEY)),
            '$riarc_rr_again'
    end.

%% @doc Recording, sender side: a woven receive took, inline, a timer's wrapped message.
-spec took_timer(non_neg_integer(), non_neg_integer(), term(), pos_integer()) -> {pos_integer(), term()}.
took_timer(Sender, Seq, V, K) ->
    S = get(?KEY),
    S1 = record_event(?EV_RECV_EXT, reset_count(), S),
    _ = record_event(?EV_RECV, (Sender bsl ?SEQ_BITS) bor Seq, S1),
    fired(V, S1),
    {K, V}.

plain_recv(F, Timeout) ->
    case F(rec, none, Timeout) of
        {K, _S, _Q, V} -> {K, V};
        {K, ext, V} -> {K, V};
        '$riarc_rr_timeout' -> '$riarc_rr_timeout'
    end.

%% The process blocks with its pending events in its own state: whoever ends it while it
%% waits writes them first (salvage/1).
record_recv(F, Timeout, S) ->
    R = F(rec, none, Timeout),
    S1 = S,
    case R of
        {K, Sender, Seq, V} ->
            _ = case V of
                    {timeout, _, _} -> fired(V, S1);
                    _ -> true
                end,
            ok = record_run(?EV_RECV, (Sender bsl ?SEQ_BITS) bor Seq),
            {K, V};
        {K, ext, V} ->
            _ = record_plain(V, 0, S1),
            {K, V};
        '$riarc_rr_timeout' ->
            _ = record_event(?EV_TIMEOUT, 0, S1),
            '$riarc_rr_timeout'
    end.

replay_recv(F, Timeout, S) ->
    case next_event(S) of
        {?EV_RECV, D} ->
            take_wrapped(D, F, skip(S));
        {?EV_RECV_EXT, _} ->
            replay_plain(F, skip(S));
        {?EV_TIMEOUT, _} when Timeout =/= infinity ->
            %% Recorded as timed out: no message was taken, whatever is in the mailbox.
            _ = skip(S),
            '$riarc_rr_timeout';
        eos ->
            end_of_recording(Timeout);
        Other ->
            diverge(S, event_name(Other), {'receive', {'after', Timeout}})
    end.

%% Replay of RECV: exactly the recorded message, by its sender and sequence number; the
%% receive's own clauses must still take it.
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
        0 -> diverge(S, {receive_message, sender_lid(Sender, S), Seq}, {no_clause_matches, V});
        K -> {K, V}
    end.

%% The wrapped message D names, from the mailbox: the wrapped messages before it go to
%% the buffer, so that each is looked at once. A selective receive on (sender, seq) would
%% scan them again at every receive: where the replay's timing queues many messages
%% ahead of the recorded one (a bank teller's replies from 50 accounts), that is
%% quadratic in the mailbox's length.
%% The watchdog's reason is set only for a wait that blocks.
wait_wrapped(D, S) ->
    receive
        {'$riarc_rr', Sender, Seq, Msg} -> wrapped(Sender, Seq, Msg, D, S)
    after 0 ->
        put(?WAIT, {receive_message, sender_lid(D bsr ?SEQ_BITS, S), D band (1 bsl ?SEQ_BITS - 1)}),
        receive
            {'$riarc_rr', Sender, Seq, Msg} -> erase(?WAIT), wrapped(Sender, Seq, Msg, D, S)
        end
    end.

wrapped(Sender, Seq, Msg, D, S) ->
    case (Sender bsl ?SEQ_BITS) bor Seq of
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

%% Recording of a receive that took a plain message: RECV_EXT (data N: see
%% versioned_recv/3), and FROM when the message is an 'EXIT' or 'DOWN' of a process of
%% the run. Plain messages from different processes race (two children's exits at a
%% supervisor, the 'DOWN's of a pool's workers); naming the source makes the replay
%% take the same one, while one source's signals keep their order in every run.
record_plain(V, N, S = #replay_run{tab = Tab}) ->
    S1 = record_event(?EV_RECV_EXT, N, S),
    case plain_source(V, Tab) of
        none -> S1;
        {Kind, Idx} -> record_event(?EV_FROM, (Kind bsl 32) bor Idx, S1)
    end.

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

%% Replay of RECV_EXT, S past it. With FROM: the first plain message of that kind from
%% that process (held, or in the mailbox), which the clauses must take. On the sender
%% side, RECV after it: the wrapped timer message it names. Otherwise: the first plain
%% message the receive's clauses take that is not the 'EXIT' or 'DOWN' of a process of
%% the run, since the recording would have named such a message; one taken on the way is
%% held for the keyed receive that will name it (it is not a message any unkeyed receive
%% took in the recording).
replay_plain(F, S = #replay_run{strategy = Strategy, tab = Tab}) ->
    case next_event(S) of
        {?EV_FROM, D} ->
            keyed_take(D bsr 32, D band 16#ffffffff, F, skip(S));
        {?EV_RECV, D} when Strategy =:= sender ->
            take_wrapped(D, F, skip(S));
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
        0 -> diverge(S, Want, {no_clause_matches, V});
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
%% once it has started, and it registers itself as it starts (child/2); until then the
%% receive waits for it to start, bounded by the watchdog.
keyed_pid(Idx, S = #replay_run{tab = Tab}) ->
    case ets:lookup(Tab, {pid, Idx}) of
        [{_, Pid}] ->
            Pid;
        [] ->
            put(?WAIT, {process_started, sender_lid(Idx, S)}),
            receive after 1 -> ok end,
            keyed_pid(Idx, S)
    end.

%% The recording ends in this receive: the recorded process was waiting here when the run
%% ended (a process killed while it waits has written everything before). The replaying
%% one waits here too, for good; the watchdog tells whether that is the end of the run or
%% a divergence (the root did not finish).
-spec end_of_recording(timeout()) -> no_return().
end_of_recording(Timeout) ->
    put(?WAIT, {end_of_recording, {'receive', {'after', Timeout}}}),
    receive after infinity -> exit(end_of_recording) end.

sender_lid(Idx, #replay_run{tab = Tab}) ->
    case ets:lookup(Tab, {lid, Idx}) of
        [{_, Lid}] -> Lid;
        [] -> Idx
    end.

%% Sender side (both modes): versioned messages are received in version order. A
%% message of version v is a candidate only once every version below v has arrived; the
%% receive takes the first candidate its clauses match. What this process records itself
%% is whether the receive took a plain message instead, or timed out.
versioned_recv(F, Timeout, S = #replay_run{mode = replay}) ->
    %% A versioned receive writes no event, so a plain or timed-out receive's event says
    %% how many versioned receives came before it (since the last such event): it is
    %% this receive's only if the count is the one we are at.
    {_, N} = get(?VER),
    case next_event(S) of
        {?EV_RECV_EXT, N} ->
            _ = reset_count(),
            replay_plain(F, skip(S));
        {?EV_TIMEOUT, N} when Timeout =/= infinity ->
            _ = reset_count(),
            _ = skip(S),
            '$riarc_rr_timeout';
        _ ->
            case gb_trees:is_empty(S#replay_run.vbuf) of
                true -> versioned_first(F, S);
                false -> versioned_wait(F, drain(S))
            end
    end;
versioned_recv(F, Timeout, S = #replay_run{mode = record}) ->
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
    {V, M} = next_versioned(S),
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

%% The count of versioned receives since the last plain or timed-out one, which this
%% receive's event holds; the count starts again.
reset_count() ->
    {Next, N} = get(?VER),
    put(?VER, {Next, 0}),
    N.

%% Replay: the next versioned message from the mailbox. The watchdog's reason is set
%% only for a wait that blocks: it costs a look at the stream and two
%% process-dictionary writes; at the end of the recording, the wait is where the
%% recorded process was when the run ended.
next_versioned(S) ->
    receive
        {'$riarc_rv', V, M} -> {V, M}
    after 0 ->
        put(?WAIT, case next_event(S) of
                       eos -> {end_of_recording, {'receive', versioned}};
                       _ -> {receive_versioned_message, element(1, get(?VER))}
                   end),
        receive {'$riarc_rv', V, M} -> erase(?WAIT), {V, M} end
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

drain_buf(Buf) ->
    receive
        {'$riarc_rv', V, M} -> drain_buf(insert_versioned(V, M, Buf))
    after 0 ->
        Buf
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
            {V, M} = next_versioned(S),
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
                    _ = record_plain(M, reset_count(), S),
                    {K, M};
                {K, Sender, Seq, M} ->
                    %% A timer's message, wrapped as on the receiver side (see Timers).
                    S1 = record_event(?EV_RECV_EXT, reset_count(), S),
                    _ = record_event(?EV_RECV, (Sender bsl ?SEQ_BITS) bor Seq, S1),
                    fired(M, S1),
                    {K, M};
                '$riarc_rr_timeout' ->
                    _ = record_event(?EV_TIMEOUT, reset_count(), S),
                    '$riarc_rr_timeout'
            end
    end.

%%% Values -------------------------------------------------------------------------------

%% Recording: calls the BIF and writes its result; replay: returns the recorded result.
value(T, Fun, Encode, Decode) ->
    case get(?KEY) of
        undefined ->
            Fun();
        S = #replay_run{mode = record} ->
            V = Fun(),
            case Encode(V) of
                {ok, D} -> _ = record_event(T, D, S);
                side -> put(?KEY, record_side(T, V, S))
            end,
            V;
        S = #replay_run{mode = replay} ->
            case take(T, {value, value_name(T)}, S) of
                {side, V} -> V;
                D -> Decode(D)
            end
    end.

int(V) when is_integer(V), V >= -(1 bsl 63), V < 1 bsl 63 -> {ok, V};
int(_) -> side.

id(D) -> D.

%% {Mega, Sec, Micro}: Mega < 2^20 (until year 35000), Sec and Micro < 2^20.
pack_ts({Mega, Sec, Micro}) when Mega >= 0, Mega < 1 bsl 20, Sec >= 0, Sec < 1 bsl 20,
                                 Micro >= 0, Micro < 1 bsl 24 ->
    {ok, (Mega bsl 44) bor (Sec bsl 24) bor Micro};
pack_ts(_) -> side.

unpack_ts(D) -> {D bsr 44, (D bsr 24) band (1 bsl 20 - 1), D band (1 bsl 24 - 1)}.

float_bits(F) -> <<D:64/signed>> = <<F:64/float>>, {ok, D}.
bits_float(D) -> <<F:64/float>> = <<D:64/signed>>, F.

%% @doc Woven `erlang:monotonic_time/0'.
-spec monotonic_time() -> integer().
monotonic_time() -> value(?EV_MONO, fun erlang:monotonic_time/0, fun int/1, fun id/1).
%% @doc Woven `erlang:monotonic_time/1'.
-spec monotonic_time(erlang:time_unit()) -> integer().
monotonic_time(U) -> value(?EV_MONO, fun() -> erlang:monotonic_time(U) end, fun int/1, fun id/1).
%% @doc Woven `erlang:system_time/0'.
-spec system_time() -> integer().
system_time() -> value(?EV_SYSTIME, fun erlang:system_time/0, fun int/1, fun id/1).
%% @doc Woven `erlang:system_time/1'.
-spec system_time(erlang:time_unit()) -> integer().
system_time(U) -> value(?EV_SYSTIME, fun() -> erlang:system_time(U) end, fun int/1, fun id/1).
%% @doc Woven `os:timestamp/0'.
-spec timestamp() -> erlang:timestamp().
timestamp() -> value(?EV_TIMESTAMP, fun os:timestamp/0, fun pack_ts/1, fun unpack_ts/1).
%% @doc Woven `erlang:now/0'.
-spec now() -> erlang:timestamp().
now() -> value(?EV_NOW, fun() -> erlang:now() end, fun pack_ts/1, fun unpack_ts/1).
%% @doc Woven `rand:uniform/0'.
-spec uniform() -> float().
uniform() -> value(?EV_RAND_FLOAT, fun rand:uniform/0, fun float_bits/1, fun bits_float/1).
%% @doc Woven `rand:uniform/1'.
-spec uniform(pos_integer()) -> pos_integer().
uniform(N) -> value(?EV_RAND_INT, fun() -> rand:uniform(N) end, fun int/1, fun id/1).
%% @doc Woven `erlang:unique_integer/0'.
-spec unique_integer() -> integer().
unique_integer() -> value(?EV_UNIQUE, fun erlang:unique_integer/0, fun int/1, fun id/1).
%% @doc Woven `erlang:unique_integer/1'.
-spec unique_integer([positive | monotonic]) -> integer().
unique_integer(M) -> value(?EV_UNIQUE, fun() -> erlang:unique_integer(M) end, fun int/1, fun id/1).

%% @doc Woven `make_ref/0'. A reference cannot be made again: the replay makes a fresh
%% one; the event holds the ref's ordinal among the process's refs, which the replay
%% checks, so a program that makes its refs in another order diverges.
-spec make_ref() -> reference().
make_ref() ->
    case get(?KEY) of
        undefined ->
            erlang:make_ref();
        S = #replay_run{mode = record, refs = N} ->
            put(?KEY, record_event(?EV_REF, N, S#replay_run{refs = N + 1})),
            erlang:make_ref();
        S = #replay_run{mode = replay, refs = N} ->
            case take(?EV_REF, {value, make_ref}, S) of
                N -> put(?KEY, (get(?KEY))#replay_run{refs = N + 1}), erlang:make_ref();
                Other -> diverge(S, {make_ref, Other}, {make_ref, N})
            end
    end.

%%% ETS ----------------------------------------------------------------------------------

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
    _ = record_event(?EV_ETS, V, get(?KEY)),
    try
        apply(Mod, Op, Args)
    after
        atomics:put(Ref, 2, V + 1),
        atomics:put(Ref, 1, 0)
    end;
turn(Mod, Op, Args, Ref, S = #replay_run{mode = replay}) ->
    V = take(?EV_ETS, {Mod, Op}, S),
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
            receive after 1 -> ok end,
            wait_turn(Ref, V, Spins + 1)
    end.

%%% Timers -------------------------------------------------------------------------------

%% A timer's message is a message from the process that started the timer: it is
%% wrapped when the timer starts, with the starter's next sequence number, so the
%% receive that takes it records RECV(starter, seq) and the replay takes exactly that
%% message, whether the timer fires before or after the messages it raced with. start_timer's message {timeout, TRef, Msg} holds its ref: the
%% woven start_timer makes the ref itself, sends the wrapped message with send_after and
%% keeps ref -> real timer in the run's table (until the message is received), so that
%% cancel_timer and read_timer reach the real timer. Whether a cancel came in time is
%% recorded (TIMER); a replay cancels only when the recording did (had the timer fired in
%% the recording, its message is one a recorded receive may take). An absolute timer's
%% delay is recorded (DELAY): the program's time values are the recording's, not this
%% VM's. The wrapping is the same with either strategy; on the sender side the receive
%% that takes a timer's message records RECV_EXT and then RECV(starter, seq). Timers to
%% names not registered and to processes outside the run send plain messages.

%% @doc Woven `erlang:send_after/3'.
-spec send_after(non_neg_integer(), pid() | atom(), term()) -> reference().
send_after(T, Dest, Msg) ->
    send_after(T, Dest, Msg, []).

%% @doc Woven `erlang:send_after/4'.
-spec send_after(integer(), pid() | atom(), term(), list()) -> reference().
send_after(T, Dest, Msg, Opts) ->
    timer(send_after, T, Dest, Msg, Opts).

%% @doc Woven `erlang:start_timer/3'.
-spec start_timer(non_neg_integer(), pid() | atom(), term()) -> reference().
start_timer(T, Dest, Msg) ->
    start_timer(T, Dest, Msg, []).

%% @doc Woven `erlang:start_timer/4'.
-spec start_timer(integer(), pid() | atom(), term(), list()) -> reference().
start_timer(T, Dest, Msg, Opts) ->
    timer(start_timer, T, Dest, Msg, Opts).

%% A woven send_after or start_timer: outside a run, or to a receiver that is not wrapped
%% for (see timer_peer/1), the plain timer with the delay from now.
timer(Kind, T, Dest, Msg, Opts) ->
    case get(?KEY) of
        undefined ->
            erlang:Kind(T, Dest, Msg, Opts);
        _ ->
            D = delay(T, Opts),
            case timer_peer(Dest) of
                false -> erlang:Kind(D, Dest, Msg, []);
                {Pid, S} -> wrapped_timer(Kind, D, Pid, Msg, S)
            end
    end.

wrapped_timer(send_after, D, Pid, Msg, S) ->
    erlang:send_after(D, Pid, wrap_seq(Msg, S));
wrapped_timer(start_timer, D, Pid, Msg, S = #replay_run{tab = Tab}) ->
    Ref = erlang:make_ref(),
    Real = erlang:send_after(D, Pid, wrap_seq({timeout, Ref, Msg}, S)),
    true = ets:insert(Tab, {{timer, Ref}, Real}),
    Ref.

%% @doc Woven `erlang:cancel_timer/1'.
-spec cancel_timer(reference()) -> non_neg_integer() | false.
cancel_timer(Ref) ->
    cancel_timer(Ref, []).

%% @doc Woven `erlang:cancel_timer/2'. With `{async, true}' the result is a plain
%% message and nothing is recorded.
-spec cancel_timer(reference(), list()) -> non_neg_integer() | false | ok.
cancel_timer(Ref, Opts) ->
    timer_query(cancel_timer, Ref, Opts).

%% @doc Woven `erlang:read_timer/1'.
-spec read_timer(reference()) -> non_neg_integer() | false.
read_timer(Ref) ->
    read_timer(Ref, []).

%% @doc Woven `erlang:read_timer/2' (with `{async, true}': not recorded, as cancel_timer/2).
-spec read_timer(reference(), list()) -> non_neg_integer() | false | ok.
read_timer(Ref, Opts) ->
    timer_query(read_timer, Ref, Opts).

%% A woven cancel_timer or read_timer: of the real timer behind a woven start_timer's
%% ref; recorded unless asynchronous.
timer_query(Kind, Ref, Opts) ->
    case get(?KEY) of
        undefined ->
            erlang:Kind(Ref, Opts);
        S ->
            Real = real_timer(Ref, S),
            case proplists:get_value(async, Opts, false) of
                true -> erlang:Kind(Real, Opts);
                false -> recorded_query(Kind, Ref, Real, Opts, S)
            end
    end.

recorded_query(read_timer, _Ref, Real, _Opts, S) ->
    timer_value(fun() -> erlang:read_timer(Real) end, S);
recorded_query(cancel_timer, Ref, Real, Opts, S) ->
    Left = timer_value(fun() -> erlang:cancel_timer(Real) end, S),
    %% Replay: cancel when the recording's cancel came in time.
    _ = S#replay_run.mode =:= replay andalso Left =/= false andalso replay_cancel(Ref, Real),
    _ = Left =/= false andalso ets:delete(S#replay_run.tab, {timer, Ref}),
    case proplists:get_value(info, Opts, true) of
        true -> Left;
        false -> ok
    end.

%% @doc Woven `timer:send_after/2'.
-spec timer_send_after(non_neg_integer(), term()) -> {ok, term()} | {error, term()}.
timer_send_after(T, Msg) ->
    timer_send_after(T, self(), Msg).

%% @doc Woven `timer:send_after/3': a local timer is erlang:send_after (as in timer
%% itself), woven; anything else goes to the timer server, a plain message.
-spec timer_send_after(non_neg_integer(), pid() | atom() | {atom(), node()}, term()) ->
    {ok, term()} | {error, term()}.
timer_send_after(T, Dest, Msg) when is_integer(T), T > 0, is_pid(Dest), node(Dest) =:= node() ->
    case get(?KEY) of
        undefined -> timer:send_after(T, Dest, Msg);
        _ -> {ok, {send_local, send_after(T, Dest, Msg)}}
    end;
timer_send_after(0, Dest, Msg) when is_pid(Dest); is_atom(Dest) ->
    case get(?KEY) of
        undefined -> timer:send_after(0, Dest, Msg);
        _ -> _ = send(Dest, Msg), {ok, {instant, erlang:make_ref()}}
    end;
timer_send_after(T, Dest, Msg) ->
    timer:send_after(T, Dest, Msg).

%% @doc Woven `timer:cancel/1'. A ticker's (see timer_send_interval/3) is cancelled by a
%% message, sent as woven code sends it, so that where its cancel falls among its ticks
%% is recorded by the ticker's receive; the caller waits for the ticker to end (its
%% 'DOWN', a recorded receive), so that, as with OTP's timer server, every tick it sent
%% is in its receiver's mailbox when the cancel returns and none follows.
-spec timer_cancel(term()) -> {ok, cancel} | {error, term()}.
timer_cancel({riarc_ticker, Pid}) when is_pid(Pid) ->
    MRef = erlang:monitor(process, Pid),
    _ = send(Pid, '$riarc_rr_cancel'),
    {1, _} = recv(fun(match, {'DOWN', R, process, _, _}, _) when R =:= MRef -> 1;
                     (match, _, _) -> 0;
                     (_Op, _, Tmo) ->
                          receive {'DOWN', MRef, process, _, _} = V -> {1, ext, V}
                          after Tmo -> '$riarc_rr_timeout'
                          end
                  end, infinity),
    {ok, cancel};
timer_cancel(TRef) ->
    case {get(?KEY), TRef} of
        {#replay_run{}, {send_local, Ref}} when is_reference(Ref) -> _ = cancel_timer(Ref), {ok, cancel};
        _ -> timer:cancel(TRef)
    end.

%% Interval timers and timed applies. OTP's timer server sends or applies them from its
%% own processes, which are not part of the run, so their messages would be plain and
%% race with each other unrecorded. In a run, a ticker does it instead: a process of the
%% run (spawned as woven code spawns, a child of the caller), whose wait between ticks
%% is a receive with a timeout, recorded like any (TIMEOUT per tick, RECV for a cancel,
%% RECV_EXT and FROM for the end of the process it is tied to), and whose sends and
%% spawns are woven. A replay
%% ticks as the recording did without waiting (a recorded TIMEOUT is not waited for), and
%% the receivers take the ticks where the recording has them. Ticks come every Time ms
%% after the previous one, not on a fixed schedule as OTP's do (a recording is not
%% timing-exact anyway).

%% @doc Woven `timer:send_interval/2'.
-spec timer_send_interval(non_neg_integer(), term()) -> {ok, term()} | {error, term()}.
timer_send_interval(T, Msg) ->
    timer_send_interval(T, self(), Msg).

%% @doc Woven `timer:send_interval/3': to a process of the run, a ticker tied to it, as
%% OTP ties the interval to a destination pid; to a name, a ticker tied to the caller
%% that sends to the name each time; anything else, the timer server.
-spec timer_send_interval(non_neg_integer(), pid() | atom() | {atom(), node()}, term()) ->
    {ok, term()} | {error, term()}.
timer_send_interval(T, Dest, Msg) when is_integer(T), T >= 0 ->
    case {get(?KEY), Dest} of
        {S = #replay_run{}, _} when is_pid(Dest) ->
            case peer_info(Dest, S) of
                false -> timer:send_interval(T, Dest, Msg);
                _ -> ticker(T, {send, Dest, Msg}, interval, Dest)
            end;
        {#replay_run{}, _} when is_atom(Dest) ->
            ticker(T, {send, Dest, Msg}, interval, self());
        _ ->
            timer:send_interval(T, Dest, Msg)
    end;
timer_send_interval(T, Dest, Msg) ->
    timer:send_interval(T, Dest, Msg).

%% @doc Woven `timer:apply_after/4': in a run, a ticker that spawns M:F(A) once.
-spec timer_apply_after(non_neg_integer(), module(), atom(), [term()]) -> {ok, term()} | {error, term()}.
timer_apply_after(T, M, F, A) when is_integer(T), T >= 0, is_atom(M), is_atom(F), is_list(A) ->
    case get(?KEY) of
        #replay_run{} -> ticker(T, {apply, M, F, A}, once, none);
        undefined -> timer:apply_after(T, M, F, A)
    end;
timer_apply_after(T, M, F, A) ->
    timer:apply_after(T, M, F, A).

%% @doc Woven `timer:apply_interval/4': in a run, a ticker tied to the caller that spawns
%% M:F(A) each time.
-spec timer_apply_interval(non_neg_integer(), module(), atom(), [term()]) -> {ok, term()} | {error, term()}.
timer_apply_interval(T, M, F, A) when is_integer(T), T >= 0, is_atom(M), is_atom(F), is_list(A) ->
    case get(?KEY) of
        #replay_run{} -> ticker(T, {apply, M, F, A}, interval, self());
        undefined -> timer:apply_interval(T, M, F, A)
    end;
timer_apply_interval(T, M, F, A) ->
    timer:apply_interval(T, M, F, A).

ticker(T, Action, Repeat, Tied) ->
    Pid = spawn(spawn, fun() -> ticker_init(T, Action, Repeat, Tied) end, []),
    {ok, {riarc_ticker, Pid}}.

ticker_init(T, Action, Repeat, Tied) ->
    MRef = case Tied of
               none -> none;
               _ -> erlang:monitor(process, Tied)
           end,
    ticker_loop(T, Action, Repeat, ticker_receive(MRef)).

ticker_loop(T, Action, Repeat, F) ->
    case recv(F, T) of
        '$riarc_rr_timeout' ->
            _ = case Action of
                    {send, Dest, Msg} -> catch send(Dest, Msg);
                    {apply, M, Fn, A} -> spawn(spawn, {M, Fn, A}, [])
                end,
            case Repeat of
                once -> ok;
                interval -> ticker_loop(T, Action, Repeat, F)
            end;
        {_K, _CancelOrTiedEnded} ->
            ok
    end.

%% The ticker's receive, as the weaver makes one (riarc_replay_transform) of
%%   receive '$riarc_rr_cancel' -> cancel; {'DOWN', MRef, process, _, _} -> tied_ended
%%   after T -> tick end
%% in one receive whose guards on Op keep each mode's clauses: rec the wrapped and plain
%% ones, ext the plain ones, ver these and the versioned messages.
ticker_receive(MRef) ->
    fun(match, M, _) ->
            case M of
                '$riarc_rr_cancel' -> 1;
                {'DOWN', MRef, process, _, _} -> 2;
                _ -> 0
            end;
       (Op, _, Tmo) ->
            receive
                {'$riarc_rr', S, Q, '$riarc_rr_cancel' = V} when Op =/= ext -> {1, S, Q, V};
                {'$riarc_rv', N, X} when Op =:= ver -> {ver, N, X};
                '$riarc_rr_cancel' = V -> {1, ext, V};
                {'DOWN', MRef, process, _, _} = V -> {2, ext, V}
            after Tmo -> '$riarc_rr_timeout'
            end
    end.

%% Race: the recording's cancel came in time, this replay's timer has fired already. A
%% wrapped timer message is never taken, since no recorded receive names it; a plain
%% start_timer message (a timer to a process outside the run's wrapping) would be taken
%% by the next receive that takes plain messages, a message the recorded process never
%% had: it is removed (its ref is unique, so nothing else matches). A plain send_after
%% message cannot be told from other messages and stays (docs/replay.md).
replay_cancel(Ref, Real) ->
    case erlang:cancel_timer(Real) of
        false when Real =:= Ref -> receive {timeout, Ref, _} -> true after 0 -> true end;
        _ -> true
    end.

%% The receiver, when it takes part in the run (see above).
timer_peer(Dest) ->
    case get(?KEY) of
        S = #replay_run{} ->
            case peer(Dest, S) of
                {Pid, _Info} -> {Pid, S};
                false -> false
            end;
        _ -> false
    end.

%% {'$riarc_rr', Index, Seq, Msg}: the receiver side's wrapping of every message, and
%% of a timer's message with either strategy (with its starter's next sequence number):
%% on the sender side a version taken when the timer starts would hold back every later
%% version until it fires, and for good if it is cancelled.
-compile({inline, [wrap_seq/2]}).
wrap_seq(Msg, #replay_run{idx = Idx, seq = Seq}) ->
    {'$riarc_rr', Idx, atomics:add_get(Seq, 1, 1) - 1, Msg}.

%% The timer's delay from now: relative as given; absolute (`{abs, true}') recorded,
%% since the program's time values in a replay are the recording's.
delay(T, Opts) ->
    case proplists:get_value(abs, Opts, false) of
        false -> T;
        true -> value(?EV_DELAY, fun() -> max(0, T - erlang:monotonic_time(millisecond)) end,
                      fun int/1, fun id/1)
    end.

real_timer(Ref, #replay_run{tab = Tab}) when is_reference(Ref) ->
    case ets:lookup(Tab, {timer, Ref}) of
        [{_, Real}] -> Real;
        [] -> Ref
    end;
real_timer(Ref, _S) ->
    Ref.

%% cancel_timer/read_timer's result: ms left, or false (-1 in the event).
timer_value(Fun, _S) ->
    value(?EV_TIMER, Fun, fun(false) -> {ok, -1}; (N) -> int(N) end,
          fun(-1) -> false; (N) -> N end).

%% A start_timer message was taken: its ref no longer needs its real timer (a later
%% cancel_timer of it finds nothing, as for a timer that fired).
fired({timeout, Ref, _}, #replay_run{tab = Tab}) when is_reference(Ref) ->
    ets:delete(Tab, {timer, Ref});
fired(_, _) ->
    true.
