%% @doc The case study of 004 §4.2 as a bundled example monitor on the load driver: the
%% mean idle time (MIT) of the workers. Each worker measures, inside its own process (as
%% the paper's code-injected monitors do), the time it spends waiting for its next
%% message, and keeps its local mean with Welford's algorithm. When it terminates it
%% relays its local statistics to a coordinating process, which aggregates them with the
%% weighted Welford merge (West 1979, 004 ref. 36): each worker's mean counts with the
%% number of idle periods it was computed over, which differs between workers (batch
%% sizes differ). The global MIT is known once the system has finished.
%%
%% Run it as the set-up `--instrumentation mit' (see `riarc_bench_run'), which adds
%% `mit_mean_ms, mit_sd_ms, mit_periods, mit_workers' to the run's summary. The
%% accumulator is usable on its own:
%%
%% ```
%% 1> A = riarc_bench_mit:add(2.0, 1, riarc_bench_mit:new()), B = riarc_bench_mit:add(4.0, 3, riarc_bench_mit:new()).
%% 2> M = riarc_bench_mit:merge(A, B), {riarc_bench_mit:mean(M), riarc_bench_mit:weight(M)}.
%% {3.5,4.0}
%% 3> riarc_bench_mit:variance(riarc_bench_mit:merge(riarc_bench_mit:of_list([1, 2]), riarc_bench_mit:of_list([3]))).
%% 1.0
%% 4> {ok, S} = riarc_bench_run:run(#{shape => steady, workers => 100, requests => 10, rate => 50,
%%                                    period => 10, instrumentation => mit}, #{out => "/tmp/mit"}).
%% 5> maps:with([mit_periods, mit_workers], S).   % periods: 999 requests + 100 terms
%% #{mit_periods => 1099,mit_workers => 100}
%% 6> maps:get(mit_mean_ms, S).
%% 0.0038...
%% '''
-module(riarc_bench_mit).

%% The accumulator (weighted Welford).
-export([new/0, add/2, add/3, merge/2, of_list/1, mean/1, variance/1, sd/1, weight/1]).
%% The monitored worker and its coordinator.
-export([init/3, run/2, format_error/1]).

-export_type([acc/0, error_reason/0]).

-type error_reason() :: already_running | {master_crashed, term()}.

%% Total weight W, weighted mean, and S = sum of w_i (x_i - mean)^2.
-record(acc, {w = 0.0 :: float(), mean = 0.0 :: float(), s = 0.0 :: float()}).
-opaque acc() :: #acc{}.

-define(COORDINATOR, riarc_bench_mit_coordinator).
%% How long to wait for the last workers' statistics once the master has finished.
-define(COLLECT_TIMEOUT, 10000).

%%% Weighted Welford -------------------------------------------------------------------

-spec new() -> acc().
new() -> #acc{}.

-spec add(number(), acc()) -> acc().
add(X, Acc) -> add(X, 1, Acc).

%% West (1979): one observation X with weight Wt (> 0).
-spec add(number(), number(), acc()) -> acc().
add(X, Wt, #acc{w = W0, mean = M0, s = S0}) when Wt > 0 ->
    W = W0 + Wt,
    D = X - M0,
    R = D * Wt / W,
    #acc{w = float(W), mean = M0 + R, s = S0 + W0 * D * R}.

%% The merge of two accumulators, each weighted by its total weight: the same result as
%% adding all their observations to one (Chan et al.'s update with weights).
-spec merge(acc(), acc()) -> acc().
merge(#acc{w = Wa} = A, #acc{w = Wb}) when Wb == 0 -> A#acc{w = float(Wa)};
merge(#acc{w = Wa}, B) when Wa == 0 -> B;
merge(#acc{w = Wa, mean = Ma, s = Sa}, #acc{w = Wb, mean = Mb, s = Sb}) ->
    W = Wa + Wb,
    D = Mb - Ma,
    #acc{w = W, mean = Ma + D * Wb / W, s = Sa + Sb + D * D * Wa * Wb / W}.

-spec of_list([number()]) -> acc().
of_list(Xs) -> lists:foldl(fun add/2, new(), Xs).

-spec mean(acc()) -> float().
mean(#acc{mean = M}) -> M.

%% Frequency weights: S / (W - 1), the sample variance of the pooled observations;
%% 0.0 below a total weight of 2.
-spec variance(acc()) -> float().
variance(#acc{w = W}) when W < 2 -> 0.0;
variance(#acc{w = W, s = S}) -> S / (W - 1).

-spec sd(acc()) -> float().
sd(A) -> math:sqrt(variance(A)).

-spec weight(acc()) -> float().
weight(#acc{w = W}) -> W.

%%% The monitored worker ----------------------------------------------------------------

%% @doc A worker with riarc_bench_worker's protocol (so the master and the other
%% monitors see no difference) that measures its idle time: from its start, or from the
%% end of handling a message, until it takes the next one.
-spec init(pid(), pos_integer(), pos_integer()) -> ok.
init(Master, _Id, _NumReqs) ->
    loop(Master, now_us(), new()).

loop(Master, Since, Acc0) ->
    receive
        {Master, {chunk, Triple}, Stamp} ->
            Acc = idle(Since, Acc0),
            Master ! {self(), {ack, Triple}, Stamp},
            loop(Master, now_us(), Acc);
        {Master, {term, Triple}, _} ->
            Acc = idle(Since, Acc0),
            %% Relayed before `end', so the coordinator has it before the master can finish.
            ?COORDINATOR ! {mit, self(), Acc},
            Master ! {self(), {'end', Triple}, none},
            ok
    end.

idle(Since, Acc) -> add((now_us() - Since) / 1000, Acc).

now_us() -> erlang:monotonic_time(microsecond).

%%% The set-up ----------------------------------------------------------------------------

%% @doc The `mit' set-up of riarc_bench_run: starts the coordinator, runs the master with
%% MIT workers and waits for every worker's statistics. Returns the summary fields.
-spec run({module(), atom(), [map()]}, map()) -> {ok, map()} | {error, {?MODULE, error_reason()}}.
run({M, F, [Cfg]}, P) ->
    Coord = spawn_link(fun() -> coordinator(new(), 0) end),
    try register(?COORDINATOR, Coord) of
        true ->
            {_Pid, Ref} = spawn_monitor(M, F, [Cfg#{worker => ?MODULE}]),
            receive
                {'DOWN', Ref, process, _, normal} -> collect(Coord, maps:get(workers, P));
                {'DOWN', Ref, process, _, Reason} -> stop(Coord), {error, {?MODULE, {master_crashed, Reason}}}
            end
    catch
        error:badarg -> stop(Coord), {error, {?MODULE, already_running}}
    end.

%% The coordinating monitor: the weighted merge of each worker's local statistics.
coordinator(Acc, Workers) ->
    receive
        {mit, _Worker, Local} -> coordinator(merge(Acc, Local), Workers + 1);
        {result, From, Expected} when Workers >= Expected -> From ! {?MODULE, Acc, Workers};
        {result, From, _} = Ask ->
            receive
                {mit, _, Local} -> self() ! Ask, coordinator(merge(Acc, Local), Workers + 1)
            after ?COLLECT_TIMEOUT -> From ! {?MODULE, Acc, Workers}
            end;
        stop -> ok
    end.

collect(Coord, Expected) ->
    Coord ! {result, self(), Expected},
    receive
        {?MODULE, Acc, Workers} ->
            %% The coordinator ends after answering, and its name goes with it.
            unlink(Coord),
            {ok, #{mit_mean_ms => mean(Acc), mit_sd_ms => sd(Acc), mit_periods => round(weight(Acc)),
                   mit_workers => Workers}}
    end.

stop(Coord) ->
    unlink(Coord),
    Coord ! stop,
    catch unregister(?COORDINATOR),
    ok.

%% @doc One sentence for an error of run/2.
-spec format_error(error_reason()) -> string().
format_error(already_running) -> "another MIT run is in progress in this VM";
format_error({master_crashed, Reason}) ->
    lists:flatten(io_lib:format("the master process crashed: ~0tP", [Reason, 20])).
