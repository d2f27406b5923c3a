%% Settling before a stop (riarc:settle/2), and a stop that does not wait: a new
%% process's tracer that has not finished taking it over when the stop comes cuts its
%% partition short, and the partition reads inconclusive (riarc_stopped_short), never
%% `none'; after settle/2 no partition is cut short of what the system did before.
-module(riarc_settle_tests).

-include_lib("eunit/include/eunit.hrl").

-export([worker/1, served/1, unseen_parent/1]).

%% @doc The system: a worker that takes one order and tells its test.
-spec worker(pid()) -> ok.
worker(Test) -> receive Order -> Test ! {served, self(), Order}, ok end.

spec() ->
    fun({?MODULE, worker, _}) -> {ok, fun M({recv, _, {error, _}}) -> reject; M(_) -> M end};
       (_) -> undefined
    end.

%% @doc A process that, once told to go, turns off its own set_on_spawn, then spawns a
%% child (untraced from its birth: only its spawn is seen), waits for its end and tells
%% its test.
-spec unseen_parent(pid()) -> ok.
unseen_parent(Test) ->
    receive go -> ok end,
    _ = erlang:trace(self(), false, [set_on_spawn]),
    {C, Ref} = spawn_monitor(riarc_demo_untracer, quiet, []),
    receive {'DOWN', Ref, process, C, _} -> ok end,
    Test ! {child_ended, self(), C},
    receive stop -> ok end.

%% A stop that comes before a tracer's next look (they come a second apart), attached to
%% a running process: the child riarc never saw, which ended untraced, is an error (its
%% flags were gone), as a look would have found; before, a stop ended its partition with
%% verdict none, its exit never seen, where run/3 (which waits for the look) gives the
%% error (the differential oracle's mode `{attach, running}' found it). Both backends.
stop_before_look_test_() ->
    [{atom_to_list(B), fun() -> stop_before_look(B) end} || B <- [route, evm]].

stop_before_look(Backend) ->
    Mon = fun M({exit, _, normal}) -> accept; M(_) -> M end,
    Spec = fun({?MODULE, unseen_parent, _}) -> {ok, Mon};
              ({riarc_demo_untracer, quiet, _}) -> {ok, Mon};
              (_) -> undefined
           end,
    P = spawn(?MODULE, unseen_parent, [self()]),
    {ok, S} = riarc:attach(P, Spec, #{backend => Backend}),
    P ! go,
    C = receive {child_ended, P, Child} -> Child end,
    Ref = erlang:trace_delivered(all),
    receive {trace_delivered, all, Ref} -> ok end,
    %% Every takeover done: what the stop leaves is the look's to say.
    ok = riarc:settle(S, 10000),
    {ok, R = #{verdicts := Vs}} = riarc:stop(S),
    P ! stop,
    ?assertMatch([#{verdict := error, reason := {cut, #{process := C, call := {flags_removed, []}}}}],
                 [E || E = #{pid := Pid} <- Vs, Pid =:= C]),
    ?assertEqual(1, riarc_result:status(R)).

%% The tracer core answers a settle request at once when it holds nothing for anyone,
%% and a tracer taking a process over only once its takeover is acknowledged.
core_settle_test() ->
    Mon = fun Rec() -> fun(_) -> Rec() end end,
    B = riarc_backend:new(riarc_backend_route, #{table => undefined, flags => []}),
    Cfg = #{lambda => riarc_lambda:new(fun(_) -> {ok, Mon()} end), backend => B, session => s,
            checks => true, perturb => undefined, start_tracer => fun(_, _, _, _) -> error(none) end,
            init_from_spawn => true, self => t1, analysis => inline},
    Settle = {riarc_ctl, s, r, settle},
    Told = fun(Fx) -> [R || {send, s, {riarc_settled, t1, R}} <- Fx] end,
    {Root, _} = riarc_tracer_core:init_root(Cfg, p, {m, p, []}, none),
    {_, Fx0} = riarc_tracer_core:handle(Settle, Root),
    ?assertEqual([r], Told(Fx0)),
    %% A tracer whose detach of c from t0 is not acknowledged yet.
    {T0, _} = riarc_tracer_core:init_tracer(Cfg, Mon(), c, {m, c, []}, t0),
    {T1, Fx1} = riarc_tracer_core:handle(Settle, T0),
    ?assertEqual([], Told(Fx1)),
    {T2, Fx2} = riarc_tracer_core:handle({riarc_rtd, t0, {evt, {init, c, p, {m, c, []}}}}, T1),
    ?assertEqual([], Told(Fx2)),
    {_, Fx3} = riarc_tracer_core:handle({riarc_rtd, t0, {dtc, t1, c}}, T2),
    ?assertEqual([r], Told(Fx3)).

%% Tracers slowed before their takeovers (option perturb) widen the race that settle
%% closes: with settle, every worker's forbidden order is seen, reject each time.
stop_after_takeover_test_() ->
    {timeout, 120, fun() ->
        Runs = riarc_test_tier:count(60, 200),
        ?assertEqual([reject], lists:usort(lists:append([served(true) || _ <- lists:seq(1, Runs)])))
    end}.

%% @doc One run: the worker served, the session settled or not, stopped; its verdicts.
-spec served(boolean()) -> [atom()].
served(Settle) ->
    {ok, S} = riarc:attach(self(), spec(), #{perturb => 50000}),
    W = spawn(?MODULE, worker, [self()]),
    W ! {error, order},
    receive {served, W, _} -> ok end,
    Ref = erlang:trace_delivered(all),
    receive {trace_delivered, all, Ref} -> ok end,
    _ = Settle andalso (ok =:= riarc:settle(S, 10000) orelse error(unsettled)),
    {ok, #{verdicts := Vs}} = riarc:stop(S),
    [V || #{verdict := V, mfa := {?MODULE, worker, _}} <- Vs].

%% Without settle, a stop can reach the worker's tracer before its takeover is
%% acknowledged, ahead of the worker's events routed to it: the tracer ends on the stop,
%% and those events never reach the monitor. The gate (option perturb's test hook) makes
%% it so every time. The worker's partition was cut short: inconclusive, saying so, never
%% none (which would pass a test).
%% At the gate: the stop reaches the tracer before its detach request is even sent.
stopped_at_gate_test() ->
    ?assertMatch(#{verdict := inconclusive, reason := {stopped_short, #{held_events := _, unsettled := true}}},
                 gated(at_gate)).

%% Before the acknowledgement: the tracer has sent its detach request, and the stop
%% reaches it before the answer.
stopped_before_ack_test() ->
    ?assertMatch(#{verdict := inconclusive, reason := {stopped_short, #{held_events := _, unsettled := true}}},
                 gated(before_ack)).

%% The gate is a test hook of option perturb: a pid to tell, nothing else.
gate_option_test() ->
    ?assertEqual(ok, riarc_opts:check(#{perturb => {gate, self()}})),
    ?assertEqual({bad_option, perturb, {gate, keeper}}, riarc_opts:check(#{perturb => {gate, keeper}})),
    ?assertEqual({bad_option, perturb, 0}, riarc_opts:check(#{perturb => 0})).

%% One run stopped while the worker's tracer is in its takeover (How: keeper/2); the
%% worker's entry in the stop's result.
gated(How) ->
    Test = self(),
    %% Started before the attach, so riarc does not trace it.
    Keeper = spawn_link(fun() -> keeper(Test, How) end),
    {ok, S} = riarc:attach(self(), spec(), #{perturb => {gate, Keeper}}),
    W = spawn(?MODULE, worker, [self()]),
    MRef = monitor(process, W),
    receive {ready, Keeper} -> ok end,
    W ! {error, order},
    receive {'DOWN', MRef, process, W, _} -> ok end,
    %% Every event of the worker's waits at the root tracer, which the keeper holds.
    Ref = erlang:trace_delivered(all),
    receive {trace_delivered, all, Ref} -> ok end,
    Keeper ! {go, Test},
    receive {stop_now, Keeper} -> ok end,
    {ok, #{verdicts := Vs}} = riarc:stop(S),
    receive {done, Keeper} -> ok end,
    [E] = [E || E = #{mfa := {?MODULE, worker, _}} <- Vs],
    E.

%% The gate's keeper. It holds the worker's tracer T at its gate, and T's parent, the
%% root tracer, suspended, so that the worker's events wait there. The stop then reaches
%% T (its 'receive' trace says so, as T takes it in) before any of them, and before the
%% answer to T's detach request. How: whether T is let through its gate (and sends that
%% request) before the stop (before_ack) or after (at_gate). The root tracer resumes
%% once T has ended.
keeper(Test, How) ->
    T = receive {riarc_gate, G} -> G end,
    %% T's spawner, the root tracer (riarc_tracer's tracer_init/5 keeps it first).
    {dictionary, D} = process_info(T, dictionary),
    [Root | _] = proplists:get_value('$ancestors', D),
    TRef = monitor(process, T),
    1 = erlang:trace(T, true, ['receive', send]),
    true = erlang:suspend_process(Root),
    Test ! {ready, self()},
    receive {go, Test} -> ok end,
    _ = How =:= before_ack andalso open(T) andalso detach_sent(T, Root),
    Test ! {stop_now, self()},
    receive {trace, T, 'receive', {riarc_ctl, _, _, {_, stop}}} -> ok end,
    _ = How =:= at_gate andalso open(T),
    receive {'DOWN', TRef, process, T, _} -> ok end,
    true = erlang:resume_process(Root),
    Test ! {done, self()}.

open(T) ->
    T ! {riarc_gate_open, T},
    true.

detach_sent(T, Root) ->
    receive {trace, T, send, {riarc_t, _, {riarc_dtc, T, _, _}}, Root} -> true end.

%% Only the session's owner settles it; a session with no tracer left is settled.
owner_only_test() ->
    {ok, S} = riarc:attach(self(), spec(), #{}),
    Self = self(),
    Other = spawn(fun() -> Self ! {other, riarc:settle(S, 1000)} end),
    ?assertEqual({error, {riarc_session, not_owner}}, receive {other, R} -> R end),
    ?assertEqual(ok, riarc:settle(S, 1000)),
    {ok, _} = riarc:stop(S),
    exit(Other, kill).

%% The sentence for a settling that ran out of time.
format_test() ->
    ?assertEqual("2 tracer(s) still held events for others when the wait to settle was over",
                 riarc_session:format_error({unsettled, 2})).
