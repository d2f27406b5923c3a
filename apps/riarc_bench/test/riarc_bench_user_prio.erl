%% A Spec module for riarc_bench_user_tests whose monitors accept only when the process
%% they run in (an analysis process: the module sets no `analysis') has low priority:
%% the set-ups riarc_low and riarc_normal must give riarc's processes that priority.
-module(riarc_bench_user_prio).

-export([spec/1]).

spec({riarc_bench_user_sys, _, _}) ->
    {ok, fun M({exit, _, normal}) -> low();
             M(_) -> case low() of accept -> M; reject -> reject end
         end};
spec(_) -> undefined.

low() ->
    case process_info(self(), priority) of
        {priority, low} -> accept;
        _ -> reject
    end.
