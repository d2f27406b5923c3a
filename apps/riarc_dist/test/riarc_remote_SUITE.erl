%% riarc attached to another node (riarc:attach/3 with `node => Node'): a peer node on
%% this machine runs Debian's poolboy with a pool of workers (riarc_pool_worker) under
%% load from this node; riarc loads itself there, watches the pool's supervision tree
%% with a property about the workers, detaches, and leaves the peer as it found it: no
%% trace flag on any process, none of riarc's modules loaded, the process count back.
%% A session killed, a tracer killed, the node stopped or the link cut mid-run gives
%% error verdicts, never a silent accept. riarc:run/3 and riarc:start/3 with `node =>
%% Node' run a system there and bring its result back, with the same clean-up.
-module(riarc_remote_SUITE).

-include_lib("stdlib/include/assert.hrl").
-include_lib("common_test/include/ct.hrl").

-export([all/0, groups/0, suite/0, init_per_testcase/2, end_per_testcase/2]).
-export([remote_forgery/1, victim/0]).
-export([poolboy_attach_detach/1, poolboy_bug_rejected/1, new_processes_remote/1,
         session_killed/1, tracer_killed/1, node_stopped/1, link_cut/1,
         run_on_node/1, run_timeout_on_node/1, start_stop_on_node/1, run_undef_on_node/1,
         remote_spawns_named/1, remote_spawns_are_calls/1, remote_child_in_partition/1,
         remote_child_unmonitored/1, remote_patterns/1, follow_children/1, follow_arguments/1,
         follow_node_down/1,
         follow_timeout/1, follow_errors/1, follow_proxy_killed/1, follow_from_node/1,
         follow_tracer_killed/1, follow_failed_start/1, span_nodes/1, span_node_down/1,
         span_failed_start/1, span_tracer_killed/1, join_holds_and_finds/1, join_nodes/1, join_nodes_loaded/1,
         join_nodes/0, join_nodes_loaded/0]).

-define(POOL, riarc_pool).
-define(SIZE, 4).

-spec all() -> [atom() | {group, atom()}].
all() -> [run_on_node, poolboy_bug_rejected, remote_child_in_partition, follow_children,
          follow_arguments, follow_node_down]
    ++ riarc_test_tier:slow_groups([distributed, loaded]).

%% The full tier's cases (make test-all): riarc_test_tier. `loaded' runs with the
%% schedulers spinning.
-spec groups() -> [{atom(), list(), [atom()]}].
groups() -> [{distributed, [], [remote_forgery, run_undef_on_node, start_stop_on_node, session_killed,
                 poolboy_attach_detach, new_processes_remote, tracer_killed,
                 node_stopped, link_cut, run_timeout_on_node, remote_spawns_named, remote_spawns_are_calls,
                 remote_child_unmonitored, remote_patterns, follow_timeout,
                 follow_errors, follow_proxy_killed, follow_from_node,
                 follow_tracer_killed, follow_failed_start, span_node_down,
                 span_failed_start, span_tracer_killed, join_holds_and_finds,
                 join_nodes]},
            {loaded, [], [span_nodes, join_nodes_loaded]}].

-spec suite() -> list().
suite() -> [{timetrap, {minutes, 3}}].

%% A fresh peer per case, running a pool of ?SIZE workers.
-spec init_per_testcase(atom(), list()) -> list().
init_per_testcase(_Case, Config) ->
    [Poolboy] = filelib:wildcard(filename:join(code:lib_dir(), "poolboy-*/ebin")),
    {Peer, Node} = riarc_test_peer:start(riarc_remote, ["-pa", Poolboy]),
    %% The system under test's own code, on the peer.
    {M, Bin, File} = code:get_object_code(riarc_pool_worker),
    {module, M} = erpc:call(Node, code, load_binary, [M, File, Bin]),
    {ok, Pool} = erpc:call(Node, poolboy, start,
                           [[{name, {local, ?POOL}}, {worker_module, riarc_pool_worker},
                             {size, ?SIZE}, {max_overflow, 0}], []]),
    [{peer, Peer}, {node, Node}, {pool, Pool} | Config].

-spec end_per_testcase(atom(), list()) -> ok.
end_per_testcase(_Case, Config) ->
    catch peer:stop(proplists:get_value(peer, Config)),
    ok.

%% The pool's supervisor (poolboy_sup, linked to the pool) and its workers.
pool_sup(Node, Pool) ->
    {links, Links} = erpc:call(Node, erlang, process_info, [Pool, links]),
    [Sup] = [P || P <- Links, is_pid(P),
                  {dictionary, D} <- [erpc:call(Node, erlang, process_info, [P, dictionary])],
                  lists:member({'$initial_call', {supervisor, poolboy_sup, 1}}, D)],
    Sup.

workers(Node, Sup) ->
    [W || {_, W, worker, _} <- erpc:call(Node, supervisor, which_children, [Sup])].

%% The property about the workers: every `{double, N}' call is answered 2N; accept after
%% three answers, reject at a wrong one.
worker_spec() ->
    fun({riarc_pool_worker, init, _}) -> {ok, doubles(#{}, 0)};
       (_) -> undefined
    end.
doubles(_Asked, 3) -> accept;
doubles(Asked, Done) ->
    fun({recv, _, {'$gen_call', {_, Tag}, {Op, N}}}) when Op =:= double; Op =:= double_wrong ->
            doubles(Asked#{Tag => N}, Done);
       ({send, _, _, {Tag, Reply}}) when is_map_key(Tag, Asked) ->
            case Reply =:= 2 * maps:get(Tag, Asked) of
                true -> doubles(maps:remove(Tag, Asked), Done + 1);
                false -> reject
            end;
       (_) -> doubles(Asked, Done)
    end.

%% A property that never decides: every partition is open while the run goes on.
open_spec() ->
    fun({riarc_pool_worker, init, _}) -> {ok, fun M(_) -> M end};
       (_) -> undefined
    end.

%% Clients on this node, Calls transactions each, through the peer's pool.
load(Node, Clients, Calls, Op) ->
    Ps = [spawn_monitor(fun() ->
                                [?assertEqual(2 * I, poolboy:transaction({?POOL, Node},
                                     fun(W) -> gen_server:call(W, {Op, I}) end) - wrong(Op))
                                 || I <- lists:seq(1, Calls)]
                        end) || _ <- lists:seq(1, Clients)],
    [receive {'DOWN', R, process, P, Why} -> {P, Why} end || {P, R} <- Ps].

wrong(double) -> 0;
wrong(double_wrong) -> 1.

%% No process of the node has a trace flag, and new processes get none.
untraced(Node) ->
    ?assertEqual(#{processes => [], new_processes => []}, riarc_test_peer:traced(Node)).

%% None of riarc's modules (nor the Spec's, this suite) is loaded there any more.
unloaded(Node) ->
    Mods = riarc_remote:node_modules(fun worker_spec/0),
    ?assertEqual([], [M || M <- Mods, erpc:call(Node, code, is_loaded, [M]) =/= false]),
    ?assertEqual(false, lists:keymember(riarc, 1, erpc:call(Node, application, loaded_applications, []))).

poolboy_attach_detach(Config) ->
    Node = ?config(node, Config),
    Sup = pool_sup(Node, ?config(pool, Config)),
    Workers = workers(Node, Sup),
    Before = erpc:call(Node, erlang, processes, []),
    {ok, S} = riarc:attach({supervisor, Sup}, worker_spec(), #{node => Node}),
    ?assertEqual(Node, node(hd(maps:get(tracers, riarc:alive(S))))),
    ?assert(erpc:call(Node, riarc_route, available, [])),
    Exits = load(Node, 8, 20, double),
    ?assertEqual([normal], lists:usort([Why || {_, Why} <- Exits])),
    {ok, #{verdicts := Vs, violations := []}} = riarc:stop(S),
    %% Every worker was asked often enough (160 calls over 4) to be accepted.
    ?assertEqual(lists:sort(Workers), lists:sort([P || #{pid := P} <- Vs])),
    ?assertEqual([accept], lists:usort([V || #{verdict := V} <- Vs])),
    untraced(Node),
    unloaded(Node),
    %% Process count back: no process alive now that was not alive before the attach
    %% (the erpc process that lists them is gone by the time it is looked at).
    After = erpc:call(Node, erlang, processes, []),
    ?assertEqual([], [P || P <- After -- Before, erpc:call(Node, erlang, is_process_alive, [P])]),
    ?assert(length(After) =< length(Before)).

%% A worker that answers wrongly is rejected, from the remote node's tracers.
poolboy_bug_rejected(Config) ->
    Node = ?config(node, Config),
    Sup = pool_sup(Node, ?config(pool, Config)),
    {ok, S} = riarc:attach({supervisor, Sup}, worker_spec(), #{node => Node}),
    [{_, normal}] = load(Node, 1, 1, double_wrong),
    {ok, #{verdicts := Vs}} = riarc:stop(S),
    ?assertEqual(1, length([x || #{verdict := reject} <- Vs])),
    untraced(Node),
    unloaded(Node).

%% new_processes on the peer: workers started there after the attach point (the pool's
%% overflow is 0, so a second pool is started) are watched from their first event.
new_processes_remote(Config) ->
    Node = ?config(node, Config),
    {ok, S} = riarc:attach(new_processes, worker_spec(), #{node => Node}),
    [] = riarc_remote:subscribe(S),
    {ok, _} = erpc:call(Node, poolboy, start,
                        [[{name, {local, riarc_pool2}}, {worker_module, riarc_pool_worker},
                          {size, 2}, {max_overflow, 0}, {strategy, fifo}], []]),
    [?assertEqual(2 * I, poolboy:transaction({riarc_pool2, Node},
                                             fun(W) -> gen_server:call(W, {double, I}) end))
     || I <- lists:seq(1, 10)],
    %% The verdicts as they are reached (a tracer that has not taken its worker over yet
    %% when stop/1 comes would end it with no verdict: it drops what it held).
    [receive {riarc_verdict, S, #{verdict := accept}} -> ok after 60000 -> error(no_verdict) end
     || _ <- [1, 2]],
    {ok, R = #{verdicts := Vs}} = riarc:stop(S),
    ?assertEqual([], maps:get(violations, R)),
    ?assertEqual([accept, accept], [V || #{verdict := V} <- Vs]),
    ?assert(lists:all(fun(#{mfa := {riarc_pool_worker, init, [_]}}) -> true end, Vs)),
    untraced(Node),
    unloaded(Node).

%% Attached with a property that never decides; returns the session, its partitions
%% known to the proxy, and the remote tracers.
attached_open(Config) ->
    Node = ?config(node, Config),
    Sup = pool_sup(Node, ?config(pool, Config)),
    {ok, S} = riarc:attach({supervisor, Sup}, open_spec(), #{node => Node}),
    Parts = wait_partitions(S, ?SIZE),
    #{tracers := Tracers} = riarc:alive(S),
    {S, Parts, Tracers}.

%% The proxy learns of each partition from its first event, a message from the remote
%% tracer: it answers once it knows N of them.
wait_partitions(S, N) -> riarc_remote:partitions(S, N, 60000).

all_error(S, Reason) ->
    Vs = riarc:verdicts(S),
    ?assertEqual(?SIZE, length(Vs)),
    [?assertMatch(#{verdict := error, reason := Reason}, V) || V <- Vs],
    Vs.

await_down(Pids) ->
    Refs = [monitor(process, P) || P <- Pids],
    [receive {'DOWN', R, process, _, _} -> ok end || R <- Refs].

%% Forgeries from another node of the cluster (a process on the peer): a verdict, a trace
%% event, a routed packet with a wrong token and a stop from a stranger, each sent to the
%% session or its tracer here. None changes the verdict; each is counted, and the exit
%% status is 1 (issue 29; riarc_trust_tests forges every tag locally).
remote_forgery(Config) ->
    Node = ?config(node, Config),
    Spec = fun({?MODULE, victim, []}) ->
                   {ok, fun M({exit, _, normal}) -> accept; M({exit, _, _}) -> reject; M(_) -> M end}
           end,
    {ok, S} = riarc:start({?MODULE, victim, []}, Spec, #{backend => route, analysis => isolated}),
    #{tracers := [T], processes := [Victim]} = riarc:alive(S),
    Send = fun(To, Msg) -> erpc:call(Node, erlang, send, [To, Msg]) end,
    _ = Send(S, {riarc_s, make_ref(), {riarc_verdict, T, Victim, {?MODULE, victim, []}, accept, undefined, 1}}),
    _ = Send(T, {trace, Victim, exit, normal}),
    _ = Send(T, {riarc_t, make_ref(), {riarc_rtd, T, {evt, {exit, Victim, normal}}}}),
    ?assertEqual({error, {riarc_session, not_owner}}, erpc:call(Node, gen_server, call, [S, stop])),
    %% Race: the crash's events must not overtake the forgeries at the tracer. The peer's
    %% messages came over one connection, in order, before its call returned; the
    %% session's question to the tracer (riarc:alive/1) is answered after them.
    #{tracers := [T]} = riarc:alive(S),
    Victim ! crash,
    {ok, R = #{verdicts := [V]}} = riarc_session:finish(S, 30000),
    ?assertMatch(#{verdict := reject}, V),
    ?assertEqual([{riarc_session, {forged_messages, 4}}], maps:get(errors, R)),
    ?assertEqual(1, riarc_result:status(R)).

%% The forgers' victim: crashes when told.
-spec victim() -> ok.
victim() ->
    receive crash -> exit(boom) end.

session_killed(Config) ->
    Node = ?config(node, Config),
    {S, _Parts, Tracers} = attached_open(Config),
    [{_, Remote, _, _}] = erpc:call(Node, supervisor, which_children, [riarc_session_sup]),
    erpc:call(Node, erlang, exit, [Remote, kill]),
    await_down([Remote | Tracers]),
    _ = load(Node, 2, 5, double),
    all_error(S, {session_down, killed}),
    {ok, #{verdicts := Vs}} = riarc:stop(S),
    ?assertEqual(1, riarc_result:status(#{verdicts => Vs})),
    untraced(Node),
    unloaded(Node).

tracer_killed(Config) ->
    Node = ?config(node, Config),
    Sup = pool_sup(Node, ?config(pool, Config)),
    [W | _] = workers(Node, Sup),
    {S, _Parts, Tracers} = attached_open(Config),
    #{traced := Traced} = riarc:alive(S),
    [T] = [T || T <- Tracers, lists:member(W, maps:get(T, Traced, []))],
    exit(T, kill),
    await_down([T]),
    _ = load(Node, 2, 5, double),
    {ok, #{verdicts := Vs}} = riarc:stop(S),
    %% The session reports the crashed tracer's partition as an error (not naming its
    %% process: it had no verdict entry yet), the others as open.
    ?assertMatch([#{verdict := error, reason := {tracer_crashed, killed}}],
                 [V || V = #{verdict := error} <- Vs]),
    ?assertEqual([none], lists:usort([V || #{verdict := V} <- Vs, V =/= error])),
    ?assertEqual(?SIZE, length(Vs)),
    untraced(Node),
    unloaded(Node).

node_stopped(Config) ->
    Node = ?config(node, Config),
    {S, _Parts, _Tracers} = attached_open(Config),
    Ref = monitor(process, S),
    riarc_remote:subscribe(S),
    peer:stop(?config(peer, Config)),
    receive {riarc_remote_down, S, nodedown} -> ok end,
    all_error(S, nodedown),
    {ok, #{verdicts := Vs}} = riarc:stop(S),
    ?assertEqual(?SIZE, length(Vs)),
    receive {'DOWN', Ref, process, S, normal} -> ok end,
    ?assertEqual(pang, net_adm:ping(Node)).

link_cut(Config) ->
    Node = ?config(node, Config),
    {S, _Parts, Tracers} = attached_open(Config),
    [{_, Remote, _, _}] = erpc:call(Node, supervisor, which_children, [riarc_session_sup]),
    %% riarc's janitor on the peer: the one process waiting in riarc_remote's code.
    [Janitor] = [P || P <- erpc:call(Node, erlang, processes, []),
                      {current_function, {riarc_remote, _, _}} <-
                          [erpc:call(Node, erlang, process_info, [P, current_function])]],
    riarc_remote:subscribe(S),
    true = erlang:disconnect_node(Node),
    receive {riarc_remote_down, S, nodedown} -> ok end,
    all_error(S, nodedown),
    {ok, _} = riarc:stop(S),
    %% The remote session saw its owner's node go: it stopped, and its tracers untraced
    %% what they traced; the janitor then removed riarc's code.
    true = net_kernel:connect_node(Node),
    await_down([Remote, Janitor | Tracers]),
    untraced(Node),
    unloaded(Node).

%% A monitor per process of the demo system that accepts at its exit exactly when it saw
%% the process's whole local trace, in order (riarc_demo_pqr:local_traces/1).
pqr_spec() ->
    fun({riarc_demo_pqr, Role, []}) -> {ok, kinds(Role, [])};
       (_) -> undefined
    end.
kinds(Role, Seen) ->
    fun(E) ->
            case Seen ++ [element(1, E)] of
                All when element(1, E) =:= exit ->
                    case All =:= riarc_demo_pqr:local_traces(Role) of
                        true -> accept;
                        false -> reject
                    end;
                More -> kinds(Role, More)
            end
    end.

sleeper_spec() ->
    fun({timer, sleep, _}) -> {ok, fun M(_) -> M end};
       (_) -> undefined
    end.

%% The system is spawned on the peer, its tracers run there, and the result comes back:
%% every process of it accepted with its whole trace, riarc gone from the node after.
run_on_node(Config) ->
    Node = ?config(node, Config),
    %% The system's own code, on the peer: a test system, which riarc does not ship.
    {M, Bin, File} = code:get_object_code(riarc_demo_pqr),
    {module, M} = erpc:call(Node, code, load_binary, [M, File, Bin]),
    {ok, R} = riarc:run({riarc_demo_pqr, p, []}, pqr_spec(), #{node => Node}),
    Vs = maps:get(verdicts, R),
    ?assertEqual([{{riarc_demo_pqr, Role, []}, accept} || Role <- [p, q, r]],
                 lists:sort([{MFA, V} || #{mfa := MFA, verdict := V} <- Vs])),
    ?assertEqual([Node], lists:usort([node(P) || #{pid := P} <- Vs])),
    ?assertEqual(0, riarc_result:status(R)),
    untraced(Node),
    unloaded(Node).

%% run/3's timeout is counted here; the remote session is cut as a local one would be.
run_timeout_on_node(Config) ->
    Node = ?config(node, Config),
    {ok, R} = riarc:run({timer, sleep, [infinity]}, sleeper_spec(), #{node => Node, timeout => 300}),
    ?assertMatch([#{verdict := inconclusive}], maps:get(verdicts, R)),
    ?assertMatch([{riarc_session, {timeout, 300, _}} | _], maps:get(errors, R)),
    ?assertEqual(1, riarc_result:status(R)),
    untraced(Node),
    unloaded(Node).

%% start/3 there, the verdicts while it runs, stop/1: the system runs on, untraced.
start_stop_on_node(Config) ->
    Node = ?config(node, Config),
    {ok, S} = riarc:start({timer, sleep, [infinity]}, sleeper_spec(), #{node => Node}),
    #{processes := [Root]} = riarc:alive(S),
    ?assertEqual(Node, node(Root)),
    ?assertEqual([], riarc:verdicts(S)),
    {ok, R} = riarc:stop(S),
    ?assertMatch([#{pid := Root, verdict := none}], maps:get(verdicts, R)),
    ?assert(erpc:call(Node, erlang, is_process_alive, [Root])),
    untraced(Node),
    unloaded(Node).

%% An entry point the node does not have is the caller's error, and nothing is left there.
run_undef_on_node(Config) ->
    Node = ?config(node, Config),
    ?assertEqual({error, {riarc, {undef, {riarc_no_such_module, f, 0}}}},
                 riarc:run({riarc_no_such_module, f, []}, pqr_spec(), #{node => Node})),
    unloaded(Node).

%% Processes this node starts on the peer (spawn/4, erpc) are asked of Λ as the call they
%% run, with its arguments (the VM passes them as the child's first message, which the
%% session there reads whatever message events it traces), an erpc call as the call it
%% runs. Never as the VM's erts_internal:dist_spawn_init/1. riarc's own processes there
%% (its janitor) are none of them.
remote_spawns_named(Config) ->
    Node = ?config(node, Config),
    Named = fun(Events) ->
                    {ok, S} = riarc:attach(new_processes, sleep_spec(), #{node => Node, events => Events}),
                    [] = riarc_remote:subscribe(S),
                    {Pid, Ref} = spawn_monitor(Node, timer, sleep, [10]),
                    receive {'DOWN', Ref, process, Pid, normal} -> ok end,
                    ok = erpc:call(Node, timer, sleep, [5]),
                    Vs = [receive {riarc_verdict, S, V} -> V after 60000 -> error(no_verdict) end
                          || _ <- [1, 2]],
                    {ok, #{verdicts := All}} = riarc:stop(S),
                    ?assertEqual(2, length(All), All),
                    lists:sort([{MFA, V} || #{mfa := MFA, verdict := V} <- Vs])
            end,
    [?assertEqual([{{timer, sleep, [5]}, accept}, {{timer, sleep, [10]}, accept}], Named(Events))
     || Events <- [[send, recv], [send], []]],
    untraced(Node),
    unloaded(Node).

%% The VM fact docs/production.md ("Systems spread over nodes") builds on: every way of
%% starting a process on another node shows in the parent's own trace, in its order, as a
%% call of erts_internal:dist_spawn_request/4 naming the node and the call the child will
%% run, when the parent is traced with `call' and that function has a local pattern.
remote_spawns_are_calls(Config) ->
    Node = ?config(node, Config),
    Fun = {erts_internal, dist_spawn_request, 4},
    1 = erlang:trace_pattern(Fun, true, [local]),
    try
        Self = self(),
        P = spawn(fun() ->
                          receive go -> ok end,
                          _ = spawn(Node, erlang, node, []),
                          _ = spawn_link(Node, erlang, node, []),
                          Node = erpc:call(Node, erlang, node, []),
                          Node = rpc:call(Node, erlang, node, []),
                          ok = erpc:cast(Node, erlang, node, []),
                          Self ! {done, self()}
                  end),
        1 = erlang:trace(P, true, [call, procs, {tracer, Self}]),
        P ! go,
        receive {done, P} -> ok after 60000 -> error(not_done) end,
        Ref = erlang:trace_delivered(P),
        receive {trace_delivered, P, Ref} -> ok after 60000 -> error(not_delivered) end,
        Calls = collect_calls(P, []),
        ?assertMatch([{Node, {erlang, node, []}},
                      {Node, {erlang, node, []}},
                      {Node, {erpc, execute_call, [_, erlang, node, [] | _]}},
                      {Node, {erpc, execute_call, [_, erlang, node, [] | _]}},
                      {Node, {erpc, execute_cast, [erlang, node, []]}}], Calls)
    after
        erlang:trace_pattern(Fun, false, [local])
    end.

%% A system run here whose root starts a process on the peer, which Λ puts in the root's
%% partition (undefined for it): the root's monitor would accept at its exit, but its
%% partition's trace lacks the child's events, so the verdict is error, saying why, and
%% the run's status is 1. A root that starts its child here only is accepted. With either
%% backend (the routing table, and the process tracers it falls back to), and with the
%% monitor in an analysis process or in its tracer.
remote_child_in_partition(Config) ->
    Node = ?config(node, Config),
    Before = riarc_trace_pattern:installed(),
    Spec = fun({riarc_remote_sys, _, _}) -> {ok, fun M({exit, _, _}) -> accept; M(_) -> M end};
              (_) -> undefined
           end,
    [begin
         {ok, R} = riarc:run({riarc_remote_sys, F, [Node]}, Spec, #{backend => B, analysis => A}),
         ?assertMatch([#{verdict := error,
                         reason := {remote_child, #{node := Node, mfa := MFA,
                                                    verdict_on_partial_trace := accept}}}],
                      maps:get(verdicts, R), {B, A, F}),
         ?assertEqual(1, riarc_result:status(R))
     end || {B, A} <- [{route, isolated}, {evm, isolated}, {route, inline}],
            {F, MFA} <- [{spawn_there, {timer, sleep, [1]}}, {erpc_call, {erlang, node, []}}]],
    {ok, Local} = riarc:run({riarc_remote_sys, local_only, []}, Spec, #{}),
    ?assertMatch([#{verdict := accept}], maps:get(verdicts, Local)),
    ?assertEqual(0, riarc_result:status(Local)),
    ?assertEqual(Before, riarc_trace_pattern:installed()).

%% The same, with a monitor of its own for the child: the root is accepted (its partition
%% lost nothing), and the run says that the child's monitor never ran; unless the user
%% says a session on that node monitors it (monitored_elsewhere).
remote_child_unmonitored(Config) ->
    Node = ?config(node, Config),
    Accept = fun M({exit, _, _}) -> accept; M(_) -> M end,
    Spec = fun({riarc_remote_sys, _, _}) -> {ok, Accept};
              ({erlang, node, []}) -> {ok, Accept};
              (_) -> undefined
           end,
    {ok, R} = riarc:run({riarc_remote_sys, erpc_call, [Node]}, Spec, #{}),
    ?assertMatch([#{verdict := accept}], maps:get(verdicts, R)),
    ?assertMatch([{riarc_session, {remote_child, #{node := Node, mfa := {erlang, node, []}}}}],
                 maps:get(errors, R)),
    [{riarc_session, Why}] = maps:get(errors, R),
    ?assert(io_lib:char_list(riarc_session:format_error(Why))),
    ?assertEqual(1, riarc_result:status(R)),
    {ok, There} = riarc:run({riarc_remote_sys, erpc_call, [Node]}, Spec,
                            #{monitored_elsewhere => [Node]}),
    ?assertMatch(#{verdicts := [#{verdict := accept}], errors := []}, There),
    ?assertEqual(0, riarc_result:status(There)).

collect_calls(P, Acc) ->
    receive
        {trace, P, call, {erts_internal, dist_spawn_request, [N, MFA, _Opts, _Kind]}} ->
            collect_calls(P, [{N, MFA} | Acc]);
        {trace, P, _, _} -> collect_calls(P, Acc);
        {trace, P, _, _, _} -> collect_calls(P, Acc)
    after 0 -> lists:reverse(Acc)
    end.

sleep_spec() ->
    %% An erpc process ends with its call's result as its exit reason.
    fun({timer, sleep, [_]}) -> {ok, fun M({exit, _, _}) -> accept; M(_) -> M end};
       ({erpc, execute_call, _}) -> {ok, fun M({exit, _, _}) -> accept; M(_) -> M end};
       (_) -> undefined
    end.

%% A Spec module's trace flags and message patterns reach the node (riarc_remote wraps the
%% Spec in a fun, so it reads them here): while attached the node traces only the
%% receives they name; after, its patterns are what they were.
remote_patterns(Config) ->
    Node = ?config(node, Config),
    Sup = pool_sup(Node, ?config(pool, Config)),
    Before = erpc:call(Node, erlang, trace_info, ['receive', match_spec]),
    {ok, S} = riarc:attach({supervisor, Sup}, riarc_remote_spec, #{node => Node}),
    ?assertMatch({match_spec, [_ | _]}, erpc:call(Node, erlang, trace_info, ['receive', match_spec])),
    {match_spec, Ms} = erpc:call(Node, erlang, trace_info, ['receive', match_spec]),
    ?assert(lists:member({['_', '_', {'$gen_call', '_', {double, '_'}}], [], []}, Ms)),
    {ok, _} = riarc:stop(S),
    ?assertEqual(Before, erpc:call(Node, erlang, trace_info, ['receive', match_spec])),
    untraced(Node).

%% The spread system's property: the root ends normally; each worker answers 2I; each
%% helper and the erpc job end.
spread_spec() ->
    Ends = fun M({exit, _, _}) -> accept; M(_) -> M end,
    fun({riarc_remote_sys, spread, _}) -> {ok, fun M({exit, _, normal}) -> accept; M(_) -> M end};
       ({riarc_remote_sys, worker, [_, I, _]}) ->
            {ok, fun M({send, _, _, {done, _, X}}) when X =:= 2 * I -> accept;
                     M({send, _, _, {done, _, _}}) -> reject;
                     M(_) -> M
                 end};
       ({riarc_remote_sys, helper, _}) -> {ok, Ends};
       ({riarc_remote_sys, job, _}) -> {ok, Ends};
       ({timer, sleep, [infinity]}) -> {ok, Ends};
       ({riarc_remote_sys, stuck, _}) -> {ok, fun M({exit, _, normal}) -> accept; M(_) -> M end};
       (_) -> undefined
    end.

load_sys(Node) ->
    {M, Bin, File} = code:get_object_code(riarc_remote_sys),
    {module, M} = erpc:call(Node, code, load_binary, [M, File, Bin]).

%% Option follow: the system starts three workers on the peer (spawn/4) and an erpc call
%% there; each worker starts a helper there. Followed, each is monitored there and listed
%% with its node: 3 workers, 3 helpers, the job; worker Bad answers wrongly and is
%% rejected (exit status 1), none wrong gives 0. A worker the test process (no process
%% of the system) starts there meanwhile answers wrongly too, and is not the system's:
%% it and its helper are left out. Each backend, monitors in their tracers and not;
%% afterwards nothing on the peer is traced.
follow_children(Config) ->
    Node = ?config(node, Config),
    load_sys(Node),
    [begin
         {ok, S} = riarc:start({riarc_remote_sys, spread, [Node, 3, Bad, self()]}, spread_spec(),
                               #{follow => [Node], backend => B, analysis => A}),
         Root = receive {ready, R} -> R end,
         Out = spawn(Node, riarc_remote_sys, worker, [self(), 7, true]),
         receive {done, Out, wrong} -> ok end,
         Root ! go,
         {ok, Res} = riarc_session:finish(S, 60000),
         Vs = maps:get(verdicts, Res),
         There = [E || E = #{node := N} <- Vs, N =:= Node],
         Kinds = lists:sort([F || #{mfa := {riarc_remote_sys, F, _}} <- There]),
         ?assertEqual([helper, helper, helper, job, worker, worker, worker], Kinds, {B, A, Vs}),
         ?assertEqual([], [E || E = #{pid := P} <- There, P =:= Out orelse P =:= undefined]),
         ?assertEqual([I || I <- [Bad], Bad > 0],
                      [I || #{mfa := {riarc_remote_sys, worker, [_, I, _]}, verdict := reject} <- There]),
         ?assertEqual([], [E || E = #{verdict := V} <- Vs, V =/= accept, V =/= reject]),
         ?assertMatch([#{verdict := accept}], [E || E = #{mfa := {riarc_remote_sys, spread, _}} <- Vs]),
         ?assertEqual(case Bad of 0 -> 0; _ -> 1 end, riarc_result:status(Res), {B, A, Res}),
         untraced(Node)
     end || {Bad, B, A} <- [{2, route, inline}, {0, route, isolated}, {0, evm, inline}]].

%% A worker started on the followed node takes its call's arguments as its first
%% message; the session there reads them before Λ is asked, whatever message events the
%% run traces: a Λ that monitors only worker 2 (by its argument) monitors it there, with
%% its call as the system made it, and it is accepted. Before, with only `send' traced,
%% the arguments were not read (each `'$unknown''), Λ left the worker unmonitored, and
%% the run listed nothing of it (exit status 0). Each backend.
follow_arguments(Config) ->
    Node = ?config(node, Config),
    load_sys(Node),
    Spec = fun({riarc_remote_sys, spread, _}) -> {ok, fun M({exit, _, normal}) -> accept; M(_) -> M end};
              ({riarc_remote_sys, worker, [_, 2, _]}) ->
                   {ok, fun M({send, _, _, {done, _, 4}}) -> accept;
                            M({send, _, _, {done, _, _}}) -> reject;
                            M(_) -> M
                        end};
              (_) -> undefined
           end,
    [begin
         {ok, S} = riarc:start({riarc_remote_sys, spread, [Node, 3, 0, self()]}, Spec,
                               #{follow => [Node], events => Events, backend => B}),
         Root = receive {ready, R} -> R end,
         Root ! go,
         {ok, Res} = riarc_session:finish(S, 60000),
         There = [E || E = #{node := N} <- maps:get(verdicts, Res), N =:= Node],
         ?assertMatch([#{mfa := {riarc_remote_sys, worker, [_, 2, false]}, verdict := accept}], There,
                      {Events, B, Res}),
         ?assertEqual(0, riarc_result:status(Res)),
         untraced(Node)
     end || Events <- [[send], [send, recv]], B <- [route, evm]].

%% A followed node that goes down mid-run: the children the system started there are
%% `error', reason nodedown; the rest of the run (its root, here) goes on and is judged.
follow_node_down(Config) ->
    Node = ?config(node, Config),
    {ok, S} = riarc:start({riarc_remote_sys, stuck, [Node, 3]}, spread_spec(), #{follow => [Node]}),
    %% The three sleepers have begun there, monitored by the session following the
    %% system (riarc_remote's proxy, the only process there in riarc_remote's code...):
    %% waited for through the peer's own session.
    [Remote] = [P || {_, P, _, _} <- erpc:call(Node, supervisor, which_children, [riarc_session_sup])],
    wait_sleepers(Remote, 3),
    peer:stop(?config(peer, Config)),
    {ok, Res} = riarc_session:finish(S, 60000),
    Vs = maps:get(verdicts, Res),
    ?assertMatch([#{verdict := error, reason := nodedown, node := Node},
                  #{verdict := error, reason := nodedown, node := Node},
                  #{verdict := error, reason := nodedown, node := Node}],
                 [E || E = #{node := _} <- Vs], Vs),
    ?assertMatch([#{verdict := accept}], [E || E = #{mfa := {riarc_remote_sys, stuck, _}} <- Vs]),
    ?assertEqual(1, riarc_result:status(Res)).

%% Option follow with node: the system and its session run on the peer, the session
%% following it onto a second peer, where the system starts its workers; the followers
%% are started from here (the peer has riarc only as binaries this node loaded). The
%% result, brought back here, lists the second peer's seven partitions with its name,
%% worker 2 rejected; neither peer is left traced. This node cannot be followed from a
%% session elsewhere.
follow_from_node(Config) ->
    Node = ?config(node, Config),
    {Peer2, Node2} = riarc_test_peer:start(riarc_remote_b, []),
    try
        load_sys(Node),
        load_sys(Node2),
        {ok, S} = riarc:start({riarc_remote_sys, spread, [Node2, 3, 2, self()]}, spread_spec(),
                              #{node => Node, follow => [Node2]}),
        Root = receive {ready, R} -> R end,
        ?assertEqual(Node, node(Root)),
        Root ! go,
        {ok, Res} = riarc_session:finish(S, 60000),
        Vs = maps:get(verdicts, Res),
        There = [E || E = #{node := N} <- Vs, N =:= Node2],
        ?assertEqual([helper, helper, helper, job, worker, worker, worker],
                     lists:sort([F || #{mfa := {riarc_remote_sys, F, _}} <- There]), Vs),
        ?assertEqual([2], [I || #{mfa := {riarc_remote_sys, worker, [_, I, _]}, verdict := reject} <- There]),
        ?assertEqual([], [E || E = #{verdict := V} <- Vs, V =/= accept, V =/= reject]),
        ?assertMatch([#{verdict := accept}], [E || E = #{mfa := {riarc_remote_sys, spread, _}} <- Vs]),
        ?assertEqual(1, riarc_result:status(Res)),
        untraced(Node),
        untraced(Node2),
        ?assertMatch({error, {riarc, {bad_option, follow, _}}},
                     riarc:start({riarc_remote_sys, local_only, []}, spread_spec(),
                                 #{node => Node, follow => [node()]}))
    after
        peer:stop(Peer2)
    end.

%% The peer's session has started a partition for each of the N sleepers: its entries,
%% each from its tracer's start (the session there keeps lineage), streamed to this
%% process by subscribing to it.
wait_sleepers(Remote, N) ->
    Tag = make_ref(),
    Known = erpc:call(node(Remote), riarc_session, subscribe, [Remote, self(), Tag]),
    wait_sleepers(Tag, N, sleepers(Known, #{})).

wait_sleepers(_Tag, N, Seen) when map_size(Seen) >= N ->
    maps:keys(Seen);
wait_sleepers(Tag, N, Seen) ->
    receive {riarc_session_verdict, Tag, E} -> wait_sleepers(Tag, N, sleepers([E], Seen)) end.

sleepers(Es, Seen) ->
    maps:merge(Seen, maps:from_list([{P, E} || E = #{pid := P, mfa := {timer, sleep, _}} <- Es])).

%% Once the peer's follower has two sleepers' partitions, the tracer there of the first
%% is killed: the sleepers, the victim's first.
kill_a_sleepers_tracer(Node) ->
    [Remote] = [P || {_, P, _, _} <- erpc:call(Node, supervisor, which_children, [riarc_session_sup])],
    [Victim, Other] = wait_sleepers(Remote, 2),
    #{traced := Traced} = erpc:call(Node, riarc, alive, [Remote]),
    [T] = [T || {T, Ps} <- maps:to_list(Traced), lists:member(Victim, Ps)],
    Ref = monitor(process, T),
    exit(T, kill),
    receive {'DOWN', Ref, process, T, _} -> ok end,
    [Victim, Other].

%% A run riarc cuts short (its timeout) while followed children still run there: each is
%% inconclusive, reason the timeout, as one here would be; nothing stays traced there.
follow_timeout(Config) ->
    Node = ?config(node, Config),
    {ok, S} = riarc:start({riarc_remote_sys, stuck, [Node, 2]}, spread_spec(), #{follow => [Node]}),
    [Remote] = [P || {_, P, _, _} <- erpc:call(Node, supervisor, which_children, [riarc_session_sup])],
    wait_sleepers(Remote, 2),
    {ok, Res} = riarc_session:finish(S, 1),
    Vs = maps:get(verdicts, Res),
    ?assertMatch([#{verdict := inconclusive, reason := {timeout, 1}, mfa := {timer, sleep, _}},
                  #{verdict := inconclusive, reason := {timeout, 1}, mfa := {timer, sleep, _}}],
                 [E || E = #{node := _} <- Vs], Vs),
    ?assertEqual(1, riarc_result:status(Res)),
    untraced(Node).

%% A tracer of the followed node's session killed mid-run: its partition there is an
%% error saying so, listed with its process and node (the entry the following session
%% matches), never left open or accepted; the other sleeper's partition is cut short by
%% the stop; nothing stays traced there.
follow_tracer_killed(Config) ->
    Node = ?config(node, Config),
    {ok, S} = riarc:start({riarc_remote_sys, stuck, [Node, 2]}, spread_spec(), #{follow => [Node]}),
    [Victim, Other] = kill_a_sleepers_tracer(Node),
    {ok, Res} = riarc:stop(S),
    Vs = maps:get(verdicts, Res),
    ?assertMatch([#{verdict := error, reason := {tracer_crashed, killed}, node := Node,
                    mfa := {timer, sleep, _}}],
                 [E || E = #{pid := P} <- Vs, P =:= Victim], Vs),
    ?assertMatch([#{verdict := V}] when V =/= accept, [E || E = #{pid := P} <- Vs, P =:= Other], Vs),
    ?assertEqual(1, riarc_result:status(Res)),
    untraced(Node).

%% A start the followed node refuses after the call was traced here (a bad spawn option:
%% the parent gets an error reply, no child exists): the run does not wait for ever for
%% the child; after follow_grace it ends, the child an error saying it was never seen,
%% the exit status 1. A child that does start within the same run is matched as usual.
follow_failed_start(Config) ->
    Node = ?config(node, Config),
    load_sys(Node),
    {ok, Res} = riarc:run({riarc_remote_sys, bad_start, [Node]}, spread_spec(),
                          #{follow => [Node], follow_grace => 500, timeout => 60000}),
    Vs = maps:get(verdicts, Res),
    %% Ended by the grace, not cut by the timeout.
    ?assertEqual([], [E || E = {riarc_session, {timeout, _, _}} <- maps:get(errors, Res)], Res),
    ?assertMatch([#{verdict := error, pid := undefined, mfa := {riarc_remote_sys, helper, [1]},
                    reason := {riarc_follow, {not_followed, _}}}],
                 [E || E = #{node := _, pid := undefined} <- Vs], Vs),
    ?assertMatch([#{verdict := accept}], [E || E = #{mfa := {riarc_remote_sys, job, _}, node := _} <- Vs], Vs),
    ?assertEqual(1, riarc_result:status(Res)),
    [#{reason := {riarc_follow, Why}}] = [E || E = #{pid := undefined} <- Vs],
    ?assertNotEqual(nomatch, string:find(riarc_follow:format_error(Why), "follow_grace")),
    untraced(Node).

%% What follow refuses, with a sentence each: this node, a node that is not up (from a
%% session here, and from one on the peer, whose followers this node starts).
follow_errors(Config) ->
    Node = ?config(node, Config),
    MFA = {riarc_remote_sys, local_only, []},
    [_, Host] = string:split(atom_to_list(node()), "@"),
    Nowhere = list_to_atom("riarc_nosuch@" ++ Host),
    load_sys(Node),
    Errors = [riarc:run(MFA, spread_spec(), #{follow => [node()]}),
              riarc:run(MFA, spread_spec(), #{follow => [Nowhere]}),
              riarc:start(MFA, spread_spec(), #{node => Node, follow => [Nowhere]})],
    ?assertMatch([{error, {riarc, {bad_option, follow, _}}},
                  {error, {riarc_remote, {nodedown, Nowhere}}},
                  {error, {riarc_remote, {nodedown, Nowhere}}}], Errors),
    [?assert(io_lib:char_list(riarc:format_error(Why))) || {error, Why} <- Errors],
    %% Nothing was started: no session here.
    ?assertEqual([], supervisor:which_children(riarc_session_sup)).

%% The local end of a followed node's session killed mid-run: the session there sees its
%% owner go, stops and leaves the node untraced; here, the children there are errors,
%% never a silent accept.
follow_proxy_killed(Config) ->
    Node = ?config(node, Config),
    {ok, S} = riarc:start({riarc_remote_sys, stuck, [Node, 2]}, spread_spec(), #{follow => [Node]}),
    [Remote] = [P || {_, P, _, _} <- erpc:call(Node, supervisor, which_children, [riarc_session_sup])],
    wait_sleepers(Remote, 2),
    Ref = monitor(process, Remote),
    [Proxy] = [P || P <- processes(), {dictionary, D} <- [process_info(P, dictionary)],
                    lists:member({'$initial_call', {riarc_remote, init, 1}}, D)],
    exit(Proxy, kill),
    receive {'DOWN', Ref, process, Remote, _} -> ok end,
    {ok, Res} = riarc:stop(S),
    ?assertMatch([#{verdict := error, reason := {follower_down, killed}},
                  #{verdict := error, reason := {follower_down, killed}}],
                 [E || E = #{node := _} <- maps:get(verdicts, Res)], Res),
    ?assertEqual(1, riarc_result:status(Res)),
    untraced(Node).

%% One partition spanning nodes: the Spec gives the root a monitor and puts its members
%% (started on the peer) and their subs there in the root's partition; helpers have
%% monitors of their own. The root's monitor accepts only once it has seen, in its one
%% partition, every sub's K numbered messages in their order, every member's right
%% answer and the exits of the root, every member and every sub; it rejects a number out
%% of order or a wrong answer.
span_spec(N, K) ->
    span_spec(span, N, K).

%% The same, for a root running Root.
span_spec(Root, N, K) ->
    Ends = fun M({exit, _, _}) -> accept; M(_) -> M end,
    fun({riarc_remote_sys, F, _}) when F =:= Root -> {ok, span_mon(N, K, #{}, 0, 0)};
       ({riarc_remote_sys, helper, _}) -> {ok, Ends};
       ({riarc_remote_sys, job, _}) -> {ok, Ends};
       (_) -> undefined
    end.

span_mon(N, K, Seqs, Dones, Exits) ->
    fun({send, Sub, _, {seq, Sub, J}}) ->
            case maps:get(Sub, Seqs, 0) + 1 of
                J -> span_done(N, K, Seqs#{Sub => J}, Dones, Exits);
                _ -> reject
            end;
       ({send, M, _, {done, M, I, Y}}) when Y =:= 2 * I -> span_done(N, K, Seqs, Dones + 1, Exits);
       ({send, _, _, {done, _, _, _}}) -> reject;
       ({exit, _, normal}) -> span_done(N, K, Seqs, Dones, Exits + 1);
       (_) -> span_mon(N, K, Seqs, Dones, Exits)
    end.

span_done(N, K, Seqs, N, Exits) when Exits =:= 2 * N + 1, map_size(Seqs) =:= N ->
    case lists:all(fun(J) -> J =:= K end, maps:values(Seqs)) of
        true -> accept;
        false -> span_mon(N, K, Seqs, N, Exits)
    end;
span_done(N, K, Seqs, Dones, Exits) ->
    span_mon(N, K, Seqs, Dones, Exits).

%% The members' and subs' events reach the root's monitor here, complete and each
%% process's in its order, with both cores loaded: the root is accepted (rejected when a
%% member answers wrongly, which only its relayed events show). The members and subs are
%% not listed on their own; the helpers they started there are, with their node. Each
%% backend, monitors in their tracers and not; afterwards nothing on the peer is traced.
span_nodes(Config) ->
    Node = ?config(node, Config),
    load_sys(Node),
    %% K past 1024: each relaying tracer there takes more messages than the 1024 after
    %% which a tracer checks it is traced by nobody but its session's own adopter.
    {N, K} = {3, 1500},
    Load = [spawn(fun Spin() -> Spin() end) || _ <- lists:seq(1, erlang:system_info(schedulers_online))],
    try
        [begin
             {ok, S} = riarc:start({riarc_remote_sys, span, [Node, N, K, Bad, self()]}, span_spec(N, K),
                                   #{follow => [Node], backend => B, analysis => A}),
             Root = receive {ready, R} -> R end,
             %% An outsider's member there (this process is not the system's): relayed
             %% too, since its node cannot tell, and dropped here, not held for a claim.
             Out = spawn(Node, riarc_remote_sys, sub, [self(), 5, 0]),
             [receive {seq, Out, J} -> ok end || J <- lists:seq(1, 5)],
             wait_closed(Node, Out),
             ?assertMatch(#{relayed_waiting := 0}, riarc:alive(S)),
             Root ! go,
             {ok, Res} = riarc_session:finish(S, 120000),
             Vs = maps:get(verdicts, Res),
             Want = case Bad of 0 -> accept; _ -> reject end,
             ?assertMatch([#{verdict := Want}], [E || E = #{mfa := {riarc_remote_sys, span, _}} <- Vs],
                          {B, A, Vs}),
             [#{events := Events}] = [E || E = #{mfa := {riarc_remote_sys, span, _}} <- Vs],
             %% Accepted: it took the sends at least, K per sub and one per member.
             %% Rejected: it stopped at the wrong answer, which the member sent after
             %% its own K receives, so it took those at least.
             Least = case Bad of 0 -> N * (K + 1); _ -> K + 1 end,
             ?assert(Events >= Least, {B, A, Events}),
             ?assertEqual(lists:duplicate(N, helper),
                          [F || #{node := Nd, mfa := {riarc_remote_sys, F, _}} <- Vs, Nd =:= Node],
                          {B, A, Vs}),
             ?assertEqual([], [E || E = #{verdict := V} <- Vs, V =/= accept, V =/= reject], Vs),
             ?assertEqual(case Bad of 0 -> 0; _ -> 1 end, riarc_result:status(Res)),
             untraced(Node)
         end || {Bad, B, A} <- [{0, route, inline}, {2, route, isolated}, {0, evm, isolated}]]
    after
        [exit(P, kill) || P <- Load]
    end.

%% Once the partition of Pid has ended in the peer's follower (its last relayed message,
%% sent before, came over the same link).
wait_closed(Node, Pid) ->
    [Remote] = [P || {_, P, _, _} <- erpc:call(Node, supervisor, which_children, [riarc_session_sup])],
    Tag = make_ref(),
    Known = erpc:call(Node, riarc_session, subscribe, [Remote, self(), Tag]),
    case [E || E = #{pid := P} <- Known, P =:= Pid, not is_map_key(open, E)] of
        [_ | _] -> ok;
        [] -> wait_closed(Tag, Pid, loop)
    end.

wait_closed(Tag, Pid, loop) ->
    receive
        {riarc_session_verdict, Tag, E = #{pid := Pid}} when not is_map_key(open, E) -> ok;
        {riarc_session_verdict, Tag, _} -> wait_closed(Tag, Pid, loop)
    end.

%% The peer goes down while members there run: the root's partition lost the rest of
%% their trace: error, saying their node went down; nothing waits for ever.
span_node_down(Config) ->
    Node = ?config(node, Config),
    load_sys(Node),
    Spec = fun({riarc_remote_sys, span_stuck, _}) -> {ok, fun M({exit, _, normal}) -> accept; M(_) -> M end};
              (_) -> undefined
           end,
    {ok, S} = riarc:start({riarc_remote_sys, span_stuck, [Node, 2]}, Spec, #{follow => [Node]}),
    [Remote] = [P || {_, P, _, _} <- erpc:call(Node, supervisor, which_children, [riarc_session_sup])],
    %% Both relaying partitions there have begun.
    wait_sleepers(Remote, 2),
    peer:stop(?config(peer, Config)),
    {ok, Res} = riarc_session:finish(S, 60000),
    Vs = maps:get(verdicts, Res),
    ?assertMatch([#{verdict := error, reason := {remote_child, #{lost := nodedown, node := Node}}}],
                 [E || E = #{mfa := {riarc_remote_sys, span_stuck, _}} <- Vs], Vs),
    ?assertEqual([], [E || E = #{node := _} <- Vs], Vs),
    ?assertEqual(1, riarc_result:status(Res)).

%% A member's start the peer refuses: after follow_grace the root's partition is an
%% error saying the child was never seen there, not a run that waits for ever nor an
%% accept on a trace without it.
span_failed_start(Config) ->
    Node = ?config(node, Config),
    load_sys(Node),
    %% The root's monitor accepts at an event of the member's (none comes).
    Spec = fun({riarc_remote_sys, span_bad_start, _}) ->
                   {ok, fun M(E) ->
                                case node(riarc_event:origin(E)) =:= node() of
                                    true -> M;
                                    false -> accept
                                end
                        end};
              ({riarc_remote_sys, job, _}) -> {ok, fun M({exit, _, _}) -> accept; M(_) -> M end};
              (_) -> undefined
           end,
    {ok, Res} = riarc:run({riarc_remote_sys, span_bad_start, [Node]}, Spec,
                          #{follow => [Node], follow_grace => 500, timeout => 60000}),
    Vs = maps:get(verdicts, Res),
    ?assertEqual([], [E || E = {riarc_session, {timeout, _, _}} <- maps:get(errors, Res)], Res),
    ?assertMatch([#{verdict := error, reason := {remote_child, #{lost := not_followed, node := Node}}}],
                 [E || E = #{mfa := {riarc_remote_sys, span_bad_start, _}} <- Vs], Vs),
    ?assertMatch([#{verdict := accept}], [E || E = #{mfa := {riarc_remote_sys, job, _}, node := _} <- Vs], Vs),
    ?assertEqual(1, riarc_result:status(Res)),
    untraced(Node).

%% The tracer there relaying one of two members is killed: the root's partition lost the
%% rest of that member's trace: error, saying so; the run still ends once the members do
%% (the root's tracer waits for the other's relayed end, not for the lost one's).
span_tracer_killed(Config) ->
    Node = ?config(node, Config),
    load_sys(Node),
    %% A monitor that never decides: the partition's verdict is its session's.
    Spec = fun({riarc_remote_sys, span_stuck, _}) -> {ok, fun M(_) -> M end};
              (_) -> undefined
           end,
    {ok, S} = riarc:start({riarc_remote_sys, span_stuck, [Node, 2]}, Spec, #{follow => [Node]}),
    [Victim, Other] = kill_a_sleepers_tracer(Node),
    [erpc:call(Node, erlang, exit, [P, kill]) || P <- [Victim, Other]],
    {ok, Res} = riarc_session:finish(S, 60000),
    Vs = maps:get(verdicts, Res),
    ?assertEqual([], [E || E = {riarc_session, {timeout, _, _}} <- maps:get(errors, Res)], Res),
    ?assertMatch([#{verdict := error, reason := {remote_child, #{lost := {tracer_crashed, killed},
                                                               child := Victim}}}],
                 [E || E = #{mfa := {riarc_remote_sys, span_stuck, _}} <- Vs], Vs),
    ?assertEqual(1, riarc_result:status(Res)),
    untraced(Node).

%% riarc_join's watcher, with this process as the session: when the peer comes up again,
%% the process a tracer of this process's traces is held (the VM says so) until the
%% follower's start (Start) is over, and one nobody traces runs on; the child the held
%% one had started there before is found, with its parent, and the other's is not; then
%% the held process runs again.
join_holds_and_finds(Config) ->
    Node = ?config(node, Config),
    [begin {M, Bin, File} = code:get_object_code(M), {module, M} = erpc:call(Node, code, load_binary, [M, File, Bin]) end
     || M <- [riarc_join, riarc_lambda]],
    Test = self(),
    Starter = fun() ->
                      receive {go, Ref} -> Test ! {Ref, spawn(Node, timer, sleep, [infinity])} end,
                      receive stop -> ok end
              end,
    [Sys, Other] = [spawn(Starter) || _ <- [1, 2]],
    [SysChild, OtherChild] = [begin R = make_ref(), P ! {go, R}, receive {R, C} -> C end end || P <- [Sys, Other]],
    %% Started by this process through proc_lib (as a session's tracers are), and
    %% running (its ancestors are set).
    Tracer = proc_lib:spawn(fun() -> Test ! {self(), up}, receive stop -> ok end end),
    receive {Tracer, up} -> ok end,
    1 = erlang:trace(Sys, true, [procs, {tracer, Tracer}]),
    W = riarc_join:watch(self(), none, 60000),
    try
        true = erlang:disconnect_node(Node),
        true = net_kernel:connect_node(Node),
        receive {riarc_join, W, Node} -> ok end,
        ?assertEqual({status, suspended}, erlang:process_info(Sys, status)),
        ?assertEqual({status, waiting}, erlang:process_info(Other, status)),
        Start = fun() -> {ok, erlang:process_info(Sys, status)} end,
        ?assertMatch({ok, {status, suspended}, {ok, [#{pid := SysChild, parent := Sys}]}},
                     riarc_join:follow(W, Node, Start)),
        ?assertEqual({status, waiting}, erlang:process_info(Sys, status))
    after
        [exit(P, kill) || P <- [W, Sys, Other, Tracer]],
        [erpc:call(Node, erlang, exit, [C, kill]) || C <- [SysChild, OtherChild]]
    end.

%% Option follow_joining: the system starts a node itself (OTP's peer) and members there
%% as soon as it is up. The system is held while riarc starts its session there, so the
%% members are followed from their start: the root is accepted (rejected when a member
%% answers wrongly, which only its relayed events show), with every member's and sub's
%% events; the helpers are listed with the new node; nothing started there before riarc
%% (no run error); nothing here is left traced. Each backend, monitors in their tracers
%% and not.
-spec join_nodes() -> list().
join_nodes() -> [{timetrap, {minutes, 15}}].

join_nodes(_Config) ->
    [join_run(Bad, B, A, followed) || {Bad, B, A} <- [{0, route, inline}, {2, route, isolated}, {0, evm, isolated}]].

%% The same with both cores loaded, where the hold may come too late (the node's coming
%% up reaches riarc late, and finding the system's processes waits for the busy ones):
%% whatever happens, the root's verdict is never an accept on a trace that lacks a
%% member's events, and a member that got there first is an error of the run.
-spec join_nodes_loaded() -> list().
join_nodes_loaded() -> [{timetrap, {minutes, 15}}].

join_nodes_loaded(_Config) ->
    Load = [spawn(fun Spin() -> Spin() end) || _ <- lists:seq(1, erlang:system_info(schedulers_online))],
    try
        Outcomes = [join_run(Bad, B, A, sound) || {Bad, B, A} <- [{0, route, inline}, {0, evm, isolated},
                                                                  {2, route, isolated}]],
        ct:log("outcomes under load: ~p", [Outcomes])
    after
        [exit(P, kill) || P <- Load]
    end.

%% One run of riarc_remote_sys:joining/4 (N members, K messages each, member Bad answers
%% wrongly), followed as it joins. How: `followed', every member must have been followed
%% (the node is stopped once their ends and their helpers' verdicts are here); `sound',
%% the node is stopped at once, and only a verdict reached on the whole trace may be an
%% accept or a reject. Returns the root's verdict and the run's errors' tags.
join_run(Bad, B, A, How) ->
    {N, K} = {3, 300},
    Hold = case How of
               %% The hold outlasts riarc's start there, however slow.
               followed -> #{max_join_hold => 600000};
               %% The default: under this load riarc's start there can take minutes,
               %% which the system is not held for.
               sound -> #{}
           end,
    {ok, S} = riarc:start({riarc_remote_sys, joining, [self(), N, K, Bad]}, span_spec(joining, N, K),
                          #{follow_joining => true, backend => B, analysis => A, follow_grace => 5000,
                            limits => Hold}),
    Tag = make_ref(),
    Known = riarc_session:subscribe(S, self(), Tag),
    {Root, Node, Ms} = receive
                           {joined, R, There, Ms0} -> {R, There, Ms0};
                           %% Only under load: the node the system started did not come up.
                           {no_node, R, Why} when How =:= sound -> {R, {no_node, Why}, []}
                       end,
    _ = case How of
            followed ->
                %% Before the system stops its node: every member's relayed end is here
                %% (it came over the same connection before the member's entry there
                %% closed), and every helper's verdict.
                [wait_closed(Node, M) || M <- Ms],
                wait_helpers(Tag, Node, N, [E || E = #{node := Nd, mfa := {riarc_remote_sys, helper, _}} <- Known, Nd =:= Node]);
            sound -> ok
        end,
    Root ! stop,
    {ok, Res} = riarc_session:finish(S, 120000),
    Vs = maps:get(verdicts, Res),
    Errors = maps:get(errors, Res, []),
    [#{verdict := V, events := Events}] = [E || E = #{mfa := {riarc_remote_sys, joining, _}} <- Vs],
    Want = case Bad of 0 -> accept; _ -> reject end,
    Least = case Bad of 0 -> N * (K + 1); _ -> K + 1 end,
    case How of
        followed ->
            ?assertEqual(Want, V, {B, A, Vs, Errors}),
            ?assert(Events >= Least, {B, A, Events}),
            ?assertEqual(lists:duplicate(N, {helper, accept}),
                         [{F, HV} || #{node := Nd, mfa := {riarc_remote_sys, F, _}, verdict := HV} <- Vs, Nd =:= Node],
                         {B, A, Vs}),
            ?assertEqual([], Errors, {B, A}),
            ?assertEqual(case Bad of 0 -> 0; _ -> 1 end, riarc_result:status(Res));
        sound ->
            %% An accept is reached only on all the members' events, a reject only on a
            %% wrong answer: never on a trace that lacks a member's.
            ?assert(V =/= accept orelse (Events >= Least andalso Errors =:= []), {B, A, V, Events, Errors}),
            ?assert(V =/= reject orelse Bad > 0, {B, A, V, Vs}),
            %% Whoever got there first is named; or the node was gone (stopped by the
            %% system) before riarc could start there.
            %% (A node that did not come up: whichever node it was.)
            %% Or, the machine loaded past what the run's time allows, riarc cut the run
            %% at its timeout and said so (the members' relayed trace still awaited).
            Where = case Node of {no_node, _} -> any; _ -> Node end,
            ?assertEqual([], [E || E <- Errors, not joined_late(E, Where), not timed_out(E)], {B, A}),
            ?assert(riarc_result:status(Res) =/= 0 orelse (V =:= accept andalso Errors =:= []), {B, A, Res})
    end,
    untraced(node()),
    {V, [element(1, element(2, E)) || E <- Errors]}.

joined_late({riarc_session_dist, {before_follow, #{node := N, children := [_ | _]}}}, Node) -> Node =:= any orelse N =:= Node;
joined_late({riarc_session_dist, {join_failed, N, _}}, Node) -> Node =:= any orelse N =:= Node;
joined_late(_, _) -> false.

timed_out({riarc_session, {timeout, _, _}}) -> true;
timed_out(_) -> false.

%% The N helpers on Node, each with its verdict, from the session's stream (Known: those
%% it had already).
wait_helpers(Tag, Node, N, Known) ->
    Done = [P || #{pid := P, verdict := V} <- Known, V =/= none],
    case length(lists:usort(Done)) >= N of
        true -> ok;
        false ->
            receive
                {riarc_session_verdict, Tag, E = #{node := Node, mfa := {riarc_remote_sys, helper, _}}} ->
                    wait_helpers(Tag, Node, N, [E | Known]);
                {riarc_session_verdict, Tag, _} ->
                    wait_helpers(Tag, Node, N, Known)
            end
    end.
