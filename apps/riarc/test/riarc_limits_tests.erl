%% The limits of issue 16 that bound a whole session and a tracer's memory, and what the
%% trust boundary counts: max_events (the tracers' counts, reported in batches and as
%% they end), max_queue_bytes (a tracer's memory, read at the mailbox check's cadence),
%% forged trace messages counted among the result's errors, and the warning of the
%% process tracers' backend, which has no seal.
-module(riarc_limits_tests).

-include_lib("eunit/include/eunit.hrl").

-export([looper/1, loopers/2, victim/0]).

%% Sends itself N messages and takes them: 2N + 2 events (init, sends, receives, exit).
-spec looper(non_neg_integer()) -> ok.
looper(N) ->
    [self() ! {n, I} || I <- lists:seq(1, N)],
    [receive {n, I} -> ok end || I <- lists:seq(1, N)],
    ok.

%% Starts N loopers of K messages each, and ends.
-spec loopers(pos_integer(), non_neg_integer()) -> ok.
loopers(N, K) ->
    _ = [spawn(?MODULE, looper, [K]) || _ <- lists:seq(1, N)],
    ok.

%% Waits for orders: `crash' ends it abnormally, `{chat, N, From}' sends itself N messages
%% (`{chat, N, Payload, From}': each carrying Payload).
-spec victim() -> ok.
victim() ->
    receive
        crash -> exit(boom);
        {chat, N, From} -> _ = looper(N), From ! chatted, victim();
        {chat, N, Payload, From} ->
            [self() ! {n, I, Payload} || I <- lists:seq(1, N)],
            [receive {n, I, _} -> ok end || I <- lists:seq(1, N)],
            From ! chatted,
            victim()
    end.

quiet() -> fun M(_) -> M end.

spec() ->
    fun({?MODULE, looper, _}) -> {ok, quiet()};
       ({?MODULE, loopers, _}) -> undefined;
       ({?MODULE, victim, []}) -> {ok, fun M({exit, _, normal}) -> accept;
                                          M({exit, _, _}) -> reject;
                                          M(_) -> M end}
    end.

%% The processes with a trace flag left.
traced() ->
    [P || {P, _} <- maps:get(processes, riarc_test_peer:traced(node()))].

%%% max_events

%% A run over its event budget stops as an overload: the partition cut short is
%% inconclusive, the exit status 1, nothing left traced; the session acted within the
%% bound docs/production.md gives (one tracer: its report of at most 1024 messages).
max_events_test_() ->
    {timeout, 60, fun max_events/0}.

max_events() ->
    {ok, R = #{verdicts := [V]}} =
        riarc:run({?MODULE, looper, [20000]}, spec(), #{limits => #{max_events => 5000}}),
    ?assertMatch({max_events, Seen, 5000} when Seen > 5000, maps:get(overload, R)),
    {max_events, Seen, _} = maps:get(overload, R),
    ?assert(Seen < 5000 + 2 * 1024),
    ?assertMatch(#{verdict := inconclusive, reason := {overload, {max_events, _, 5000}}}, V),
    ?assertEqual(1, riarc_result:status(R)),
    ?assertEqual([], traced()).

%% The same with monitors in their tracers, every looper's partition adopted by the
%% root's tracer (riarc_tracer_adopted): the overload ends that tracer, and with it every
%% partition it adopted; each reads inconclusive, none is missing, none reads none or
%% accept, and nothing is left traced.
max_events_adopted_test_() ->
    {timeout, 60, fun() ->
        {ok, R = #{verdicts := Vs}} =
            riarc:run({?MODULE, loopers, [20, 400]}, spec(),
                      #{analysis => inline, limits => #{max_events => 5000}}),
        ?assertMatch({max_events, _, 5000}, maps:get(overload, R)),
        ?assertMatch(#{spawned := 1}, maps:get(tracers, R)),
        ?assertEqual(20, length(Vs)),
        ?assertEqual([inconclusive], lists:usort([V || #{verdict := V} <- Vs])),
        ?assertEqual(1, riarc_result:status(R)),
        ?assertEqual([], traced())
    end}.

%% Every policy stops at max_events: the count is the session's, no partition's to shed.
max_events_shed_test_() ->
    {timeout, 60, fun() ->
        {ok, R} = riarc:run({?MODULE, looper, [20000]}, spec(),
                            #{limits => #{max_events => 5000, policy => shed}}),
        ?assertMatch({max_events, _, 5000}, maps:get(overload, R))
    end}.

%% A tracer that ends before its first batch (fewer than 1024 messages) still counts:
%% its last counts reach the session before its end.
max_events_last_batch_test() ->
    {ok, R} = riarc:run({?MODULE, looper, [400]}, spec(), #{limits => #{max_events => 700}}),
    ?assertMatch({max_events, 802, 700}, maps:get(overload, R)),
    ?assertEqual(802, maps:get(events, R)).

%% Within the budget nothing happens; the default is no budget.
max_events_within_test() ->
    {ok, R1} = riarc:run({?MODULE, looper, [400]}, spec(), #{limits => #{max_events => 802}}),
    {ok, R2} = riarc:run({?MODULE, looper, [400]}, spec(), #{}),
    [?assertMatch(#{overload := undefined, events := 802, verdicts := [#{verdict := none}]}, R)
     || R <- [R1, R2]].

%%% max_queue_bytes

%% The tracer's memory is read at the length check's cadence: with a limit below any
%% process's size, the first check (1024 messages in) is an overload that says so; with
%% the default (1 GiB) the same run is not.
max_queue_bytes_test_() ->
    {timeout, 60, fun max_queue_bytes/0}.

max_queue_bytes() ->
    {ok, R} = riarc:run({?MODULE, looper, [5000]}, spec(), #{limits => #{max_queue_bytes => 1}}),
    ?assertMatch({mailbox_bytes, T, Bytes, 1} when is_pid(T) andalso Bytes > 1000,
                 maps:get(overload, R)),
    ?assertEqual(1, riarc_result:status(R)),
    ?assertEqual([], traced()),
    {ok, R2} = riarc:run({?MODULE, looper, [5000]}, spec(), #{}),
    ?assertEqual(undefined, maps:get(overload, R2)).

%% What the limit is for: a mailbox short in messages and large in bytes. The tracer is
%% held (suspended by the test) while its process sends itself 2000 messages of 4 kB
%% each: 4000 trace messages, 16 MB, waiting. Resumed, its first check finds them over
%% a 4 MiB limit though the mailbox is far under max_queue (a million); with the default
%% limit the same backlog is taken.
max_queue_bytes_backlog_test_() ->
    {timeout, 60, fun() ->
        {mailbox_bytes, T, Bytes, 4194304} = backlog(#{max_queue_bytes => 4194304}),
        ?assert(is_pid(T) andalso Bytes > 4194304),
        undefined = backlog(#{})
    end}.

backlog(Limits) ->
    {ok, S} = riarc:start({?MODULE, victim, []}, spec(), #{limits => Limits}),
    #{tracers := [T], processes := [Victim]} = riarc:alive(S),
    true = erlang:suspend_process(T),
    Victim ! {chat, 2000, lists:seq(1, 250), self()},
    receive chatted -> ok end,
    true = erlang:resume_process(T),
    Victim ! crash,
    {ok, R} = riarc_session:finish(S, 30000),
    ?assertEqual([], traced()),
    maps:get(overload, R).

%% Bad values are bad input.
options_test() ->
    [?assertMatch({error, {riarc, {bad_option, limits, _}}},
                  riarc:run({?MODULE, looper, [1]}, spec(), #{limits => L}))
     || L <- [#{max_events => 0}, #{max_queue_bytes => -1}, #{max_events => many},
              #{max_join_hold => 0}, #{max_join_hold => infinity}]],
    ?assertMatch({error, {riarc, {bad_option, follow_joining, yes}}},
                 riarc:run({?MODULE, looper, [1]}, spec(), #{follow_joining => yes})),
    %% No node joins: the run is as without the option.
    ?assertMatch({ok, #{errors := []}},
                 riarc:run({?MODULE, looper, [1]}, spec(), #{follow_joining => true, limits => #{max_join_hold => 10}})),
    ?assertMatch({ok, _}, riarc:run({?MODULE, looper, [1]}, spec(),
                                    #{limits => #{max_events => infinity,
                                                  max_queue_bytes => infinity}})).

%%% Forged trace messages

%% Forged trace messages a tracer refuses (no seal, a wrong seal) are counted, per tracer,
%% and reach the result's errors with the forged control messages; the verdict comes
%% from the real events.
forged_trace_counted_test() ->
    {ok, S} = riarc:start({?MODULE, victim, []}, spec(), #{backend => route}),
    #{tracers := [T], processes := [Victim]} = riarc:alive(S),
    _ = [T ! {trace, Victim, exit, normal} || _ <- lists:seq(1, 5)],
    _ = [T ! {riarc_sealed, 1, {trace, Victim, exit, normal}} || _ <- lists:seq(1, 2)],
    %% Not in a trace message's shape: not a forged event (nothing riarc would take).
    T ! hello,
    Victim ! {chat, 10, self()},
    receive chatted -> ok end,
    Victim ! crash,
    {ok, R = #{verdicts := [V]}} = riarc_session:finish(S, 10000),
    ?assertMatch(#{verdict := reject}, V),
    ?assertEqual([{riarc_session, {forged_messages, 7}}], maps:get(errors, R)),
    ?assertEqual(1, riarc_result:status(R)).

%% Counted in batches: a long run reports as it goes, and the forgeries sent before a
%% thousand messages of real events are counted once, not once per batch.
forged_trace_batched_test_() ->
    {timeout, 60, fun() ->
        {ok, S} = riarc:start({?MODULE, victim, []}, spec(), #{backend => route}),
        #{tracers := [T], processes := [Victim]} = riarc:alive(S),
        _ = [T ! {trace, Victim, exit, normal} || _ <- lists:seq(1, 3)],
        Victim ! {chat, 3000, self()},
        receive chatted -> ok end,
        Victim ! crash,
        {ok, R} = riarc_session:finish(S, 30000),
        ?assertEqual([{riarc_session, {forged_messages, 3}}], maps:get(errors, R))
    end}.

%% A trace message forged to the session (the routing table's default owner) is counted
%% too, not taken as an event of a process nobody traced.
forged_to_session_test() ->
    {ok, S} = riarc:start({?MODULE, victim, []}, spec(), #{backend => route}),
    #{processes := [Victim]} = riarc:alive(S),
    S ! {trace, Victim, exit, normal},
    Victim ! crash,
    {ok, R} = riarc_session:finish(S, 10000),
    ?assertEqual([{riarc_session, {forged_messages, 1}}], maps:get(errors, R)).

%%% The process tracers' backend has no seal

%% It cannot refuse a forged trace event, and does not pretend to: the result warns, and
%% the command line prints the warning's sentence. The routing table's result does not.
unsealed_evm_test() ->
    {ok, R} = riarc:run({?MODULE, looper, [3]}, spec(), #{backend => evm}),
    ?assertEqual([{unsealed, evm}], maps:get(warnings, R)),
    ?assertMatch("the process tracers' backend" ++ _, riarc_result:format_warning({unsealed, evm})),
    ?assertEqual(0, riarc_result:status(R)),
    {ok, R2} = riarc:run({?MODULE, looper, [3]}, spec(), #{backend => route}),
    ?assertEqual([], maps:get(warnings, R2)).
