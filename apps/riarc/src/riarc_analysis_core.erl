%% @doc One partition's analysis (ANALYSEEVT, App. C.5.2, with the partition's verdict
%% and explanation), pure: the monitor, how many events it took, and the window of its
%% last events a reject or an error is explained with. What it has to tell the session
%% comes back as messages for the caller to send.
%%
%% The same steps run inside the tracer core (the model checker's tracers, and any core
%% configured with `analysis => inline') and in a partition's own analysis process
%% ({@link riarc_analysis}), which the tracer hands events to without waiting.
%%
%% A message over the limit max_payload reaches the monitor as `{riarc_truncated, Size}'
%% (riarc_event:truncate/2): what the monitor decides from then on may not be what it
%% would have decided on the message itself, so a verdict reached at or after that event,
%% or none at the partition's end, is `inconclusive', reason `{payload_truncated, #{event_no,
%% bytes}}'. Verdicts reached before it stand (they are irrevocable).
%% ```
%% 1> A0 = riarc_analysis_core:new(t0, 8, {p, {m, f, []}}, fun M({exit, _, _}) -> accept; M(_) -> M end).
%% 2> {next, A1, []} = riarc_analysis_core:step({recv, p, hi}, A0).
%% 3> {done, _, Verdicts} = riarc_analysis_core:step({exit, p, normal}, A1).
%% 4> Verdicts.
%% [{riarc_verdict,t0,p,{m,f,[]},accept,{why,#{event => {exit,p,normal},event_no => 2}},2}]
%% '''
-module(riarc_analysis_core).

-export([new/4, step/2, fail/3, finish/1, analysed/1, partition/1, entry/1, timer_reading/2]).
-export_type([t/0]).

-record(an, {
    self :: term(),                         % the partition's tracer: verdicts are keyed by it
    explain :: non_neg_integer(),
    part :: {riarc_event:sid(), riarc_event:mfa_args()},
    mon :: riarc_monitor:monitor(),         % ςM
    analysed = 0 :: non_neg_integer(),
    %% The last events, newest first: at least the last `explain', at most half as many
    %% more (trimmed every few steps, not at each).
    window = [] :: [riarc_event:event()],
    window_len = 0 :: non_neg_integer(),
    %% The first event the monitor got truncated (max_payload), if any.
    truncated = none :: none | #{event_no := pos_integer(), bytes := non_neg_integer()},
    %% The processes of the partition that set a timer to send themselves the atom
    %% `timeout' (events `{timer_timeout, P, P}'): the VM traces its message exactly as a
    %% receive timeout, so from then on each of their timeouts may be that message.
    timer_timeouts = #{} :: #{riarc_event:sid() => true}
}).
-opaque t() :: #an{}.

%% @doc The analysis of partition Part (its process and MFA) by monitor Mon, reported as
%% tracer Self's, explaining rejects and errors with the last Explain events.
-spec new(term(), non_neg_integer(), {riarc_event:sid(), riarc_event:mfa_args()},
          riarc_monitor:monitor()) -> t().
new(Self, Explain, Part, Mon) ->
    #an{self = Self, explain = Explain, part = Part, mon = Mon}.

%% @doc ANALYSEEVT: one event to the monitor. `done' once the partition has its verdict
%% (verdicts are irrevocable: later events are not analysed); the messages are for the
%% session, in order.
-spec step(riarc_event:traced(), t()) ->
    {next | done, t(), [term()]}.
step({timer_timeout, P, P}, A = #an{timer_timeouts = Ts}) ->
    %% No event of the property's: the monitor is not stepped.
    {next, A#an{timer_timeouts = Ts#{P => true}}, []};
step(E = {timeout, P}, A = #an{timer_timeouts = Ts}) when is_map_key(P, Ts) ->
    ambiguous(E, {recv, P, timeout}, A);
step(E, A = #an{mon = Mon}) ->
    decided_step(E, riarc_monitor:decide(Mon, E), A).

%% @doc Whose timeouts a timer P set to send Dest the atom `timeout' makes ambiguous
%% (riarc_trace_pattern:call_event/2 names Dest as P when P held the name): P's own
%% (`own', step `{timer_timeout, P, P}'), another process's, whose trace may be another
%% tracer's in no order with the call (`other': an error of the run), or, for a name P
%% did not hold when the call was decoded (let go, or P ended), either (`both').
-spec timer_reading(riarc_event:sid(), term()) -> own | other | both.
timer_reading(P, P) -> own;
timer_reading(_P, Dest) when is_atom(Dest) -> both;
timer_reading(_P, _Dest) -> other.

%% A timeout of P's after P set a timer to send itself `timeout': the VM's event is that
%% timeout or the timer's message Msg, which riarc cannot tell apart. Both readings are
%% given to the monitor; when it answers both alike (a property that names neither, or
%% treats them alike) the step stands, otherwise the partition's verdict is
%% inconclusive, saying so: no verdict rests on a reading riarc could not make.
ambiguous(E = {timeout, P}, Msg, A = #an{mon = Mon, analysed = N}) ->
    Timeout = riarc_monitor:decide(Mon, E),
    case alike(Timeout, riarc_monitor:decide(Mon, Msg)) of
        true -> decided_step(E, Timeout, A);
        false ->
            A1 = remember(E, A#an{analysed = N + 1}),
            {done, A1, [verdict(inconclusive, {ambiguous_timeout, #{event_no => N + 1, process => P}}, A1)]}
    end.

%% The same answer to both readings: the same next monitor, or the same verdict (its
%% words may name the event they were given).
alike({next, M}, {next, M}) -> true;
alike({verdict, V, _, _}, {verdict, V, _, _}) -> true;
alike({verdict, error, _}, {verdict, error, _}) -> true;
alike(_, _) -> false.

%% The usual step (the monitor goes on, on an event no payload limit cut): the state is
%% copied once, not once a field.
decided_step(E, Decided = {next, Mon1}, A = #an{truncated = none, analysed = N}) ->
    case riarc_event:truncated(E) of
        false ->
            {W, L} = window(E, A),
            {next, A#an{mon = Mon1, analysed = N + 1, window = W, window_len = L}, []};
        {true, _} ->
            decided_any(E, Decided, A)
    end;
decided_step(E, Decided, A) ->
    decided_any(E, Decided, A).

decided_any(E, Decided, A = #an{mon = Mon, analysed = N}) ->
    A1 = truncated(E, remember(E, A#an{analysed = N + 1})),
    case {Decided, A1#an.truncated} of
        {{next, Mon1}, _} -> {next, A1#an{mon = Mon1}, []};
        {{verdict, error, Why}, _} -> {done, A1, [explain(Mon, E, A1), verdict(error, Why, A1)]};
        {{verdict, V, _Words, _Where}, Cut} when Cut =/= none ->
            %% Decided on a view with a message cut out: not to be believed.
            {done, A1, [explain(Mon, E, A1) || V =:= reject] ++
                 [verdict(inconclusive, {payload_truncated, Cut}, A1)]};
        {{verdict, accept, Words, Where}, none} ->
            {done, A1, [verdict(accept, decided(Mon, E, Words, Where, A1), A1)]};
        {{verdict, reject, Words, Where}, none} ->
            {done, A1, [explain(Mon, E, A1), verdict(reject, decided(Mon, E, Words, Where, A1), A1)]}
    end.

%% @doc The monitor failed on event E in a way riarc itself found (over its step budget,
%% say), not by its own answer: the verdict error with reason Why, explained as any error.
-spec fail(term(), riarc_event:event(), t()) -> [term()].
fail(Why, E, A = #an{mon = Mon}) ->
    [explain(Mon, E, A), verdict(error, Why, A)].

%% @doc The partition ended without a verdict: none.
-spec finish(t()) -> [term()].
finish(A = #an{truncated = Cut}) when Cut =/= none ->
    %% The monitor might have decided on the message itself.
    [verdict(inconclusive, {payload_truncated, Cut}, A)];
finish(A = #an{analysed = N}) ->
    [verdict(none, {why, #{ended_after => N}}, A)].

%% @doc The result entry of what a step, fail/3 or finish/1 told: its verdict, with the
%% explanation told before it, if any (riarc_result:monitor_entry/4). For the methods that
%% keep their partitions' entries themselves (centralised, inline monitoring); riarc's
%% session builds the same from the messages.
%% ```
%% 1> A = riarc_analysis_core:new(t0, 8, {p, {m, f, []}}, fun M(_) -> M end).
%% 2> riarc_analysis_core:entry(riarc_analysis_core:finish(A)).
%% #{events => 0,mfa => {m,f,[]},pid => p,verdict => none,why => #{ended_after => 0}}
%% '''
-spec entry([term()]) -> riarc_result:verdict_entry().
entry(Told) ->
    Expl = case [X || {riarc_explanation, _, X} <- Told] of
               [X] -> X;
               [] -> none
           end,
    [{riarc_verdict, _, S, MFA, V, Why, N}] = [T || T <- Told, element(1, T) =:= riarc_verdict],
    riarc_result:monitor_entry(S, MFA, {V, Why, N}, Expl).

%% @doc How many events the monitor took.
-spec analysed(t()) -> non_neg_integer().
analysed(#an{analysed = N}) -> N.

%% @doc Whose partition this is.
-spec partition(t()) -> {riarc_event:sid(), riarc_event:mfa_args()}.
partition(#an{part = P}) -> P.

truncated(E, A = #an{truncated = none, analysed = N}) ->
    case riarc_event:truncated(E) of
        {true, Size} -> A#an{truncated = #{event_no => N, bytes => Size}};
        false -> A
    end;
truncated(_E, A) ->
    A.

remember(_E, A = #an{explain = 0}) -> A;
remember(E, A) ->
    {W, L} = window(E, A),
    A#an{window = W, window_len = L}.

%% The last events with E: at least the last `explain', at most half as many more.
window(_E, #an{explain = 0, window = W, window_len = L}) -> {W, L};
window(E, #an{window = W, window_len = L, explain = K}) when L < K + K div 2 -> {[E | W], L + 1};
window(E, #an{window = W, explain = K}) -> {[E | lists:sublist(W, K - 1)], K}.

%% A reject or an error explains itself: the partition's last events, the one that
%% decided, and what the monitor can say of its state then.
explain(Mon, E, #an{self = Self, window = W, explain = K, part = {S, MFA}}) ->
    {riarc_explanation, Self,
     #{process => S, mfa => MFA, last_events => lists:reverse(lists:sublist(W, K)), deciding_event => E,
       monitor => riarc_monitor:explain(Mon, E)}}.

%% Why an accept or a reject was reached: on which event (its number in the partition's
%% trace, and the event, bounded), in the monitor's own words when it has them (a
%% compiled property says which clause decided, or that no clause named the event), with
%% the clause's file and line when the monitor names it (Where).
decided(Mon, E, Words, Where, #an{analysed = N}) ->
    Why = maps:merge(#{event_no => N, event => riarc_event:truncate(E, 256)}, Where),
    %% The monitor is asked only when its verdict came without words.
    {why, case Words of
              none ->
                  case riarc_monitor:explain(Mon, E) of
                      #{words := W} -> Why#{words => W};
                      #{} -> Why
                  end;
              W -> Why#{words => W}
          end}.

verdict(V, Why, #an{self = Self, part = {S, MFA}, analysed = N}) ->
    {riarc_verdict, Self, S, MFA, V, Why, N}.
