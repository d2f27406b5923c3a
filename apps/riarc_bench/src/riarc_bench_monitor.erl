%% @doc Trace-soundness monitors for the master-worker system, in the form riarc's
%% decentralised monitoring expects (000 App. C.5.2: monitors use the message numbering
%% ⟨Id, ReqNum, NumReqs⟩ of App. C.3 to check that every trace is complete and in order).
%%
%% `spec/0' maps the logical initial call of a process to a monitor:
%%  * a worker (`{riarc_bench_worker, init, [Master, Id, NumReqs]}') must receive
%%    chunks 1..NumReqs in order, then `term', then exit normally;
%%  * the master (`{riarc_bench_master, start, _}') must see, for each worker it spawns,
%%    acks 1..NumReqs in order and then `end', and must exit normally with no worker left.
%%    A worker the master spawns on another node (config `nodes') shows no spawn event in
%%    the master's trace (the VM gives none: docs/production.md): with `spread => true'
%%    the master's monitor learns such a worker from its first ack, `{Id, 1, NumReqs}',
%%    and checks the rest as for the others.
%% A monitor is `fun((Event) -> Monitor | accept | reject)'.
%%
%% `spec/1' chooses what the monitors do, the same in every instrumentation mode
%% (outline riarc, centralised, inline) so that the modes differ only in where the
%% monitor runs (000 §5):
%%  * `#{monitors => none}': every master and worker still gets a monitor of its own
%%    (so the instrumentation partitions the system exactly as with real monitors), but
%%    the monitor does nothing and never reaches a verdict: "instrumentation alone";
%%  * `#{monitors => soundness, cost_us => C}': the checks above, each event also costing
%%    C microseconds of busy work (000 App. C.5.2 gives the analysis about 5 µs).
%%
%% ```
%% 1> {ok, M0} = (riarc_bench_monitor:spec())({riarc_bench_worker, init, [self(), 1, 2]}).
%% 2> Feed = fun(E, M) when is_function(M) -> M(E); (_, V) -> V end.
%% 3> Msg = fun(Tag, R) -> {self(), {Tag, {1, R, 2}}, none} end.
%% 4> lists:foldl(Feed, M0, [{recv, self(), Msg(chunk, 1)}, {recv, self(), Msg(chunk, 2)},
%%                           {recv, self(), Msg(term, 2)}, {exit, self(), normal}]).
%% accept
%% '''
-module(riarc_bench_monitor).

-export([spec/0, spec/1, busy/1]).

-export_type([monitor/0, event/0]).

-type event() :: {init, pid(), pid(), mfa_call()} | {spawn, pid(), pid(), mfa_call()}
               | {exit, pid(), term()} | {send, pid(), pid(), term()} | {recv, pid(), term()}.
-type mfa_call() :: {module(), atom(), list()}.
-type monitor() :: fun((event()) -> monitor() | accept | reject).

-type opts() :: #{monitors := none | soundness, cost_us => non_neg_integer(),
                  spread => boolean()}.

%% @doc The soundness monitors with no analysis cost.
-spec spec() -> fun((mfa_call()) -> {ok, monitor()} | undefined).
spec() -> spec(#{monitors => soundness, cost_us => 0}).

-spec spec(opts()) -> fun((mfa_call()) -> {ok, monitor()} | undefined).
spec(#{monitors := none}) ->
    Idle = fun Idle(_) -> Idle end,
    fun({riarc_bench_worker, init, _}) -> {ok, Idle};
       ({riarc_bench_master, start, _}) -> {ok, Idle};
       (_) -> undefined
    end;
spec(#{monitors := soundness} = Opts) ->
    Spread = maps:get(spread, Opts, false),
    case maps:get(cost_us, Opts, 0) of
        0 ->
            fun({riarc_bench_worker, init, [_Master, _Id, Num]}) -> {ok, worker(1, Num)};
               ({riarc_bench_master, start, _}) -> {ok, master(#{}, Spread)};
               (_) -> undefined
            end;
        Us ->
            fun({riarc_bench_worker, init, [_Master, _Id, Num]}) -> {ok, costly(Us, worker(1, Num))};
               ({riarc_bench_master, start, _}) -> {ok, costly(Us, master(#{}, Spread))};
               (_) -> undefined
            end
    end.

%% Every step first spends Us microseconds of the analysing process's time, wherever that
%% process is: a tracer (riarc), the one central tracer, or the system process (inline).
costly(Us, M) ->
    fun(E) ->
            busy(Us),
            case M(E) of
                Next when is_function(Next, 1) -> costly(Us, Next);
                Verdict -> Verdict
            end
    end.

%% @doc Busy work for Us microseconds: computation, not a sleep, so it occupies a
%% scheduler as a real analysis would (the process can still be preempted meanwhile).
-spec busy(non_neg_integer()) -> ok.
busy(Us) ->
    spin(erlang:monotonic_time(nanosecond) + Us * 1000).

spin(Until) ->
    case erlang:monotonic_time(nanosecond) >= Until of
        true -> ok;
        false -> spin(Until)
    end.

%% Next is the ReqNum of the next chunk; Next = Num + 1 means the batch is complete.
worker(Next, Num) ->
    fun({recv, _, {_, {chunk, {_, R, N}}, _}}) when R =:= Next, N =:= Num -> worker(Next + 1, Num);
       ({recv, _, {_, {chunk, _}, _}}) -> reject;
       ({recv, _, {_, {term, {_, R, N}}, _}}) when R =:= Num, N =:= Num, Next =:= Num + 1 ->
            worker(done, Num);
       ({recv, _, {_, {term, _}, _}}) -> reject;
       ({exit, _, normal}) when Next =:= done -> accept;
       ({exit, _, _}) -> reject;
       (_) -> worker(Next, Num)
    end.

%% Open maps a worker Id to {AcksSeen, NumReqs}; Spread: workers may be on other nodes.
master(Open, Spread) ->
    fun({spawn, _, _, {riarc_bench_worker, init, [_, Id, Num]}}) -> master(Open#{Id => {0, Num}}, Spread);
       ({recv, _, {_, {ack, {Id, R, N}}, _}}) ->
            case Open of
                #{Id := {Seen, Num}} when R =:= Seen + 1 -> master(Open#{Id := {R, Num}}, Spread);
                #{Id := _} -> reject;
                #{} when Spread, R =:= 1 -> master(Open#{Id => {1, N}}, Spread);
                #{} -> reject
            end;
       ({recv, _, {_, {'end', {Id, _, _}}, _}}) ->
            case Open of
                #{Id := {Num, Num}} -> master(maps:remove(Id, Open), Spread);
                _ -> reject
            end;
       ({exit, _, normal}) when map_size(Open) =:= 0 -> accept;
       ({exit, _, _}) -> reject;
       (_) -> master(Open, Spread)
    end.
