%% @doc The partitions a tracer analyses ({@link riarc_tracer_core}), apart from how it
%% routes: its own partition (the root's, or the one it was started for), whose monitor
%% runs in the tracer, in an analysis process of its own (`analysis => isolated'), or is
%% relayed to its remote parent's session (one partition spanning nodes); and the
%% partitions it adopted ({@link riarc_tracer_adopted}). ANALYSEEVT (App. C.5.2) for each,
%% their ends, and the children on other nodes they still wait for.
%%
%% Pure: each call returns the parts and the effects for the core to emit, in order
%% (`{send, Session, Report}', and for an isolated or relayed partition `{analysis, Part,
%% Mon}', `{analyse, E}', `analysis_end', `{relay, Part, P}': riarc_tracer_core's).
%% ```
%% 1> Cfg = #{session => s, explain => 0}, Mon = fun M({exit, _, _}) -> accept; M(_) -> M end.
%% 2> {P0, []} = riarc_tracer_parts:own({p, {m, f, []}}, Mon, Cfg, riarc_tracer_parts:new(t0)).
%% 3> {_, Fx} = riarc_tracer_parts:step({exit, p, normal}, p, Cfg, P0), [element(5, R) || {send, s, R} <- Fx].
%% [accept]
%% '''
-module(riarc_tracer_parts).

-export([new/1, own/4, root/3, adopt/6, adopted/1, join/3, within/2, key_of/2, cut_in_order/2,
         own_call_cut/2, cut_by_own_call/2, seen_cut/2, hides_children/1, monitored/2, step/4,
         left/3, finish/2, stopped_short/2, relays/1, await/1, awaited/2, awaiting/1, root_of/1,
         state_map/1]).
-export_type([t/0]).

-type sid() :: riarc_event:sid().
-type part() :: {sid(), riarc_event:mfa_args()}.
-type effect() :: riarc_tracer_core:effect().
%% An event of a process the tracer traces; a start on another node and a call that may
%% cut riarc's view are its own partition's to pass on when its events are relayed.
-type event() :: riarc_event:traced() | {remote_spawn, sid(), node(), riarc_event:mfa_args()}.

-record(parts, {
    self :: term(),                       % the tracer: its own partition's key
    part :: undefined | part(),           % whose partition its own is
    root :: undefined | part(),           % a root tracer's root
    %% ςM, run here (an analysis), in the partition's analysis process (isolated), or
    %% relayed; undefined once it has a verdict, or when the partition has no monitor.
    mon :: undefined | isolated | riarc_analysis_core:t(),
    %% One partition spanning nodes. Here: the children Λ put in this partition on
    %% followed nodes whose relayed trace has not ended yet (the tracer waits for them).
    %% On the child's node: the remote parent of this partition's root, whose
    %% partition's tracer gets this partition's events.
    awaiting = 0 :: non_neg_integer(),
    relay_of = undefined :: undefined | pid(),
    adopted = riarc_tracer_adopted:new() :: riarc_tracer_adopted:t(),
    %% Processes whose own call cut their view: judged by it (own_call_cut/2).
    own_cut = #{} :: #{sid() => true},
    %% A cut left children of a process here traced but never seen to start
    %% (riarc_trace_pattern:hides_children/1): their events may reach the tracer.
    hidden = false :: boolean()
}).

-opaque t() :: #parts{}.

%% @doc No partition yet; Self: the tracer, its own partition's key.
-spec new(term()) -> t().
new(Self) -> #parts{self = Self}.

%% @doc The tracer's own partition, Part, monitored by Mon: in the tracer, in an analysis
%% process (cfg's `analysis => isolated'), or (Mon `{'$riarc_relay', P}', a child from
%% another node in its remote parent's partition) relayed: its events leave as an
%% analysis process's would (effects analyse, analysis_end), to P's session (effect
%% relay).
-spec own(part(), riarc_monitor:monitor() | {'$riarc_relay', pid()}, map(), t()) -> {t(), [effect()]}.
own(Part, {'$riarc_relay', P}, _Cfg, Ps) ->
    {Ps#parts{part = Part, mon = isolated, relay_of = P}, [{relay, Part, P}]};
own(Part, Mon, Cfg, Ps = #parts{self = Self}) ->
    case Cfg of
        #{analysis := isolated} ->
            {Ps#parts{part = Part, mon = isolated}, [{analysis, Part, Mon}]};
        #{} ->
            {Ps#parts{part = Part, mon = riarc_analysis_core:new(Self, maps:get(explain, Cfg, 0), Part, Mon)}, []}
    end.

%% @doc A root tracer's root (its abnormal exit is reported).
-spec root(sid(), riarc_event:mfa_args(), t()) -> t().
root(Root, MFA, Ps) -> Ps#parts{root = {Root, MFA}}.

%% @doc C's partition adopted (riarc_tracer_adopted), monitored here by Mon, with its
%% lineage: C's parent P and the partition it was started from. The session learns of it
%% now, under its key `{Tracer, C}', as it learns of a new tracer's.
-spec adopt(sid(), riarc_event:mfa_args(), riarc_monitor:monitor(), sid(), map(), t()) -> {t(), [effect()]}.
adopt(C, MFA, Mon, P, Cfg = #{session := Session}, Ps = #parts{self = Self, adopted = A}) ->
    Key = {Self, C},
    An = riarc_analysis_core:new(Key, maps:get(explain, Cfg, 0), {C, MFA}, Mon),
    {Ps#parts{adopted = riarc_tracer_adopted:adopt(C, An, A)},
     [{send, Session, {riarc_adopted, Self, Key, C, MFA, {P, within(P, Ps)}}}]}.

%% @doc How many partitions are adopted and not ended (cfg's adopt is asked with it).
-spec adopted(t()) -> non_neg_integer().
adopted(#parts{adopted = A}) -> riarc_tracer_adopted:count(A).

%% @doc C, spawned by P and left by Λ in P's partition, joins it if P's is adopted.
-spec join(sid(), sid(), t()) -> t().
join(C, P, Ps = #parts{adopted = A}) ->
    Ps#parts{adopted = riarc_tracer_adopted:join(C, P, A)}.

%% @doc The root of the partition of P, a process the tracer traces: an adopted one's,
%% or the tracer's own (none when it has none).
-spec within(sid(), t()) -> sid() | none.
within(P, #parts{adopted = A, part = Part}) ->
    case {riarc_tracer_adopted:owner(P, A), Part} of
        {none, {Root, _}} -> Root;
        {none, undefined} -> none;
        {Root, _} -> Root
    end.

%% @doc The key under which the session knows the partition of S, a process the tracer
%% traces: the tracer's own, or an adopted partition's.
-spec key_of(sid(), t()) -> term().
key_of(S, #parts{self = Self, adopted = A}) ->
    case riarc_tracer_adopted:owner(S, A) of
        none -> Self;
        Root -> {Self, Root}
    end.

%% @doc Whether a cut of S's own view reaches the session through its partition's
%% analysis process, in order with the events before it (S in the tracer's own
%% partition, analysed in a process of its own): a verdict the monitor reached on those
%% events is then told before the cut, and stands, as when the monitor runs here.
-spec cut_in_order(sid(), t()) -> boolean().
cut_in_order(S, #parts{mon = isolated, relay_of = undefined, adopted = A}) ->
    riarc_tracer_adopted:owner(S, A) =:= none;
cut_in_order(_S, _Ps) ->
    false.

%% @doc S's own call cut its view (riarc_trace_pattern:cut_scope/2 says own or
%% inherited): its partition is judged by that call, in order with its events, and a
%% later look that finds S's flags gone adds nothing (cut_by_own_call/2).
-spec own_call_cut(sid(), t()) -> t().
own_call_cut(S, Ps = #parts{own_cut = C}) -> Ps#parts{own_cut = C#{S => true}}.

%% @doc A cut of a process here (its own call, or what a look found): whether it leaves
%% children this tracer will get events of without their start (hides_children/1).
-spec seen_cut(term(), t()) -> t().
seen_cut(Why, Ps = #parts{hidden = H}) ->
    Ps#parts{hidden = H orelse riarc_trace_pattern:hides_children(Why)}.

%% @doc Whether a cut left children of the tracer's processes unseen (seen_cut/2).
-spec hides_children(t()) -> boolean().
hides_children(#parts{hidden = H}) -> H.

%% @doc Whether S's own call cut its view (own_call_cut/2).
-spec cut_by_own_call(sid(), t()) -> boolean().
cut_by_own_call(S, #parts{own_cut = C}) -> is_map_key(S, C).

%% @doc Whether the monitor of the partition of P, a process the tracer traces, still
%% runs.
-spec monitored(sid(), t()) -> boolean().
monitored(P, #parts{adopted = A, mon = Mon}) ->
    case riarc_tracer_adopted:owner(P, A) of
        none -> Mon =/= undefined;
        Root -> riarc_tracer_adopted:running(Root, A)
    end.

%% @doc ANALYSEEVT: an event E of S, a process the tracer traces, for its partition's
%% monitor. Analysis stops at the first verdict: later events of the partition are not
%% analysed. Isolated: the partition's analysis process does the same with the events
%% handed to it, and is not waited for. Limit max_payload, as for a monitor in its own
%% process.
-spec step(event(), sid(), map(), t()) -> {t(), [effect()]}.
step(E, S, Cfg, Ps = #parts{adopted = A}) ->
    case riarc_tracer_adopted:count(A) > 0 andalso riarc_tracer_adopted:owner(S, A) of
        Root when Root =/= false, Root =/= none -> step_adopted(Root, E, Cfg, Ps);
        _ -> step_own(E, Cfg, Ps)
    end.

step_own(_E, _Cfg, Ps = #parts{mon = undefined}) ->
    {Ps, []};
step_own(E, _Cfg, Ps = #parts{mon = isolated}) ->
    {Ps, [{analyse, E}]};
step_own(E, Cfg, Ps = #parts{mon = An}) ->
    case riarc_analysis_core:step(truncate(E, Cfg), An) of
        {next, An1, Reports} -> {Ps#parts{mon = An1}, reports(Reports, Cfg)};
        {done, _, Reports} -> {Ps#parts{mon = undefined}, reports(Reports, Cfg)}
    end.

%% An event of a process of the adopted partition of Root: its monitor steps here, as
%% the partition's own tracer's would.
step_adopted(Root, E, Cfg, Ps = #parts{adopted = A}) ->
    case riarc_tracer_adopted:step(Root, truncate(E, Cfg), A) of
        decided -> {Ps, []};
        {A1, Reports} -> {Ps#parts{adopted = A1}, reports(Reports, Cfg)}
    end.

%% @doc S is no longer traced here (it exited, or its view was lost): the last process
%% of an adopted partition to go ends that partition.
-spec left(sid(), map(), t()) -> {t(), [effect()]}.
left(S, Cfg, Ps = #parts{adopted = A}) ->
    {A1, Reports} = riarc_tracer_adopted:left(S, A),
    {Ps#parts{adopted = A1}, reports(Reports, Cfg)}.

%% @doc The tracer ends: its own partition ends, with the verdict none unless its monitor
%% gave one, and so do the partitions it adopted that are still here (a stop: their
%% processes were still traced).
-spec finish(map(), t()) -> {t(), [effect()]}.
finish(Cfg, Ps = #parts{mon = Mon, adopted = A}) ->
    Own = case Mon of
              undefined -> [];
              isolated -> [analysis_end];
              An -> reports(riarc_analysis_core:finish(An), Cfg)
          end,
    {A1, Reports} = riarc_tracer_adopted:finish_all(A),
    {Ps#parts{mon = undefined, adopted = A1}, Own ++ reports(Reports, Cfg)}.

%% @doc A stop found the tracer's routing unsettled (riarc_tracer_control's stopped_short/1):
%% its adopted partitions' traces may lack events as its own may.
-spec stopped_short(map(), t()) -> [effect()].
stopped_short(Cfg, #parts{self = Self, adopted = A}) ->
    reports([{riarc_stopped_short, {Self, Root}, #{own => true, lost => #{}}}
             || Root <- riarc_tracer_adopted:roots(A)], Cfg).

%% @doc Whether the own partition's events are relayed to its remote parent's session
%% (its calls, starts on other nodes included, are then that partition's to judge).
-spec relays(t()) -> boolean().
relays(#parts{relay_of = R}) -> R =/= undefined.

%% @doc A child on a followed node joined the own partition: its relayed trace is waited
%% for, unless the partition's monitor has a verdict already.
-spec await(t()) -> t().
await(Ps = #parts{mon = undefined}) -> Ps;
await(Ps = #parts{awaiting = N}) -> Ps#parts{awaiting = N + 1}.

%% @doc N relayed children ended, or will never be relayed.
-spec awaited(non_neg_integer(), t()) -> t().
awaited(N, Ps = #parts{awaiting = W}) -> Ps#parts{awaiting = max(W - N, 0)}.

%% @doc How many relayed children the tracer still waits for (TRYGC waits for them).
-spec awaiting(t()) -> non_neg_integer().
awaiting(#parts{awaiting = W}) -> W.

%% @doc A root tracer's root and its MFA, or undefined.
-spec root_of(t()) -> part() | undefined.
root_of(#parts{root = R}) -> R.

%% @doc The parts for diagnostics (riarc_tracer_core:state_map/1).
-spec state_map(t()) -> #{partition := part() | undefined, adopted := [sid()]}.
state_map(#parts{part = Part, adopted = A}) ->
    #{partition => Part, adopted => riarc_tracer_adopted:roots(A)}.

%% An event as a monitor here gets it: limit max_payload, as for a monitor in its own
%% process.
truncate(E, Cfg) ->
    riarc_event:truncate(E, maps:get(max_payload, Cfg, infinity)).

reports(Reports, #{session := Session}) ->
    [{send, Session, R} || R <- Reports].
