%% @doc The stream of a process of a record &amp; replay run: writing it while recording,
%% reading it while replaying. {@link riarc_replay_rt} (and {@link riarc_replay_ets},
%% {@link riarc_replay_timers}) record and take events through it; the state is the
%% process's (riarc_replay_rt.hrl).
%%
%% Each process appends fixed 9-byte records (1-byte type, 8-byte data) to its own
%% stream; values that do not fit in 8 bytes go to the process's side table and the data
%% is their index there; a run of RECV (or SEND) events whose data go up by one step is
%% written as its first event and REPEAT. Streams are written to the run's ETS table in
%% chunks: every 256 events and when the process ends; a process that waits when it is
%% ended by another (the controller at the end of the run, a woven exit/2, the exit of a
%% linked process) has its pending events written by the controller first (salvage/1,
%% salvage_for/2). The event types are listed in docs/replay.md.
%% ```
%% 1> riarc_replay_stream:event_name({1, (3 bsl 40) bor 7}).
%% {receive_message,{sender,3},{seq,7}}
%% 2> riarc_replay_stream:event_name({7, (41 bsl 24) bor 2}).
%% {repeat,41,{step,2}}
%% 3> riarc_replay_stream:event_name({16 bor 16#80, 0}).
%% {value,monotonic_time}
%% 4> riarc_replay_stream:salvage(self()).
%% ok
%% '''
-module(riarc_replay_stream).

%% Recording.
-export([init/0, record_event/3, record_run/2, record_side/3, close/1, queue_off_heap/0,
         salvage/1, salvage_for/2]).
%% Replay.
-export([next_event/1, take/3, skip/1, diverge/3, event_name/1]).

-export_type([event/0]).

-include("riarc_replay_rt.hrl").

-type event() :: {0..255, integer()}.

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
%% data that extends it: an integer from 0 for a step of 1 (a sender's messages one
%% after the other, the most common run), {Next} for any other step, else none. An open
%% run's first data is ?RUN0, its step ?STEP and, for a step of 0 only, its N ?RUNN; N is
%% derived from the others for a step above 0. Extending a run of step 1 is one get and
%% one put of small integers (other steps: one get more, and the 1-tuple); an event that
%% does not costs one get and one put more than appending.
-define(RUN, '$riarc_rr_run').
-define(RUN0, '$riarc_rr_run0').
-define(STEP, '$riarc_rr_step').
-define(RUNN, '$riarc_rr_runn').
-define(STEP_BITS, 24).

%% @doc Starts the calling process's pending events, before its first event.
-spec init() -> ok.
init() ->
    put(?BUF, <<>>),
    put(?RUN, none),
    ok.

%% @doc Recording: writes the pending events and the pending run as the process's last
%% chunk; returns the state.
-spec close(#replay_run{}) -> #replay_run{}.
close(S) ->
    flush(S, true).

%% @doc Recording: appends the event {T, D}. Returns the state, which is S unless a chunk
%% was written (then the new state is also stored: a caller that keeps S as it was need
%% not store it). The pending run goes first.
-spec record_event(0..255, integer(), #replay_run{}) -> #replay_run{}.
record_event(T, D, S) ->
    case get(?RUN) of
        none ->
            append(<<T:8, D:64>>, S);
        Next when is_integer(Next), Next >= 0 ->
            put(?RUN, none),
            append(<<(repeat_bin(Next))/binary, T:8, D:64>>, S);
        {Next} ->
            put(?RUN, none),
            append(<<(repeat_bin(Next))/binary, T:8, D:64>>, S);
        _ ->
            put(?RUN, none),
            append(<<T:8, D:64>>, S)
    end.

%% @doc Recording: an event of type T, the process's mergeable type (RECV on the
%% receiver side, SEND on the sender side): extends the open run when D is its next data, opens one when the
%% event written last was of this type and D can follow it, else is written as it is
%% (after the open run's REPEAT). A process whose messages keep coming in one run writes
%% no chunk, which is where it would move a long mailbox off the heap
%% (queue_off_heap/0): it looks about every 256 / Step events of a run (every 256
%% messages of one sender, as a chunk of 256 events did; a look costs about 20 ns).
-spec record_run(0..255, non_neg_integer()) -> ok.
record_run(T, D) ->
    case get(?RUN) of
        D ->
            _ = put(?RUN, D + 1),
            _ = D band 255 =/= 0 orelse queue_off_heap(),
            ok;
        {D} ->
            case get(?STEP) of
                0 ->
                    _ = put(?RUNN, get(?RUNN) + 1);
                Step ->
                    _ = put(?RUN, {D + Step}),
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
            _ = put(?RUN, case Step of
                              1 -> D + 1;
                              _ -> {D + Step}
                          end),
            ok;
        Next when is_integer(Next), Next >= 0 ->
            ok = append(<<(repeat_bin(Next))/binary, T:8, D:64>>),
            _ = put(?RUN, -1 - D),
            ok;
        {Next} ->
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
        {Next} -> append(repeat_bin(Next), S);
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

%% @doc Recording: the value event of type T whose value goes to the side table.
-spec record_side(0..255, term(), #replay_run{}) -> #replay_run{}.
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

%% @doc Moves the calling process's mailbox off the heap when it is long (see above).
-spec queue_off_heap() -> on_heap | off_heap.
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
%% cost a table write per receive), so the run's controller writes for it before it is
%% ended: at the end of the run, or asked by a woven `exit/2' or a process of the run
%% that ends abnormally (salvage_for/2). If Pid runs
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
                                  <<Buf0/binary, (repeat_bin(Get(?RUN0), Next, 1, Get(?RUNN)))/binary>>;
                              {Next} ->
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

%% @doc Salvages, for a process of the run that asked the controller (riarc_replay_rt),
%% the processes an exit signal is about to kill: `{tree, Pid}', Pid, the target of an
%% `exit/2'; `{links, Pid}', the processes linked to Pid, which is ending abnormally.
%% Since a process an exit signal kills kills its links in turn, each comes with every
%% process of the run linked to it (transitively) that does not trap exits.
-spec salvage_for({tree | links, pid()}, ets:tid()) -> ok.
salvage_for({tree, Pid}, Tab) ->
    salvage_tree([Pid], Tab, #{});
salvage_for({links, Pid}, Tab) ->
    salvage_tree(killed_links(Pid, Tab, #{}), Tab, #{Pid => true}).

salvage_tree([], _Tab, _Seen) ->
    ok;
salvage_tree([P | Ps], Tab, Seen) when is_map_key(P, Seen) ->
    salvage_tree(Ps, Tab, Seen);
salvage_tree([P | Ps], Tab, Seen) ->
    ok = salvage(P),
    salvage_tree(killed_links(P, Tab, Seen) ++ Ps, Tab, Seen#{P => true}).

%% The processes of the run linked to P that its abnormal exit would kill.
killed_links(P, Tab, Seen) ->
    case erlang:process_info(P, links) of
        {links, Ls} -> [L || L <- Ls, is_pid(L), not is_map_key(L, Seen), ets:member(Tab, L),
                             erlang:process_info(L, trap_exit) =:= {trap_exit, false}];
        undefined -> []
    end.

%% @doc Replay: the next event of a replaying process, or eos at the end of its stream;
%% within a REPEAT, the next of its events.
-spec next_event(#replay_run{}) -> event() | eos.
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

%% @doc Replay: consumes the next event, which must be of type T; returns its data (or
%% its side value). Anything else is a divergence.
-spec take(0..255, term(), #replay_run{}) -> integer() | {side, term()}.
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

%% @doc Replay: past the next event, which the caller has looked at; returns the state.
-spec skip(#replay_run{}) -> #replay_run{}.
skip(S = #replay_run{progress = Progress}) ->
    counters:add(Progress, 1, 1),
    S1 = advance(S),
    put(?KEY, S1),
    S1.

%% @doc Replay: the process did Got where its recording has Expected. Tells the
%% controller, which ends the run (and this process) at once.
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
