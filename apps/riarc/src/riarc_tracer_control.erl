%% @doc Control requests to a RIARC tracer ({@link riarc_tracer_core}), from its session:
%% `info' (its state), `settle' (an answer once it holds nothing for anyone, for
%% riarc_session:settle/2) and `stop' (it stops tracing its processes, reports its
%% partition as it stands, with what a stop that came before routing had settled leaves
%% unseen, and ends). With cfg's `token', a request must carry it: one that does not was
%% forged by the monitored system and is refused.
%% ```
%% 1> Cfg = #{lambda => riarc_lambda:new(fun(_) -> undefined end), backend => riarc_backend:new(riarc_backend_evm, riarc_backend_evm:config([recv])), session => self(), checks => true, perturb => undefined, start_tracer => fun(_, _, _, _) -> error(none) end, init_from_spawn => true, self => t0}.
%% 2> {St, []} = riarc_tracer_core:init_root(Cfg, p, {m, f, []}, none).
%% 3> {_, [{send, _, Settled}]} = riarc_tracer_control:out(riarc_tracer_control:control(self(), r, settle, St)), Settled.
%% {riarc_settled,t0,r}
%% '''
-module(riarc_tracer_control).

-export([control/4, out/1]).

-include("riarc_tracer_state.hrl").

-import(riarc_tracer_state, [fx/2, out1/1, effects/2, report/2, self_of/1, state_map/1, origin/1,
                             finish/1]).

-type state() :: riarc_tracer_core:state().

%% @doc A control request Req from From, to be answered with Ref. Trust boundary: with
%% cfg's `token', only `{Token, Req}' is taken.
-spec control(riarc_tracer_core:tracer(), term(), term(), state()) -> state().
control(From, Ref, Req, St = #tracer{cfg = Cfg}) ->
    case {Cfg, Req} of
        {#{token := T}, {T, Req1}} -> control1(From, Ref, Req1, St);
        {#{token := _}, _} -> report({riarc_forged, self_of(St), control}, St);
        {#{}, _} -> control1(From, Ref, Req, St)
    end.

control1(From, Ref, info, St) ->
    fx({send, From, {Ref, state_map(St)}}, St);
%% Settling (riarc_session:settle/2): the answer comes once this tracer holds nothing for
%% anyone (out/1 looks after each step): its takeovers acknowledged, no event waiting for
%% its spawn event (App. B) or for its process's tracer to ask. It then stops cutting
%% anything short (stopped_short/1) but what the system does after.
control1(From, Ref, settle, St = #tracer{settling = W}) ->
    St#tracer{settling = [{From, Ref} | W]};
control1(_From, _Ref, stop, St = #tracer{gamma = G}) ->
    St1 = lists:foldl(fun(S, A) -> fx({clear, S}, A) end, St, maps:keys(G)),
    St2 = stopped_short(St1),
    finish(St2#tracer{pending = riarc_reorder:new(), gamma = #{}, pi = #{}, held = queue:new()}).

%% Race: a stop may reach this tracer before routing has settled: events it holds for a
%% process whose tracer has not asked for them yet, events waiting for their spawn event
%% (App. B), direct events deferred in priority mode, a takeover not yet acknowledged,
%% relayed children not yet ended. Those events never reach their monitor, and a
%% partition that ends here without a verdict did not end with its trace: the session is
%% told (riarc_stopped_short), so that it reads inconclusive instead of none. Lost
%% counts per process: what this tracer held; Own: whether this partition's own trace
%% may lack some (its takeover unfinished, or events it cannot place).
stopped_short(St = #tracer{pi = Pi, pending = Pending, held = Held, mode = Mode, parts = Parts}) ->
    Routed = maps:fold(fun(_S, {held, Q}, A) -> lists:foldl(fun count_origin/2, A, Q);
                          (_S, _T, A) -> A
                       end, #{}, Pi),
    Lost = maps:fold(fun(S, Es, A) -> maps:update_with(S, fun(N) -> N + length(Es) end, length(Es), A) end,
                     Routed, riarc_reorder:to_map(Pending)),
    Own = Mode =:= priority orelse not queue:is_empty(Held) orelse riarc_tracer_parts:awaiting(Parts) > 0
        orelse not riarc_reorder:is_empty(Pending),
    St1 = case Own orelse map_size(Lost) > 0 of
              true -> report({riarc_stopped_short, self_of(St), #{own => Own, lost => Lost}}, St);
              false -> St
          end,
    %% What may be missing from this tracer's own partition's trace may be missing from
    %% the partitions it adopted too: the same held messages could be theirs.
    case Own of
        true -> effects(riarc_tracer_parts:stopped_short(St1#tracer.cfg, Parts), St1);
        false -> St1
    end.

%% @doc The step's end (riarc_tracer_state:out1/1), once those waiting for the tracer to
%% settle are answered if it has.
-spec out(state()) -> {state(), [riarc_tracer_core:effect()]}.
out(St = #tracer{settling = [_ | _]}) ->
    case settled(St) of
        true -> out1(lists:foldl(fun({From, Ref}, A) -> fx({send, From, {riarc_settled, self_of(A), Ref}}, A) end,
                                 St#tracer{settling = []}, lists:reverse(St#tracer.settling)));
        false -> out1(St)
    end;
out(St) ->
    out1(St).

settled(#tracer{mode = Mode, pending = Pending, pi = Pi}) ->
    Mode =:= direct andalso riarc_reorder:is_empty(Pending)
        andalso not lists:any(fun({held, [_ | _]}) -> true; (_) -> false end, maps:values(Pi)).

count_origin({riarc_rtd, _, {evt, E}}, A) ->
    maps:update_with(origin(E), fun(N) -> N + 1 end, 1, A);
count_origin(_Packet, A) ->
    A.
