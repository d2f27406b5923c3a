%% @doc The partitions a tracer adopts ({@link riarc_tracer_core}): a process whose Spec
%% gives it a monitor of its own, spawned by a process the tracer traces, may stay with
%% that tracer instead of getting a tracer of its own (cfg's `adopt' says when). Its
%% monitor runs in the tracer; its descendants that Λ leaves in its partition join it, as
%% they would join its own tracer. Nothing is routed for it: the tracer already traces
%% it (tracing inheritance), so there is no takeover, no route and no tracer to start.
%%
%% Pure: which process belongs to which adopted partition (by the partition's root), each
%% partition's analysis, and how many of its processes are still traced here. A partition
%% ends when the last of them has: no process can join it after that (a process joins
%% its parent's partition at its spawn, and a parent's spawn event comes before its exit).
%% ```
%% 1> Mon = fun M(_) -> M end, An = riarc_analysis_core:new(k, 0, {c, {m, c, []}}, Mon).
%% 2> A1 = riarc_tracer_adopted:join(d, c, riarc_tracer_adopted:adopt(c, An, riarc_tracer_adopted:new())).
%% 3> riarc_tracer_adopted:owner(d, A1).
%% c
%% 4> {A2, []} = riarc_tracer_adopted:left(c, A1), riarc_tracer_adopted:count(A2).
%% 1
%% 5> {_, [{riarc_verdict, k, c, _, V, _, _}]} = riarc_tracer_adopted:left(d, A2), V.
%% none
%% '''
-module(riarc_tracer_adopted).

-export([new/0, adopt/3, join/3, owner/2, running/2, step/3, left/2, finish_all/1, roots/1,
         count/1]).
-export_type([t/0]).

-type sid() :: riarc_event:sid().

-record(adopted, {
    %% By partition root: its monitor's analysis (`decided' once it gave a verdict) and
    %% how many of its processes are still traced here. One map, not two: a process
    %% joining or leaving updates one entry of it (the maps hold every partition open).
    analyses = #{} :: #{sid() => {riarc_analysis_core:t() | decided, pos_integer()}},
    owner = #{} :: #{sid() => sid()}              % process -> its partition's root
}).

-opaque t() :: #adopted{}.

%% @doc No partition adopted.
-spec new() -> t().
new() -> #adopted{}.

%% @doc C's partition, adopted, analysed by An (made with the partition's key: its
%% reports carry it); C is its first process.
-spec adopt(sid(), riarc_analysis_core:t(), t()) -> t().
adopt(C, An, A = #adopted{analyses = As, owner = O}) ->
    A#adopted{analyses = As#{C => {An, 1}}, owner = O#{C => C}}.

%% @doc C, spawned by P and left by Λ in P's partition, joins it if P's is adopted.
-spec join(sid(), sid(), t()) -> t().
join(C, P, A = #adopted{owner = O, analyses = As}) ->
    case O of
        #{P := Root} ->
            #{Root := {An, N}} = As,
            A#adopted{owner = O#{C => Root}, analyses = As#{Root := {An, N + 1}}};
        #{} -> A
    end.

%% @doc The root of the adopted partition S belongs to, or none (S is in the tracer's
%% own partition).
-spec owner(sid(), t()) -> sid() | none.
owner(S, #adopted{owner = O}) ->
    case O of
        #{S := Root} -> Root;
        #{} -> none
    end.

%% @doc Whether the monitor of Root's adopted partition still runs (has no verdict yet).
-spec running(sid(), t()) -> boolean().
running(Root, #adopted{analyses = As}) -> element(1, maps:get(Root, As)) =/= decided.

%% @doc ANALYSEEVT for the adopted partition of Root: an event of one of its processes,
%% and the reports its monitor gives; `decided' once it has a verdict (later events of
%% the partition are not analysed).
-spec step(sid(), riarc_event:event(), t()) -> {t(), [term()]} | decided.
step(Root, E, A = #adopted{analyses = As}) ->
    case maps:get(Root, As) of
        {decided, _} -> decided;
        {An, N} ->
            case riarc_analysis_core:step(E, An) of
                {next, An1, Reports} -> {A#adopted{analyses = As#{Root := {An1, N}}}, Reports};
                {done, _, Reports} -> {A#adopted{analyses = As#{Root := {decided, N}}}, Reports}
            end
    end.

%% @doc S is no longer traced here (it exited, or its view was lost): if it was the last
%% process of its adopted partition, the partition ends, with the verdict none unless
%% its monitor gave one.
-spec left(sid(), t()) -> {t(), [term()]}.
left(S, A = #adopted{owner = O, analyses = As}) ->
    case O of
        #{S := Root} ->
            O1 = maps:remove(S, O),
            case maps:get(Root, As) of
                {An, 1} -> {A#adopted{owner = O1, analyses = maps:remove(Root, As)}, ended(An)};
                {An, N} -> {A#adopted{owner = O1, analyses = As#{Root := {An, N - 1}}}, []}
            end;
        #{} -> {A, []}
    end.

%% @doc Every adopted partition ends (the tracer does): the reports of those whose
%% monitors had no verdict yet, in the order of their roots.
-spec finish_all(t()) -> {t(), [term()]}.
finish_all(#adopted{analyses = As}) ->
    Reports = lists:append([riarc_analysis_core:finish(An) || {_, {An, _}} <- lists:sort(maps:to_list(As)),
                                                             An =/= decided]),
    {new(), Reports}.

%% @doc The roots of the partitions adopted and not ended.
-spec roots(t()) -> [sid()].
roots(#adopted{analyses = As}) -> lists:sort(maps:keys(As)).

%% @doc How many adopted partitions have not ended.
-spec count(t()) -> non_neg_integer().
count(#adopted{analyses = As}) -> map_size(As).

%% The reports of a partition that ended: none once its monitor gave a verdict.
ended(decided) -> [];
ended(An) -> riarc_analysis_core:finish(An).
