%% @doc A RIARC tracer's overload watch, apart from its loop ({@link riarc_tracer}): the
%% limits and overload policies of docs/production.md as one tracer applies them. Every
%% 1024 messages, never per event, it looks at the tracer's mailbox (`max_queue',
%% `max_queue_bytes') and at how far the partition's analysis is behind (`max_queue'),
%% holds the partition's processes back under policy backpressure and lets them go once
%% the monitor has caught up, tells the session of an overload once, refuses a tracer
%% that someone else traces (the trust boundary), and reports the tracer's counts (limit
%% `max_events', forged trace messages). The session decides what an overload costs
%% (riarc_session_overload); the watch only says so. It reads and updates the loop's
%% state (riarc_tracer_loop.hrl) and never waits.
%%
%% The counts a tracer reports, once each change, and once more as it ends:
%% ```
%% 1> Cfg = #{lambda => riarc_lambda:new(fun(_) -> undefined end), backend => riarc_backend:new(riarc_backend_evm, riarc_backend_evm:config([recv])), session => self(), checks => true, perturb => undefined, start_tracer => fun(_, _, _, _) -> error(none) end, init_from_spawn => true, self => t0}.
%% 2> {St, []} = riarc_tracer_core:init_root(Cfg, p, {m, f, []}, none).
%% 3> riarc_tracer_overload:counts(St, true).
%% []
%% 4> riarc_tracer_overload:forged(), [{riarc_counts, _, Events, Forged}] = riarc_tracer_overload:counts(St, true), {Events, Forged}.
%% {0,1}
%% 5> riarc_tracer_overload:counts(St, true).
%% []
%% '''
-module(riarc_tracer_overload).

-export([watch/2, release/1, counts/2, forged/0]).

-include("riarc_tracer_loop.hrl").

%% What the loop looks at every 1024 messages only is kept in the process dictionary,
%% not in #tracer_loop{}: the loop's record is copied on every message, so each field it carries
%% is garbage on every message (and the tracer collects with full sweeps).
%% The counts last reported to the session ({direct events, forged trace messages}).
-define(COUNTED, '$riarc_counted').
%% Forged trace messages refused so far (the core's effect `refused').
-define(FORGED, '$riarc_forged').
%% Messages to handle before the memory is read again (limit max_queue_bytes).
-define(MEM_IN, '$riarc_mem_in').

%% @doc A tracer falling behind its processes would hold their events without bound: every
%% 1024 messages it looks at its mailbox, and one longer than `max_queue', or taking more
%% than `max_queue_bytes' of memory, is an overload, reported once (the count then stops);
%% the session decides what to do (riarc_session, policy stop). Policy backpressure holds
%% the tracer's processes back first. At the same cadence, never per event (the hot
%% path), it reports its counts to the session (limit max_events, forged messages).
-spec watch(riarc_tracer_core:state(), #tracer_loop{}) -> #tracer_loop{}.
watch(_St, L = #tracer_loop{n = reported}) -> L;
watch(_St, L = #tracer_loop{n = N}) when (N + 1) band 1023 =/= 0 -> L#tracer_loop{n = N + 1};
watch(St, L0 = #tracer_loop{n = N, cfg = Cfg = #{max_queue := _}}) ->
    L1 = counts(St, maps:get(max_events, Cfg, infinity) =/= infinity, L0#tracer_loop{n = N + 1}),
    {Len, Bytes} = mailbox(L1, L1#tracer_loop.suspended =/= []),
    L = release(L1, Len, Bytes),
    %% (Released just now and reported still behind: said once.)
    case L#tracer_loop.suspended =:= [] andalso L#tracer_loop.n =/= reported andalso over_limit(Len, Bytes, 1, Cfg) of
        What = {_, _, _, _} ->
            case map_get(policy, Cfg) =:= backpressure andalso hold_back(St, L) of
                L3 = #tracer_loop{suspended = [_ | _]} -> L3;
                %% Nothing alive of its own to hold back: what waits came from
                %% processes that have ended (a short burst), or is routed from other
                %% tracers. Let it drain, up to four times the limit.
                L3 = #tracer_loop{} ->
                    case over_limit(Len, Bytes, 4, Cfg) of
                        false -> L3;
                        _ -> overloaded(What, L3)
                    end;
                false -> overloaded(What, L)
            end;
        _ -> backlog(St, traced(L))
    end;
watch(_St, L = #tracer_loop{n = N}) -> L#tracer_loop{n = N + 1}.

%% What is over its limit, `Factor' times the limit: the mailbox's length, or the
%% tracer's memory (its mailbox, off the heap, with its own state) when it was read.
over_limit(Len, Bytes, Factor, Cfg = #{max_queue := Max}) ->
    MaxBytes = maps:get(max_queue_bytes, Cfg, infinity),
    if
        Len > Factor * Max -> {mailbox, self(), Len, Max};
        is_integer(Bytes), is_integer(MaxBytes), Bytes > Factor * MaxBytes ->
            {mailbox_bytes, self(), Bytes, MaxBytes};
        true -> false
    end.

overloaded(What, L) ->
    L#tracer_loop.session ! {riarc_s, L#tracer_loop.token, {riarc_overload, self(), What}},
    L#tracer_loop{n = reported}.

%% The mailbox's length, and the tracer's memory when limit max_queue_bytes is set and
%% it is due (or Now). Reading the memory walks the mailbox (about 12 ns a message on
%% this machine: 1.2 ms for 100 000 waiting): it is read again only after as many
%% messages as the mailbox held, so that its cost stays a few ns a message however long
%% the mailbox is (a length check every 1024 messages, a memory read every
%% max(1024, length) messages).
mailbox(#tracer_loop{cfg = Cfg}, Now) ->
    In = get_int(?MEM_IN),
    case maps:get(max_queue_bytes, Cfg, infinity) of
        MaxBytes when is_integer(MaxBytes), Now orelse In =< 1024 ->
            [{message_queue_len, Len}, {memory, Bytes}] =
                process_info(self(), [message_queue_len, memory]),
            put(?MEM_IN, Len),
            {Len, Bytes};
        _ ->
            {message_queue_len, Len} = process_info(self(), message_queue_len),
            put(?MEM_IN, In - 1024),
            {Len, unknown}
    end.

get_int(Key) ->
    case get(Key) of
        undefined -> 0;
        N -> N
    end.

%% The session's limit max_events and its count of forged messages: the tracer's counts,
%% when they have changed since its last report. One message every 1024 the tracer
%% handles at most, and one as it ends. With no event budget (the default), a change of
%% the event count alone is told only as the tracer ends: the session is not woken every
%% 1024 events for a count nothing checks.
counts(St, Events, L) ->
    _ = [L#tracer_loop.session ! {riarc_s, L#tracer_loop.token, M} || M <- counts(St, Events)],
    L.

%% @doc The report of the counts, if it is due ([] or one message). Events: whether a
%% change of the event count alone is due (the tracer's end, or an event budget set).
-spec counts(riarc_tracer_core:state(), boolean()) ->
    [{riarc_counts, pid(), non_neg_integer(), non_neg_integer()}].
counts(St, Events) ->
    Old = {_, OldForged} = case get(?COUNTED) of undefined -> {0, 0}; C -> C end,
    case {riarc_tracer_core:collected(St), get_int(?FORGED)} of
        Old -> [];
        {_, OldForged} when not Events -> [];
        New = {Taken, Forged} ->
            put(?COUNTED, New),
            [{riarc_counts, self(), Taken, Forged}]
    end.

%% A monitor slower than its partition's events: the events handed to it and not yet
%% analysed wait in its mailbox; more than the limit is an overload the session deals
%% with by its policy (stop: detach everything; shed: this partition alone).
backlog(_St, L = #tracer_loop{clock = undefined}) -> L;
backlog(_St, L = #tracer_loop{suspended = [_ | _]}) -> L;
backlog(St, L = #tracer_loop{analysis = An, clock = Clock, events = N, cfg = Cfg = #{max_queue := Max}})
  when is_pid(An) ->
    case N - riarc_analysis:steps(Clock) of
        Behind when Behind > Max ->
            case map_get(policy, Cfg) =:= backpressure andalso hold_back(St, L) of
                L1 = #tracer_loop{suspended = [_ | _]} -> L1;
                %% Race: the partition's processes have all ended (a short burst):
                %% the backlog cannot grow any more, the monitor catches up with it.
                #tracer_loop{} -> L;
                false -> over(Behind, L)
            end;
        _ -> L
    end;
backlog(_St, L) -> L.

over(Behind, L = #tracer_loop{cfg = #{max_queue := Max}}) ->
    L#tracer_loop.session ! {riarc_s, L#tracer_loop.token, {riarc_overload, self(), {analysis, self(), Behind, Max}}},
    L#tracer_loop{clock = undefined}.

%% Policy backpressure: the processes this tracer traces directly are suspended until
%% their monitor is back under half the limit, for at most `max_suspend' ms at a time;
%% past that the partition is shed as under policy shed (its processes resumed first).
%% Never an outage: the VM resumes whatever a process suspended when that process ends,
%% so a tracer that dies or is killed leaves nothing suspended.
hold_back(St, L) ->
    Ps = [P || P <- riarc_tracer_core:gamma(St), is_pid(P), node(P) =:= node(),
               try erlang:suspend_process(P) catch error:badarg -> false end],
    case Ps of
        [] -> L;
        _ -> L#tracer_loop{suspended = Ps, since = erlang:monotonic_time(millisecond)}
    end.

%% @doc Policy backpressure, as the tracer's mailbox runs empty: the processes held back
%% go on once their monitor has caught up, or once their time is over. The loop calls it
%% then, and every ?POLL_MS while they are held (riarc_tracer): suspended, they send
%% few messages, so the watch's 1024 would be long in coming.
-spec release(#tracer_loop{}) -> #tracer_loop{}.
release(L = #tracer_loop{suspended = []}) -> L;
release(L) ->
    {Len, Bytes} = mailbox(L, true),
    release(L, Len, Bytes).

release(L = #tracer_loop{suspended = []}, _Len, _Bytes) -> L;
release(L = #tracer_loop{suspended = Ps, since = Since, cfg = #{max_queue := Max} = Cfg}, Len, Bytes) ->
    Behind = behind(L),
    Mailbox = over_limit(Len, Bytes, 0.5, Cfg),
    Caught = Behind =< Max div 2 andalso Mailbox =:= false,
    case Caught orelse erlang:monotonic_time(millisecond) - Since > maps:get(max_suspend, Cfg, 1000) of
        false -> L;
        true ->
            _ = [catch erlang:resume_process(P) || P <- Ps],
            %% Held back since: 0 again once caught up; a tracer still behind after
            %% its time is an overload (monitor: shed; its own mailbox: stop).
            L1 = L#tracer_loop{suspended = [], since = 0},
            if
                Caught -> L1;
                Behind > Max div 2, L1#tracer_loop.clock =/= undefined -> over(Behind, L1);
                true -> overloaded(Mailbox, L1)
            end
    end.

behind(#tracer_loop{clock = undefined}) -> 0;
behind(#tracer_loop{clock = Clock, events = N}) -> N - riarc_analysis:steps(Clock).

%% Trust boundary: a tracer that someone else traces (the system's own `dbg:p(all, ...)')
%% would hand that tracer an event for every message it takes, events the system's
%% tracing may well send back to riarc: a feedback loop. Refused: the session detaches
%% from the whole system and says why (`{traced, Tracer, By}').
%% One tracer is not someone else: a `new_processes' session's root tracer, the adopter,
%% traces every process started after the attach point, riarc's own tracers too, for
%% their spawn and exit events only (riarc_backend_new_processes), which it drops.
traced(L = #tracer_loop{session = Session, token = Token, cfg = #{root_tracer := Root}}) ->
    case erlang:trace_info(self(), tracer) of
        {tracer, []} -> L;
        {tracer, Root} -> L;
        {tracer, By} ->
            Session ! {riarc_s, Token, {riarc_overload, self(), {traced, self(), By}}},
            L#tracer_loop{n = reported};
        undefined -> L
    end.

%% @doc Trust boundary: a forged trace message refused (one without the session's token,
%% or the core's effect `refused'), counted for the next report.
-spec forged() -> ok.
forged() ->
    put(?FORGED, get_int(?FORGED) + 1),
    ok.
