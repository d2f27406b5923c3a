%% @doc The master of the synthetic master-worker system (004 §3.1, fig. 1).
%%
%% It turns the Order queue Q_O into wall-clock creation times (the Ready queue Q_R),
%% spawns workers when their time comes, hands out work requests to the workers in the
%% Await queue Q_A by turn-based Bernoulli trials with Pr(send), dequeues responses with
%% Pr(recv), tells a worker to terminate once all its responses are in, and reports the
%% outcome to its owner once every worker has sent `end'.
%%
%% `start/1' is the master's whole life, so that a monitoring set-up can spawn it itself
%% (e.g. `riarc:run({riarc_bench_master, start, [Cfg]}, Spec, Opts)'). The result arrives
%% at the owner as `{riarc_bench_master, MasterPid, Result}'. With `nodes => [Node, ...]'
%% in the config, workers are spawned on those nodes by turns (the worker module must be
%% loaded there): a system spread over several nodes.
%%
%% ```
%% 1> {ok, P} = riarc_bench_model:new(#{shape => steady, workers => 20, requests => 10, period => 10}).
%% 2> Cfg = riarc_bench_master:config(P, self(), undefined, undefined).
%% 3> spawn(riarc_bench_master, start, [Cfg]).
%% 4> receive {riarc_bench_master, _, R} -> maps:with([ended, acks, ack_errors], R) end.
%% #{ack_errors => 0,acks => 199,ended => 20}
%% '''
-module(riarc_bench_master).

-export([config/4, start/1, counter/1]).

-export_type([config/0, result/0]).

-type config() :: #{params := riarc_bench_model:params(),
                    owner := pid(),
                    collector := pid() | undefined,
                    counters := counters:counters_ref() | undefined,
                    keep_pids := boolean(), worker => module(), nodes => [node()]}.
-type result() :: #{created := non_neg_integer(), ended := non_neg_integer(),
                    requests := non_neg_integer(), acks := non_neg_integer(),
                    ack_errors := non_neg_integer(), messages := non_neg_integer(),
                    duration_ms := non_neg_integer(),
                    pids := [pid()]}.

%% Shared counters, written by the master only, read by the collector for the time
%% series and the progress line (reading them costs the master nothing).
-include("riarc_bench_counters.hrl").
%% Sampled response times go to the collector in batches, not one message each.
-define(RT_BATCH, 128).

-record(worker, {pid :: pid(), id :: pos_integer(), next :: pos_integer(), num :: pos_integer()}).

-record(master, {order :: [non_neg_integer()],       % Q_O
            ready = [] :: [integer()],          % Q_R: monotonic us creation times
            unit_end :: integer(),              % end of the current time unit (us)
            batches :: [pos_integer()],
            next_id = 1 :: pos_integer(),
            await :: queue:queue(#worker{}),         % Q_A: workers with requests left to send
            await_len = 0 :: non_neg_integer(),
            acked = #{} :: #{pos_integer() => {non_neg_integer(), pos_integer()}},
            n :: pos_integer(),
            ended = 0 :: non_neg_integer(),
            psend :: float(), precv :: float(), sample :: float(), period :: pos_integer(),
            rand :: rand:state(),
            owner :: pid(), collector :: pid() | undefined,
            counters :: counters:counters_ref(),
            rts = [] :: [non_neg_integer()], nrts = 0 :: non_neg_integer(),
            ack_errors = 0 :: non_neg_integer(),
            keep_pids :: boolean(), pids = [] :: [pid()],
            worker = riarc_bench_worker :: module(),
            nodes :: tuple(),                   % where workers go, by turns
            started :: integer()}).

%% The master's argument holds the parameters, not the model: the master rebuilds the
%% model from the seed, so its initial call (which tracing copies into spawn events)
%% stays small even with 500k batch sizes.
-spec config(riarc_bench_model:params(), pid(), pid() | undefined,
             counters:counters_ref() | undefined) -> config().
config(Params, Owner, Collector, Counters) ->
    #{params => Params, owner => Owner, collector => Collector,
      counters => Counters, keep_pids => false}.

%% A fresh counters array of the layout the master writes.
-spec counter(created | ended | requests | acks | messages | size) -> pos_integer().
counter(created) -> ?C_CREATED;
counter(ended) -> ?C_ENDED;
counter(requests) -> ?C_REQUESTS;
counter(acks) -> ?C_ACKS;
counter(messages) -> ?C_MESSAGES;
counter(size) -> ?N_COUNTERS.

-spec start(config()) -> ok.
start(Cfg = #{params := P}) ->
    #{order := Order, batches := Batches} = riarc_bench_model:build(P),
    Now = now_ms(),
    Counters = case maps:get(counters, Cfg) of
                   undefined -> counters:new(?N_COUNTERS, []);
                   C -> C
               end,
    S = #master{order = Order, unit_end = now_us(), batches = Batches, await = queue:new(),
           n = maps:get(workers, P), psend = maps:get(psend, P), precv = maps:get(precv, P),
           sample = maps:get(sample, P), period = maps:get(period, P),
           rand = riarc_bench_model:stream(P, master), owner = maps:get(owner, Cfg),
           collector = maps:get(collector, Cfg), counters = Counters,
           keep_pids = maps:get(keep_pids, Cfg, false), started = Now,
           worker = maps:get(worker, Cfg, riarc_bench_worker),
           nodes = list_to_tuple(maps:get(nodes, Cfg, [node()]))},
    finish(loop(S)).

%% One round: schedule, create, send, receive; then either finish, or wait when nothing
%% can move without the clock or a response.
loop(S0) ->
    S1 = create_due(schedule(S0)),
    S2 = send_round(S1),
    S3 = recv_rounds(S2, max(1, S2#master.await_len)),
    case S3#master.ended =:= S3#master.n of
        true -> S3;
        false -> loop(idle(S3))
    end.

%%% Scheduling (004 §3.1 steps 2-7) ----------------------------------------------------

%% Steps 2-3: when Q_R is empty and the current time unit is over, dequeue the next
%% count l from Q_O and draw l creation points cumulatively over the period pi, each gap
%% ~ Normal(ceil(pi/l), 0.1 mu). A unit with l = 0 just lets pi elapse.
%% The ceiling is taken in microseconds, not milliseconds: in whole ms a unit could hold
%% at most pi creations, and a unit with l > pi would stretch past pi and flatten the
%% load shape (e.g. steady at lambda = 5000, pi = 1000 would last 5 s per unit).
schedule(S = #master{ready = [], order = [L | Order], unit_end = End, period = Pi, rand = R0}) ->
    Now = now_us(),
    case Now >= End of
        false -> S;
        true ->
            {Points, R} = points(L, Pi, Now, R0),
            S#master{ready = Points, order = Order, unit_end = Now + Pi * 1000, rand = R}
    end;
schedule(S) -> S.

points(0, _Pi, _Now, R) -> {[], R};
points(L, Pi, Now, R0) ->
    Mu = ceil(Pi * 1000 / L),
    {Gaps, R} = lists:mapfoldl(fun(_, Ri) -> rand:normal_s(Mu, (0.1 * Mu) * (0.1 * Mu), Ri) end,
                               R0, lists:seq(1, L)),
    {_, Points} = lists:foldl(fun(G, {T, Acc}) -> T1 = T + max(0.0, G), {T1, [round(T1) | Acc]} end,
                              {float(Now), []}, Gaps),
    {lists:reverse(Points), R}.

%% Steps 4-7: create the workers whose time point has passed and append them to Q_A.
create_due(S = #master{ready = []}) -> S;
create_due(S = #master{ready = [P | Ready]}) ->
    case P =< now_us() of
        true -> create_due(spawn_worker(S#master{ready = Ready}));
        false -> S
    end.

spawn_worker(S = #master{batches = [Num | Batches], next_id = Id, await = Q, await_len = Len,
                    acked = Acked, counters = C}) ->
    %% A real spawn/3 of the worker module: monitoring specifications match on this MFA.
    %% The module is riarc_bench_worker unless a set-up brings its own with the same
    %% protocol (riarc_bench_mit's workers measure their idle time).
    %% With `nodes', worker Id goes to the (Id mod n)-th node: a system spread over nodes.
    Pid = case element(1 + Id rem tuple_size(S#master.nodes), S#master.nodes) of
              Here when Here =:= node() -> spawn(S#master.worker, init, [self(), Id, Num]);
              There -> spawn(There, S#master.worker, init, [self(), Id, Num])
          end,
    counters:add(C, ?C_CREATED, 1),
    S1 = S#master{batches = Batches, next_id = Id + 1,
             await = queue:in(#worker{pid = Pid, id = Id, next = 1, num = Num}, Q),
             await_len = Len + 1, acked = Acked#{Id => {0, Num}}},
    case S#master.keep_pids of
        true -> S1#master{pids = [Pid | S#master.pids]};
        false -> S1
    end.

%%% Sending (004 §3.1 step 8, 000 App. C.2) --------------------------------------------

%% Traverse Q_A once. Each worker gets a first request if X =< Pr(send), then more
%% while the trials keep succeeding and requests remain; otherwise it misses its turn.
%% Workers with nothing left to send leave Q_A.
send_round(S = #master{await_len = Len}) -> send_round(S, Len).

send_round(S, 0) -> S;
send_round(S = #master{await = Q0, await_len = Len}, K) ->
    {{value, W0}, Q1} = queue:out(Q0),
    {W, S1} = send_burst(W0, S#master{await = Q1}),
    S2 = case W#worker.next > W#worker.num of
             true -> S1#master{await_len = Len - 1};
             false -> S1#master{await = queue:in(W, S1#master.await)}
         end,
    send_round(S2, K - 1).

send_burst(W = #worker{next = Next, num = Num}, S) when Next > Num -> {W, S};
send_burst(W, S = #master{rand = R0, psend = Ps}) ->
    {X, R} = rand:uniform_s(R0),
    case X =< Ps of
        true -> send_burst(W#worker{next = W#worker.next + 1}, send_chunk(W, S#master{rand = R}));
        false -> {W, S#master{rand = R}}
    end.

%% About a fraction `sample' of requests carry a timestamp (004 §3.3: ~10 %).
send_chunk(#worker{pid = Pid, id = Id, next = Next, num = Num}, S = #master{rand = R0, sample = F, counters = C}) ->
    {U, R} = rand:uniform_s(R0),
    Stamp = case U =< F of
                true -> erlang:monotonic_time(microsecond);
                false -> none
            end,
    Pid ! {self(), {chunk, {Id, Next, Num}}, Stamp},
    counters:add(C, ?C_REQUESTS, 1),
    counters:add(C, ?C_MESSAGES, 1),
    S#master{rand = R}.

%%% Receiving (004 §3.1, 000 App. C.2) -------------------------------------------------

%% The dequeue procedure, repeated |Q_A| times to keep up with many workers: dequeue
%% one response per successful trial X =< Pr(recv), until a trial fails or the mailbox
%% holds no response. An empty mailbox ends all repetitions at once.
recv_rounds(S, 0) -> S;
recv_rounds(S0, K) ->
    case recv_some(S0) of
        {empty, S} -> S;
        {failed, S} -> recv_rounds(S, K - 1)
    end.

recv_some(S = #master{rand = R0, precv = Pr}) ->
    {X, R} = rand:uniform_s(R0),
    case X =< Pr of
        false -> {failed, S#master{rand = R}};
        true ->
            receive
                {Pid, {Tag, Triple}, Stamp} when Tag =:= ack; Tag =:= 'end' ->
                    recv_some(handle(Pid, Tag, Triple, Stamp, S#master{rand = R}))
            after 0 ->
                    {empty, S#master{rand = R}}
            end
    end.

%% A response ReqNum must be the next one expected from that worker: anything else
%% (duplicate, gap, unknown worker) is counted as an error the tests assert is zero.
handle(Pid, ack, {Id, ReqNum, _}, Stamp, S = #master{acked = Acked, counters = C}) ->
    counters:add(C, ?C_ACKS, 1),
    counters:add(C, ?C_MESSAGES, 1),
    S1 = record_rt(Stamp, S),
    case maps:find(Id, Acked) of
        {ok, {Got, Num}} when ReqNum =:= Got + 1, ReqNum =:= Num ->
            %% Step 14: all responses are in, the worker may terminate.
            Pid ! {self(), {term, {Id, Num, Num}}, none},
            counters:add(C, ?C_MESSAGES, 1),
            S1#master{acked = Acked#{Id := {Num, Num}}};
        {ok, {Got, Num}} when ReqNum =:= Got + 1 ->
            S1#master{acked = Acked#{Id := {ReqNum, Num}}};
        _ ->
            S1#master{ack_errors = S1#master.ack_errors + 1}
    end;
handle(_Pid, 'end', {Id, _, _}, _Stamp, S = #master{acked = Acked, counters = C}) ->
    counters:add(C, ?C_ENDED, 1),
    counters:add(C, ?C_MESSAGES, 1),
    Errors = case maps:find(Id, Acked) of
                 {ok, {Num, Num}} -> 0;
                 _ -> 1
             end,
    S#master{acked = maps:remove(Id, Acked), ended = S#master.ended + 1,
        ack_errors = S#master.ack_errors + Errors}.

%% Response time: from stamping the request to dequeuing its response, so it includes
%% the wait in the master's mailbox (004 §3.3, fig. 2).
record_rt(none, S) -> S;
record_rt(Stamp, S = #master{rts = Rts, nrts = N}) ->
    Rt = erlang:monotonic_time(microsecond) - Stamp,
    flush_rts(S#master{rts = [Rt | Rts], nrts = N + 1}, ?RT_BATCH).

flush_rts(S = #master{nrts = N}, Min) when N < Min; N =:= 0 -> S;
flush_rts(S = #master{collector = undefined}, _Min) -> S#master{rts = [], nrts = 0};
flush_rts(S = #master{collector = Coll, rts = Rts}, _Min) ->
    Coll ! {rt, Rts},
    S#master{rts = [], nrts = 0}.

%%% Waiting and finishing --------------------------------------------------------------

%% With Q_A empty and no response waiting, the master would only spin: block until a
%% response arrives or the next creation is due. A response that arrives while the master
%% has nothing else to do is dequeued at once: a Bernoulli trial would only postpone it
%% to the next round, which would again find nothing else to do.
idle(S = #master{await_len = 0}) ->
    case erlang:process_info(self(), message_queue_len) of
        {message_queue_len, 0} -> wait(S);
        _ -> S
    end;
idle(S) -> S.

wait(S) ->
    receive
        {Pid, {Tag, Triple}, Stamp} when Tag =:= ack; Tag =:= 'end' ->
            handle(Pid, Tag, Triple, Stamp, S)
    after timeout(S) ->
            S
    end.

timeout(#master{ready = [P | _]}) -> until(P);
timeout(#master{order = [_ | _], unit_end = End}) -> until(End);
timeout(_) -> infinity.

%% Milliseconds (receive's resolution) until a monotonic time in microseconds.
until(Us) -> max(0, ceil((Us - now_us()) / 1000)).

finish(S = #master{owner = Owner, counters = C}) ->
    S1 = flush_rts(S, 0),
    Result = #{created => counters:get(C, ?C_CREATED), ended => S1#master.ended,
               requests => counters:get(C, ?C_REQUESTS), acks => counters:get(C, ?C_ACKS),
               ack_errors => S1#master.ack_errors, messages => counters:get(C, ?C_MESSAGES),
               duration_ms => now_ms() - S1#master.started,
               pids => S1#master.pids},
    Owner ! {riarc_bench_master, self(), Result},
    ok.

now_ms() -> erlang:monotonic_time(millisecond).
now_us() -> erlang:monotonic_time(microsecond).
