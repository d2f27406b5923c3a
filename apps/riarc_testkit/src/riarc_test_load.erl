%% @doc Schedulers kept busy while a test runs: soundness and stress tests run loaded,
%% since races between the system, riarc's tracers and the VM's trace delivery show
%% where every scheduler has work queued. Busy processes of this node (two per online
%% scheduler, at normal priority), each ended before loaded/1 returns, however Fun ends.
%% ```
%% 1> riarc_test_load:loaded(fun() -> length(erlang:processes()) > 4 end).
%% true
%% 2> riarc_test_load:loaded(2, fun() -> ok end).
%% ok
%% '''
-module(riarc_test_load).

-export([loaded/1, loaded/2]).

%% @doc Fun's result, run with two busy processes per online scheduler.
-spec loaded(fun(() -> T)) -> T.
loaded(Fun) ->
    loaded(2 * erlang:system_info(schedulers_online), Fun).

%% @doc Fun's result, run with K busy processes.
-spec loaded(non_neg_integer(), fun(() -> T)) -> T.
loaded(K, Fun) ->
    Spinners = [spawn_monitor(fun spin/0) || _ <- lists:seq(1, K)],
    try Fun()
    after
        %% Gone before the next test: none is left taking a scheduler's time.
        _ = [exit(P, kill) || {P, _} <- Spinners],
        _ = [receive {'DOWN', Ref, process, P, _} -> ok end || {P, Ref} <- Spinners]
    end.

spin() ->
    _ = lists:seq(1, 100),
    spin().
