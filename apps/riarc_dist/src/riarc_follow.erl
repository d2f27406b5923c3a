%% @doc The book a session keeps of its system's processes on other nodes (the option
%% `follow => [Node]'): which starts of a process on a followed node the system made, and
%% which of the partitions the session following it there (a `new_processes' session on
%% that node, riarc_remote) monitors are those children and what they started.
%%
%% Why a book and not a question. The node where a child runs cannot tell, when the child
%% appears, whether its parent is a process of the monitored system (nothing in its
%% `spawned' event says so, and the parent may have ended by then): every child started
%% there from elsewhere is monitored there, and the session decides which of them are its
%% system's by what its own tracers saw. Each monitored process's start of a process on
%% another node reaches its partition's tracer in the process's order, before the request
%% leaves (riarc_trace_pattern), and is expected here (`expect/2', the parent, the node
%% and the call); each partition monitored on a followed node comes with its lineage: the
%% remote parent of a partition started from elsewhere (`parent'), the root of the
%% partition it was started from on that node otherwise (`within'). An expected child is
%% matched with an unmatched partition of its node with the same parent and the same
%% function and arity (the arguments can be unknown there, riarc_backend_new_processes); what that
%% partition started on its node is the system's too. Partitions that match nothing
%% (children of processes this session does not monitor) are not the system's: they are
%% left out. An expected child nothing matches is the system's, unmonitored: an `error'
%% entry, never a silent accept.
%%
%% Once every tracer of the session has ended, every start the system made has been
%% expected (a tracer reports it before it ends), so the answer is final then; before, a
%% partition not matched yet may still be.
%% ```
%% 1> F0 = riarc_follow:new().
%% 2> P = list_to_pid("<0.80.0>"), C = c:pid(0, 200, 0).
%% 3> F1 = riarc_follow:expect(#{parent => P, node => 'b@h', mfa => {w, go, [1]}}, F0).
%% 4> riarc_follow:settled(F1).
%% false
%% 5> F2 = riarc_follow:learn('b@h', #{pid => C, mfa => {w, go, [1]}, verdict => accept, events => 2, parent => P}, F1).
%% 6> riarc_follow:settled(F2).
%% true
%% 7> [maps:get(node, E) || E <- riarc_follow:entries(F2)].
%% ['b@h']
%% '''
-module(riarc_follow).

-export([new/0, expect/2, learn/3, known/3, down/3, settled/1, waits_for/1, entries/1,
         final/1, format_error/1]).
-export_type([t/0, error_reason/0]).

-type error_reason() :: {not_followed, #{parent := pid(), node := node(),
                                         mfa := riarc_event:mfa_args()}}
                      | open.

-record(book, {
    %% The starts the system made on followed nodes, the last reported first.
    expected = [] :: [map()],
    %% Per followed node, the partitions its session monitors: root process -> entry.
    seen = #{} :: #{node() => #{term() => map()}},
    %% Followed nodes whose session has ended on its own, and why.
    down = #{} :: #{node() => term()}
}).
-opaque t() :: #book{}.

%% @doc An empty book (which nodes are followed is the session's to know).
-spec new() -> t().
new() -> #book{}.

%% @doc A start of a process on a followed node made by a monitored process: `parent',
%% `node', `mfa' (as Λ is asked about it), and `relayed => true' when Λ put the child in
%% its parent's partition (its events are relayed there: see resolve/1).
-spec expect(map(), t()) -> t().
expect(Info = #{parent := _, node := _, mfa := _}, F = #book{expected = X}) ->
    F#book{expected = [Info | X]}.

%% @doc A partition's entry from Node's session (new, or read again).
-spec learn(node(), map(), t()) -> t().
learn(Node, E = #{pid := P}, F = #book{seen = Seen}) ->
    F#book{seen = Seen#{Node => (maps:get(Node, Seen, #{}))#{P => E}}}.

%% @doc The entry last learnt for process P's partition on Node, if any.
-spec known(node(), term(), t()) -> map() | undefined.
known(Node, P, #book{seen = Seen}) ->
    case Seen of
        #{Node := #{P := E}} -> E;
        #{} -> undefined
    end.

%% @doc Node's session ended on its own (the node went down, the link broke) or did not
%% answer the session's stop: Reason (the first one given).
-spec down(node(), term(), t()) -> t().
down(Node, Reason, F = #book{down = D}) ->
    %% The first word stands: a session that went down and then failed to answer a stop
    %% went down.
    F#book{down = maps:merge(#{Node => Reason}, D)}.

%% @doc True when every expected child is matched with a partition, and that partition
%% and every one started from it there have ended (no entry `open'), or their node's
%% session has.
-spec settled(t()) -> boolean().
settled(F) ->
    waits_for(F) =:= nothing.

%% @doc What the book still waits for, on nodes whose session is up: `partitions' when a
%% matched partition (or one started from it) is open; else `starts' when an expected
%% child is matched by no partition yet (its partition not seen yet, or its start failed
%% there: the book cannot tell which); else `nothing' (settled/1).
-spec waits_for(t()) -> nothing | partitions | starts.
waits_for(F = #book{down = D}) ->
    {Listed, Relayed, Unmatched} = resolve(F),
    Matched = Listed ++ Relayed,
    Up = fun(#{node := N}) -> not is_map_key(N, D) end,
    case {[E || E <- Matched, is_map_key(open, E), Up(E)], lists:filter(Up, Unmatched)} of
        {[_ | _], _} -> partitions;
        {[], [_ | _]} -> starts;
        {[], []} -> nothing
    end.

%% @doc The system's entries on followed nodes, each with its `node': the matched
%% partitions and those started from them (one still running without a verdict when its
%% node's session ended: `error', the end its reason), then an `error' entry for each
%% expected child matched by none, its reason the node's end (`nodedown', ...) or
%% `{riarc_follow, {not_followed, Info}}' when its node's session saw no such child.
-spec entries(t()) -> [map()].
entries(F = #book{down = D}) ->
    {Matched, _Relayed, Unmatched} = resolve(F),
    [gone(E, D) || E <- Matched] ++
        [#{pid => undefined, mfa => MFA, verdict => error, events => 0, node => N, parent => P,
           reason => case D of
                         #{N := Why} -> Why;
                         #{} -> {?MODULE, {not_followed, Info}}
                     end}
         || Info = #{parent := P, node := N, mfa := MFA} <- Unmatched].

%% A partition still running when its node's session ended without a verdict: error, the
%% node's end its reason.
gone(E = #{open := true, verdict := none, node := N}, D) when is_map_key(N, D) ->
    (maps:remove(open, E))#{verdict => error, reason => maps:get(N, D)};
gone(E, _D) ->
    E.

%% @doc entries/1 once the run is over: a partition still running on its node then (the
%% run was stopped, or timed out) keeps the verdict it reached, or is `inconclusive',
%% reason `{riarc_follow, open}'.
-spec final(t()) -> [map()].
final(F) ->
    [case E of
         #{open := true, verdict := none} ->
             (maps:remove(open, E))#{verdict => inconclusive, reason => {?MODULE, open}};
         #{} -> maps:remove(open, E)
     end || E <- entries(F)].

%% @doc A sentence for a reason of this module.
-spec format_error(error_reason()) -> string().
format_error({not_followed, #{parent := P, node := Node, mfa := MFA}}) ->
    lists:flatten(io_lib:format("~p started ~0tp on node ~p, and the session following the "
                                "system there saw no such child (the start failed there, or "
                                "the child's partition began only after the run had waited "
                                "for it: option follow_grace)", [P, MFA, Node]));
format_error(open) ->
    "the partition was still running on its node when the run ended".

%% Every expected child matched, in order, with an unmatched partition of its node with
%% the same parent and the same function and arity; then what the matched started there,
%% transitively (a partition's `within' is the partition it was started from). Indexed by
%% parent and by `within' first: linear in the partitions, up to the sort.
%%
%% A child Λ put in its parent's partition (`relayed', one partition spanning nodes) has
%% its events in that partition, here: its partition there is matched (what it started is
%% the system's) but not listed, and one that never showed is that partition's error, not
%% an entry of its own.
resolve(#book{expected = X, seen = Seen}) ->
    ByParent = index(parent, Seen),
    {Taken, Unmatched, _} =
        lists:foldl(fun(Info = #{node := N, parent := Parent}, {Tk, Un, Left}) ->
                            Candidates = maps:get({N, Parent}, Left, []),
                            case {take(Info, Candidates, []), Info} of
                                {{ok, P, Rest}, _} ->
                                    {[{{N, P}, relayed(Info)} | Tk], Un, Left#{{N, Parent} => Rest}};
                                {none, #{relayed := true}} -> {Tk, Un, Left};
                                {none, _} -> {Tk, [Info | Un], Left}
                            end
                    end, {[], [], ByParent}, lists:reverse(X)),
    Roots = [K || {K, _} <- Taken],
    Relayed = maps:from_list([{K, true} || {K, true} <- Taken]),
    Matched = within(Roots, index(within, Seen), maps:from_list([{K, true} || K <- Roots])),
    Entries = [{K, (maps:get(P, maps:get(N, Seen)))#{node => N}} || K = {N, P} <- lists:sort(maps:keys(Matched))],
    {[E || {K, E} <- Entries, not is_map_key(K, Relayed)],
     [E || {K, E} <- Entries, is_map_key(K, Relayed)],
     lists:reverse(Unmatched)}.

relayed(Info) -> maps:get(relayed, Info, false).

%% Node and lineage key -> the partitions (process and call) that have it, in pid order.
index(Key, Seen) ->
    Pairs = lists:sort([{{N, K}, {P, MFA}} || {N, Parts} <- maps:to_list(Seen),
                                             {P, E = #{mfa := MFA}} <- maps:to_list(Parts),
                                             {ok, K} <- [maps:find(Key, E)]]),
    lists:foldr(fun({K, V}, Acc) -> Acc#{K => [V | maps:get(K, Acc, [])]} end, #{}, Pairs).

take(_Info, [], _Skipped) ->
    none;
take(Info = #{mfa := MFA}, [{P, M} | Rest], Skipped) ->
    case same_call(M, MFA) of
        true -> {ok, P, lists:reverse(Skipped, Rest)};
        false -> take(Info, Rest, [{P, M} | Skipped])
    end.

%% The same function and arity: the arguments may be unknown on the child's node.
same_call({M, F, A1}, {M, F, A2}) when is_list(A1), is_list(A2) -> length(A1) =:= length(A2);
same_call(_, _) -> false.

within([], _ByWithin, Acc) ->
    Acc;
within(New, ByWithin, Acc) ->
    Next = [{N, P} || {N, Root} <- New, {P, _} <- maps:get({N, Root}, ByWithin, []),
                      not is_map_key({N, P}, Acc)],
    within(Next, ByWithin, maps:merge(Acc, maps:from_list([{K, true} || K <- Next]))).
