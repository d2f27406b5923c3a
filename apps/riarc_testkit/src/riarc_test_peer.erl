%% @doc Test support: another node on this machine, started with OTP's `peer' and
%% connected as an ordinary distributed-Erlang node (this node's cookie), for the suites
%% that run riarc against a node it did not start itself. This node is made distributed
%% first if it is not.
%% ```
%% 1> {Peer, Node} = riarc_test_peer:start(riarc_doc, []).
%% 2> erpc:call(Node, erlang, node, []) =:= Node.
%% true
%% 3> riarc_test_peer:traced(Node).
%% #{new_processes => [],processes => []}
%% 4> peer:stop(Peer).
%% ok
%% '''
-module(riarc_test_peer).

-export([start/2, traced/1]).

%% @doc A new node named after Prefix with the extra command-line Args, connected.
-spec start(atom(), [string()]) -> {pid(), node()}.
start(Prefix, Args) ->
    ok = distributed(),
    {ok, Peer, Node} = peer:start(#{name => peer:random_name(Prefix),
                                    connection => standard_io,
                                    args => Args ++ ["-setcookie", atom_to_list(erlang:get_cookie())]}),
    true = net_kernel:connect_node(Node),
    {Peer, Node}.

%% @doc What is traced on Node (this node too): every process with a trace flag, and its
%% flags, the caller left out; the flags new processes get. Both empty on a node riarc
%% has left as it found it.
-spec traced(node()) -> #{processes := [{pid(), [atom()]}], new_processes := [atom()]}.
traced(Node) ->
    Call = fun(F, A) when Node =:= node() -> apply(erlang, F, A);
              (F, A) -> erpc:call(Node, erlang, F, A)
           end,
    {flags, New} = Call(trace_info, [new_processes, flags]),
    #{processes => [{P, F} || P <- Call(processes, []), P =/= self(),
                              {flags, F} <- [Call(trace_info, [P, flags])], F =/= []],
      new_processes => New}.

distributed() ->
    case node() of
        nonode@nohost ->
            _ = os:cmd("epmd -daemon"),
            Name = list_to_atom("riarc_test_" ++ os:getpid()),
            case net_kernel:start([Name, shortnames]) of
                {ok, _} -> ok;
                {error, {already_started, _}} -> ok
            end;
        _ -> ok
    end.
