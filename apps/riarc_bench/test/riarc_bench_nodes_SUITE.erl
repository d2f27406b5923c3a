%% The load driver's master-worker system spread over three nodes: the master and a
%% third of its workers here, the rest on two peer nodes (spawn/4), every process under
%% the load driver's trace-soundness monitors (riarc_bench_monitor: each worker must see
%% its chunks 1..N in order, then term; the master every worker's acks in order, then
%% its end). Tracing is per node, so each node has its own session: riarc:run/3 here,
%% riarc:attach(new_processes, ...) on each peer (docs/production.md, "Systems spread
%% over nodes"), started by hand (three_nodes_sound) or by the run itself, which follows
%% its system onto the peers and lists every verdict in one result (three_nodes_followed).
%% Every process, on every node, must be accepted, with the machine loaded, and no node
%% left traced.
-module(riarc_bench_nodes_SUITE).

-include_lib("stdlib/include/assert.hrl").
-include_lib("common_test/include/ct.hrl").

-export([all/0, groups/0, suite/0, init_per_testcase/2, end_per_testcase/2]).
-export([three_nodes_sound/1, three_nodes_followed/1]).

-spec all() -> [atom() | {group, atom()}].
all() -> [] ++ riarc_test_tier:slow_groups([distributed]).

%% The full tier's cases (make test-all): riarc_test_tier.
-spec groups() -> [{atom(), list(), [atom()]}].
groups() -> [{distributed, [], [three_nodes_sound, three_nodes_followed]}].

-spec suite() -> list().
suite() -> [{timetrap, {minutes, 5}}].

-spec init_per_testcase(atom(), list()) -> list().
init_per_testcase(_Case, Config) ->
    Ebin = filename:dirname(code:which(riarc_bench_worker)),
    Peers = [riarc_test_peer:start(riarc_bench_nodes, ["-pa", Ebin]) || _ <- [1, 2]],
    [{peers, Peers} | Config].

-spec end_per_testcase(atom(), list()) -> ok.
end_per_testcase(_Case, Config) ->
    _ = [catch peer:stop(Peer) || {Peer, _} <- ?config(peers, Config)],
    ok.

%% The load driver's system, its workers spread over this node and the peers (Nodes), the
%% schedulers loaded while Run runs; Run gets the system's entry point and the Spec.
loaded_run(Nodes, Run) ->
    Seed = erlang:unique_integer([positive]) rem 1000,
    ct:pal("seed ~b", [Seed]),
    %% Both cores busy while it runs: the races show under load.
    Spinners = [spawn(fun Spin() -> Spin() end) || _ <- lists:seq(1, erlang:system_info(schedulers))],
    try
        {ok, P} = riarc_bench_model:new(#{shape => steady, workers => 60, requests => 20,
                                          period => 5, seed => Seed}),
        Cfg = (riarc_bench_master:config(P, self(), undefined, undefined))#{
                  keep_pids => true, nodes => [node() | Nodes]},
        Run({riarc_bench_master, start, [Cfg]},
            riarc_bench_monitor:spec(#{monitors => soundness, spread => true}), Seed)
    after
        _ = [exit(Sp, kill) || Sp <- Spinners]
    end.

%% One run here that follows its system onto the peers: the master and all 60 workers in
%% its result, the 40 on the peers with their node, every one accepted.
three_nodes_followed(Config) ->
    Nodes = [N || {_, N} <- ?config(peers, Config)],
    loaded_run(Nodes, fun(MFA, Spec, Seed) ->
        {ok, R} = riarc:run(MFA, Spec, #{follow => Nodes}),
        Result = receive {riarc_bench_master, _, Res} -> Res end,
        ?assertMatch(#{ended := 60, ack_errors := 0}, Result),
        Workers = maps:get(pids, Result),
        Vs = maps:get(verdicts, R),
        ?assertEqual(lists:sort(Workers),
                     lists:sort([W || #{pid := W, mfa := {riarc_bench_worker, _, _}} <- Vs]), Seed),
        _ = [?assertEqual(lists:sort([W || W <- Workers, node(W) =:= N]),
                          lists:sort([W || #{pid := W, node := WN} <- Vs, WN =:= N]), {N, Seed})
             || N <- Nodes],
        ?assertEqual(61, length(Vs), Seed),
        ?assertEqual([accept], lists:usort([V || #{verdict := V} <- Vs]), {Seed, Vs}),
        ?assertEqual([], maps:get(errors, R)),
        ?assertEqual(0, riarc_result:status(R)),
        _ = [untraced(N) || N <- Nodes],
        ok
    end).

three_nodes_sound(Config) ->
    Nodes = [N || {_, N} <- ?config(peers, Config)],
    loaded_run(Nodes, fun(MFA, Spec, Seed) ->
        Remote = [begin
                      {ok, S} = riarc:attach(new_processes, Spec, #{node => N}),
                      [] = riarc_remote:subscribe(S),
                      {N, S}
                  end || N <- Nodes],
        %% The workers started on the peers are monitored there: said so, the master's
        %% starts of them are not reported as unmonitored children.
        {ok, R} = riarc:run(MFA, Spec, #{monitored_elsewhere => Nodes}),
        Result = receive {riarc_bench_master, _, Res} -> Res end,
        ?assertMatch(#{ended := 60, ack_errors := 0}, Result),
        Workers = maps:get(pids, Result),
        %% Here: the master and the workers spawned here, every one accepted.
        Here = [W || W <- Workers, node(W) =:= node()],
        ?assertEqual(lists:sort([M || #{pid := M, mfa := {riarc_bench_master, start, _}} <- maps:get(verdicts, R)] ++ Here),
                     lists:sort([Pid || #{pid := Pid} <- maps:get(verdicts, R)])),
        ?assertEqual([accept], lists:usort([V || #{verdict := V} <- maps:get(verdicts, R)])),
        ?assertEqual(0, riarc_result:status(R)),
        %% There: each peer's workers, every one accepted, its verdict streamed as reached.
        _ = [begin
                 Theirs = [W || W <- Workers, node(W) =:= N],
                 %% Worker Id goes to node (Id mod 3): 20 of the 60 on each.
                 ?assertEqual(20, length(Theirs)),
                 Vs = [receive {riarc_verdict, S, V} -> V after 60000 -> error({no_verdict, N, Seed}) end
                       || _ <- Theirs],
                 ?assertEqual(lists:sort(Theirs), lists:sort([Pid || #{pid := Pid} <- Vs])),
                 ?assertEqual([{riarc_bench_worker, accept}],
                              lists:usort([{M, V} || #{mfa := {M, _, _}, verdict := V} <- Vs])),
                 {ok, RR} = riarc:stop(S),
                 ?assertEqual(0, riarc_result:status(RR)),
                 untraced(N)
             end || {N, S} <- Remote],
        ok
    end).

%% No process of the node has a trace flag, and new processes get none.
untraced(Node) ->
    ?assertEqual(#{processes => [], new_processes => []}, riarc_test_peer:traced(Node)).
