%% @doc Test systems whose timers send the atom `timeout': its message is delivered by the
%% clock service, which the VM's tracing shows exactly as a receive timeout (riarc reads
%% such timeouts both ways: riarc_analysis_core). Each returns `ok' once its process took
%% the timer's message.
%% ```
%% 1> riarc_demo_timers:self_timer().
%% ok
%% 2> riarc_demo_timers:other_timer().
%% ok
%% '''
-module(riarc_demo_timers).

-export([self_timer/0, self_timer4/0, named_timer/0, nobody_timer/0, other_timer/0, plain_timeout/0]).

%% @doc A timer to itself (erlang:send_after/3), its message taken.
-spec self_timer() -> ok.
self_timer() ->
    _ = erlang:send_after(0, self(), timeout),
    receive timeout -> ok end.

%% @doc The same through erlang:send_after/4.
-spec self_timer4() -> ok.
self_timer4() ->
    _ = erlang:send_after(0, self(), timeout, []),
    receive timeout -> ok end.

%% @doc The same to its own registered name (taken for the run, given back after).
-spec named_timer() -> ok.
named_timer() ->
    true = register(riarc_demo_timers_named, self()),
    _ = erlang:send_after(0, riarc_demo_timers_named, timeout),
    receive timeout -> ok end,
    true = unregister(riarc_demo_timers_named),
    ok.

%% @doc A timer to a name nobody holds, then a receive that times out.
-spec nobody_timer() -> ok.
nobody_timer() ->
    _ = erlang:send_after(0, riarc_demo_timers_nobody, timeout),
    receive never -> ok after 0 -> ok end.

%% @doc A timer to another process, which takes its message; returns once it ended.
-spec other_timer() -> ok.
other_timer() ->
    {P, Ref} = spawn_monitor(fun() -> receive timeout -> ok end end),
    _ = erlang:send_after(0, P, timeout),
    receive {'DOWN', Ref, process, P, _} -> ok end.

%% @doc A receive that times out, and no timer.
-spec plain_timeout() -> ok.
plain_timeout() ->
    receive never -> ok after 0 -> ok end.
