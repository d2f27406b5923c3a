%% @doc A session's book of its partitions' entries (riarc_session): per tracer, the
%% partition it started for, its verdict entry, its reject's explanation and (option
%% lineage) its lineage; and what the session learnt since that makes an entry read
%% otherwise (an incomplete trace, a child on another node, an overload). Pure: the
%% session tells its subscribers of the entries that changed.
%% ```
%% 1> T = self(), B0 = riarc_session_entries:tracer_up(T, 1, riarc_session_entries:new(false)).
%% 2> {B1, _} = riarc_session_entries:part(T, T, {m, f, []}, {none, none}, B0).
%% 3> [maps:get(verdict, E) || E <- riarc_session_entries:list(undefined, B1)].
%% []
%% 4> B2 = riarc_session_entries:put(T, riarc_result:entry(T, {m, f, []}, accept, 3, undefined), B1).
%% 5> [maps:get(verdict, E) || E <- riarc_session_entries:list(undefined, B2)].
%% [accept]
%% '''
-module(riarc_session_entries).

-export([new/1, tracer_up/3, adopted/3, hosted/2, counts/1, part/5, partition/4, closed/3, closed_told/3,
         put/3, verdict/2, part_of/2, bare_entry/2, explanation/2, explained/3,
         monitor_entry/5, crash_entry/4,
         partition_events/3, shed_entry/2, incomplete/2, stopped_short/3, remote_child/3, cut/4,
         view_cut/3,
         decided/1, changed/2,
         as_known/3, list/2]).
-export_type([t/0, key/0, decided/0]).

-record(entries, {
    %% By partition key (key/0: a tracer's own partition, or one it adopted).
    verdicts = #{} :: #{key() => map()},                % its verdict entry
    parts = #{} :: #{key() => {riarc_event:sid(), riarc_event:mfa_args()}}, % its root and MFA
    explanations = #{} :: #{key() => map()},         % its reject's explanation
    %% The partitions in the order they started, newest first, for output. A list, not a
    %% map of keys to numbers: a key added is two words, where a map of tens of thousands
    %% copies a path of nodes, and the result needs no sort.
    order = [] :: [key()],
    spawned = 0 :: non_neg_integer(),                % tracers started
    %% Per tracer, the partitions it adopted (riarc_tracer_adopted): they end with it.
    hosted = #{} :: #{pid() => [key()]},
    peak = 0 :: non_neg_integer(),
    %% Option lineage: each partition's entry says whose child its root is (`parent')
    %% and from which partition it was started (`within'), for the session on another
    %% node that follows its system here (riarc_follow).
    lineage = false :: boolean(),
    lineages = #{} :: #{key() => map()},
    %% Per ended tracer, how many events its partition had (for a shed partition's count).
    partition_events = #{} :: #{key() => non_neg_integer()},
    %% Processes some of whose events reached a tracer that could not deliver them.
    incomplete = #{} :: #{riarc_event:sid() => non_neg_integer()},
    %% Partitions (by tracer) a process of which started one on another node that Λ puts
    %% in the same partition, before their monitors reached a verdict.
    remote = #{} :: #{key() => map()},
    %% Cut detection (riarc_trace_pattern:call_event/2): partitions (by tracer) whose
    %% view a process took away before their monitors reached a verdict; and a cut of the
    %% whole node's view (patterns changed, another process's flags), with the tracers
    %% whose verdicts were in before it.
    cuts = #{} :: #{key() => map()},
    %% (and the partition whose own cut judges it apart, if any).
    node_cut = none :: none | {map(), decided(), key() | none},
    %% A stop that reached tracers before routing had settled (riarc_stopped_short): the
    %% partitions (by tracer) whose own trace may lack events, and the processes (by pid)
    %% whose events a tracer still held, with how many.
    stopped = #{} :: #{{tracer, key()} | {process, riarc_event:sid()} => non_neg_integer()}
}).

-opaque t() :: #entries{}.
%% The verdicts in at some time (decided/1).
-opaque decided() :: #{key() => map()}.
%% A partition's key: the tracer started for it, or, for a partition a tracer adopted
%% (riarc_tracer_adopted), that tracer and the partition's root.
-type key() :: pid() | {pid(), riarc_event:sid()}.

%% @doc An empty book; Lineage: whether entries carry their lineage (option lineage).
-spec new(boolean()) -> t().
new(Lineage) -> #entries{lineage = Lineage}.

%% @doc A tracer started, one of Live now live.
-spec tracer_up(pid(), non_neg_integer(), t()) -> t().
tracer_up(Pid, Live, B = #entries{spawned = N}) ->
    listed(Pid, B#entries{spawned = N + 1, peak = max(B#entries.peak, Live)}).

%% @doc A tracer adopted a partition, known by Key from now on.
-spec adopted(pid(), key(), t()) -> t().
adopted(Tracer, Key, B = #entries{hosted = H}) ->
    listed(Key, B#entries{hosted = H#{Tracer => [Key | maps:get(Tracer, H, [])]}}).

%% @doc The partitions Tracer adopted, forgotten: the tracer has ended.
-spec hosted(pid(), t()) -> {[key()], t()}.
hosted(Tracer, B = #entries{hosted = H}) ->
    {lists:reverse(maps:get(Tracer, H, [])), B#entries{hosted = maps:remove(Tracer, H)}}.

%% In the order started: every partition is listed once, and stays.
listed(Key, B = #entries{order = Order}) ->
    B#entries{order = [Key | Order]}.

%% @doc The tracers started in all, and the most live at once.
-spec counts(t()) -> #{spawned := non_neg_integer(), peak := non_neg_integer()}.
counts(#entries{spawned = S, peak = P}) -> #{spawned => S, peak => P}.

%% @doc The partition a tracer started for, and the tracers whose entries changed.
%% When entries carry their lineage, the partition is listed from its start, `open' while
%% its tracer lives, with verdict none until its monitor gives one (a provisional entry,
%% read from its lineage: never one of the verdicts, which only a monitor or the session's
%% own judgement set): a session following its system here learns of each partition
%% before the one it was started from ends (the tracer that starts a tracer tells the
%% session before it can end), so it knows what it still waits for (riarc_follow:settled/1).
-spec part(key(), riarc_event:sid(), riarc_event:mfa_args(), {term(), term()}, t()) -> {t(), [key()]}.
part(Pid, Proc, MFA, {Parent, Within}, B = #entries{parts = Parts, lineage = L}) ->
    B1 = B#entries{parts = Parts#{Pid => {Proc, MFA}}},
    case L of
        true ->
            Lineage = #{parent => Parent, within => Within, open => true},
            {B1#entries{lineages = (B1#entries.lineages)#{Pid => Lineage}}, [Pid]};
        false -> {B1, []}
    end.

%% @doc A tracer's partition as it reports it (riarc_partition).
-spec partition(key(), riarc_event:sid(), riarc_event:mfa_args(), t()) -> t().
partition(Tracer, Proc, MFA, B = #entries{parts = Parts}) ->
    B#entries{parts = Parts#{Tracer => {Proc, MFA}}}.

%% @doc A partition's tracer has ended: its entry is no longer open. Told at once when
%% its verdict is known; with none yet, when its monitor's own process (which goes on with
%% the events it holds) ends (closed_told/3): told before, `none' would read as the
%% partition's last word. Analysing: its monitor's process still runs.
-spec closed(key(), boolean(), t()) -> {t(), [key()]}.
closed(Pid, Analysing, B = #entries{lineages = Ls}) when is_map_key(Pid, Ls) ->
    B1 = B#entries{lineages = Ls#{Pid => maps:remove(open, maps:get(Pid, Ls))}},
    {B1, closed_told(Pid, Analysing, B1)};
closed(_Pid, _Analysing, B) ->
    {B, []}.

%% @doc The tracers whose closed entry is to be told now (closed/3).
-spec closed_told(key(), boolean(), t()) -> [key()].
closed_told(Pid, Analysing, #entries{verdicts = Vs, lineages = Ls}) ->
    case Ls of
        #{Pid := #{open := true}} -> [];
        #{Pid := _} ->
            case is_map_key(Pid, Vs) orelse not Analysing of
                true -> [Pid];
                false -> []
            end;
        #{} -> []
    end.

%% @doc The one way a partition's verdict entry is set (its subscribers are to hear of it).
-spec put(key(), map(), t()) -> t().
put(Tracer, Entry, B = #entries{verdicts = Vs}) -> B#entries{verdicts = Vs#{Tracer => Entry}}.

%% @doc A partition's verdict entry, if it has one.
-spec verdict(key(), t()) -> map() | none.
verdict(Tracer, #entries{verdicts = Vs}) ->
    case Vs of
        #{Tracer := E} -> E;
        #{} -> none
    end.

%% @doc A tracer's partition: its process and MFA, if announced.
-spec part_of(key(), t()) -> {riarc_event:sid(), riarc_event:mfa_args()} | undefined.
part_of(Tracer, #entries{parts = Parts}) -> maps:get(Tracer, Parts, undefined).

%% @doc The verdict's entry, or, with none yet, one with verdict none for the partition's
%% process and MFA as announced.
-spec bare_entry(key(), t()) -> map().
bare_entry(Tracer, #entries{verdicts = Vs, parts = Parts}) ->
    case Vs of
        #{Tracer := E} -> E;
        #{} ->
            {Proc, MFA} = maps:get(Tracer, Parts),
            riarc_result:entry(Proc, MFA, none, 0, undefined)
    end.

%% @doc The entry of a verdict a partition's monitor gave (V, Why, after N events), with
%% its explanation if the tracer sent one. Cut: why riarc cut the run short, if it did; a
%% partition that ended without a verdict after a timeout is inconclusive, saying so.
-spec monitor_entry(key(), {riarc_event:sid(), riarc_event:mfa_args()},
                    {riarc_monitor:verdict() | none, term(), non_neg_integer()}, term(), t()) -> map().
monitor_entry(Tracer, {Proc, MFA}, {V0, Why0, N}, Cut, B) ->
    {V, Why} = case {V0, Cut} of
                   {none, {timeout, T, _}} -> {inconclusive, {timeout, T}};
                   _ -> {V0, Why0}
               end,
    riarc_result:monitor_entry(Proc, MFA, {V, Why, N}, explanation(Tracer, B)).

%% @doc A partition's tracer ended abnormally (Reason; Over: why riarc detached, if it
%% did): `cut_short' when the overload policy killed it (its partition's trace was cut
%% short by riarc: inconclusive, unless it had a verdict), else `crashed', a fault in
%% riarc (error), or none when nothing changes.
-spec crash_entry(key(), term(), term(), t()) -> none | {cut_short | crashed, map()}.
crash_entry(Tracer, Reason, Over, B) ->
    Known = {verdict(Tracer, B), part_of(Tracer, B)},
    case {Over, Reason, Known} of
        {undefined, _, _} -> {crashed, crashed(Tracer, Reason, Known, B)};
        {_, killed, {none, {Proc, MFA}}} -> {cut_short, riarc_result:entry(Proc, MFA, inconclusive, 0, {overload, Over})};
        {_, killed, _} -> none;
        _ -> {crashed, crashed(Tracer, Reason, Known, B)}
    end.

%% The partition's process and MFA as announced (a session following its system here
%% matches the entry by its process).
crashed(Tracer, Reason, Known, B) ->
    Entry = case Known of
                {none, undefined} -> #{pid => undefined, mfa => undefined, events => 0};
                _ -> bare_entry(Tracer, B)
            end,
    Entry#{verdict => error, reason => {tracer_crashed, Reason}}.

%% @doc A partition's reject's explanation, if any.
-spec explanation(key(), t()) -> map() | none.
explanation(Tracer, #entries{explanations = Ex}) -> maps:get(Tracer, Ex, none).

%% @doc A partition's reject's explanation, as its tracer sends it.
-spec explained(key(), map(), t()) -> t().
explained(Tracer, Expl, B = #entries{explanations = Ex}) -> B#entries{explanations = Ex#{Tracer => Expl}}.

%% @doc How many events a partition had, as its ended tracer says.
-spec partition_events(key(), non_neg_integer(), t()) -> t().
partition_events(Tracer, N, B = #entries{partition_events = PE}) ->
    B#entries{partition_events = PE#{Tracer => N}}.

%% @doc A shed partition's count of dropped events: what was queued when it was shed (a
%% lower bound) until its tracer has ended and given the partition's whole count; all
%% but the analysed were dropped. The entry to set, if it changes.
-spec shed_entry(key(), t()) -> map() | none.
shed_entry(Tracer, #entries{verdicts = Vs, partition_events = PE}) ->
    case {Vs, PE} of
        {#{Tracer := E = #{reason := {shed, Info = #{analysed := A}}}}, #{Tracer := N}} ->
            E#{reason := {shed, Info#{dropped := N - A}}};
        _ -> none
    end.

%% @doc Events of these processes were lost (riarc_incomplete): the book, and which
%% processes' entries read otherwise now.
-spec incomplete(#{riarc_event:sid() => [term()]}, t()) -> {t(), #{riarc_event:sid() => non_neg_integer()}}.
incomplete(Pending, B = #entries{incomplete = Inc}) ->
    Lost = maps:map(fun(_, Events) -> length(Events) end, Pending),
    {B#entries{incomplete = maps:merge(Inc, Lost)}, Lost}.

%% @doc A stop reached Tracer before routing had settled (riarc_tracer_control's
%% stopped_short/1): Own, whether its own partition's trace may lack events; Lost, per
%% process, the events it still held. The book, and which entries may read otherwise
%% now (their tracer's, or their process's).
-spec stopped_short(key(), #{own := boolean(), lost := #{riarc_event:sid() => non_neg_integer()}}, t()) ->
    {t(), fun((map()) -> boolean())}.
stopped_short(Tracer, #{own := Own, lost := Lost}, B = #entries{stopped = Stopped}) ->
    Add = fun(K, N, M) -> maps:update_with(K, fun(O) -> O + N end, N, M) end,
    S1 = maps:fold(fun(P, N, M) -> Add({process, P}, N, M) end, Stopped, Lost),
    S2 = case Own of
             true -> Add({tracer, Tracer}, 0, S1);
             false -> S1
         end,
    {B#entries{stopped = S2}, fun(#{pid := P}) -> is_map_key({process, P}, Lost) end}.

%% @doc A process of Tracer's partition started one on another node in the partition:
%% the book, and whether the entry reads otherwise now (it has a verdict that is not
%% accept or reject), unless it had one, when nothing changes.
%% A relayed child whose trace was lost (`lost' in Info: its node went down, its relaying
%% tracer crashed, it never showed there) was spawned before, and what it did before the
%% deciding event may be what was lost (relayed events come in batches, after the fact):
%% an accept then is not to be trusted either; a reject stands.
-spec remote_child(key(), map(), t()) -> {t(), boolean()} | unchanged.
remote_child(Tracer, Info, B = #entries{remote = Rem, verdicts = Vs}) ->
    B1 = B#entries{remote = Rem#{Tracer => Info}},
    case Vs of
        #{Tracer := #{verdict := accept}} when is_map_key(lost, Info) -> {B1, true};
        #{Tracer := #{verdict := V}} when V =:= accept; V =:= reject -> unchanged;
        #{Tracer := _} -> {B1, true};
        #{} -> {B1, false}
    end.

%% @doc A process Who of Tracer's partition made a call that may take away what riarc
%% sees (Why, from riarc_trace_pattern:call_event/2). A process that changes only its own
%% flags cuts its own partition's view; any other such call may cut every partition's.
%% Verdicts in before the cut stand (accept and reject are final); the others become
%% errors. A process found no longer traced as it was (riarc_tracer_core:view_lost/3)
%% cuts its own partition, whatever its verdict. The book, and whether every entry is to
%% be told again.
-spec cut(key(), riarc_event:sid(), term(), t()) -> {t(), own | all}.
cut(Tracer, Who, Why, B = #entries{cuts = Cuts, verdicts = Vs}) ->
    Info = #{process => Who, call => Why},
    case Why of
        {Lost, _} when Lost =:= flags_removed; Lost =:= tracer_replaced ->
            %% Found by looking, at some time after the change: no verdict of the
            %% partition can be told to come before it.
            {B#entries{cuts = Cuts#{Tracer => Info}}, own};
        {trace, [Who, _ | _]} ->
            case Vs of
                #{Tracer := #{verdict := V}} when V =:= accept; V =:= reject -> {B, own};
                #{} -> {B#entries{cuts = Cuts#{Tracer => Info}}, own}
            end;
        %% Who's own call, whose rest its later children inherit (riarc_trace_pattern:
        %% cut_scope/2): every other partition's view may be cut; Who's own is judged
        %% by the call itself, told apart, in order with its events.
        {inherited, Call} ->
            {view_cut(Info#{call => Call}, decided(B), Tracer, B), all};
        _ ->
            {view_cut(Info, decided(B), B), all}
    end.

%% @doc The verdicts in now, to tell later which were in before a cut (view_cut/3): the
%% book of entries itself, as it is. Taken at every look at the node's view (every second
%% and as the session lets go), so it is never walked: a map's later versions share what
%% did not change, and this one stays as it was.
-spec decided(t()) -> decided().
decided(#entries{verdicts = Vs}) -> Vs.

%% Whether a partition's verdict was in (accept or reject: final) in Decided.
decided_in(Tracer, Decided) ->
    case Decided of
        #{Tracer := #{verdict := V}} -> V =:= accept orelse V =:= reject;
        #{} -> false
    end.

%% @doc The whole node's view was cut (Why); the verdicts of Decided (decided/1 as it was
%% when the view was last known whole) stand, every other is an error. The first cut is
%% the one told.
-spec view_cut(term(), decided(), t()) -> t().
view_cut(Why, Decided, B) ->
    view_cut(Why, Decided, none, B).

view_cut(Why, Decided, Except, B = #entries{node_cut = none}) ->
    B#entries{node_cut = {Why, Decided, Except}};
view_cut(_Why, _Decided, _Except, B) ->
    B.

%% @doc The tracers whose verdict entry Changed holds of.
-spec changed(fun((map()) -> boolean()), t()) -> [key()].
changed(Changed, #entries{verdicts = Vs}) ->
    [T || {T, E} <- maps:to_list(Vs), Changed(E)].

%% @doc A partition's entry as the session reads it now (Overload: why riarc detached,
%% or undefined): its verdict, unless what the session learnt since (an incomplete trace,
%% a child on another node, an overload) says otherwise.
-spec as_known(key(), term(), t()) -> map().
as_known(Tracer, Over, B = #entries{incomplete = Inc, remote = Rem, stopped = Stopped}) ->
    E = untrusted(unfollowed(seen_whole(Tracer, entry(Tracer, B), B), maps:get(Tracer, Rem, none)), Inc),
    cut_short(ended_early(Tracer, E, Stopped), Over).

%% @doc Every partition's entry as known now, in the order their tracers started.
-spec list(term(), t()) -> [map()].
list(Over, B = #entries{verdicts = Vs, order = Order, lineages = Ls}) ->
    Keys = in_order(maps:merge(Ls, Vs), Order),
    case as_told(Over, B) of
        true -> [maps:get(T, Vs) || T <- Keys];
        false -> [as_known(T, Over, B) || T <- Keys]
    end.

%% Every key of Known once: those never listed first (in term order), then the others in
%% the order they started. Each partition is listed once (tracer_up/3, adopted/3), so
%% what was listed and is known is, as a rule, every known key once: checked by one
%% bulk map build (tens of thousands of partitions at the end of a large run) before
%% the walk that takes each key once.
in_order(Known, Order) ->
    Listed = [T || T <- lists:reverse(Order), is_map_key(T, Known)],
    case length(Listed) =:= map_size(Known)
        andalso map_size(maps:from_list([{T, []} || T <- Listed])) =:= map_size(Known) of
        true -> Listed;
        false -> in_order_once(Known, Order)
    end.

in_order_once(Known, Order) ->
    {Listed, Seen} = lists:foldl(fun(T, {Acc, S}) ->
                                         case is_map_key(T, Known) andalso not is_map_key(T, S) of
                                             true -> {[T | Acc], S#{T => true}};
                                             false -> {Acc, S}
                                         end
                                 end, {[], #{}}, lists:reverse(Order)),
    Unlisted = case map_size(Seen) < map_size(Known) of
                   true -> [T || T <- lists:sort(maps:keys(Known)), not is_map_key(T, Seen)];
                   false -> []
               end,
    Unlisted ++ lists:reverse(Listed).

%% Nothing the session learnt reads any entry otherwise (as_known/3): every entry is its
%% verdict's, as told. The usual end of a run, and tens of thousands of partitions listed
%% without looking each up in every book.
as_told(undefined, #entries{lineages = Ls, incomplete = Inc, remote = Rem, cuts = Cuts,
                            node_cut = none, stopped = Stopped}) ->
    map_size(Ls) + map_size(Inc) + map_size(Rem) + map_size(Cuts) + map_size(Stopped) =:= 0;
as_told(_Over, _B) ->
    false.

%% A partition's entry: its verdict's, or (lineage kept, no verdict yet) the provisional
%% one, verdict none; with its lineage.
entry(Tracer, B = #entries{lineages = Ls}) ->
    maps:merge(bare_entry(Tracer, B), maps:get(Tracer, Ls, #{})).

%% A monitor whose partition grew a child on another node before it reached a verdict
%% gave its verdict (or none) on a trace without that child's events: error, saying so
%% (an error of its own keeps its own reason).
unfollowed(E, none) ->
    E;
unfollowed(E = #{verdict := error}, _Info) ->
    E;
unfollowed(E = #{verdict := V}, Info) ->
    E#{verdict => error, reason => {remote_child, Info#{verdict_on_partial_trace => V}}}.

%% A monitor whose view was cut (cut/4) gave its verdict, or none, on what riarc still
%% saw: error, saying what cut it, unless it had decided before.
seen_whole(Tracer, E, #entries{cuts = Cuts, node_cut = NodeCut}) ->
    Cut = case {Cuts, NodeCut} of
              {#{Tracer := Info}, _} -> Info;
              {_, {Info, Decided, Except}} ->
                  case Tracer =:= Except orelse decided_in(Tracer, Decided) of
                      true -> none;
                      false -> Info
                  end;
              _ -> none
          end,
    riarc_result:seen_cut(Cut, E).

cut_short(E = #{verdict := none}, Over) when Over =/= undefined ->
    E#{verdict => inconclusive, reason => {overload, Over}};
cut_short(E, _Over) ->
    E.

%% A partition that ended without a verdict at a stop that found some of its events
%% still on their way to its monitor did not end with its trace: inconclusive, saying
%% so: how many events others held for it, and whether its own tracer had not settled
%% (a takeover unacknowledged: events routed to it after the stop are lost uncounted).
%% A verdict reached before stands: it was reached on a prefix of the partition's
%% trace (a held event is one its monitor had not had), and accept and reject are final.
ended_early(Tracer, E = #{verdict := none, pid := P}, Stopped) ->
    case {maps:find({tracer, Tracer}, Stopped), maps:find({process, P}, Stopped)} of
        {error, error} -> E;
        {Own, Held} ->
            N = lists:sum([K || {ok, K} <- [Own, Held]]),
            Why = case Own of
                      {ok, _} -> #{held_events => N, unsettled => true};
                      error -> #{held_events => N}
                  end,
            %% Its trace did not end where it ended: no `why' of an end.
            (maps:remove(why, E))#{verdict => inconclusive, reason => {stopped_short, Why}}
    end;
ended_early(_Tracer, E, _Stopped) ->
    E.

%% A monitor that missed events of its own process gave a verdict on an unsound trace:
%% the verdict is error, saying so, rather than a false accept or reject.
untrusted(E = #{pid := P, verdict := V}, Inc) when is_map_key(P, Inc) ->
    E#{verdict => error, reason => {incomplete_trace, #{lost_events => maps:get(P, Inc),
                                                        verdict_on_partial_trace => V}}};
untrusted(E, _Inc) ->
    E.
