%% @doc What a session does when a safety limit is reached or a monitor runs out of time
%% (riarc_session): the overload policy's actions (shed one partition, or detach from the
%% whole system), the step budget's watchdog, stop/1's grace, and an analysis announced
%% after a detach. Decisions only: each takes the session's limits
%% (riarc_session_limits) and analysis book (riarc_session_analyses) and returns the
%% limits and the effects the session carries out, in order: the analysis book's own
%% (`{monitor, An}', `{kill, An}', `{entry, Tracer, Steps, Verdict}'), and
%% `{warning, Format, Args}' (logged), `detach' (close the backend, end every tracer),
%% `{republish, Changed}' (riarc_session_verdicts:republish/3), `{shed_count, Tracer}'
%% (riarc_session_verdicts:shed_count/3) and `watchdog' (set the watchdog's timer if
%% an analysis runs, riarc_session_limits:watchdog/2).
%% ```
%% 1> L = riarc_session_limits:new(riarc_opts:limits(#{}), riarc_opts:budget(#{})).
%% 2> {L1, [detach, {warning, _, _} | _]} = riarc_session_overload:act({tracers, 11, 10}, L, riarc_session_analyses:new()).
%% 3> riarc_session_limits:overload(L1).
%% {tracers,11,10}
%% 4> riarc_session_overload:act({tracers, 12, 10}, L1, riarc_session_analyses:new()) =:= {L1, []}.
%% true
%% '''
-module(riarc_session_overload).

-export([act/3, watchdog_fired/2, grace_over/3, analysis_up/5]).
-export_type([effect/0]).

-type effect() :: riarc_session_analyses:effect()
                | {warning, io:format(), [term()]} | detach
                | {republish, fun((map()) -> boolean())} | {shed_count, pid()} | watchdog.

%% @doc The overload policy (riarc_session_limits:policy/2) at What: shed one partition,
%% or detach from the whole system, or nothing (detached already).
-spec act(term(), riarc_session_limits:t(), riarc_session_analyses:t()) ->
    {riarc_session_limits:t(), [effect()]}.
act(What, L, As) ->
    case riarc_session_limits:policy(What, L) of
        shed -> {L, shed(What, As)};
        stop -> {riarc_session_limits:overloaded(What, L), detach(What, As)};
        ignore -> {L, []}
    end.

shed(What = {analysis, Tracer, _, _}, As) ->
    case riarc_session_analyses:shed(Tracer, What, As) of
        [] -> [];
        Fx -> [{warning, "riarc: overload (~0tp): shedding the partition's events", [What]}]
                  ++ Fx ++ [{shed_count, Tracer}]
    end.

detach(What, As) ->
    %% The tracers are behind (that is the overload): a stop request would wait behind
    %% their whole mailbox. The backend detaches the system at once instead, and the
    %% tracers are ended; what they had not decided is inconclusive.
    [detach,
     %% Said after the detach: a first log message may load modules (the code server is
     %% slow on a loaded node: 150 ms seen), and tracers go on taking events meanwhile.
     {warning, "riarc: overload (~0tp): detaching from the system", [What]},
     %% The partitions with no verdict yet now read inconclusive (as_known/2).
     {republish, fun(#{verdict := V}) -> V =:= none end}
     | riarc_session_analyses:kill_all(fun(_) -> {inconclusive, {overload, What}} end, As)].

%% @doc The watchdog's timer went off (`riarc_watchdog'): the analyses whose step is over
%% its budget are ended, and the timer is set again while any analysis runs.
-spec watchdog_fired(riarc_session_limits:t(), riarc_session_analyses:t()) ->
    {riarc_session_limits:t(), [effect()]}.
watchdog_fired(L, As) ->
    L1 = riarc_session_limits:watchdog_fired(L),
    {L1, riarc_session_analyses:over_budget(L1, As) ++ [watchdog]}.

%% @doc Whether Ref is stop/1's grace period's timer, now over: then the analyses still
%% running are ended.
-spec grace_over(reference(), riarc_session_limits:t(), riarc_session_analyses:t()) ->
    {riarc_session_limits:t(), [effect()]} | false.
grace_over(Ref, L, As) ->
    case riarc_session_limits:grace_over(Ref, L) of
        {true, L1} ->
            %% stop/1: the analyses that have not finished their partitions' events by now
            %% are ended; their partitions were not analysed to the end: inconclusive.
            Stopped = fun(An) ->
                              Left = case erlang:process_info(An, message_queue_len) of
                                         {message_queue_len, Len} -> Len;
                                         undefined -> 0
                                     end,
                              {inconclusive, {stopped, #{unanalysed => Left}}}
                      end,
            {L1, riarc_session_analyses:kill_all(Stopped, As)};
        false -> false
    end.

%% @doc A tracer announced its partition's analysis process An (riarc_session_analyses:up/4):
%% the book and the effects.
-spec analysis_up(pid(), pid(), riarc_analysis:clock(), riarc_session_limits:t(),
                  riarc_session_analyses:t()) -> {riarc_session_analyses:t(), [effect()]}.
analysis_up(An, Tracer, Clock, L, As0) ->
    {As, Fx} = riarc_session_analyses:up(An, Tracer, Clock, As0),
    Over = riarc_session_limits:overload(L),
    case Over =/= undefined andalso riarc_session_limits:limits(L) of
        #{policy := stop} ->
            %% Race: started by a tracer the overload policy ended, announced after the
            %% detach.
            {As, Fx ++ riarc_session_analyses:kill(An, {inconclusive, {overload, Over}}, As)};
        _ -> {As, Fx ++ [watchdog]}
    end.
