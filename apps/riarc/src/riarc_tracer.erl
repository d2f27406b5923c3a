%% @doc The RIARC tracer process: a thin loop around the algorithm in
%% {@link riarc_tracer_core}. It takes its mailbox in arrival order, hands each message
%% to the core and carries out the effects the core asks for (sends, PREEMPT and CLEAR
%% through the backend, starting tracers, starting its partition's analysis process
%% ({@link riarc_analysis}) and handing it the partition's events in batches, never
%% waiting for it; the limits and overload policies it applies are in
%% docs/production.md). Tracers are started by {@link riarc_session}
%% (the root, Alg. 6 ROOT) and by each other (Alg. 4 TRACER), with proc_lib, so a crash
%% is reported; each monitors its session and, if the session goes, stops tracing its
%% processes and ends.
%%
%% Users do not call this module; they watch its work through {@link riarc}:
%% ```
%% 1> {ok, S} = riarc:start({riarc_demo_pqr, p, []}, fun(_) -> {ok, fun M(_) -> M end} end, #{}).
%% 2> riarc:alive(S).
%% #{processes => [...], tracers => [...]}
%% '''
-module(riarc_tracer).

-export([start_root/4, info/3, settle/3, stop/2, of_session/2]).
%% Spawned entry points.
-export([root_init/4, tracer_init/5]).

-export_type([cfg/0]).

%% A tracer that falls behind (the master's, under load) holds a long mailbox of trace
%% messages. Kept on the heap, every garbage collection of the tracer would copy that
%% whole mailbox again; off the heap, a collection touches only the tracer's own state.
%% Measured on the load driver: see "What a tracer costs" in docs/core.md.
%% A tracer's live data is small and its garbage short-lived, so every collection sweeps
%% fully (docs/core.md, "What a tracer costs").
-define(TRACER_OPTS, [{message_queue_data, off_heap}, {fullsweep_after, 0}]).
%% Except the root tracer's, whose live data is the system's: the partitions it adopts
%% (with monitors in their tracers, every monitored partition of a system it started), and
%% with short routes the events of every process whose tracer is not in place yet. Its
%% heap is generational, swept fully only when its old generation is full: a sweep every
%% tenth collection copied every adopted partition again and again (chains 100 x 100:
%% docs/evaluation.md, "The session's tail and the root tracer's collections").
-define(ROOT_OPTS, [{message_queue_data, off_heap}]).
-define(BATCH, 64).
-define(POLL_MS, 10).

%% What the session gives a tracer: the core's configuration less what each tracer
%% fills in for itself (its own name, how to start others).
-type cfg() :: #{lambda := riarc_lambda:t(),
                 backend := riarc_backend:t(),
                 session := pid(),
                 checks := boolean(),
                 perturb := undefined | pos_integer() | {gate, pid()},
                 explain => non_neg_integer(),
                 max_queue => pos_integer(),
                 max_queue_bytes => pos_integer() | infinity,
                 max_events => pos_integer() | infinity,
                 max_payload => pos_integer() | infinity,
                 monitor_budget => map(),
                 atom() => term()}.

%% The loop's own state around the core's: the session's monitor, the message count
%% for the mailbox watch, and the partition's analysis process (undefined when the
%% partition has none, or once it has ended: the monitor has its verdict or was
%% detached over its budget).
-record(tracer_loop, {sref :: reference(),
            cfg :: map(),
            %% Trust boundary: what goes to the session carries its token.
            session :: pid(),
            token :: reference() | undefined,
            n = 0 :: non_neg_integer() | reported,
            %% Or, for a partition relayed to its root's remote parent's session (one
            %% partition spanning nodes, the core's effect relay): where its events go.
            analysis :: undefined | pid() | relay(),
            analysis_key :: undefined | riarc_analysis:key(),   % its messages carry it
            aref :: undefined | reference(),
            %% The analysis's step clock: how far it is behind (undefined once its
            %% backlog was reported).
            clock :: undefined | riarc_analysis:clock(),
            %% The partition's events so far: if riarc ends its analysis (shed), the
            %% session counts from it what was not analysed.
            events = 0 :: non_neg_integer(),
            %% Events for the analysis not sent yet, newest first: they go in one message
            %% when the mailbox is empty or ?BATCH of them wait (a tracer that falls
            %% behind sends its monitor fewer, larger messages).
            buf = [] :: [riarc_event:event()],
            nbuf = 0 :: non_neg_integer(),
            %% Policy backpressure: the partition's processes this tracer suspended
            %% while its monitor catches up, and since when (ms).
            suspended = [] :: [pid()],
            since = 0 :: integer(),
            max_payload = infinity :: pos_integer() | infinity,
            %% Cut detection: the timer of the next look at how the VM traces this
            %% tracer's processes (?VIEW_CHECK_MS).
            view_timer :: reference() | undefined}).

%% How often a tracer looks at its processes' flags and tracer.
-define(VIEW_CHECK_MS, 1000).

%% The partition's root and its remote parent; where to, from the cfg's relay_to.
-type relay() :: {relay, pid(), pid()}.

%% What the loop looks at every 1024 messages only is kept in the process dictionary,
%% not in #tracer_loop{}: the loop's record is copied on every message, so each field it carries
%% is garbage on every message (and the tracer collects with full sweeps).
%% The counts last reported to the session ({direct events, forged trace messages}).
-define(COUNTED, '$riarc_counted').
%% Forged trace messages refused so far (the core's effect `refused').
-define(FORGED, '$riarc_forged').
%% Messages to handle before the memory is read again (limit max_queue_bytes).
-define(MEM_IN, '$riarc_mem_in').

%%% ---------------------------------------------------------------------------
%%% Starting tracers
%%% ---------------------------------------------------------------------------

%% @doc Alg. 6 ROOT: a tracer in direct mode for the root process Root. It sets up its
%% monitor, feeds it Root's init event when the backend has none of its own to give, and
%% has the backend launch the paused system; it tells the session
%% `{riarc_launched, self(), ok | {error, Reason}}'.
-spec start_root(cfg(), riarc_event:sid(), riarc_event:mfa_args(),
                 riarc_event:event() | none) -> pid().
start_root(Cfg, Root, MFA, Init) ->
    proc_lib:spawn_opt(?MODULE, root_init, [Cfg, Root, MFA, Init],
                       [{priority, riarc_opts:priority(Cfg)} | ?ROOT_OPTS]).

%% @private
-spec root_init(cfg(), riarc_event:sid(), riarc_event:mfa_args(),
                riarc_event:event() | none) -> no_return().
root_init(Cfg0 = #{backend := Backend, session := Session}, Root, MFA, Init) ->
    Cfg = (core_cfg(Cfg0))#{root => true},
    Ref = monitor(process, Session),
    {St, Fx} = riarc_tracer_core:init_root(Cfg, Root, MFA, Init),
    %% A system riarc started waits paused for its tracer (launch); a process riarc
    %% attaches to is already running, and is traced from here on (its trace's suffix).
    Launch = case Init of
                 {attached, _, _} -> riarc_backend:trace(Backend, Root, self());
                 _ -> riarc_backend:launch(Backend, Root, self())
             end,
    L = loop_state(Ref, Cfg),
    case Launch of
        ok ->
            %% The root's partition and its analysis process are announced before the
            %% launch is: once start/3 returns, the session knows them.
            L1 = effects(Fx, L, St),
            to_session(Cfg, {riarc_launched, self(), ok}),
            loop(St, L1);
        {error, {_, {noproc, _}}} when element(1, Init) =:= attached ->
            %% Race: the process exited between the attach point and its tracing; its
            %% partition ends with what it had, the attached event.
            to_session(Cfg, {riarc_launched, self(), ok}),
            {St1, Fx1} = riarc_tracer_core:handle({riarc_ctl, self(), make_ref(), ctl(Cfg, stop)}, St),
            effects(Fx ++ Fx1, L, St1);
        {error, Reason} ->
            to_session(Cfg, {riarc_launched, self(), {error, Reason}}),
            exit(normal)
    end.

%% @private Alg. 4 TRACER: a tracer for S, started by the tracer that handled S's spawn.
-spec tracer_init(cfg(), riarc_monitor:monitor(), riarc_event:sid(), riarc_event:mfa_args(),
                  pid()) -> no_return().
tracer_init(Base = #{session := Session}, Mon, S, MFA, Disp) ->
    %% proc_lib gives each process its spawner's ancestors plus the spawner: down a chain
    %% of tracers that list grows by one per generation and is copied into every spawn.
    %% Kept to the spawner and the session (of_session/2 looks for it).
    put('$ancestors', [hd(get('$ancestors')), Session]),
    Cfg = tracer_cfg(Base),
    Ref = monitor(process, Session),
    {St, Fx} = riarc_tracer_core:init_tracer(Cfg, Mon, S, MFA, Disp),
    loop(St, effects(Fx, loop_state(Ref, Cfg), St)).

loop_state(SRef, Cfg = #{session := Session}) ->
    #tracer_loop{sref = SRef, cfg = Cfg, session = Session, token = maps:get(token, Cfg, undefined),
       max_payload = maps:get(max_payload, Cfg, infinity),
       view_timer = erlang:start_timer(?VIEW_CHECK_MS, self(), riarc_view_check)}.

%% Cut detection, at a low rate: a process of this tracer's that the VM no longer traces
%% as the backend set it up (flags taken, another tracer), by someone riarc does not trace
%% (a traced process's own call is seen at once, as its call event).
view_check(St, #{backend := Backend}) ->
    lists:foldl(fun(S, {St0, Fx0}) ->
                        case riarc_backend:watching(Backend, S, self()) of
                            ok -> {St0, Fx0};
                            Why ->
                                {St1, Fx1} = riarc_tracer_core:view_lost(S, Why, St0),
                                {St1, Fx0 ++ Fx1}
                        end
                end, {St, []}, [S || S <- riarc_tracer_core:gamma(St), is_pid(S)]).

%% A message to the session, with its token: the session takes nothing else.
to_session(#{session := Session} = Cfg, Msg) ->
    Session ! {riarc_s, maps:get(token, Cfg, undefined), Msg},
    ok.

%% A control request as the core takes it.
ctl(#{token := T}, Req) -> {T, Req};
ctl(#{}, Req) -> Req.

%% A root tracer's core configuration, from the session's cfg: what every tracer of its
%% tree shares (the base, made once here and handed down unchanged) and its own name.
core_cfg(Cfg0 = #{backend := Backend}) ->
    Base0 = maps:with([lambda, backend, session, checks, perturb, explain, max_queue,
                       max_queue_bytes, max_events, max_payload, monitor_budget, token, policy,
                       max_suspend, analysis, relay_nodes, relay_to, tracer_priority, adopt], Cfg0),
    %% Monitors run in their partitions' analysis processes (riarc_analysis), or, with
    %% `analysis => inline', in the tracer's core (whose own default is inline).
    %% root_tracer: the root tracer this one descends from (itself, for a root): see
    %% traced/1.
    Base = Base0#{root_tracer => maps:get(root_tracer, Cfg0, self()),
                  analysis => maps:get(analysis, Base0, isolated),
                  init_from_spawn => riarc_backend:init_from_spawn(Backend),
                  init_parent => riarc_backend:names_parents(Backend)},
    tracer_cfg(adoption(Base)).

%% Adoption (riarc_tracer_adopted, option adopt), where a partition's monitor can run in
%% a tracer (analysis inline) and none spans nodes (no relays): a tracer adopts a new
%% partition while it has adopted fewer than the option says; past that, a new partition
%% gets a tracer of its own, as in the paper.
adoption(Base = #{adopt := Max, analysis := inline}) when Max =/= 0 ->
    case is_map_key(relay_nodes, Base) orelse is_map_key(relay_to, Base) of
        true -> maps:remove(adopt, Base);
        false when Max =:= infinity -> Base#{adopt => fun(_) -> true end};
        false -> Base#{adopt => fun(N) -> N < Max end}
    end;
adoption(Base) ->
    maps:remove(adopt, Base).

%% A tracer's core configuration: the base its tree shares, its own name, and how it
%% starts tracers (which get the same base: nothing to work out again per tracer).
tracer_cfg(Base) ->
    Opts = [{priority, riarc_opts:priority(Base)} | ?TRACER_OPTS],
    Base#{self => self(),
          start_tracer => fun(Mon, C, MFA, Disp) ->
                                  proc_lib:spawn_opt(?MODULE, tracer_init,
                                                     [Base, Mon, C, MFA, Disp], Opts)
                          end}.

%% @doc Asks a tracer for its state (Γ, Π, mode), for diagnostics; Token is its
%% session's.
-spec info(pid(), reference(), timeout()) -> {ok, map()} | {error, timeout}.
info(Tracer, Token, Timeout) ->
    %% The answer goes to an alias of the monitor (never to the caller's pid, so not
    %% wrapped as what a tracer tells its session), and the alias dies with the monitor:
    %% an answer later than Timeout is dropped by the VM, never left in the caller's
    %% mailbox (the session's, whose loop has no use for it).
    Ref = monitor(process, Tracer, [{alias, demonitor}]),
    Tracer ! {riarc_ctl, Ref, Ref, {Token, info}},
    receive
        {Ref, Info} -> demonitor(Ref, [flush]), {ok, Info};
        {'DOWN', Ref, process, _, _} -> {error, timeout}
    after Timeout -> demonitor(Ref, [flush]), {error, timeout}
    end.

%% @doc Whether T is a tracer of Session: a root tracer is started by its session and
%% every other tracer by a tracer (proc_lib), so Session is among a tracer's ancestors.
-spec of_session(pid(), pid()) -> boolean().
of_session(T, Session) ->
    case erlang:process_info(T, dictionary) of
        {dictionary, D} ->
            case lists:keyfind('$ancestors', 1, D) of
                {_, As} -> lists:member(Session, As);
                false -> false
            end;
        undefined -> false
    end.

%% @doc Asks a tracer to tell its session (`{riarc_settled, Tracer, Ref}') once it holds
%% nothing for others (riarc_session:settle/2). Token is its session's.
-spec settle(pid(), reference(), reference()) -> ok.
settle(Tracer, Token, Ref) ->
    Tracer ! {riarc_ctl, self(), Ref, {Token, settle}},
    ok.

%% @doc Stops a tracer: it stops tracing its processes (they run on untraced), reports
%% its partition as it stands and ends. Token is its session's: a request without it
%% (forged by the monitored system) is refused.
-spec stop(pid(), reference()) -> ok.
stop(Tracer, Token) ->
    Tracer ! {riarc_ctl, self(), make_ref(), {Token, stop}},
    ok.

%%% ---------------------------------------------------------------------------
%%% The loop
%%% ---------------------------------------------------------------------------

%% Alg. 1 LOOP∘ and Alg. 3 LOOP• alike take the mailbox in order: what priority mode must
%% not handle yet, the core sets aside itself (Invariant I14).
loop(St, L = #tracer_loop{sref = SRef, aref = ARef, nbuf = NBuf, suspended = Susp}) ->
    %% Events for the analysis wait only while there are messages to take; while the
    %% partition is held back, the monitor's progress is looked at every ?POLL_MS.
    Wait = case {NBuf, Susp} of
               {0, []} -> infinity;
               {0, _} -> ?POLL_MS;
               _ -> 0
           end,
    receive
        {'DOWN', SRef, process, _, _} ->
            %% The session is gone: nobody wants these verdicts. Leave the system
            %% untraced rather than traced by a tracer nobody reads.
            #{backend := Backend} = Cfg = L#tracer_loop.cfg,
            _ = [riarc_backend:clear(Backend, S, self()) || S <- riarc_tracer_core:gamma(St)],
            %% Processes no tracer clears (in another tracer's App. B buffer, say): the
            %% root tracer closes the backend, which untraces whatever is left.
            _ = maps:get(root, Cfg, false) andalso riarc_backend:close(Backend) =:= ok,
            %% Nobody watches the analysis's budget any more either.
            _ = is_pid(L#tracer_loop.analysis) andalso exit(L#tracer_loop.analysis, kill),
            exit(normal);
        {'DOWN', ARef, process, _, _} ->
            %% The partition's analysis has ended (a verdict, or its monitor detached
            %% over budget or by the overload policy): its events go nowhere now, and
            %% routing goes on for the others.
            loop(St, L#tracer_loop{analysis = undefined, aref = undefined});
        {timeout, TRef, riarc_view_check} when TRef =:= L#tracer_loop.view_timer ->
            {St1, Fx} = view_check(St, L#tracer_loop.cfg),
            L1 = L#tracer_loop{view_timer = erlang:start_timer(?VIEW_CHECK_MS, self(), riarc_view_check)},
            loop(St1, watch(St1, effects(Fx, L1, St1)));
        {riarc_t, Token, Msg} when Token =:= L#tracer_loop.token ->
            {St1, Fx} = riarc_tracer_core:handle(Msg, St),
            loop(St1, watch(St1, effects(Fx, L, St1)));
        Msg when element(1, Msg) =:= riarc_t; element(1, Msg) =:= riarc_rtd;
                 element(1, Msg) =:= riarc_dtc ->
            %% Trust boundary: a tracer's message without the session's token was forged
            %% by the monitored system: not believed, counted.
            put(?FORGED, get_int(?FORGED) + 1),
            loop(St, L);
        Msg ->
            {St1, Fx} = riarc_tracer_core:handle(Msg, St),
            loop(St1, watch(St1, effects(Fx, L, St1)))
    after Wait ->
            loop(St, release(flush(L)))
    end.

flush(L = #tracer_loop{nbuf = 0}) -> L;
flush(L = #tracer_loop{analysis = An, analysis_key = Key, buf = Buf}) when is_pid(An) ->
    ok = riarc_analysis:events(An, Key, lists:reverse(Buf)),
    L#tracer_loop{buf = [], nbuf = 0};
flush(L = #tracer_loop{analysis = {relay, Root, Parent}, buf = Buf, cfg = #{relay_to := {To, Secret}}}) ->
    To ! {riarc_relay, Secret, {Root, Parent}, {events, lists:reverse(Buf)}},
    L#tracer_loop{buf = [], nbuf = 0};
flush(L) -> L#tracer_loop{buf = [], nbuf = 0}.

%% A tracer falling behind its processes would hold their events without bound: every
%% 1024 messages it looks at its mailbox, and one longer than `max_queue', or taking more
%% than `max_queue_bytes' of memory, is an overload, reported once (the count then stops);
%% the session decides what to do (riarc_session, policy stop). Policy backpressure holds
%% the tracer's processes back first. At the same cadence, never per event (the hot
%% path), it reports its counts to the session (limit max_events, forged messages).
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

%% The report of the counts, if it is due ([] or one message).
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

effects([], L, _St) ->
    L;
%% The hot path: an event of the partition goes to its analysis, not waited for.
effects([{analyse, E} | Fx], L = #tracer_loop{analysis = An, max_payload = Max, events = N, nbuf = B}, St)
  when An =/= undefined ->
    L1 = L#tracer_loop{events = N + 1, buf = [riarc_event:truncate(E, Max) | L#tracer_loop.buf], nbuf = B + 1},
    effects(Fx, case B + 1 >= ?BATCH of true -> flush(L1); false -> L1 end, St);
effects([{analyse, _} | Fx], L = #tracer_loop{events = N}, St) ->
    effects(Fx, L#tracer_loop{events = N + 1}, St);
effects([{send, Session, Msg} | Fx], L = #tracer_loop{session = Session, token = Token}, St) ->
    Session ! {riarc_s, Token, Msg},
    effects(Fx, L, St);
%% Trust boundary: what goes to another tracer (routed packets, detach requests) carries
%% the session's token; the loop takes such messages only with it.
effects([{send, To, Msg = {riarc_rtd, _, _}} | Fx], L = #tracer_loop{token = Token}, St) ->
    To ! {riarc_t, Token, Msg},
    effects(Fx, L, St);
effects([{send, To, Msg} | Fx], L, St) ->
    To ! Msg,
    effects(Fx, L, St);
effects([{detach, S, Disp} | Fx], L = #tracer_loop{cfg = #{backend := Backend}, token = Token}, St) ->
    %% Alg. 4 DETACH: PREEMPT, then the request, carrying the cut PREEMPT made.
    {ok, Cut} = riarc_backend:preempt(Backend, S, self()),
    Disp ! {riarc_t, Token, {riarc_dtc, self(), S, Cut}},
    effects(Fx, L, St);
effects([{clear, S} | Fx], L = #tracer_loop{cfg = #{backend := Backend}}, St) ->
    ok = riarc_backend:clear(Backend, S, self()),
    effects(Fx, L, St);
effects([{analysis, Part, Mon} | Fx], L = #tracer_loop{cfg = Cfg = #{session := Session}}, St) ->
    ACfg = maps:with([session, explain, monitor_budget, token, tracer_priority], Cfg),
    {An, Key, Clock} = riarc_analysis:start(ACfg, self(), Part, Mon),
    ARef = monitor(process, An),
    %% Before this tracer can end, so that the session waits for the analysis too.
    Session ! {riarc_s, L#tracer_loop.token, {riarc_analysis_up, self(), An, Clock}},
    effects(Fx, L#tracer_loop{analysis = An, analysis_key = Key, aref = ARef, clock = Clock}, St);
effects([analysis_end | Fx], L, St) ->
    L1 = #tracer_loop{analysis = An} = flush(L),
    case An of
        {relay, Root, Parent} ->
            %% After the last of its events, from this process too: the parent's
            %% session gets them in this order.
            #{relay_to := {To, Secret}} = L1#tracer_loop.cfg,
            To ! {riarc_relay, Secret, {Root, Parent}, 'end'},
            effects(Fx, L1#tracer_loop{analysis = undefined}, St);
        _ ->
            _ = is_pid(An) andalso riarc_analysis:finish(An, L1#tracer_loop.analysis_key),
            effects(Fx, L1, St)
    end;
%% One partition spanning nodes: this partition (a child from another node, Λ ⊥) is its
%% remote parent's partition's; its events go to the parent's session with the secret
%% it gave (cfg's relay_to), which hands them to that partition's tracer.
effects([{relay, {Root, _MFA}, Parent} | Fx], L, St) ->
    effects(Fx, L#tracer_loop{analysis = {relay, Root, Parent}}, St);
effects([refused | Fx], L, St) ->
    put(?FORGED, get_int(?FORGED) + 1),
    effects(Fx, L, St);
effects([{started, _T, _S} | Fx], L, St) ->
    effects(Fx, L, St);
effects([perturb | Fx], L = #tracer_loop{cfg = Cfg}, St) ->
    perturb(Cfg, riarc_tracer_core:mode(St)),
    effects(Fx, L, St);
effects([{stop, Told, Stats} | _], L, St) ->
    stop(L, St, Told, Stats).

%% TRYGC succeeded: the tracer ends. What the core gave it to tell the session last
%% (Told: its partition's verdict, most often), its statistics and what it tells the
%% session as it ends go in one message, `{riarc_last_words, Self, Told, Stats, Final}',
%% which the session takes as the messages it stands for, in that order: one message a
%% tracer instead of three (a verdict, the statistics, the counts). Before its end, so
%% that the session has them whenever it looks at its 'DOWN' (even one that says noproc:
%% a tracer can end before the session monitors it).
-spec stop(#tracer_loop{}, riarc_tracer_core:state(), [term()], riarc_tracer_core:stats()) -> no_return().
stop(L, St, Told, Stats) ->
    #tracer_loop{events = N, session = Session, token = Token} = flush(L),
    %% The partition's event count, and the counts since the last report: the session
    %% has them before this tracer's end.
    Final = [{riarc_partition_events, self(), N} || N > 0] ++ counts(St, true),
    Session ! {riarc_s, Token, {riarc_last_words, self(), Told, Stats, Final}},
    exit(normal).

%% Test hook: a tracer slow to act on a spawn (in direct mode) or to take its process
%% over (in priority mode, before its detach) widens the races of figs. 5 and 6 (events
%% reaching the parent's tracer; direct events arriving before routed ones).
%% `{gate, Pid}': a tracer about to take its process over waits until Pid opens the
%% gate, so that a test decides what reaches it first (riarc_settle_tests). A selective
%% receive: what else arrives stays queued, in order. Pid gone opens it too: no tracer
%% is left stuck. Spawns are not gated.
perturb(#{perturb := {gate, Pid}}, priority) ->
    Ref = monitor(process, Pid),
    Pid ! {riarc_gate, self()},
    Self = self(),
    receive
        {riarc_gate_open, Self} -> true = demonitor(Ref, [flush]), ok;
        {'DOWN', Ref, process, _, _} -> ok
    end;
perturb(#{perturb := {gate, _}}, direct) ->
    ok;
perturb(#{perturb := MaxUs}, _Mode) ->
    case rand:uniform(3) of
        1 -> spin(erlang:monotonic_time(microsecond) + rand:uniform(MaxUs));
        2 -> erlang:yield();
        3 -> ok
    end.

spin(End) ->
    case erlang:monotonic_time(microsecond) >= End of
        true -> ok;
        false -> erlang:yield(), spin(End)
    end.
