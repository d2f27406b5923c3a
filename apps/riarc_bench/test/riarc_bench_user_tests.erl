%% riarc_bench_user: set-up parsing, input checks, one run of each outline set-up inside
%% this VM (run_one/4), the latency convention, the wrapper of the root being invisible to
%% the user's monitors, the printed table (riarc_bench_user_report), and (in a fresh peer
%% VM) the code every run finds loaded before its clock starts.
-module(riarc_bench_user_tests).

-include_lib("eunit/include/eunit.hrl").

-export([unloaded/1]).

-define(SYS, riarc_bench_user_sys).

parse_setups_test() ->
    ?assertEqual({ok, [baseline, riarc]}, riarc_bench_user:parse_setups("baseline, riarc,riarc")),
    ?assertMatch({error, _}, riarc_bench_user:parse_setups("riarc,psychic")),
    ?assertMatch({error, _}, riarc_bench_user:parse_setups("")).

input_errors_test_() ->
    Cfg = #{mfa => {?SYS, main, [3]}, monitors => {module, ?SYS}},
    Out = #{out => "/tmp/riarc_bench_user_tests_never"},
    Bad = [{bad_runs, Cfg#{runs => 0}},
           {bad_setups, Cfg#{setups => [psychic]}},
           {undef, Cfg#{mfa => {?SYS, main, []}}},
           {bad_monitors, Cfg#{monitors => {module, lists}}},
           {riarc_shml, Cfg#{monitors => {props, "/nonexistent.prop"}}}],
    [{atom_to_list(Tag),
      fun() ->
              {error, {riarc_bench_user, R}} = riarc_bench_user:run(C, Out),
              ?assertEqual(Tag, element(1, R)),
              ?assert(io_lib:char_list(riarc_bench_user:format_error(R)))
      end} || {Tag, C} <- Bad].

%% A run's clock starts on a node where the code of every app any set-up reaches is
%% loaded: in a fresh VM, one run of the baseline (which reaches none of it) leaves no
%% module of riarc's apps unloaded, riarc_dist's (which riarc reaches through
%% riarc_distribution, not as a dependency) and the comparison methods' among them.
loaded_before_the_clock_test_() ->
    {timeout, 60,
     fun() ->
             Paths = [D || D <- code:get_path(), not lists:prefix(code:lib_dir(), D)],
             {ok, Peer, _} = peer:start(#{connection => standard_io, args => ["-pa" | Paths]}),
             try
                 {ok, _} = peer:call(Peer, riarc_bench_user, run_one,
                                     [baseline, {?SYS, main, [5]}, {module, ?SYS}, []], 50000),
                 Unloaded = peer:call(Peer, ?MODULE, unloaded, [[riarc, riarc_shml, riarc_methods, riarc_dist]]),
                 ?assertEqual([], Unloaded)
             after
                 peer:stop(Peer)
             end
     end}.

%% @private The modules of Apps not loaded in this VM.
-spec unloaded([atom()]) -> [module()].
unloaded(Apps) ->
    _ = [application:load(A) || A <- Apps],
    [M || A <- Apps, {ok, Ms} <- [application:get_key(A, modules)], M <- Ms, code:is_loaded(M) =:= false].

run_one_test_() ->
    [{atom_to_list(S),
      fun() ->
              {ok, R} = riarc_bench_user:run_one(S, {?SYS, main, [5]}, {module, ?SYS}, [?SYS]),
              ?assertMatch(#{lat_count := 100, lat_mean_us := 50.5, lat_p50_us := 50.5,
                             wall_ms := _, mem_peak := _}, R),
              ?assert(maps:get(lat_p99_us, R) > maps:get(lat_p90_us, R)),
              case lists:member(S, [baseline, tracing]) of
                  true -> ?assertMatch(#{monitored := 0}, R);
                  false -> ?assertMatch(#{monitored := 6, accepted := 6, rejected := 0}, R)
              end
      end} || S <- riarc_bench_user:setups()].

%% A Spec module's defaults reach riarc through the benchmark's wrapper: its monitors run
%% where the module says (in their tracers), unless the set-up says otherwise
%% (riarc_isolated: each in a process of its own).
spec_defaults_test_() ->
    Run = fun(S) -> riarc_bench_user:run_one(S, {?SYS, main, [5]}, {module, riarc_bench_user_where}, []) end,
    [{"riarc", fun() -> ?assertMatch({ok, #{monitored := 6, accepted := 6}}, Run(riarc)) end},
     {"riarc_isolated",
      fun() -> ?assertMatch({ok, #{monitored := 6, rejected := 6}}, Run(riarc_isolated)) end}].

%% The set-ups riarc_low and riarc_normal run riarc's processes at that priority (option
%% tracer_priority): monitors that accept only at low priority.
priority_setups_test_() ->
    Run = fun(S) -> riarc_bench_user:run_one(S, {?SYS, main, [5]}, {module, riarc_bench_user_prio}, []) end,
    [{"riarc_low", fun() -> ?assertMatch({ok, #{monitored := 6, accepted := 6}}, Run(riarc_low)) end},
     {"riarc_normal",
      fun() -> ?assertMatch({ok, #{monitored := 6, rejected := 6}}, Run(riarc_normal)) end}].

%% The tracing floor traces what riarc would: with a property's trace patterns (no_error:
%% the receives of {error, _} only, no send) the VM builds no event for the flat system's
%% messages; with the same monitors and no patterns it builds one per send and receive.
%% Either way the VM's patterns are what they were before once the run is over.
tracing_floor_patterns_test() ->
    Before = riarc_trace_pattern:installed(),
    Sys = {riarc_bench_shapes, flat, [5, 20]},
    {ok, #{events := WithPatterns}} =
        riarc_bench_user:run_one(tracing, Sys, {props, "examples/props/no_error.prop"}, []),
    ?assertEqual(Before, riarc_trace_pattern:installed()),
    {ok, #{events := Every}} = riarc_bench_user:run_one(tracing, Sys, {module, riarc_bench_shapes}, []),
    ?assertEqual(Before, riarc_trace_pattern:installed()),
    %% 5 workers x 20 round trips: 200 messages, each sent and received.
    ?assert(Every >= 400),
    %% Spawns and exits of the 7 processes, and no message.
    ?assert(WithPatterns < 40),
    ?assert(WithPatterns > 0).

table_test() ->
    S = riarc_bench_ci:summary([1.0, 2.0, 3.0]),
    Summary = [{baseline, #{runs => 3, wall => S, wall_vs => riarc_bench_ci:compare([1, 2, 3], [1, 2, 3]),
                            mem => S, verdicts => #{}, lat => []}},
               {riarc, #{runs => 3, wall => S, wall_vs => riarc_bench_ci:compare([9, 10, 11], [1, 2, 3]),
                         mem => S, lat => [{"p50", S}],
                         verdicts => #{monitored => 2, accepted => 2, rejected => 0, errors => 0,
                                       inconclusive => 0}}}],
    Text = lists:flatten(riarc_bench_user_report:table(#{summary => Summary})),
    ?assertNotEqual(nomatch, string:find(Text, "5.00x (")),
    ?assertEqual(nomatch, string:find(Text, "n too small")),
    ?assertNotEqual(nomatch, string:find(Text, "2 accept, 0 reject")),
    ?assertEqual(3, length(string:lexemes(Text, "\n"))).
