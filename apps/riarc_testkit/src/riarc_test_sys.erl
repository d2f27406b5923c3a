%% @doc Test systems with known local traces. A script describes a process: which
%% children it spawns, which messages it sends (to its parent or to a child) and how many
%% it receives. Every process logs, as it acts, the exact events it exhibits and sends the
%% log to the test's collector before it exits; the log is the ground truth a monitor's
%% view of the process is compared with.
%%
%% A script: `#{id => Id, own => Bool, acts => [Act]}' with Act one of
%% `{spawn, Script}', `{send, parent}', `{send, {child, I}}' (the I-th child spawned so
%% far), `recv' (take the next message, whatever it is), `{work, Us}' (busy work that
%% exhibits no event). Scripts with `own => true' get a
%% monitor of their own; the others belong to their nearest monitored ancestor.
%% ```
%% 1> Script = riarc_test_sys:pqr(true, true, false).   % P and Q monitored, R in Q's
%% 2> {ok, Result, Logs, Seen} = riarc_test_sys:run(Script, self(), #{}).
%% 3> riarc_test_sys:check(Result, Logs, Seen).
%% ok
%% '''
-module(riarc_test_sys).

-export([proc/3, spec/1, recorder/2, run/3, expected/2, check/3, pqr/3, pqr/4, finalize/1,
         prop_script/0]).

-include_lib("proper/include/proper.hrl").

%% @doc A system process.
-spec proc(map(), pid(), pid()) -> ok.
proc(Script = #{acts := Acts}, Parent, Col) ->
    Self = self(),
    Init = {init, Self, Parent, {?MODULE, proc, [Script, Parent, Col]}},
    {Log, _, _} = lists:foldl(fun(A, Acc) -> act(A, Acc, Parent, Col) end,
                              {[Init], [], 1}, Acts),
    Final = lists:reverse(Log),
    Col ! {log, Self, Final},
    ok.

act({spawn, Child}, {Log, Children, Seq}, _Parent, Col) ->
    Self = self(),
    Args = [Child, Self, Col],
    C = spawn(?MODULE, proc, Args),
    {[{spawn, Self, C, {?MODULE, proc, Args}} | Log], Children ++ [C], Seq};
act({send, Target}, {Log, Children, Seq}, Parent, _Col) ->
    To = case Target of parent -> Parent; {child, I} -> lists:nth(I, Children) end,
    Msg = {msg, self(), Seq},
    To ! Msg,
    {[{send, self(), To, Msg} | Log], Children, Seq + 1};
act(recv, {Log, Children, Seq}, _Parent, _Col) ->
    receive Msg -> {[{recv, self(), Msg} | Log], Children, Seq} end;
act({work, Us}, Acc, _Parent, _Col) ->
    %% Busy, silent work: no events, but time for the tracers to move.
    End = erlang:monotonic_time(microsecond) + Us,
    work_until(End),
    Acc.

work_until(End) ->
    case erlang:monotonic_time(microsecond) >= End of
        true -> ok;
        false -> work_until(End)
    end.

%% @doc The Spec: a recording monitor for every script marked own.
-spec spec(pid()) -> fun((term()) -> {ok, riarc_monitor:monitor()} | undefined).
spec(Col) ->
    fun({?MODULE, proc, [#{own := true, id := Id}, _, _]}) -> {ok, recorder(Col, Id)};
       (_) -> undefined
    end.

%% @doc A monitor that never reaches a verdict and reports each event it analyses.
-spec recorder(pid(), term()) -> riarc_monitor:monitor().
recorder(Col, Id) ->
    fun M(E) -> Col ! {mon, Id, E}, M end.

%% @doc Runs a script as a system under riarc; returns the result, the logs (ground truth)
%% and the events each monitor analysed.
-spec run(map(), pid(), map()) -> {ok, map(), #{pid() => list()}, [{term(), term()}]}
                                   | {error, term()}.
run(Script, Col, Opts) ->
    Self = self(),
    case riarc:run({?MODULE, proc, [Script, Self, Col]}, spec(Col),
                   maps:merge(#{log => false, timeout => 20000}, Opts)) of
        {ok, Result} ->
            N = count(Script),
            %% Each process logged before it exited, and every tracer (hence every event
            %% the monitors were fed) is done before run/3 returns: the messages are here.
            Logs = maps:from_list([receive {log, P, L} -> {P, L} end || _ <- lists:seq(1, N)]),
            {ok, Result, Logs, drain_mon([])};
        Error -> Error
    end.

drain_mon(Acc) ->
    receive {mon, Id, E} -> drain_mon([{Id, E} | Acc])
    after 0 -> lists:reverse(Acc)
    end.

count(#{acts := Acts}) ->
    1 + lists:sum([count(C) || {spawn, C} <- Acts]).

%% @doc The expected local trace of a process, from its log.
-spec expected(pid(), list()) -> list().
expected(P, Log) ->
    Log ++ [{send, P, self(), {log, P, Log}}, {exit, P, normal}].

%% @doc Checks soundness: every monitored process's events reached exactly its
%% partition's monitor, complete and in order; unmonitored processes reached none; no
%% process and no tracer is left.
-spec check(map(), #{pid() => list()}, [{term(), term()}]) -> ok | {error, term()}.
check(Result, Logs, Seen) ->
    Owner = owners(Logs),
    ByProc = lists:foldl(fun({Id, E}, Acc) ->
                                 maps:update_with(riarc_event:origin(E), fun(L) -> [{Id, E} | L] end,
                                                  [{Id, E}], Acc)
                         end, #{}, Seen),
    Problems =
        [{violations, V} || #{violations := V} <- [Result], V =/= []] ++
        [{alive, P} || P <- maps:keys(Logs), is_process_alive(P)] ++
        [{unknown_process, P} || P <- maps:keys(ByProc), not is_map_key(P, Logs)] ++
        lists:append([check_proc(P, Log, maps:get(P, Owner),
                                 lists:reverse(maps:get(P, ByProc, [])))
                      || {P, Log} <- maps:to_list(Logs)]),
    case Problems of
        [] -> ok;
        _ -> {error, Problems}
    end.

check_proc(_P, _Log, none, []) -> [];
check_proc(P, _Log, none, Got) -> [{unmonitored_but_seen, P, Got}];
check_proc(P, Log, Id, Got) ->
    Expected = expected(P, Log),
    Ids = lists:usort([I || {I, _} <- Got]),
    Events = [E || {_, E} <- Got],
    case {Ids, Events} of
        {[Id], Expected} -> [];
        {[], []} -> [{missing_all, P, Id, Expected}];
        {[Id], _} ->
            case same_up_to_arrival(Expected, Events) of
                true -> [];
                false -> [{unsound, P, #{expected => Expected, got => Events}}]
            end;
        _ -> [{unsound, P, #{monitor => Ids, expected_monitor => Id,
                             expected => Expected, got => Events}}]
    end.

%% The VM emits a 'receive' event when a message enters the mailbox, not when the
%% process takes it out, and a process cannot log the former. So where a message can
%% arrive while its receiver is still sending, the process's true local order may put
%% the recv earlier than its log does. What the log does fix: the same events, init first,
%% exit last, the process's own actions in order, and its receives in order (it takes
%% messages first come, first served).
same_up_to_arrival(Expected, Got) ->
    IsRecv = fun(E) -> element(1, E) =:= recv end,
    lists:sort(Expected) =:= lists:sort(Got)
        andalso hd(Expected) =:= hd(Got)
        andalso lists:last(Expected) =:= lists:last(Got)
        andalso lists:filter(IsRecv, Expected) =:= lists:filter(IsRecv, Got)
        andalso [E || E <- Expected, not IsRecv(E)] =:= [E || E <- Got, not IsRecv(E)].

%% Which monitor owns each process: its own, or its nearest monitored ancestor's.
owners(Logs) ->
    Info = maps:map(fun(_, [{init, _, Parent, {_, _, [#{own := Own, id := Id} | _]}} | _]) ->
                            {Parent, Own, Id}
                    end, Logs),
    maps:map(fun(P, _) -> owner(P, Info) end, Info).

owner(P, Info) ->
    case maps:get(P, Info, undefined) of
        undefined -> none;
        {_Parent, true, Id} -> Id;
        {Parent, false, _} -> owner(Parent, Info)
    end.

%% @doc The P/Q/R system of fig. 2a, with the given processes monitored on their own.
-spec pqr(boolean(), boolean(), boolean()) -> map().
pqr(OwnP, OwnQ, OwnR) ->
    pqr(OwnP, OwnQ, OwnR, 0).

%% @doc The same, with Q busy for SlowUs after its receive: its tracer has time to take it
%% over while its earlier events are still being routed (fig. 6).
-spec pqr(boolean(), boolean(), boolean(), non_neg_integer()) -> map().
pqr(OwnP, OwnQ, OwnR, SlowUs) ->
    R = #{id => r, own => OwnR, acts => []},
    Q = #{id => q, own => OwnQ, acts => [recv, {work, SlowUs}, {spawn, R}]},
    #{id => p, own => OwnP, acts => [{spawn, Q}, {send, {child, 1}}]}.

%%% Random systems

%% @doc PropEr generator of scripts: random spawn trees and message exchanges.
-spec prop_script() -> proper_types:type().
prop_script() ->
    ?LET(Raw, raw(3), finalize(Raw)).

raw(0) -> {bool(), choose(0, 2), []};
raw(D) ->
    {bool(), choose(0, 2), resize(3, list({raw(D - 1), choose(0, 2)}))}.

%% @doc Turns a raw tree {Own, SendsToParent, [{Child, SendsToChild}]} into a script whose
%% receive counts match the messages its parent and children send it.
-spec finalize(term()) -> map().
finalize(Raw) ->
    {S, _} = finalize(Raw, 0, 0, true),
    S.

finalize({Own, ToParent, Children}, FromParent, Id, IsRoot) ->
    {Kids, Next} = lists:foldl(
                     fun({{_, CP, _} = C, K}, {Acc, N}) ->
                             {CS, N1} = finalize(C, K, N, false),
                             {Acc ++ [{CS, K, CP}], N1}
                     end, {[], Id + 1}, Children),
    Spawns = lists:append([[{spawn, CS} | lists:duplicate(K, {send, {child, I}})]
                           || {I, {CS, K, _}} <- lists:zip(lists:seq(1, length(Kids)), Kids)]),
    Up = case IsRoot of true -> 0; false -> ToParent end,
    NRecv = FromParent + lists:sum([CP || {_, _, CP} <- Kids]),
    Acts = lists:duplicate(Up, {send, parent}) ++ Spawns ++ lists:duplicate(NRecv, recv),
    {#{id => Id, own => Own, acts => Acts, sends_up => Up}, Next}.
