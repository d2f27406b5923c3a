%% Small systems for riarc_inline_tests and riarc_central_tests, in a module of their own
%% so that weaving and restoring them never touches the code the test process is running.
-module(riarc_inline_sys).

-export([guarded/1, bang_value/1, funs/1, dies/0, crash_child/0, receiver/0, three/0,
         three_child/1, three_spec/0, remote/1, unregistered/0, sleeper/0, timers/0,
         take_any/0]).

%% A receive with guards and an after clause; only the taken message is an event.
guarded(Parent) ->
    R = receive
            {n, N} when N > 10 -> {big, N};
            {n, N} -> {small, N}
        after 5000 -> timeout
        end,
    Parent ! {got, R},
    receive after 0 -> ok end.

%% Sends to names nobody holds: `!' fails, gen_server:cast/2 does not.
unregistered() ->
    {'EXIT', {badarg, _}} = (catch (riarc_inline_nobody ! x)),
    ok = gen_server:cast(riarc_inline_nobody, y),
    ok = gen_server:cast({global, riarc_inline_nobody}, z),
    ok.

%% Sleeps: OTP's timer:sleep/1 and a receive with only an `after', each a timeout.
sleeper() ->
    ok = timer:sleep(0),
    receive after 1 -> ok end,
    ok = timer:sleep(1).

%% A receive that takes any message, or none.
take_any() ->
    receive M -> {took, M} after 0 -> none end.

%% Timers to itself, whose messages the clock service delivers.
timers() ->
    _ = erlang:send_after(0, self(), {tick, 1}),
    receive {tick, 1} -> ok end,
    Ref = erlang:start_timer(0, self(), tick),
    receive {timeout, Ref, tick} -> ok end.

%% `!' used as a value, inside a fun.
bang_value(Parent) ->
    F = fun(X) -> Parent ! X end,
    {echo, 1} = F({echo, 1}),
    ok.

%% A spawned fun and a spawn/3 of a monitored function.
funs(Parent) ->
    Child = spawn(fun() -> receive go -> Parent ! gone end end),
    Child ! go,
    spawn(riarc_inline_sys, receiver, []) ! stop,
    ok.

receiver() ->
    receive stop -> ok end.

dies() ->
    receive never -> ok end.

crash_child() ->
    error(deliberate).

%% Three children, each told one message: a greeting (its monitor accepts at the exit),
%% an error (it rejects, with an explanation), a message over max_payload (its monitor
%% decides on a view with the message cut out: inconclusive). Each child's own events
%% only, so a run's entries are the same every time and in every mode.
three() ->
    Kids = [spawn_monitor(riarc_inline_sys, three_child, [Msg])
            || Msg <- [hello, {error, boom}, {big, binary:copy(<<1>>, 4096)}]],
    [receive {'DOWN', Ref, process, Pid, _} -> ok end || {Pid, Ref} <- Kids],
    ok.

three_child(Msg) ->
    self() ! Msg,
    receive Msg -> ok end.

%% three/0's monitors: a child rejects at an error, accepts at its exit.
three_spec() ->
    fun({riarc_inline_sys, three_child, _}) ->
            {ok, fun M({recv, _, {error, _}}) -> reject;
                     M({exit, _, _}) -> accept;
                     M(_) -> M end};
       (_) -> undefined
    end.

%% A start on Node: on this node, a start as any; on another, one inline monitoring
%% leaves alone.
remote(Node) ->
    _ = spawn(Node, timer, sleep, [0]),
    ok.
