%% @doc System shapes for `make bench-shapes' (issue 17): small systems whose shape, not
%% whose work, decides what monitoring them costs, each run under one set-up with the
%% property "no process ever receives `{error, _}`" (examples/props/no_error.prop, every
%% event analysed where the set-up analyses events).
%%
%% Shapes (the root is `{riarc_bench_shapes, Shape, [A, B]}'):
%% <ul>
%% <li>`flat' (A workers, B round trips each): one server, A workers, each sends B requests
%%     and waits for each reply;</li>
%% <li>`chains' (A chains, depth B): each chain is a process that spawns its child, down to
%%     depth B; the leaf's `done' is relayed back up;</li>
%% <li>`wide' (A children, B grandchildren each): a tree two levels wide below the root;
%%     each grandchild makes one round trip to its parent;</li>
%% <li>`pingpong' (A pairs, B round trips): pingers each with their own ponger.</li>
%% </ul>
%% Set-ups: `baseline' (no monitoring), `tracing' (the VM's tracing of every event into a
%% process that drops them: the floor of outline monitoring), `riarc' (with the property's
%% trace patterns), `riarc_all' (riarc tracing every message: `trace_patterns => #{}'),
%% `centralised' (one tracer, riarc_central). One run: wall time, peak memory, events.
%% ```
%% 1> riarc_bench_shapes:run(flat, [10, 100], riarc).
%% {ok,#{events => 61,ms => 12.3,peak_mb => 31.2,verdicts_ok => true}}
%% '''
%% `main/1' is the entry point of one fresh VM per run (scripts/bench-shapes).
-module(riarc_bench_shapes).

-export([run/3, main/1, shapes/0, setups/0, format_error/1]).
%% The systems' processes.
-export([flat/2, server/0, worker/2, chains/2, chain/2, wide/2, child/2, grandchild/2,
         pingpong/2, pinger/2, ponger/0]).

-type shape() :: flat | chains | wide | pingpong.
-type setup() :: baseline | tracing | riarc | riarc_all | centralised.
-type error_reason() :: {bad_args, [string()]} | {run, setup(), term()}.
-export_type([error_reason/0]).

-define(PROP, "examples/props/no_error.prop").

-spec shapes() -> [shape()].
shapes() -> [flat, chains, wide, pingpong].

-spec setups() -> [setup()].
setups() -> [baseline, tracing, riarc, riarc_all, centralised].

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

%%% One run

%% @doc Runs a shape under a set-up, once, in this VM.
-spec run(shape(), [pos_integer()], setup()) -> {ok, map()} | {error, {?MODULE, error_reason()}}.
run(Shape, Args, Setup) ->
    MFA = {?MODULE, Shape, Args},
    {ok, Mod} = riarc_shml:load_file(?PROP),
    Sampler = sampler(),
    T0 = erlang:monotonic_time(microsecond),
    Res = setup(Setup, MFA, Mod),
    Ms = (erlang:monotonic_time(microsecond) - T0) / 1000,
    Peak = stop_sampler(Sampler),
    case Res of
        {ok, Extra} -> {ok, Extra#{ms => Ms, peak_mb => Peak / 1048576}};
        {error, Reason} -> {error, {?MODULE, {run, Setup, Reason}}}
    end.

setup(baseline, MFA, _Mod) ->
    plain(baseline, MFA);
setup(tracing, MFA, _Mod) ->
    plain(tracing, MFA);
setup(riarc, MFA, Mod) ->
    monitored(riarc:run(MFA, Mod, #{invariants => false}));
setup(riarc_all, MFA, Mod) ->
    monitored(riarc:run(MFA, Mod, #{invariants => false, trace_patterns => #{}}));
setup(centralised, MFA, Mod) ->
    monitored(riarc_central:run(MFA, Mod, #{})).

%% The load driver's own baseline and VM-tracing set-ups (every event: `events => all').
plain(Name, MFA) ->
    #{run := Run} = riarc_bench_run:setup(Name),
    case Run(MFA, #{events => all}) of
        {ok, _} -> {ok, #{events => 0, verdicts_ok => true}};
        {error, _} = E -> E
    end.

monitored({ok, #{verdicts := Vs, events := Events}}) ->
    {ok, #{events => Events,
           verdicts_ok => Vs =/= [] andalso lists:all(fun(#{verdict := V}) -> V =:= accept end, Vs)}};
monitored({error, _} = E) -> E.

%% Peak memory of the node, sampled every 2 ms.
sampler() ->
    spawn_opt(fun() -> sample(erlang:memory(total)) end, [{priority, high}]).

sample(Peak) ->
    receive {stop, From} -> From ! {peak, self(), Peak}
    after 2 -> sample(max(Peak, erlang:memory(total)))
    end.

stop_sampler(S) ->
    S ! {stop, self()},
    receive {peak, S, Peak} -> max(Peak, erlang:memory(total)) end.

%% @doc One run in a fresh VM: `[Shape, Setup, A, B]'; prints
%% `shape,setup,a,b,ms,peak_mb,events,verdicts_ok' and halts (status 0, or 1 on error).
-spec main([string()]) -> no_return().
main([Shape, Setup, A, B]) ->
    try {list_to_existing_atom(Shape), list_to_existing_atom(Setup),
         list_to_integer(A), list_to_integer(B)} of
        {Sh, Su, IA, IB} ->
            case lists:member(Sh, shapes()) andalso lists:member(Su, setups()) of
                true -> preload(), report(Sh, Su, IA, IB, run(Sh, [IA, IB], Su));
                false -> fail({bad_args, [Shape, Setup, A, B]})
            end
    catch error:badarg -> fail({bad_args, [Shape, Setup, A, B]})
    end;
main(Args) ->
    fail({bad_args, Args}).

%% A fresh VM loads code on first call: riarc's modules are loaded before the clock starts,
%% so that a run measures monitoring, not code loading.
preload() ->
    _ = [code:ensure_loaded(list_to_atom(filename:basename(F, ".beam")))
         || App <- [riarc, riarc_shml, riarc_bench],
            F <- filelib:wildcard(filename:join(code:lib_dir(App, ebin), "*.beam"))],
    ok.

report(Sh, Su, A, B, {ok, #{ms := Ms, peak_mb := Mb, events := E, verdicts_ok := Ok}}) ->
    io:format("~s,~s,~b,~b,~.2f,~.1f,~b,~s~n", [Sh, Su, A, B, Ms, Mb, E, Ok]),
    halt(0);
report(_, _, _, _, {error, {?MODULE, R}}) ->
    fail(R).

fail(R) ->
    io:format(standard_error, "~ts~n", [format_error(R)]),
    halt(1).

%% @doc A sentence for an error of this module.
-spec format_error(error_reason()) -> string().
format_error({bad_args, Args}) ->
    lists:flatten(io_lib:format("usage: SHAPE SETUP A B (shapes ~p, set-ups ~p), not ~p",
                                [shapes(), setups(), Args]));
format_error({run, Setup, Reason}) ->
    lists:flatten(io_lib:format("the ~s run failed: ~ts", [Setup, riarc:format_error(Reason)])).
