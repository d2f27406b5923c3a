%% @doc What a session knows of its partitions' verdicts (riarc_session) and who hears of
%% them: the book of entries (riarc_session_entries), the subscribers
%% (riarc_session_subs), and the cut detection's last look at the node's trace patterns.
%% Every change that makes an entry read otherwise is told to the subscribers here, as
%% the result will list it. Pure but for those sends: Over, passed to the calls that may
%% tell, is why riarc detached from the system (riarc_session_limits:overload/1), or
%% `undefined'.
%% ```
%% 1> T = self(), V0 = riarc_session_verdicts:tracer_up(T, 1, riarc_session_verdicts:new(false)).
%% 2> V1 = riarc_session_verdicts:part(T, T, {m, f, []}, {none, none}, undefined, V0).
%% 3> Tag = make_ref(), V2 = riarc_session_verdicts:subscribe(T, Tag, V1).
%% 4> V3 = riarc_session_verdicts:put(T, riarc_result:entry(T, {m, f, []}, accept, 3, undefined), undefined, V2).
%% 5> receive {riarc_session_verdict, Tag, #{verdict := V}} -> V end.
%% accept
%% 6> [maps:get(verdict, E) || E <- riarc_session_verdicts:list(undefined, V3)].
%% [accept]
%% '''
-module(riarc_session_verdicts).

-export([new/1, entries/1, tracer_up/3, part/6, adopted/6, tracer_down/5, analysis_ended/4, put/4,
         monitor_verdict/5, set/6,
         learnt/3, shed_count/3, republish/3, view_check/2,
         subscribe/3, unsubscribe/2, subscribed/1, followed/2, list/2]).
-export_type([t/0, learnt/0]).

-record(verdicts, {
    entries :: riarc_session_entries:t(),            % the partitions' entries
    subs = riarc_session_subs:new() :: riarc_session_subs:t(), % verdict subscribers
    %% Cut detection: the verdicts as they were when the node's patterns were last seen as
    %% riarc installed them (riarc_session_entries:decided/1), and where the looks are in
    %% the log of calls from outside that took flags (riarc_trace_pattern:look/1).
    view_decided :: riarc_session_entries:decided(),
    untrace_mark :: riarc_trace_pattern:untrace_mark()
}).

-opaque t() :: #verdicts{}.
%% What riarc's own processes tell the session that only the entries learn.
-type learnt() :: {riarc_partition_events, riarc_session_entries:key(), non_neg_integer()}
                | {riarc_partition, riarc_session_entries:key(), riarc_event:sid(), riarc_event:mfa_args()}
                | {riarc_explanation, riarc_session_entries:key(), map()}
                | {riarc_cut, riarc_session_entries:key(), riarc_event:sid(), term()}
                | {riarc_incomplete, riarc_session_entries:key(), #{riarc_event:sid() => [term()]}}
                | {riarc_stopped_short, riarc_session_entries:key(), #{own := boolean(), lost := map()}}
                | {riarc_remote_child, riarc_session_entries:key(), partition, map()}.

%% @doc No entry yet, nobody subscribed; Lineage: whether entries carry their lineage
%% (option lineage).
-spec new(boolean()) -> t().
new(Lineage) ->
    E = riarc_session_entries:new(Lineage),
    #verdicts{entries = E, view_decided = riarc_session_entries:decided(E),
              untrace_mark = riarc_trace_pattern:untrace_mark()}.

%% @doc The book of entries, to read (riarc_session_entries).
-spec entries(t()) -> riarc_session_entries:t().
entries(#verdicts{entries = E}) -> E.

%% @doc A tracer started, one of Live now live.
-spec tracer_up(pid(), non_neg_integer(), t()) -> t().
tracer_up(Pid, Live, V = #verdicts{entries = E}) ->
    V#verdicts{entries = riarc_session_entries:tracer_up(Pid, Live, E)}.

%% @doc The partition a tracer started for (riarc_session_entries:part/5).
-spec part(riarc_session_entries:key(), riarc_event:sid(), riarc_event:mfa_args(), {term(), term()}, term(), t()) -> t().
part(Pid, Proc, MFA, Lineage, Over, V) ->
    {E, Changed} = riarc_session_entries:part(Pid, Proc, MFA, Lineage, V#verdicts.entries),
    publish(Changed, Over, V#verdicts{entries = E}).

%% @doc A partition's tracer has ended (Reason; Analysing: its monitor's process still
%% runs): its entry, closed (riarc_session_entries:closed/3), and whether the tracer
%% crashed (an invariant of riarc's broken: the session counts it).
-spec tracer_down(pid(), term(), boolean(), term(), t()) -> {t(), ok | crashed}.
tracer_down(Pid, Reason, Analysing, Over, V0) ->
    {V1, Crash} = closed(Pid, Reason, Analysing, Over, V0),
    %% The partitions it adopted end with it, as its own does: their monitors ran in it.
    {Hosted, E} = riarc_session_entries:hosted(Pid, V1#verdicts.entries),
    V = lists:foldl(fun(Key, A) -> element(1, closed(Key, Reason, false, Over, A)) end,
                    V1#verdicts{entries = E}, Hosted),
    {V, Crash}.

%% @doc A tracer adopted a partition (riarc_tracer_adopted), whose entry is Key's: as
%% part/6 for a tracer's partition.
-spec adopted(pid(), riarc_session_entries:key(), {riarc_event:sid(), riarc_event:mfa_args()},
              {term(), term()}, term(), t()) -> t().
adopted(Tracer, Key, {Proc, MFA}, Lineage, Over, V = #verdicts{entries = E}) ->
    part(Key, Proc, MFA, Lineage, Over, V#verdicts{entries = riarc_session_entries:adopted(Tracer, Key, E)}).

closed(Key, Reason, Analysing, Over, V0) ->
    {V, Crash} = crash(Key, Reason, Over, V0),
    {E, Changed} = riarc_session_entries:closed(Key, Analysing, V#verdicts.entries),
    {publish(Changed, Over, V#verdicts{entries = E}), Crash}.

%% A tracer that dies of anything but its own TRYGC is a fault in riarc: its partition
%% gets the verdict error, and the rest of the run goes on.
crash(_Pid, normal, _Over, V) -> {V, ok};
%% (offline helper's minimal fix) A short-lived tracer can finish (TRYGC) before the
%% session handles its riarc_tracer_up and monitors it: the monitor then reports noproc,
%% which is not a crash. Replayed traces (riarc_backend_log) hit this often.
crash(_Pid, noproc, _Over, V) -> {V, ok};
crash(Pid, Reason, Over, V) ->
    case riarc_session_entries:crash_entry(Pid, Reason, Over, V#verdicts.entries) of
        none -> {V, ok};
        {cut_short, Entry} -> {put(Pid, Entry, Over, V), ok};
        {crashed, Entry} ->
            %% Once per tracer, not once more per partition it adopted.
            _ = is_pid(Pid) andalso logger:error("riarc: tracer ~p crashed: ~0tp", [Pid, Reason]),
            {put(Pid, Entry, Over, V), crashed}
    end.

%% @doc An analysis process of Tracer's partition ended (Analysing: another still runs):
%% a closed entry with no verdict is told now (riarc_session_entries:closed_told/3).
-spec analysis_ended(riarc_session_entries:key(), boolean(), term(), t()) -> t().
analysis_ended(Tracer, Analysing, Over, V = #verdicts{entries = E}) ->
    case riarc_session_entries:verdict(Tracer, E) of
        none -> publish(riarc_session_entries:closed_told(Tracer, Analysing, E), Over, V);
        _ -> V
    end.

%% @doc The one way a partition's verdict entry is set: its subscribers hear of it.
-spec put(riarc_session_entries:key(), map(), term(), t()) -> t().
put(Tracer, Entry, Over, V = #verdicts{entries = E}) ->
    publish([Tracer], Over, V#verdicts{entries = riarc_session_entries:put(Tracer, Entry, E)}).

%% @doc A verdict a partition's monitor gave (`riarc_verdict'), with its explanation if
%% the tracer sent one. Cut: why riarc cut the run short, if it did
%% (riarc_session_entries:monitor_entry/5); Log: whether verdicts are logged as they
%% come (option log).
-spec monitor_verdict({riarc_verdict, riarc_session_entries:key(), riarc_event:sid(), riarc_event:mfa_args(),
                       riarc_monitor:verdict() | none, term(), non_neg_integer()},
                      term(), boolean(), term(), t()) -> t().
monitor_verdict({riarc_verdict, Tracer, Proc, MFA, Verdict, Why, N}, Cut, Log, Over, V) ->
    %% The process and MFA as the book has them since the partition was announced, when
    %% they are the same: one copy on the session's heap, not two (an MFA's arguments are
    %% a good part of an entry, and tens of thousands stay till the end).
    Part = case riarc_session_entries:part_of(Tracer, V#verdicts.entries) of
               Known when Known =:= {Proc, MFA} -> Known;
               _ -> {Proc, MFA}
           end,
    Entry = riarc_session_entries:monitor_entry(Tracer, Part, {Verdict, Why, N}, Cut, V#verdicts.entries),
    riarc_result:log_verdict(Log, "", Entry),
    put(Tracer, Entry, Over, V).

%% @doc A verdict the session gives a partition itself (its analysis was ended): only when
%% the monitor has not given one. Steps: the monitor had begun that many, finished one
%% less. Log: whether verdicts are logged as they come (option log).
-spec set(riarc_session_entries:key(), non_neg_integer(), {riarc_monitor:verdict(), term()}, boolean(), term(), t()) -> t().
set(Tracer, Steps, {Verdict, Why}, Log, Over, V = #verdicts{entries = E}) ->
    case {riarc_session_entries:verdict(Tracer, E), riarc_session_entries:part_of(Tracer, E)} of
        {none, {Proc, MFA}} ->
            Entry = riarc_result:entry(Proc, MFA, Verdict, max(0, Steps - 1), Why),
            riarc_result:log_verdict(Log, "", Entry),
            put(Tracer, Entry, Over, V);
        _ -> V
    end.

%% @doc What riarc's own processes tell the session of a partition that only its entry
%% learns.
-spec learnt(learnt(), term(), t()) -> t().
learnt({riarc_partition_events, Tracer, N}, Over, V = #verdicts{entries = E}) ->
    shed_count(Tracer, Over, V#verdicts{entries = riarc_session_entries:partition_events(Tracer, N, E)});
learnt({riarc_partition, Tracer, Proc, MFA}, _Over, V = #verdicts{entries = E}) ->
    V#verdicts{entries = riarc_session_entries:partition(Tracer, Proc, MFA, E)};
learnt({riarc_explanation, Tracer, Expl}, _Over, V = #verdicts{entries = E}) ->
    V#verdicts{entries = riarc_session_entries:explained(Tracer, Expl, E)};
%% A process riarc's own detach untraced is no cut: the backend does not report it
%% (riarc_backend_route:watching/3).
learnt({riarc_cut, Tracer, Who, Why}, Over, V) ->
    case riarc_session_entries:cut(Tracer, Who, Why, V#verdicts.entries) of
        {E, own} ->
            Told = [Tracer || riarc_session_entries:verdict(Tracer, E) =/= none],
            publish(Told, Over, V#verdicts{entries = E});
        {E, all} -> republish(fun(_) -> true end, Over, V#verdicts{entries = E})
    end;
learnt({riarc_incomplete, _Tracer, Pending}, Over, V) ->
    {E, Lost} = riarc_session_entries:incomplete(Pending, V#verdicts.entries),
    republish(fun(#{pid := P}) -> is_map_key(P, Lost) end, Over, V#verdicts{entries = E});
learnt({riarc_stopped_short, Tracer, Info}, Over, V) ->
    {E, Changed} = riarc_session_entries:stopped_short(Tracer, Info, V#verdicts.entries),
    Own = [Tracer || maps:get(own, Info), riarc_session_entries:verdict(Tracer, E) =/= none],
    republish(Changed, Over, publish(Own, Over, V#verdicts{entries = E}));
%% A process started one on another node (riarc_tracer_instrument:remote_child/2). In
%% its own partition: that partition's trace lacks the child's events from then on, so
%% its verdict is not to be trusted, unless its monitor had reached one before (here
%% already, when the monitor runs in the tracer; one still on its way from an analysis
%% process is distrusted too: a false error, never a false accept). With a monitor of
%% its own: a monitor that never ran, an error of the run (the session's).
learnt({riarc_remote_child, Tracer, partition, Info}, Over, V) ->
    case riarc_session_entries:remote_child(Tracer, Info, V#verdicts.entries) of
        unchanged -> V;
        {E, true} -> publish([Tracer], Over, V#verdicts{entries = E});
        {E, false} -> V#verdicts{entries = E}
    end.

%% @doc A shed partition's count of dropped events, once its tracer has given it.
-spec shed_count(riarc_session_entries:key(), term(), t()) -> t().
shed_count(Tracer, Over, V) ->
    case riarc_session_entries:shed_entry(Tracer, V#verdicts.entries) of
        none -> V;
        Entry -> put(Tracer, Entry, Over, V)
    end.

%% @doc The entries that read otherwise now the session knows more (an incomplete trace,
%% an overload), though none was set (put/4 alone sets them): those Changed holds of, to
%% every subscriber. Nobody subscribed (the usual case): that is checked first, so no walk
%% of every partition's entry is made for nobody.
-spec republish(fun((map()) -> boolean()), term(), t()) -> t().
republish(Changed, Over, V = #verdicts{subs = Subs, entries = E}) ->
    case riarc_session_subs:any(Subs) of
        false -> V;
        true -> publish(riarc_session_entries:changed(Changed, E), Over, V)
    end.

%% @doc Cut detection: the node's send and receive patterns changed under riarc (by a
%% process riarc does not trace, or another tool) cut every partition's view from then
%% on. Looked at on the session's timer and once more when the session lets go of its
%% own (riarc_session's close/1). A change found by looking was made at some time since
%% the last look: only the verdicts in by then stand (view_decided).
-spec view_check(term(), t()) -> t().
view_check(Over, V0 = #verdicts{entries = E, untrace_mark = Mark}) ->
    {Look, Mark1} = riarc_trace_pattern:look(Mark),
    V = V0#verdicts{untrace_mark = Mark1},
    case Look of
        ok -> V#verdicts{view_decided = riarc_session_entries:decided(E)};
        {changed, Info} ->
            Why = #{process => undefined, call => {patterns_changed, Info}},
            E1 = riarc_session_entries:view_cut(Why, V#verdicts.view_decided, E),
            republish(fun(_) -> true end, Over, V#verdicts{entries = E1})
    end.

%% @doc Pid subscribes with Tag (riarc_session:subscribe/3).
-spec subscribe(pid(), reference(), t()) -> t().
subscribe(Pid, Tag, V = #verdicts{subs = Subs}) ->
    V#verdicts{subs = riarc_session_subs:add(Pid, Tag, Subs)}.

%% @doc Pid ended: its stream too, if it subscribed (else `false').
-spec unsubscribe(pid(), t()) -> {true, t()} | false.
unsubscribe(Pid, V = #verdicts{subs = Subs}) ->
    case riarc_session_subs:member(Pid, Subs) of
        true -> {true, V#verdicts{subs = riarc_session_subs:remove(Pid, Subs)}};
        false -> false
    end.

%% @doc Whether anyone subscribed.
-spec subscribed(t()) -> boolean().
subscribed(#verdicts{subs = Subs}) -> riarc_session_subs:any(Subs).

%% @doc The entries of the system's processes on followed nodes, as known now: those that
%% changed, to the subscribers (riarc_session_subs:publish_new/2).
-spec followed([map()], t()) -> t().
followed(Entries, V = #verdicts{subs = Subs}) ->
    V#verdicts{subs = riarc_session_subs:publish_new(Entries, Subs)}.

%% @doc Every partition's entry as known now, in the order their tracers started.
-spec list(term(), t()) -> [map()].
list(Over, #verdicts{entries = E}) -> riarc_session_entries:list(Over, E).

%% The entries of these tracers' partitions, as the result will list them, to every
%% subscriber.
publish([], _Over, V) ->
    V;
publish(Tracers, Over, V = #verdicts{subs = Subs, entries = E}) ->
    case riarc_session_subs:any(Subs) of
        false -> V;
        true ->
            ok = riarc_session_subs:publish([riarc_session_entries:as_known(T, Over, E) || T <- Tracers], Subs),
            V
    end.
