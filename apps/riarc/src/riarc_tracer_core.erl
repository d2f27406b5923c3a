%% @doc The RIARC tracer's algorithm (§3, Algs. 1-4 of the RIARC paper) as a pure state
%% machine: `handle(Message, State) -> {State, [Effect]}'. The process that runs it,
%% {@link riarc_tracer}, is a thin loop around it (as gen_server's generic loop is
%% around its callbacks), and the model checker {@link riarc_explore} runs several of
%% these cores against each other under every delivery order the VM allows. What every
%% step does to the state (the maps with their invariants, effects, reports, the
%% tracer's end) is {@link riarc_tracer_state}'s; where a spawned child's partition goes
%% (Alg. 2 INSTRUMENT) is {@link riarc_tracer_instrument}'s; control requests (info,
%% settle, stop) are {@link riarc_tracer_control}'s.
%%
%% State σ: the routing map Π (SuS process -> next-hop tracer), the instrumentation map Λ
%% ({@link riarc_lambda}) and the traced-processes map Γ (SuS process -> direct |
%% priority). A tracer is in direct mode (∘, every message in arrival order) or priority
%% mode (•, only routed messages, the rest held in order until every process it traces
%% is detached from its dispatch tracer). It ends when Γ = Π = ∅ (TRYGC).
%%
%% Messages between tracers:
%% ```
%% {riarc_dtc, T, S, Cut}              % ⟨dtc, ıT, ıS⟩: T now traces S directly; Cut says
%%                                     %  how many of S's events the old tracer was sent
%% {riarc_rtd, Dispatcher, {evt, E}}   % ⟨rtd, ıT, e⟩: a routed event
%% {riarc_rtd, Dispatcher, {dtc, T, S}}% ⟨rtd, ıT, d⟩: a routed detach acknowledgement
%% '''
%% and control requests `{riarc_ctl, From, Ref, {Token, info | settle | stop}}' (Token: cfg's
%% `token', when it has one).
%% Effects, carried out in order by the caller:
%% ```
%% {send, To, Msg}        % to another tracer or to the session
%% {detach, S, Disp}      % Alg. 4 DETACH: PREEMPT S through the backend, then send
%%                        %  Disp {riarc_dtc, self(), S, Cut} with the Cut PREEMPT returned
%% {clear, S}             % CLEAR S through the backend
%% {started, T, S}        % a tracer T was started for S (cfg's start_tracer made it)
%% {analysis, Part, Mon}  % with `analysis => isolated': start the partition's analysis
%%                        %  (Part = {S, MFA}) by monitor Mon, off the routing path
%% {analyse, E}           % with `analysis => isolated': hand event E to that analysis,
%%                        %  without waiting for it
%% {analyse_cut, C}       % the same for a cut of a process's own view, C, in order with
%%                        %  its events: that analysis tells the session, unless decided
%% {relay, Part, P}       % one partition spanning nodes: this partition's events (analyse,
%%                        %  analysis_end) go to the session of P, its root's remote parent
%% analysis_end           % with `analysis => isolated': the partition has ended; its
%%                        %  analysis gives the verdict none unless it has one
%% perturb                % test hook: be slow here (cfg's perturb)
%% {stop, Told, Stats}    % TRYGC succeeded: the tracer ends; Told, what it tells the
%%                        %  session last, in order, then {riarc_tracer_down, T, Stats}
%% '''
%% ```
%% 1> Cfg = #{lambda => riarc_lambda:new(fun(_) -> undefined end), backend => riarc_backend:new(riarc_backend_evm, riarc_backend_evm:config([recv])), session => self(), checks => true, perturb => undefined, start_tracer => fun(_, _, _, _) -> error(none) end, init_from_spawn => true, self => t0}.
%% 2> {St, []} = riarc_tracer_core:init_root(Cfg, p, {m, f, []}, none).
%% 3> {_, Fx} = riarc_tracer_core:handle({trace, p, exit, normal}, St), Fx.
%% [{stop,[],#{collected => 1,reordered => 0,routed => 0}}]
%% '''
-module(riarc_tracer_core).

-export([init_root/4, init_tracer/5, handle/2, view_lost/3, mode/1, gamma/1, traces/2, state_map/1,
         collected/1]).
-export_type([cfg/0, state/0, effect/0, cut/0, stats/0, mode/0, tracer/0]).

-include("riarc_tracer_state.hrl").

-import(riarc_tracer_state, [fx/2, effects/2, report/2, self_of/1, check/4, violation/3,
                             route/2, add_route/4, del_route/3, del_gamma/3,
                             origin/1, try_gc/1]).
-import(riarc_tracer_control, [control/4, out/1]).

-type sid() :: riarc_event:sid().
-type mode() :: direct | priority.
%% What PREEMPT tells the new tracer about the old one's share of S's events (see
%% riarc_backend:preempt/3); the detach request carries it to the old tracer.
-type cut() :: riarc_backend:cut().
-type tracer() :: term().
%% (The events its monitors took each monitor's verdict counts: riarc_session_tally.)
-type stats() :: #{collected := non_neg_integer(), routed := non_neg_integer(),
                   reordered := non_neg_integer()}.
-type cfg() :: #{lambda := riarc_lambda:t(),
                 backend := riarc_backend:t(),
                 session := tracer(),
                 checks := boolean(),
                 perturb := undefined | pos_integer() | {gate, pid()},
                 %% Alg. 4 TRACER: starts a tracer and returns its name. The only call
                 %% out of the core (riarc_tracer_instrument, at INSTRUMENT): the caller
                 %% decides what a tracer is.
                 start_tracer := fun((riarc_monitor:monitor(), sid(), riarc_event:mfa_args(),
                                      tracer()) -> tracer()),
                 %% The backend gives no init event of its own: the tracer that handles a
                 %% spawn event makes the child's, right behind it in the child's trace.
                 init_from_spawn := boolean(),
                 %% The backend may name another parent in a child's init event than its
                 %% spawn event does (riarc_backend:init_parent/3).
                 init_parent => boolean(),
                 self := tracer(),
                 %% How many of its last events a reject or error is reported with.
                 explain => non_neg_integer(),
                 %% Trust boundary: control requests must carry it ({Token, Req}); one
                 %% that does not was forged (by the monitored system) and is refused.
                 token => reference(),
                 %% Where the monitor runs: in this core, at each event (`inline', the
                 %% default: the model checker's tracers), or in an analysis process of the
                 %% partition's own that the caller starts and feeds from the effects
                 %% (`isolated': a slow or looping monitor never stalls routing).
                 analysis => inline | isolated,
                 %% One partition spanning nodes: the nodes followed by a session there
                 %% (riarc's option follow; `all' with follow_joining, where the session
                 %% knows which are), whose children Λ puts in their parent's
                 %% partition have their events relayed to its tracer here; and, on such a
                 %% node, where the events of a child from elsewhere that Λ puts in its
                 %% parent's partition go (the parent's session, and its secret).
                 relay_nodes => [node()] | all,
                 relay_to => {pid(), reference()},
                 %% Adoption (riarc_tracer_adopted): asked, with how many partitions this
                 %% tracer has adopted, at a spawn event whose child Λ gives a monitor,
                 %% whether the child's partition stays here instead of getting a tracer
                 %% of its own. Its caller gives it only where monitors run in their
                 %% tracers (analysis inline) and no partition spans nodes (no relays).
                 adopt => fun((non_neg_integer()) -> boolean()),
                 %% What the process loop around the core keeps in it for itself.
                 atom() => term()}.
-type effect() :: {send, tracer(), term()} | {detach, sid(), tracer()} | {clear, sid()}
                | {started, tracer(), sid()} | perturb | {stop, [term()], stats()}
                | {analysis, {sid(), riarc_event:mfa_args()}, riarc_monitor:monitor()}
                | {analyse, riarc_event:traced() | {remote_spawn, sid(), node(), riarc_event:mfa_args()}}
                | {analyse_cut, riarc_event:cut_event()}
                | analysis_end | refused
                | {relay, {sid(), riarc_event:mfa_args()}, pid()}.

-type state() :: #tracer{}.

%%% ---------------------------------------------------------------------------
%%% Starting, stepping, looking
%%% ---------------------------------------------------------------------------

%% @doc Alg. 6 ROOT: a tracer in direct mode for the root process Root, with its monitor;
%% Init is the root's init event when the backend gives none of its own.
-spec init_root(cfg(), sid(), riarc_event:mfa_args(), riarc_event:event() | none) ->
    {state(), [effect()]}.
init_root(Cfg = #{self := Self}, Root, MFA, Init) ->
    Parts = riarc_tracer_parts:root(Root, MFA, riarc_tracer_parts:new(Self)),
    St0 = set_monitor(Root, MFA, #tracer{cfg = Cfg, gamma = #{Root => direct}, parts = Parts}),
    St1 = case Init of
              none -> St0;
              _ -> analyse(Init, St0)
          end,
    out(St1).

%% @doc Alg. 4 TRACER(σ, ςM, ȷS, ıT): a tracer for S, started by the tracer that handled
%% S's spawn event; it detaches S from the dispatch tracer Disp and starts in priority
%% mode.
-spec init_tracer(cfg(), riarc_monitor:monitor(), sid(), riarc_event:mfa_args(), tracer()) ->
    {state(), [effect()]}.
init_tracer(Cfg = #{self := Self}, Mon, S, MFA, Disp) ->
    St0 = start_analysis({S, MFA}, Mon, #tracer{mode = priority, cfg = Cfg, parts = riarc_tracer_parts:new(Self)}),
    out(riarc_tracer_instrument:detach(S, Disp, perturb(St0))).

%% @doc One step: a message from the tracer's mailbox (a trace event, a message of
%% another tracer, a control request).
-spec handle(term(), state()) -> {state(), [effect()]}.
handle(Msg, St = #tracer{mode = direct}) ->
    out(direct_in(Msg, St));
handle(Msg, St = #tracer{mode = priority}) ->
    %% Alg. 3 LOOP•. Invariant I14: only routed packets are handled until the tracer
    %% switches to direct mode; direct events and detach requests wait, in arrival order.
    out(case Msg of
            {riarc_rtd, _, _} -> priority_rtd(Msg, St);
            {riarc_ctl, From, Ref, Req} -> control(From, Ref, Req, St);
            _ -> St#tracer{held = queue:in(Msg, St#tracer.held)}
        end).

%% @doc The tracer's process found that the VM no longer traces S as the backend set it
%% up (its flags or its tracer changed by someone riarc does not trace, so no call event
%% told of it): S's partition's view is cut (the session makes it an error), and if S
%% lost the flag of its spawn and exit events, its trace ends here, as at an exit, so
%% that nobody waits for it. Only for a process this tracer traces in direct mode: one
%% still being taken over is looked at again later. A process whose own call cut its
%% view was judged by that call, in order with its events: what a look finds later adds
%% nothing to its verdict (one in before the call stands), but a look that finds it
%% traced by nothing at all ends its trace too.
-spec view_lost(sid(), {flags_removed | tracer_replaced, term()}, state()) -> {state(), [effect()]}.
view_lost(S, Why, St) ->
    out(lost(S, Why, St)).

lost(S, Why, St = #tracer{mode = direct, gamma = G, parts = Parts}) ->
    case G of
        #{S := direct} ->
            case riarc_tracer_parts:cut_by_own_call(S, Parts) of
                %% Race: S's own call took `procs' and S has ended since: the VM traces
                %% nothing of it any more (riarc_tracer's probe found its exit will not
                %% come). Its verdict is the call's; its trace ends here, or the tracer
                %% would wait for that exit for ever.
                true when Why =:= {flags_removed, []} -> try_gc(del_gamma(S, 'I5', St));
                true -> St;
                false -> lost_view(S, Why, St)
            end;
        #{} -> St
    end;
lost(_S, _Why, St) ->
    St.

lost_view(S, Why, St) ->
    St1 = view_cut(S, Why, St),
    case riarc_trace_pattern:exit_to_come(Why) of
        true -> St1;
        false -> try_gc(del_gamma(S, 'I5', St1))
    end.

%% S's partition's view is cut, as the look found (lost_scope/1 says whose else).
view_cut(S, Why, St = #tracer{parts = Parts}) ->
    Key = riarc_tracer_parts:key_of(S, Parts),
    St1 = report({riarc_cut, Key, S, Why}, St#tracer{parts = riarc_tracer_parts:seen_cut(Why, Parts)}),
    %% S kept the flags that make a child it spawns traced, and lost others: a later
    %% child inherits what is left, so any other partition's view may be cut from here on.
    case riarc_trace_pattern:lost_scope(Why) of
        inherited -> report({riarc_cut, Key, S, {inherited, Why}}, St1);
        own -> St1
    end.

%% @doc direct (∘) or priority (•).
-spec mode(state()) -> mode().
mode(#tracer{mode = M}) -> M.

%% @doc The processes the tracer traces (Γ).
-spec gamma(state()) -> [sid()].
gamma(#tracer{gamma = G}) -> maps:keys(G).

%% @doc Whether S is in Γ (the tracer traces it).
-spec traces(sid(), state()) -> boolean().
traces(S, #tracer{gamma = G}) -> is_map_key(S, G).

%% @doc How many direct events the tracer has taken: its process reports them to the
%% session in batches (riarc_tracer).
-spec collected(state()) -> non_neg_integer().
collected(#tracer{collected = C}) -> C.

%% @doc The tracer's state for diagnostics and invariant reports.
-spec state_map(state()) -> map().
state_map(St) ->
    riarc_tracer_state:state_map(St).

%%% ---------------------------------------------------------------------------
%%% Alg. 1 LOOP∘
%%% ---------------------------------------------------------------------------

direct_in({riarc_rtd, _, _} = R, St) -> forwd_rtd(R, St);
direct_in({riarc_dtc, T, S, Cut}, St) -> dispatch_dtc(T, S, Cut, St);
direct_in({riarc_ctl, From, Ref, Req}, St) -> control(From, Ref, Req, St);
direct_in({riarc_relayed, _, _, _} = R, St) -> relayed(R, St);
direct_in(Msg, St = #tracer{cfg = #{backend := Backend}}) ->
    case riarc_backend:event(Backend, Msg) of
        %% A child from another node announced together with its first event
        %% (riarc_backend_new_processes): announcement first.
        {ok, [_ | _] = Events} ->
            lists:foldl(fun direct/2, St#tracer{collected = St#tracer.collected + 1}, Events);
        {ok, Event} -> direct(Event, St#tracer{collected = St#tracer.collected + 1});
        skip -> St;
        %% Trust boundary: a message in a trace message's shape that the backend refuses
        %% (no seal) was forged by the monitored system: not believed; the tracer's
        %% process counts it (effect `refused').
        no when element(1, Msg) =:= trace; element(1, Msg) =:= riarc_sealed -> fx(refused, St);
        no -> St
    end.

%% App. B reordering: a direct event of a process the tracer knows neither as traced (Γ)
%% nor as routed (Π) belongs to a child whose spawn event has not arrived yet.
direct(Event, St = #tracer{pi = Pi, gamma = Gamma}) ->
    S = origin(Event),
    case is_map_key(S, Pi) orelse is_map_key(S, Gamma) of
        true -> handle_direct(Event, St);
        false -> St#tracer{reordered = St#tracer.reordered + 1,
                       pending = riarc_reorder:hold(S, Event, St#tracer.pending)}
    end.

flush_pending(S, St = #tracer{pending = Pending}) ->
    case riarc_reorder:release(S, Pending) of
        {[], _} -> St;
        {Events, Rest} -> lists:foldl(fun direct/2, St#tracer{pending = Rest}, Events)
    end.

%%% ---------------------------------------------------------------------------
%%% Alg. 1: direct events, detach requests and forwarding in direct mode
%%% ---------------------------------------------------------------------------

%% Alg. 1 HANDLSPWN∘
handle_direct(E = {spawn, P, C, MFA}, St) ->
    Parent = init_parent(C, P, St),
    case route(P, St) of
        undefined ->
            %% case Π(e.ıS) = ⊥: this tracer handles e, then instruments the child.
            child(C, Parent, MFA,
                  riarc_tracer_instrument:instrument(direct, {spawn, Parent, C, MFA}, self_of(St),
                                                     analyse(E, perturb(St))));
        _ ->
            %% case Π(e.ıS) = ȷT: dispatch; the child is routed too (I9), to the tracer
            %% that will ask for it: until then its events are held here (short routes).
            %% Race: the spawn event may be the last of P's events a parked detach
            %% request for P waits for; that request is handled only once C has its
            %% route and C's held events are on their way (found by riarc_explore: the
            %% tracer otherwise ended with C's events still held).
            St1 = child(C, Parent, MFA, add_route(C, {held, []}, 'I9', dispatch({evt, E}, P, St))),
            dispatched(P, St1)
    end;
%% An event of S's that no monitor sees, but one of those a Cut counts.
handle_direct({ignored, S}, St) ->
    case route(S, St) of
        undefined -> St;
        _Next -> dispatched(S, St)
    end;
%% Alg. 1 HANDLEXIT∘
handle_direct(E = {exit, S, Reason}, St) ->
    case route(S, St) of
        undefined -> try_gc(del_gamma(S, 'I5', analyse(E, root_exit(S, Reason, St))));
        _ -> dispatched_exit(S, dispatch({evt, E}, S, St))
    end;
%% A cut, as HANDLCOMM∘ below, but first noted here when it is routed on.
%% Race: a process may cut its own view before its tracer takes it over, so that the
%% cut reaches this tracer and is routed on. A child it spawns then inherits this
%% tracer, the one the VM has for it, not the one the cut is routed to: this tracer
%% takes note that it may get events of children never seen to start (A4).
handle_direct(E = {cut, S, Why}, St = #tracer{parts = Parts}) ->
    case route(S, St) of
        undefined -> analyse(E, St);
        _ ->
            St1 = St#tracer{parts = riarc_tracer_parts:seen_cut(Why, Parts)},
            dispatched(S, dispatch({evt, E}, S, St1))
    end;
%% Alg. 1 HANDLCOMM∘ (send, receive, timeout and init events, and a start of a process on
%% another node: the backends' `remote_spawn', routed as S's other events and judged,
%% not stepped, by S's partition's tracer: analyse/2)
handle_direct(E, St) ->
    S = origin(E),
    case route(S, St) of
        undefined -> analyse(E, St);
        _ -> dispatched(S, dispatch({evt, E}, S, St))
    end.

%% The parent the child's init event names (riarc_backend:init_parent/3), asked only of
%% a backend that may name another than the spawn event's (`init_parent' in the cfg, read
%% once when the tracer starts): a spawn event costs no backend call otherwise.
init_parent(C, P, #tracer{cfg = #{init_parent := true, backend := Backend}}) ->
    riarc_backend:init_parent(Backend, C, P);
init_parent(_C, P, _St) ->
    P.

%% After its spawn event: the child's trace opens with its init event, then what it did
%% before its spawn event reached us (App. B).
child(C, P, MFA, St) ->
    St1 = case St#tracer.cfg of
              #{init_from_spawn := true} -> handle_init({init, C, P, MFA}, St);
              #{} -> St
          end,
    flush_pending(C, St1).

%% The system's root ended abnormally: the session says so (a system that crashes at
%% start gives no verdict to show it).
root_exit(S, Reason, St) when Reason =/= normal, Reason =/= shutdown ->
    case riarc_tracer_parts:root_of(St#tracer.parts) of
        {S, MFA} -> report({riarc_root_exit, self_of(St), S, MFA, Reason}, St);
        _ -> St
    end;
root_exit(_S, _Reason, St) ->
    St.

%% The child's init event, made here from its parent's spawn event: HANDLCOMM∘, except
%% that it is not one of the events the backend sent, so it does not count towards a Cut.
handle_init(E = {init, C, _, _}, St) ->
    case route(C, St) of
        undefined -> analyse(E, St);
        _ -> dispatch({evt, E}, C, St)
    end.

%% A direct event of S went on along its route: one more of the events a detach request
%% for S may be waiting for.
dispatched(S, St = #tracer{seen = Seen}) ->
    N = case Seen of #{S := K} when is_integer(K) -> K + 1; #{} -> 1 end,
    unpark(S, St#tracer{seen = Seen#{S => N}}).

dispatched_exit(S, St = #tracer{seen = Seen}) ->
    unpark(S, St#tracer{seen = Seen#{S => exited}}).

%% Alg. 1 DISPATCHDTC. The request may only be handled once every event of S that the
%% backend sent this tracer has been dispatched ahead of it (Invariant I18: a dtc
%% overtakes no event of its process). The Cut says how many that is; a request that
%% arrives early is parked until they have all come.
dispatch_dtc(T, S, Cut, St) ->
    case route(S, St) of
        undefined ->
            %% Invariant I17: a detach request names a process this tracer routes.
            violation('I17', {dtc_without_route, T, S}, St);
        Route ->
            case complete(S, Cut, St) of
                true ->
                    St1 = St#tracer{seen = maps:remove(S, St#tracer.seen),
                                parked = maps:remove(S, St#tracer.parked)},
                    %% Short routes: the requester T is where S's events belong. What was
                    %% held for S goes to T now, then the acknowledgement, on one channel
                    %% (so in this order); a known route must be T itself.
                    St2 = case Route of
                              {held, Q} ->
                                  lists:foldl(fun(R, A) -> send(T, R, A) end,
                                              St1#tracer{pi = (St1#tracer.pi)#{S := T}}, lists:reverse(Q));
                              T -> St1;
                              Other -> violation('I17', {dtc_from_other_tracer, T, S, Other}, St1)
                          end,
                    %% Invariant I11: the next-hop is dropped once the acknowledgement is sent.
                    try_gc(del_route(S, 'I11', dispatch({dtc, T, S}, S, St2)));
                false ->
                    St#tracer{parked = (St#tracer.parked)#{S => {T, Cut}}}
            end
    end.

unpark(S, St = #tracer{parked = Parked}) ->
    case Parked of
        #{S := {T, Cut}} -> dispatch_dtc(T, S, Cut, St);
        #{} -> St
    end.

complete(_S, none, _St) -> true;
complete(S, exited, #tracer{seen = Seen}) -> maps:get(S, Seen, 0) =:= exited;
complete(S, {count, N}, #tracer{seen = Seen}) ->
    case maps:get(S, Seen, 0) of
        exited -> true;
        K -> K >= N
    end.

%% Alg. 1 FORWDRTD∘
forwd_rtd(R = {riarc_rtd, _, {dtc, T, S}}, St) ->
    %% FORWDDTC
    case route(S, St) of
        undefined -> violation('I20', {dtc_ack_without_route, T, S}, St);
        _ -> try_gc(del_route(S, 'I12', forwd(R, S, St)))
    end;
forwd_rtd(R = {riarc_rtd, _, {evt, E}}, St) ->
    %% FORWDEVT
    S = origin(E),
    case route(S, St) of
        undefined -> violation('I19', {routed_event_without_route, E}, St);
        Next ->
            St1 = forwd(R, S, St),
            case E of
                {spawn, _, C, _} -> add_route(C, child_route(Next), 'I10', St1);
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
            St1 = check(is_map_key(P, St#tracer.gamma), 'I21', {routed_event_not_traced, E}, St),
            riarc_tracer_instrument:instrument(priority, E, Disp, analyse(E, St1));
        Next ->
            add_route(C, child_route(Next), 'I10', forwd(R, P, St))
    end;
%% Alg. 3 HANDLEXIT•
handle_routed(exit, E = {exit, S, _}, R, _Disp, St) ->
    case route(S, St) of
        undefined -> try_gc(del_gamma(S, 'I5', analyse(E, St)));
        _ -> forwd(R, S, St)
    end;
%% Alg. 3 HANDLCOMM•
handle_routed(comm, E, R, _Disp, St) ->
    S = origin(E),
    case route(S, St) of
        undefined ->
            St1 = check(is_map_key(S, St#tracer.gamma), 'I21', {routed_event_not_traced, E}, St),
            analyse(E, St1);
        _ -> forwd(R, S, St)
    end.

%% Alg. 3 HANDLDTC
handle_dtc(R, T, S, St) ->
    case route(S, St) of
        undefined ->
            %% Invariant I22, first half: an acknowledgement with no next-hop is ours.
            St1 = check(T =:= self_of(St), 'I22', {unexpected_dtc_ack, T, S}, St),
            maybe_direct(mark_detached(S, St1#tracer{acked = St1#tracer.acked + 1}));
        _ ->
            %% Invariant I22, second half: one we can route is somebody else's. The
            %% listing of Alg. 3 only forwards here; I12 asks every forwarder of an
            %% acknowledgement to drop the stale next-hop, so we do, and try to end.
            St1 = check(T =/= self_of(St), 'I22', {own_dtc_ack_routed, T, S}, St),
            try_gc(del_route(S, 'I12', forwd(R, S, St1)))
    end.

%% Race: S may have exited, its exit routed to us and S purged from Γ, before the
%% acknowledgement of its detach arrives; there is then nothing left to mark.
mark_detached(S, St = #tracer{gamma = Gamma}) ->
    case Gamma of
        #{S := priority} -> St#tracer{gamma = Gamma#{S := direct}};
        #{S := direct} -> violation('I22', {dtc_ack_twice, S}, St);
        #{} -> St
    end.

%% Invariant I15: priority mode ends only when every traced process is detached. A
%% process whose detach is pending can exit, its routed exit purging it from Γ, before
%% its acknowledgement arrives: the tracer must not go direct until every dtc it issued
%% is acknowledged, or that late acknowledgement reaches it in direct mode with no route
%% (I20).
maybe_direct(St = #tracer{acked = Acked, dtc_issued = Issued}) when Acked < Issued ->
    St;
maybe_direct(St = #tracer{gamma = Gamma}) ->
    case lists:member(priority, maps:values(Gamma)) of
        true -> St;
        false -> drain_held(St#tracer{mode = direct})
    end.

%% Messages held back in priority mode are handled first, at the switch: they arrived
%% before anything still in the mailbox.
drain_held(St = #tracer{held = Held}) ->
    case queue:out(Held) of
        {{value, Msg}, Rest} -> drain_held(direct_in(Msg, St#tracer{held = Rest}));
        {empty, _} -> St
    end.

%%% ---------------------------------------------------------------------------
%%% A relayed child's trace, and Alg. 4 DISPATCH, FORWD (Alg. 2 INSTRUMENT and Alg. 4
%%% DETACH: riarc_tracer_instrument; TRYGC: riarc_tracer_state)
%%% ---------------------------------------------------------------------------

%% The relayed trace of a child on another node (riarc_tracer_instrument:remote_child/2),
%% from the session: its events, in their order there, analysed as this partition's; its
%% end; or the session's word that N such children will never be relayed (their node went
%% down, or none showed there: the Info says why), which leaves this partition's trace
%% incomplete: an error for it (the session's), as for a child this node cannot follow.
%% Trust boundary: only the session, with its token, relays.
relayed({riarc_relayed, Token, What, Arg}, St = #tracer{cfg = Cfg}) ->
    case maps:get(token, Cfg, undefined) of
        Token -> relayed1(What, Arg, St);
        _ -> report({riarc_forged, self_of(St), relayed}, St)
    end.

relayed1(events, Events, St) ->
    lists:foldl(fun analyse/2, St, Events);
relayed1('end', _Child, St = #tracer{parts = Parts}) ->
    try_gc(St#tracer{parts = riarc_tracer_parts:awaited(1, Parts)});
relayed1(lost, {Missing, Info}, St = #tracer{parts = Parts}) ->
    St1 = report({riarc_remote_child, self_of(St), partition, Info}, St),
    try_gc(St1#tracer{parts = riarc_tracer_parts:awaited(Missing, Parts)}).

%% Alg. 4 DISPATCH: wrap a message of this tracer's about S in a routing packet, sent
%% along S's route.
dispatch(Msg, S, St) ->
    forwd({riarc_rtd, self_of(St), Msg}, S, St).

%% Alg. 4 FORWD: pass a routing packet about S on, unchanged (it keeps its dispatch
%% tracer). Short routes: a route is the tracer S's events belong to, or, while that
%% tracer has not asked for S yet (its detach request carries its name), `held': the
%% packets wait here, in order, and go to it in one hop when it asks (DISPATCHDTC).
%% Paper: a route is the next hop towards the owner, and an early event of a deep process
%% travels through every ancestor's tracer; here it travels once.
forwd(R, S, St = #tracer{pi = Pi}) ->
    case Pi of
        #{S := {held, Q}} -> St#tracer{pi = Pi#{S := {held, [R | Q]}}};
        #{S := T} -> send(T, R, St)
    end.

send(T, R, St) ->
    fx({send, T, R}, St#tracer{routed = St#tracer.routed + 1}).

%% The route of a child whose spawn event takes its parent's route: the same tracer
%% when it is known, else held until its own tracer asks.
child_route({held, _}) -> {held, []};
child_route(T) -> T.

%%% ---------------------------------------------------------------------------
%%% ANALYSEEVT (App. C.5.2) and verdicts
%%% ---------------------------------------------------------------------------

set_monitor(Root, MFA, St = #tracer{cfg = #{lambda := Lambda}}) ->
    case riarc_tracer_instrument:lookup(Lambda, MFA, St) of
        {{ok, Mon}, St1} ->
            %% The session learns the root's partition now, so that it can give it a
            %% verdict even if this tracer never reports one (killed on overload).
            start_analysis({Root, MFA}, Mon, report({riarc_partition, self_of(St1), Root, MFA}, St1));
        {undefined, St1} -> St1
    end.

%% The tracer's own partition (riarc_tracer_parts:own/4).
start_analysis(Part, Mon, St = #tracer{cfg = Cfg, parts = Parts}) ->
    {Parts1, Fx} = riarc_tracer_parts:own(Part, Mon, Cfg, Parts),
    effects(Fx, St#tracer{parts = Parts1}).

%% ANALYSEEVT (riarc_tracer_parts:step/4), but for two kinds of event that are the
%% tracer's to judge (unless its partition's events are relayed to another node's): a
%% start of a process on another node (riarc_tracer_instrument:remote_child/2, whether or
%% not the monitor still runs), and a call that may take away what riarc sees.
analyse(E = {remote_spawn, _, _, _}, St = #tracer{parts = Parts}) ->
    case riarc_tracer_parts:relays(Parts) of
        false -> riarc_tracer_instrument:remote_child(E, St);
        true -> step(E, St)
    end;
%% A call of S's that may take away what riarc sees (riarc_trace_pattern:call_event/2):
%% the session makes the partition's verdict an error from here on, unless its monitor
%% had already rejected on the events before it. The monitor is not stepped: it is no
%% event of the property's.
%% A process that turns off all of its own flags sends nothing more, not even its exit:
%% its trace ends here, as at an exit, but with nothing for the monitor to step, so that
%% the run does not wait for ever for it.
%% Race: with the monitor in an analysis process, its verdict on events before a cut of
%% S's own view may reach the session after the tracer's report of the cut, and a reject
%% reached before the cut would read as an error. Such a cut goes in order with S's
%% events, through the analysis process (riarc_analysis), which tells the session only
%% if its monitor had not decided.
analyse(E = {cut, S, Why}, St = #tracer{parts = Parts0}) when element(1, Why) =:= trace;
                                                             element(1, Why) =:= trace_pattern;
                                                             element(1, Why) =:= patterns_changed ->
    case riarc_tracer_parts:relays(Parts0) of
        false ->
            Key = riarc_tracer_parts:key_of(S, Parts0),
            Scope = riarc_trace_pattern:cut_scope(S, Why),
            Parts = case Scope of
                        all -> Parts0;
                        _ -> riarc_tracer_parts:own_call_cut(S, riarc_tracer_parts:seen_cut(Why, Parts0))
                    end,
            St0 = case Scope =/= all andalso riarc_tracer_parts:cut_in_order(S, Parts) of
                      true -> fx({analyse_cut, E}, St#tracer{parts = Parts});
                      false -> report({riarc_cut, Key, S, Why}, St#tracer{parts = Parts})
                  end,
            %% What S's later children inherit may cut any other partition's view: at
            %% once, not in order with S's events.
            St1 = case Scope of
                      inherited -> report({riarc_cut, Key, S, {inherited, Why}}, St0);
                      _ -> St0
                  end,
            case Why of
                {trace, [S, false, Flags]} when is_list(Flags) ->
                    case lists:member(all, Flags) andalso route(S, St1) =:= undefined
                        andalso is_map_key(S, St1#tracer.gamma) of
                        true -> try_gc(del_gamma(S, 'I5', St1));
                        false -> St1
                    end;
                _ -> St1
            end;
        true -> step(E, St)
    end;
%% A loss a recording's look found (riarc_recorder): read as a live look's. But a live
%% look that finds S still being taken over looks again later, and a recording's is
%% read once: S's view is cut now, whatever S's mode (a child its parent left untraced
%% shows no event for its takeover to end with; its partition waited open until the
%% file's end, verdict none, where the live run gave error).
analyse(E = {cut, S, Why}, St = #tracer{parts = Parts, gamma = G}) ->
    case {riarc_tracer_parts:relays(Parts), G} of
        {false, #{S := priority}} -> view_cut(S, Why, St);
        {false, _} -> lost(S, Why, St);
        {true, _} -> step(E, St)
    end;
%% A timer S set to send Dest the atom `timeout', which the VM traces exactly as a
%% receive timeout of Dest's (riarc_analysis_core:timer_reading/2): S's partition's
%% analysis reads S's timeouts from here on as either, and/or the session counts an
%% error of the run, never a clean accept.
analyse({timer_timeout, S, Dest}, St = #tracer{parts = Parts}) ->
    Other = {riarc_ambiguous_timer, riarc_tracer_parts:key_of(S, Parts), S, Dest},
    case riarc_analysis_core:timer_reading(S, Dest) of
        own -> step({timer_timeout, S, S}, St);
        both -> report(Other, step({timer_timeout, S, S}, St));
        other -> report(Other, St)
    end;
analyse(E, St) ->
    step(E, St).

step(E, St = #tracer{cfg = Cfg, parts = Parts}) ->
    {Parts1, Fx} = riarc_tracer_parts:step(E, origin(E), Cfg, Parts),
    effects(Fx, St#tracer{parts = Parts1}).

%% Test hook: be slow here (cfg's perturb).
perturb(St = #tracer{cfg = #{perturb := undefined}}) -> St;
perturb(St) -> fx(perturb, St).
