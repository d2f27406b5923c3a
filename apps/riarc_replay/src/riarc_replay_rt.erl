%% @doc The per-process runtime of record &amp; replay: woven code (see
%% {@link riarc_replay_transform}) calls it at every nondeterministic operation. A process
%% takes part in a run when it was spawned by woven code of a run (or is a run's root);
%% its state is in its process dictionary under the key `$riarc_rr'. Outside a run every
%% function does what the plain operation does (a wrapped message that reaches such a
%% process is unwrapped).
%%
%% This module has processes, sends, the receive and values; each process's events go to
%% its stream ({@link riarc_replay_stream}). The receive is the receiver side's; the
%% sender side's versioned receive is {@link riarc_replay_versions}'s, and the messages
%% both take as the stream names them (a wrapped one by its RECV, plain ones) {@link
%% riarc_replay_take}'s. Timers are {@link riarc_replay_timers}'s, ETS and mnesia {@link
%% riarc_replay_ets}'s; the runtime's own waits, none of which times out, {@link
%% riarc_replay_wait}'s.
%% ```
%% 1> riarc_replay_rt:active().
%% false
%% 2> riarc_replay_rt:send(self(), hello), riarc_replay_rt:recv(fun(rec, _, T) -> receive M -> {1, ext, M} after T -> '$riarc_rr_timeout' end end, 0).
%% {1,hello}
%% '''
-module(riarc_replay_rt).
%% now/0 is woven because programs still call it; the runtime calls it for them.
-compile({nowarn_deprecated_function, [{erlang, now, 0}]}).
%% spawn/3 here is the woven spawn.
-compile({no_auto_import, [spawn/3]}).

-export([active/0, send/2, send/3, recv/2, spawn/3,
         took/2, took_plain/1, took_timeout/0,
         monotonic_time/0, monotonic_time/1, system_time/0, system_time/1,
         timestamp/0, now/0, uniform/0, uniform/1, unique_integer/0, unique_integer/1,
         make_ref/0, exit_signal/2]).
%% Used by the run controller (riarc_replay) and as spawn entry points.
-export([start_root/2, child/2, format_error/1]).
%% Used by riarc_replay_timers.
-export([peer/2, wrap_seq/2, int_value/2]).
-export_type([run/0, error_reason/0]).

-include("riarc_replay_rt.hrl").

%% What a sender knows of the processes it sends to: #{Pid => false | Seq counter |
%% {ver, Version counter} | replay} (see peer/2), filled on first contact, so a send to
%% a known peer reads it and changes nothing.
-define(PEERS, '$riarc_rr_peers').
%% At most this many processes in a run: a RECV holds its sender's index in 24 bits.
-define(MAX_IDX, (1 bsl 24 - 1)).

-type mode() :: record | replay.
-type strategy() :: receiver | sender.
%% What every process of a run shares: mode, strategy, the run's ETS table, the
%% controller, the progress counter the replay watchdog reads.
-type run() :: {mode(), strategy(), ets:tid(), pid(), counters:counters_ref()}.
-type error_reason() :: {diverged, [pos_integer()], term(), term()}.

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
            riarc_replay_stream:diverge(S, {at_most, ?MAX_IDX, processes}, {spawn, Lid})
    end;
child_index(S = #replay_run{mode = replay, tab = Tab}, Lid) ->
    case ets:lookup(Tab, {idx, Lid}) of
        [{_, Idx}] -> Idx;
        [] -> riarc_replay_stream:diverge(S, no_such_process, {spawn, Lid})
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
             progress = Progress, seq = seq_counter(Idx)},
    %% Race: the parent registers this process once spawn has returned, and this process
    %% may have linked, exited or been monitored by then; registered here first, every
    %% 'EXIT' or 'DOWN' it causes names a process of the run (riarc_replay_take), in the
    %% recording and in the replay, which also finds its pid by index.
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
    ok = riarc_replay_stream:init(),
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

%% The receiver side's counter of wrapped sends starts at Index bsl 40: a message's
%% seq is then its RECV data as it is, one integer in a 3-tuple wrapping (wrap_seq/2).
seq_counter(Idx) ->
    Seq = atomics:new(1, [{signed, false}]),
    ok = atomics:put(Seq, 1, Idx bsl ?SEQ_BITS),
    Seq.

salvage_links() ->
    case get(?KEY) of
        #replay_run{mode = record, run = Run} -> salvaged(Run, {links, self()});
        _ -> ok
    end.

%% Asks the run's controller to write the pending events of What
%% (riarc_replay_stream:salvage_for/2), and waits until it has.
%% Invariant: a process of a run never asks another process of the run for its info.
%% The VM answers process_info/2 on another process with a message, which a monitored
%% recording's tracing shows as a receive of the program's: a spurious event that can
%% move a monitor anywhere. The controller asks instead; the request and its answer are
%% the runtime's own messages (riarc_replay_monitor:event/1 leaves them out). The
%% controller's 'DOWN' ends the wait if it is gone (the run has failed then).
salvaged({_, _, _, Ctl, _}, What) ->
    Ref = erlang:monitor(process, Ctl),
    Ctl ! {riarc_rr_salvage, self(), Ref, What},
    receive
        {riarc_rr_salvaged, Ref} -> true = erlang:demonitor(Ref, [flush]), ok;
        {'DOWN', Ref, process, _, _} -> ok
    end.

%% Recording: the last chunk. Replay: a process that ends with events left did less than
%% the recorded one.
finish() ->
    case get(?KEY) of
        S = #replay_run{mode = record} ->
            _ = riarc_replay_stream:close(S),
            ok;
        S = #replay_run{mode = replay} ->
            case riarc_replay_stream:next_event(S) of
                eos -> ok;
                Ev -> riarc_replay_stream:diverge(S, riarc_replay_stream:event_name(Ev), process_ended)
            end;
        _ ->
            ok
    end.

%% @doc Woven `exit(Pid, Reason)' (erlang:exit/2): in a recording, the target's pending
%% events (and those of the links its exit takes along) are written before the signal.
-spec exit_signal(pid() | port(), term()) -> true.
exit_signal(To, Reason) ->
    _ = case get(?KEY) of
            #replay_run{mode = record, tab = Tab, run = Run} when is_pid(To), Reason =/= normal ->
                ets:member(Tab, To) andalso salvaged(Run, {tree, To});
            _ ->
                ok
        end,
    erlang:exit(To, Reason).

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
                %% To as written, a name too: the VM's tracing shows the send as the plain
                %% program's (a monitor sees `Name ! Msg' to the name in every mode), and
                %% the message goes to whoever holds the name as it is sent.
                {_Pid, Info} -> erlang:send(To, wrap(Info, Msg, S)), Msg
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
                {_Pid, Info} -> erlang:send(To, wrap(Info, Msg, S), Opts)
            end
    end.

%% The receiver's sequence counter (an atomics reference, opaque: matched last, after
%% the other kinds of peer).
send_info(To, false, Msg) ->
    erlang:send(To, Msg);
send_info(To, replay, Msg) ->
    erlang:send(To, wrap(replay, Msg, get(?KEY))),
    Msg;
send_info(To, {ver, Ver}, Msg) ->
    %% Sender side, recording (see wrap/3).
    V = atomics:add_get(Ver, 1, 1),
    ok = riarc_replay_stream:record_run(?EV_SEND, V),
    erlang:send(To, {'$riarc_rv', V, Msg}),
    Msg;
send_info(To, Seq, Msg) ->
    erlang:send(To, {'$riarc_rr', atomics:add_get(Seq, 1, 1) - 1, Msg}),
    Msg.

%% @doc A receiver that takes part in the run: its pid and what the sender needs for it (on
%% the receiver side, this process's own sequence counter, as wrap_seq/2 uses it; on
%% the sender side, `{ver, Counter}', the receiver's version counter, or `replay', whose
%% versions come from the stream). Anything else (a name not
%% registered, a port, an alias, a remote process, a process not spawned by woven code)
%% gets the plain message.
-spec peer(term(), #replay_run{}) -> {pid(), term()} | false.
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
                       [{_, _Idx, Ver}] when Strategy =:= sender -> {ver, Ver};
                       [{_, _Idx, _}] -> S#replay_run.seq;
                       [] -> false
                   end,
            put(?PEERS, case map_size(Peers) < ?MAX_PEERS of
                            true -> Peers#{Pid => Info};
                            false -> #{Pid => Info}
                        end),
            Info
    end.

%% Receiver side: {'$riarc_rr', SenderSeq, Msg}, SenderSeq the sender's index (24 bits)
%% and its count of wrapped messages (40 bits; to any receiver: the pair names one
%% message in every run, since each sender's program order is replayed). Sender side: {'$riarc_rv',
%% Version, Msg}, the version taken from the receiver's counter (recording) or from this
%% process's stream (replay).
wrap(_, Msg, S = #replay_run{strategy = receiver}) ->
    wrap_seq(Msg, S);
wrap({ver, Ver}, Msg, #replay_run{strategy = sender, mode = record}) ->
    V = atomics:add_get(Ver, 1, 1),
    ok = riarc_replay_stream:record_run(?EV_SEND, V),
    {'$riarc_rv', V, Msg};
wrap(_Ver, Msg, S = #replay_run{strategy = sender, mode = replay}) ->
    V = riarc_replay_stream:take(?EV_SEND, send, S),
    {'$riarc_rv', V, Msg}.

%% @doc {'$riarc_rr', SenderSeq, Msg}: the receiver side's wrapping of every message, and
%% of a timer's message with either strategy (with its starter's next sequence number):
%% on the sender side a version taken when the timer starts would hold back every later
%% version until it fires, and for good if it is cancelled.
-spec wrap_seq(term(), #replay_run{}) -> {'$riarc_rr', non_neg_integer(), term()}.
-compile({inline, [wrap_seq/2]}).
wrap_seq(Msg, #replay_run{seq = Seq}) ->
    {'$riarc_rr', atomics:add_get(Seq, 1, 1) - 1, Msg}.

%%% Receive ------------------------------------------------------------------------------

%% @doc Woven receive. F is the fun the weaver made of the receive's clauses (see
%% {@link riarc_replay_transform}); Timeout the `after' value (infinity when there is
%% none). Returns {ClauseIndex, Message} or '$riarc_rr_timeout'.
-spec recv(fun((rec | ext | ver | match, term(), timeout()) -> term()), timeout()) ->
    {pos_integer(), term()} | '$riarc_rr_timeout'.
recv(F, Timeout) ->
    case get(?KEY) of
        undefined -> plain_recv(F, Timeout);
        S = #replay_run{mode = record, strategy = receiver} -> record_recv(F, Timeout, S);
        S = #replay_run{mode = replay, strategy = receiver} -> timed_out(replay_recv(F, Timeout, S));
        S = #replay_run{mode = record} -> riarc_replay_versions:recv(F, Timeout, S);
        S -> timed_out(riarc_replay_versions:recv(F, Timeout, S))
    end.

%% A recording's timeout is the receive's own `after' firing, which the VM shows as the
%% plain run's timeout event; a replay takes a recorded timeout without waiting, so the
%% VM shows none and the runtime marks it (riarc_replay_wait:timed_out/0).
timed_out('$riarc_rr_timeout') ->
    riarc_replay_wait:timed_out();
timed_out(Taken) ->
    Taken.

%% @doc Recording, receiver side: what a woven receive calls when it took, inline, the
%% wrapped message V whose sender and sequence number are D (the RECV data); gives V.
-spec took(non_neg_integer(), term()) -> term().
took(D, V) ->
    _ = case V of
            {timeout, _, _} -> riarc_replay_take:fired(V, get(?KEY));
            _ -> true
        end,
    ok = riarc_replay_stream:record_run(?EV_RECV, D),
    V.

%% @doc Recording: a woven receive took, inline, the plain message V; gives V.
-spec took_plain(term()) -> term().
took_plain(V) ->
    _ = case get(?KEY) of
            S = #replay_run{strategy = receiver} ->
                riarc_replay_take:record_plain(V, 0, S);
            S ->
                riarc_replay_take:record_plain(V, riarc_replay_versions:reset_count(), S)
        end,
    V.

%% @doc Recording: a woven receive's `after' fired (inline).
-spec took_timeout() -> '$riarc_rr_timeout'.
took_timeout() ->
    _ = case get(?KEY) of
            S = #replay_run{strategy = receiver} ->
                riarc_replay_stream:record_event(?EV_TIMEOUT, 0, S);
            S ->
                N = riarc_replay_versions:reset_count(),
                riarc_replay_stream:record_event(?EV_TIMEOUT, N, S)
        end,
    '$riarc_rr_timeout'.

plain_recv(F, Timeout) ->
    case F(rec, none, Timeout) of
        {K, _ExtOrD, V} -> {K, V};
        '$riarc_rr_timeout' -> '$riarc_rr_timeout'
    end.

%% The process blocks with its pending events in its own state: whoever ends it while it
%% waits writes them first (riarc_replay_stream:salvage/1).
record_recv(F, Timeout, S) ->
    case F(rec, none, Timeout) of
        {K, ext, V} ->
            _ = riarc_replay_take:record_plain(V, 0, S),
            {K, V};
        {K, D, V} ->
            {K, took(D, V)};
        '$riarc_rr_timeout' ->
            _ = riarc_replay_stream:record_event(?EV_TIMEOUT, 0, S),
            '$riarc_rr_timeout'
    end.

replay_recv(F, Timeout, S) ->
    case riarc_replay_stream:next_event(S) of
        {?EV_RECV, D} ->
            riarc_replay_take:take_wrapped(D, F, riarc_replay_stream:skip(S));
        {?EV_RECV_EXT, _} ->
            riarc_replay_take:replay_plain(F, riarc_replay_stream:skip(S));
        {?EV_TIMEOUT, _} when Timeout =/= infinity ->
            %% Recorded as timed out: no message was taken, whatever is in the mailbox.
            _ = riarc_replay_stream:skip(S),
            '$riarc_rr_timeout';
        eos ->
            end_of_recording(Timeout);
        Other ->
            riarc_replay_stream:diverge(S, riarc_replay_stream:event_name(Other),
                                        {'receive', {'after', Timeout}})
    end.

%% The recording ends in this receive: the recorded process was waiting here when the run
%% ended (a process killed while it waits has written everything before). The replaying
%% one waits here too, for good; the watchdog tells whether that is the end of the run or
%% a divergence (the root did not finish).
-spec end_of_recording(timeout()) -> no_return().
end_of_recording(Timeout) ->
    put(?WAIT, {end_of_recording, {'receive', {'after', Timeout}}}),
    receive after infinity -> exit(end_of_recording) end.

%%% Values -------------------------------------------------------------------------------

%% Recording: calls the BIF and writes its result; replay: returns the recorded result.
value(T, Fun, Encode, Decode) ->
    case get(?KEY) of
        undefined ->
            Fun();
        S = #replay_run{mode = record} ->
            V = Fun(),
            case Encode(V) of
                {ok, D} -> _ = riarc_replay_stream:record_event(T, D, S);
                side -> put(?KEY, riarc_replay_stream:record_side(T, V, S))
            end,
            V;
        S = #replay_run{mode = replay} ->
            case riarc_replay_stream:take(T, riarc_replay_stream:event_name({T, 0}), S) of
                {side, V} -> V;
                D -> Decode(D)
            end
    end.

%% @doc value/4 of a BIF whose result is an integer: written as the event's data when
%% it fits in 64 bits, else to the side table.
-spec int_value(0..255, fun(() -> integer())) -> integer().
int_value(T, Fun) ->
    value(T, Fun, fun int/1, fun id/1).

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
monotonic_time() -> int_value(?EV_MONO, fun erlang:monotonic_time/0).
%% @doc Woven `erlang:monotonic_time/1'.
-spec monotonic_time(erlang:time_unit()) -> integer().
monotonic_time(U) -> int_value(?EV_MONO, fun() -> erlang:monotonic_time(U) end).
%% @doc Woven `erlang:system_time/0'.
-spec system_time() -> integer().
system_time() -> int_value(?EV_SYSTIME, fun erlang:system_time/0).
%% @doc Woven `erlang:system_time/1'.
-spec system_time(erlang:time_unit()) -> integer().
system_time(U) -> int_value(?EV_SYSTIME, fun() -> erlang:system_time(U) end).
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
uniform(N) -> int_value(?EV_RAND_INT, fun() -> rand:uniform(N) end).
%% @doc Woven `erlang:unique_integer/0'.
-spec unique_integer() -> integer().
unique_integer() -> int_value(?EV_UNIQUE, fun erlang:unique_integer/0).
%% @doc Woven `erlang:unique_integer/1'.
-spec unique_integer([positive | monotonic]) -> integer().
unique_integer(M) -> int_value(?EV_UNIQUE, fun() -> erlang:unique_integer(M) end).

%% @doc Woven `make_ref/0'. A reference cannot be made again: the replay makes a fresh
%% one; the event holds the ref's ordinal among the process's refs, which the replay
%% checks, so a program that makes its refs in another order diverges.
-spec make_ref() -> reference().
make_ref() ->
    case get(?KEY) of
        undefined ->
            erlang:make_ref();
        S = #replay_run{mode = record, refs = N} ->
            put(?KEY, riarc_replay_stream:record_event(?EV_REF, N, S#replay_run{refs = N + 1})),
            erlang:make_ref();
        S = #replay_run{mode = replay, refs = N} ->
            case riarc_replay_stream:take(?EV_REF, {value, make_ref}, S) of
                N -> put(?KEY, (get(?KEY))#replay_run{refs = N + 1}), erlang:make_ref();
                Other -> riarc_replay_stream:diverge(S, {make_ref, Other}, {make_ref, N})
            end
    end.
