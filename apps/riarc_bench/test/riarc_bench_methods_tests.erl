%% The load driver's master-worker system under the other monitoring methods
%% (riarc_methods): centralised and inline monitoring accept every process of it, and
%% woven, it does what it does unwoven. These cases live with the load driver because
%% riarc_methods does not depend on it.
-module(riarc_bench_methods_tests).

-include_lib("eunit/include/eunit.hrl").

%% The load driver's master and workers under the soundness monitors: every trace is
%% complete and in order, so every process is accepted.
bench_soundness_test_() ->
    {timeout, 120,
     fun() ->
             {ok, P} = riarc_bench_model:new(#{shape => burst, workers => 300, requests => 20,
                                               time => 2, period => 20}),
             Cfg = riarc_bench_master:config(P, self(), undefined, undefined),
             {ok, Res} = riarc_central:run({riarc_bench_master, start, [Cfg]},
                                           riarc_bench_monitor:spec(), #{log => false}),
             Vs = maps:get(verdicts, Res),
             ?assertEqual(301, length(Vs)),
             ?assertEqual([accept], lists:usort([maps:get(verdict, V) || V <- Vs])),
             receive {riarc_bench_master, _, #{ack_errors := 0, ended := 300}} -> ok end
     end}.

%% The load driver woven for inline monitoring; the originals are put back whatever
%% happens.
inline_test_() ->
    Modules = [riarc_bench_master, riarc_bench_worker],
    {"the load driver: same results woven and unwoven, all accepted",
     {timeout, 120, fun() ->
                            ok = riarc_inline:instrument(Modules),
                            try bench() after riarc_inline:restore(Modules) end
                    end}}.

%% The master's own result (every request acknowledged once, in order) is the same
%% woven as it was unwoven, and the soundness monitors accept every process inline just
%% as they do outline.
bench() ->
    {ok, P} = riarc_bench_model:new(#{shape => steady, workers => 50, requests => 10,
                                      time => 2, period => 20}),
    Cfg = riarc_bench_master:config(P, self(), undefined, undefined),
    Batches = lists:sum(maps:get(batches, riarc_bench_model:build(P))),
    {ok, Res} = riarc_inline:run({riarc_bench_master, start, [Cfg]}, riarc_bench_monitor:spec(),
                                 #{log => false, events => [recv]}),
    ?assertEqual(51, length(maps:get(verdicts, Res))),
    ?assertEqual([accept], lists:usort([V || {_, V} <- verdicts(Res)])),
    Woven = master_result(),
    riarc_inline:restore([riarc_bench_master, riarc_bench_worker]),
    {_, Ref} = spawn_monitor(riarc_bench_master, start, [Cfg]),
    receive {'DOWN', Ref, process, _, normal} -> ok end,
    Plain = master_result(),
    Keys = [created, ended, requests, acks, ack_errors, messages],
    ?assertEqual(maps:with(Keys, Plain), maps:with(Keys, Woven)),
    ?assertEqual(#{acks => Batches, ack_errors => 0}, maps:with([acks, ack_errors], Woven)),
    ok = riarc_inline:instrument([riarc_bench_master, riarc_bench_worker]).

master_result() ->
    receive {riarc_bench_master, _, R} -> R end.

%% {MFA with arity, verdict}, sorted: runs differ in pids only.
verdicts(#{verdicts := Vs}) ->
    lists:sort([{mfa(maps:get(mfa, V)), maps:get(verdict, V)} || V <- Vs]).

mfa({M, F, A}) when is_list(A), A =/= [] -> {M, F, length(A)};
mfa(MFA) -> MFA.
