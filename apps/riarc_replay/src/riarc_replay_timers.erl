%% @doc Timers in a record &amp; replay run: woven code (see {@link riarc_replay_transform})
%% calls the function of the same name for `erlang:send_after/3,4', `start_timer/3,4',
%% `cancel_timer/1,2', `read_timer/1,2', and `timer_' and the name for
%% `timer:send_after/2,3', `send_interval/2,3', `apply_after/4', `apply_interval/4',
%% `cancel/1'. A timer's message is sent as a message of the process that started it
%% ({@link riarc_replay_rt}); what a program learns of a timer (time left, an absolute
%% timer's delay) is recorded in its stream. Outside a run each function does what the
%% plain one does.
%% ```
%% 1> R = riarc_replay_timers:start_timer(60000, self(), t), riarc_replay_timers:read_timer(R) > 0.
%% true
%% 2> riarc_replay_timers:cancel_timer(R, [{info, false}]).
%% ok
%% 3> riarc_replay_timers:read_timer(R).
%% false
%% 4> {ok, _} = riarc_replay_timers:timer_send_after(0, self(), hi), receive hi -> got end.
%% got
%% '''
-module(riarc_replay_timers).

-export([send_after/3, send_after/4, start_timer/3, start_timer/4,
         cancel_timer/1, cancel_timer/2, read_timer/1, read_timer/2,
         timer_send_after/2, timer_send_after/3, timer_cancel/1, timer_send_interval/2,
         timer_send_interval/3, timer_apply_after/4, timer_apply_interval/4]).

-include("riarc_replay_rt.hrl").

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
    erlang:send_after(D, Pid, riarc_replay_rt:wrap_seq(Msg, S));
wrapped_timer(start_timer, D, Pid, Msg, S = #replay_run{tab = Tab}) ->
    Ref = erlang:make_ref(),
    Real = erlang:send_after(D, Pid, riarc_replay_rt:wrap_seq({timeout, Ref, Msg}, S)),
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
        _ -> _ = riarc_replay_rt:send(Dest, Msg), {ok, {instant, erlang:make_ref()}}
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
    _ = riarc_replay_rt:send(Pid, '$riarc_rr_cancel'),
    Down = fun(match, {'DOWN', R, process, _, _}, _) when R =:= MRef -> 1;
              (match, _, _) -> 0;
              (_Op, _, Tmo) ->
                   receive {'DOWN', MRef, process, _, _} = V -> {1, ext, V}
                   after Tmo -> '$riarc_rr_timeout'
                   end
           end,
    {1, _} = riarc_replay_rt:recv(Down, infinity),
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
            case riarc_replay_rt:peer(Dest, S) of
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
    Pid = riarc_replay_rt:spawn(spawn, fun() -> ticker_init(T, Action, Repeat, Tied) end, []),
    {ok, {riarc_ticker, Pid}}.

ticker_init(T, Action, Repeat, Tied) ->
    MRef = case Tied of
               none -> none;
               _ -> erlang:monitor(process, Tied)
           end,
    ticker_loop(T, Action, Repeat, ticker_receive(MRef)).

ticker_loop(T, Action, Repeat, F) ->
    case riarc_replay_rt:recv(F, T) of
        '$riarc_rr_timeout' ->
            _ = case Action of
                    {send, Dest, Msg} -> catch riarc_replay_rt:send(Dest, Msg);
                    {apply, M, Fn, A} -> riarc_replay_rt:spawn(spawn, {M, Fn, A}, [])
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
                {'$riarc_rr', D, '$riarc_rr_cancel' = V} when Op =/= ext -> {1, D, V};
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
        false when Real =:= Ref ->
            Probe = riarc_replay_wait:probe(),
            receive
                {timeout, Ref, _} -> riarc_replay_wait:drop_probe(Probe), true;
                {?PROBE, Probe} -> true
            end;
        _ -> true
    end.

%% The receiver, when it takes part in the run (see above).
timer_peer(Dest) ->
    case get(?KEY) of
        S = #replay_run{} ->
            case riarc_replay_rt:peer(Dest, S) of
                {Pid, _Info} -> {Pid, S};
                false -> false
            end;
        _ -> false
    end.

%% The timer's delay from now: relative as given; absolute (`{abs, true}') recorded,
%% since the program's time values in a replay are the recording's.
delay(T, Opts) ->
    case proplists:get_value(abs, Opts, false) of
        false -> T;
        true ->
            Left = fun() -> max(0, T - erlang:monotonic_time(millisecond)) end,
            riarc_replay_rt:int_value(?EV_DELAY, Left)
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
    Left = fun() ->
                   case Fun() of
                       false -> -1;
                       N -> N
                   end
           end,
    case riarc_replay_rt:int_value(?EV_TIMER, Left) of
        -1 -> false;
        N -> N
    end.
