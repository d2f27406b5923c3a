%% @doc System shapes for `make bench-shapes' (issue 17): small systems whose shape, not
%% whose work, decides what monitoring them costs, for riarc_bench_user (`bin/riarc bench
%% -m riarc_bench_shapes -f SHAPE -a ARGS --props examples/props/no_error.prop'), which
%% runs each in fresh VMs under the set-ups and reports medians with intervals.
%%
%% Shapes (entry points of this module):
%% <ul>
%% <li>`flat(N, K)': one server, N workers, each sends K requests and waits for each
%%     reply;</li>
%% <li>`chains(C, D)': C chains, each a process that spawns its child, down to depth D; the
%%     leaf's `done' is relayed back up;</li>
%% <li>`wide(W, F)': W children of the root, F grandchildren each; each grandchild makes
%%     one round trip to its parent;</li>
%% <li>`pingpong(P, R)': P pingers, each with its own ponger, R round trips each;</li>
%% <li>`load(Shape, N)': the load driver's master-worker system, N workers; it returns
%%     the response times the master sampled (`{latencies_us, L}', riarc_bench_user's
%%     convention), so the benchmark reports the load driver's mean response time;
%%     `load(Shape, N, Period)' the same over time units of Period ms (100 for load/2;
%%     the load driver's own default, 1000, is a tenth of the load).</li>
%% </ul>
%% Every process has at most two arguments, so that examples/props/no_error.prop gives each
%% its own monitor. `spec/1' and `trace_flags/0' are that property without its trace
%% patterns (`--monitors riarc_bench_shapes'), to compare riarc with and without them.
%% ```
%% 1> {ok, R} = riarc:run({riarc_bench_shapes, flat, [10, 100]}, riarc_bench_shapes, #{}).
%% 2> maps:get(events, R).
%% 4046
%% '''
-module(riarc_bench_shapes).

-export([spec/1, trace_flags/0]).
%% The systems and their processes.
-export([flat/2, server/0, worker/2, chains/2, chain/2, wide/2, child/2, grandchild/2,
         pingpong/2, pinger/2, ponger/0, load/2, load/3]).

-define(PROP, "examples/props/no_error.prop").

%%% The systems

%% @private
-spec flat(pos_integer(), pos_integer()) -> ok.
flat(N, K) ->
    Srv = spawn(?MODULE, server, []),
    _ = [spawn(?MODULE, worker, [{Srv, self()}, K]) || _ <- lists:seq(1, N)],
    _ = [receive done -> ok end || _ <- lists:seq(1, N)],
    Srv ! stop,
    ok.

%% @private
-spec server() -> ok.
server() ->
    receive
        {req, From} -> From ! {ok, 1}, server();
        stop -> ok
    end.

%% @private
-spec worker({pid(), pid()}, non_neg_integer()) -> done.
worker({_Srv, Root}, 0) -> Root ! done;
worker({Srv, _} = To, K) ->
    Srv ! {req, self()},
    receive {ok, _} -> ok end,
    worker(To, K - 1).

%% @private
-spec chains(pos_integer(), pos_integer()) -> ok.
chains(C, D) ->
    _ = [spawn(?MODULE, chain, [D, self()]) || _ <- lists:seq(1, C)],
    _ = [receive done -> ok end || _ <- lists:seq(1, C)],
    ok.

%% @private
-spec chain(non_neg_integer(), pid()) -> done.
chain(0, Parent) -> Parent ! done;
chain(D, Parent) ->
    _ = spawn(?MODULE, chain, [D - 1, self()]),
    receive done -> Parent ! done end.

%% @private
-spec wide(pos_integer(), pos_integer()) -> ok.
wide(W, F) ->
    _ = [spawn(?MODULE, child, [F, self()]) || _ <- lists:seq(1, W)],
    _ = [receive done -> ok end || _ <- lists:seq(1, W)],
    ok.

%% @private
-spec child(pos_integer(), pid()) -> done.
child(F, Parent) ->
    _ = [spawn(?MODULE, grandchild, [self(), I]) || I <- lists:seq(1, F)],
    _ = [receive {ping, G} -> G ! pong end || _ <- lists:seq(1, F)],
    Parent ! done.

%% @private
-spec grandchild(pid(), pos_integer()) -> pong.
grandchild(Parent, _I) ->
    Parent ! {ping, self()},
    receive pong -> pong end.

%% @private
-spec pingpong(pos_integer(), pos_integer()) -> ok.
pingpong(P, R) ->
    _ = [spawn(?MODULE, pinger, [self(), R]) || _ <- lists:seq(1, P)],
    _ = [receive done -> ok end || _ <- lists:seq(1, P)],
    ok.

%% @private
-spec pinger(pid(), non_neg_integer()) -> done.
pinger(Root, R) ->
    Ponger = spawn(?MODULE, ponger, []),
    _ = [begin Ponger ! {ping, self()}, receive pong -> ok end end || _ <- lists:seq(1, R)],
    Ponger ! stop,
    Root ! done.

%% @private
-spec ponger() -> ok.
ponger() ->
    receive
        {ping, From} -> From ! pong, ponger();
        stop -> ok
    end.

%% @private The load driver's master-worker system (docs/bench.md) as a system of its own:
%% N workers, 100 requests each, created in the given shape over 10 units of 100 ms. This
%% process is the master's collector too: the master samples about 10 % of the response
%% times (from stamping a request to dequeuing its answer, 004 §3.3) and sends them in
%% batches, the last one before its result; their mean is the load driver's MRT.
-spec load(steady | burst, pos_integer()) -> {latencies_us, [non_neg_integer()]}.
load(Shape, N) ->
    load(Shape, N, 100).

%% @private As load/2, over 10 units of Period ms.
-spec load(steady | burst, pos_integer(), pos_integer()) -> {latencies_us, [non_neg_integer()]}.
load(Shape, N, Period) ->
    Given = case Shape of
                burst -> #{shape => burst, time => 10};
                steady -> #{shape => steady, rate => N / 10}
            end,
    {ok, P} = riarc_bench_model:new(Given#{workers => N, requests => 100, period => Period}),
    Cfg = riarc_bench_master:config(P, self(), self(), undefined),
    Master = spawn(riarc_bench_master, start, [Cfg]),
    {latencies_us, collect(Master, [])}.

%% The batches come before the result: one sender, so in order.
collect(Master, Acc) ->
    receive
        {rt, Rts} -> collect(Master, [Rts | Acc]);
        {riarc_bench_master, Master, #{ack_errors := 0}} -> lists:append(Acc)
    end.

%%% The property without its trace patterns

%% @doc The Spec of examples/props/no_error.prop, compiled on first use: with
%% `--monitors riarc_bench_shapes', riarc traces every message the property's trace flags
%% name (this module has no trace_patterns/0), for comparison with `--props'.
-spec spec(riarc_event:mfa_args()) -> {ok, riarc_monitor:monitor()} | undefined.
spec(MFA) -> (property()):spec(MFA).

%% @doc The property's trace flags.
-spec trace_flags() -> [send | recv].
trace_flags() -> (property()):trace_flags().

%% riarc asks for trace_flags/0 before the run starts, so the module is loaded once,
%% before any tracer asks spec/1.
property() ->
    Mod = riarc_shml:module_name(?PROP),
    case erlang:function_exported(Mod, spec, 1) of
        true -> Mod;
        false -> {ok, Mod} = riarc_shml:load_file(?PROP), Mod
    end.
