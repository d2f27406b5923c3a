%% A sample suite with riarc_cth installed, run by riarc_cth_SUITE with `ct_run' (Common
%% Test cannot run inside itself): two cases whose systems keep the property (one of them
%% crashes on its own), two that violate it (one killed by its timetrap), a parallel
%% group of one of each, and a last case with the hook off that finds no process traced.
-module(riarc_sample_SUITE).

-export([all/0, groups/0, suite/0, holds/1, violates/1, crashes/1, violates_then_hangs/1,
         par_holds/1, par_violates/1,
         violates_then_hangs/0, nothing_traced/0, nothing_traced/1, worker/1]).

suite() -> [{ct_hooks, [{riarc_cth, #{property => "sample.prop"}}]}, {timetrap, {seconds, 60}}].

all() -> [holds, violates, crashes, violates_then_hangs, {group, par}, nothing_traced].

groups() -> [{par, [parallel], [par_violates, par_holds]}].

%% Serves one order and tells the case.
worker(Case) -> receive Order -> Case ! {served, Order} end.

serve(Order) ->
    W = spawn(?MODULE, worker, [self()]),
    W ! Order,
    receive {served, Order} -> ok end.

holds(_Config) -> serve({order, 1}).

violates(_Config) -> serve({error, out_of_stock}).

crashes(_Config) -> serve({order, 2}), exit(crashed_on_its_own).

violates_then_hangs() -> [{timetrap, {seconds, 1}}].
violates_then_hangs(_Config) ->
    serve({error, late}),
    receive never_sent -> ok end.

%% Side by side: each case's watch is its own.
par_violates(_Config) -> serve({error, in_parallel}).

par_holds(_Config) -> serve({order, 3}).

nothing_traced() -> [{riarc, off}].
nothing_traced(_Config) ->
    Traced = [{P, F} || P <- erlang:processes(), {flags, F} <- [erlang:trace_info(P, flags)], F =/= []],
    [] = Traced,
    {flags, []} = erlang:trace_info(new_processes, flags),
    ok.
