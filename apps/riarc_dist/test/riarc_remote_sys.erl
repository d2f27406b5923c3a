%% Systems of riarc_remote_SUITE that start processes on another node: under riarc:run/3
%% here, their children there are beyond this node's tracing.
-module(riarc_remote_sys).

-export([erpc_call/1, spawn_there/1, local_only/0]).
%% A system spread over two nodes, followed there (riarc's option `follow').
-export([spread/4, worker/3, helper/1, job/1, stuck/2, bad_start/1]).
%% One partition spanning two nodes: members there in their parent's partition here.
-export([span/5, member/4, sub/3, span_stuck/2, span_bad_start/1]).
%% A node the system starts itself, during the run (riarc's option follow_joining).
-export([joining/4]).
%% The Specs scripts/measure/span-cost compares (funs of a module, whose code riarc loads there).
-export([span_cost_spec/1]).

%% An erpc call: its process there runs erlang:node/0.
erpc_call(Node) ->
    Node = erpc:call(Node, erlang, node, []),
    ok.

%% A process there, waited for.
spawn_there(Node) ->
    {Pid, Ref} = spawn_monitor(Node, timer, sleep, [1]),
    receive {'DOWN', Ref, process, Pid, normal} -> ok end.

%% A child here only: nothing for another node.
local_only() ->
    {Pid, Ref} = spawn_monitor(timer, sleep, [1]),
    receive {'DOWN', Ref, process, Pid, normal} -> ok end.

%% Tells Test it is ready, waits for go, then starts N workers on Node (spawn/4), worker
%% Bad answering wrongly, and waits for their answers; then one erpc call there.
spread(Node, N, Bad, Test) ->
    Test ! {ready, self()},
    receive go -> ok end,
    Ws = [spawn(Node, ?MODULE, worker, [self(), I, I =:= Bad]) || I <- lists:seq(1, N)],
    [receive {done, W, _} -> ok end || W <- Ws],
    ok = erpc:call(Node, ?MODULE, job, [3]),
    ok.

%% A worker: starts a helper on its own node, waits for it, then answers 2I (or not).
worker(Parent, I, Bad) ->
    {H, Ref} = spawn_monitor(?MODULE, helper, [I]),
    receive {'DOWN', Ref, process, H, normal} -> ok end,
    Parent ! {done, self(), case Bad of true -> wrong; false -> 2 * I end}.

helper(I) -> I.

job(_K) -> ok.

%% N workers on Node that wait for ever; ends when they are gone (their node down).
stuck(Node, N) ->
    Ws = [spawn_monitor(Node, timer, sleep, [infinity]) || _ <- lists:seq(1, N)],
    [receive {'DOWN', Ref, process, W, _} -> ok end || {W, Ref} <- Ws],
    ok.

%% A start on Node that Node refuses (a bad spawn option), then one it takes (an erpc
%% call): the first child never exists.
bad_start(Node) ->
    {'EXIT', {badarg, _}} = (catch spawn_opt(Node, ?MODULE, helper, [1], [{riarc_no_such_option, 1}])),
    ok = erpc:call(Node, ?MODULE, job, [1]).

%% Starts N members on Node (spawn/4), member Bad answering wrongly, each with K
%% messages from a sub of its own there, and waits for their answers.
span(Node, N, K, Bad, Test) ->
    Test ! {ready, self()},
    receive go -> ok end,
    Ms = [spawn(Node, ?MODULE, member, [self(), I, K, I =:= Bad]) || I <- lists:seq(1, N)],
    [receive {done, M, _, _} -> ok end || M <- Ms],
    ok.

%% As span/5, on a node the system starts itself (OTP's peer, connected over distributed
%% Erlang, this module on its code path), its members started there as soon as it is up;
%% stops that node when told. The node joins this one only (`-connect_all false'): what
%% OTP's global does with a full mesh under load (it dropped new nodes to prevent
%% overlapping partitions) is not what is under test. A node that does not come up is
%% told to Test, `{no_node, self(), Why}'. The node is stopped by closing its connection
%% (it halts itself then): peer's default stop spawns a process there that stops the
%% node, a relayed child of this partition whose end may or may not be relayed before
%% the node is gone, which makes the root's verdict an accept or an error by chance.
joining(Test, N, K, Bad) ->
    Dir = filename:dirname(code:which(?MODULE)),
    case peer:start(#{name => peer:random_name(joined), shutdown => close,
                      args => ["-setcookie", atom_to_list(erlang:get_cookie()), "-pa", Dir,
                               "-connect_all", "false"]}) of
        {ok, Peer, Node} ->
            Ms = [spawn(Node, ?MODULE, member, [self(), I, K, I =:= Bad]) || I <- lists:seq(1, N)],
            [receive {done, M, _, _} -> ok end || M <- Ms],
            Test ! {joined, self(), Node, Ms},
            receive stop -> ok end,
            peer:stop(Peer);
        {error, Why} ->
            Test ! {no_node, self(), Why},
            receive stop -> ok end
    end.

%% A member: a sub there sends it K numbered messages; then it starts a helper there,
%% waits for it, and answers {done, self(), I, 2I} (or not).
member(Parent, I, K, Bad) ->
    Me = self(),
    {S, SRef} = spawn_monitor(?MODULE, sub, [Me, K, I]),
    [receive {seq, S, J} -> ok end || J <- lists:seq(1, K)],
    receive {'DOWN', SRef, process, S, normal} -> ok end,
    {H, Ref} = spawn_monitor(?MODULE, helper, [I]),
    receive {'DOWN', Ref, process, H, normal} -> ok end,
    Parent ! {done, self(), I, case Bad of true -> wrong; false -> 2 * I end}.

sub(Member, K, _I) ->
    [Member ! {seq, self(), J} || J <- lists:seq(1, K)],
    ok.

%% N members on Node that wait for ever; ends when they are gone (their node down).
span_stuck(Node, N) ->
    Ms = [spawn_monitor(Node, timer, sleep, [infinity]) || _ <- lists:seq(1, N)],
    [receive {'DOWN', Ref, process, M, _} -> ok end || {M, Ref} <- Ms],
    ok.

%% A member's start that Node refuses (a bad spawn option), then an erpc call there.
span_bad_start(Node) ->
    {'EXIT', {badarg, _}} = (catch spawn_opt(Node, ?MODULE, member, [self(), 1, 1, false],
                                             [{riarc_no_such_option, 1}])),
    ok = erpc:call(Node, ?MODULE, job, [1]).

%% scripts/measure/span-cost: members and subs in the root's partition (relayed), or each with a
%% monitor of its own (own); every monitor one that never decides.
span_cost_spec(Way) ->
    Never = fun Mon(_) -> Mon end,
    fun({?MODULE, span, _}) -> {ok, Never};
       ({?MODULE, helper, _}) -> {ok, Never};
       ({?MODULE, F, _}) when Way =:= own, (F =:= member orelse F =:= sub) -> {ok, Never};
       (_) -> undefined
    end.
