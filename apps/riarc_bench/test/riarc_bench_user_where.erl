%% A Spec module for riarc_bench_user_tests that says where its monitors run
%% (`analysis() -> inline') and whose monitors accept only when they run there, in a
%% tracer: the set-up `riarc' must run a Spec module as `riarc run' would, with every
%% default the module sets, though the benchmark wraps it in a fun.
-module(riarc_bench_user_where).

-export([spec/1, analysis/0]).

analysis() -> inline.

spec({riarc_bench_user_sys, _, _}) ->
    {ok, fun M({exit, _, normal}) -> in_tracer();
             M(_) -> case in_tracer() of accept -> M; reject -> reject end
         end};
spec(_) -> undefined.

in_tracer() ->
    case proc_lib:initial_call(self()) of
        {riarc_tracer, _, _} -> accept;
        _ -> reject
    end.
