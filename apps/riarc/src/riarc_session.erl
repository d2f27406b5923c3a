%% @doc One monitored run: launches the system paused with its root tracer (Alg. 6 START),
%% keeps the book of live tracers and analysis processes, collects verdicts, invariant
%% violations and tracer statistics, watches every monitor step's budget, applies the
%% overload policy, and knows when the run is over: every tracer gone, which (since every
%% system process is in some tracer's Γ until it exits) means every system process gone,
%% and every analysis done. What riarc's own processes tell it carries its token.
%%
%% Users reach it through {@link riarc}; the session is the handle `riarc:start/3' returns.
%% ```
%% 1> Spec = fun(_) -> {ok, fun M({exit, _, normal}) -> accept; M(_) -> M end} end.
%% 2> {ok, S} = riarc:start({riarc_demo_pqr, p, []}, Spec, #{}).
%% 3> riarc:verdicts(S).
%% [#{pid => <0.90.0>, mfa => {riarc_demo_pqr,p,[]}, verdict => accept, events => 4}, ...]
%% 4> riarc:stop(S).
%% {ok, #{verdicts => [...], tracers => #{spawned => 3, peak => 2}, ...}}
%% '''
-module(riarc_session).
-behaviour(gen_server).

-export([start/4, start_link/1, launched/1, await/2, finish/2, verdicts/1, subscribe/3, alive/1, stop/1,
         format_error/1]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2, terminate/2]).
-export_type([root/0, opts/0, error_reason/0]).

-type error_reason() :: {timeout, timeout(), #{tracers := [pid()], processes := [term()]}}
                      | {forged_messages, pos_integer()}
                      | {remote_child, #{parent := pid(), node := node(),
                                         mfa := riarc_event:mfa_args()}}
                      | {root_tracer_down, term()}
                      | {before_follow, #{node := node(), children := [riarc_join:early()]}}
                      | {join_failed, node(), term()} | {join_watcher_down, term()}.

%% A root of the system: its name, logical MFA, and the init event its monitor opens
%% with when the backend does not deliver one itself.
-type root() :: {riarc_event:sid(), riarc_event:mfa_args(), riarc_event:event() | none}.
%% The backend, or how to make one once the session exists (a routing table sends the
%% events of processes it does not know to the session, which reports them).
-type opts() :: #{backend := riarc_backend:t()
                             | fun((pid()) -> {ok, riarc_backend:t()} | {error, term()}),
                  invariants := boolean(),
                  perturb := undefined | pos_integer(),
                  log := boolean(),
                  %% Option follow (riarc:session_opts/2): how to start the sessions that
                  %% follow the system onto nodes, the nodes to follow from the start,
                  %% and whether nodes that join are followed too.
                  followers => fun((pid(), {pid(), reference()}, [node()]) ->
                                          {ok, [{node(), pid(), reference()}]} | {error, term()}),
                  follow_nodes => [node()],
                  follow_joining => boolean(),
                  atom() => term()}.

%% How long stop/1 lets monitors finish the events they have (at most one step budget).
-define(GRACE_MS, 1000).
%% How long the sessions following the system on other nodes get to stop and answer
%% with their results (riarc_remote's proxies), under stop/1's own bound.
-define(FOLLOWER_STOP_MS, 20000).

-record(s, {
    owner :: pid(),
    spec :: riarc_lambda:spec(),                     % what the result's warnings are about
    opts :: opts(),
    backend :: riarc_backend:t(),
    orphans = 0 :: non_neg_integer(),                % events of processes nobody traced
    %% Root tracers that have not said yet whether the system launched, and the first
    %% launch error; callers of launched/1 wait for both.
    launching = [] :: [pid()],
    launch_error = ok :: ok | {error, term()},
    launch_waiters = [] :: [gen_server:from()],
    tracers = #{} :: #{pid() => true},               % the live tracers
    %% The live analysis processes (riarc_analyser), each with its partition's tracer and
    %% its step clock; the watchdog's timer runs while there are any.
    analysers = #{} :: #{pid() => {pid(), riarc_analyser:clock()}},
    budget :: riarc_opts:budget(),
    watchdog = false :: boolean(),
    %% After stop/1 the analyses still running get this long to finish.
    grace = undefined :: undefined | reference() | expired,
    closed = false :: boolean(),                      % the backend closed
    %% Trust boundary: riarc's own processes tag what they send the session with this
    %% token (a reference the monitored system never sees), and control requests to
    %% the tracers carry it; messages in riarc's shape without it are forged.
    token = make_ref() :: reference(),
    forged = 0 :: non_neg_integer(),
    %% Limit max_events: the direct events the tracers have reported taking (in batches,
    %% riarc_tracer:counts/2), and per live tracer its counts so far (events, forged
    %% trace messages), of which its reports are running totals.
    seen = 0 :: non_neg_integer(),
    counted = #{} :: #{pid() => {non_neg_integer(), non_neg_integer()}},
    %% The backend takes a trace message anyone could have sent (no seal: the process
    %% tracers' fallback): the result says so.
    unsealed = false :: boolean(),
    cut = undefined :: undefined | term(),            % why riarc cut the run short
    %% Per ended tracer, how many events its partition had (for a shed partition's count).
    pevents = #{} :: #{pid() => non_neg_integer()},
    %% Analysis processes that ended abnormally before their tracer announced them.
    early = #{} :: #{pid() => term()},
    spawned = 0 :: non_neg_integer(),
    peak = 0 :: non_neg_integer(),
    verdicts = #{} :: #{pid() => map()},             % tracer -> verdict entry
    parts = #{} :: #{pid() => {riarc_event:sid(), riarc_event:mfa_args()}}, % tracer -> its partition
    explanations = #{} :: #{pid() => map()},         % tracer -> its reject's explanation
    root_exits = [] :: [map()],                      % roots that ended abnormally
    order = #{} :: #{pid() => non_neg_integer()},     % tracer -> spawn order, for output
    stats = #{collected => 0, routed => 0, analysed => 0, reordered => 0} :: map(),
    violations = [] :: [map()],
    %% Processes some of whose events reached a tracer that could not deliver them.
    incomplete = #{} :: #{riarc_event:sid() => non_neg_integer()},
    %% Partitions (by tracer) a process of which started one on another node that Λ puts
    %% in the same partition, before their monitors reached a verdict.
    remote = #{} :: #{pid() => map()},
    errors = [] :: [term()],
    started :: integer(),
    finished :: undefined | integer(),
    waiters = [] :: [gen_server:from()],
    stopping = false :: boolean(),
    %% Why riarc stopped the run itself (an overload limit), once it has.
    overload = undefined :: undefined | term(),
    %% Who is told of each verdict as the session learns it (subscribe/3), with the tag
    %% each chose.
    subscribers = #{} :: #{pid() => reference()},
    limits :: riarc_opts:limits(),
    %% Option lineage: each partition's entry says whose child its root is (`parent')
    %% and from which partition it was started (`within'), for the session on another
    %% node that follows its system here (riarc_follow).
    lineage = false :: boolean(),
    lineages = #{} :: #{pid() => map()},
    %% Option follow: the book of the system's children on followed nodes, the proxies
    %% of the sessions following it there (by the tag of their stream: node and proxy),
    %% and what subscribers were told of them.
    follow = undefined :: undefined | riarc_follow:t(),
    followers = #{} :: #{reference() => {node(), pid()}},
    fstopped = false :: boolean(),                   % the followers asked to stop
    %% The wait (option follow_grace) for expected children not seen on their node yet,
    %% once they alone are left.
    fgrace = undefined :: undefined | reference(),
    fpublished = #{} :: #{{node(), term()} => map()},
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

%% A remote parent's relayed children: how many its partition's tracer was told of
%% (expected), how many were seen relaying and how many ended, how many were given up
%% (lost, after follow_grace or with their node).
-type relay() :: #{tracer := pid(), expected := non_neg_integer(), seen := #{pid() => true},
                   ended := non_neg_integer(), lost := non_neg_integer()}.
-type relayed() :: {events, [riarc_event:event()]} | 'end'.


-ifdef(TEST).
-export([token/1]).
%% @private Tests only: the session's token, to play one of riarc's own processes.
-spec token(pid()) -> reference().
token(Session) -> (sys:get_state(Session))#s.token.
-endif.

%%% API

%% @doc Starts a session for Owner: one root tracer per root, over the backend in Opts.
-spec start(pid(), [root()], riarc_lambda:spec(), opts()) ->
    {ok, pid()} | {error, {module(), term()}}.
start(Owner, Roots, Spec, Opts) ->
    case application:ensure_all_started(riarc) of
        {ok, _} -> riarc_sup:start_session({Owner, Roots, Spec, Opts});
        {error, _} ->
            %% Not run as an application (a bare code path with no riarc.app): a session
            %% of its own, monitored by its owner all the same.
            gen_server:start(?MODULE, {Owner, Roots, Spec, Opts}, [])
    end.

%% @private The supervisor's start function (riarc_sup).
-spec start_link({pid(), [root()], riarc_lambda:spec(), opts()}) -> {ok, pid()} | {error, term()}.
start_link(Args) ->
    gen_server:start_link(?MODULE, Args, []).

%% @doc Waits until every root tracer has launched its part of the system: `ok', or the
%% first error (a root another tool traces already, say). After an error the caller
%% stops the session.
-spec launched(pid()) -> ok | {error, {module(), term()}}.
launched(Session) -> gen_server:call(Session, launched, infinity).

%% @doc Waits for the end of the run and returns its result.
-spec await(pid(), timeout()) -> {ok, map()} | {error, timeout}.
await(Session, Timeout) ->
    try gen_server:call(Session, await, Timeout)
    catch exit:{timeout, _} -> {error, timeout}
    end.

%% @doc Waits for the end of the run, then stops the session. On timeout it names what
%% is still alive, stops tracing and returns the result so far: the verdicts already
%% reached, `inconclusive' for the partitions the timeout cut short, and the timeout
%% among the result's errors (so the exit status is 1, never a clean accept).
-spec finish(pid(), timeout()) -> {ok, map()}.
finish(Session, Timeout) ->
    case await(Session, Timeout) of
        {ok, Result} ->
            {ok, _} = stop(Session),
            {ok, Result};
        {error, timeout} ->
            Alive = alive(Session),
            gen_server:call(Session, {stop, {timeout, Timeout, Alive}}, 30000)
    end.

%% @doc The verdicts reached so far.
-spec verdicts(pid()) -> [map()].
verdicts(Session) -> gen_server:call(Session, verdicts).

%% @doc Streams the verdicts to Pid: returns those reached so far; from then on Pid gets
%% `{riarc_session_verdict, Tag, Entry}' for every verdict the session learns and every
%% change to one (an entry later found to rest on an incomplete trace, a partition cut
%% short by an overload), in the order the session learns them. The last entry Pid got
%% for a process is the one the session's result lists. Tag is the caller's (a reference
%% the monitored system never sees, so that it cannot pass for the session). The stream
%% ends when Pid or the session does.
-spec subscribe(pid(), pid(), reference()) -> [map()].
subscribe(Session, Pid, Tag) -> gen_server:call(Session, {subscribe, Pid, Tag}, 30000).

%% @doc The live tracers and the system processes they still trace; the events relayed
%% from followed nodes that no tracer here has claimed yet.
-spec alive(pid()) -> #{tracers := [pid()], processes := [term()],
                        traced := #{pid() => [term()]},
                        relayed_waiting => non_neg_integer()}.
alive(Session) -> gen_server:call(Session, alive, 10000).

%% @doc Stops tracing (the system runs on untraced) and returns the result so far.
-spec stop(pid()) -> {ok, map()}.
stop(Session) -> gen_server:call(Session, stop, 30000).

%% @doc A sentence for an error of a session.
-spec format_error(error_reason()) -> string().
format_error({timeout, T, #{tracers := Ts, processes := Ps}}) ->
    lists:flatten(io_lib:format(
        "the run did not end within ~p ms: ~b tracer(s) still alive, tracing ~b system "
        "process(es): ~0tp", [T, length(Ts), length(Ps), Ps]));
format_error({forged_messages, N}) ->
    lists:flatten(io_lib:format("~b message(s) in riarc's shape reached its session or tracers "
                                "without the session's token (forged by the monitored system?) "
                                "and were refused", [N]));
format_error({remote_child, #{parent := P, node := Node, mfa := MFA}}) ->
    lists:flatten(io_lib:format("~p started ~0tp on node ~p, where this session cannot follow "
                                "it: the Spec gives it a monitor, which never ran (monitor it "
                                "with a session on that node, riarc:attach(new_processes, ...))",
                                [P, MFA, Node]));
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
                                "joined after it are not followed", [Why]));
format_error({root_tracer_down, Why}) ->
    lists:flatten(io_lib:format("the root tracer ended before it launched the system: ~0tp", [Why])).

%%% gen_server

%% @private
init({Owner, Roots, Spec, Opts = #{backend := Make}}) when is_function(Make, 1) ->
    case Make(self()) of
        {ok, Backend} -> init({Owner, Roots, Spec, Opts#{backend := Backend}});
        {error, Reason} -> {stop, Reason}
    end;
init({Owner, Roots, Spec, Opts = #{backend := Backend}}) ->
    Token = make_ref(),
    %% The analysis processes link to the session (so that none outlives it); their
    %% ends are handled through monitors.
    process_flag(trap_exit, true),
    Limits = riarc_opts:limits(Opts),
    Budget = riarc_opts:budget(Opts),
    %% Every limit but max_tracers (the session's own) is the tracers' to apply.
    Base = (maps:without([max_tracers], Limits))#{
            lambda => riarc_lambda:new(Spec), backend => Backend, session => self(),
            checks => maps:get(invariants, Opts), perturb => maps:get(perturb, Opts),
            explain => maps:get(explain, Opts, 8), analysis => maps:get(analysis, Opts, isolated),
            monitor_budget => Budget, token => Token},
    %% On a followed node: where a child from elsewhere that Λ puts in its parent's
    %% partition sends its events (riarc's option follow).
    Cfg0 = maps:merge(Base, maps:with([relay_to], Opts)),
    _ = monitor(process, Owner),
    %% Option follow_joining: watching for nodes that come up starts before the
    %% followers and the system do, so that none is missed.
    Joining = maps:get(follow_joining, Opts, false),
    {Watcher, Unfollowable} =
        case Joining of
            true ->
                W = riarc_join:watch(self(), riarc_backend:tracer_module(Backend), maps:get(max_join_hold, Limits)),
                _ = monitor(process, W),
                {W, nodes() -- maps:get(follow_nodes, Opts, [])};
            false -> {undefined, []}
        end,
    S0 = #s{owner = Owner, spec = Spec, opts = Opts, backend = Backend, limits = Limits, token = Token,
            budget = Budget, started = erlang:monotonic_time(microsecond),
            unsealed = unsealed(Backend), lineage = maps:get(lineage, Opts, false),
            join_watcher = Watcher, unfollowable = Unfollowable},
    %% The sessions following the system onto other nodes run before it starts, so that
    %% no child it starts there is missed.
    case start_followers(maps:get(followers, Opts, undefined), S0) of
        {ok, S0F} ->
            %% One partition spanning nodes: the children Λ puts in their parent's
            %% partition on a followed node are relayed to its tracer here.
            %% With follow_joining, any other node may be followed by the time a child
            %% there shows: the session tells which are.
            Cfg = case {Joining, [N || {N, _} <- maps:values(S0F#s.followers)]} of
                      {true, _} -> Cfg0#{relay_nodes => all};
                      {false, []} -> Cfg0;
                      {false, Nodes} -> Cfg0#{relay_nodes => Nodes}
                  end,
            %% Alg. 6 ROOT, once per root of the system; a root that cannot be traced
            %% is an error of start/4, at once.
            S1 = lists:foldl(fun({Root, MFA, Init}, S) ->
                                     tracer_up(riarc_tracer:start_root(Cfg, Root, MFA, Init), S)
                             end, S0F, Roots),
            {ok, S1#s{launching = maps:keys(S1#s.tracers)}};
        {error, Reason} ->
            {stop, Reason}
    end.

%% Option follow (riarc:run/3, start/3, attach/3): Start, run here, starts a session on
%% each followed node (riarc_remote, owned by this session, streaming its entries with a
%% tag of its own) and returns them.
start_followers(undefined, S) ->
    {ok, S};
start_followers(Start, S = #s{opts = Opts}) ->
    case Start(self(), {self(), S#s.relay_secret}, maps:get(follow_nodes, Opts, [])) of
        {ok, Followers} ->
            _ = [monitor(process, Proxy) || {_Node, Proxy, _Tag} <- Followers],
            {ok, S#s{follow = riarc_follow:new(),
                     followers = maps:from_list([{Tag, {N, Proxy}} || {N, Proxy, Tag} <- Followers])}};
        {error, _} = E ->
            E
    end.

%% @private
handle_call(launched, From, S = #s{launching = [_ | _]}) ->
    {noreply, S#s{launch_waiters = [From | S#s.launch_waiters]}};
handle_call(launched, _From, S) ->
    {reply, S#s.launch_error, S};
handle_call(await, From, S = #s{finished = undefined}) ->
    {noreply, S#s{waiters = [From | S#s.waiters]}};
handle_call(await, _From, S) ->
    {reply, {ok, result(S)}, S};
handle_call(verdicts, _From, S) ->
    {reply, verdict_list(S) ++ followed_entries(S), S};
handle_call({subscribe, Pid, Tag}, _From, S = #s{subscribers = Subs}) ->
    _ = is_map_key(Pid, Subs) orelse monitor(process, Pid),
    {reply, verdict_list(S) ++ followed_entries(S), S#s{subscribers = Subs#{Pid => Tag}}};
handle_call(alive, _From, S) ->
    {reply, alive_info(S), S};
handle_call({stop, Why}, From, S) ->
    %% A run cut short by riarc (its timeout): partitions that end from here on were not
    %% seen to their end, and the result says why.
    handle_call(stop, From, S#s{cut = Why, errors = S#s.errors ++ [{?MODULE, Why}]});
handle_call(stop, From, S = #s{tracers = T, analysers = A}) when map_size(T) =:= 0,
                                                                  map_size(A) =:= 0 ->
    S1 = stop_followers(close(S)),
    S2 = case S1#s.finished of
             undefined -> S1#s{finished = erlang:monotonic_time(microsecond)};
             _ -> S1
         end,
    gen_server:reply(From, {ok, result(S2)}),
    {stop, normal, S2};
handle_call(stop, From, S) ->
    _ = [riarc_tracer:stop(Pid, S#s.token) || Pid <- maps:keys(S#s.tracers)],
    maybe_done(S#s{stopping = true, waiters = [From | S#s.waiters]}).

%% @private
handle_cast(_Msg, S) ->
    {noreply, S}.

%% @private
%% A session following the system on another node: an entry, or its end.
%% Once they were asked to stop, what they streamed before their answer is in that answer.
handle_info({riarc_verdict, Tag, _E}, S = #s{followers = Fs, fstopped = true}) when is_map_key(Tag, Fs) ->
    {noreply, S};
handle_info({riarc_remote_down, Tag, _Why}, S = #s{followers = Fs, fstopped = true}) when is_map_key(Tag, Fs) ->
    {noreply, S};
handle_info(Msg = {Kind, Tag, _}, S = #s{followers = Fs})
  when (Kind =:= riarc_verdict orelse Kind =:= riarc_remote_down), is_map_key(Tag, Fs) ->
    follow_changed(streamed(Msg, S));
%% Race: the follower started for a node that came up streams to this session before
%% the word of the process that started it (riarc_joined) says whose stream it is: kept
%% until then, up to max_queue messages.
handle_info(Msg = {Kind, Tag, _}, S = #s{joins = Js, join_early = Early, limits = #{max_queue := Max}})
  when (Kind =:= riarc_verdict orelse Kind =:= riarc_remote_down), is_reference(Tag),
       map_size(Js) > 0, length(Early) < Max ->
    {noreply, S#s{join_early = [Msg | Early]}};
handle_info({riarc_s, Token, Msg}, S = #s{token = Token}) ->
    trusted(Msg, S);
%% One partition spanning nodes: a relaying tracer on a followed node, with the secret.
handle_info({riarc_relay, Secret, {Child, Parent}, What}, S = #s{relay_secret = Secret})
  when is_pid(Child), is_pid(Parent) ->
    {noreply, relay({Parent, node(Child)}, Child, What, S)};
%% Option follow_joining: a node came up, and the system here is held (riarc_join).
handle_info({riarc_join, W, Node}, S = #s{join_watcher = W}) ->
    Follow = S#s.finished =:= undefined andalso not S#s.stopping andalso not S#s.fstopped
        andalso not lists:keymember(Node, 1, maps:values(S#s.followers))
        andalso not lists:keymember(Node, 1, maps:values(S#s.joins))
        andalso not lists:member(Node, S#s.unfollowable),
    case Follow of
        true -> {noreply, join(Node, S)};
        false -> _ = riarc_join:release(W, Node, []), {noreply, S}
    end;
handle_info({riarc_joined, Pid, Result}, S = #s{joins = Js}) when is_map_key(Pid, Js) ->
    {Node, Ref} = maps:get(Pid, Js),
    demonitor(Ref, [flush]),
    follow_changed(joined(Node, Result, S#s{joins = maps:remove(Pid, Js)}));
handle_info({'DOWN', _, process, Pid, Why}, S = #s{joins = Js}) when is_map_key(Pid, Js) ->
    %% It crashed, maybe with the system still held for Node: let it go.
    {Node, _} = maps:get(Pid, Js),
    _ = [riarc_join:release(W, Node, []) || W <- [S#s.join_watcher], is_pid(W)],
    follow_changed(joined(Node, {error, {riarc_join, {crashed, Node, Why}}}, S#s{joins = maps:remove(Pid, Js)}));
handle_info({'DOWN', _, process, W, Why}, S = #s{join_watcher = W}) ->
    %% Nodes that join from now on are not followed: what the system starts there is an
    %% error (follow_grace), and so is this.
    {noreply, S#s{join_watcher = undefined, errors = [{?MODULE, {join_watcher_down, Why}} | S#s.errors]}};
handle_info({riarc_relay_grace, Key, K}, S) ->
    {noreply, relay_grace(Key, K, S)};
handle_info({riarc_s, _, _}, S) ->
    %% Trust boundary: a message in riarc's shape without the session's token was forged
    %% (by the monitored system): counted, not believed.
    {noreply, S#s{forged = S#s.forged + 1}};
handle_info({riarc_follow_grace, Ref}, S = #s{fgrace = Ref, finished = undefined, follow = F}) ->
    %% follow_grace is over: the children still not seen on their nodes are errors.
    case riarc_follow:waits_for(F) of
        starts -> done(stop_followers(close(S)));
        _ -> {noreply, S#s{fgrace = undefined}}
    end;
handle_info({riarc_follow_grace, _}, S) ->
    {noreply, S};
handle_info(riarc_watchdog, S) ->
    {noreply, watchdog(check_budgets(S#s{watchdog = false}))};
handle_info({riarc_grace, Ref}, S = #s{grace = Ref}) ->
    %% stop/1: the analyses that have not finished their partitions' events by now are
    %% ended; their partitions were not analysed to the end: inconclusive.
    S1 = maps:fold(fun(An, _, Acc) ->
                           Left = case erlang:process_info(An, message_queue_len) of
                                      {message_queue_len, Len} -> Len;
                                      undefined -> 0
                                  end,
                           kill_analysis(An, {inconclusive, {stopped, #{unanalysed => Left}}}, Acc)
                   end, S#s{grace = expired}, S#s.analysers),
    {noreply, S1};
handle_info(Msg, S) when element(1, Msg) =:= trace; element(1, Msg) =:= riarc_sealed ->
    %% The routing table's default owner: an event of a process no tracer owned. Its
    %% process's trace is incomplete; the run's result says how many such events came.
    %% Trust boundary: only the table's own (sealed) events count; forged ones are
    %% counted as forged.
    case riarc_backend:event(S#s.backend, Msg) of
        {ok, _} -> {noreply, S#s{orphans = S#s.orphans + 1}};
        skip -> {noreply, S};
        no -> {noreply, S#s{forged = S#s.forged + 1}}
    end;
handle_info({'DOWN', _, process, An, Reason}, S = #s{analysers = As}) when is_map_key(An, As) ->
    {Tracer, Clock} = maps:get(An, As),
    S1 = analysis_ended(Tracer, Clock, Reason, S#s{analysers = maps:remove(An, As)}),
    maybe_done(case S1#s.verdicts of
                   #{Tracer := _} -> S1;
                   #{} -> closed_told(Tracer, S1)
               end);
handle_info({'EXIT', An, Reason}, S = #s{analysers = As}) when Reason =/= normal ->
    %% Race: an analysis process linked to the session and ended (killed over its heap,
    %% say) before its tracer's announcement came: a monitor set then only says noproc.
    %% The link's exit says why; kept until the announcement.
    case As of
        #{An := {Tracer, Clock}} -> {noreply, analysis_ended(Tracer, Clock, Reason, S)};
        #{} -> {noreply, S#s{early = (S#s.early)#{An => Reason}}}
    end;
handle_info({'DOWN', _, process, Owner, _}, S = #s{owner = Owner}) ->
    %% Nobody waits for this run any more: stop tracing, leave the system alone.
    _ = [riarc_tracer:stop(Pid, S#s.token) || Pid <- maps:keys(S#s.tracers)],
    {stop, normal, S};
handle_info({'DOWN', _, process, Pid, _}, S = #s{subscribers = Subs}) when is_map_key(Pid, Subs) ->
    {noreply, S#s{subscribers = maps:remove(Pid, Subs)}};
handle_info({'DOWN', _, process, Pid, Reason}, S0 = #s{tracers = T}) when is_map_key(Pid, T) ->
    S = case lists:member(Pid, S0#s.launching) of
            true -> launch_result(Pid, {error, {?MODULE, {root_tracer_down, Reason}}}, S0);
            false -> S0
        end,
    S1 = closed(Pid, tracer_crash(Pid, Reason, S)),
    maybe_done(S1#s{tracers = maps:remove(Pid, T), counted = maps:remove(Pid, S1#s.counted)});
handle_info({'DOWN', _, process, Pid, Why}, S = #s{followers = Fs, fstopped = false})
  when map_size(Fs) > 0 ->
    case [N || {N, Proxy} <- maps:values(Fs), Proxy =:= Pid] of
        %% A follower's proxy gone without a word (it says nodedown when its node goes,
        %% first): its node's open partitions and unmatched children are errors.
        [Node] -> follow_changed(follow_down(Node, {follower_down, Why}, S));
        [] -> {noreply, S}
    end;
handle_info({'EXIT', _, _}, S) ->
    {noreply, S};
handle_info(Msg, S) when is_tuple(Msg), tuple_size(Msg) > 1, is_atom(element(1, Msg)) ->
    case atom_to_list(element(1, Msg)) of
        "riarc_" ++ _ -> {noreply, S#s{forged = S#s.forged + 1}};
        _ -> {noreply, S}
    end;
handle_info(_Other, S) ->
    {noreply, S}.

%% What riarc's own processes (tracers, analysis processes) tell the session, with its
%% token.
trusted({riarc_forged, _Tracer, _What}, S) ->
    {noreply, S#s{forged = S#s.forged + 1}};
trusted({riarc_launched, T, Res}, S) ->
    {noreply, launch_result(T, Res, S)};
trusted({riarc_tracer_up, Pid, Proc, MFA, Lineage}, S = #s{overload = Over}) when Over =/= undefined ->
    %% Race: a tracer started by one the overload policy ended, announced after the
    %% detach: it has nothing to take over any more, and is ended the same way.
    exit(Pid, kill),
    {noreply, tracer_up(Pid, part(Pid, Proc, MFA, Lineage, S))};
trusted({riarc_tracer_up, Pid, Proc, MFA, Lineage}, S = #s{stopping = true}) ->
    %% Race: a tracer started by its parent tracer before that one took the stop of
    %% stop/1 announces itself after it: it is stopped as the others were, or the session
    %% would wait for it for ever.
    riarc_tracer:stop(Pid, S#s.token),
    {noreply, tracer_up(Pid, part(Pid, Proc, MFA, Lineage, S))};
trusted({riarc_tracer_up, Pid, Proc, MFA, Lineage}, S) ->
    S1 = tracer_up(Pid, part(Pid, Proc, MFA, Lineage, S)),
    #{max_tracers := Max} = S1#s.limits,
    case map_size(S1#s.tracers) > Max of
        true -> {noreply, overload({tracers, map_size(S1#s.tracers), Max}, S1)};
        false -> {noreply, S1}
    end;
trusted({riarc_overload, _Tracer, What}, S) ->
    {noreply, overload(What, S)};
trusted({riarc_counts, Tracer, Events, Forged}, S) ->
    {noreply, counted(Tracer, Events, Forged, S)};
trusted({riarc_analyser_up, Tracer, An, Clock}, S = #s{early = Early}) when is_map_key(An, Early) ->
    {Reason, Early1} = maps:take(An, Early),
    {noreply, analysis_ended(Tracer, Clock, Reason, S#s{early = Early1})};
trusted({riarc_analyser_up, Tracer, An, Clock}, S = #s{analysers = As}) ->
    _ = monitor(process, An),
    S1 = S#s{analysers = As#{An => {Tracer, Clock}}},
    case S#s.overload =/= undefined andalso S#s.limits of
        #{policy := stop} ->
            %% Race: started by a tracer the overload policy ended, announced after the
            %% detach.
            {noreply, kill_analysis(An, {inconclusive, {overload, S#s.overload}}, S1)};
        _ -> {noreply, watchdog(S1)}
    end;
trusted({riarc_partition_events, Tracer, N}, S) ->
    {noreply, shed_count(Tracer, S#s{pevents = (S#s.pevents)#{Tracer => N}})};
trusted({riarc_tracer_down, _Pid, Stats}, S = #s{stats = Acc}) ->
    {noreply, S#s{stats = maps:fold(fun(K, V, A) -> maps:update_with(K, fun(X) -> X + V end, V, A) end,
                                    Acc, Stats)}};
trusted({riarc_root_exit, _Tracer, Root, MFA, Reason}, S) ->
    {noreply, S#s{root_exits = [#{pid => Root, mfa => MFA, reason => Reason} | S#s.root_exits]}};
trusted({riarc_partition, Tracer, Proc, MFA}, S) ->
    {noreply, S#s{parts = (S#s.parts)#{Tracer => {Proc, MFA}}}};
trusted({riarc_explanation, Tracer, Expl}, S) ->
    {noreply, S#s{explanations = (S#s.explanations)#{Tracer => Expl}}};
trusted({riarc_verdict, Tracer, Proc, MFA, V0, Why0, N}, S = #s{stats = Stats}) ->
    {V, Why} = case {V0, S#s.cut} of
                   {none, {timeout, T, _}} -> {inconclusive, {timeout, T}};
                   _ -> {V0, Why0}
               end,
    Entry0 = riarc_result:entry(Proc, MFA, V, N, Why),
    Entry = case maps:take(Tracer, S#s.explanations) of
                {Expl, _} -> Entry0#{explanation => Expl};
                error -> Entry0
            end,
    riarc_result:log_verdict(maps:get(log, S#s.opts), "", Entry),
    %% The analysis process's count of the events its monitor took.
    {noreply, put_verdict(Tracer, Entry,
                          S#s{stats = maps:update_with(analysed, fun(A) -> A + N end, N, Stats)})};
trusted({riarc_violation, Tracer, Id, Info, State}, S) ->
    logger:error("riarc: invariant ~p violated in tracer ~p: ~0tp~n  tracer state: ~0tp",
                 [Id, Tracer, Info, State]),
    V = #{tracer => Tracer, invariant => Id, info => Info, state => State},
    {noreply, S#s{violations = [V | S#s.violations]}};
trusted({riarc_incomplete, _Tracer, Pending}, S = #s{incomplete = Inc}) ->
    Lost = maps:map(fun(_, Events) -> length(Events) end, Pending),
    S1 = S#s{incomplete = maps:merge(Inc, Lost)},
    {noreply, republish(fun(#{pid := P}) -> is_map_key(P, Lost) end, S1)};
%% A process started one on another node (riarc_tracer_core's remote_child/2). In its own
%% partition: that partition's trace lacks the child's events from then on, so its verdict
%% is not to be trusted, unless its monitor had reached one before (here already, when
%% the monitor runs in the tracer; one still on its way from an analysis process is
%% distrusted too: a false error, never a false accept). With a monitor of its own: a
%% monitor that never ran, an error of the run.
trusted({riarc_remote_child, Tracer, partition, Info}, S = #s{remote = Rem}) ->
    S1 = S#s{remote = Rem#{Tracer => Info}},
    case S#s.verdicts of
        #{Tracer := #{verdict := V}} when V =:= accept; V =:= reject -> {noreply, S};
        #{Tracer := _} -> {noreply, publish([Tracer], S1)};
        #{} -> {noreply, S1}
    end;
%% One partition spanning nodes: the child's events come relayed from its node, and go to
%% the parent's partition's tracer (relay/4), those that came before this word first.
trusted({riarc_remote_child, Tracer, relayed, Info = #{parent := P, node := Node}},
        S = #s{relays = Rs, relay_wait = Wait, follow = F}) ->
    Key = {P, Node},
    R = #{expected := K} = maps:get(Key, Rs, #{tracer => Tracer, expected => 0, seen => #{},
                                               ended => 0, lost => 0}),
    S1 = followed(riarc_follow:expect(Info#{relayed => true}, F),
                  S#s{relays = Rs#{Key => R#{expected := K + 1}}, relay_wait = maps:remove(Key, Wait)}),
    _ = case follow_grace_ms(S1) of
            infinity -> ok;
            T -> erlang:send_after(T, self(), {riarc_relay_grace, Key, K + 1})
        end,
    Held = lists:reverse(maps:get(Key, Wait, [])),
    S2 = lists:foldl(fun({C, What}, A) -> relay(Key, C, What, A) end,
                     S1#s{relay_held = S1#s.relay_held - relayed_events(Held)}, Held),
    S3 = case maps:take(Key, S2#s.relay_dropped) of
             {N, Dropped} -> relay_tell(Key, 0, #{relay_dropped => N}, S2#s{relay_dropped = Dropped});
             error -> S2
         end,
    %% follow_joining: a node connected before the run began is not followed.
    {noreply, case lists:member(Node, S3#s.unfollowable) of
                  true -> relay_lost(Key, 1, #{lost => not_followed}, S3);
                  false -> S3
              end};
trusted({riarc_remote_child, _Tracer, own, Info = #{node := Node}}, S = #s{follow = F}) ->
    %% follow_joining: a node not followed yet may be by the time the child shows there
    %% (its start may reach this session before the node's coming up does).
    case {lists:member(Node, maps:get(monitored_elsewhere, S#s.opts, [])),
          lists:keymember(Node, 1, maps:values(S#s.followers))
          orelse (joining(S) andalso not lists:member(Node, S#s.unfollowable))} of
        %% The user's word: a session there monitors what starts there.
        {true, _} -> {noreply, S};
        %% Followed: this session's own session there monitors it (riarc_follow).
        {_, true} -> {noreply, followed(riarc_follow:expect(Info, F), S)};
        {false, false} ->
            Error = {?MODULE, {remote_child, Info}},
            {noreply, S#s{errors = [Error | S#s.errors]}}
    end;
trusted({riarc_spec_error, Tracer, MFA, Reason}, S) ->
    logger:warning("riarc: the Spec failed for ~0tp (tracer ~p): ~0tp", [MFA, Tracer, Reason]),
    {noreply, S#s{errors = [{spec, MFA, Reason} | S#s.errors]}}.

%% @private Whatever way the session ends, no analysis outlives it: nobody would watch its
%% budget or read its verdict.
terminate(_Reason, #s{analysers = As}) ->
    _ = [exit(An, kill) || An <- maps:keys(As)],
    ok.

%%% Internals


%% A tracer's counts (running totals): the session's own are the sums. Limit
%% max_events: once the tracers have reported more events than that in all, the run is
%% over its budget. Every policy stops then: the count is the whole session's, no partition
%% is to blame for it, so there is no partition to shed or to hold back. The tracers
%% report every 1024 messages and as they end, so a session sees at most about 1024
%% events per live tracer more than the limit before it acts (and what its tracers take
%% while the report waits in its mailbox).
counted(Tracer, Events, Forged, S = #s{counted = C, limits = #{max_events := Max}}) ->
    {E0, F0} = maps:get(Tracer, C, {0, 0}),
    Seen = S#s.seen + Events - E0,
    S1 = S#s{seen = Seen, forged = S#s.forged + Forged - F0, counted = C#{Tracer => {Events, Forged}}},
    case Max =/= infinity andalso Seen > Max of
        true -> overload({max_events, Seen, Max}, S1);
        false -> S1
    end.

%% Trust boundary: a backend that takes as an event a trace message the session made up
%% would take one the monitored system made up too (the process tracers' backend: the
%% VM's trace messages carry no seal, and an Erlang process cannot tell who sent a
%% message). Asked once, with a message of the session's own.
unsealed(Backend) ->
    case riarc_backend:event(Backend, {trace, self(), exit, normal}) of
        {ok, _} -> true;
        _ -> false
    end.

%% Policy `shed': a partition whose monitor cannot keep up with its events (its analysis
%% process's mailbox over the limit) is detached alone: its queued events are dropped,
%% counted, and its verdict is `inconclusive', never a silent accept; routing and every
%% other partition go on. A tracer's own mailbox over the limit, or too many tracers, is
%% routing that cannot keep up: nothing can be dropped from it without breaking other
%% partitions' traces, so these fall back to policy stop.
overload(What = {analysis, Tracer, Len, Max}, S = #s{limits = #{policy := P}, overload = undefined})
  when P =:= shed; P =:= backpressure ->
    case analysers_of(Tracer, S) of
        [An | _] ->
            logger:warning("riarc: overload (~0tp): shedding the partition's events", [What]),
            {_, Clock} = maps:get(An, S#s.analysers),
            %% dropped: what was queued (a lower bound until the tracer ends and gives
            %% the partition's whole count).
            Analysed = max(0, riarc_analyser:steps(Clock) - 1),
            S1 = kill_analysis(An, {inconclusive, {shed, #{dropped => Len, analysed => Analysed,
                                                           max_queue => Max}}}, S),
            shed_count(Tracer, S1);
        [] -> S
    end;
%% Policy `stop': riarc detaches from the whole system at the first limit it reaches, and
%% says so; partitions that had no verdict yet get `inconclusive', never a verdict on a
%% trace riarc itself cut short.
overload(_What, S = #s{overload = Already}) when Already =/= undefined -> S;
overload(What, S = #s{backend = Backend}) ->
    %% The tracers are behind (that is the overload): a stop request would wait behind
    %% their whole mailbox. The backend detaches the system at once instead, and the
    %% tracers are ended; what they had not decided is inconclusive.
    ok = riarc_backend:close(Backend),
    _ = [exit(Pid, kill) || Pid <- maps:keys(S#s.tracers)],
    %% Said after the detach: a first log message may load modules (the code server is
    %% slow on a loaded node: 150 ms seen), and tracers go on taking events meanwhile.
    logger:warning("riarc: overload (~0tp): detaching from the system", [What]),
    %% The partitions with no verdict yet now read inconclusive (cut_short/2).
    S1 = republish(fun(#{verdict := V}) -> V =:= none end, S#s{overload = What}),
    maps:fold(fun(An, _, Acc) -> kill_analysis(An, {inconclusive, {overload, What}}, Acc) end,
              S1, S1#s.analysers).

%% A shed partition's count of dropped events: what was queued when it was shed (a lower
%% bound) until its tracer has ended and given the partition's whole count; all but the
%% analysed were dropped.
shed_count(Tracer, S = #s{verdicts = Vs, pevents = PE}) ->
    case {Vs, PE} of
        {#{Tracer := E = #{reason := {shed, Info = #{analysed := A}}}}, #{Tracer := N}} ->
            put_verdict(Tracer, E#{reason := {shed, Info#{dropped := N - A}}}, S);
        _ -> S
    end.

%% The watchdog of the monitors' step budget: one timer for the session, a few times per
%% budget, reading each analysis's step clock (cheap: no message to the analysis, which
%% may be busy in its monitor).
watchdog(S = #s{watchdog = true}) -> S;
watchdog(S = #s{analysers = As}) when map_size(As) =:= 0 -> S;
watchdog(S = #s{budget = #{time_ms := T}}) ->
    _ = erlang:send_after(max(10, min(250, T div 4)), self(), riarc_watchdog),
    S#s{watchdog = true}.

check_budgets(S = #s{analysers = As, budget = Budget}) ->
    maps:fold(fun(An, {_Tracer, Clock}, Acc) ->
                      case riarc_analyser:overdue(Clock, An, Budget) of
                          ok -> Acc;
                          {over, What} ->
                              logger:warning("riarc: a monitor step over its budget (~0tp): "
                                             "its partition is detached", [What]),
                              kill_analysis(An, {error, {monitor_budget, What}}, Acc)
                      end
              end, S, As).

%% An analysis process ended: normally (it gave its verdict), or killed by the VM over its
%% heap budget (or from outside), or failed in riarc's own code: the monitor is
%% detached, its partition's verdict (unless it has one) says why.
analysis_ended(_Tracer, _Clock, Reason, S) when Reason =:= normal; Reason =:= noproc ->
    S;
analysis_ended(Tracer, Clock, Reason, S) ->
    Why = case Reason of
              killed -> {monitor_budget, #{heap_words => maps:get(heap_words, S#s.budget)}};
              _ -> {analysis_crashed, Reason}
          end,
    set_entry(Tracer, riarc_analyser:steps(Clock), {error, Why}, S).

%% Ends an analysis process; its partition's verdict, unless it has one, is Verdict.
kill_analysis(An, Verdict, S = #s{analysers = As}) ->
    exit(An, kill),
    case As of
        #{An := {Tracer, Clock}} ->
            set_entry(Tracer, riarc_analyser:steps(Clock), Verdict,
                      S#s{analysers = As#{An := {Tracer, Clock}}});
        #{} -> S
    end.

%% A verdict the session gives a partition itself (its analysis was ended): only when the
%% monitor has not given one. Steps: the monitor had begun that many, finished one less.
set_entry(Tracer, Steps, {V, Why}, S = #s{verdicts = Vs, parts = Parts}) ->
    case {Vs, Parts} of
        {#{Tracer := _}, _} -> S;
        {#{}, #{Tracer := {Proc, MFA}}} ->
            Entry = riarc_result:entry(Proc, MFA, V, max(0, Steps - 1), Why),
            riarc_result:log_verdict(maps:get(log, S#s.opts), "", Entry),
            put_verdict(Tracer, Entry, S);
        {#{}, #{}} -> S
    end.

close(S = #s{closed = true}) -> S;
close(S = #s{backend = Backend}) ->
    riarc_backend:close(Backend),
    S#s{closed = true}.

launch_result(T, Res, S = #s{launching = L, launch_error = E0}) ->
    E = case E0 of ok -> Res; _ -> E0 end,
    case lists:delete(T, L) of
        [] ->
            _ = [gen_server:reply(W, E) || W <- S#s.launch_waiters],
            S#s{launching = [], launch_error = E, launch_waiters = []};
        L1 -> S#s{launching = L1, launch_error = E}
    end.

tracer_up(Pid, S = #s{tracers = T, spawned = N}) ->
    _ = monitor(process, Pid),
    T1 = T#{Pid => true},
    S#s{tracers = T1, spawned = N + 1, peak = max(S#s.peak, map_size(T1)),
        order = (S#s.order)#{Pid => N}}.

%% A tracer that dies of anything but its own TRYGC is a fault in riarc: its partition
%% gets the verdict error, and the rest of the run goes on.
tracer_crash(_Pid, normal, S) -> S;
%% (offline helper's minimal fix) A short-lived tracer can finish (TRYGC) before the
%% session handles its riarc_tracer_up and monitors it: the monitor then reports noproc,
%% which is not a crash. Replayed traces (riarc_backend_log) hit this often.
tracer_crash(_Pid, noproc, S) -> S;
%% Ended by the overload policy: the partition's trace was cut short by riarc.
tracer_crash(Pid, killed, S = #s{overload = Over, verdicts = Vs, parts = Parts}) when Over =/= undefined ->
    case {Vs, Parts} of
        {#{Pid := _}, _} -> S;
        {#{}, #{Pid := {Proc, MFA}}} ->
            put_verdict(Pid, riarc_result:entry(Proc, MFA, inconclusive, 0, {overload, Over}), S);
        {#{}, #{}} -> S
    end;
tracer_crash(Pid, Reason, S = #s{verdicts = Vs, parts = Parts}) ->
    logger:error("riarc: tracer ~p crashed: ~0tp", [Pid, Reason]),
    %% The partition's process and MFA when it was announced (a session following its
    %% system here matches the entry by its process).
    Entry = case is_map_key(Pid, Vs) orelse is_map_key(Pid, Parts) of
                true -> bare_entry(Pid, S);
                false -> #{pid => undefined, mfa => undefined, events => 0}
            end,
    put_verdict(Pid, Entry#{verdict => error, reason => {tracer_crashed, Reason}},
                S#s{violations = [#{tracer => Pid, invariant => crash, info => Reason} | S#s.violations]}).

maybe_done(S = #s{tracers = T}) when map_size(T) > 0 ->
    {noreply, S};
maybe_done(S = #s{analysers = As}) when map_size(As) > 0 ->
    %% Every process is untraced; the monitors are still at their partitions' events
    %% (each step within its budget). After stop/1, they get a grace period.
    {noreply, grace(close(S))};
maybe_done(S = #s{joins = Js, stopping = false}) when map_size(Js) > 0 ->
    %% A node that came up is being followed: what the system started there is
    %% accounted for once its follower runs (or cannot).
    {noreply, S};
maybe_done(S0 = #s{follow = F, stopping = false}) when F =/= undefined ->
    %% Every tracer here has ended, so every child the system started on a followed node
    %% is expected: the run ends once each is matched there and has ended, or its node is
    %% gone. A child not seen there may still come (its node's session is behind) or never
    %% will (its start failed there, after the call this node traced): that is waited for
    %% within follow_grace, then it is an error entry (riarc_follow:final/1).
    case riarc_follow:waits_for(F) of
        nothing -> done(stop_followers(close(S0)));
        partitions -> {noreply, close(S0#s{fgrace = undefined})};
        starts -> {noreply, follow_grace(close(S0))}
    end;
maybe_done(S) ->
    done(stop_followers(close(S))).

done(S = #s{waiters = Ws, stopping = Stopping}) ->
    S1 = S#s{finished = erlang:monotonic_time(microsecond), waiters = []},
    Result = {ok, result(S1)},
    _ = [gen_server:reply(W, Result) || W <- Ws],
    case Stopping of
        true -> {stop, normal, S1};
        false -> {noreply, S1}
    end.

follow_grace(S = #s{fgrace = undefined}) ->
    case follow_grace_ms(S) of
        infinity -> S;
        T ->
            Ref = make_ref(),
            _ = erlang:send_after(T, self(), {riarc_follow_grace, Ref}),
            S#s{fgrace = Ref}
    end;
follow_grace(S) ->
    S.

follow_grace_ms(#s{opts = Opts}) ->
    maps:get(follow_grace, Opts, maps:get(follow_grace, riarc_opts:defaults())).

%% Option follow_joining: Node came up during the run; the system here is held back
%% while the session following it there starts (riarc_join), so that the system's first
%% start there comes after. That start takes seconds on a busy node, and minutes on an
%% overloaded one: it runs in a process of its own, which tells this session
%% `{riarc_joined, Pid, Result}' (joined/3), so that the session answers its callers
%% and its tracers meanwhile.
join(Node, S = #s{opts = #{followers := Start}, join_watcher = W, relay_secret = Secret}) ->
    Session = self(),
    {Pid, Ref} = proc_lib:spawn_opt(
                   fun() ->
                           Result = riarc_join:follow(W, Node, fun() -> Start(Session, {Session, Secret}, [Node]) end),
                           Session ! {riarc_joined, self(), Result}
                   end, [monitor]),
    S#s{joins = (S#s.joins)#{Pid => {Node, Ref}}}.

%% A follower started for Node, or why not. A child of the system found there started
%% before is an error of the run (it is not followed from its middle, and its partition,
%% or its parent's, is an error once follow_grace says it never showed). A node riarc
%% cannot follow the system onto: an error of the run, and whatever the system started
%% there is lost. A follower that comes once the followers were stopped is stopped too.
joined(_Node, {ok, [{_, Proxy, _}], _Early}, S = #s{fstopped = true}) ->
    _ = gen_server:send_request(Proxy, stop),
    early_left(S);
joined(Node, {ok, [{Node, Proxy, Tag}], Early}, S) ->
    _ = monitor(process, Proxy),
    S1 = S#s{followers = (S#s.followers)#{Tag => {Node, Proxy}}},
    S2 = case Early of
             {ok, []} -> S1;
             {ok, Cs} -> S1#s{errors = [{?MODULE, {before_follow, #{node => Node, children => Cs}}} | S1#s.errors]};
             {error, E} -> S1#s{errors = [E | S1#s.errors]}
         end,
    %% What it streamed before this word, in the order it came.
    {Its, Others} = lists:partition(fun({_, T, _}) -> T =:= Tag end, lists:reverse(S2#s.join_early)),
    early_left(lists:foldl(fun streamed/2, S2#s{join_early = lists:reverse(Others)}, Its));
joined(Node, {error, Why}, S) ->
    S1 = S#s{unfollowable = [Node | S#s.unfollowable],
             errors = [{?MODULE, {join_failed, Node, Why}} | S#s.errors]},
    early_left(follow_down(Node, {join_failed, Why}, S1)).

%% Kept for a follower being started, and no follower is any more: forged.
early_left(S = #s{joins = Js, join_early = Early}) when map_size(Js) =:= 0 ->
    S#s{join_early = [], forged = S#s.forged + length(Early)};
early_left(S) ->
    S.

%% An entry of a follower's stream, or its end.
streamed({riarc_verdict, Tag, E}, S = #s{followers = Fs, follow = F}) ->
    {Node, _} = maps:get(Tag, Fs),
    {F1, Learnt} = more_followed(riarc_follow:learn(Node, E, F), Fs, [{Node, E}]),
    lists:foldl(fun({N, E1}, A) -> relay_failed(N, E1, A) end, followed(F1, S), lists:reverse(Learnt));
streamed({riarc_remote_down, Tag, Why}, S = #s{followers = Fs}) ->
    {Node, _} = maps:get(Tag, Fs),
    follow_down(Node, Why, S).

joining(#s{opts = Opts}) ->
    maps:get(follow_joining, Opts, false).

%% A followed node's session ended on its own: its entries (riarc_follow), and the
%% relayed children there that had not ended, whose partitions here lose the rest of
%% their trace.
follow_down(Node, Why, S = #s{follow = F, relays = Rs}) ->
    S1 = followed(riarc_follow:down(Node, Why, F), S),
    lists:foldl(fun(Key = {_, N}, A) when N =:= Node ->
                        #{expected := E, ended := D, lost := L} = maps:get(Key, Rs),
                        relay_lost(Key, E - D - L, #{lost => Why}, A);
                   (_, A) -> A
                end, S1, maps:keys(Rs)).

%% One partition spanning nodes: what a relaying tracer sent for Child, the child of
%% Parent on Node, goes to the tracer of Parent's partition here, in the order it came;
%% for a parent no tracer has claimed (its start not reached yet by its tracer, or a
%% parent outside the system that has ended), it waits, up to max_queue events in all;
%% past that it is dropped and counted, so that a partition that claims it later is an
%% error, never a verdict on a trace with a hole.
relay(Key, Child, What, S = #s{relays = Rs, token = Token}) when is_map_key(Key, Rs) ->
    R = #{tracer := T, seen := Seen} = maps:get(Key, Rs),
    R1 = case What of
             {events, Events} ->
                 T ! {riarc_relayed, Token, events, Events},
                 R#{seen := Seen#{Child => true}};
             'end' ->
                 T ! {riarc_relayed, Token, 'end', Child},
                 R#{seen := Seen#{Child => true}, ended := maps:get(ended, R) + 1}
         end,
    S#s{relays = Rs#{Key := R1}};
relay(Key = {P, _}, Child, What, S) ->
    %% A parent of this node alive and traced by nobody is not the system's (a process of
    %% the system is traced from its start to its end): nothing to wait for.
    case node(P) =:= node() andalso erlang:trace_info(P, tracer) =:= {tracer, []} of
        true -> S;
        false -> relay_hold(Key, Child, What, S)
    end.

relay_hold(Key, Child, What, S = #s{relay_wait = Wait, relay_held = Held, limits = #{max_queue := Max}}) ->
    N = relayed_events([{Child, What}]),
    case Held + N > Max of
        false ->
            S#s{relay_wait = Wait#{Key => [{Child, What} | maps:get(Key, Wait, [])]},
                relay_held = Held + N};
        true ->
            S#s{relay_dropped = maps:update_with(Key, fun(D) -> D + N end, N, S#s.relay_dropped)}
    end.

relayed_events(Held) ->
    lists:sum([length(Es) || {_, {events, Es}} <- Held]).

%% A relaying partition there that ended in error or cut short (its tracer crashed, riarc
%% there detached over a limit) before its end was relayed: the rest of its trace will
%% not come. A relaying partition is one that relayed something, or one Λ gives no
%% monitor (a child of the same parent with a monitor of its own is not one: its verdict
%% is its own).
relay_failed(Node, #{pid := C, parent := P, mfa := MFA, verdict := V} = E, S = #s{relays = Rs})
  when is_map_key({P, Node}, Rs), (V =:= error orelse V =:= inconclusive) ->
    #{seen := Seen} = maps:get({P, Node}, Rs),
    case is_map_key(C, Seen) orelse riarc_lambda:lookup(riarc_lambda:new(S#s.spec), MFA) =:= undefined of
        true -> relay_lost({P, Node}, 1, #{lost => maps:get(reason, E, undefined), child => C}, S);
        false -> S
    end;
relay_failed(_Node, _E, S) ->
    S.

%% follow_grace after the K-th relayed child of a parent on a node was expected: if fewer
%% than K showed there, those missing never will (their start failed), as far as this
%% run can wait.
relay_grace(Key, K, S = #s{relays = Rs}) ->
    #{seen := Seen, lost := L} = maps:get(Key, Rs),
    relay_lost(Key, K - map_size(Seen) - L, #{lost => not_followed}, S).

%% N relayed children of Key's parent will not be relayed (to their end): its partition's
%% tracer stops waiting for them, and its partition is an error (relay_tell/4).
relay_lost(_Key, N, _Why, S) when N =< 0 ->
    S;
relay_lost(Key, N, Why, S) ->
    relay_tell(Key, N, Why, S).

%% The partition of Key's parent lost part of its relayed trace (N children of it, none
%% when what was lost is events held for it, relay_dropped): an error for it.
relay_tell(Key = {P, Node}, N, Why, S = #s{relays = Rs, token = Token}) ->
    R = #{tracer := T, lost := L} = maps:get(Key, Rs),
    T ! {riarc_relayed, Token, lost, {N, maps:merge(#{parent => P, node => Node}, Why)}},
    S#s{relays = Rs#{Key := R#{lost := L + N}}}.

%% The followers' sessions end with the run: what each learnt last is read from its
%% result (an entry its stream had not brought yet).
stop_followers(S = #s{followers = Fs, fstopped = Stopped}) when map_size(Fs) =:= 0; Stopped ->
    S;
stop_followers(S0 = #s{followers = Fs}) ->
    S = S0#s{fstopped = true},
    %% All asked at once, each answer awaited within the same bound (under stop/1's).
    Asked = [{Node, gen_server:send_request(Proxy, stop)} || {Node, Proxy} <- maps:values(Fs)],
    Deadline = erlang:monotonic_time(millisecond) + ?FOLLOWER_STOP_MS,
    lists:foldl(fun({Node, Req}, A = #s{follow = F}) ->
                        Left = max(0, Deadline - erlang:monotonic_time(millisecond)),
                        case gen_server:wait_response(Req, Left) of
                            {reply, {ok, #{verdicts := Vs}}} ->
                                A#s{follow = lists:foldl(fun(E, F1) ->
                                                                 riarc_follow:learn(Node, cut_short_there(Node, E, F1, A#s.cut), F1)
                                                         end, F, Vs)};
                            %% Gone on its own (its down message said how), or too slow:
                            %% its children not matched yet are errors.
                            _ -> A#s{follow = riarc_follow:down(Node, follower_lost, F)}
                        end
                end, S, Asked).

%% A run riarc cut short (its timeout): a partition there that was still open when its
%% session was stopped ends without a verdict only because of the cut, as one here would
%% (the verdict handler above).
cut_short_there(Node, E = #{pid := P, verdict := none}, F, {timeout, T, _}) ->
    case riarc_follow:known(Node, P, F) of
        #{open := true} -> E#{verdict => inconclusive, reason => {timeout, T}};
        undefined -> E#{verdict => inconclusive, reason => {timeout, T}};
        #{} -> E
    end;
cut_short_there(_Node, E, _F, _Cut) ->
    E.

%% The book of followed children changed: subscribers hear of entries matched since.
followed(F, S = #s{subscribers = Subs}) when map_size(Subs) =:= 0 ->
    S#s{follow = F};
followed(F, S = #s{subscribers = Subs, fpublished = Pub}) ->
    New = [E || E = #{node := N, pid := P} <- riarc_follow:entries(F), reached(E),
                maps:get({N, P}, Pub, none) =/= E],
    _ = [Pid ! {riarc_session_verdict, Tag, E} || {Pid, Tag} <- maps:to_list(Subs), E <- New],
    S#s{follow = F, fpublished = maps:merge(Pub, maps:from_list([{{N, P}, E} || E = #{node := N, pid := P} <- New]))}.

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

%% The run may be over now: every tracer here had ended, and the last followed child is
%% accounted for.
follow_changed(S = #s{finished = undefined}) ->
    maybe_done(S);
follow_changed(S) ->
    {noreply, S}.

%% The partition a tracer started for. When entries carry their lineage, the partition
%% is listed from its start, `open' while its tracer lives, with verdict none until its
%% monitor gives one (a provisional entry, read from its lineage: never one of the
%% verdicts, which only a monitor or the session's own judgement set): a session
%% following its system here learns of each partition before the one it was started from
%% ends (the tracer that starts a tracer tells the session before it can end), so it
%% knows what it still waits for (riarc_follow:settled/1).
part(Pid, Proc, MFA, {Parent, Within}, S = #s{parts = Parts, lineage = L}) ->
    S1 = S#s{parts = Parts#{Pid => {Proc, MFA}}},
    case L of
        true ->
            Lineage = #{parent => Parent, within => Within, open => true},
            publish([Pid], S1#s{lineages = (S1#s.lineages)#{Pid => Lineage}});
        false -> S1
    end.

%% A partition's tracer has ended: its entry is no longer open. Told at once when its
%% verdict is known; with none yet, when its monitor's own process (which goes on with
%% the events it holds) ends (closed_told/2): told before, `none' would read as the
%% partition's last word.
closed(Pid, S = #s{lineages = Ls}) when is_map_key(Pid, Ls) ->
    closed_told(Pid, S#s{lineages = Ls#{Pid => maps:remove(open, maps:get(Pid, Ls))}});
closed(_Pid, S) ->
    S.

closed_told(Pid, S = #s{verdicts = Vs, lineages = Ls}) ->
    case Ls of
        #{Pid := #{open := true}} -> S;
        #{Pid := _} ->
            case is_map_key(Pid, Vs) orelse analysers_of(Pid, S) =:= [] of
                true -> publish([Pid], S);
                false -> S
            end;
        #{} -> S
    end.

%% The analysis processes of a tracer's partition still running.
analysers_of(Tracer, #s{analysers = As}) ->
    [An || {An, {T, _}} <- maps:to_list(As), T =:= Tracer].

result(S = #s{stats = Stats}) ->
    End = case S#s.finished of undefined -> erlang:monotonic_time(microsecond); F -> F end,
    Verdicts = verdict_list(S) ++ followed_entries(S),
    riarc_result:make(#{verdicts => Verdicts,
                        warnings => riarc_result:warnings(S#s.spec, Verdicts)
                                    ++ [{unsealed, evm} || S#s.unsealed],
                        tracers => #{spawned => S#s.spawned, peak => S#s.peak},
                        %% A tracer ended by the overload policy gives no statistics:
                        %% its events are known from its counts (limit max_events).
                        events => max(maps:get(collected, Stats), S#s.seen),
                        analysed => maps:get(analysed, Stats),
                        routed => maps:get(routed, Stats),
                        reordered => maps:get(reordered, Stats),
                        violations => lists:reverse(S#s.violations),
                        errors => lists:reverse(S#s.errors)
                                  ++ [{orphan_events, S#s.orphans} || S#s.orphans > 0]
                                  ++ [{?MODULE, {forged_messages, S#s.forged}} || S#s.forged > 0],
                        overload => S#s.overload,
                        root_exits => lists:reverse(S#s.root_exits),
                        duration_us => End - S#s.started}).

%% The system's entries on followed nodes: once the run is over, with an error for each
%% child nothing there matched; before, those matched so far.
followed_entries(#s{follow = undefined}) ->
    [];
followed_entries(#s{follow = F, finished = undefined}) ->
    [E || E <- riarc_follow:entries(F), reached(E)];
followed_entries(#s{follow = F}) ->
    riarc_follow:final(F).

%% A followed entry worth telling before the run is over: a partition's, not one still
%% running without a verdict.
reached(#{pid := undefined}) -> false;
reached(#{open := true, verdict := none}) -> false;
reached(#{}) -> true.

verdict_list(S = #s{verdicts = Vs, order = Order, lineages = Ls}) ->
    Tracers = maps:keys(maps:merge(Ls, Vs)),
    Sorted = lists:sort([{maps:get(T, Order, 0), T} || T <- Tracers]),
    [as_known(T, S) || {_, T} <- Sorted].

%% The one way a partition's verdict entry is set: its subscribers hear of it.
put_verdict(Tracer, Entry, S = #s{verdicts = Vs}) ->
    publish([Tracer], S#s{verdicts = Vs#{Tracer => Entry}}).

%% The entries that read otherwise now the session knows more (an incomplete trace, an
%% overload), though none was set (put_verdict/3 alone sets them): those Changed holds
%% of, to every subscriber. Nobody subscribed (the usual case): that is checked first, so
%% no walk of every partition's entry is made for nobody.
republish(_Changed, S = #s{subscribers = Subs}) when map_size(Subs) =:= 0 ->
    S;
republish(Changed, S = #s{verdicts = Vs}) ->
    publish([T || {T, E} <- maps:to_list(Vs), Changed(E)], S).

%% The entries of these tracers' partitions, as the result will list them, to every
%% subscriber.
publish(_Tracers, S = #s{subscribers = Subs}) when map_size(Subs) =:= 0 ->
    S;
publish(Tracers, S = #s{subscribers = Subs}) ->
    Entries = [as_known(T, S) || T <- Tracers],
    _ = [Pid ! {riarc_session_verdict, Tag, E} || {Pid, Tag} <- maps:to_list(Subs), E <- Entries],
    S.

%% A partition's entry as the session reads it now: its verdict, unless what the session
%% learnt since (an incomplete trace, a child on another node, an overload) says
%% otherwise.
as_known(Tracer, S = #s{incomplete = Inc, remote = Rem, overload = Over}) ->
    cut_short(untrusted(unfollowed(entry(Tracer, S), maps:get(Tracer, Rem, none)), Inc), Over).

%% A partition's entry: its verdict's, or (lineage kept, no verdict yet) the provisional
%% one, verdict none; with its lineage.
entry(Tracer, S = #s{lineages = Ls}) ->
    maps:merge(bare_entry(Tracer, S), maps:get(Tracer, Ls, #{})).

%% The verdict's entry, or, with none yet, one with verdict none for the partition's
%% process and MFA as announced.
bare_entry(Tracer, #s{verdicts = Vs, parts = Parts}) ->
    case Vs of
        #{Tracer := E} -> E;
        #{} ->
            {Proc, MFA} = maps:get(Tracer, Parts),
            riarc_result:entry(Proc, MFA, none, 0, undefined)
    end.

%% A monitor whose partition grew a child on another node before it reached a verdict
%% gave its verdict (or none) on a trace without that child's events: error, saying so
%% (an error of its own keeps its own reason).
unfollowed(E, none) ->
    E;
unfollowed(E = #{verdict := error}, _Info) ->
    E;
unfollowed(E = #{verdict := V}, Info) ->
    E#{verdict => error, reason => {remote_child, Info#{verdict_on_partial_trace => V}}}.

cut_short(E = #{verdict := none}, Over) when Over =/= undefined ->
    E#{verdict => inconclusive, reason => {overload, Over}};
cut_short(E, _Over) ->
    E.

%% A monitor that missed events of its own process gave a verdict on an unsound trace:
%% the verdict is error, saying so, rather than a false accept or reject.
untrusted(E = #{pid := P, verdict := V}, Inc) when is_map_key(P, Inc) ->
    E#{verdict => error, reason => {incomplete_trace, #{lost_events => maps:get(P, Inc),
                                                        verdict_on_partial_trace => V}}};
untrusted(E, _Inc) ->
    E.

grace(S = #s{stopping = true, grace = undefined, budget = #{time_ms := T}}) ->
    Ref = make_ref(),
    _ = erlang:send_after(min(T, ?GRACE_MS), self(), {riarc_grace, Ref}),
    S#s{grace = Ref};
grace(S) ->
    S.

alive_info(#s{tracers = T, token = Token, relay_held = Held}) ->
    Traced = maps:from_list([{Pid, procs_of(Pid, Token)} || Pid <- maps:keys(T)]),
    #{tracers => maps:keys(T), processes => lists:usort(lists:append(maps:values(Traced))),
      traced => Traced, relayed_waiting => Held}.

procs_of(Tracer, Token) ->
    case riarc_tracer:info(Tracer, Token, 1000) of
        {ok, #{gamma := G}} -> maps:keys(G);
        {error, timeout} -> []
    end.
