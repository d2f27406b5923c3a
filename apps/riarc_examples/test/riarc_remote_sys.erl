%% Systems of riarc_remote_SUITE that start processes on another node: under riarc:run/3
%% here, their children there are beyond this node's tracing.
-module(riarc_remote_sys).

-export([erpc_call/1, spawn_there/1, local_only/0]).

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
