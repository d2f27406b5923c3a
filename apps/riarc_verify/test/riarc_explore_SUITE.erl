% The partial-order reduction of riarc_explore changes no verdict: on every system of up
% to 3 processes under every arrangement of monitors, and on every system of 4 processes
% with the root's monitor alone (the star and the chain also with the last process's),
% both with the correct tracer core and with the injected bug (`ignore_cut'), the
% reduced and the full search, each run to the end (`failures => all'), meet exactly the
% same kinds of failure and the same number of terminal states. A Common Test suite: the
% full searches take about 40 s on both cores, so they belong to the full tier (`make
% test-all'); the fast tier checks that the search finds the injected bug.
-module(riarc_explore_SUITE).

-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, suite/0]).
-export([same_failures_up_to_3/1, same_failures_4/1, bug_caught/1]).

-spec all() -> [atom() | {group, atom()}].
all() -> [bug_caught] ++ riarc_test_tier:slow_groups([slow]).

%% The full tier's cases (make test-all): riarc_test_tier.
-spec groups() -> [{atom(), list(), [atom()]}].
groups() -> [{slow, [], [same_failures_up_to_3, same_failures_4]}].

-spec suite() -> list().
suite() -> [{timetrap, {minutes, 10}}].

arrangements(#{root := Root, scripts := Scripts}) ->
    lists:foldr(fun(S, Acc) -> Acc ++ [[S | A] || A <- Acc] end, [[]],
                lists:sort(maps:keys(Scripts)) -- [Root]).

%% Full and reduced search of one system under one arrangement, with or without the bug:
%% the same failure kinds, the same terminal states; the reduced one no larger.
compare({S, A, Bug}) ->
    Opts = #{monitored => [A], bug => Bug, failures => all},
    {ok, #{failures := FF, terminals := TF, states := NF}} =
        riarc_explore:check(S, Opts#{por => false}),
    {ok, #{failures := FP, terminals := TP, states := NP}} = riarc_explore:check(S, Opts),
    ?assertEqual({S, A, Bug, FF, TF}, {S, A, Bug, FP, TP}),
    ?assert(NP =< NF),
    FF.

%% Runs the comparisons on both cores; returns the failure kinds met per case.
compare_all(Cases) ->
    Parent = self(),
    Pids = [spawn_link(fun() -> Parent ! {self(), compare(C)} end) || C <- Cases],
    [receive {P, Fs} -> Fs end || P <- Pids].

-spec same_failures_up_to_3(list()) -> ok.
same_failures_up_to_3(_Config) ->
    Cases = [{S, A, Bug} || Bug <- [none, ignore_cut],
                            S <- [riarc_explore:pqr() | riarc_explore:systems(3)],
                            A <- arrangements(S)],
    Fs = compare_all(Cases),
    %% The correct core never fails; the bug shows on every system where some process
    %% other than the root has a monitor of its own.
    Expected = [case {Bug, A} of {none, _} -> []; {_, []} -> []; _ -> failing end
                || {_, A, Bug} <- Cases],
    ?assertEqual(Expected, [case F of [] -> []; _ -> failing end || F <- Fs]),
    ok.

-spec same_failures_4(list()) -> ok.
same_failures_4(_Config) ->
    %% The star and the chain with both arrangements, the other trees root-only.
    Cases = [{S, A, Bug} || Bug <- [none, ignore_cut],
                            S = #{scripts := Sc} <- riarc_explore:systems(4), map_size(Sc) =:= 4,
                            A <- case lists:sort([P || {P, Scr} <- maps:to_list(Sc), [C || {spawn, C} <- Scr] =/= []]) of
                                     [0] -> [[], [3]];
                                     [0, 1, 2] -> [[], [3]];
                                     _ -> [[]]
                                 end],
    Fs = compare_all(Cases),
    ?assertEqual([F =/= [] || F <- Fs], [{Bug, A} =:= {ignore_cut, [3]} || {_, A, Bug} <- Cases]),
    ok.

%% Stopping at the first failure (the default), the reduced search reports the bug with
%% the path to it.
-spec bug_caught(list()) -> ok.
bug_caught(_Config) ->
    [begin
         R = riarc_explore:check(S, #{monitored => [[3]], bug => ignore_cut}),
         ?assertMatch({error, {riarc_explore, {violation, #{trace := [_ | _]}}}}, R)
     end || S = #{scripts := Sc} <- riarc_explore:systems(4), map_size(Sc) =:= 4],
    ok.
