%% @doc Alg. 2 INSTRUMENT of the RIARC tracer ({@link riarc_tracer_core}): where the
%% partition of a child goes when a process the tracer traces spawns it. Λ (cfg's
%% `lambda') gives the child a monitor or leaves it in its parent's partition. With a
%% monitor, the child gets a tracer of its own (Alg. 4 TRACER: cfg's `start_tracer'), or,
%% with cfg's `adopt', its partition is adopted: it stays in this tracer
%% ({@link riarc_tracer_adopted}). Without one, it joins its parent's partition: this
%% tracer traces it already (tracing inheritance), or takes it over from the dispatch
%% tracer (Alg. 4 DETACH). One partition spanning nodes: a child from another node that
%% Λ leaves in its parent's partition gets a tracer whose events are relayed to that
%% partition's tracer on the parent's node; and a child this partition started on
%% another node (remote_child/2) is relayed here, or lost to the partition, which the
%% session is told.
%%
%% Pure, as the core: each function takes the tracer's state and returns it with its
%% effects added ({@link riarc_tracer_state}). The core calls it; it never calls the core.
%% ```
%% 1> Cfg = #{lambda => riarc_lambda:new(fun({m, g, []}) -> {ok, fun M(_) -> M end}; (_) -> undefined end), backend => riarc_backend:new(riarc_backend_evm, riarc_backend_evm:config([recv])), session => self(), checks => true, perturb => undefined, start_tracer => fun(_Mon, C, _MFA, _Disp) -> {tracer_of, C} end, init_from_spawn => true, self => t0}.
%% 2> {St, []} = riarc_tracer_core:init_root(Cfg, p, {m, f, []}, none).
%% 3> St1 = riarc_tracer_instrument:instrument(direct, {spawn, p, c, {m, h, []}}, t0, St), riarc_tracer_core:gamma(St1).
%% [c,p]
%% 4> St2 = riarc_tracer_instrument:instrument(direct, {spawn, p, d, {m, g, []}}, t0, St1), riarc_tracer_state:route(d, St2).
%% {tracer_of,d}
%% 5> {_, Fx} = riarc_tracer_state:out1(St2), [F || F = {started, _, _} <- Fx].
%% [{started,{tracer_of,d},d}]
%% '''
-module(riarc_tracer_instrument).

-export([instrument/4, lookup/3, remote_child/2, detach/3]).

-include("riarc_tracer_state.hrl").

-import(riarc_tracer_state, [fx/2, effects/2, report/2, self_of/1, add_route/4, add_gamma/3]).

-type state() :: riarc_tracer_core:state().
-type sid() :: riarc_event:sid().

%%% ---------------------------------------------------------------------------
%%% Alg. 2 INSTRUMENT
%%% ---------------------------------------------------------------------------

%% @doc Alg. 2 INSTRUMENT∘ / INSTRUMENT•. Disp is the dispatch tracer: this tracer in
%% direct mode, the tracer that dispatched the spawn event in priority mode. The spawn
%% event names the parent the child's init event names (riarc_tracer_core's
%% init_parent/3).
-spec instrument(riarc_tracer_core:mode(), {spawn, sid(), sid(), riarc_event:mfa_args()},
                 riarc_tracer_core:tracer(), state()) -> state().
instrument(Mode, {spawn, P, C, MFA}, Disp, St = #tracer{cfg = #{lambda := Lambda}}) ->
    case relay(P, MFA, lookup(Lambda, MFA, St)) of
        {{ok, Mon}, St1} ->
            case adopts(St1) of
                true -> adopt(Mode, {P, C, MFA}, Mon, Disp, St1);
                false -> new_tracer(Mode, {P, C, MFA}, Mon, Disp, St1)
            end;
        {undefined, St1} when Mode =:= direct ->
            %% Tracing inheritance (A2): this tracer already traces C (I4).
            add_gamma(C, direct, join(C, P, St1));
        {undefined, St1} ->
            %% C was inherited by the dispatch tracer: take it over from there.
            detach(C, Disp, join(C, P, St1))
    end.

%% Λ(e.ςS) ≠ ⊥: a new tracer for C, reached through a next-hop (I8).
new_tracer(Mode, {P, C, MFA}, Mon, Disp, St = #tracer{cfg = Cfg}) ->
    #{start_tracer := Start, session := Session} = Cfg,
    T = Start(Mon, C, MFA, Disp),
    %% Registered by its spawner, before the spawner can end, so that the session
    %% never sees the set of live tracers empty while this one is starting.
    %% With the child's lineage: its parent, and the root of the partition it
    %% was started from (P's), for a session that follows its system onto other
    %% nodes (riarc_follow).
    Up = {riarc_tracer_up, T, C, MFA, {P, riarc_tracer_parts:within(P, St#tracer.parts)}},
    St2 = fx({started, T, C}, fx({send, Session, Up}, St)),
    case Mode of
        direct -> add_route(C, T, 'I8', St2);
        %% Short routes: C's events are with Disp, which sends them to T in one
        %% hop when T asks; none comes through here, so no route is kept (the
        %% paper's next hop would wait here for an acknowledgement that, on a
        %% short route, never passes).
        priority -> St2
    end.

%% Adoption (riarc_tracer_adopted): C's partition stays here, its monitor run here. C is
%% then taken in as a child Λ leaves in its parent's partition is: in direct mode this
%% tracer already traces it (tracing inheritance, I4); in priority mode the dispatch
%% tracer does, and C is taken over from there (DETACH). Nothing is routed for it. The
%% session learns of the partition now, under its own key, with its lineage, as it
%% learns of a new tracer's: the reports of its monitor carry that key.
adopts(#tracer{cfg = #{adopt := Adopt}, parts = Parts}) -> Adopt(riarc_tracer_parts:adopted(Parts));
adopts(_St) -> false.

adopt(Mode, {P, C, MFA}, Mon, Disp, St = #tracer{cfg = Cfg, parts = Parts}) ->
    {Parts1, Fx} = riarc_tracer_parts:adopt(C, MFA, Mon, P, Cfg, Parts),
    St1 = effects(Fx, St#tracer{parts = Parts1}),
    case Mode of
        direct -> add_gamma(C, direct, St1);
        priority -> detach(C, Disp, St1)
    end.

%% A child Λ leaves in its parent's partition joins it if the parent's is adopted.
join(C, P, St = #tracer{parts = Parts}) ->
    St#tracer{parts = riarc_tracer_parts:join(C, P, Parts)}.

%% One partition spanning nodes, on the child's node: a child from another node that Λ puts
%% in its parent's partition gets a tracer of its own here (its partition on this node),
%% whose events go to the parent's partition's tracer there instead of a monitor here.
%% riarc's own processes are never relayed (riarc_backend_new_processes: nor ever monitored).
relay(P, MFA, Answer = {undefined, St = #tracer{cfg = #{relay_to := _}}}) when is_pid(P), node(P) =/= node() ->
    case riarc_backend_new_processes:is_own(riarc_lambda:logical_mfa(MFA)) of
        false -> {{ok, {'$riarc_relay', P}}, St};
        true -> Answer
    end;
relay(_P, _MFA, Answer) ->
    Answer.

%% @doc Λ(ςS) for a process with this MFA (riarc_lambda:lookup/2), as the tracer takes it:
%% for a spawned child here, and for the root (riarc_tracer_core:init_root/4).
-spec lookup(riarc_lambda:t(), riarc_event:mfa_args(), state()) ->
    {{ok, riarc_monitor:monitor()} | undefined, state()}.
lookup(Lambda, MFA, St) ->
    case riarc_lambda:lookup(Lambda, MFA) of
        {error, Reason} ->
            %% A Spec that fails is the user's bug, not the system's: the process is
            %% left in its parent's partition and the failure is reported.
            {undefined, report({riarc_spec_error, self_of(St), MFA, Reason}, St)};
        Answer -> {Answer, St}
    end.

%%% ---------------------------------------------------------------------------
%%% A child on another node
%%% ---------------------------------------------------------------------------

%% @doc A process P of this partition started a process on another node, where this
%% node's tracing cannot follow it (docs/production.md, "Systems spread over nodes"):
%% nothing in Alg. 1 to 3 covers it. What is lost depends on Λ. ⊥: the child belongs to
%% P's partition, whose trace from here on lacks the child's events, so a verdict its
%% monitor has not reached yet cannot be trusted (once reached, a verdict rests on a
%% complete prefix, and a partition with no monitor has nothing to lose). A monitor: the
%% child's own partition is never monitored. Either way the session is told: an error,
%% never a silent accept.
%%
%% One partition spanning nodes: on a node a session follows the system onto (cfg's
%% relay_nodes), a ⊥ child's events, and its ⊥ descendants' there, are relayed here by
%% the session (riarc_tracer_core's relayed/2); the session is told whose they are, and
%% this tracer does not end (TRYGC) before their relayed trace has, unless its monitor
%% has a verdict already.
-spec remote_child({remote_spawn, sid(), node(), riarc_event:mfa_args()}, state()) -> state().
remote_child({remote_spawn, P, Node, MFA}, St = #tracer{cfg = Cfg = #{lambda := Lambda}}) ->
    Info = #{parent => P, node => Node, mfa => MFA},
    Relayed = case maps:get(relay_nodes, Cfg, []) of
                  %% Nodes that join during the run are followed too (follow_joining):
                  %% the session knows which are.
                  all -> true;
                  Nodes -> lists:member(Node, Nodes)
              end,
    case lookup(Lambda, MFA, St) of
        {undefined, St1 = #tracer{parts = Parts}} when Relayed ->
            report({riarc_remote_child, self_of(St1), relayed, Info},
                   St1#tracer{parts = riarc_tracer_parts:await(Parts)});
        {undefined, St1 = #tracer{parts = Parts}} ->
            case riarc_tracer_parts:monitored(P, Parts) of
                true -> report({riarc_remote_child, riarc_tracer_parts:key_of(P, Parts), partition, Info}, St1);
                false -> St1
            end;
        {{ok, _}, St1} -> report({riarc_remote_child, self_of(St1), own, Info}, St1)
    end.

%%% ---------------------------------------------------------------------------
%%% Alg. 4 DETACH
%%% ---------------------------------------------------------------------------

%% @doc Alg. 4 DETACH(ȷS, ıT): preempt S, then ask the dispatch tracer for S's routed
%% events (both done by the caller, in this order, as the effect {detach, S, Disp}). For
%% a child placed here in priority mode, and for the process a new tracer was started for
%% (riarc_tracer_core:init_tracer/5).
-spec detach(sid(), riarc_tracer_core:tracer(), state()) -> state().
detach(S, Disp, St) ->
    St1 = add_gamma(S, priority, fx({detach, S, Disp}, St)),
    St1#tracer{dtc_issued = St1#tracer.dtc_issued + 1, detached = St1#tracer.detached + 1}.
