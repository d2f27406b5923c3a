%% @doc The RIARC tracer (§3, Algs. 1-4 of the RIARC paper): one process per trace
%% partition, collecting the events of the processes it traces, analysing those of its
%% own partition with its monitor and routing the rest, by next-hop routing, to the
%% tracers that own them.
%%
%% State σ: the routing map Π (SuS process -> next-hop tracer), the instrumentation map Λ
%% ({@link riarc_lambda}) and the traced-processes map Γ (SuS process -> direct | priority).
%% A tracer is in direct mode (∘, {@link loop/1} takes its mailbox in order) or priority
%% mode (•, only routed messages are taken, by selective receive, until every process it
%% traces has been detached from its dispatch tracer). It ends when Γ = Π = ∅ (TRYGC).
%%
%% Messages between tracers:
%% ```
%% {riarc_dtc, Tracer, S}              % ⟨dtc, ıT, ıS⟩: Tracer now traces S directly
%% {riarc_rtd, Dispatcher, {evt, E}}   % ⟨rtd, ıT, e⟩: a routed event
%% {riarc_rtd, Dispatcher, {dtc, T, S}}% ⟨rtd, ıT, d⟩: a routed detach acknowledgement
%% '''
%% Tracers are started by {@link riarc_session} (the root, Alg. 6 ROOT) and by each other
%% (Alg. 4 TRACER). Users do not call this module; they watch its work through
%% {@link riarc}. What a session sees of a tracer:
%% ```
%% 1> {ok, S} = riarc:start({riarc_demo_pqr, p, []}, fun(_) -> {ok, fun M(_) -> M end} end, #{}).
%% 2> riarc:info(S).
%% #{tracers => #{<0.95.0> => #{mode => direct, gamma => [...], pi => [...]}}, ...}
%% '''
-module(riarc_tracer).

-export([start_root/4, info/2, stop/1]).
%% Spawned entry points.
-export([root_init/4, tracer_init/5]).

-export_type([cfg/0]).

%% A tracer that falls behind (the master's, under load) holds a long mailbox of trace
%% messages. Kept on the heap, every garbage collection of the tracer would copy that
%% whole mailbox again; off the heap, a collection touches only the tracer's own state.
%% Measured on the load driver: see "What a tracer costs" in docs/core.md.
-define(TRACER_OPTS, [{message_queue_data, off_heap}, {fullsweep_after, 0}]).

-type sid() :: riarc_event:sid().
-type mode() :: direct | priority.
-type cfg() :: #{lambda := riarc_lambda:t(),
                 backend := riarc_backend:t(),
                 session := pid(),
                 checks := boolean(),
                 perturb := undefined | pos_integer()}.

-record(st, {
    mode = direct :: mode(),
    pi = #{} :: #{sid() => pid()},                 % Π, the routing map
    gamma = #{} :: #{sid() => mode()},             % Γ, the traced-processes map
    cfg :: cfg(),                                  % Λ and the tracer's surroundings
    part :: undefined | {sid(), riarc_event:mfa_args()}, % whose partition this is
    mon :: undefined | riarc_monitor:monitor(),    % ςM; undefined once it has a verdict
    verdict = none :: riarc_monitor:verdict(),
    analysed = 0 :: non_neg_integer(),
    %% App. B: the VM does not keep A4 (a child's events can reach the tracer before the
    %% parent's spawn event; measured: about half of all children in a spawn storm), so
    %% direct events of a process not yet known wait here until its spawn is handled.
    pending = #{} :: #{sid() => [riarc_event:event()]},
    collected = 0 :: non_neg_integer(),            % direct events taken from the mailbox
    reordered = 0 :: non_neg_integer(),            % of which waited for their spawn (App. B)
    routed = 0 :: non_neg_integer(),               % messages dispatched or forwarded
    dtc_issued = 0 :: non_neg_integer(),           % for I16
    detached = 0 :: non_neg_integer(),             % Γ entries added in • mode, for I16
    acked = 0 :: non_neg_integer(),                % acknowledgements of our own dtc
    held = queue:new() :: queue:queue(term())      % Invariant I14: what priority mode defers
}).

%%% ---------------------------------------------------------------------------
%%% Starting tracers
%%% ---------------------------------------------------------------------------

%% @doc Alg. 6 ROOT: a tracer in direct mode for the root process Root. It sets up Γ and
%% its monitor, feeds the monitor Root's init event when the backend has none of its own
%% to give, and then has the backend launch the paused system (TRACE, then resume).
-spec start_root(cfg(), riarc_event:sid(), riarc_event:mfa_args(),
                 riarc_event:event() | none) -> pid().
start_root(Cfg, Root, MFA, Init) ->
    spawn_opt(?MODULE, root_init, [Cfg, Root, MFA, Init], ?TRACER_OPTS).

%% @private
-spec root_init(cfg(), riarc_event:sid(), riarc_event:mfa_args(),
                riarc_event:event() | none) -> no_return().
root_init(Cfg = #{backend := Backend}, Root, MFA, Init) ->
    St0 = set_monitor(Root, MFA, #st{cfg = Cfg, gamma = #{Root => direct}}),
    St1 = case Init of
              none -> St0;
              _ -> analyse(Init, St0)
          end,
    ok = riarc_backend:launch(Backend, Root, self()),
    loop(St1).

%% Alg. 4 TRACER(σ, ςM, ȷS, ıT): a tracer for S, spawned by the tracer that handled S's
%% spawn event; it detaches S from the dispatch tracer Disp and starts in priority mode.
new_tracer(Mon, S, MFA, Disp, #st{cfg = Cfg = #{session := Session}}) ->
    Pid = spawn_opt(?MODULE, tracer_init, [Cfg, Mon, S, MFA, Disp], ?TRACER_OPTS),
    %% Registered by its spawner, before the spawner can end, so that the session never
    %% sees the set of live tracers empty while this one is starting.
    Session ! {riarc_tracer_up, Pid, S, MFA},
    Pid.

%% @private
-spec tracer_init(cfg(), riarc_monitor:monitor(), sid(), riarc_event:mfa_args(), pid())
    -> no_return().
tracer_init(Cfg, Mon, S, MFA, Disp) ->
    St0 = #st{mode = priority, cfg = Cfg, part = {S, MFA}, mon = Mon},
    perturb(Cfg),
    loop(detach(S, Disp, St0)).

%% @doc Asks a tracer for its state (Γ, Π, mode), for diagnostics.
-spec info(pid(), timeout()) -> {ok, map()} | {error, timeout}.
info(Tracer, Timeout) ->
    Ref = monitor(process, Tracer),
    Tracer ! {riarc_ctl, self(), Ref, info},
    receive
        {Ref, Info} -> demonitor(Ref, [flush]), {ok, Info};
        {'DOWN', Ref, process, _, _} -> {error, timeout}
    after Timeout -> demonitor(Ref, [flush]), {error, timeout}
    end.

%% @doc Stops a tracer: it stops tracing its processes (they run on untraced), reports
%% its partition as it stands and ends.
-spec stop(pid()) -> ok.
stop(Tracer) ->
    Tracer ! {riarc_ctl, self(), make_ref(), stop},
    ok.

%%% ---------------------------------------------------------------------------
%%% The loops: Alg. 1 LOOP∘ and Alg. 3 LOOP•
%%% ---------------------------------------------------------------------------

loop(St = #st{mode = direct}) ->
    %% Alg. 1 LOOP∘: the mailbox is taken in order, whatever the message.
    receive Msg -> loop(direct_in(Msg, St)) end;
loop(St = #st{mode = priority}) ->
    %% Alg. 3 LOOP•. Invariant I14: only routed packets are handled until the tracer
    %% switches to direct mode; direct events and detach requests wait. They wait in
    %% `held', in arrival order, not in the mailbox: a selective receive would scan every
    %% waiting message again for each routed packet, quadratic in the time a tracer
    %% spends in priority mode, which under load is the whole life of a busy worker.
    receive
        {riarc_rtd, _, _} = R -> loop(priority_rtd(R, St));
        {riarc_ctl, From, Ref, Req} -> loop(control(From, Ref, Req, St));
        Msg -> loop(St#st{held = queue:in(Msg, St#st.held)})
    end.

direct_in({riarc_rtd, _, _} = R, St) -> forwd_rtd(R, St);
direct_in({riarc_dtc, _, _} = D, St) -> dispatch_dtc(D, St);
direct_in({riarc_ctl, From, Ref, Req}, St) -> control(From, Ref, Req, St);
direct_in(Msg, St) -> direct_msg(Msg, St).

direct_msg(Msg, St = #st{cfg = #{backend := Backend}}) ->
    case riarc_backend:event(Backend, Msg) of
        {ok, Event} -> direct(Event, St#st{collected = St#st.collected + 1});
        skip -> St;
        no -> St
    end.

%% App. B reordering: a direct event of a process the tracer knows neither as traced (Γ)
%% nor as routed (Π) belongs to a child whose spawn event has not arrived yet.
direct(Event, St = #st{pi = Pi, gamma = Gamma, pending = Pending}) ->
    S = riarc_event:origin(Event),
    case is_map_key(S, Pi) orelse is_map_key(S, Gamma) of
        true -> handle_direct(Event, St);
        false -> St#st{reordered = St#st.reordered + 1,
                       pending = maps:update_with(S, fun(Es) -> [Event | Es] end,
                                                  [Event], Pending)}
    end.

flush_pending(S, St = #st{pending = Pending}) ->
    case maps:take(S, Pending) of
        error -> St;
        {Events, Rest} ->
            lists:foldl(fun direct/2, St#st{pending = Rest}, lists:reverse(Events))
    end.

%%% ---------------------------------------------------------------------------
%%% Alg. 1: direct events, detach requests and forwarding in direct mode
%%% ---------------------------------------------------------------------------

%% Alg. 1 HANDLSPWN∘
handle_direct(E = {spawn, P, C, _MFA}, St) ->
    St1 = case route(P, St) of
              undefined ->
                  %% case Π(e.ıS) = ⊥: this tracer handles e, then instruments the child.
                  perturb(St#st.cfg),
                  instrument(direct, E, self(), analyse(E, St));
              Next ->
                  %% case Π(e.ıS) = ȷT: dispatch, and route the child the same way (I9).
                  dispatch({evt, E}, Next, add_route(C, Next, 'I9', St))
          end,
    flush_pending(C, St1);
%% Alg. 1 HANDLEXIT∘
handle_direct(E = {exit, S, _}, St) ->
    case route(S, St) of
        undefined -> try_gc(del_gamma(S, 'I5', analyse(E, St)));
        Next -> dispatch({evt, E}, Next, St)
    end;
%% Alg. 1 HANDLCOMM∘ (send, receive and init events)
handle_direct(E, St) ->
    case route(riarc_event:origin(E), St) of
        undefined -> analyse(E, St);
        Next -> dispatch({evt, E}, Next, St)
    end.

%% Alg. 1 DISPATCHDTC
dispatch_dtc({riarc_dtc, T, S}, St) ->
    case route(S, St) of
        undefined ->
            %% Invariant I17: a detach request names a process this tracer routes.
            violation('I17', {dtc_without_route, T, S}, St);
        Next ->
            %% Invariant I11: the next-hop is dropped once the acknowledgement is sent.
            try_gc(del_route(S, 'I11', dispatch({dtc, T, S}, Next, St)))
    end.

%% Alg. 1 FORWDRTD∘
forwd_rtd(R = {riarc_rtd, _, {dtc, T, S}}, St) ->
    %% FORWDDTC
    case route(S, St) of
        undefined -> violation('I20', {dtc_ack_without_route, T, S}, St);
        Next -> try_gc(del_route(S, 'I12', forwd(R, Next, St)))
    end;
forwd_rtd(R = {riarc_rtd, _, {evt, E}}, St) ->
    %% FORWDEVT
    case route(riarc_event:origin(E), St) of
        undefined -> violation('I19', {routed_event_without_route, E}, St);
        Next ->
            St1 = forwd(R, Next, St),
            case E of
                {spawn, _, C, _} -> add_route(C, Next, 'I10', St1);
                _ -> St1
            end
    end.

%%% ---------------------------------------------------------------------------
%%% Alg. 3: routed messages in priority mode
%%% ---------------------------------------------------------------------------

priority_rtd(R = {riarc_rtd, Disp, {evt, E}}, St) ->
    handle_routed(kind(E), E, R, Disp, St);
priority_rtd(R = {riarc_rtd, _, {dtc, T, S}}, St) ->
    handle_dtc(R, T, S, St).

kind({spawn, _, _, _}) -> spawn;
kind({exit, _, _}) -> exit;
kind(_) -> comm.

%% Alg. 3 HANDLSPWN•
handle_routed(spawn, E = {spawn, P, C, _}, R, Disp, St) ->
    case route(P, St) of
        undefined ->
            St1 = check(is_map_key(P, St#st.gamma), 'I21', {routed_event_not_traced, E}, St),
            instrument(priority, E, Disp, analyse(E, St1));
        Next ->
            add_route(C, Next, 'I10', forwd(R, Next, St))
    end;
%% Alg. 3 HANDLEXIT•
handle_routed(exit, E = {exit, S, _}, R, _Disp, St) ->
    case route(S, St) of
        undefined -> try_gc(del_gamma(S, 'I5', analyse(E, St)));
        Next -> forwd(R, Next, St)
    end;
%% Alg. 3 HANDLCOMM•
handle_routed(comm, E, R, _Disp, St) ->
    S = riarc_event:origin(E),
    case route(S, St) of
        undefined ->
            St1 = check(is_map_key(S, St#st.gamma), 'I21', {routed_event_not_traced, E}, St),
            analyse(E, St1);
        Next -> forwd(R, Next, St)
    end.

%% Alg. 3 HANDLDTC
handle_dtc(R, T, S, St) ->
    case route(S, St) of
        undefined ->
            %% Invariant I22, first half: an acknowledgement with no next-hop is ours.
            St1 = check(T =:= self(), 'I22', {unexpected_dtc_ack, T, S}, St),
            maybe_direct(mark_detached(S, St1#st{acked = St1#st.acked + 1}));
        Next ->
            %% Invariant I22, second half: one we can route is somebody else's. The
            %% listing of Alg. 3 only forwards here; I12 asks every forwarder of an
            %% acknowledgement to drop the stale next-hop, so we do, and try to end.
            St1 = check(T =/= self(), 'I22', {own_dtc_ack_routed, T, S}, St),
            try_gc(del_route(S, 'I12', forwd(R, Next, St1)))
    end.

%% Race: S may have exited, its exit routed to us and S purged from Γ, before the
%% acknowledgement of its detach arrives; there is then nothing left to mark.
mark_detached(S, St = #st{gamma = Gamma}) ->
    case Gamma of
        #{S := priority} -> St#st{gamma = Gamma#{S := direct}};
        #{S := direct} -> violation('I22', {dtc_ack_twice, S}, St);
        #{} -> St
    end.

%% Invariant I15: priority mode ends only when every traced process is detached.
%% (Fix found by riarc_interleave, offline helper.) A process whose detach is pending can
%% exit, its routed exit purging it from Γ, before its acknowledgement arrives: the
%% tracer must not go direct until every dtc it issued is acknowledged, or that late
%% acknowledgement reaches it in direct mode with no route (I20).
maybe_direct(St = #st{acked = Acked, dtc_issued = Issued}) when Acked < Issued ->
    St;
maybe_direct(St = #st{gamma = Gamma}) ->
    case lists:member(priority, maps:values(Gamma)) of
        true -> St;
        false -> drain_held(St#st{mode = direct})
    end.

%% Messages held back in priority mode are handled first, at the switch: they arrived
%% before anything still in the mailbox. The direct loop then only receives.
drain_held(St = #st{held = Held}) ->
    case queue:out(Held) of
        {{value, Msg}, Rest} -> drain_held(direct_in(Msg, St#st{held = Rest}));
        {empty, _} -> St
    end.

%%% ---------------------------------------------------------------------------
%%% Alg. 2 INSTRUMENT and Alg. 4 DISPATCH, FORWD, DETACH, TRYGC
%%% ---------------------------------------------------------------------------

%% Alg. 2 INSTRUMENT∘ / INSTRUMENT•. Disp is the dispatch tracer: self() in direct
%% mode, the tracer that dispatched the spawn event in priority mode.
instrument(Mode, {spawn, _P, C, MFA}, Disp, St = #st{cfg = #{lambda := Lambda}}) ->
    case lookup(Lambda, MFA, St) of
        {{ok, Mon}, St1} ->
            %% Λ(e.ςS) ≠ ⊥: a new tracer for C, reached through a next-hop (I8).
            add_route(C, new_tracer(Mon, C, MFA, Disp, St1), 'I8', St1);
        {undefined, St1} when Mode =:= direct ->
            %% Tracing inheritance (A2): this tracer already traces C (I4).
            add_gamma(C, direct, St1);
        {undefined, St1} ->
            %% C was inherited by the dispatch tracer: take it over from there.
            detach(C, Disp, St1)
    end.

lookup(Lambda, MFA, St) ->
    case riarc_lambda:lookup(Lambda, MFA) of
        {error, Reason} ->
            %% A Spec that fails is the user's bug, not the system's: the process is
            %% left in its parent's partition and the failure is reported.
            report(St, {riarc_spec_error, self(), MFA, Reason}),
            {undefined, St};
        Answer -> {Answer, St}
    end.

%% Alg. 4 DETACH(ȷS, ıT): preempt S, then ask the dispatch tracer for S's routed events.
detach(S, Disp, St = #st{cfg = #{backend := Backend}}) ->
    ok = riarc_backend:preempt(Backend, S, self()),
    Disp ! {riarc_dtc, self(), S},
    St1 = add_gamma(S, priority, St),
    St1#st{dtc_issued = St1#st.dtc_issued + 1, detached = St1#st.detached + 1}.

%% Alg. 4 DISPATCH: wrap a message of this tracer's in a routing packet.
dispatch(Msg, Next, St) ->
    Next ! {riarc_rtd, self(), Msg},
    St#st{routed = St#st.routed + 1}.

%% Alg. 4 FORWD: pass a routing packet on unchanged (it keeps its dispatch tracer).
forwd(R, Next, St) ->
    Next ! R,
    St#st{routed = St#st.routed + 1}.

%% Alg. 4 TRYGC. Invariant I1: the tracer ends only with Γ = Π = ∅.
try_gc(St = #st{gamma = G, pi = P}) when map_size(G) =:= 0, map_size(P) =:= 0 ->
    finish(St);
try_gc(St) ->
    St.

-spec finish(#st{}) -> no_return().
finish(St = #st{pending = Pending}) ->
    St1 = check(map_size(Pending) =:= 0, 'A4', {events_of_unknown_processes, Pending}, St),
    %% Events left here belong to processes whose monitors did not get them (see "A fresh
    %% process's first events" in docs/core.md): their verdicts cannot be trusted.
    _ = map_size(Pending) =:= 0 orelse report(St1, {riarc_incomplete, self(), Pending}),
    %% Invariant I16: one detach request per process taken over in priority mode.
    St2 = check(St1#st.dtc_issued =:= St1#st.detached, 'I16',
                {dtc_issued, St1#st.dtc_issued, detached, St1#st.detached}, St1),
    St3 = end_partition(St2),
    report(St3, {riarc_tracer_down, self(), stats(St3)}),
    exit(normal).

stats(#st{collected = C, routed = R, analysed = A, reordered = O}) ->
    #{collected => C, routed => R, analysed => A, reordered => O}.

%%% ---------------------------------------------------------------------------
%%% ANALYSEEVT (App. C.5.2) and verdicts
%%% ---------------------------------------------------------------------------

set_monitor(Root, MFA, St = #st{cfg = #{lambda := Lambda}}) ->
    case lookup(Lambda, MFA, St) of
        {{ok, Mon}, St1} -> St1#st{part = {Root, MFA}, mon = Mon};
        {undefined, St1} -> St1
    end.

%% Analysis stops at the first verdict: later events of the partition are not analysed.
analyse(_E, St = #st{mon = undefined}) ->
    St;
analyse(E, St = #st{mon = Mon, analysed = N}) ->
    case riarc_monitor:analyse(Mon, E) of
        {next, Mon1} -> St#st{mon = Mon1, analysed = N + 1};
        {verdict, V} -> verdict(V, undefined, St#st{analysed = N + 1});
        {verdict, error, Why} -> verdict(error, Why, St#st{analysed = N + 1})
    end.

verdict(V, Why, St = #st{part = {S, MFA}}) ->
    report(St, {riarc_verdict, self(), S, MFA, V, Why, St#st.analysed}),
    St#st{mon = undefined, verdict = V}.

%% The partition has ended without a verdict: none.
end_partition(St = #st{part = {_, _}, mon = Mon}) when Mon =/= undefined ->
    verdict(none, undefined, St);
end_partition(St) ->
    St.

%%% ---------------------------------------------------------------------------
%%% Maps with their invariants (I2, I3, I6, I7)
%%% ---------------------------------------------------------------------------

route(S, #st{pi = Pi}) ->
    maps:get(S, Pi, undefined).

%% Invariant I6 (with the caller's own: I8, I9 or I10): a next-hop is never added twice.
add_route(S, T, Why, St = #st{pi = Pi}) ->
    St1 = check(not is_map_key(S, Pi), 'I6', {Why, route_exists, S, T}, St),
    St1#st{pi = Pi#{S => T}}.

%% Invariant I7 (with I11 or I12): only an existing next-hop is removed.
del_route(S, Why, St = #st{pi = Pi}) ->
    St1 = check(is_map_key(S, Pi), 'I7', {Why, no_route, S}, St),
    St1#st{pi = maps:remove(S, Pi)}.

%% Invariant I2 (I4): a traced process is never added twice.
add_gamma(S, Mode, St = #st{gamma = G}) ->
    St1 = check(not is_map_key(S, G), 'I2', {already_traced, S}, St),
    St1#st{gamma = G#{S => Mode}}.

%% Invariant I3 (I5): only a traced process is removed.
del_gamma(S, Why, St = #st{gamma = G}) ->
    St1 = check(is_map_key(S, G), 'I3', {Why, not_traced, S}, St),
    St1#st{gamma = maps:remove(S, G)}.

%%% ---------------------------------------------------------------------------
%%% Invariant checking, reporting, control
%%% ---------------------------------------------------------------------------

check(true, _Id, _Info, St) -> St;
check(false, Id, Info, St = #st{cfg = #{checks := true}}) -> violation(Id, Info, St);
check(false, _Id, _Info, St) -> St.

%% A violated invariant is reported with the tracer's state; the tracer goes on with
%% what it can do, so that one fault does not silence the rest of the run.
violation(Id, Info, St) ->
    report(St, {riarc_violation, self(), Id, Info, state_map(St)}),
    St.

report(#st{cfg = #{session := Session}}, Msg) ->
    Session ! Msg,
    ok.

state_map(#st{mode = M, pi = Pi, gamma = G, part = Part, pending = P}) ->
    #{mode => M, pi => Pi, gamma => G, partition => Part, pending => P}.

control(From, Ref, info, St) ->
    From ! {Ref, state_map(St)},
    St;
control(_From, _Ref, stop, St = #st{gamma = G, cfg = #{backend := Backend}}) ->
    _ = [riarc_backend:clear(Backend, S, self()) || S <- maps:keys(G)],
    finish(St#st{pending = #{}, gamma = #{}, pi = #{}}).

%% Test hook: a tracer slow to act on a spawn or to take its process over widens the
%% races of figs. 5 and 6 (events reaching the parent's tracer; direct events arriving
%% before routed ones).
perturb(#{perturb := undefined}) -> ok;
perturb(#{perturb := MaxUs}) ->
    case rand:uniform(3) of
        1 -> spin(rand:uniform(MaxUs));
        2 -> erlang:yield();
        3 -> ok
    end.

spin(Us) ->
    End = erlang:monotonic_time(microsecond) + Us,
    spin_until(End).

spin_until(End) ->
    case erlang:monotonic_time(microsecond) >= End of
        true -> ok;
        false -> erlang:yield(), spin_until(End)
    end.
