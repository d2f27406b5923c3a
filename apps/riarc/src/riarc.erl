%% @doc riarc: run an Erlang system under decentralised outline monitoring (RIARC) and
%% get a verdict for every monitored process, without changing the system's code.
%%
%% A Spec says which processes are monitored and by what (see {@link riarc_lambda} for the
%% MFA it is asked with, and {@link riarc_monitor} for monitors); events are described in
%% {@link riarc_event}.
%% ```
%% 1> Spec = fun({riarc_demo_pqr, _, _}) ->
%%                   {ok, fun M({exit, _, normal}) -> accept; M(_) -> M end};
%%              (_) -> undefined end.
%% 2> {ok, R} = riarc:run({riarc_demo_pqr, p, []}, Spec, #{timeout => 5000}).
%% 3> maps:get(verdicts, R).
%% [#{pid => <0.91.0>, mfa => {riarc_demo_pqr,p,[]}, verdict => accept, events => 5}, ...]
%% 4> maps:get(tracers, R).
%% #{peak => 3, spawned => 3}
%% '''
%% Long-running systems: `{ok, S} = riarc:start(MFA, Spec, Opts)', then `riarc:verdicts(S)'
%% at any time and `riarc:stop(S)' to stop monitoring (the system runs on).
%%
%% Options (all optional):
%% <ul>
%% <li>`timeout' (ms or infinity, default infinity): run/3 gives up after it, naming
%%     what is still alive;</li>
%% <li>`events' (default: what a Spec module's `trace_flags/0' says, as a compiled
%%     property file's does; else `[send, recv]'): the message events to trace; spawn and
%%     exit are always traced, since the instrumentation needs them itself;</li>
%% <li>`trace_patterns' (default: what a Spec module's `trace_patterns/0' says, as a
%%     compiled property file's does; else every message): which sent and received
%%     messages the VM traces at all, as `#{send => P, \'receive\' => P}' with P `true',
%%     `false' or a match specification (see riarc_trace_pattern). Node-global while the
%%     session runs: the VM traces the union of what the live sessions ask for;</li>
%% <li>`invariants' (default true): check invariants I1-I22 and report violations;</li>
%% <li>`log' (default false): also log verdicts through OTP logger;</li>
%% <li>`backend' (`auto', `route' or `evm', default auto): how tracers take processes
%%     over; see docs/core.md, "The takeover";</li>
%% <li>`explain' (default 8): a reject or error verdict carries an `explanation': the
%%     partition's last this-many events, the deciding one, the monitor's state; 0 for
%%     none;</li>
%% <li>`limits' (default `#{max_queue => 1000000, max_tracers => an eighth of the
%%     process limit, max_payload => 65536, policy => stop}'): a tracer's or a monitor's
%%     mailbox (max_queue), a tracer's memory (max_queue_bytes, default 1 GiB), live
%%     tracers (max_tracers), the session's events in all (max_events, default
%%     infinity; every policy stops at it); with policy `stop', at the first
%%     limit reached riarc detaches from the whole system; the result's `overload' says
%%     which, and partitions with no verdict yet get `inconclusive'; with policy `shed',
%%     a monitor that cannot keep up has its partition's events dropped and the verdict
%%     `inconclusive' with the counts (other limits stop as above); with policy
%%     `backpressure', that monitor's processes are suspended until it catches up, for
%%     at most max_suspend ms (default 1000) at a time, then shed; a message larger
%%     than max_payload bytes (external size, or `infinity') reaches monitors as
%%     `{riarc_truncated, Size}', and its partition's verdict from then on is
%%     `inconclusive' (docs/production.md);</li>
%% <li>`monitor_budget' (default `#{time_ms => 10000, reductions => 100000000,
%%     heap_words => 67108864}'): what one monitor step may take; a step over it gives
%%     its partition the verdict `error', reason `{monitor_budget, What}', and detaches
%%     that monitor alone (monitors run in their own processes: routing never waits for
%%     them);</li>
%% <li>`analysis' (`isolated' or `inline'; default: what a Spec module's `analysis/0'
%%     says, `inline' for a compiled property file's, else `isolated'; `isolated' when
%%     `monitor_budget' is given): where each partition's monitor runs. `isolated': in an
%%     analysis process of its own, under its step budget, so that a slow or looping
%%     monitor stalls nobody's routing. `inline': in its partition's tracer, at each
%%     event: no process per partition, no copy of each event (a quarter off the load
%%     driver's response time, two fifths and more where processes dominate,
%%     docs/evaluation.md), but no step budget, and a
%%     slow step holds up the events that tracer routes; for monitors
%%     whose steps are bounded and cheap, as a compiled property's are (guard tests and
%%     pattern matches). A monitor that crashes is an `error' either way;</li>
%% <li>`tracer_priority' (`low' or `normal', default low): the process priority of
%%     riarc's tracers and analysis processes. At `low' the system's own processes go
%%     first: on a loaded node the thousands of tracers of a large system do not take a
%%     share of the schedulers each, at the price of tracers that fall behind and meet
%%     the limits above sooner (riarc then detaches and says so: verdicts inconclusive,
%%     never an accept), and of monitor steps whose wall time includes a longer wait for
%%     a scheduler (`monitor_budget''s time_ms); docs/evaluation.md, "Issue 30", has
%%     what each costs;</li>
%% <li>`adopt' (a count or `infinity', the default): with monitors in their tracers
%%     (`analysis => inline'), how many partitions one tracer may adopt. A process whose
%%     Spec gives it a monitor of its own, spawned by a process a tracer traces, then
%%     stays with that tracer, its monitor run there (riarc_tracer_adopted): no tracer of
%%     its own to start, no takeover, no route. `0': a tracer for every partition, as in
%%     the RIARC paper, which spreads the analysis over more processes at the price of a
%%     tracer and a takeover per partition (docs/evaluation.md, "Adoption"). A partition
%%     that spans nodes (option `follow') always has a tracer of its own;</li>
%% <li>`node' (default this node): run, start or attach on that node (riarc_remote);</li>
%% <li>`monitored_elsewhere' (default `[]'): nodes where a session of their own monitors
%%     the processes started there (`attach(new_processes, Spec, #{node => N})'). A
%%     monitored process's start of a process on another node is always reported (this
%%     node's tracing cannot follow it, docs/production.md): the run's error
%%     `{riarc_session, {remote_child, ...}}' when Λ gives the child a monitor of its
%%     own, unless the child's node is in this list or followed (`follow'); an
%%     `error' verdict for the parent's partition when Λ puts the child in it, whatever
%%     this list says;</li>
%% <li>`follow' (default `[]'): nodes the system starts processes on, where riarc follows
%%     it: before the system starts, a session on each (`attach(new_processes, ...)'
%%     there, riarc_remote) monitors every process started there from elsewhere, and this
%%     session keeps the book of which of them the system started (riarc_follow). The
%%     result lists their partitions (and those they started there) with `node' beside
%%     the others; a run ends once each such child is accounted for; a child its node's
%%     session never saw, or whose node went down, is an `error'. A child Λ puts in its
%%     parent's partition is followed into it: its events there, and its ⊥ descendants',
%%     are relayed to that partition's tracer here, which ends only after them (one
%%     partition spanning nodes, docs/production.md); one whose relayed trace is cut
%%     (its node down, its tracer there crashed, never seen there) makes that partition
%%     an `error'.
%%     With `node', the followers are started from the caller's node, which must reach
%%     the followed nodes, and this node cannot be followed;</li>
%% <li>`follow_joining' (default false): follow as under `follow' every node that
%%     connects during the run too (one the system starts with `peer', say). When such a
%%     node comes up, the system's processes on this node are held (suspended, for
%%     `limits => #{max_join_hold => Ms}' at most, default 5000) while riarc starts its
%%     session there, once the node has booted, so that the system's first start there
%%     most likely comes after it (a race riarc narrows, cannot close); a child that got
%%     there first is an error of the run (`{riarc_session_dist, {before_follow, ...}}'),
%%     never followed from its middle (docs/production.md, "Nodes that join during the
%%     run");</li>
%% <li>`follow_grace' (ms or infinity, default 30000): with `follow', how long the run
%%     waits, once everything else is over, for an expected child to show on its node:
%%     one that does not (its start failed there, after the call this node traced, or its
%%     node's session is that far behind) is then an `error',
%%     `{riarc_follow, {not_followed, ...}}';</li>
%% <li>`perturb' (µs, default undefined): testing only, make tracers randomly slow;
%%     `{gate, Pid}' holds each new tracer before its takeover until Pid lets it go.</li>
%% </ul>
-module(riarc).

-export([run/3, start/3, attach/3, verdicts/1, settle/2, stop/1, alive/1]).
-export([format_error/1, format_verdict/1]).
%% Shared with the other instrumentation modes (riarc_central, riarc_inline).
-export([validate/3]).
%% riarc_remote's entry points on the remote node.
-export([start_for/4, attach_for/4]).
%% Called from a session on another node that follows its system (option follow).
-export([followers/4]).

-export_type([result/0, verdict_entry/0, opts/0, error_reason/0, target/0]).

-type verdict_entry() :: riarc_result:verdict_entry().
-type result() :: riarc_result:t().
-type error_reason() :: {undef, {module(), atom(), arity()}} | {bad_spec, term()}
                      | {bad_mfa, term()} | {bad_opts, term()} | {bad_option, atom(), term()}
                      | {bad_target, term()} | {noproc, term()} | {not_registered, atom()}
                      | {not_a_supervisor, term()} | {not_running, atom()} | {no_process, term()}
                      | {inline_budget, map()}
                      | {no_distribution, node | follow | follow_joining}.
%% What attach/3 watches: a process, a registered name, a supervision tree (as it is and as
%% it grows), or every process of a running application.
-type target() :: pid() | atom() | {supervisor, pid() | atom()} | {application, atom()}
                | new_processes.
-type opts() :: #{timeout => timeout(), events => [send | recv], invariants => boolean(),
                  trace_patterns => riarc_trace_pattern:patterns(),
                  log => boolean(), perturb => undefined | pos_integer() | {gate, pid()},
                  backend => auto | route | evm, explain => non_neg_integer(),
                  limits => #{max_queue => pos_integer(), max_tracers => pos_integer(),
                              max_queue_bytes => pos_integer() | infinity,
                              max_events => pos_integer() | infinity,
                              max_payload => pos_integer() | infinity,
                              policy => stop | shed | backpressure, max_suspend => pos_integer(),
                              max_join_hold => pos_integer()},
                  monitor_budget => #{time_ms => pos_integer(),
                                      reductions => pos_integer() | infinity,
                                      heap_words => pos_integer()},
                  analysis => isolated | inline, tracer_priority => low | normal,
                  adopt => non_neg_integer() | infinity,
                  node => node(),
                  monitored_elsewhere => [node()], follow => [node()],
                  follow_joining => boolean(), follow_grace => timeout(),
                  %% Set by riarc itself on a followed node's session, never by the user:
                  %% where a child Λ puts in its remote parent's partition sends its events.
                  relay_to => {pid(), reference()}}.

%% What a new_processes session's root, the pseudo-process standing for every process
%% spawned after the attach point, is called as Λ would see it.
-define(NEW_MFA, {riarc, new_processes, []}).
%% How long a session on another node waits for this node to start its followers: each
%% loads riarc onto its node (riarc_remote's own bounds apply within).
-define(FOLLOWERS_MS, 120000).


%% @doc Runs {M, F, Args} as the root of a system under instrumentation and returns once
%% every system process has exited and every tracer is gone. With `node => Node', the
%% system and its tracers run on Node (M must be loadable there; riarc loads its own
%% modules and the Spec's, see {@link riarc_remote}) and the result comes back here;
%% `timeout' is counted here.
-spec run({module(), atom(), list()}, riarc_lambda:spec(), opts()) ->
    {ok, result()} | {error, term()}.
run(MFA, Spec, Opts) ->
    case start(MFA, Spec, Opts) of
        {ok, Session} ->
            riarc_session:finish(Session, maps:get(timeout, Opts, maps:get(timeout, riarc_opts:defaults())));
        Error -> Error
    end.

%% @doc Starts monitoring a system and returns at once with the session's handle. With
%% `node => Node', on Node as for run/3: the handle is riarc_remote's local proxy of the
%% session there, and verdicts/1, alive/1 and stop/1 work on it as on a local one.
-spec start({module(), atom(), list()}, riarc_lambda:spec(), opts()) ->
    {ok, pid()} | {error, term()}.
start(MFA, Spec, Opts) ->
    with_distribution(Opts, fun(Dist) -> start_with(Dist, MFA, Spec, Opts) end).

start_with(Dist, MFA, Spec, Opts = #{node := Node}) when Node =/= node() ->
    case follow_from_here(Spec, Opts) of
        {ok, ROpts} -> Dist:start(Node, MFA, Spec, ROpts);
        Error -> Error
    end;
start_with(_Dist, MFA, Spec, Opts) when is_map(Opts) ->
    start_for(self(), MFA, Spec, maps:remove(node, Opts));
start_with(_Dist, MFA, Spec, Opts) ->
    start_for(self(), MFA, Spec, Opts).

%% @private start/3 on this node for Owner: the session ends when Owner does (Owner is
%% riarc_remote's proxy when the caller is on another node).
-spec start_for(pid(), {module(), atom(), list()}, riarc_lambda:spec(), opts()) ->
    {ok, pid()} | {error, term()}.
start_for(Owner, MFA, Spec, Opts) ->
    case validate(MFA, Spec, Opts) of
        {ok, Full = #{events := Events}} ->
            {Root, Backend} = backend(maps:get(backend, Full), MFA, {Events, maps:get(trace_patterns, Full)}),
            Roots = [{Root, MFA, {init, Root, self(), MFA}}],
            SOpts = session_opts(Full#{backend => Backend}, Spec),
            case session(riarc_session:start(Owner, Roots, Spec, SOpts)) of
                {ok, Session} -> {ok, Session};
                {error, Reason} ->
                    %% The root never ran (it was not traced): nothing of the system
                    %% happened, so it is ended rather than left waiting.
                    exit(Root, kill),
                    {error, Reason}
            end;
        Error -> Error
    end.

%% @doc Attaches to processes that are already running and monitors them from this point
%% on, without starting anything: each process of the target is a root of the monitored
%% system, with its own tracer; whatever they spawn from now on follows as under run/3.
%% A monitor of an attached process first gets `{attached, Pid, MFA}' (MFA as Λ sees it,
%% riarc_lambda:running_mfa/1), then the process's events from the attach point: the
%% suffix of its trace, complete and in order. `stop/1' detaches and leaves no process
%% traced. Opts as for start/3 (`timeout' does not apply), and `node => Node': attach on
%% that node ({@link riarc_remote}); the session returned is the remote one, and
%% verdicts/1, alive/1 and stop/1 work on it as on a local one.
%%
%% Target `new_processes': every process spawned from the attach point on, by anyone but
%% riarc itself, is a child of the monitored system from its first event (its monitor
%% opens with `{init, Pid, Parent, MFA}' as under run/3); the processes alive at the
%% attach point are not watched. Traced with process tracers ({@link riarc_backend_new_processes}),
%% whatever `backend' says.
-spec attach(target(), riarc_lambda:spec(), opts()) -> {ok, pid()} | {error, term()}.
attach(Target, Spec, Opts) ->
    with_distribution(Opts, fun(Dist) -> attach_with(Dist, Target, Spec, Opts) end).

attach_with(Dist, Target, Spec, Opts = #{node := Node}) when Node =/= node() ->
    case follow_from_here(Spec, Opts) of
        {ok, ROpts} -> Dist:attach(Node, Target, Spec, ROpts);
        Error -> Error
    end;
attach_with(_Dist, Target, Spec, Opts) when is_map(Opts) ->
    attach_for(self(), Target, Spec, maps:remove(node, Opts));
attach_with(_Dist, _Target, _Spec, Opts) ->
    {error, {?MODULE, {bad_opts, Opts}}}.

%% Start with the module implementing distribution (riarc_distribution) when the
%% options need one (`node', `follow', `follow_joining'), else with `none'; without one,
%% those options are an error.
with_distribution(Opts, Start) when is_map(Opts) ->
    case riarc_distribution:needed(Opts) of
        none -> Start(none);
        Option ->
            case riarc_distribution:module() of
                {ok, Dist} -> Start(Dist);
                none -> {error, {?MODULE, {no_distribution, Option}}}
            end
    end;
with_distribution(_Opts, Start) ->
    Start(none).

%% @private attach/3 on this node for Owner: the session ends when Owner does (Owner is
%% riarc_remote's proxy when the caller is on another node).
-spec attach_for(pid(), target(), riarc_lambda:spec(), opts()) -> {ok, pid()} | {error, term()}.
attach_for(Owner, Target, Spec, Opts) ->
    case {riarc_lambda:valid_spec(Spec), valid_opts(maps:merge(riarc_opts:defaults(), Opts)), targets(Target)} of
        {false, _, _} -> {error, {?MODULE, {bad_spec, Spec}}};
        {_, {error, _} = E, _} -> E;
        {_, _, {error, _} = E} -> E;
        {true, ok, {ok, []}} -> {error, {?MODULE, {no_process, Target}}};
        {true, ok, {ok, new_processes}} ->
            Full = #{events := Events} = full_opts(Spec, Opts),
            Roots = [{new_processes, ?NEW_MFA, {attached, new_processes, ?NEW_MFA}}],
            Make = fun(Session) -> riarc_backend_new_processes:new(Events, Session) end,
            %% The backend holds riarc's patterns with every message kept: the process
            %% tracers take every event of the kinds asked for.
            SOpts = session_opts(Full#{backend => Make}, Spec),
            session(riarc_session:start(Owner, Roots, not_own(Spec), SOpts));
        {true, ok, {ok, Pids}} ->
            Full = #{events := Events} = full_opts(Spec, Opts),
            Roots = [{P, MFA, {attached, P, MFA}} || P <- Pids,
                                                     MFA <- [riarc_lambda:running_mfa(P)],
                                                     MFA =/= undefined],
            SOpts = session_opts(Full#{backend => attach_backend(Full, {Events, maps:get(trace_patterns, Full)})},
                                 Spec),
            session(riarc_session:start(Owner, Roots, Spec, SOpts))
    end.

%% A session on another node (`node') that follows its system (`follow'): its followers
%% are started from this node, whose code riarc_remote loads onto the followed nodes (on
%% that node, riarc's modules are binaries riarc_remote loaded, with no object code to
%% pass on), with the caller's Spec (the session there has riarc_remote's wrapping of
%% it, which reports to this node's proxy of that session). Following this node itself
%% is not taken: its session would run where the caller does, not where the system is.
follow_from_here(Spec, Opts) ->
    case follows(Opts) of
        true ->
            case riarc_opts:check(maps:with([follow, follow_joining], Opts)) of
                ok -> {ok, (maps:remove(node, Opts))#{follow_from => {node(), Spec}}};
                Bad -> {error, {?MODULE, Bad}}
            end;
        false ->
            {ok, maps:remove(node, Opts)}
    end.

%% Whether the options ask for the system to be followed onto other nodes.
follows(Opts) ->
    maps:get(follow, Opts, []) =/= [] orelse maps:get(follow_joining, Opts, false) =:= true.

%% What the session takes of the options: option `follow' becomes the start of the
%% sessions that follow the system onto those nodes, which the session makes before the
%% system starts and owns (riarc_remote:follower/4), from the caller's node
%% (follow_from_here/2).
session_opts(Full, Spec) ->
    SOpts = maps:without([timeout, events, trace_patterns, follow, follow_from], Full),
    case follows(Full) of
        false -> SOpts;
        true ->
            FOpts = maps:with([events, invariants, log, explain, analysis, limits, monitor_budget,
                               tracer_priority, adopt], Full),
            From = maps:get(follow_from, Full, here),
            %% Relay: where the followers send the events of a child Λ puts in its
            %% parent's partition (one partition spanning nodes), with the session's secret.
            %% The session starts them for the nodes of `follow' before the system starts,
            %% and for each node that joins later (follow_joining).
            SOpts#{follow_nodes => maps:get(follow, Full, []),
                   followers => fun(Owner, Relay, Nodes) ->
                                        followers_from(From, Nodes, Spec, FOpts#{relay_to => Relay}, Owner)
                                end}
    end.

followers_from(here, Nodes, Spec, FOpts, Owner) ->
    followers(Nodes, Spec, FOpts, Owner);
followers_from({From, CallerSpec}, Nodes, _Spec, FOpts, Owner) ->
    try erpc:call(From, ?MODULE, followers, [Nodes, CallerSpec, FOpts, Owner], ?FOLLOWERS_MS)
    catch error:{erpc, Why} -> {error, {riarc_remote, {rpc, From, Why}}}
    end.

%% @private The sessions following Owner's system onto Nodes, started here: one per
%% node; the first that cannot start is the error (those started are Owner's, and end
%% with it).
-spec followers([node()], riarc_lambda:spec(), opts(), pid()) ->
    {ok, [{node(), pid(), reference()}]} | {error, term()}.
followers(Nodes, Spec, FOpts, Owner) ->
    followers(Nodes, Spec, FOpts, Owner, []).

followers(Nodes, Spec, FOpts, Owner, Acc) ->
    case riarc_distribution:module() of
        {ok, Dist} -> followers(Dist, Nodes, Spec, FOpts, Owner, Acc);
        none -> {error, {?MODULE, {no_distribution, follow}}}
    end.

followers(_Dist, [], _Spec, _FOpts, _Owner, Acc) ->
    {ok, lists:reverse(Acc)};
followers(Dist, [Node | Nodes], Spec, FOpts, Owner, Acc) ->
    case Dist:follower(Node, Spec, FOpts, Owner) of
        {ok, F} -> followers(Dist, Nodes, Spec, FOpts, Owner, [F | Acc]);
        {error, _} = E -> E
    end.

%% The Spec of a new_processes session: the pseudo-process that stands for "every process
%% spawned from now on" and riarc's own processes are never monitored.
not_own(Spec) ->
    fun(MFA) ->
            case MFA =:= ?NEW_MFA orelse riarc_backend_new_processes:is_own(MFA) of
                true -> undefined;
                false when is_atom(Spec) -> Spec:spec(MFA);
                false -> Spec(MFA)
            end
    end.

attach_backend(#{backend := evm}, {Events, Patterns}) ->
    fun(Session) -> riarc_backend_evm:new(Events, Patterns, Session) end;
attach_backend(#{backend := B}, {Events, Patterns} = Trace) when B =:= route; B =:= auto ->
    case B =:= route orelse riarc_route:available() of
        true -> fun(Session) -> riarc_backend_route:new(Events, Patterns, Session) end;
        false -> attach_backend(#{backend => evm}, Trace)
    end.

%% The processes of a target, alive now; riarc's own are never among them.
targets(new_processes) ->
    {ok, new_processes};
targets(Pid) when is_pid(Pid), node(Pid) =:= node() ->
    case is_process_alive(Pid) of
        true -> {ok, [Pid]};
        false -> {error, {?MODULE, {noproc, Pid}}}
    end;
targets({supervisor, Ref}) ->
    case targets(Ref) of
        {ok, [Sup]} ->
            try {ok, tree(Sup)}
            catch exit:_ -> {error, {?MODULE, {not_a_supervisor, Ref}}}
            end;
        {error, {?MODULE, {_, _}}} -> {error, {?MODULE, {not_a_supervisor, Ref}}}
    end;
targets({application, App}) when is_atom(App) ->
    case application_controller:get_master(App) of
        undefined -> {error, {?MODULE, {not_running, App}}};
        Master ->
            {ok, [P || P <- erlang:processes(),
                       erlang:process_info(P, group_leader) =:= {group_leader, Master}]}
    end;
targets(Name) when is_atom(Name) ->
    case whereis(Name) of
        undefined -> {error, {?MODULE, {not_registered, Name}}};
        Pid -> targets(Pid)
    end;
targets(Other) ->
    {error, {?MODULE, {bad_target, Other}}}.

%% A supervisor and everything below it, supervisors first.
tree(Sup) ->
    Children = supervisor:which_children(Sup),
    [Sup | lists:append([case Type of
                             supervisor -> tree(Pid);
                             worker -> [Pid]
                         end || {_, Pid, Type, _} <- Children, is_pid(Pid)])].

%% A session whose root could not be traced ends here, and its error is run/3's.
session({ok, Session}) ->
    case riarc_session:launched(Session) of
        ok -> {ok, Session};
        {error, {riarc_session, {down, _}}} = E -> E;
        {error, _} = E -> {ok, _} = riarc_session:stop(Session), E
    end;
session({error, _} = E) ->
    E.

%% The routing table (riarc_backend_route) when its NIF is loaded: its takeover makes a
%% cut that loses nothing under any load. The process tracers' backend (riarc_backend_evm)
%% otherwise, or when asked for.
backend(auto, MFA, Trace) ->
    backend(case riarc_route:available() of true -> route; false -> evm end, MFA, Trace);
backend(route, MFA, {Events, Patterns}) ->
    {riarc_backend_route:spawn_paused(MFA),
     fun(Session) -> riarc_backend_route:new(Events, Patterns, Session) end};
backend(evm, MFA, {Events, Patterns}) ->
    {riarc_backend_evm:spawn_paused(MFA),
     fun(Session) -> riarc_backend_evm:new(Events, Patterns, Session) end}.

%% @doc The verdicts reached so far by a session started with start/3.
-spec verdicts(pid()) -> [verdict_entry()].
verdicts(Session) -> riarc_session:verdicts(Session).

%% @doc Stops monitoring; the system runs on untraced. Returns the result so far.
-spec stop(pid()) -> {ok, result()} | {error, {riarc_session, not_owner}}.
stop(Session) -> riarc_session:stop(Session).

%% @doc Waits, up to Timeout ms, until the session's tracers have handed on every event
%% they hold for others, so that a stop/1 right after cuts no partition short of what
%% the system did before (a partition cut short reads inconclusive). For a stop at a
%% quiet point: the end of a test, say, after `erlang:trace_delivered(all)'.
-spec settle(pid(), timeout()) ->
    ok | {error, {riarc_session, not_owner | {unsettled, non_neg_integer()}}}.
settle(Session, Timeout) -> riarc_session:settle(Session, Timeout).

%% @doc The live tracers of a session and the processes they trace: all of them, and
%% (`traced') tracer by tracer; with `follow', how many events relayed from followed
%% nodes wait for a tracer here to claim them (`relayed_waiting', docs/production.md).
-spec alive(pid()) -> #{tracers := [pid()], processes := [term()],
                        traced := #{pid() => [term()]},
                        relayed_waiting => non_neg_integer()}.
alive(Session) -> riarc_session:alive(Session).

%% @private Checks run/3's arguments and fills in the default options.
-spec validate(term(), term(), term()) -> {ok, map()} | {error, {riarc, error_reason()}}.
validate({M, F, A}, Spec, Opts) when is_atom(M), is_atom(F), is_list(A), is_map(Opts) ->
    _ = code:ensure_loaded(M),
    Full = full_opts(Spec, Opts),
    case {erlang:function_exported(M, F, length(A)), riarc_lambda:valid_spec(Spec),
          valid_opts(Full)} of
        {false, _, _} -> {error, {?MODULE, {undef, {M, F, length(A)}}}};
        {_, false, _} -> {error, {?MODULE, {bad_spec, Spec}}};
        {_, _, {error, _} = E} -> E;
        {true, true, ok} -> {ok, Full}
    end;
validate(MFA, _Spec, Opts) when is_map(Opts) -> {error, {?MODULE, {bad_mfa, MFA}}};
validate(_MFA, _Spec, Opts) -> {error, {?MODULE, {bad_opts, Opts}}}.

%% The options in force: the API's defaults, what a Spec module sets, what the caller says.
full_opts(Spec, Opts) ->
    maps:merge(riarc_opts:defaults(), riarc_opts:with_spec(riarc_lambda:spec_defaults(Spec), Opts)).

valid_opts(Opts) ->
    case riarc_opts:check(Opts) of
        ok -> ok;
        Bad -> {error, {?MODULE, Bad}}
    end.

%% @doc A sentence for an error riarc returned: `{error, {Module, Reason}}' from any of
%% riarc's modules (the module that returned it formats it), or a reason of riarc's own.
-spec format_error({module(), term()} | error_reason()) -> string().
format_error({undef, {M, F, Arity}}) ->
    flat("the system's entry point ~s:~s/~b does not exist (is the module on the code path?)",
         [M, F, Arity]);
format_error({bad_spec, Spec}) ->
    flat("~0tp is not a Spec: give a fun of arity 1 or a module exporting spec/1", [Spec]);
format_error({bad_mfa, MFA}) ->
    flat("~0tp is not a {Module, Function, Args} entry point", [MFA]);
format_error({bad_opts, Opts}) ->
    flat("options must be a map, not ~0tp", [Opts]);
format_error({bad_option, K, V}) ->
    flat("option ~0tp has the invalid value ~0tp", [K, V]);
format_error({inline_budget, B}) ->
    flat("monitor_budget ~0tp cannot be kept with analysis => inline: a step budget is kept "
         "only for a monitor in a process of its own (analysis => isolated)", [B]);
format_error({bad_target, T}) ->
    flat("~0tp is not something to attach to: give a pid, a registered name, "
         "{supervisor, Ref}, {application, App} or new_processes", [T]);
format_error({noproc, P}) ->
    flat("process ~0tp is not alive", [P]);
format_error({not_registered, N}) ->
    flat("no process is registered as ~0tp", [N]);
format_error({not_a_supervisor, R}) ->
    flat("~0tp is not a running supervisor", [R]);
format_error({not_running, App}) ->
    flat("application ~0tp is not running", [App]);
format_error({no_process, T}) ->
    flat("~0tp has no process to attach to", [T]);
format_error({no_distribution, Option}) ->
    flat("option ~0tp needs riarc's distribution (the riarc_dist application), which is not "
         "on the code path", [Option]);
format_error({?MODULE, Reason}) ->
    format_error(Reason);
format_error(Other) ->
    riarc_error:format(Other).

%% @doc One line for a verdict: `<pid> <mfa> <verdict>'.
-spec format_verdict(verdict_entry()) -> string().
format_verdict(Entry) -> riarc_result:format_verdict(Entry).

flat(Fmt, Args) -> lists:flatten(io_lib:format(Fmt, Args)).
