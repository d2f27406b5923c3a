%% @doc Nodes that join during a run (riarc's option `follow_joining'): a watcher holds
%% the system back while its session starts following it onto the new node, and whoever
%% got there first is found.
%%
%% Tracing is per node, and nothing traces a node before riarc runs there: a session
%% following its system onto a node as the node comes up races with the system's first
%% start there, which tracing cannot hold back (it never stops the process it traces).
%% So a session's watcher, a process of high priority that does nothing else, takes each
%% node's coming up (`net_kernel:monitor_nodes/1') and at once suspends every process the
%% session's tracers trace on this node, until the session has started its follower there
%% (follow/3: once the node has booted) or for `max_join_hold' at most. Not held: what the
%% new node's own start waits on (the controlling process of a node OTP's peer starts,
%% and any process a process there links to or monitors), or it would not come up while
%% the hold lasts.
%%
%% This narrows the race; it cannot close it. OTP orders `nodeup' before the signals
%% that come over the new connection for the watcher only, not for the system's
%% processes, and finding the system's processes waits for each busy one to be scheduled
%% out: with every scheduler busy, the system sometimes starts its first processes there
%% first (scripts/measure/join-race measures how often). Those are then found there by their
%% parent (`process_info/2''s `parent', OTP 25), untraced, while the system is still
%% held, and reported: never followed from their middle.
%%
%% The processes held are suspended by the watcher alone: should it die, the VM resumes
%% them (a suspension ends with its suspender).
%% ```
%% 1> riarc_join:from_elsewhere().
%% []
%% 2> riarc_join:format_error({scan_failed, 'app@host', noconnection}).
%% "could not list the processes on node app@host that came from elsewhere: noconnection"
%% '''
-module(riarc_join).

-export([watch/3, follow/3, release/3, from_elsewhere/0, format_error/1]).
%% Spawned.
-export([watcher_init/4]).
-export_type([early/0, error_reason/0]).

%% A process on the joined node started from another node before the follower ran: its
%% initial call as Λ would see it, and where it is now (a process started by spawn/4
%% from another node shows only `erts_internal:dist_spawn_init/1' as its initial call).
-type early() :: #{pid := pid(), parent := pid(), mfa := riarc_event:mfa_args() | undefined,
                   current := mfa() | undefined}.
-type error_reason() :: {scan_failed, node(), term()} | {not_booted, node(), term()}
                      | {crashed, node(), term()}.

%% How long the joined node gets to list its processes, and to finish booting.
-define(SCAN_MS, 30000).
-define(BOOT_MS, 30000).

%% @doc Starts Session's watcher: from its return on, at each node that comes up the
%% processes Session's tracers trace here (those whose tracer Session started, or
%% whose tracer is Module, a backend's tracer module) are held for MaxMs at most, and
%% Session is told `{riarc_join, Watcher, Node}', to which it answers with follow/3 (or
%% release/3, to let the system go at once).
%% The watcher ends with Session.
-spec watch(pid(), {module(), term()} | none, pos_integer()) -> pid().
watch(Session, Module, MaxMs) ->
    proc_lib:start(?MODULE, watcher_init, [Session, Module, MaxMs, self()], infinity, [{priority, high}]).

%% @doc The session's answer to `{riarc_join, Watcher, Node}', run away from the
%% session's loop (a start there takes seconds on a busy node): once Node has booted,
%% Start starts the follower there, the system still held; the processes there that the
%% system had started before are listed, and the hold for Node ends.
-spec follow(pid(), node(), fun(() -> {ok, F} | {error, E})) ->
    {ok, F, {ok, [early()]} | {error, {?MODULE, error_reason()}}} | {error, E | {?MODULE, error_reason()}}.
follow(Watcher, Node, Start) ->
    Started = try
                  case booted(Node) of
                      ok -> Start();
                      {error, _} = NotBooted -> NotBooted
                  end
              catch Class:Why:Stack -> _ = release(Watcher, Node, []), erlang:raise(Class, Why, Stack)
              end,
    case Started of
        {ok, F} ->
            %% Read while the system is held: nothing of it starts there meanwhile.
            Found = scan(Node),
            Theirs = release(Watcher, Node, [P || {ok, Es} <- [Found], #{parent := P} <- Es]),
            {ok, F, case Found of
                        {ok, Es} -> {ok, [E || E = #{parent := P} <- Es, lists:member(P, Theirs)]};
                        {error, _} = Error -> Error
                    end};
        {error, _} = E ->
            _ = release(Watcher, Node, []),
            E
    end.

%% @doc The processes of this node whose parent is on another node and that nobody traces:
%% what a node that joined had been sent to start before riarc ran there (read there,
%% through erpc; what came after is traced by riarc's session there).
-spec from_elsewhere() -> [early()].
from_elsewhere() ->
    [#{pid => P, parent => Parent, mfa => riarc_lambda:running_mfa(P), current => current(P)}
     || P <- erlang:processes(),
        {parent, Parent} <- [erlang:process_info(P, parent)],
        is_pid(Parent), node(Parent) =/= node(),
        erlang:trace_info(P, flags) =:= {flags, []}].

%% @doc A sentence for an error of this module.
-spec format_error(error_reason()) -> string().
format_error({not_booted, Node, Why}) ->
    lists:flatten(io_lib:format("node ~p came up but did not finish booting: ~0tp", [Node, Why]));
format_error({crashed, Node, Why}) ->
    lists:flatten(io_lib:format("following the system onto node ~p crashed: ~0tp", [Node, Why]));
format_error({scan_failed, Node, Why}) ->
    lists:flatten(io_lib:format("could not list the processes on node ~p that came from "
                                "elsewhere: ~0tp", [Node, Why])).

current(P) ->
    case erlang:process_info(P, current_function) of
        {current_function, {_, _, _} = MFA} -> MFA;
        _ -> undefined
    end.

%% A node comes up before its boot is over (a node OTP's peer starts connects back to
%% its origin while its kernel starts): riarc, an application, starts there once the
%% node's own have, or it would start amid them (measured: the node then dropped its
%% connections). Its init tells this process when.
booted(Node) ->
    erlang:monitor_node(Node, true),
    Booted = try erpc:call(Node, init, notify_when_started, [self()], ?BOOT_MS) of
                 started -> ok;
                 ok ->
                     receive
                         {init, started} -> ok;
                         {nodedown, Node} -> {error, nodedown}
                     after ?BOOT_MS -> {error, timeout}
                     end;
                 Other -> {error, Other}
             catch
                 Class:Why -> {error, {Class, Why}}
             end,
    erlang:monitor_node(Node, false),
    receive {nodedown, Node} -> ok after 0 -> ok end,
    case Booted of
        ok -> ok;
        {error, E} -> {error, {?MODULE, {not_booted, Node, E}}}
    end.

scan(Node) ->
    try erpc:call(Node, ?MODULE, from_elsewhere, [], ?SCAN_MS) of
        Es -> {ok, Es}
    catch
        Class:Why -> {error, {?MODULE, {scan_failed, Node, {Class, Why}}}}
    end.

%% @doc The hold for Node ends (the holds for other nodes go on); of Parents, those that
%% are the system's (held, or traced by the session still).
-spec release(pid(), node(), [pid()]) -> [pid()].
release(Watcher, Node, Parents) ->
    Ref = monitor(process, Watcher),
    Watcher ! {riarc_join_release, self(), Ref, Node, Parents},
    receive
        {Ref, Held} -> demonitor(Ref, [flush]), Held;
        %% Race: the watcher died (the VM resumed what it held): what got there first is
        %% found all the same.
        {'DOWN', Ref, process, Watcher, _} -> []
    end.

%%% The watcher

%% @private
-spec watcher_init(pid(), {module(), term()} | none, pos_integer(), pid()) -> no_return().
watcher_init(Session, Module, MaxMs, Starter) ->
    ok = net_kernel:monitor_nodes(true),
    SRef = monitor(process, Session),
    proc_lib:init_ack(Starter, self()),
    idle(#{session => Session, sref => SRef, ours => ours(Session, Module), max => MaxMs}).

idle(W = #{sref := SRef}) ->
    receive
        {nodeup, Node} -> holding(W, #{}, [Node], Node, deadline(W));
        {riarc_join_release, From, Ref, _Node, Parents} -> From ! {Ref, theirs(W, #{}, Parents)}, idle(W);
        {'DOWN', SRef, process, _, _} -> exit(normal);
        _ -> idle(W)
    end.

%% Held: what is suspended; Pending: the nodes the session has not answered for; Up:
%% the node to tell the session of, once the system is held. When the bound is reached,
%% the system runs on; the session's answers still get what was held for them.
holding(W = #{session := Session, sref := SRef}, Held0, Pending, Up, Deadline) ->
    Held = case Deadline of
               over -> Held0;
               _ -> suspend_all(maps:get(ours, W), Pending, Held0)
           end,
    _ = [Session ! {riarc_join, self(), Up} || Up =/= none],
    Left = case Deadline of
               over -> infinity;
               _ -> max(0, Deadline - erlang:monotonic_time(millisecond))
           end,
    receive
        {nodeup, Node} when Deadline =:= over ->
            %% A hold of its own: those of the last one run again.
            holding(W, #{}, [Node | Pending], Node, deadline(W));
        {nodeup, Node} ->
            holding(W, Held, [Node | Pending], Node, Deadline);
        {riarc_join_release, From, Ref, Node, Parents} ->
            From ! {Ref, theirs(W, Held, Parents)},
            case Pending -- [Node] of
                [] -> resume(Held, Deadline), idle(W);
                More -> holding(W, Held, More, none, Deadline)
            end;
        {'DOWN', SRef, process, _, _} ->
            exit(normal)
    after Left ->
            %% The follower is slow to start: the system runs on (its hold is bounded),
            %% and what it starts there meanwhile is found as having got there first.
            resume(Held, Deadline),
            holding(W, Held, Pending, none, over)
    end.

%% Of Parents, the system's here: held, or traced by the session.
theirs(#{ours := Ours}, Held, Parents) ->
    [P || P <- Parents, node(P) =:= node(), is_map_key(P, Held) orelse Ours(P)].

deadline(#{max := MaxMs}) ->
    erlang:monotonic_time(millisecond) + MaxMs.

resume(_Held, over) -> ok;
resume(Held, _) ->
    _ = [catch erlang:resume_process(P) || P <- maps:keys(Held)],
    ok.

%% Until no process of the system is left running but those the joining nodes need: one
%% held cannot start another, so a pass that finds none new is the last.
suspend_all(Ours, Nodes, Held) ->
    Me = self(),
    New = [P || P <- erlang:processes(), P =/= Me, not is_map_key(P, Held), Ours(P),
                not serves(P, Nodes), (catch erlang:suspend_process(P)) =:= true],
    case New of
        [] -> Held;
        _ -> suspend_all(Ours, Nodes, maps:merge(Held, maps:from_list([{P, true} || P <- New])))
    end.

%% A process the joining nodes' own start waits on is not held, or they would never come
%% up while the hold lasts: the controlling process of a node OTP's peer starts (the new
%% node calls it as it boots, and monitors it), and any process a process there already
%% links to or monitors.
serves(P, Nodes) ->
    case erlang:process_info(P, [dictionary, links, monitored_by]) of
        [{dictionary, D}, {links, Ls}, {monitored_by, Ms}] ->
            lists:keyfind('$initial_call', 1, D) =:= {'$initial_call', {peer, init, 1}}
                orelse lists:any(fun(Q) -> is_pid(Q) andalso lists:member(node(Q), Nodes) end, Ls ++ Ms);
        undefined -> false
    end.

%% Whether a process is traced by Session's tracers: its tracer is one of Session's, or
%% the backend's tracer module.
ours(Session, Module) ->
    fun(P) ->
            case riarc_backend:tracer_of(P) of
                T when is_pid(T) -> riarc_tracer:of_session(T, Session);
                [] -> false;
                undefined -> false;
                T -> T =:= Module
            end
    end.
