%% The system of riarc_bench_user_tests, in a module of its own so that weaving it for
%% inline monitoring (and restoring it, which purges the woven code) never touches the
%% code the test process is running.
-module(riarc_bench_user_sys).

-export([main/1, worker/1, spec/1]).

%% A tiny system: N workers, each acknowledged; returns latencies as the convention says.
main(N) ->
    Self = self(),
    Ws = [spawn(?MODULE, worker, [Self]) || _ <- lists:seq(1, N)],
    [receive {ack, W} -> ok end || W <- Ws],
    {latencies_us, lists:seq(1, 100)}.

worker(Parent) -> Parent ! {ack, self()}, ok.

%% The root is asked as the user's MFA and sees its own init event with that MFA: a
%% monitor that insists on it accepts only if the wrapper is invisible.
spec({?MODULE, main, [_]} = MFA) ->
    {ok, fun({init, _, _, M}) when M =:= MFA -> fun Rest({exit, _, normal}) -> accept;
                                                  Rest(_) -> Rest end;
            (_) -> reject end};
spec({?MODULE, worker, _}) ->
    {ok, fun M({exit, _, normal}) -> accept; M(_) -> M end};
spec(_) -> undefined.

