%% The EUnit fixture (riarc_eunit) and the watch under it (riarc_watch): a system that
%% violates its property fails the test with the explanation, one that keeps it passes,
%% the fixture's forms (with_property, test, setup) run inside EUnit itself, and nothing
%% is left traced after any of them. riarc_watch's judging: only accepts and partitions
%% with no verdict pass.
-module(riarc_eunit_tests).

-include_lib("eunit/include/eunit.hrl").

-export([worker/1]).

%% @doc The test system: serves one order and tells Case.
-spec worker(pid()) -> ok.
worker(Case) -> receive Order -> Case ! {served, Order}, ok end.

serve(Order) ->
    W = spawn(?MODULE, worker, [self()]),
    W ! Order,
    receive {served, Order} -> ok end.

%% The property file: no worker of this module receives {error, _}.
prop() ->
    File = filename:join(riarc_test_tmp:dir("riarc_eunit_tests"), "worker.prop"),
    ok = file:write_file(File, "with riarc_eunit_tests:worker(_) never receive {error, _}.\n"),
    File.


violating_fails_test() ->
    Before = riarc_test_traced:traced(),
    {riarc_property, [F]} = try riarc_eunit:with_property(prop(), self, fun() -> serve({error, x}) end)
                            catch error:E -> E
                            end,
    ?assertNotEqual(nomatch, string:find(F, "riarc_eunit_tests:worker/1 reject")),
    ?assertNotEqual(nomatch, string:find(F, "{recv,")),
    riarc_test_traced:untraced(Before).

holding_passes_test() ->
    Before = riarc_test_traced:traced(),
    ?assertEqual(ok, riarc_eunit:with_property(prop(), self, fun() -> serve({order, 1}) end)),
    riarc_test_traced:untraced(Before).

%% A Spec as the property; the test body's own failure comes first, as it was raised.
spec_and_body_failure_test() ->
    Before = riarc_test_traced:traced(),
    Spec = fun({?MODULE, worker, _}) -> {ok, fun M({recv, _, {error, _}}) -> reject; M(_) -> M end};
              (_) -> undefined end,
    ?assertError(body_failed, riarc_eunit:with_property(Spec, self, fun() ->
                                                                       serve({error, y}),
                                                                       erlang:error(body_failed)
                                                               end)),
    riarc_test_traced:untraced(Before).

%% A monitor that crashes is an error verdict, and a run cut by a limit is inconclusive
%% with an overload: both fail, never pass as accepts.
error_and_cut_fail_test() ->
    Before = riarc_test_traced:traced(),
    Crashing = fun({?MODULE, worker, _}) -> {ok, fun(_) -> erlang:error(monitor_bug) end};
                  (_) -> undefined end,
    {riarc_property, [E]} = try riarc_eunit:with_property(Crashing, self, fun() -> serve({order, 1}) end)
                            catch error:X -> X
                            end,
    ?assertNotEqual(nomatch, string:find(E, "riarc_eunit_tests:worker/1 error")),
    Cut = #{riarc => #{limits => #{max_events => 1}}},
    {riarc_property, Fs} = try riarc_eunit:with_property(prop(), self, fun() -> [serve({order, N}) || N <- lists:seq(1, 5)] end, Cut)
                           catch error:Y -> Y
                           end,
    ?assertNotEqual([], [F || F <- Fs, string:find(F, "overload") =/= nomatch]),
    riarc_test_traced:untraced(Before).

bad_property_test() ->
    {riarc_watch, Why} = try riarc_eunit:with_property("/nonexistent/x.prop", self, fun() -> ok end)
                         catch error:E -> E
                         end,
    ?assertNotEqual(nomatch, string:find(Why, "x.prop")).

%% The generated test and the setup fixture, run by EUnit: the violating ones fail.
in_eunit_test_() ->
    {timeout, 60, fun() ->
        Before = riarc_test_traced:traced(),
        P = prop(),
        ?assertEqual(error, eunit:test(riarc_eunit:test(P, self, fun() -> serve({error, z}) end), [no_tty])),
        ?assertEqual(ok, eunit:test(riarc_eunit:test(P, self, fun() -> serve({order, 2}) end), [no_tty])),
        Bad = riarc_eunit:setup(P, self, [fun() -> serve({order, 3}) end, fun() -> serve({error, w}) end]),
        ?assertEqual(error, eunit:test(Bad, [no_tty])),
        Good = riarc_eunit:setup(P, self, [fun() -> serve({order, 4}) end, fun() -> serve({order, 5}) end]),
        ?assertEqual(ok, eunit:test(Good, [no_tty])),
        riarc_test_traced:untraced(Before)
    end}.

%% A watch on a registered process, stopped from another process after the watching one
%% was killed: the keeper detached at the kill and kept the verdict.
guardian_killed_test() ->
    Before = riarc_test_traced:traced(),
    Self = self(),
    {W, WRef} = spawn_monitor(fun() -> register(riarc_eunit_tests_worker, self()), worker(self()) end),
    wait_registered(riarc_eunit_tests_worker),
    {G, GRef} = spawn_monitor(fun() ->
                                      {ok, Watch} = riarc_watch:start(prop_spec(), riarc_eunit_tests_worker, #{}),
                                      Self ! {watch, Watch},
                                      receive never_sent -> ok end
                              end),
    Watch = receive {watch, X} -> X end,
    W ! {error, v},
    receive {'DOWN', WRef, process, W, normal} -> ok end,
    exit(G, kill),
    receive {'DOWN', GRef, process, G, killed} -> ok end,
    {ok, #{status := fail, verdicts := [#{verdict := reject}]}} = riarc_watch:stop(Watch),
    riarc_test_traced:untraced(Before).

prop_spec() ->
    fun({_, _, _}) -> {ok, fun M({recv, _, {error, _}}) -> reject; M(_) -> M end};
       (_) -> undefined end.

wait_registered(Name) ->
    case whereis(Name) of
        undefined -> erlang:yield(), wait_registered(Name);
        _ -> ok
    end.

%% Judging: accept and none pass; reject, error and inconclusive fail, each named; a run
%% error, a violation or an overload fails whatever the verdicts; strict fails an empty run.
judge_test_() ->
    E = fun(V) -> riarc_result:entry(list_to_pid("<0.90.0>"), {m, f, []}, V, 1, undefined) end,
    R = fun(Vs, More) -> riarc_result:make(More#{verdicts => Vs}) end,
    Status = fun(Rs, O) -> maps:get(status, riarc_watch:judge(Rs, O)) end,
    [?_assertEqual(pass, Status([R([E(accept), E(none)], #{})], #{})),
     [?_assertEqual(fail, Status([R([E(accept), E(V)], #{})], #{})) || V <- [reject, error, inconclusive]],
     ?_assertEqual(fail, Status([R([E(accept)], #{errors => [{riarc_session, {down, killed}}]})], #{})),
     ?_assertEqual(fail, Status([R([E(accept)], #{violations => [#{}]})], #{})),
     ?_assertEqual(fail, Status([R([E(none)], #{overload => {max_events, 10}})], #{})),
     ?_assertEqual(pass, Status([R([], #{})], #{})),
     ?_assertEqual(fail, Status([R([], #{})], #{strict => true})),
     ?_assertEqual(["<0.90.0> m:f/0 inconclusive"],
                   maps:get(failures, riarc_watch:judge([R([E(accept), E(inconclusive)], #{})], #{})))].
