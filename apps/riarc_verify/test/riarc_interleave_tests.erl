%% Exhaustive interleaving verification (§4.2): the P/Q/R system of fig. 2a in every
%% interleaving and every arrangement, and random systems from PropEr whose failures
%% shrink to a minimal interleaving.
-module(riarc_interleave_tests).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

%% All 3150 interleavings x 8 arrangements (C1-C5 of §4.2 and the rest): the full tier
%% (25 200 runs); the fast one checks random systems' interleavings below.
pqr_exhaustive_test_() ->
    riarc_test_tier:slow({timeout, 120, fun() ->
        {ok, Stats} = riarc_interleave:verify(riarc_interleave:pqr(), #{}),
        ?assertMatch(#{interleavings := 3150, arrangements := 8, runs := 25200}, Stats),
        ?debugFmt("P/Q/R: ~p", [Stats])
    end}).

counts_test() ->
    Sys = riarc_interleave:pqr(),
    ?assertEqual(3150, riarc_interleave:count_interleavings(Sys)),
    ?assertEqual(3150, length(lists:usort(riarc_interleave:interleavings(Sys)))),
    ?assertEqual(8, length(riarc_interleave:arrangements(Sys))).

%% Each interleaving keeps every process's own order.
interleavings_keep_local_order_test() ->
    Is = [First | _] = riarc_interleave:interleavings(riarc_interleave:pqr()),
    [?assertEqual(local(First, S), local(I, S)) || I <- Is, S <- [p, q, r]].

local(I, S) -> [E || E <- I, riarc_event:origin(E) =:= S].

%% The checker does notice a wrong partition: a replay of a trace missing an event.
detects_missing_events_test() ->
    Sys = riarc_interleave:pqr(),
    [I | _] = riarc_interleave:interleavings(Sys),
    Short = [E || E <- I, E =/= {recv, q, req}],
    ?assertMatch({error, {wrong_trace, q, expected, _, got, _}},
                 riarc_interleave:check_one(Sys, Short, [q], #{})).

schedule_test() ->
    Sys = riarc_interleave:pqr(),
    %% The empty schedule takes P's events first, then Q's, then R's.
    [{init, p, _, _}, {spawn, p, q, _}, {send, p, q, req}, {exit, p, _}, {init, q, _, _} | _] =
        riarc_interleave:schedule(Sys, []).

%%% ---------------------------------------------------------------------------
%%% PropEr: random systems, one random interleaving and arrangement per case
%%% ---------------------------------------------------------------------------

random_systems_test_() ->
    {timeout, 120, fun() ->
        ?assert(riarc_test_tier:quickcheck(prop_any_interleaving(), {100, 1000}))
    end}.

%% The same with tracers randomly slow to act on spawn events (up to 50 µs): the races
%% of figs. 5 and 6 on top of the interleaving's own.
perturbed_random_systems_test_() ->
    {timeout, 120, fun() ->
        ?assert(riarc_test_tier:quickcheck(prop_any_interleaving(#{perturb => 50}), {60, 300}))
    end}.

prop_any_interleaving() -> prop_any_interleaving(#{}).

%% A random spawn tree of up to 6 processes exchanging messages with per-sender
%% sequence numbers; a random schedule (shrinking to a minimal interleaving) and a
%% random arrangement.
prop_any_interleaving(Opts) ->
    ?FORALL({Sys, Sched, Mask}, {system(), list(non_neg_integer()), list(boolean())},
            begin
                I = riarc_interleave:schedule(Sys, Sched),
                Arr = arrangement(Sys, Mask),
                case riarc_interleave:check_one(Sys, I, Arr, Opts) of
                    ok -> true;
                    {error, Why} ->
                        io:format("interleaving ~p~narrangement ~p~n~p~n", [I, Arr, Why]),
                        false
                end
            end).

%% The first arrangement is the one with every process monitored.
%% Shrinking reaches a minimal interleaving: a property that fails as soon as Q's
%% receive comes before P's spawn of Q shrinks to the two steps that put it there.
shrinking_test() ->
    Sys = riarc_interleave:pqr(),
    Prop = ?FORALL(Sched, list(non_neg_integer()),
                   begin
                       I = riarc_interleave:schedule(Sys, Sched),
                       index({spawn, p, q, {riarc_demo_pqr, q, []}}, I) < index({recv, q, req}, I)
                   end),
    false = proper:quickcheck(Prop, [{numtests, 1000}, quiet]),
    ?assertEqual([[1, 1]], proper:counterexample()).

index(E, L) -> length(lists:takewhile(fun(X) -> X =/= E end, L)).

arrangement(Sys, Mask) ->
    All = hd(riarc_interleave:arrangements(Sys)),
    [S || {S, true} <- lists:zip(All, pad(Mask, length(All)))].

pad(Mask, N) when length(Mask) >= N -> lists:sublist(Mask, N);
pad(Mask, N) -> Mask ++ lists:duplicate(N - length(Mask), false).

system() ->
    ?LET(N, range(1, 6),
         ?LET({Parents, Msgs, Keys},
              {parents(N), list({range(0, N - 1), range(0, N - 1)}), vector(64, range(0, 1000))},
              build(N, Parents, Msgs, Keys))).

parents(N) -> [range(0, I - 1) || I <- lists:seq(1, N - 1)].

%% Process I (0 is the root) spawns its children and sends its messages in an order
%% given by random keys; it receives the messages sent to it; init first, exit last.
build(N, Parents, Msgs, Keys) ->
    Ps = lists:seq(0, N - 1),
    Parent = maps:from_list(lists:zip(lists:seq(1, N - 1), Parents)),
    MFA = fun(I) -> {riarc_sys, proc, [I]} end,
    Sends = number_sends(Msgs),
    Ops = fun(I) ->
                  Spawns = [{spawn, I, C, MFA(C)} || C <- Ps, maps:get(C, Parent, none) =:= I],
                  Out = [{send, I, To, {seq, I, K}} || {From, To, K} <- Sends, From =:= I],
                  In = [{recv, I, {seq, From, K}} || {From, To, K} <- Sends, To =:= I],
                  shuffle_ops(Spawns ++ Out ++ In, Keys, I)
          end,
    Locals = maps:from_list(
               [{I, [{init, I, maps:get(I, Parent, undefined), MFA(I)}] ++ Ops(I) ++
                    [{exit, I, normal}]} || I <- Ps]),
    riarc_interleave:system(Locals).

number_sends(Msgs) ->
    {Numbered, _} = lists:mapfoldl(fun({F, T}, Seq) ->
                                           K = maps:get(F, Seq, 0),
                                           {{F, T, K}, Seq#{F => K + 1}}
                                   end, #{}, Msgs),
    Numbered.

%% Sends of one sender keep their sequence order: only the relative placement of
%% spawns, sends and receives is shuffled.
shuffle_ops(Ops, Keys, I) ->
    Keyed = [{lists:nth(1 + (J + I * 7) rem length(Keys), Keys), J, Op}
             || {J, Op} <- lists:zip(lists:seq(1, length(Ops)), Ops)],
    Placed = [Op || {_, _, Op} <- lists:sort(Keyed)],
    restore_send_order(Placed, [Op || Op = {send, _, _, _} <- Ops]).

restore_send_order([{send, _, _, _} | Rest], [S | Ss]) -> [S | restore_send_order(Rest, Ss)];
restore_send_order([Op | Rest], Ss) -> [Op | restore_send_order(Rest, Ss)];
restore_send_order([], []) -> [].
