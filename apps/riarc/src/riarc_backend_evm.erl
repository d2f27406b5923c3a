%% @doc The online tracing backend: TRACE, CLEAR and PREEMPT (Alg. 5) over the VM's own
%% process tracing, `erlang:trace/3' with `set_on_spawn' (tracing inheritance, A2).
%%
%% The VM allows one tracer per process (A3), so PREEMPT hands a process over by
%% suspending it, switching its tracer and resuming it; while it is suspended it produces
%% no events, and on OTP 25 'receive' events are produced by the receiver when it takes
%% a message into its queue, so messages that arrive meanwhile are traced afterwards, to
%% the new tracer (checked by riarc_backend_evm_tests with thousands of messages in
%% flight). CLEAR then waits with `erlang:trace_delivered/1' until every trace message
%% the process produced before the switch sits in the old tracer's mailbox. A takeover
%% never gives a process back what it lost (a flag, or its tracer to someone else): the
%% new tracer's look finds that, and the partition's view is cut.
%% ```
%% 1> C = riarc_backend_evm:config([send, recv]).
%% 2> riarc_backend_evm:flags(C).
%% [procs,set_on_spawn,send,'receive']
%% '''
-module(riarc_backend_evm).
-behaviour(riarc_backend).

-export([config/1, calls/1, flags/1, new/3, close/1, spawn_paused/1, launch/3, trace/3, preempt/3,
         tracer/0, taking_over/2, clear/3, event/2, watching/3, untraced/3, fold_looked/5, why_lost/2,
         format_error/1]).
%% Spawned entry point.
-export([paused_root/1]).
-export_type([config/0, error_reason/0]).

-type error_reason() :: {already_traced, pid(), term()} | {noproc, pid()}.

%% Marks riarc's tracer processes (tracer/0).
-define(TRACER_MARK, '$riarc_tracer').
%% The mark of the tracer of new processes, and of each process it announced, in its
%% process dictionary (riarc_backend_new_processes, which sets both).
-define(ADOPTER, '$riarc_adopter').

-opaque config() :: #{flags := [atom()], patterns => reference(), had => [atom()]}.

%% @doc A configuration tracing spawn and exit always, and the message events asked for.
-spec config([send | recv]) -> config().
config(Events) ->
    Extra = [send || lists:member(send, Events)] ++ ['receive' || lists:member(recv, Events)],
    #{flags => [procs, set_on_spawn | Extra]}.

%% @doc The backend of a session: config/1, tracing only the sent and received messages
%% Patterns keep (see riarc_trace_pattern; node-global, held until close/1 or until
%% Session ends).
-spec new([send | recv], riarc_trace_pattern:patterns(), pid()) -> {ok, riarc_backend:t()}.
new(Events, Patterns, Session) ->
    Key = make_ref(),
    ok = riarc_trace_pattern:hold(Key, Session, Patterns),
    %% A session's processes also show their starts of processes on other nodes
    %% (remote_spawn, see riarc_backend_route:new/3).
    {ok, riarc_backend:new(?MODULE, (calls(config(Events)))#{patterns => Key})}.

%% @doc Config, with the traced processes' calls of the functions riarc holds call
%% patterns on (riarc_trace_pattern) shown as events: starts on other nodes, calls that
%% change tracing, timers set to send the atom `timeout' (call_event/2).
-spec calls(config()) -> config().
calls(Config = #{flags := Flags}) ->
    Config#{flags => Flags ++ [call]}.

%% @doc The session is over: its message patterns are let go.
-spec close(config()) -> ok.
close(#{patterns := Key}) -> riarc_trace_pattern:release(Key);
close(#{}) -> ok.

%% @doc The trace flags the configuration sets on a traced process.
-spec flags(config()) -> [atom()].
flags(#{flags := Flags}) -> Flags.

%% @doc Alg. 6 START: spawns the system's root process, paused until its tracer launches it.
-spec spawn_paused({module(), atom(), list()}) -> pid().
spawn_paused(MFA) ->
    spawn(?MODULE, paused_root, [MFA]).

%% @private The paused root: once its tracer says go, it turns its own tracing on, so that
%% nothing it does afterwards escapes, and the `go' itself is not in its trace (the pitfall
%% of starting a traced root by a message); then it runs the system's main function.
-spec paused_root({module(), atom(), list()}) -> term().
paused_root({M, F, A}) ->
    receive
        {riarc_go, Tracer, Config} ->
            ok = trace(Config, self(), Tracer),
            apply(M, F, A)
    end.

%% @doc Alg. 6 ROOT: resume the paused root, traced by T. A root some other tool traces
%% already (a `dbg:p(new, ...)', say) cannot be traced by T: an error, and the root ends.
-spec launch(config(), pid(), pid()) -> ok | {error, {riarc_backend_evm, error_reason()}}.
launch(Config, Root, T) ->
    case erlang:trace_info(Root, tracer) of
        {tracer, []} ->
            Root ! {riarc_go, T, Config},
            ok;
        {tracer, Other} ->
            exit(Root, kill),
            {error, {?MODULE, {already_traced, Root, Other}}};
        undefined ->
            {error, {?MODULE, {noproc, Root}}}
    end.

%% @doc A sentence for an error of this backend.
-spec format_error(error_reason()) -> string().
format_error({already_traced, Pid, Tracer}) ->
    lists:flatten(io_lib:format("process ~p is already traced by ~p: the VM allows one tracer "
                                "per process", [Pid, Tracer]));
format_error({noproc, Pid}) ->
    lists:flatten(io_lib:format("process ~p is not alive", [Pid])).

%% @doc TRACE(S, T). Called by S itself at launch (Alg. 6), or by T.
-spec trace(config(), pid(), pid()) -> ok.
trace(#{flags := Flags}, S, T) ->
    _ = catch erlang:trace(S, true, [{tracer, T} | Flags]),
    ok.

%% What S is traced by as a takeover finds it: one of riarc's tracers (tracer/0, or T
%% itself), or anything else (nobody, another tool's tracer, a tracer that has ended).
%% The tracer of new processes (riarc_backend_new_processes) holds only the processes it
%% announced: one it traces through the VM's defaults whose parent's tracer handled its
%% spawn (the parent turned off its own `set_on_spawn') is nobody's, and its events so
%% far are there, where no takeover gets them (taken, its monitor would read its trace
%% from the middle).
holder(S, T) ->
    case catch erlang:trace_info(S, tracer) of
        {tracer, T} ->
            {riarc, T};
        {tracer, Old} when is_pid(Old) ->
            case erlang:process_info(Old, dictionary) of
                {dictionary, D} ->
                    Holds = lists:keymember(?TRACER_MARK, 1, D)
                        andalso (not lists:member({?ADOPTER, true}, D)
                                 orelse lists:member({{?ADOPTER, S}, true}, D)),
                    case Holds of
                        true -> {riarc, Old};
                        false -> other
                    end;
                undefined -> other
            end;
        _ -> other
    end.

%% @doc The calling process is one of riarc's tracers, whose processes a takeover may
%% move to another tracer (preempt/3): riarc_tracer calls it as each starts.
-spec tracer() -> ok.
tracer() ->
    _ = put(?TRACER_MARK, true),
    ok.

%% @doc Config, for takeovers of processes whose tracer gave them at least Had and not
%% all of Config's flags (the VM's defaults for new processes,
%% riarc_backend_new_processes): a process showing Had is taken over whole.
-spec taking_over(config(), [atom()]) -> config().
taking_over(Config, Had) ->
    Config#{had => Had}.

%% @doc PREEMPT(S, T): T takes S over, then waits until S's earlier events are delivered.
-spec preempt(config(), pid(), pid()) -> ok.
preempt(Config = #{flags := Flags}, S, T) ->
    wait_started(S, 1000),
    %% Asked before S is suspended: the answer needs the old tracer to run.
    Holder = holder(S, T),
    %% The system process is suspended only for the switch. The tracer doing it runs at
    %% high priority meanwhile, so that the scheduler does not move on to the thousands of
    %% other runnable processes of a loaded system, leaving S suspended for a whole round.
    %% Measured (burst, n = 5000, w = 100, instrumentation alone): mean response time
    %% 9.2 ms at normal priority, see docs/core.md for after.
    Prio = process_flag(priority, high),
    try catch erlang:suspend_process(S) of
        true ->
            try
                %% A takeover moves S's tracing to T; it never adds to what S lost.
                %% S may have lost flags before (its parent had turned off set_on_spawn,
                %% someone took them): set whole, S would be traced from here on, its
                %% earlier events never seen, and its monitor would read the rest as
                %% its whole trace (a false accept over evm, found by the differential
                %% oracle). So S keeps only those it still has, and T's look finds what
                %% is missing and cuts the partition's view, as the routing table's
                %% takeover leaves it. Nor is S taken from a tracer that is not riarc's
                %% (someone replaced it): what S did meanwhile went there; left to it,
                %% T's look finds the tracer replaced.
                %% Race: S's tracer may have changed since holder/2 asked: then it is
                %% left as it is now, for the look.
                case {Holder, catch erlang:trace_info(S, tracer)} of
                    {{riarc, Old}, {tracer, Old}} ->
                        Kept = kept(Config, Flags, catch erlang:trace_info(S, flags)),
                        _ = catch riarc_untrace:untrace(S),
                        _ = Kept =/= [] andalso (catch erlang:trace(S, true, [{tracer, T} | Kept]));
                    _ ->
                        ok
                end
            after
                catch erlang:resume_process(S)
            end;
        _ ->
            %% S is already dead: all its events, its exit included, went to the old
            %% tracer, and reach T routed.
            ok
    after
        process_flag(priority, Prio)
    end,
    await_delivered(S),
    %% Race: on OTP 25 under load, events of a young process's first scheduling slice
    %% were seen reaching the old tracer after trace_delivered/1 had answered (see
    %% docs/core.md, "Late events under load"). A second barrier a little later caught
    %% them in our measurements; it costs the new tracer 2 ms, not the system.
    receive after 2 -> ok end,
    await_delivered(S).

%% The flags a takeover gives S, shown Now: all of riarc's when S shows every flag its
%% tracer gave it (Had: all of riarc's, or the new processes' defaults), else the ones of
%% riarc's it still has.
kept(Config, Flags, {flags, Now}) ->
    case maps:get(had, Config, Flags) -- Now of
        [] -> Flags;
        _ -> [F || F <- Flags, lists:member(F, Now)]
    end;
kept(_Config, Flags, _) ->
    Flags.

%% Race: a process spawned but not yet scheduled has not taken on its trace settings: if
%% its tracer is switched then, its first events (its `spawned' event, its first send)
%% can still go to the old tracer, after trace_delivered/1 has answered, and so behind
%% the detach request. Measured: with 4000 fresh workers each taken over at once on a
%% loaded 2-core machine, 7 of 12 runs delivered 6 to 69 such late events to the old
%% tracer; waiting until the process has run (reductions > 0) before switching brought
%% that to 1 run in 8 (5 events), and backing off by the millisecond rather than only
%% yielding (a loaded machine may not schedule the process within a few yields) removed
%% the cases seen in the property-flags test. Bounded (about a second), so a process that
%% is never scheduled cannot hold its new tracer for ever.
%% A process that has never run is runnable with no reductions; one that ran and
%% blocked in a receive (most processes, soon after they start) is waiting.
wait_started(S, Tries) when Tries > 0 ->
    case erlang:process_info(S, [reductions, status]) of
        [{reductions, 0}, {status, runnable}] ->
            backoff(Tries),
            wait_started(S, Tries - 1);
        _ -> ok
    end;
wait_started(_S, 0) ->
    ok.

%% A runnable process gets a scheduler soon, but on a loaded machine not within a few
%% yields: after ten, wait a millisecond at a time (at most about a second in all).
backoff(Tries) when Tries > 990 -> erlang:yield();
backoff(_Tries) -> receive after 1 -> ok end.

%% @doc CLEAR(S, T): stop tracing S, and wait for its events in flight.
-spec clear(config(), pid(), pid()) -> ok.
clear(_Config, S, _T) ->
    _ = catch riarc_untrace:untrace(S),
    await_delivered(S).

%% Race: trace messages of S still travelling to its old tracer when the switch happens
%% would otherwise arrive behind the detach request the caller sends next.
await_delivered(S) ->
    Ref = erlang:trace_delivered(S),
    receive {trace_delivered, S, Ref} -> ok end.

%% @doc Cut detection for a process tracer that keeps its own book of live processes
%% (the offline recorder, centralised monitoring): of Pids, the ones the calling process
%% no longer traces (another tracer, none, or ended), once every trace message the VM made
%% so far has been taken, each folded into Acc with Take: a dead one's exit, or a live
%% one's events from before its flags went, is taken first. Those the book still holds
%% after that will show no exit.
-spec untraced([pid()], fun((term(), A) -> A), A) -> {[pid()], A}.
untraced(Pids, Take, Acc) ->
    Self = self(),
    case [P || P <- Pids, erlang:trace_info(P, tracer) =/= {tracer, Self}] of
        [] -> {[], Acc};
        Lost ->
            DRef = erlang:trace_delivered(all),
            {Lost, delivered(DRef, Take, Acc)}
    end.

%% Of Pids, those the calling process, their tracer as Config set them up, no longer
%% traces so, with why (riarc_backend:compare_view/3): a look, as a live tracer's.
-spec looked([pid()], config()) -> [{pid(), {flags_removed | tracer_replaced, term()}}].
looked(Pids, #{flags := Flags}) ->
    [{P, Why} || P <- Pids, Why <- [riarc_backend:compare_view(P, Flags, self())], Why =/= ok].

%% @doc A look (looked/2) folded over Acc: Cut(P, Why, Acc) for each of Pids found no
%% longer traced so, then Gone(P, Acc) for one that lost the flag of its exit event (it
%% will show none).
-spec fold_looked([pid()], config(), fun((pid(), {flags_removed | tracer_replaced, term()}, A) -> A),
                  fun((pid(), A) -> A), A) -> A.
fold_looked(Pids, Config, Cut, Gone, Acc0) ->
    lists:foldl(fun({P, Why}, Acc) ->
                        Acc1 = Cut(P, Why, Acc),
                        case riarc_trace_pattern:exit_to_come(Why) of
                            true -> Acc1;
                            false -> Gone(P, Acc1)
                        end
                end, Acc0, looked(Pids, Config)).

%% @doc Why P, found no longer traced by the calling process (untraced/3), will show no
%% exit: what it shows now, or, ended, that its flags went before its end.
-spec why_lost(pid(), config()) -> {flags_removed | tracer_replaced, term()}.
why_lost(P, #{flags := Flags}) ->
    case riarc_backend:compare_view(P, Flags, self()) of
        ok -> {flags_removed, []};
        Lost -> Lost
    end.

delivered(DRef, Take, Acc) ->
    receive
        {trace_delivered, all, DRef} -> Acc;
        Msg -> delivered(DRef, Take, Take(Msg, Acc))
    end.

%% @doc Cut detection: S still has every flag this backend set and T as its tracer.
-spec watching(config(), riarc_event:sid(), pid()) -> ok | {flags_removed | tracer_replaced, term()}.
watching(#{flags := Flags}, S, T) ->
    riarc_backend:compare_view(S, Flags, T).

%% @doc Decodes the VM's trace messages into riarc events.
-spec event(config(), term()) -> {ok, riarc_backend:decoded()} | skip | no.
event(_, {trace, P, send, Msg, To}) -> {ok, {send, P, To, Msg}};
event(_, {trace, P, 'receive', Msg}) -> {ok, {recv, P, Msg}};
%% A receive timeout, marked by riarc's receive pattern (riarc_route:receive_pattern/1,
%% installed by riarc_trace_pattern): the mark comes as a fifth element.
event(_, {trace, P, 'receive', timeout, clock_service}) -> {ok, {timeout, P}};
%% Any other message from the clock service is a timer's (erlang:send_after/3,4,
%% start_timer/3,4): a message like any.
event(_, {trace, P, 'receive', Msg, clock_service}) -> {ok, {recv, P, Msg}};
event(_, {trace, P, spawn, C, MFA}) -> {ok, {spawn, P, C, riarc_lambda:logical_mfa(MFA)}};
event(_, {trace, C, spawned, P, MFA}) -> {ok, {init, C, P, riarc_lambda:logical_mfa(MFA)}};
event(_, {trace, P, exit, Reason}) -> {ok, {exit, P, Reason}};
event(_, {trace, P, call, Call}) -> {ok, riarc_trace_pattern:call_event(P, Call)};
event(_, {trace, P, send_to_non_existing_process, Msg, To}) -> {ok, {send, P, To, Msg}};
event(_, Msg) when element(1, Msg) =:= trace; element(1, Msg) =:= trace_ts -> skip;
event(_, _) -> no.
