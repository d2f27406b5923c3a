%% The Common Test hook riarc_cth. Fast cases call its callbacks as Common Test does, in
%% this case's process (the test case the hook watches), around real systems: a worker
%% that receives {error, _} (the property, worker.prop in the data dir, rejects it) or
%% only orders; each checks the case's result and that nothing is left traced. The slow
%% group runs a sample suite with the hook installed through `ct_run' (Common Test cannot
%% nest): its violating cases fail with the explanation in their logs, the others keep
%% their own results.
-module(riarc_cth_SUITE).

-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, suite/0]).
-export([violating_case_fails/1, holding_case_passes/1, failed_case_keeps_its_reason/1,
         case_options/0, case_options/1, registered_target/1, killed_case_judged_later/1,
         bad_property_fails_case/1, init_skipped_case/1, terminate_stops_watches/1,
         ct_run_sample_suite/1, worker/1]).

-spec all() -> [atom() | {group, atom()}].
all() -> [violating_case_fails, holding_case_passes, failed_case_keeps_its_reason, case_options,
          registered_target, killed_case_judged_later, bad_property_fails_case,
          init_skipped_case, terminate_stops_watches]
    ++ riarc_test_tier:slow_groups([slow]).

%% The full tier's cases (make test-all): riarc_test_tier. ct_run boots a node.
-spec groups() -> [{atom(), list(), [atom()]}].
groups() -> [{slow, [], [ct_run_sample_suite]}].

-spec suite() -> list().
suite() -> [{timetrap, {minutes, 2}}].

%% @doc The test system: serves one order and tells Case.
-spec worker(pid()) -> ok.
worker(Case) -> receive Order -> Case ! {served, Order}, ok end.

%% A worker spawned by this process serves Order; returns once it has.
serve(Order) ->
    W = spawn(?MODULE, worker, [self()]),
    W ! Order,
    receive {served, Order} -> ok end.

hook(Config, Opts) ->
    {ok, S} = riarc_cth:init(riarc_cth, maps:merge(#{property => "worker.prop"}, Opts)),
    {Config, S1} = riarc_cth:pre_init_per_testcase(?MODULE, sample_case, Config, S),
    S1.


%% A case that would pass fails, the reject named in its reason.
violating_case_fails(Config) ->
    Before = riarc_test_traced:traced(),
    S = hook(Config, #{}),
    ok = serve({error, out_of_stock}),
    {{fail, Why}, _} = riarc_cth:post_end_per_testcase(?MODULE, sample_case, Config, ok, S),
    ?assertMatch("riarc: " ++ _, Why),
    ?assertNotEqual(nomatch, string:find(Why, "riarc_cth_SUITE:worker/1 reject")),
    ?assertNotEqual(nomatch, string:find(Why, "{recv,")),
    riarc_test_traced:untraced(Before).

%% A case whose system keeps the property keeps its result, whatever it was.
holding_case_passes(Config) ->
    Before = riarc_test_traced:traced(),
    S = hook(Config, #{}),
    ok = serve({order, 1}),
    ok = serve({order, 2}),
    {{comment, "c"}, _} = riarc_cth:post_end_per_testcase(?MODULE, sample_case, Config, {comment, "c"}, S),
    riarc_test_traced:untraced(Before).

%% A case that failed on its own keeps its reason; the property's report goes to the log.
failed_case_keeps_its_reason(Config) ->
    Before = riarc_test_traced:traced(),
    S = hook(Config, #{}),
    ok = serve({error, x}),
    {{error, boom}, _} = riarc_cth:post_end_per_testcase(?MODULE, sample_case, Config, {error, boom}, S),
    riarc_test_traced:untraced(Before).

%% Options per case: the case's info function, Config's `riarc' (a group's), the hook's
%% `cases'; `off' anywhere turns the hook off for the case; a later layer wins.
-spec case_options() -> list().
case_options() -> [{riarc, #{strict => true}}].
case_options(Config) ->
    Before = riarc_test_traced:traced(),
    {ok, S} = riarc_cth:init(riarc_cth, [{property, "worker.prop"},
                                         {cases, #{off_case => off}}]),
    %% Off by the hook's `cases': no watch, so a violation passes.
    {Config, S1} = riarc_cth:pre_init_per_testcase(?MODULE, off_case, Config, S),
    ok = serve({error, x}),
    {ok, S2} = riarc_cth:post_end_per_testcase(?MODULE, off_case, Config, ok, S1),
    %% Off by the group's Config.
    Off = [{riarc, off} | Config],
    {Off, S3} = riarc_cth:pre_init_per_testcase(?MODULE, sample_case, Off, S2),
    ok = serve({error, x}),
    {ok, S4} = riarc_cth:post_end_per_testcase(?MODULE, sample_case, Off, ok, S3),
    %% This case's info function says strict: a system the property does not name
    %% fails it (nothing was checked).
    {Config, S5} = riarc_cth:pre_init_per_testcase(?MODULE, case_options, Config, S4),
    {{fail, Why}, S6} = riarc_cth:post_end_per_testcase(?MODULE, case_options, Config, ok, S5),
    ?assertNotEqual(nomatch, string:find(Why, "no process was monitored")),
    %% The group names another property (a Spec), which the case keeps.
    Spec = fun({?MODULE, worker, _}) -> {ok, fun(_) -> reject end}; (_) -> undefined end,
    Other = [{riarc, #{property => Spec}} | Config],
    {Other, S7} = riarc_cth:pre_init_per_testcase(?MODULE, sample_case, Other, S6),
    ok = serve({order, 3}),
    {{fail, _}, _} = riarc_cth:post_end_per_testcase(?MODULE, sample_case, Other, ok, S7),
    riarc_test_traced:untraced(Before).

%% A registered process as the target: the case's own processes are not watched, the
%% registered one is, from the case's start to its end.
registered_target(Config) ->
    Before = riarc_test_traced:traced(),
    Name = riarc_cth_registered_worker,
    {W, MRef} = spawn_monitor(fun() -> register(Name, self()), worker(self()) end),
    wait_registered(Name),
    S = hook(Config, #{target => Name, property => fun({_, _, _}) -> {ok, error_monitor()}; (_) -> undefined end}),
    ok = serve({error, not_watched}),
    W ! {error, watched},
    receive {'DOWN', MRef, process, W, normal} -> ok end,
    {{fail, Why}, _} = riarc_cth:post_end_per_testcase(?MODULE, sample_case, Config, ok, S),
    ?assertNotEqual(nomatch, string:find(Why, "reject")),
    riarc_test_traced:untraced(Before).

wait_registered(Name) ->
    case whereis(Name) of
        undefined -> erlang:yield(), wait_registered(Name);
        _ -> ok
    end.

%% An Erlang monitor: rejects at a receive of {error, _}.
error_monitor() ->
    fun M({recv, _, {error, _}}) -> reject;
        M(_) -> M
    end.

%% A case killed (by its timetrap, say) is judged by another process: the watch detached
%% when the case's process ended and kept the verdicts.
killed_case_judged_later(Config) ->
    Before = riarc_test_traced:traced(),
    Self = self(),
    {Case, MRef} = spawn_monitor(fun() ->
                                         S = hook(Config, #{}),
                                         ok = serve({error, late}),
                                         Self ! {hook, S},
                                         receive never_sent -> ok end
                                 end),
    S = receive {hook, Hook} -> Hook end,
    exit(Case, kill),
    receive {'DOWN', MRef, process, Case, killed} -> ok end,
    {{fail, Why}, _} = riarc_cth:post_end_per_testcase(?MODULE, sample_case, Config,
                                                         ok, S),
    ?assertNotEqual(nomatch, string:find(Why, "reject")),
    riarc_test_traced:untraced(Before).

%% A property that does not load, or a target that is not there, fails the case at its
%% start, saying why; nothing is traced.
bad_property_fails_case(Config) ->
    Before = riarc_test_traced:traced(),
    {ok, S} = riarc_cth:init(riarc_cth, #{property => "no_such.prop"}),
    {{fail, Why}, S1} = riarc_cth:pre_init_per_testcase(?MODULE, sample_case, Config, S),
    ?assertNotEqual(nomatch, string:find(Why, "no_such.prop")),
    {ok, S2} = riarc_cth:init(riarc_cth, #{property => "worker.prop", target => riarc_cth_nobody}),
    {{fail, Why2}, _} = riarc_cth:pre_init_per_testcase(?MODULE, sample_case, Config, S2),
    ?assertNotEqual(nomatch, string:find(Why2, "no process is registered as riarc_cth_nobody")),
    {ok, _} = riarc_cth:post_end_per_testcase(?MODULE, sample_case, Config, ok, S1),
    riarc_test_traced:untraced(Before).

%% init_per_testcase skipped the case: the watch ends there, the skip stands.
init_skipped_case(Config) ->
    Before = riarc_test_traced:traced(),
    S = hook(Config, #{}),
    ok = serve({error, x}),
    {{skip, "no"}, S1} = riarc_cth:post_init_per_testcase(?MODULE, sample_case, Config, {skip, "no"}, S),
    riarc_test_traced:untraced(Before),
    {{skip, "no"}, _} = riarc_cth:post_end_per_testcase(?MODULE, sample_case, Config, {skip, "no"}, S1).

%% A case the framework never ended is stopped by terminate/1.
terminate_stops_watches(Config) ->
    Before = riarc_test_traced:traced(),
    S = hook(Config, #{}),
    ok = serve({order, 1}),
    ok = riarc_cth:terminate(S),
    riarc_test_traced:untraced(Before).

%% The sample suite run by ct_run, the hook as a user installs it (suite/0). Its
%% violating cases fail with riarc's reason (in a parallel group too), the reject's
%% explanation in their logs; a case that crashed keeps its own reason; the last finds
%% nothing traced.
ct_run_sample_suite(Config) ->
    CtRun = os:find_executable("ct_run"),
    ?assertNotEqual(false, CtRun),
    Dir = filename:join(proplists:get_value(priv_dir, Config), "sample"),
    Logs = filename:join(Dir, "logs"),
    ok = filelib:ensure_path(filename:join(Dir, "riarc_sample_SUITE_data")),
    ok = filelib:ensure_path(Logs),
    Data = proplists:get_value(data_dir, Config),
    %% Kept as .erl.in: rebar3 eunit takes every .erl under test/ for a module of its own.
    [{ok, _} = file:copy(filename:join(Data, From), filename:join(Dir, To))
     || {From, To} <- [{"riarc_sample_SUITE.erl.in", "riarc_sample_SUITE.erl"},
                       {"riarc_sample_SUITE_data/sample.prop", "riarc_sample_SUITE_data/sample.prop"}]],
    Pa = lists:append([[" -pa ", filename:dirname(code:which(M))] || M <- [riarc, riarc_shml, riarc_chart, riarc_cth]]),
    Cmd = lists:flatten([CtRun, " -noshell -dir ", Dir, " -logdir ", Logs, Pa, " 2>&1"]),
    Out = os:cmd(Cmd),
    ct:log("~ts~n~ts", [Cmd, Out]),
    ?assertNotEqual(nomatch, string:find(Out, "TEST COMPLETE, 3 ok, 4 failed of 7 test cases"), Out),
    [SuiteLog] = filelib:wildcard(filename:join(Logs, "ct_run.*/*/run.*/suite.log")),
    {ok, SuiteText} = file:read_file(SuiteLog),
    Results = case_results(unicode:characters_to_list(SuiteText)),
    ct:log("~p", [Results]),
    ?assertMatch("ok" ++ _, maps:get("holds", Results)),
    ?assertMatch("failed: \"riarc: " ++ _, maps:get("violates", Results)),
    ?assertNotEqual(nomatch, string:find(maps:get("violates", Results), "reject")),
    ?assertNotEqual(nomatch, string:find(maps:get("crashes", Results), "crashed_on_its_own")),
    ?assertNotEqual(nomatch, string:find(maps:get("violates_then_hangs", Results), "failed: timeout")),
    ?assertMatch("ok" ++ _, maps:get("nothing_traced", Results)),
    ?assertMatch("ok" ++ _, maps:get("par_holds", Results)),
    ?assertMatch("failed: \"riarc: " ++ _, maps:get("par_violates", Results)),
    ?assertNotEqual(nomatch, string:find(maps:get("par_violates", Results), "{error,in_parallel}")),
    %% The explanation in the cases' logs: the deciding event, marked, and its chart.
    Log = fun(Case) ->
                  [F] = filelib:wildcard(filename:join(filename:dirname(SuiteLog),
                                                       "riarc_sample_suite." ++ Case ++ ".html")),
                  {ok, B} = file:read_file(F),
                  unicode:characters_to_list(B)
          end,
    [begin
         Text = Log(Case),
         ?assertNotEqual(nomatch, string:find(Text, "the property FAILED"), Case),
         ?assertNotEqual(nomatch, string:find(Text, "last events (=&gt; decided)"), Case),
         ?assertNotEqual(nomatch, string:find(Text, "=&gt; {recv,"), Case),
         %% The reject's sequence chart, drawn in the log.
         ?assertNotEqual(nomatch, string:find(Text, "<svg"), Case),
         ?assertNotEqual(nomatch, string:find(Text, Event), Case)
     end || {Case, Event} <- [{"violates", "{error,out_of_stock}}"}, {"violates_then_hangs", "{error,late}}"}]],
    [?assertNotEqual(nomatch, string:find(Log(Case), "the property held"), Case) || Case <- ["holds", "crashes"]].

%% A case's result line in suite.log, by case name.
case_results(Text) ->
    Lines = string:split(Text, "\n", all),
    case_results(Lines, undefined, #{}).

case_results(["=case" ++ Name | Rest], _, Acc) ->
    case string:split(string:trim(Name), ":") of
        ["riarc_sample_SUITE", Case] -> case_results(Rest, Case, Acc);
        _ -> case_results(Rest, undefined, Acc)
    end;
case_results(["=result" ++ R | Rest], Case, Acc) when Case =/= undefined ->
    case_results(Rest, undefined, Acc#{Case => string:trim(R)});
case_results([_ | Rest], Case, Acc) -> case_results(Rest, Case, Acc);
case_results([], _, Acc) -> Acc.
