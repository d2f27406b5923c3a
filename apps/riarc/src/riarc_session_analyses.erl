%% @doc The session's book of analysis processes (riarc_analysis: a partition's monitor
%% run in a process of its own), and what ending one means for its partition's verdict.
%% Pure: each change returns the book and the effects the session carries out, in order:
%% `{monitor, An}' (watch a new analysis), `{kill, An}' (end it), `{entry, Tracer, Steps,
%% Verdict}' (the partition's verdict, set only if its monitor has not given one; Steps:
%% the monitor had begun that many steps).
%%
%% Why an analysis ended decides what its partition says: the VM kills one whose monitor
%% step grows past the heap budget (max_heap_size), which is the monitor's fault; a kill
%% between steps came from outside (the monitored system, say), and a crash is riarc's.
%% ```
%% 1> A0 = riarc_session_analyses:new().
%% 2> Clock = atomics:new(4, [{signed, true}]).
%% 3> {A1, [{monitor, an}]} = riarc_session_analyses:up(an, tracer, Clock, A0).
%% 4> riarc_session_analyses:of_tracer(tracer, A1).
%% [an]
%% 5> riarc_session_analyses:kill(an, {inconclusive, stopped}, A1).
%% [{kill,an},{entry,tracer,0,{inconclusive,stopped}}]
%% '''
-module(riarc_session_analyses).

-export([new/0, up/4, exited/4, down/4, kill/3, kill_all/2, shed/3, over_budget/2,
         any/1, pids/1, of_tracer/2]).
-export_type([t/0, effect/0]).

-record(analyses, {
    %% The live analysis processes, each with its partition's tracer and its step clock.
    running = #{} :: #{pid() => {pid(), riarc_analysis:clock()}},
    %% The same by tracer: the session asks at every tracer's and analysis's end whether
    %% the partition still has an analysis, and a walk of `running' each time made a run
    %% of 40 000 partitions quadratic (the session minutes behind its mailbox).
    by_tracer = #{} :: #{pid() => #{pid() => true}},
    %% Analysis processes that ended abnormally before their tracer announced them.
    early_ends = #{} :: #{pid() => term()}
}).
-opaque t() :: #analyses{}.
-type verdict() :: {riarc_monitor:verdict(), term()}.
-type effect() :: {monitor, pid()} | {kill, pid()} | {entry, pid(), non_neg_integer(), verdict()}.

%% @doc An empty book.
-spec new() -> t().
new() -> #analyses{}.

%% @doc A tracer announced its partition's analysis process An. One that already ended
%% (its link's exit came first, exited/4) ends its partition now.
-spec up(pid(), pid(), riarc_analysis:clock(), t()) -> {t(), [effect()]}.
up(An, Tracer, Clock, A = #analyses{running = R, early_ends = Early}) ->
    case maps:take(An, Early) of
        {Reason, Early1} -> {A#analyses{early_ends = Early1}, ended(Tracer, Clock, Reason, undefined)};
        error ->
            ByT = A#analyses.by_tracer,
            Ans = maps:get(Tracer, ByT, #{}),
            {A#analyses{running = R#{An => {Tracer, Clock}}, by_tracer = ByT#{Tracer => Ans#{An => true}}},
             [{monitor, An}]}
    end.

%% @doc An analysis process's link said it ended abnormally (Reason; HeapWords: the heap
%% budget, for the sentence).
%% Race: an analysis can end (killed over its heap, say) before its tracer's
%% announcement reaches the session, when a monitor set then says only noproc: the
%% link's reason is kept until the announcement.
-spec exited(pid(), term(), pos_integer() | undefined, t()) -> {t(), [effect()]}.
exited(An, Reason, HeapWords, A = #analyses{running = R, early_ends = Early}) ->
    case R of
        #{An := {Tracer, Clock}} -> {A, ended(Tracer, Clock, Reason, HeapWords)};
        #{} -> {A#analyses{early_ends = Early#{An => Reason}}, []}
    end.

%% @doc An analysis process's monitor said it ended: its tracer and the effects, or
%% `unknown' for a process this book does not hold.
-spec down(pid(), term(), pos_integer() | undefined, t()) -> {pid(), t(), [effect()]} | unknown.
down(An, Reason, HeapWords, A = #analyses{running = R}) ->
    case maps:take(An, R) of
        {{Tracer, Clock}, R1} ->
            {Tracer, A#analyses{running = R1, by_tracer = forget(Tracer, An, A#analyses.by_tracer)},
             ended(Tracer, Clock, Reason, HeapWords)};
        error -> unknown
    end.

%% An analysis ended: normally (its monitor gave its verdict), or not, when its
%% partition's verdict (unless it has one) says why.
ended(_Tracer, _Clock, Reason, _HeapWords) when Reason =:= normal; Reason =:= noproc ->
    [];
ended(Tracer, Clock, Reason, HeapWords) ->
    %% riarc's own kills set the entry first (kill/3), so a kill seen here is the VM's
    %% (in a step: over the heap budget) or came from outside (between steps).
    Why = case {Reason, riarc_analysis:in_step(Clock)} of
              {killed, true} -> {monitor_budget, #{heap_words => HeapWords}};
              {killed, false} -> {analysis_killed, #{between_steps => riarc_analysis:steps(Clock)}};
              _ -> {analysis_crashed, Reason}
          end,
    [{entry, Tracer, riarc_analysis:steps(Clock), {error, Why}}].

%% @doc Ends analysis An; its partition's verdict, unless it has one, is Verdict.
-spec kill(pid(), verdict(), t()) -> [effect()].
kill(An, Verdict, #analyses{running = R}) ->
    [{kill, An} | case R of
                      #{An := {Tracer, Clock}} -> [{entry, Tracer, riarc_analysis:steps(Clock), Verdict}];
                      #{} -> []
                  end].

%% @doc Ends every analysis, each partition's verdict (unless it has one) VerdictOf(An).
-spec kill_all(fun((pid()) -> verdict()), t()) -> [effect()].
kill_all(VerdictOf, A = #analyses{running = R}) ->
    lists:append([kill(An, VerdictOf(An), A) || An <- maps:keys(R)]).

%% @doc The overload policy shed Tracer's partition (What: `{analysis, Tracer, Len, Max}',
%% its analysis's queue over max_queue): its analysis is ended, and the partition is
%% inconclusive, with what was dropped (the queue: a lower bound until the tracer ends and
%% gives the partition's whole count) and what was analysed.
-spec shed(pid(), {analysis, pid(), non_neg_integer(), pos_integer()}, t()) -> [effect()].
shed(Tracer, {analysis, _, Len, Max}, A = #analyses{running = R}) ->
    case of_tracer(Tracer, A) of
        [An | _] ->
            {_, Clock} = maps:get(An, R),
            Analysed = max(0, riarc_analysis:steps(Clock) - 1),
            kill(An, {inconclusive, {shed, #{dropped => Len, analysed => Analysed, max_queue => Max}}}, A);
        [] -> []
    end.

%% @doc The analyses whose step ran past the budget (riarc_session_limits:over_budget/2)
%% are ended, their partitions errors.
-spec over_budget(riarc_session_limits:t(), t()) -> [effect()].
over_budget(Limits, A = #analyses{running = R}) ->
    lists:append([kill(An, {error, {monitor_budget, What}}, A)
                  || {An, What} <- riarc_session_limits:over_budget(R, Limits)]).

%% @doc Whether any analysis runs.
-spec any(t()) -> boolean().
any(#analyses{running = R}) -> map_size(R) > 0.

%% @doc Every analysis process running.
-spec pids(t()) -> [pid()].
pids(#analyses{running = R}) -> maps:keys(R).

%% @doc The analysis processes of Tracer's partition still running.
-spec of_tracer(pid(), t()) -> [pid()].
of_tracer(Tracer, #analyses{by_tracer = ByT}) ->
    maps:keys(maps:get(Tracer, ByT, #{})).

forget(Tracer, An, ByT) ->
    case maps:get(Tracer, ByT, #{}) of
        #{An := _} = Ans when map_size(Ans) =:= 1 -> maps:remove(Tracer, ByT);
        #{An := _} = Ans -> ByT#{Tracer := maps:remove(An, Ans)};
        #{} -> ByT
    end.
