%% Offline checks under the limits of a live run (issue 29, item 3): max_tracers,
%% max_events and max_queue. Past one, the result is inconclusive with the limit named,
%% the engine stops replaying (riarc_backend_log:close/1), and nothing of riarc's is left
%% on the node. Named after the engine so that `rebar3 eunit --app riarc_offline' runs
%% them.
%%
%% The generated traces are seeded (riarc_test_tier): RIARC_PROP_SEED="A,B,C" replays
%% another; a failing run prints its seed.
-module(riarc_backend_log_tests).

-include_lib("eunit/include/eunit.hrl").

-export([remains/2, tmp/1, shuffle/1]).

-define(M, riarc_demo_pqr).

limits_test_() ->
    {timeout, 300, fun() -> seeded(fun limits/0) end}.

limits() ->
    {ok, _} = application:ensure_all_started(riarc),
    Every = fun(_) -> {ok, fun M({exit, _, normal}) -> accept; M(_) -> M end} end,
    %% Many roots, each with an init and an exit, in a random interleaving: past
    %% max_tracers before anything starts.
    N = 3000,
    Roots = tmp("roots.txt"),
    write_text(Roots, shuffle([[{init, I, x, {?M, r, []}}, {exit, I, normal}] || I <- lists:seq(1, N)])),
    R1 = checked(Roots, Every, #{limits => #{max_tracers => 100}}),
    ?assertEqual({tracers, N, 100}, maps:get(overload, R1)),
    ?assertEqual(N, length(maps:get(verdicts, R1))),
    ?assertEqual([inconclusive], lists:usort([V || #{verdict := V} <- maps:get(verdicts, R1)])),
    ?assertMatch([{riarc_offline, {limit, max_tracers, _}}], maps:get(errors, R1)),
    [E] = maps:get(errors, R1),
    ?assertNotEqual(nomatch, string:find(riarc:format_error(E), "max_tracers")),
    %% Within the limit, the same trace is checked whole.
    R1b = checked(Roots, Every, #{limits => #{max_tracers => N}}),
    ?assertEqual([accept], lists:usort([V || #{verdict := V} <- maps:get(verdicts, R1b)])),
    ?assertEqual(undefined, maps:get(overload, R1b)),
    %% One root whose children each get a monitor, so a tracer: the session's limit.
    Kids = tmp("kids.txt"),
    K = 300,
    write_text(Kids, [[{init, p, x, {?M, p, []}}]]
                     ++ shuffle([[{spawn, p, C, {?M, q, []}}] || C <- lists:seq(1, K)]
                                ++ [[{init, C, p, {?M, q, []}}, {exit, C, normal}] || C <- lists:seq(1, K)])
                     ++ [[{exit, p, normal}]]),
    R2 = checked(Kids, Every, #{limits => #{max_tracers => 20}}),
    ?assertMatch({tracers, _, 20}, maps:get(overload, R2)),
    ?assertMatch([{riarc_offline, {limit, max_tracers, _}}], maps:get(errors, R2)),
    ?assert(lists:member(inconclusive, [V || #{verdict := V} <- maps:get(verdicts, R2)])),
    %% One process with many events: the session's event budget.
    Many = tmp("many.txt"),
    write_text(Many, [[{init, p, x, {?M, p, []}}], [{send, p, q, I} || I <- lists:seq(1, 20000)],
                      [{exit, p, normal}]]),
    R3 = checked(Many, Every, #{limits => #{max_events => 100}}),
    ?assertMatch({max_events, _, 100}, maps:get(overload, R3)),
    ?assertMatch([{riarc_offline, {limit, max_events, _}}], maps:get(errors, R3)),
    ?assertMatch([#{verdict := inconclusive}], maps:get(verdicts, R3)),
    %% A monitor slower than the replay: its backlog passes max_queue.
    Slow = fun(_) -> {ok, fun M({exit, _, normal}) -> accept; M(_) -> timer:sleep(1), M end} end,
    R4 = checked(Many, Slow, #{limits => #{max_queue => 50}, timeout => 60000}),
    ?assertMatch([{riarc_offline, {limit, max_queue, _}}], maps:get(errors, R4)),
    ?assertMatch([#{verdict := inconclusive}], maps:get(verdicts, R4)),
    ?assertEqual(1, riarc_result:status(R4)).

%% Runs a check and asserts that every process it started is gone once it has
%% returned (waited for with monitors, at most 10 s), and the VM's memory back within
%% a margin.
checked(File, Spec, Opts) ->
    erlang:garbage_collect(),
    Mem = erlang:memory(total),
    Before = erlang:processes(),
    {ok, R} = riarc_offline:check(File, Spec, Opts),
    ?assertEqual([], remains(Before, 10000)),
    erlang:garbage_collect(),
    ?assert(erlang:memory(total) - Mem < 64 * 1024 * 1024),
    R.

%% @doc The processes not in Before that are still alive after Ms: each new one is
%% monitored, and waited for until it ends or the time is up.
-spec remains([pid()], non_neg_integer()) -> [pid()].
remains(Before, Ms) ->
    New = erlang:processes() -- [self() | Before],
    Mons = [{P, monitor(process, P)} || P <- New],
    Deadline = erlang:monotonic_time(millisecond) + Ms,
    [P || {P, Ref} <- Mons, not down(Ref, Deadline)].

down(Ref, Deadline) ->
    receive {'DOWN', Ref, process, _, _} -> true
    after max(0, Deadline - erlang:monotonic_time(millisecond)) -> demonitor(Ref, [flush]), false
    end.

write_text(File, EventLists) ->
    ok = riarc_trace_file:write(File, lists:append(EventLists), #{format => text}).

%% @doc Interleaves lists of events at random, each list's order kept (one list, one
%% process's events in order).
-spec shuffle([[term()]]) -> [[term()]].
shuffle(Lists) ->
    Keyed = lists:append([lists:zip(lists:sort([rand:uniform() || _ <- L]), L) || L <- Lists]),
    [[E] || {_, E} <- lists:keysort(1, Keyed)].

seeded(Fun) -> riarc_test_tier:seeded(Fun).

%% @doc A file name in this run's own directory.
-spec tmp(string()) -> string().
tmp(Name) ->
    Dir = filename:join(["/tmp", "riarc_backend_log_tests", os:getpid()]),
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    filename:join(Dir, Name).
