%% @doc A RIARC tracer's state and what every step does to it, apart from the algorithm
%% that decides the steps ({@link riarc_tracer_core}): the maps Π and Γ with the
%% invariants each change keeps (I2, I3, I6, I7), the effects a step gives, the reports
%% to the session, invariant checking, and the tracer's end (Alg. 4 TRYGC) with what it
%% tells the session last. {@link riarc_tracer_control} (control requests) uses it too.
%% ```
%% 1> Cfg = #{lambda => riarc_lambda:new(fun(_) -> undefined end), backend => riarc_backend:new(riarc_backend_evm, riarc_backend_evm:config([recv])), session => self(), checks => true, perturb => undefined, start_tracer => fun(_, _, _, _) -> error(none) end, init_from_spawn => true, self => t0}.
%% 2> {St, []} = riarc_tracer_core:init_root(Cfg, p, {m, f, []}, none).
%% 3> riarc_tracer_state:route(p, St).
%% undefined
%% 4> {_, [{send, _, {riarc_violation, t0, Id, Info, _}}]} = riarc_tracer_state:out1(riarc_tracer_state:add_gamma(p, direct, St)), {Id, Info}.
%% {'I2',{already_traced,p}}
%% '''
-module(riarc_tracer_state).

-export([fx/2, out1/1, effects/2, report/2, self_of/1, check/4, violation/3, state_map/1,
         route/2, add_route/4, del_route/3, add_gamma/3, del_gamma/3, origin/1,
         try_gc/1, finish/1]).

-include("riarc_tracer_state.hrl").

-type state() :: riarc_tracer_core:state().
-type sid() :: riarc_event:sid().
-type effect() :: riarc_tracer_core:effect().

%%% ---------------------------------------------------------------------------
%%% A step's effects and reports
%%% ---------------------------------------------------------------------------

%% @doc One more effect of this step.
-spec fx(effect(), state()) -> state().
fx(E, St = #tracer{fx = Fx}) -> St#tracer{fx = [E | Fx]}.

%% @doc The step's end: the state, and its effects in the order they were given.
-spec out1(state()) -> {state(), [effect()]}.
out1(St = #tracer{fx = []}) -> {St, []};
out1(St = #tracer{fx = Fx}) -> {St#tracer{fx = []}, lists:reverse(Fx)}.

%% @doc Effects another part gave (the partitions: riarc_tracer_parts), in order: as
%% fx/2 for each, with the state copied once (a step of the hot path gives several).
-spec effects([effect()], state()) -> state().
effects([], St) -> St;
effects(Fx, St = #tracer{fx = Acc}) -> St#tracer{fx = lists:reverse(Fx, Acc)}.

%% @doc A message to the session.
-spec report(term(), state()) -> state().
report(Msg, St = #tracer{cfg = #{session := Session}}) ->
    fx({send, Session, Msg}, St).

%% @doc The tracer's own name (cfg's `self').
-spec self_of(state()) -> riarc_tracer_core:tracer().
self_of(#tracer{cfg = #{self := Self}}) -> Self.

%%% ---------------------------------------------------------------------------
%%% Invariant checking
%%% ---------------------------------------------------------------------------

%% @doc Invariant Id holds (true) or is violated (false, with Info), when cfg's `checks'
%% says invariants are checked.
-spec check(boolean(), atom(), term(), state()) -> state().
check(true, _Id, _Info, St) -> St;
check(false, Id, Info, St = #tracer{cfg = #{checks := true}}) -> violation(Id, Info, St);
check(false, _Id, _Info, St) -> St.

%% @doc A violated invariant, reported with the tracer's state; the tracer goes on with
%% what it can do, so that one fault does not silence the rest of the run.
-spec violation(atom(), term(), state()) -> state().
violation(Id, Info, St) ->
    report({riarc_violation, self_of(St), Id, Info, state_map(St)}, St).

%% @doc The tracer's state for diagnostics and invariant reports.
-spec state_map(state()) -> map().
state_map(#tracer{mode = M, pi = Pi, gamma = G, parts = Parts, pending = P, parked = Pk}) ->
    maps:merge(#{mode => M, pi => Pi, gamma => G, pending => riarc_reorder:to_map(P), parked => Pk},
               riarc_tracer_parts:state_map(Parts)).

%%% ---------------------------------------------------------------------------
%%% Maps with their invariants (I2, I3, I6, I7)
%%% ---------------------------------------------------------------------------

%% @doc S's entry in Π (a next hop, or the packets held for its tracer), or undefined.
-spec route(sid(), state()) -> riarc_tracer_core:tracer() | {held, [term()]} | undefined.
route(S, #tracer{pi = Pi}) ->
    maps:get(S, Pi, undefined).

%% @doc Invariant I6 (with the caller's own, Why: I8, I9 or I10): a next-hop is never
%% added twice.
-spec add_route(sid(), riarc_tracer_core:tracer() | {held, [term()]}, atom(), state()) -> state().
add_route(S, T, Why, St = #tracer{pi = Pi}) ->
    St1 = check(not is_map_key(S, Pi), 'I6', {Why, route_exists, S, T}, St),
    St1#tracer{pi = Pi#{S => T}}.

%% @doc Invariant I7 (with I11 or I12): only an existing next-hop is removed.
-spec del_route(sid(), atom(), state()) -> state().
del_route(S, Why, St = #tracer{pi = Pi}) ->
    St1 = check(is_map_key(S, Pi), 'I7', {Why, no_route, S}, St),
    St1#tracer{pi = maps:remove(S, Pi)}.

%% @doc Invariant I2 (I4): a traced process is never added twice.
-spec add_gamma(sid(), riarc_tracer_core:mode(), state()) -> state().
add_gamma(S, Mode, St = #tracer{gamma = G}) ->
    St1 = check(not is_map_key(S, G), 'I2', {already_traced, S}, St),
    St1#tracer{gamma = G#{S => Mode}}.

%% @doc Invariant I3 (I5): only a traced process is removed. The last process of an
%% adopted partition to go ends that partition.
-spec del_gamma(sid(), atom(), state()) -> state().
del_gamma(S, Why, St = #tracer{gamma = G, cfg = Cfg, parts = Parts}) ->
    St1 = check(is_map_key(S, G), 'I3', {Why, not_traced, S}, St),
    {Parts1, Fx} = riarc_tracer_parts:left(S, Cfg, Parts),
    effects(Fx, St1#tracer{gamma = maps:remove(S, G), parts = Parts1}).

%% @doc The process an event is of, the core's own kinds too: an event no monitor sees
%% (`ignored'), a start on another node.
-spec origin(term()) -> sid().
origin({ignored, S}) -> S;
origin({remote_spawn, S, _, _}) -> S;
origin(E) -> riarc_event:origin(E).

%%% ---------------------------------------------------------------------------
%%% Alg. 4 TRYGC: the tracer's end
%%% ---------------------------------------------------------------------------

%% @doc Alg. 4 TRYGC. Invariant I1: the tracer ends only with Γ = Π = ∅, and (one
%% partition spanning nodes) no relayed child still to end.
-spec try_gc(state()) -> state().
try_gc(St = #tracer{gamma = G, pi = P, parts = Parts}) when map_size(G) =:= 0, map_size(P) =:= 0 ->
    case riarc_tracer_parts:awaiting(Parts) of
        0 -> finish(St);
        _ -> St
    end;
try_gc(St) ->
    St.

%% @doc The tracer ends: its partitions' last reports, what it holds that nobody will
%% get, and the effect `stop' (last_words/1).
-spec finish(state()) -> state().
finish(St = #tracer{pending = Pending}) ->
    Empty = riarc_reorder:is_empty(Pending),
    %% Invariant A4, unless a cut left children of this tracer's processes traced but
    %% never seen to start (riarc_tracer_parts:hides_children/1): the system did that,
    %% and its partitions' views were cut for it.
    St1 = check(Empty orelse riarc_tracer_parts:hides_children(St#tracer.parts), 'A4',
                {events_of_unknown_processes, riarc_reorder:to_map(Pending)}, St),
    %% Events left here belong to processes whose monitors did not get them (see "Late
    %% events" in docs/core.md): their verdicts cannot be trusted.
    St2 = case Empty of
              true -> St1;
              false -> report({riarc_incomplete, self_of(St1), riarc_reorder:to_map(Pending)}, St1)
          end,
    %% Invariant I16: one detach request per process taken over in priority mode.
    St3 = check(St2#tracer.dtc_issued =:= St2#tracer.detached, 'I16',
                {dtc_issued, St2#tracer.dtc_issued, detached, St2#tracer.detached}, St2),
    {Parts, Fx} = riarc_tracer_parts:finish(St3#tracer.cfg, St3#tracer.parts),
    last_words(effects(Fx, St3#tracer{parts = Parts})).

%% The tracer ends (effect stop): what it tells the session last, after its other
%% effects of this step (its partition's verdict, most often), goes with its statistics
%% in the one effect, which its process sends as one message (riarc_tracer). A tracer
%% it started is announced on its own: the session must know it before its end.
last_words(St = #tracer{fx = Fx, cfg = #{session := Session}}) ->
    Last = fun({send, To, Msg}) -> To =:= Session andalso element(1, Msg) =/= riarc_tracer_up;
              (_) -> false
           end,
    {Told, Before} = lists:splitwith(Last, Fx),
    St#tracer{fx = [{stop, lists:reverse([M || {send, _, M} <- Told]), stats(St)} | Before]}.

%% What a tracer did, for its last words.
-spec stats(state()) -> riarc_tracer_core:stats().
stats(#tracer{collected = C, routed = R, reordered = O}) ->
    #{collected => C, routed => R, reordered => O}.
