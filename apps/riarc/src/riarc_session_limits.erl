%% @doc A session's safety limits (riarc_session): the overload policy, the monitors' step
%% budget and its watchdog, the count of events the tracers took (limit max_events) and
%% of forged messages, and stop/1's grace for the analyses still running. Pure but for
%% the timers it sets: the session asks, and does what the answer says (detach, shed a
%% partition, end an analysis).
%% ```
%% 1> L0 = riarc_session_limits:new(riarc_opts:limits(#{limits => #{max_events => 10}}), riarc_opts:budget(#{})).
%% 2> {L1, ok} = riarc_session_limits:counted(self(), 8, 0, L0).
%% 3> {_, Over} = riarc_session_limits:counted(self(), 12, 1, L1).
%% 4> Over.
%% {overload,{max_events,12,10}}
%% 5> riarc_session_limits:policy({max_events, 12, 10}, L1).
%% stop
%% '''
-module(riarc_session_limits).

-export([new/2, limits/1, budget/1, max_queue/1, overload/1, overloaded/2, forged/1, add_forged/2,
         events/1, counted/4, tracer_gone/2, tracers/2, policy/2, watchdog/2, watchdog_fired/1,
         over_budget/2, grace/1, grace_over/2]).
-export_type([t/0, overload_action/0]).

%% How long stop/1 lets monitors finish the events they have (at most one step budget).
-define(GRACE_MS, 1000).

-record(limits, {
    limits :: riarc_opts:limits(),
    budget :: riarc_opts:budget(),
    watchdog = false :: boolean(),                   % the watchdog's timer is set
    %% After stop/1 the analyses still running get this long to finish.
    grace = undefined :: undefined | reference() | expired,
    %% Why riarc stopped the run itself (an overload limit), once it has.
    overload = undefined :: undefined | term(),
    forged = 0 :: non_neg_integer(),
    %% Limit max_events: the direct events the tracers have reported taking (in batches,
    %% riarc_tracer_overload:counts/2), and per live tracer its counts so far (events,
    %% forged trace messages), of which its reports are running totals.
    events = 0 :: non_neg_integer(),
    counted = #{} :: #{pid() => {non_neg_integer(), non_neg_integer()}}
}).

-opaque t() :: #limits{}.
%% What the session does at an overload: shed the one partition, detach from the whole
%% system, or nothing (it has detached already).
-type overload_action() :: shed | stop | ignore.

%% @doc The limits of a session with these safety limits and step budget.
-spec new(riarc_opts:limits(), riarc_opts:budget()) -> t().
new(Limits, Budget) -> #limits{limits = Limits, budget = Budget}.

%% @doc The safety limits.
-spec limits(t()) -> riarc_opts:limits().
limits(#limits{limits = L}) -> L.

%% @doc The monitors' step budget.
-spec budget(t()) -> riarc_opts:budget().
budget(#limits{budget = B}) -> B.

%% @doc Limit max_queue.
-spec max_queue(t()) -> pos_integer().
max_queue(#limits{limits = #{max_queue := Max}}) -> Max.

%% @doc Why riarc detached from the system, or `undefined' while it has not.
-spec overload(t()) -> undefined | term().
overload(#limits{overload = O}) -> O.

%% @doc riarc detaches from the system for What.
-spec overloaded(term(), t()) -> t().
overloaded(What, L) -> L#limits{overload = What}.

%% @doc How many forged messages were refused.
-spec forged(t()) -> non_neg_integer().
forged(#limits{forged = F}) -> F.

%% @doc N more forged messages refused.
-spec add_forged(non_neg_integer(), t()) -> t().
add_forged(N, L = #limits{forged = F}) -> L#limits{forged = F + N}.

%% @doc The direct events the tracers reported taking.
-spec events(t()) -> non_neg_integer().
events(#limits{events = E}) -> E.

%% @doc A tracer's counts (running totals): the session's own are the sums. Limit
%% max_events: once the tracers have reported more events than that in all, the run is
%% over its budget. Every policy stops then: the count is the whole session's, no partition
%% is to blame for it, so there is no partition to shed or to hold back. The tracers
%% report every 1024 messages and as they end, so a session sees at most about 1024
%% events per live tracer more than the limit before it acts (and what its tracers take
%% while the report waits in its mailbox).
-spec counted(pid(), non_neg_integer(), non_neg_integer(), t()) -> {t(), ok | {overload, term()}}.
counted(Tracer, Events, Forged, L = #limits{counted = C, limits = #{max_events := Max}}) ->
    {E0, F0} = maps:get(Tracer, C, {0, 0}),
    Seen = L#limits.events + Events - E0,
    L1 = L#limits{events = Seen, forged = L#limits.forged + Forged - F0,
                  counted = C#{Tracer => {Events, Forged}}},
    case Max =/= infinity andalso Seen > Max of
        true -> {L1, {overload, {max_events, Seen, Max}}};
        false -> {L1, ok}
    end.

%% @doc A tracer ended: its counts are in the sums.
-spec tracer_gone(pid(), t()) -> t().
tracer_gone(Tracer, L = #limits{counted = C}) -> L#limits{counted = maps:remove(Tracer, C)}.

%% @doc Limit max_tracers, the session's own, for this many live tracers.
-spec tracers(non_neg_integer(), t()) -> ok | {overload, term()}.
tracers(N, #limits{limits = #{max_tracers := Max}}) when N > Max -> {overload, {tracers, N, Max}};
tracers(_N, _L) -> ok.

%% @doc What the overload policy does at What.
%% Policy `shed': a partition whose monitor cannot keep up with its events (its analysis
%% process's mailbox over the limit) is detached alone: its queued events are dropped,
%% counted, and its verdict is `inconclusive', never a silent accept; routing and every
%% other partition go on. A tracer's own mailbox over the limit, or too many tracers, is
%% routing that cannot keep up: nothing can be dropped from it without breaking other
%% partitions' traces, so these fall back to policy stop.
%% Policy `stop': riarc detaches from the whole system at the first limit it reaches, and
%% says so; partitions that had no verdict yet get `inconclusive', never a verdict on a
%% trace riarc itself cut short.
-spec policy(term(), t()) -> overload_action().
policy({analysis, _Tracer, _Len, _Max}, #limits{limits = #{policy := P}, overload = undefined})
  when P =:= shed; P =:= backpressure ->
    shed;
policy(_What, #limits{overload = Already}) when Already =/= undefined -> ignore;
policy(_What, _L) -> stop.

%% @doc The watchdog of the monitors' step budget: one timer for the session, a few times
%% per budget, reading each analysis's step clock (cheap: no message to the analysis, which
%% may be busy in its monitor). Set while Analysing (any analysis process runs); the
%% session gets `riarc_watchdog'.
-spec watchdog(boolean(), t()) -> t().
watchdog(_Analysing, L = #limits{watchdog = true}) -> L;
watchdog(false, L) -> L;
watchdog(true, L = #limits{budget = #{time_ms := T}}) ->
    _ = erlang:send_after(max(10, min(250, T div 4)), self(), riarc_watchdog),
    L#limits{watchdog = true}.

%% @doc The watchdog's timer went off.
-spec watchdog_fired(t()) -> t().
watchdog_fired(L) -> L#limits{watchdog = false}.

%% @doc The analysis processes whose step is over its budget, each with by how much: they
%% are to be ended.
-spec over_budget(#{pid() => {pid(), riarc_analysis:clock()}}, t()) -> [{pid(), map()}].
over_budget(Analysers, #limits{budget = Budget}) ->
    lists:reverse(maps:fold(fun(An, {_Tracer, Clock}, Acc) ->
                      case riarc_analysis:overdue(Clock, An, Budget) of
                          ok -> Acc;
                          {over, What} ->
                              logger:warning("riarc: a monitor step over its budget (~0tp): "
                                             "its partition is detached", [What]),
                              [{An, What} | Acc]
                      end
              end, [], Analysers)).

%% @doc After stop/1, the analyses still running get a grace period (at most one step
%% budget): the session gets `{riarc_grace, Ref}' then.
-spec grace(t()) -> t().
grace(L = #limits{grace = undefined, budget = #{time_ms := T}}) ->
    Ref = make_ref(),
    _ = erlang:send_after(min(T, ?GRACE_MS), self(), {riarc_grace, Ref}),
    L#limits{grace = Ref};
grace(L) ->
    L.

%% @doc Whether Ref is the grace period's timer, now over.
-spec grace_over(reference(), t()) -> {true, t()} | false.
grace_over(Ref, L = #limits{grace = Ref}) -> {true, L#limits{grace = expired}};
grace_over(_Ref, _L) -> false.
