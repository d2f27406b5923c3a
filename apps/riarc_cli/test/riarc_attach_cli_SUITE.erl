%% `bin/riarc attach' against a peer node on this machine, as a user runs it (an OS
%% process): attached to every new process with the P/Q/R properties, it prints a verdict
%% line for each process the peer starts, detaches on SIGTERM with a summary and status
%% 0, and leaves the peer with no trace flag and none of riarc's modules. Bad input is
%% status 2, an unreachable node status 1.
-module(riarc_attach_cli_SUITE).

-import(riarc_test_cli, [root/0]).

-include_lib("stdlib/include/assert.hrl").
-include_lib("common_test/include/ct.hrl").

-export([all/0, groups/0, suite/0, init_per_testcase/2, end_per_testcase/2]).
-export([attach_json/1]).
-export([run_follow/1, attach_new_sigterm/1, attach_kill9/1, attach_for_name/1, attach_errors/1,
         attach_follow/1]).

-spec all() -> [atom() | {group, atom()}].
all() -> [attach_errors] ++ riarc_test_tier:slow_groups([distributed]).

%% The full tier's cases (make test-all): riarc_test_tier.
-spec groups() -> [{atom(), list(), [atom()]}].
groups() -> [{distributed, [], [attach_new_sigterm, attach_kill9, attach_for_name, run_follow,
          attach_follow, attach_json]}].

-spec suite() -> list().
suite() -> [{timetrap, {minutes, 5}}].

-spec init_per_testcase(atom(), list()) -> list().
init_per_testcase(_Case, Config) ->
    {Peer, Node} = riarc_test_peer:start(riarc_attach_cli, []),
    [{peer, Peer}, {node, Node} | Config].

-spec end_per_testcase(atom(), list()) -> ok.
end_per_testcase(_Case, Config) ->
    catch peer:stop(?config(peer, Config)),
    ok.


%% bin/riarc as an OS process, its output (stderr too) line by line.
start_cli(Args) ->
    open_port({spawn_executable, filename:join(root(), "bin/riarc")},
              [{args, Args}, {line, 4096}, stderr_to_stdout, exit_status, {cd, root()}]).

%% Lines until one satisfies Done (returned last), or the exit status.
read_until(Port, Done) -> read_until(Port, Done, []).
read_until(Port, Done, Acc) ->
    receive
        {Port, {data, {eol, L}}} ->
            case Done(L) of
                true -> lists:reverse([L | Acc]);
                false -> read_until(Port, Done, [L | Acc])
            end;
        {Port, {data, {noeol, L}}} -> read_until(Port, Done, [L | Acc]);
        {Port, {exit_status, St}} -> lists:reverse([{status, St} | Acc])
    after 120000 -> error({timeout, lists:reverse(Acc)})
    end.

is_verdict(L) -> lists:prefix("<", L).

cookie() -> atom_to_list(erlang:get_cookie()).

attach_new_sigterm(Config) ->
    Node = ?config(node, Config),
    Props = filename:join(root(), "examples/props/pqr.prop"),
    %% The system's own code, on the peer: a test system, which riarc does not ship.
    {M, Bin, File} = code:get_object_code(riarc_demo_pqr),
    {module, M} = erpc:call(Node, code, load_binary, [M, File, Bin]),
    Port = start_cli(["attach", "--node", atom_to_list(Node), "--cookie", cookie(), "--new",
                      "--props", Props, "--for", "600"]),
    {os_pid, OsPid} = erlang:port_info(Port, os_pid),
    %% (A build's output may come first, and end without a newline.)
    _ = read_until(Port, fun(L) -> string:find(L, "riarc attach: attached") =/= nomatch end),
    %% Three P/Q/R systems started on the peer after the attach point.
    [erpc:call(Node, erlang, spawn, [riarc_demo_pqr, p, []]) || _ <- lists:seq(1, 3)],
    Lines = read_n_verdicts(Port, 9, []),
    ?assertEqual(9, length(Lines)),
    [?assertMatch([_Pid, _MFA, V] when V =:= "accept"; V =:= "none", string:split(L, " ", all))
     || L <- Lines],
    ?assertEqual(3, length([L || L <- Lines, string:find(L, "riarc_demo_pqr:r/0") =/= nomatch])),
    _ = os:cmd("kill -TERM " ++ integer_to_list(OsPid)),
    Rest = read_until(Port, fun(_) -> false end),
    ?assertEqual({status, 0}, lists:last(Rest)),
    ?assert(lists:any(fun(L) -> is_list(L) andalso
                                    lists:prefix("riarc attach: 9 verdicts (", L) andalso
                                    string:find(L, "detached on sigterm") =/= nomatch
                      end, Rest)),
    untraced_unloaded(Node).

%% `--format json': an object per verdict as it is reached (standard error still says
%% when it attached), then at SIGTERM the summary object, the exit status as in text.
attach_json(Config) ->
    Node = ?config(node, Config),
    Props = filename:join(root(), "examples/props/pqr.prop"),
    {M, Bin, File} = code:get_object_code(riarc_demo_pqr),
    {module, M} = erpc:call(Node, code, load_binary, [M, File, Bin]),
    Port = start_cli(["attach", "--node", atom_to_list(Node), "--cookie", cookie(), "--new",
                      "--props", Props, "--for", "600", "--format", "json"]),
    {os_pid, OsPid} = erlang:port_info(Port, os_pid),
    _ = read_until(Port, fun(L) -> string:find(L, "riarc attach: attached") =/= nomatch end),
    _ = erpc:call(Node, erlang, spawn, [riarc_demo_pqr, p, []]),
    IsObject = fun(L) -> lists:prefix("{", L) end,
    Verdicts = [begin
                    Out = read_until(Port, IsObject),
                    {ok, O} = riarc_json:decode(list_to_binary(lists:last(Out))),
                    O
                end || _ <- lists:seq(1, 3)],
    ?assertEqual([<<"riarc_demo_pqr:p/0">>, <<"riarc_demo_pqr:q/0">>, <<"riarc_demo_pqr:r/0">>],
                 lists:sort([maps:get(<<"mfa">>, V) || V <- Verdicts])),
    [?assertNot(is_map_key(<<"summary">>, V)) || V <- Verdicts],
    _ = os:cmd("kill -TERM " ++ integer_to_list(OsPid)),
    Rest = read_until(Port, fun(_) -> false end),
    ?assertEqual({status, 0}, lists:last(Rest)),
    [SummaryLine] = [L || L <- Rest, is_list(L), IsObject(L)],
    {ok, Summary} = riarc_json:decode(list_to_binary(SummaryLine)),
    ?assertMatch(#{<<"summary">> := true, <<"exit_status">> := 0, <<"errors">> := [],
                   <<"ended">> := <<"detached on sigterm">>}, Summary),
    ?assertEqual(3, lists:sum(maps:values(maps:get(<<"verdicts">>, Summary)))),
    untraced_unloaded(Node).

%% The attaching VM killed with SIGKILL (no chance to detach): the session on the peer
%% ends with its owner, and the node-wide state riarc changed there (the send and receive
%% patterns, the call patterns) is as it was before the attach, and nothing is traced.
attach_kill9(Config) ->
    Node = ?config(node, Config),
    Props = named_target(Node),
    Before = node_patterns(Node),
    Port = start_cli(["attach", "--node", atom_to_list(Node), "--cookie", cookie(),
                      "--name", "riarc_cli_target", "--props", Props, "--for", "600"]),
    {os_pid, OsPid} = erlang:port_info(Port, os_pid),
    _ = read_until(Port, fun(L) -> string:find(L, "riarc attach: attached") =/= nomatch end),
    ?assertNotEqual(Before, node_patterns(Node)),
    [Session] = [P || {_, P, _, _} <- erpc:call(Node, supervisor, which_children, [riarc_session_sup])],
    Ref = monitor(process, Session),
    _ = os:cmd("kill -KILL " ++ integer_to_list(OsPid)),
    ?assertMatch({status, _}, lists:last(read_until(Port, fun(_) -> false end))),
    receive {'DOWN', Ref, process, Session, Why} -> ct:pal("session on the peer: ~p", [Why]) end,
    ?assertEqual(Before, node_patterns(Node)),
    ?assertEqual(#{processes => [], new_processes => []}, riarc_test_peer:traced(Node)).

%% The send and receive match specifications of Node and the call patterns riarc sets.
node_patterns(Node) ->
    [erpc:call(Node, erlang, trace_info, [What, match_spec]) || What <- [send, 'receive']]
        ++ [erpc:call(Node, erlang, trace_info, [MFA, traced])
            || MFA <- [{erts_internal, dist_spawn_request, 4}, {erlang, trace, 3},
                       {erlang, trace_pattern, 2}, {erlang, trace_pattern, 3}]].

read_n_verdicts(_Port, 0, Acc) -> lists:reverse(Acc);
read_n_verdicts(Port, N, Acc) ->
    case read_until(Port, fun is_verdict/1) of
        [{status, _} | _] = Out -> error({exited, Out});
        Out ->
            case lists:last(Out) of
                {status, _} -> error({exited, Out});
                L -> read_n_verdicts(Port, N - 1, [L | Acc])
            end
    end.

%% A registered gen_event on the peer (riarc_cli_target) and a property for it: the
%% property file's name.
named_target(Node) ->
    {ok, _} = erpc:call(Node, gen_event, start, [{local, riarc_cli_target}]),
    Props = filename:join(root(), "_build/test/attach_any.prop"),
    ok = file:write_file(Props, "with gen_event:init_it(_, _, _, _, _, _) monitor\n"
                                "  [G ** Reason when Reason =/= normal] ff.\n"),
    Props.

%% A registered gen_server on the peer, watched for two seconds (--for): the process is
%% open (none), the status 0.
attach_for_name(Config) ->
    Node = ?config(node, Config),
    Spec = named_target(Node),
    Port = start_cli(["attach", "--node", atom_to_list(Node), "--cookie", cookie(),
                      "--name", "riarc_cli_target", "--props", Spec, "--for", "2"]),
    Out = read_until(Port, fun(_) -> false end),
    ?assertEqual({status, 0}, lists:last(Out)),
    ?assert(lists:any(fun(L) -> is_list(L) andalso lists:prefix("riarc attach: ", L) andalso
                                    string:find(L, "; detached from") =/= nomatch end, Out)),
    untraced_unloaded(Node).

attach_errors(Config) ->
    Node = atom_to_list(?config(node, Config)),
    %% Bad input: no target, a bad pid.
    ?assertMatch({status, 2}, lists:last(read_until(start_cli(["attach", "--node", Node,
        "--monitors", "riarc_demo_monitors"]), fun(_) -> false end))),
    ?assertMatch({status, 2}, lists:last(read_until(start_cli(["attach", "--node", Node,
        "--cookie", cookie(), "--pid", "nopid", "--monitors", "riarc_demo_monitors"]),
                                                    fun(_) -> false end))),
    %% A node that is not there.
    Out = read_until(start_cli(["attach", "--node", "riarc_no_such_node@nohost", "--name", "x",
                                "--monitors", "riarc_demo_monitors"]), fun(_) -> false end),
    ?assertMatch({status, 1}, lists:last(Out)).

%% `attach --follow': a live process on the peer, attached to by name, starts a server
%% there and three clients on a second peer, followed there: a verdict line for the
%% server and one for each client (pids of the second peer), printed as they are
%% reached; SIGTERM detaches with status 0, and neither peer keeps a trace flag or
%% riarc's modules.
attach_follow(Config) ->
    Node = ?config(node, Config),
    {Peer2, Node2} = riarc_test_peer:start(riarc_attach_cli_b, []),
    try
        {M, Bin, File} = code:get_object_code(riarc_user_sys),
        [{module, M} = erpc:call(N, code, load_binary, [M, File, Bin]) || N <- [Node, Node2]],
        Spreader = erpc:call(Node, erlang, spawn, [riarc_user_sys, spreader, []]),
        true = erpc:call(Node, erlang, register, [riarc_spreader, Spreader]),
        Port = start_cli(["attach", "--node", atom_to_list(Node), "--cookie", cookie(),
                          "--name", "riarc_spreader", "--follow", atom_to_list(Node2),
                          "-pa", filename:dirname(code:which(riarc_user_sys)),
                          "--monitors", "riarc_user_sys", "--for", "600"]),
        {os_pid, OsPid} = erlang:port_info(Port, os_pid),
        _ = read_until(Port, fun(L) -> string:find(L, "riarc attach: attached") =/= nomatch end),
        Spreader ! {go, Node2, 3, 4, self()},
        receive spread_done -> ok end,
        Lines = read_n_verdicts(Port, 4, []),
        [Server] = [L || L <- Lines, lists:suffix("riarc_user_sys:server/0 accept", L)],
        Clients = [L || L <- Lines, lists:suffix("riarc_user_sys:client/3 accept", L)],
        ?assertEqual(3, length(Clients), Lines),
        %% The clients' pids name one node, not the server's (`<N.' is a node of the CLI's).
        NodeOf = fun(L) -> hd(string:split(L, ".")) end,
        ?assertMatch([_], lists:usort([NodeOf(C) || C <- Clients]), Lines),
        ?assertNotEqual(NodeOf(Server), NodeOf(hd(Clients)), Lines),
        _ = os:cmd("kill -TERM " ++ integer_to_list(OsPid)),
        Rest = read_until(Port, fun(_) -> false end),
        ?assertEqual({status, 0}, lists:last(Rest), Rest),
        untraced_unloaded(Node),
        untraced_unloaded(Node2)
    after
        peer:stop(Peer2)
    end.

untraced_unloaded(Node) ->
    ?assertEqual(#{processes => [], new_processes => []}, riarc_test_peer:traced(Node)),
    ?assertEqual(false, erpc:call(Node, code, is_loaded, [riarc])),
    ?assertEqual(false, erpc:call(Node, code, is_loaded, [riarc_tracer])).

%% `run --follow NODE': the system's server here, its three clients started on the peer;
%% all four verdict lines printed, the clients' pids the peer's, status 0; afterwards
%% nothing on the peer is traced or loaded by riarc.
run_follow(Config) ->
    Node = ?config(node, Config),
    {M, Bin, File} = code:get_object_code(riarc_user_sys),
    {module, M} = erpc:call(Node, code, load_binary, [M, File, Bin]),
    Port = start_cli(["run", "--follow", atom_to_list(Node), "--cookie", cookie(),
                      "-pa", filename:dirname(code:which(riarc_user_sys)),
                      "-m", "riarc_user_sys", "-f", "spread",
                      "-a", "['" ++ atom_to_list(Node) ++ "', 3, 4]", "--monitors", "riarc_user_sys"]),
    Out = read_until(Port, fun(_) -> false end),
    ?assertEqual({status, 0}, lists:last(Out), Out),
    %% (A build's output may come first, and end without a newline.)
    Verdicts = [string:find(L, "<") || L <- Out, is_list(L), string:find(L, " riarc_user_sys:") =/= nomatch],
    ?assertMatch(["<0." ++ _], [L || L <- Verdicts, lists:suffix("riarc_user_sys:server/0 accept", L)], Out),
    Clients = [L || L <- Verdicts, lists:suffix("riarc_user_sys:client/3 accept", L)],
    ?assertEqual(3, length(Clients), Out),
    ?assertEqual([], [L || L = "<0." ++ _ <- Clients]),
    ?assertEqual(4, length(Verdicts), Out),
    untraced_unloaded(Node).
