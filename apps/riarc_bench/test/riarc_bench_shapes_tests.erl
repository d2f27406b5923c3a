%% riarc_bench_shapes and riarc_bench_alone without peer VMs: the load driver's system
%% returns the response times its master sampled (the MRT bench-shapes reports), and
%% instrumentation alone gives the master and every worker a monitor that decides nothing.
-module(riarc_bench_shapes_tests).

-include_lib("eunit/include/eunit.hrl").

%% 20 workers x 100 requests, about 10 % of them stamped: the master's samples come back,
%% every one a response time in µs, none lost between the batches and the result.
%% In a process of its own: an earlier test sharing EUnit's process may have left it
%% trapping exits, and the caller's mailbox is what is looked at.
load_latencies_test() ->
    {Pid, Ref} = spawn_monitor(fun() ->
        {latencies_us, L} = riarc_bench_shapes:load(burst, 20),
        ?assert(length(L) > 50),
        ?assert(length(L) < 2000),
        ?assert(lists:all(fun(X) -> is_integer(X) andalso X >= 0 end, L)),
        %% Nothing is left behind in the caller's mailbox.
        ?assertEqual({messages, []}, process_info(self(), messages))
    end),
    receive {'DOWN', Ref, process, Pid, Why} -> ?assertEqual(normal, Why) end.

%% Under riarc with instrumentation alone: the root, the master and the 10 workers end,
%% the master and workers with a monitor each (no verdict), and the load driver's
%% checks (ack_errors = 0) hold.
alone_test() ->
    ?assertEqual([recv], riarc_bench_alone:trace_flags()),
    ?assertEqual(undefined, riarc_bench_alone:spec({riarc_bench_shapes, load, [burst, 10]})),
    {ok, R} = riarc:run({riarc_bench_shapes, load, [burst, 10]}, riarc_bench_alone,
                        #{log => false}),
    Vs = maps:get(verdicts, R),
    ?assertEqual(11, length(Vs)),
    ?assertEqual([none], lists:usort([V || #{verdict := V} <- Vs])).
