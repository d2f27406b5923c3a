%% @doc A session's distribution part (riarc_session): following its system onto other
%% nodes (riarc's options `follow' and `follow_joining'). It keeps the book of the
%% system's children there (riarc_follow), the sessions following it there (riarc_remote's
%% proxies, streaming their entries), the nodes being joined (riarc_join), and one
%% partition spanning nodes: the events of a child there relayed to its parent's
%% partition's tracer here. The session passes it the messages it does not know and the
%% tracers' word of a child on another node; it answers with its state, what the session
%% is to do next, and effects for the session's own books (an error of the run, forged
%% messages, followed entries to tell the subscribers).
%% ```
%% 1> {ok, D} = riarc_session_dist:init(self(), #{}, none, #{max_queue => 10}, make_ref(), riarc_demo_monitors).
%% 2> riarc_session_dist:wait(false, D).
%% done
%% 3> riarc_session_dist:entries(true, D).
%% []
%% 4> riarc_session_dist:handle_info(hello, #{finished => false, stopping => false, subscribed => false}, D).
%% unknown
%% '''
-module(riarc_session_dist).

-export([init/6, tracer_cfg/2, handle_info/3, remote_child/5, wait/2, stop_followers/2,
         entries/2, held/1, format_error/1]).
-export_type([t/0, error_reason/0]).

-type error_reason() :: {before_follow, #{node := node(), children := [map()]}}
                      | {join_failed, node(), term()} | {join_watcher_down, term()}.

%% How long the sessions following the system on other nodes get to stop and answer
%% with their results (riarc_remote's proxies), under stop/1's own bound.
-define(FOLLOWER_STOP_MS, 20000).

-record(dist, {
    session :: pid(),
    token :: reference(),
    spec :: riarc_lambda:spec(),
    opts :: map(),
    max_queue :: pos_integer(),
    %% Option follow: the book of the system's children on followed nodes, and the
    %% proxies of the sessions following it there (by the tag of their stream: node and
    %% proxy).
    follow = undefined :: undefined | riarc_follow:t(),
    followers = #{} :: #{reference() => {node(), pid()}},
    followers_stopped = false :: boolean(),          % the followers asked to stop
    %% The wait (option follow_grace) for expected children not seen on their node yet,
    %% once they alone are left.
    follow_grace = undefined :: undefined | reference(),
    %% One partition spanning nodes (follow): the secret the followers' relaying tracers
    %% send with (riarc_tracer); per remote parent and its node, the tracer here of the
    %% parent's partition and the count of its relayed children; and what was relayed
    %% for parents no tracer here has claimed yet (oldest last), up to max_queue events
    %% in all.
    relay_secret = make_ref() :: reference(),
    relays = #{} :: #{{pid(), node()} => relay()},
    relay_wait = #{} :: #{{pid(), node()} => [{pid(), relayed()}]},
    relay_held = 0 :: non_neg_integer(),
    relay_dropped = #{} :: #{{pid(), node()} => non_neg_integer()},
    %% Option follow_joining: nodes are followed as they come up (riarc_join), but for
    %% those connected when the run began, where a start of the system's is not followed;
    %% the processes starting the followers of nodes that came up, each with its node.
    join_watcher = undefined :: undefined | pid(),
    unfollowable = [] :: [node()],
    joins = #{} :: #{pid() => {node(), reference()}},
    join_early = [] :: [{riarc_verdict | riarc_remote_down, reference(), term()}]
}).

-opaque t() :: #dist{}.
-type ctx() :: riarc_distribution:ctx().
-type effect() :: riarc_distribution:effect().
-type next() :: riarc_distribution:next().

%% A remote parent's relayed children: how many its partition's tracer was told of
%% (expected), how many were seen relaying and how many ended, how many were given up
%% (lost, after follow_grace or with their node).
-type relay() :: #{tracer := pid(), expected := non_neg_integer(), seen := #{pid() => true},
                   ended := non_neg_integer(), lost := non_neg_integer()}.
-type relayed() :: {events, [riarc_event:event()]} | 'end'.

%%% The session's calls

%% @doc The distribution part of Session, with its options, backend, safety limits,
%% token and Spec; with option follow, the sessions following the system onto other nodes run
%% before it starts, so that no child it starts there is missed.
-spec init(pid(), map(), riarc_backend:t() | none, riarc_opts:limits(), reference(),
           riarc_lambda:spec()) -> {ok, t()} | {error, term()}.
init(Session, Opts, Backend, Limits = #{max_queue := MaxQ}, Token, Spec) ->
    %% Option follow_joining: watching for nodes that come up starts before the
    %% followers and the system do, so that none is missed.
    {Watcher, Unfollowable} =
        case maps:get(follow_joining, Opts, false) of
            true ->
                W = riarc_join:watch(Session, riarc_backend:tracer_module(Backend),
                                     maps:get(max_join_hold, Limits)),
                _ = monitor(process, W),
                {W, nodes() -- maps:get(follow_nodes, Opts, [])};
            false -> {undefined, []}
        end,
    D = #dist{session = Session, token = Token, spec = Spec, opts = Opts, max_queue = MaxQ,
              join_watcher = Watcher, unfollowable = Unfollowable},
    start_followers(maps:get(followers, Opts, undefined), D).

%% Option follow (riarc:run/3, start/3, attach/3): Start, run here, starts a session on
%% each followed node (riarc_remote, owned by this session, streaming its entries with a
%% tag of its own) and returns them.
start_followers(undefined, D) ->
    {ok, D};
start_followers(Start, D = #dist{session = Session, opts = Opts}) ->
    case Start(Session, {Session, D#dist.relay_secret}, maps:get(follow_nodes, Opts, [])) of
        {ok, Followers} ->
            _ = [monitor(process, Proxy) || {_Node, Proxy, _Tag} <- Followers],
            {ok, D#dist{follow = riarc_follow:new(),
                        followers = maps:from_list([{Tag, {N, Proxy}} || {N, Proxy, Tag} <- Followers])}};
        {error, _} = E ->
            E
    end.

%% @doc The root tracers' configuration, Cfg, for one partition spanning nodes: the
%% children Λ puts in their parent's partition on a followed node are relayed to its
%% tracer here. With follow_joining, any other node may be followed by the time a child
%% there shows: the session tells which are.
-spec tracer_cfg(map(), t()) -> map().
tracer_cfg(Cfg, #dist{opts = Opts, followers = Fs}) ->
    case {joining(Opts), [N || {N, _} <- maps:values(Fs)]} of
        {true, _} -> Cfg#{relay_nodes => all};
        {false, []} -> Cfg;
        {false, Nodes} -> Cfg#{relay_nodes => Nodes}
    end.

%% @doc A message the session does not know: one of this part's, or `unknown'.
-spec handle_info(term(), ctx(), t()) -> {next(), t(), [effect()]} | unknown.
%% A session following the system on another node: an entry, or its end.
%% Once they were asked to stop, what they streamed before their answer is in that answer.
handle_info({Kind, Tag, _}, _Ctx, D = #dist{followers = Fs, followers_stopped = true})
  when (Kind =:= riarc_verdict orelse Kind =:= riarc_remote_down), is_map_key(Tag, Fs) ->
    {noreply, D, []};
handle_info(Msg = {Kind, Tag, _}, Ctx, D = #dist{followers = Fs})
  when (Kind =:= riarc_verdict orelse Kind =:= riarc_remote_down), is_map_key(Tag, Fs) ->
    {D1, Fx} = streamed(Msg, Ctx, D),
    {changed, D1, Fx};
%% Race: the follower started for a node that came up streams to this session before
%% the word of the process that started it (riarc_joined) says whose stream it is: kept
%% until then, up to max_queue messages.
handle_info(Msg = {Kind, Tag, _}, _Ctx, D = #dist{joins = Js, join_early = Early, max_queue = Max})
  when (Kind =:= riarc_verdict orelse Kind =:= riarc_remote_down), is_reference(Tag),
       map_size(Js) > 0, length(Early) < Max ->
    {noreply, D#dist{join_early = [Msg | Early]}, []};
%% One partition spanning nodes: a relaying tracer on a followed node, with the secret.
handle_info({riarc_relay, Secret, {Child, Parent}, What}, _Ctx, D = #dist{relay_secret = Secret})
  when is_pid(Child), is_pid(Parent) ->
    {noreply, relay({Parent, node(Child)}, Child, What, D), []};
%% Option follow_joining: a node came up, and the system here is held (riarc_join).
handle_info({riarc_join, W, Node}, #{finished := Finished, stopping := Stopping},
            D = #dist{join_watcher = W}) when is_pid(W) ->
    Follow = not Finished andalso not Stopping andalso not D#dist.followers_stopped
        andalso not lists:keymember(Node, 1, maps:values(D#dist.followers))
        andalso not lists:keymember(Node, 1, maps:values(D#dist.joins))
        andalso not lists:member(Node, D#dist.unfollowable),
    case Follow of
        true -> {noreply, join(Node, D), []};
        false -> _ = riarc_join:release(W, Node, []), {noreply, D, []}
    end;
handle_info({riarc_joined, Pid, Result}, Ctx, D = #dist{joins = Js}) when is_map_key(Pid, Js) ->
    {Node, Ref} = maps:get(Pid, Js),
    demonitor(Ref, [flush]),
    {D1, Fx} = joined(Node, Result, Ctx, D#dist{joins = maps:remove(Pid, Js)}),
    {changed, D1, Fx};
handle_info({'DOWN', _, process, Pid, Why}, Ctx, D = #dist{joins = Js}) when is_map_key(Pid, Js) ->
    %% It crashed, maybe with the system still held for Node: let it go.
    {Node, _} = maps:get(Pid, Js),
    _ = [riarc_join:release(W, Node, []) || W <- [D#dist.join_watcher], is_pid(W)],
    {D1, Fx} = joined(Node, {error, {riarc_join, {crashed, Node, Why}}}, Ctx, D#dist{joins = maps:remove(Pid, Js)}),
    {changed, D1, Fx};
handle_info({'DOWN', _, process, W, Why}, _Ctx, D = #dist{join_watcher = W}) ->
    %% Nodes that join from now on are not followed: what the system starts there is an
    %% error (follow_grace), and so is this.
    {noreply, D#dist{join_watcher = undefined}, [{error, {?MODULE, {join_watcher_down, Why}}}]};
handle_info({riarc_relay_grace, Key, K}, _Ctx, D = #dist{relays = Rs}) when is_map_key(Key, Rs) ->
    {noreply, relay_grace(Key, K, D), []};
handle_info({riarc_follow_grace, Ref}, #{finished := false}, D = #dist{follow_grace = Ref, follow = F}) ->
    %% follow_grace is over: the children still not seen on their nodes are errors.
    case riarc_follow:waits_for(F) of
        starts -> {finish, D, []};
        _ -> {noreply, D#dist{follow_grace = undefined}, []}
    end;
handle_info({riarc_follow_grace, _}, _Ctx, D) ->
    {noreply, D, []};
handle_info({'DOWN', _, process, Pid, Why}, Ctx, D = #dist{followers = Fs, followers_stopped = false})
  when map_size(Fs) > 0 ->
    case [N || {N, Proxy} <- maps:values(Fs), Proxy =:= Pid] of
        %% A follower's proxy gone without a word (it says nodedown when its node goes,
        %% first): its node's open partitions and unmatched children are errors.
        [Node] ->
            {D1, Fx} = follow_down(Node, {follower_down, Why}, Ctx, D),
            {changed, D1, Fx};
        [] -> unknown
    end;
handle_info(_Msg, _Ctx, _D) ->
    unknown.

%% @doc A tracer's word that a process started one on another node
%% (riarc_tracer_instrument:remote_child/2): `relayed', in its parent's partition, or `own', with a monitor of
%% its own.
-spec remote_child(pid(), relayed | own, map(), ctx(), t()) -> {t(), [effect()]}.
%% One partition spanning nodes: the child's events come relayed from its node, and go to
%% the parent's partition's tracer (relay/4), those that came before this word first.
remote_child(Tracer, relayed, Info = #{parent := P, node := Node}, Ctx,
             D = #dist{relays = Rs, relay_wait = Wait, follow = F}) ->
    Key = {P, Node},
    R = #{expected := K} = maps:get(Key, Rs, #{tracer => Tracer, expected => 0, seen => #{},
                                               ended => 0, lost => 0}),
    {D1, Fx} = followed(riarc_follow:expect(Info#{relayed => true}, F), Ctx,
                        D#dist{relays = Rs#{Key => R#{expected := K + 1}}, relay_wait = maps:remove(Key, Wait)}),
    _ = case follow_grace_ms(D1) of
            infinity -> ok;
            T -> erlang:send_after(T, self(), {riarc_relay_grace, Key, K + 1})
        end,
    Held = lists:reverse(maps:get(Key, Wait, [])),
    D2 = lists:foldl(fun({C, What}, A) -> relay(Key, C, What, A) end,
                     D1#dist{relay_held = D1#dist.relay_held - relayed_events(Held)}, Held),
    D3 = case maps:take(Key, D2#dist.relay_dropped) of
             {N, Dropped} -> relay_tell(Key, 0, #{relay_dropped => N}, D2#dist{relay_dropped = Dropped});
             error -> D2
         end,
    %% follow_joining: a node connected before the run began is not followed.
    {case lists:member(Node, D3#dist.unfollowable) of
         true -> relay_lost(Key, 1, #{lost => not_followed}, D3);
         false -> D3
     end, Fx};
remote_child(_Tracer, own, Info = #{node := Node}, Ctx, D = #dist{follow = F, opts = Opts}) ->
    %% follow_joining: a node not followed yet may be by the time the child shows there
    %% (its start may reach this session before the node's coming up does).
    case {lists:member(Node, maps:get(monitored_elsewhere, Opts, [])),
          lists:keymember(Node, 1, maps:values(D#dist.followers))
          orelse (joining(Opts) andalso not lists:member(Node, D#dist.unfollowable))} of
        %% The user's word: a session there monitors what starts there.
        {true, _} -> {D, []};
        %% Followed: this session's own session there monitors it (riarc_follow).
        {_, true} -> followed(riarc_follow:expect(Info, F), Ctx, D);
        {false, false} -> {D, [{error, {riarc_session, {remote_child, Info}}}]}
    end.

%% @doc Every tracer here has ended (and no analysis runs): whether the run waits for
%% this part (`wait': a node that came up is being followed; `wait_closed': followed
%% children still to be accounted for, the backend closed meanwhile) or is `done'.
-spec wait(boolean(), t()) -> {wait | wait_closed, t()} | done.
wait(false, D = #dist{joins = Js}) when map_size(Js) > 0 ->
    %% A node that came up is being followed: what the system started there is
    %% accounted for once its follower runs (or cannot).
    {wait, D};
wait(false, D = #dist{follow = F}) when F =/= undefined ->
    %% Every tracer here has ended, so every child the system started on a followed node
    %% is expected: the run ends once each is matched there and has ended, or its node is
    %% gone. A child not seen there may still come (its node's session is behind) or never
    %% will (its start failed there, after the call this node traced): that is waited for
    %% within follow_grace, then it is an error entry (riarc_follow:final/1).
    case riarc_follow:waits_for(F) of
        nothing -> done;
        partitions -> {wait_closed, D#dist{follow_grace = undefined}};
        starts -> {wait_closed, follow_grace(D)}
    end;
wait(_Stopping, _D) ->
    done.

%% @doc The followers' sessions end with the run (Cut: why riarc cut it short, if it
%% did): what each learnt last is read from its result (an entry its stream had not
%% brought yet).
-spec stop_followers(term(), t()) -> t().
stop_followers(_Cut, D = #dist{followers = Fs, followers_stopped = Stopped}) when map_size(Fs) =:= 0; Stopped ->
    D;
stop_followers(Cut, D0 = #dist{followers = Fs}) ->
    D = D0#dist{followers_stopped = true},
    %% All asked at once, each answer awaited within the same bound (under stop/1's).
    Asked = [{Node, gen_server:send_request(Proxy, stop)} || {Node, Proxy} <- maps:values(Fs)],
    Deadline = erlang:monotonic_time(millisecond) + ?FOLLOWER_STOP_MS,
    lists:foldl(fun({Node, Req}, A = #dist{follow = F}) ->
                        Left = max(0, Deadline - erlang:monotonic_time(millisecond)),
                        case gen_server:wait_response(Req, Left) of
                            {reply, {ok, #{verdicts := Vs}}} ->
                                A#dist{follow = lists:foldl(fun(E, F1) ->
                                                                    riarc_follow:learn(Node, cut_short_there(Node, E, F1, Cut), F1)
                                                            end, F, Vs)};
                            %% Gone on its own (its down message said how), or too slow:
                            %% its children not matched yet are errors.
                            _ -> A#dist{follow = riarc_follow:down(Node, follower_lost, F)}
                        end
                end, D, Asked).

%% @doc The system's entries on followed nodes: once the run is over (Finished), with an
%% error for each child nothing there matched; before, those matched so far.
-spec entries(boolean(), t()) -> [map()].
entries(_Finished, #dist{follow = undefined}) ->
    [];
entries(false, #dist{follow = F}) ->
    [E || E <- riarc_follow:entries(F), reached(E)];
entries(true, #dist{follow = F}) ->
    riarc_follow:final(F).

%% @doc The events relayed from followed nodes that no tracer here has claimed yet.
-spec held(t()) -> non_neg_integer().
held(#dist{relay_held = Held}) -> Held.

%%% Internals

joining(Opts) ->
    maps:get(follow_joining, Opts, false).

follow_grace(D = #dist{follow_grace = undefined}) ->
    case follow_grace_ms(D) of
        infinity -> D;
        T ->
            Ref = make_ref(),
            _ = erlang:send_after(T, self(), {riarc_follow_grace, Ref}),
            D#dist{follow_grace = Ref}
    end;
follow_grace(D) ->
    D.

follow_grace_ms(#dist{opts = Opts}) ->
    maps:get(follow_grace, Opts, maps:get(follow_grace, riarc_opts:defaults())).

%% Option follow_joining: Node came up during the run; the system here is held back
%% while the session following it there starts (riarc_join), so that the system's first
%% start there comes after. That start takes seconds on a busy node, and minutes on an
%% overloaded one: it runs in a process of its own, which tells this session
%% `{riarc_joined, Pid, Result}' (joined/4), so that the session answers its callers
%% and its tracers meanwhile.
join(Node, D = #dist{opts = #{followers := Start}, join_watcher = W, relay_secret = Secret,
                     session = Session}) ->
    {Pid, Ref} = proc_lib:spawn_opt(
                   fun() ->
                           Result = riarc_join:follow(W, Node, fun() -> Start(Session, {Session, Secret}, [Node]) end),
                           Session ! {riarc_joined, self(), Result}
                   end, [monitor]),
    D#dist{joins = (D#dist.joins)#{Pid => {Node, Ref}}}.

%% A follower started for Node, or why not. A child of the system found there started
%% before is an error of the run (it is not followed from its middle, and its partition,
%% or its parent's, is an error once follow_grace says it never showed). A node riarc
%% cannot follow the system onto: an error of the run, and whatever the system started
%% there is lost. A follower that comes once the followers were stopped is stopped too.
joined(_Node, {ok, [{_, Proxy, _}], _Early}, _Ctx, D = #dist{followers_stopped = true}) ->
    _ = gen_server:send_request(Proxy, stop),
    early_left(D, []);
joined(Node, {ok, [{Node, Proxy, Tag}], Early}, Ctx, D) ->
    _ = monitor(process, Proxy),
    D1 = D#dist{followers = (D#dist.followers)#{Tag => {Node, Proxy}}},
    Fx0 = case Early of
              {ok, []} -> [];
              {ok, Cs} -> [{error, {?MODULE, {before_follow, #{node => Node, children => Cs}}}}];
              {error, E} -> [{error, E}]
          end,
    %% What it streamed before this word, in the order it came.
    {Its, Others} = lists:partition(fun({_, T, _}) -> T =:= Tag end, lists:reverse(D1#dist.join_early)),
    {D2, Fx} = lists:foldl(fun(Msg, {A, Fx1}) ->
                                   {A1, Fx2} = streamed(Msg, Ctx, A),
                                   {A1, Fx1 ++ Fx2}
                           end, {D1#dist{join_early = lists:reverse(Others)}, Fx0}, Its),
    early_left(D2, Fx);
joined(Node, {error, Why}, Ctx, D) ->
    D1 = D#dist{unfollowable = [Node | D#dist.unfollowable]},
    {D2, Fx} = follow_down(Node, {join_failed, Why}, Ctx, D1),
    early_left(D2, [{error, {?MODULE, {join_failed, Node, Why}}} | Fx]).

%% Kept for a follower being started, and no follower is any more: forged.
early_left(D = #dist{joins = Js, join_early = Early}, Fx) when map_size(Js) =:= 0 ->
    {D#dist{join_early = []}, Fx ++ [{forged, length(Early)}]};
early_left(D, Fx) ->
    {D, Fx}.

%% An entry of a follower's stream, or its end.
streamed({riarc_verdict, Tag, E}, Ctx, D = #dist{followers = Fs, follow = F}) ->
    {Node, _} = maps:get(Tag, Fs),
    {F1, Learnt} = more_followed(riarc_follow:learn(Node, E, F), Fs, [{Node, E}]),
    {D1, Fx} = followed(F1, Ctx, D),
    {lists:foldl(fun({N, E1}, A) -> relay_failed(N, E1, A) end, D1, lists:reverse(Learnt)), Fx};
streamed({riarc_remote_down, Tag, Why}, Ctx, D = #dist{followers = Fs}) ->
    {Node, _} = maps:get(Tag, Fs),
    follow_down(Node, Why, Ctx, D).

%% A followed node's session ended on its own: its entries (riarc_follow), and the
%% relayed children there that had not ended, whose partitions here lose the rest of
%% their trace.
follow_down(Node, Why, Ctx, D = #dist{follow = F, relays = Rs}) ->
    {D1, Fx} = followed(riarc_follow:down(Node, Why, F), Ctx, D),
    {lists:foldl(fun(Key = {_, N}, A) when N =:= Node ->
                         #{expected := E, ended := Dn, lost := L} = maps:get(Key, Rs),
                         relay_lost(Key, E - Dn - L, #{lost => Why}, A);
                    (_, A) -> A
                 end, D1, maps:keys(Rs)), Fx}.

%% One partition spanning nodes: what a relaying tracer sent for Child, the child of
%% Parent on Node, goes to the tracer of Parent's partition here, in the order it came;
%% for a parent no tracer has claimed (its start not reached yet by its tracer, or a
%% parent outside the system that has ended), it waits, up to max_queue events in all;
%% past that it is dropped and counted, so that a partition that claims it later is an
%% error, never a verdict on a trace with a hole.
relay(Key, Child, What, D = #dist{relays = Rs, token = Token}) when is_map_key(Key, Rs) ->
    R = #{tracer := T, seen := Seen} = maps:get(Key, Rs),
    R1 = case What of
             {events, Events} ->
                 T ! {riarc_relayed, Token, events, Events},
                 R#{seen := Seen#{Child => true}};
             'end' ->
                 T ! {riarc_relayed, Token, 'end', Child},
                 R#{seen := Seen#{Child => true}, ended := maps:get(ended, R) + 1}
         end,
    D#dist{relays = Rs#{Key := R1}};
relay(Key = {P, _}, Child, What, D) ->
    %% A parent of this node alive and traced by nobody is not the system's (a process of
    %% the system is traced from its start to its end): nothing to wait for.
    case node(P) =:= node() andalso erlang:trace_info(P, tracer) =:= {tracer, []} of
        true -> D;
        false -> relay_hold(Key, Child, What, D)
    end.

relay_hold(Key, Child, What, D = #dist{relay_wait = Wait, relay_held = Held, max_queue = Max}) ->
    N = relayed_events([{Child, What}]),
    case Held + N > Max of
        false ->
            D#dist{relay_wait = Wait#{Key => [{Child, What} | maps:get(Key, Wait, [])]},
                   relay_held = Held + N};
        true ->
            D#dist{relay_dropped = maps:update_with(Key, fun(Dr) -> Dr + N end, N, D#dist.relay_dropped)}
    end.

relayed_events(Held) ->
    lists:sum([length(Es) || {_, {events, Es}} <- Held]).

%% A relaying partition there that ended in error or cut short (its tracer crashed, riarc
%% there detached over a limit) before its end was relayed: the rest of its trace will
%% not come. A relaying partition is one that relayed something, or one Λ gives no
%% monitor (a child of the same parent with a monitor of its own is not one: its verdict
%% is its own).
relay_failed(Node, #{pid := C, parent := P, mfa := MFA, verdict := V} = E, D = #dist{relays = Rs})
  when is_map_key({P, Node}, Rs), (V =:= error orelse V =:= inconclusive) ->
    #{seen := Seen} = maps:get({P, Node}, Rs),
    case is_map_key(C, Seen) orelse riarc_lambda:lookup(lambda(D), MFA) =:= undefined of
        true -> relay_lost({P, Node}, 1, #{lost => maps:get(reason, E, undefined), child => C}, D);
        false -> D
    end;
relay_failed(_Node, _E, D) ->
    D.

lambda(#dist{spec = Spec}) -> riarc_lambda:new(Spec).

%% follow_grace after the K-th relayed child of a parent on a node was expected: if fewer
%% than K showed there, those missing never will (their start failed), as far as this
%% run can wait.
relay_grace(Key, K, D = #dist{relays = Rs}) ->
    #{seen := Seen, lost := L} = maps:get(Key, Rs),
    relay_lost(Key, K - map_size(Seen) - L, #{lost => not_followed}, D).

%% N relayed children of Key's parent will not be relayed (to their end): its partition's
%% tracer stops waiting for them, and its partition is an error (relay_tell/4).
relay_lost(_Key, N, _Why, D) when N =< 0 ->
    D;
relay_lost(Key, N, Why, D) ->
    relay_tell(Key, N, Why, D).

%% The partition of Key's parent lost part of its relayed trace (N children of it, none
%% when what was lost is events held for it, relay_dropped): an error for it.
relay_tell(Key = {P, Node}, N, Why, D = #dist{relays = Rs, token = Token}) ->
    R = #{tracer := T, lost := L} = maps:get(Key, Rs),
    T ! {riarc_relayed, Token, lost, {N, maps:merge(#{parent => P, node => Node}, Why)}},
    D#dist{relays = Rs#{Key := R#{lost := L + N}}}.

%% A run riarc cut short (its timeout): a partition there that was still open when its
%% session was stopped ends without a verdict only because of the cut, as one here would
%% (the session's verdict handler). One the stop found still being taken over there
%% (stopped_short) was cut by the same timeout: that is its reason, as here.
cut_short_there(Node, E = #{pid := P}, F, {timeout, T, _}) ->
    case cut_by_stop(E) andalso open_there(Node, P, F) of
        true -> E#{verdict => inconclusive, reason => {timeout, T}};
        false -> E
    end;
cut_short_there(_Node, E, _F, _Cut) ->
    E.

%% An entry the stop may have cut: no verdict, or one the stop found mid-takeover (not
%% open there, the latter keeps its own reason: never none).
cut_by_stop(#{verdict := none}) -> true;
cut_by_stop(#{verdict := inconclusive, reason := {stopped_short, _}}) -> true;
cut_by_stop(#{}) -> false.

open_there(Node, P, F) ->
    case riarc_follow:known(Node, P, F) of
        #{open := true} -> true;
        undefined -> true;
        #{} -> false
    end.

%% The book of followed children changed: subscribers hear of entries matched since.
followed(F, #{subscribed := false}, D) ->
    {D#dist{follow = F}, []};
followed(F, #{subscribed := true}, D) ->
    {D#dist{follow = F}, [{followed, [E || E <- riarc_follow:entries(F), reached(E)]}]}.

%% Every entry the followers have streamed meanwhile, learnt before the book is read again:
%% reading it is linear in the partitions there (riarc_follow), so the entries that
%% arrive while it is read are taken in one batch, not one read each.
more_followed(F, Fs, Learnt) ->
    receive
        {riarc_verdict, Tag, E} when is_map_key(Tag, Fs) ->
            {Node, _} = maps:get(Tag, Fs),
            more_followed(riarc_follow:learn(Node, E, F), Fs, [{Node, E} | Learnt])
    after 0 ->
        {F, Learnt}
    end.

%% A followed entry worth telling before the run is over: a partition's, not one still
%% running without a verdict.
reached(#{pid := undefined}) -> false;
reached(#{open := true, verdict := none}) -> false;
reached(#{}) -> true.

%% @doc A sentence for an error of following the system onto nodes that join the run.
-spec format_error(error_reason()) -> string().
format_error({before_follow, #{node := Node, children := Cs}}) ->
    lists:flatten(io_lib:format("~b process(es) of the system started on node ~p before riarc "
                                "followed it there as it joined, so their traces lack their "
                                "start and are not monitored: ~0tp",
                                [length(Cs), Node, [{P, Parent, MFA, Now} || #{pid := P, parent := Parent, mfa := MFA, current := Now} <- Cs]]));
format_error({join_failed, Node, Why}) ->
    lists:flatten(io_lib:format("node ~p joined during the run, but riarc could not follow the "
                                "system there: ~ts", [Node, riarc_error:format(Why)]));
format_error({join_watcher_down, Why}) ->
    lists:flatten(io_lib:format("the watcher of nodes joining the run ended (~0tp): nodes that "
                                "joined after it are not followed", [Why])).
