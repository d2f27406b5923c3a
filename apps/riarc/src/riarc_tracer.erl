%% @doc The RIARC tracer process: a thin loop around the algorithm in
%% {@link riarc_tracer_core}. It takes its mailbox in arrival order, hands each message
%% to the core and carries out the effects the core asks for (sends, PREEMPT and CLEAR
%% through the backend, starting tracers, starting its partition's analysis process
%% ({@link riarc_analysis}) and handing it the partition's events in batches, never
%% waiting for it). Between messages its overload watch, {@link riarc_tracer_overload},
%% applies the limits and overload policies of docs/production.md. Tracers are started
%% by {@link riarc_session} (the root, Alg. 6 ROOT) and by each other (Alg. 4 TRACER),
%% with proc_lib, so a crash is reported; each monitors its session and, if the session
%% goes, stops tracing its processes and ends.
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

-include("riarc_tracer_loop.hrl").

%% How often a tracer looks at its processes' flags and tracer.
-define(VIEW_CHECK_MS, 1000).

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
    ok = riarc_backend_evm:tracer(),
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
    ok = riarc_backend_evm:tracer(),
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
%% Race: a process whose flags another process took away may end before any look; the
%% VM then shows neither flags nor an exit to come. An ended process still traced here is
%% probed: once erlang:trace_delivered/1 answers, every trace message it made is in the
%% mailbox ahead of the answer, so one whose exit has still not come lost its flags
%% (the answer's clause in loop/2). Only where the VM traces them (riarc_backend:
%% watches/1): offline, a process name that reads as a pid is no process of this node.
%% A tracer of many processes looks at some of them each time, in turn
%% (riarc_backend:look_slice/2): a verdict does not change with that (a view found lost
%% is cut whatever its verdict, and a stop looks at every process: last_look/3).
view_check(St, L = #tracer_loop{cfg = #{backend := Backend}, probes = Probes, look_queue = Queue}) ->
    {Slice, Rest} = riarc_backend:look_slice(Queue, fun() -> [S || S <- riarc_tracer_core:gamma(St), is_pid(S)] end),
    Ss = [S || S <- Slice, riarc_tracer_core:traces(S, St)],
    Probed = maps:values(Probes),
    New = [S || riarc_backend:watches(Backend), S <- Ss, node(S) =:= node(), not is_process_alive(S),
                not lists:member(S, Probed)],
    L1 = L#tracer_loop{probes = lists:foldl(fun(S, Ps) -> Ps#{erlang:trace_delivered(S) => S} end,
                                            Probes, New)},
    {St1, Fx} = lists:foldl(fun(S, {St0, Fx0}) ->
                                    case riarc_backend:watching(Backend, S, self()) of
                                        ok -> {St0, Fx0};
                                        Why ->
                                            {St2, Fx1} = riarc_tracer_core:view_lost(S, Why, St0),
                                            {St2, Fx0 ++ Fx1}
                                    end
                            end, {St, []}, Ss),
    {St1, Fx, L1#tracer_loop{look_queue = Rest}}.

%% The processes of Γ the VM traces for this tracer (riarc_backend:watches/1): a look's.
watched(St, #tracer_loop{cfg = #{backend := Backend}}) ->
    [S || riarc_backend:watches(Backend), S <- riarc_tracer_core:gamma(St), is_pid(S), node(S) =:= node()].

%% A stop's last look, once erlang:trace_delivered(all) has answered: the looks come a
%% second apart, and a stop before the next one would end a partition whose process
%% lost its flags as if its trace were whole (verdict none, never seen to end). A process
%% of Γ that had ended when the stop came (Ended) and whose exit has still not come lost
%% its flags before it ended: every trace message it made is in, ahead of the answer.
%% One still alive is looked at as view_check/2 does.
last_look(St, Ended, L = #tracer_loop{cfg = #{backend := Backend}}) ->
    Gamma = riarc_tracer_core:gamma(St),
    Lost = [{S, {flags_removed, []}} || S <- Ended, lists:member(S, Gamma)]
        ++ [{S, Why} || S <- watched(St, L), not lists:member(S, Ended),
                        Why <- [riarc_backend:watching(Backend, S, self())], Why =/= ok],
    lists:foldl(fun({S, Why}, {St0, Fx0}) ->
                        {St3, Fx} = riarc_tracer_core:view_lost(S, Why, St0),
                        {St3, Fx0 ++ Fx}
                end, {St, []}, Lost).

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
    %% riarc_tracer_overload's trust boundary.
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
            {St1, Fx, L1} = view_check(St, L),
            L2 = L1#tracer_loop{view_timer = erlang:start_timer(?VIEW_CHECK_MS, self(), riarc_view_check)},
            loop(St1, riarc_tracer_overload:watch(St1, effects(Fx, L2, St1)));
        {trace_delivered, S, PRef} when is_map_key(PRef, L#tracer_loop.probes) ->
            {St1, Fx} = riarc_tracer_core:view_lost(S, {flags_removed, []}, St),
            L1 = L#tracer_loop{probes = maps:remove(PRef, L#tracer_loop.probes)},
            loop(St1, riarc_tracer_overload:watch(St1, effects(Fx, L1, St1)));
        {riarc_t, Token, Msg} when Token =:= L#tracer_loop.token ->
            {St1, Fx} = riarc_tracer_core:handle(Msg, St),
            loop(St1, riarc_tracer_overload:watch(St1, effects(Fx, L, St1)));
        %% Race: when the session stops the run, the VM may still hold trace messages of
        %% this tracer's processes that it made before (a child's spawn event, a new
        %% process's own): handled first, or a process the run traced would be missing
        %% from its result. The stop waits for erlang:trace_delivered(all), taking the
        %% mailbox meanwhile.
        %% The processes that had ended when the stop came are noted with it (last_look/3).
        {riarc_ctl, _, _, {Token, stop}} = Stop when Token =:= L#tracer_loop.token,
                                                    L#tracer_loop.stopping =:= undefined ->
            Ended = [S || S <- watched(St, L), not is_process_alive(S)],
            loop(St, L#tracer_loop{stopping = {erlang:trace_delivered(all), Stop, Ended}});
        {trace_delivered, all, Ref} when element(1, L#tracer_loop.stopping) =:= Ref ->
            {_, Stop, Ended} = L#tracer_loop.stopping,
            {St1, Fx1} = last_look(St, Ended, L),
            {St2, Fx2} = riarc_tracer_core:handle(Stop, St1),
            L1 = L#tracer_loop{stopping = undefined},
            loop(St2, riarc_tracer_overload:watch(St2, effects(Fx1 ++ Fx2, L1, St2)));
        Msg when element(1, Msg) =:= riarc_t; element(1, Msg) =:= riarc_rtd;
                 element(1, Msg) =:= riarc_dtc ->
            %% Trust boundary: a tracer's message without the session's token was forged
            %% by the monitored system: not believed, counted.
            riarc_tracer_overload:forged(),
            loop(St, L);
        Msg ->
            {St1, Fx} = riarc_tracer_core:handle(Msg, St),
            loop(St1, riarc_tracer_overload:watch(St1, effects(Fx, L, St1)))
    after Wait ->
            loop(St, riarc_tracer_overload:release(flush(L)))
    end.

flush(L = #tracer_loop{nbuf = 0}) -> L;
flush(L = #tracer_loop{analysis = An, analysis_key = Key, buf = Buf}) when is_pid(An) ->
    ok = riarc_analysis:events(An, Key, lists:reverse(Buf)),
    L#tracer_loop{buf = [], nbuf = 0};
flush(L = #tracer_loop{analysis = {relay, Root, Parent}, buf = Buf, cfg = #{relay_to := {To, Secret}}}) ->
    To ! {riarc_relay, Secret, {Root, Parent}, {events, lists:reverse(Buf)}},
    L#tracer_loop{buf = [], nbuf = 0};
flush(L) -> L#tracer_loop{buf = [], nbuf = 0}.

effects([], L, _St) ->
    L;
%% The hot path: an event of the partition goes to its analysis, not waited for.
effects([{analyse, E} | Fx], L = #tracer_loop{analysis = An, max_payload = Max, events = N, nbuf = B}, St)
  when An =/= undefined ->
    L1 = L#tracer_loop{events = N + 1, buf = [riarc_event:truncate(E, Max) | L#tracer_loop.buf], nbuf = B + 1},
    effects(Fx, case B + 1 >= ?BATCH of true -> flush(L1); false -> L1 end, St);
effects([{analyse, _} | Fx], L = #tracer_loop{events = N}, St) ->
    effects(Fx, L#tracer_loop{events = N + 1}, St);
%% A cut of a process's own view, in order with its events (riarc_tracer_core), for the
%% analysis to tell the session: no event of the partition's count. With the analysis
%% ended, its monitor had decided before the cut, and the verdict stands.
effects([{analyse_cut, E} | Fx], L = #tracer_loop{analysis = An, nbuf = B}, St) when is_pid(An) ->
    effects(Fx, L#tracer_loop{buf = [E | L#tracer_loop.buf], nbuf = B + 1}, St);
effects([{analyse_cut, _} | Fx], L, St) ->
    effects(Fx, L, St);
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
    riarc_tracer_overload:forged(),
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
    Final = [{riarc_partition_events, self(), N} || N > 0]
        ++ riarc_tracer_overload:counts(St, true),
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
