%% @doc Exhaustive interleaving verification (§4.2 of the RIARC paper): from one system
%% execution, given as each process's local trace, every sound interleaving of its events
%% is replayed through the offline engine ({@link riarc_backend_log}) under every
%% arrangement of the processes into tracers that the spawn tree allows, and each replay
%% is checked:
%% <ul>
%% <li>every monitor receives exactly the local traces of the processes of its partition
%%     (its own process and the descendants reached through unmonitored processes), each
%%     in the process's own order, and nothing else;</li>
%% <li>no invariant (I1-I22, A4) is reported violated, no Spec or tracer error;</li>
%% <li>every tracer terminates (the run ends within the time limit), and as many tracers
%%     were started as the arrangement asks for.</li>
%% </ul>
%% An interleaving is sound when it keeps each process's own order; nothing else is
%% required of it, so a child's events may come before its parent's spawn event (the
%% engine reorders them, App. B.1) and a receive before its send. An arrangement is the
%% set of processes given a monitor, hence a tracer, of their own: processes are told
%% apart by their MFA, so every subset is a valid instrumentation map Λ. The root always
%% has a tracer (Alg. 6); whether it has a monitor is part of the arrangement.
%% ```
%% 1> riarc_interleave:count_interleavings(riarc_interleave:pqr()).
%% 3150
%% 2> length(riarc_interleave:arrangements(riarc_interleave:pqr())).
%% 8
%% 3> S = riarc_interleave:system(#{a => [{init, a, undefined, {t, a, []}}, {exit, a, normal}]}).
%% 4> riarc_interleave:check_one(S, [{init, a, undefined, {t, a, []}}, {exit, a, normal}], [a], #{}).
%% ok
%% 5> riarc_interleave:verify(S, #{}).
%% {ok,#{interleavings => 1,arrangements => 2,runs => 2,duration_us => ...}}
%% '''
-module(riarc_interleave).

-export([system/1, pqr/0, sweep_systems/1, interleavings/1, count_interleavings/1, fold_interleavings/3,
         arrangements/1, check_one/4, verify/2, schedule/2, format_error/1]).
-export_type([system/0]).

-type sid() :: riarc_event:sid().
-type event() :: riarc_event:event().
-opaque system() :: #{locals := #{sid() => [event()]},
                      order := [sid()],
                      parent := #{sid() => sid()},
                      mfa := #{riarc_event:mfa_args() => sid()}}.
-type verify_opts() :: #{workers => pos_integer(), timeout => timeout(),
                         perturb => undefined | pos_integer(),
                         max_interleavings => pos_integer() | infinity}.

%%% ---------------------------------------------------------------------------
%%% Systems
%%% ---------------------------------------------------------------------------

%% @doc A system execution from its local traces. Each process's MFA (from its init event,
%% or the spawn event that creates it) must be unique, so that Λ can single it out.
-spec system(#{sid() => [event()]}) -> system().
system(Locals) ->
    Order = lists:sort(maps:keys(Locals)),
    All = lists:append(maps:values(Locals)),
    Parent = maps:from_list([{C, P} || {spawn, P, C, _} <- All]),
    MFAs = maps:from_list([{S, MFA} || {init, S, _, MFA} <- All] ++
                          [{C, MFA} || {spawn, _, C, MFA} <- All, not has_init(C, All)]),
    #{locals => Locals, order => Order, parent => Parent,
      mfa => maps:from_list([{MFA, S} || {S, MFA} <- maps:to_list(MFAs)])}.

has_init(C, All) -> lists:keymember(C, 2, [E || E = {init, _, _, _} <- All]).

%% @doc The P/Q/R system of fig. 2a: P spawns Q and sends it a request; Q receives it,
%% spawns R and exits; R exits; P exits.
-spec pqr() -> system().
pqr() ->
    M = riarc_demo_pqr,
    system(#{p => [{init, p, undefined, {M, p, []}}, {spawn, p, q, {M, q, []}},
                   {send, p, q, req}, {exit, p, normal}],
             q => [{init, q, p, {M, q, []}}, {recv, q, req}, {spawn, q, r, {M, r, []}},
                   {exit, q, normal}],
             r => [{init, r, q, {M, r, []}}, {exit, r, normal}]}).

%% @doc The systems of the deeper sweep behind `make verify': P/Q/R, then every spawn
%% tree of 1 to MaxProcs processes (ordered trees: a parent spawns its children in
%% order, one tree per shape). Each process's local trace is its init, its spawns and
%% its exit; in trees of up to 3 processes each child also sends its parent one message
%% (send in the child, receive in the parent), which keeps the larger trees' interleaving
%% counts within reach.
-spec sweep_systems(pos_integer()) -> [{string(), system()}].
sweep_systems(MaxProcs) ->
    [{"P/Q/R (fig. 2a)", pqr()} |
     [{shape_name(Parents), tree_system(Parents, length(Parents) + 1 =< 3)}
      || N <- lists:seq(1, MaxProcs), Parents <- shapes(N)]].

%% Parent lists [parent of 1, ..., parent of N-1], one per ordered tree shape.
shapes(N) ->
    All = parent_lists(N - 1, []),
    Unique = maps:from_list([{canonical(Ps), Ps} || Ps <- All]),
    lists:sort(maps:values(Unique)).

parent_lists(0, Acc) -> [lists:reverse(Acc)];
parent_lists(K, Acc) ->
    I = length(Acc) + 1,
    lists:append([parent_lists(K - 1, [P | Acc]) || P <- lists:seq(0, I - 1)]).

canonical(Parents) -> canon(0, Parents).

canon(Node, Parents) ->
    Children = [C || {C, P} <- lists:zip(lists:seq(1, length(Parents)), Parents), P =:= Node],
    {[canon(C, Parents) || C <- Children]}.

shape_name(Parents) ->
    lists:flatten(io_lib:format("tree ~b: parents ~w", [length(Parents) + 1, Parents])).

tree_system(Parents, Messages) ->
    N = length(Parents) + 1,
    Parent = maps:from_list(lists:zip(lists:seq(1, N - 1), Parents)),
    MFA = fun(I) -> {riarc_sweep, proc, [I]} end,
    Local = fun(I) ->
                    Children = [C || C <- lists:seq(1, N - 1), maps:get(C, Parent) =:= I],
                    Up = case {Messages, Parent} of
                             {true, #{I := P}} -> [{send, I, P, {hello, I}}];
                             _ -> []
                         end,
                    Down = [{recv, I, {hello, C}} || Messages, C <- Children],
                    [{init, I, maps:get(I, Parent, undefined), MFA(I)}] ++
                        [{spawn, I, C, MFA(C)} || C <- Children] ++ Up ++ Down ++
                        [{exit, I, normal}]
            end,
    system(maps:from_list([{I, Local(I)} || I <- lists:seq(0, N - 1)])).

%%% ---------------------------------------------------------------------------
%%% Interleavings and arrangements
%%% ---------------------------------------------------------------------------

%% @doc Folds over every interleaving that keeps each process's own order.
-spec fold_interleavings(fun(([event()], Acc) -> Acc), Acc, system()) -> Acc.
fold_interleavings(Fun, Acc, #{locals := L, order := Order}) ->
    Queues = [Es || S <- Order, Es <- [maps:get(S, L)], Es =/= []],
    shuffle(Queues, [], Fun, Acc).

%% Pick the next event from each non-empty queue in turn; depth-first, so memory stays
%% at one interleaving.
shuffle([], Rev, Fun, Acc) -> Fun(lists:reverse(Rev), Acc);
shuffle(Queues, Rev, Fun, Acc) ->
    pick(Queues, [], Rev, Fun, Acc).

pick([], _Before, _Rev, _Fun, Acc) -> Acc;
pick([Q = [E | Es] | After], Before, Rev, Fun, Acc) ->
    Rest = lists:reverse(Before, case Es of [] -> After; _ -> [Es | After] end),
    Acc1 = shuffle(Rest, [E | Rev], Fun, Acc),
    pick(After, [Q | Before], Rev, Fun, Acc1).

%% @doc Every interleaving, as a list (small systems only).
-spec interleavings(system()) -> [[event()]].
interleavings(Sys) ->
    lists:reverse(fold_interleavings(fun(I, A) -> [I | A] end, [], Sys)).

%% @doc How many interleavings there are: the multinomial (Σ nᵢ)! / Π nᵢ!.
-spec count_interleavings(system()) -> pos_integer().
count_interleavings(#{locals := L}) ->
    Ns = [length(Es) || Es <- maps:values(L)],
    fact(lists:sum(Ns)) div lists:foldl(fun(N, A) -> A * fact(N) end, 1, Ns).

fact(0) -> 1;
fact(N) -> N * fact(N - 1).

%% @doc Every arrangement: each subset of the processes given a monitor of its own.
-spec arrangements(system()) -> [[sid()]].
arrangements(#{order := Order}) ->
    subsets(Order).

subsets([]) -> [[]];
subsets([S | Ss]) ->
    Rest = subsets(Ss),
    [[S | R] || R <- Rest] ++ Rest.

%% @doc The interleaving a schedule picks: at each step the (Nth mod k)-th of the k
%% processes with events left; when the schedule runs out, the first such process. Used
%% by the property tests, whose schedules PropEr shrinks to a minimal interleaving.
-spec schedule(system(), [non_neg_integer()]) -> [event()].
schedule(#{locals := L, order := Order}, Sched) ->
    Queues = [Es || S <- Order, Es <- [maps:get(S, L)], Es =/= []],
    run_schedule(Queues, Sched, []).

run_schedule([], _, Rev) -> lists:reverse(Rev);
run_schedule(Queues, Sched, Rev) ->
    {N, Sched1} = case Sched of [X | Xs] -> {X rem length(Queues), Xs}; [] -> {0, []} end,
    {Before, [[E | Es] | After]} = lists:split(N, Queues),
    Queues1 = Before ++ (case Es of [] -> After; _ -> [Es | After] end),
    run_schedule(Queues1, Sched1, [E | Rev]).

%%% ---------------------------------------------------------------------------
%%% Checking one replay
%%% ---------------------------------------------------------------------------

%% @doc Replays one interleaving under one arrangement (the processes given a monitor of
%% their own) and checks it; `{error, Why}' says what went wrong.
-spec check_one(system(), [event()], [sid()],
                #{timeout => timeout(), perturb => undefined | pos_integer()}) ->
    ok | {error, term()}.
check_one(Sys = #{mfa := ByMFA}, Interleaving, Monitored, Opts) ->
    Ref = make_ref(),
    Self = self(),
    Mon = maps:from_list([{S, true} || S <- Monitored]),
    Spec = fun(MFA) ->
                   case maps:get(MFA, ByMFA, undefined) of
                       S when is_map_key(S, Mon) -> {ok, collector(Self, Ref, S)};
                       _ -> undefined
                   end
           end,
    %% perturb (µs): tracers randomly slow to act on spawns, widening the races.
    COpts = #{timeout => maps:get(timeout, Opts, 10000), invariants => true, log => false,
              perturb => maps:get(perturb, Opts, undefined)},
    Outcome = riarc_offline:check({events, Interleaving}, Spec, COpts),
    Got = collect(Ref, #{}),
    judge(Outcome, Got, Sys, Monitored).

%% A monitor that never decides and reports each event it analyses.
collector(To, Ref, Owner) ->
    fun M(Ev) -> To ! {Ref, Owner, Ev}, M end.

collect(Ref, Acc) ->
    receive
        {Ref, Owner, Ev} ->
            collect(Ref, maps:update_with(Owner, fun(Es) -> [Ev | Es] end, [Ev], Acc))
    after 0 ->
        maps:map(fun(_, Es) -> lists:reverse(Es) end, Acc)
    end.

judge({error, Reason}, _Got, _Sys, _Monitored) ->
    {error, {check_failed, Reason}};
judge({ok, #{violations := [_ | _] = Vs}}, _, _, _) ->
    {error, {violations, [maps:without([state], V) || V <- Vs]}};
judge({ok, #{errors := [_ | _] = Es}}, _, _, _) ->
    {error, {errors, Es}};
judge({ok, Result}, Got, Sys, Monitored) ->
    Expected = maps:from_list([{S, partition_events(S, Sys, Monitored)} || S <- Monitored]),
    Tracers = expected_tracers(Sys, Monitored),
    case maps:get(tracers, Result) of
        #{spawned := Tracers} -> compare(Expected, Got);
        #{spawned := N} -> {error, {tracers, expected, Tracers, started, N}}
    end.

%% Events may interleave between the processes of a partition; each process's own
%% events must come in its own order, complete, and no other process's may appear.
compare(Expected, Got) ->
    Bad = [{S, Want, maps:get(S, Got, [])}
           || {S, Want} <- maps:to_list(Expected),
              by_origin(Want) =/= by_origin(maps:get(S, Got, []))],
    Extra = maps:keys(maps:without(maps:keys(Expected), Got)),
    case {Bad, Extra} of
        {[], []} -> ok;
        {[{S, Want, Have} | _], _} -> {error, {wrong_trace, S, expected, Want, got, Have}};
        {[], _} -> {error, {unexpected_monitors, Extra}}
    end.

by_origin(Events) ->
    lists:foldr(fun(E, A) ->
                        maps:update_with(riarc_event:origin(E), fun(Es) -> [E | Es] end, [E], A)
                end, #{}, Events).

%% A monitored process's partition: itself and the descendants whose nearest monitored
%% ancestor it is.
partition_events(S, Sys = #{locals := L}, Monitored) ->
    lists:append([maps:get(P, L) || P <- partition(S, Sys, Monitored)]).

partition(S, #{parent := Parent, order := Order}, Monitored) ->
    [P || P <- Order, owner(P, Parent, Monitored) =:= S].

owner(P, Parent, Monitored) ->
    case lists:member(P, Monitored) of
        true -> P;
        false ->
            case Parent of
                #{P := Up} -> owner(Up, Parent, Monitored);
                #{} -> {unmonitored_root, P}
            end
    end.

%% One tracer per root, and one per monitored process that is not a root.
expected_tracers(#{parent := Parent, order := Order}, Monitored) ->
    Roots = [S || S <- Order, not is_map_key(S, Parent)],
    length(Roots) + length([S || S <- Monitored, is_map_key(S, Parent)]).

%%% ---------------------------------------------------------------------------
%%% Exhaustive verification
%%% ---------------------------------------------------------------------------

%% @doc Checks every interleaving (up to `max_interleavings', default all) under every
%% arrangement, on `workers' processes (default: one per scheduler). Stops at the first
%% failure, which it returns with the interleaving and arrangement that caused it.
-spec verify(system(), verify_opts()) -> {ok, map()} | {error, map()}.
verify(Sys, Opts) ->
    T0 = erlang:monotonic_time(microsecond),
    Arrs = arrangements(Sys),
    Master = self(),
    Workers = [spawn_link(fun() -> worker_loop(Master, Sys, Arrs, Opts) end)
               || _ <- lists:seq(1, maps:get(workers, Opts, erlang:system_info(schedulers_online)))],
    Max = maps:get(max_interleavings, Opts, infinity),
    {Fed, Retired} = try {fold_interleavings(fun(I, N) -> feed(I, N, Max) end, 0, Sys), 0}
                     catch throw:{riarc_stop, N, R} -> {N, R}
                     end,
    Outcome = drain(length(Workers) - Retired, ok),
    _ = [unlink(W) || W <- Workers],
    _ = [exit(W, kill) || W <- Workers],
    Stats = #{interleavings => Fed, arrangements => length(Arrs),
              runs => Fed * length(Arrs), total_interleavings => count_interleavings(Sys),
              duration_us => erlang:monotonic_time(microsecond) - T0},
    case Outcome of
        ok -> {ok, Stats};
        {error, Failure} -> {error, maps:merge(Stats, Failure)}
    end.

feed(_I, N, Max) when N >= Max -> throw({riarc_stop, N, 0});
feed(I, N, _Max) ->
    receive
        {riarc_ready, W} -> W ! {riarc_job, I}, N + 1;
        {riarc_failed, W, Failure} ->
            W ! riarc_done,
            self() ! {riarc_failed_again, Failure},
            throw({riarc_stop, N, 1})
    end.

%% Every worker is told to stop once it asks for more; the first failure is kept.
drain(0, Outcome) ->
    receive {riarc_failed_again, F} -> {error, F} after 0 -> Outcome end;
drain(Live, Outcome) ->
    receive
        {riarc_ready, W} -> W ! riarc_done, drain(Live - 1, Outcome);
        {riarc_failed, W, F} -> W ! riarc_done, drain(Live - 1, first_failure(Outcome, F));
        {riarc_failed_again, F} -> drain(Live, first_failure(Outcome, F))
    end.

first_failure(ok, F) -> {error, F};
first_failure(Outcome, _) -> Outcome.

worker_loop(Master, Sys, Arrs, Opts) ->
    Master ! {riarc_ready, self()},
    receive
        {riarc_job, I} ->
            case check_all(Sys, I, Arrs, Opts) of
                ok -> worker_loop(Master, Sys, Arrs, Opts);
                {error, F} -> Master ! {riarc_failed, self(), F}, receive riarc_done -> ok end
            end;
        riarc_done -> ok
    end.

check_all(_Sys, _I, [], _Opts) -> ok;
check_all(Sys, I, [A | As], Opts) ->
    case check_one(Sys, I, A, Opts) of
        ok -> check_all(Sys, I, As, Opts);
        {error, Why} -> {error, #{interleaving => I, arrangement => A, reason => Why}}
    end.

%% @doc A sentence for a verification failure.
-spec format_error(map()) -> string().
format_error(#{interleaving := I, arrangement := A, reason := Why}) ->
    lists:flatten(io_lib:format("interleaving ~0tp under arrangement ~0tp (monitored "
                                "processes) failed: ~0tp", [I, A, Why]));
format_error(Other) ->
    lists:flatten(io_lib:format("~0tp", [Other])).
