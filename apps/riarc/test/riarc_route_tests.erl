%% riarc_route: events reach the owner the table names, switches of owner are counted
%% exactly (nothing lost, duplicated or reordered per sender, under load and on 1 and 2
%% schedulers), children inherit the owner that gets the parent's spawn event, errors.
%% No sleeps synchronise anything: monitors, acks and the switch counts do.
-module(riarc_route_tests).

-include_lib("eunit/include/eunit.hrl").

%% Run in peer nodes.
-export([flood/1, flood_reps/2, contexts/1, workers/1]).

-define(FLAGS, [procs, send, 'receive']).

available_test() ->
    ?assert(riarc_route:available()).

%% ---- 1. basic ----------------------------------------------------------------------

basic_test() ->
    {ok, T} = riarc_route:new(self()),
    Self = self(),
    P = spawn(fun() ->
                      receive go1 -> ok end,
                      receive never -> ok after 1 -> ok end,
                      receive go2 -> ok end,
                      C = spawn(fun() -> receive ping -> ok end end),
                      Self ! {child, C},
                      receive timeout -> ok end,
                      Dead = spawn(fun() -> ok end),
                      Ref = monitor(process, Dead),
                      receive {'DOWN', Ref, process, Dead, _} -> ok end,
                      Dead ! hello
              end),
    MonP = monitor(process, P),
    ok = riarc_route:trace(T, P, Self, ?FLAGS),
    P ! go1,
    ?assertEqual({trace, P, 'receive', go1}, next(P)),
    ?assertEqual({trace, P, receive_timeout}, next(P)),
    O2 = collector(),
    ?assertEqual({ok, 2}, riarc_route:switch(T, P, O2)),
    P ! go2,
    C = receive {child, Child} -> Child end,
    MonC = monitor(process, C),
    %% go2, spawn, send {child, C}: P is now blocked in its receive of 'timeout'.
    ?assertEqual({ok, 3}, riarc_route:switch(T, P, Self)),
    [{trace, P, 'receive', go2}, {trace, P, spawn, C, {erlang, apply, [_, []]}},
     {trace, P, send, {child, C}, Self}] = take(O2, P, 3),
    %% C was inserted with P's owner at its spawn: O2.
    C ! ping,
    receive {'DOWN', MonC, process, C, normal} -> ok end,
    ?assertEqual([{trace, C, 'receive', ping}, {trace, C, exit, normal}], take(O2, C, 2)),
    ?assertEqual({error, gone}, riarc_route:switch(T, C, Self)),
    %% A real 'timeout' message is an ordinary receive.
    P ! timeout,
    ?assertEqual({trace, P, 'receive', timeout}, next(P)),
    {trace, P, spawn, Dead, _} = next(P),
    {trace, P, 'receive', {'DOWN', _, process, Dead, normal}} = next(P),
    ?assertEqual({trace, P, send_to_non_existing_process, hello, Dead}, next(P)),
    ?assertEqual({trace, P, exit, normal}, next(P)),
    ?assertEqual({trace, Dead, exit, normal}, next(Dead)),
    receive {'DOWN', MonP, process, P, normal} -> ok end,
    %% The exit events removed the entries (stats/1 takes the locks the callback held
    %% while it sent the exit event and deleted the entry).
    ?assertEqual(#{entries => 0, events => 13, orphans => 0}, riarc_route:stats(T)),
    ?assertEqual({error, gone}, riarc_route:switch(T, P, Self)),
    %% No spawned event and nothing else was sent.
    ?assertEqual([], flush()),
    ok = riarc_route:stop(T).

%% The trace messages (and probes) already in the mailbox. Only those: EUnit may share
%% this process with other modules' tests, which leave their own messages.
flush() ->
    receive
        M when element(1, M) =:= trace; element(1, M) =:= riarc_probe -> [M | flush()]
    after 0 -> []
    end.

next(P) ->
    receive {trace, P, _} = E -> E; {trace, P, _, _} = E -> E; {trace, P, _, _, _} = E -> E end.

%% ---- helpers -----------------------------------------------------------------------

%% A collector: keeps the trace events it gets; `take(C, Pid, N)' waits (in the collector)
%% until it has N events of Pid and returns them in arrival order.
collector() ->
    spawn_link(fun() -> collect(#{}) end).

collect(Evs) ->
    receive
        {take, From, Pid, N} -> serve(Evs, From, Pid, N);
        E when element(1, E) =:= trace ->
            collect(maps:update_with(element(2, E), fun(L) -> [E | L] end, [E], Evs))
    end.

serve(Evs, From, Pid, N) ->
    L = maps:get(Pid, Evs, []),
    case length(L) of
        Len when Len >= N ->
            From ! {taken, self(), Pid, lists:reverse(L)},
            collect(maps:remove(Pid, Evs));
        _ ->
            receive E when element(1, E) =:= trace ->
                    serve(maps:update_with(element(2, E), fun(L1) -> [E | L1] end, [E], Evs),
                          From, Pid, N)
            end
    end.

take(C, Pid, N) ->
    C ! {take, self(), Pid, N},
    receive {taken, C, Pid, L} -> L end.

%% ---- 2. a flood during switches ----------------------------------------------------

%% One process R receives Msgs numbered messages from each of Senders senders while a
%% switcher moves R through Switches + 1 collectors; each collector, told the count N of
%% the switch that took R away from it, waits for exactly N events of R. A last switch
%% to a tail collector; R's total number of events is known, so the tail knows its count
%% too. Spinners load the schedulers meanwhile.
flood_test_() ->
    {timeout, 120,
     fun() -> flood(#{senders => 4, msgs => riarc_test_tier:count(4000, 20000),
                      switches => riarc_test_tier:count(20, 40), spinners => 2}) end}.

%% The same, smaller, 50 times each in a VM with 1 and with 2 schedulers (full tier).
flood_peers_test_() ->
    riarc_test_tier:slow({timeout, 300,
     fun() ->
             Params = #{senders => 4, msgs => 5000, switches => 20, spinners => 2},
             [in_peer(S, flood_reps, [50, Params]) || S <- ["1", "2"]]
     end}).

flood_reps(N, Params) ->
    [ok = flood(Params) || _ <- lists:seq(1, N)],
    ok.

flood(Params) ->
    Seed = maps:get(seed, Params, erlang:phash2({self(), erlang:unique_integer()})),
    try flood(Params, Seed)
    catch Class:Reason:St ->
            io:format(user, "riarc_route flood failed: seed ~p, ~p~n", [Seed, Params]),
            erlang:raise(Class, Reason, St)
    end.

flood(#{senders := NS, msgs := M, switches := NSw, spinners := NSpin}, Seed) ->
    _ = rand:seed(exsss, Seed),
    riarc_test_load:loaded(NSpin, fun() ->
        Test = self(),
        {ok, T} = riarc_route:new(Test),
        Cs = [segment_collector() || _ <- lists:seq(1, NSw + 1)],
        Tail = segment_collector(),
        R = spawn_link(fun() -> rloop(NS * M), Test ! all_received,
                                receive quit -> ok end end),
        MonR = monitor(process, R),
        ok = riarc_route:trace(T, R, hd(Cs), ?FLAGS),
        Total = NS * M + 3, %% receives, the all_received send, quit, exit
        %% Switch thresholds in events sent, jittered by the seed.
        Step = NS * M div (NSw + 1),
        Ths = [I * Step + rand:uniform(Step) || I <- lists:seq(0, NSw - 1)],
        Switcher = spawn_link(fun() -> switcher(T, R, Cs, Ths, Test) end),
        Ss = [spawn_link(fun() -> receive go -> [R ! {self(), K} || K <- lists:seq(1, M)] end end)
              || _ <- lists:seq(1, NS)],
        [S ! go || S <- Ss],
        Counts = receive {switched, Switcher, Ns} -> Ns end,
        receive all_received -> ok end,
        {ok, NLast} = riarc_route:switch(T, R, Tail),
        lists:last(Cs) ! {count, NLast},
        R ! quit,
        receive {'DOWN', MonR, process, R, normal} -> ok end,
        Tail ! {count, Total - lists:sum(Counts) - NLast},
        Segs = [receive {segment, C, Evs} -> Evs end || C <- Cs ++ [Tail]],
        All = lists:append(Segs),
        ?assertEqual(Total, length(All)),
        %% Every message exactly once, in each sender's order.
        Got = lists:foldl(fun({trace, _, 'receive', {S, K}}, Acc) ->
                                  maps:update_with(S, fun(L) -> [K | L] end, [K], Acc);
                             (_, Acc) -> Acc
                          end, #{}, All),
        Want = lists:seq(1, M),
        [?assertEqual({S, Want}, {S, lists:reverse(maps:get(S, Got, []))}) || S <- Ss],
        %% Exactly one exit, R's last event.
        ?assertEqual([{trace, R, exit, normal}], [E || {trace, _, exit, _} = E <- All]),
        ?assertEqual({trace, R, exit, normal}, lists:last(All)),
        ?assertEqual(#{entries => 0, events => Total, orphans => 0}, riarc_route:stats(T)),
        ok = riarc_route:stop(T)
    end).

rloop(0) -> ok;
rloop(N) -> receive {_, _} -> rloop(N - 1) end.

%% Switches R from collector I to I + 1 once Th events were sent, and tells collector I
%% the count. Busy-polls stats/1, which also contends for the stripe locks.
switcher(T, R, [C | Cs], [Th | Ths], Test) ->
    {N, Ns} = switcher_1(T, R, C, Cs, Th, Ths, Test),
    Test ! {switched, self(), [N | Ns]};
switcher(_, _, _, [], Test) ->
    Test ! {switched, self(), []}.

switcher_1(T, R, C, [Next | Cs], Th, Ths, Test) ->
    wait_events(T, Th),
    {ok, N} = riarc_route:switch(T, R, Next),
    C ! {count, N},
    case Ths of
        [] -> {N, []};
        [Th1 | Ths1] ->
            {N1, Ns} = switcher_1(T, R, Next, Cs, Th1, Ths1, Test),
            {N, [N1 | Ns]}
    end.

wait_events(T, Th) ->
    case riarc_route:stats(T) of
        #{events := E} when E >= Th -> ok;
        _ -> erlang:yield(), wait_events(T, Th)
    end.

segment_collector() ->
    Test = self(),
    spawn_link(fun() -> segment(Test, [], 0, undefined) end).

segment(Test, Evs, Len, Len) ->
    Test ! {segment, self(), lists:reverse(Evs)};
segment(Test, Evs, Len, Want) ->
    receive
        {count, N} -> segment(Test, Evs, Len, N);
        E when element(1, E) =:= trace -> segment(Test, [E | Evs], Len + 1, Want)
    end.

%% Runs ?MODULE:F(Args) in a fresh VM with +S Schedulers and this VM's code path.
in_peer(Schedulers, F, Args) ->
    Paths = [D || D <- code:get_path(), not lists:prefix(code:lib_dir(), D)],
    {ok, Peer, _} = peer:start(#{connection => standard_io,
                              args => ["+S", Schedulers, "-pa" | Paths]}),
    try
        ?assertEqual(ok, peer:call(Peer, ?MODULE, F, Args, 280000))
    after
        peer:stop(Peer)
    end.

%% ---- 3. thousands of inherited workers, each switched right after its spawn --------

%% A traced master spawns Workers workers (traced by inheritance, first owned by the
%% master's owner MO). MO, on each spawn event, starts a new owner for the worker and
%% switches the worker to it; three feeders send every worker K numbered messages and a
%% last one as soon as it exists. MO keeps what it got of each worker up to the switch's
%% count, the new owner the rest (the worker's total is known).
workers_test_() ->
    {timeout, 120, fun() -> workers(#{workers => riarc_test_tier:count(600, 3000), k => 10,
                                      spinners => 2}) end}.

workers(#{workers := NW, k := K, spinners := NSpin}) ->
    riarc_test_load:loaded(NSpin, fun() ->
        Test = self(),
        {ok, T} = riarc_route:new(Test),
        PerW = 3 * (K + 1) + 1, %% receives, exit
        Fs = [spawn_link(fun() -> feeder(K) end) || _ <- [1, 2, 3]],
        Master = spawn(fun() ->
                               receive go -> ok end,
                               [begin
                                    W = spawn(fun() -> wloop(3) end),
                                    [F ! {new, W} || F <- Fs]
                                end || _ <- lists:seq(1, NW)],
                               ok
                       end),
        MonM = monitor(process, Master),
        %% MO runs at high priority, as riarc's tracers do, so that it switches most
        %% workers while their messages are still coming.
        MO = spawn_opt(fun() -> master_owner(T, Test, Master, PerW, NW) end,
                       [link, {priority, high}]),
        ok = riarc_route:trace(T, Master, MO, ?FLAGS),
        Master ! go,
        receive {'DOWN', MonM, process, Master, normal} -> ok
        after 60000 -> error({stuck, process_info(Master), process_info(MO, [status, message_queue_len, current_function]), riarc_route:stats(T)})
        end,
        {Parts, MasterEvs} = receive {mo_done, MO, Ps, MEvs} -> {Ps, MEvs}
                             after 20000 -> MO ! {diag, self()}, receive {diag, D} -> error({mo_stuck, D}) end
                             end,
        ?assertEqual(NW, length([x || {trace, _, spawn, _, _} <- MasterEvs])),
        ?assertEqual({trace, Master, exit, normal}, lists:last(MasterEvs)),
        NewParts = maps:from_list(
                     [receive {no_done, W, Evs} -> {W, Evs}
                      after 20000 -> error({new_owner_stuck, W, maps:get(W, Parts), riarc_route:stats(T)})
                      end
                      || W <- maps:keys(Parts), element(1, maps:get(W, Parts)) =:= switched]),
        Bad = [{W, Why} || {W, {_, Old}} <- maps:to_list(Parts),
                           Why <- [check_worker(W, Old ++ maps:get(W, NewParts, []), Fs, K)],
                           Why =/= ok],
        ?assertEqual([], lists:sublist(Bad, 5)),
        ?assertEqual(#{entries => 0, orphans => 0},
                     maps:with([entries, orphans], riarc_route:stats(T))),
        Gone = length([x || {gone, _} <- maps:values(Parts)]),
        io:format(user, "~n  workers: ~b, ~b had exited before their switch~n", [NW, Gone]),
        [F ! stop || F <- Fs],
        ok = riarc_route:stop(T)
    end).

check_worker(W, Evs, Fs, K) ->
    Want = lists:seq(1, K) ++ [last],
    Per = [[I || {trace, _, 'receive', {F1, I}} <- Evs, F1 =:= F] || F <- Fs],
    if
        length(Evs) =/= 3 * (K + 1) + 1 -> {length, length(Evs)};
        true ->
            case {lists:last(Evs), [P || P <- Per, P =/= Want]} of
                {{trace, W, exit, normal}, []} -> ok;
                Other -> Other
            end
    end.

feeder(K) ->
    receive
        {new, W} -> [W ! {self(), I} || I <- lists:seq(1, K)], W ! {self(), last}, feeder(K);
        stop -> ok
    end.

wloop(0) -> ok;
wloop(L) -> receive {_, last} -> wloop(L - 1); {_, _} -> wloop(L) end.

%% The master's owner: on a worker's spawn event, a new owner and a switch; waits for
%% the count of each worker's events it must have (all of them if the worker was gone).
master_owner(T, Test, Master, PerW, NW) ->
    mo(#{t => T, test => Test, master => Master, per_w => PerW, nw => NW,
         ws => #{}, got => #{}, mevs => [], want => 0, have => 0, exited => false}).

%% ws: W -> {switched | gone, Want}; got: W -> reversed events; want/have: the totals of
%% worker events MO must have and has (so the done check is O(1)).
mo(#{ws := Ws, nw := NW, want := Want, have := Have, exited := true} = S)
  when map_size(Ws) =:= NW, Have >= Want ->
    #{got := Got, test := Test, mevs := MEvs} = S,
    Parts = maps:map(fun(W, {How, _}) -> {How, lists:reverse(maps:get(W, Got, []))} end, Ws),
    Test ! {mo_done, self(), Parts, lists:reverse(MEvs)};
mo(#{t := T, test := Test, master := Master, per_w := PerW} = S) ->
    #{ws := Ws, got := Got, mevs := MEvs, want := Want, have := Have} = S,
    receive
        {diag, From} ->
            #{got := G, ws := Ws0, mevs := ME} = S,
            Inc = [{W, How, Want1, length(maps:get(W, G, [])), lists:reverse(maps:get(W, G, []))}
                   || {W, {How, Want1}} <- maps:to_list(Ws0), length(maps:get(W, G, [])) =/= Want1],
            From ! {diag, {map_size(Ws0), Want, Have, length(ME), hd(ME), Inc, riarc_route:stats(T)}};
        {trace, Master, spawn, W, _} = E ->
            New = spawn_link(fun() -> new_owner(Test, W, PerW) end),
            {How, N} = case riarc_route:switch(T, W, New) of
                           {ok, N0} -> New ! {old_count, N0}, {switched, N0};
                           {error, gone} -> unlink(New), exit(New, kill), {gone, PerW}
                       end,
            mo(S#{ws := Ws#{W => {How, N}}, want := Want + N, mevs := [E | MEvs]});
        {trace, Master, exit, _} = E -> mo(S#{mevs := [E | MEvs], exited := true});
        {trace, Master, _, _} = E -> mo(S#{mevs := [E | MEvs]});
        {trace, Master, _, _, _} = E -> mo(S#{mevs := [E | MEvs]});
        E when element(1, E) =:= trace ->
            W = element(2, E),
            mo(S#{got := maps:update_with(W, fun(L) -> [E | L] end, [E], Got), have := Have + 1})
    end.

new_owner(Test, W, PerW) ->
    receive {old_count, N} -> new_owner(Test, W, PerW - N, []) end.

new_owner(Test, W, 0, Evs) ->
    Test ! {no_done, W, lists:reverse(Evs)};
new_owner(Test, W, Left, Evs) ->
    receive {trace, W, _, _} = E -> new_owner(Test, W, Left - 1, [E | Evs]) end.

%% ---- 4. errors, stop, clear, orphans -----------------------------------------------

errors_test() ->
    {ok, T} = riarc_route:new(self()),
    P = spawn(fun() -> receive stop -> ok end end),
    1 = erlang:trace(P, true, [{tracer, self()}, send]),
    ?assertEqual({error, {already_traced, P, self()}}, riarc_route:trace(T, P, self(), [send])),
    P ! stop,
    Dead = spawn(fun() -> ok end),
    Ref = monitor(process, Dead),
    receive {'DOWN', Ref, process, Dead, _} -> ok end,
    ?assertEqual({error, {noproc, Dead}}, riarc_route:trace(T, Dead, self(), [send])),
    ?assertEqual({error, gone}, riarc_route:switch(T, Dead, self())),
    [?assertMatch([_ | _], riarc_route:format_error(E))
     || E <- [nif_not_loaded, nomem, {already_traced, P, self()}, {noproc, P}, gone]],
    %% Bad arguments are badarg, not a crash; a foreign tracer state is removed.
    ?assertError(badarg, riarc_route:switch(T, notapid, self())),
    ?assertError(badarg, riarc_route:switch(make_ref(), self(), self())),
    ?assertError(badarg, riarc_route:stats(foo)),
    ?assertError(badarg, riarc_route:stop(<<>>)),
    ?assertEqual(remove, riarc_route:enabled(send, foo, self())),
    ?assertEqual(ok, riarc_route:trace(send, foo, self(), x, #{})),
    ?assertEqual(ok, riarc_route:trace(send, T, foo, x, not_a_map)),
    ok = riarc_route:stop(T).

stop_test() ->
    {ok, T} = riarc_route:new(self()),
    Self = self(),
    P = spawn(fun Loop() -> receive {ping, From} -> From ! pong, Loop() end end),
    ok = riarc_route:trace(T, P, Self, [send, 'receive']),
    P ! {ping, Self},
    receive pong -> ok end,
    ?assertEqual({trace, P, 'receive', {ping, Self}}, next(P)),
    ?assertEqual({trace, P, send, pong, Self}, next(P)),
    ok = riarc_route:stop(T),
    ?assertEqual({error, gone}, riarc_route:switch(T, P, Self)),
    %% The next event meets enabled/3 = remove: the VM drops the tracer, nothing is sent.
    P ! {ping, Self},
    receive pong -> ok end,
    ?assertEqual({flags, []}, erlang:trace_info(P, flags)),
    ?assertEqual({tracer, []}, erlang:trace_info(P, tracer)),
    ?assertEqual([], flush()),
    exit(P, kill).

clear_test() ->
    {ok, T} = riarc_route:new(self()),
    P = spawn(fun Loop() -> receive {ping, From} -> From ! pong, Loop() end end),
    ok = riarc_route:trace(T, P, self(), [send, 'receive']),
    ?assertEqual({error, {already_traced, P, {riarc_route, T}}},
                 riarc_route:trace(T, P, self(), [send])),
    ok = riarc_route:clear(T, P),
    ?assertEqual({flags, []}, erlang:trace_info(P, flags)),
    ?assertMatch(#{entries := 0}, riarc_route:stats(T)),
    ?assertEqual({error, gone}, riarc_route:switch(T, P, self())),
    ok = riarc_route:clear(T, P),
    exit(P, kill),
    ok = riarc_route:stop(T).

%% A tracee without an entry (traced with the table directly): its events are not
%% dropped but go to the default owner, counted as orphans.
orphans_test() ->
    Default = collector(),
    {ok, T} = riarc_route:new(Default),
    P = spawn(fun() -> receive go -> ok end end),
    Mon = monitor(process, P),
    1 = erlang:trace(P, true, [{tracer, riarc_route, T}, 'receive', procs]),
    P ! go,
    receive {'DOWN', Mon, process, P, normal} -> ok end,
    ?assertEqual([{trace, P, 'receive', go}, {trace, P, exit, normal}], take(Default, P, 2)),
    ?assertEqual(#{entries => 0, events => 0, orphans => 2}, riarc_route:stats(T)),
    ok = riarc_route:stop(T).

%% ---- callback contexts, checked with the probe mode --------------------------------

%% `spawned' runs in the parent, inside its spawn, after `spawn': in every one of many
%% spawns the order of the callbacks is spawn, spawned, the parent's next event (a send
%% right after spawn returns), and the child's first event is after spawn and spawned.
%% So a child never produces an event before its entry exists. Also in a 1-scheduler VM
%% (full tier).
contexts_test_() ->
    [{timeout, 120, fun() -> contexts(riarc_test_tier:count(1000, 5000)) end}
     | riarc_test_tier:slow([{timeout, 120, fun() -> in_peer("1", contexts, [5000]) end}])].

contexts(N) ->
    {ok, T} = riarc_route:new(self(), #{probe => true}),
    Self = self(),
    Sink = spawn_link(fun Sink() -> receive _ -> Sink() end end),
    P = spawn(fun() -> receive go -> ok end,
                       [begin
                            C = spawn(fun() -> Sink ! {hello, self()} end),
                            Sink ! {after_spawn, C}
                        end || _ <- lists:seq(1, N)]
              end),
    ok = riarc_route:trace(T, P, Self, [procs, send]),
    P ! go,
    Seqs = probe_seqs(P, N, 0, #{}),
    Orders = lists:usort([[K || {_, K} <- lists:sort([{S, K} || {K, S} <- maps:to_list(M)])]
                          || M <- maps:values(Seqs)]),
    %% The child's hello may come before or after the parent's next send.
    ?assertEqual([], Orders -- [[spawn, spawned, aft, hello], [spawn, spawned, hello, aft]]),
    ?assertEqual(0, maps:get(orphans, riarc_route:stats(T))),
    ?assertEqual([], flush()),
    unlink(Sink),
    exit(Sink, kill),
    ok = riarc_route:stop(T).

%% Until every child has had its 5 callbacks and P has exited: child -> #{What => Seq}
%% for the four that tell the order.
probe_seqs(_P, N, Exits, Acc) when Exits =:= N + 1 ->
    4 = lists:min([map_size(M) || M <- maps:values(Acc)]),
    N = map_size(Acc),
    Acc;
probe_seqs(P, N, Exits, Acc) ->
    {C, K, S} = receive
                    {riarc_probe, S0, _, spawn, P, C0, _} -> {C0, spawn, S0};
                    {riarc_probe, S0, _, spawned, C0, P, _} -> {C0, spawned, S0};
                    {riarc_probe, S0, _, send, P, {after_spawn, C0}, _} -> {C0, aft, S0};
                    {riarc_probe, S0, _, send, C0, {hello, C0}, _} -> {C0, hello, S0};
                    {riarc_probe, _, _, exit, C0, normal, _} -> {C0, exit, 0}
                end,
    case K of
        exit -> probe_seqs(P, N, Exits + 1, Acc);
        _ -> probe_seqs(P, N, Exits, maps:update_with(C, fun(M) -> M#{K => S} end, #{K => S}, Acc))
    end.

%% Receive timeouts: an `after' that fires is receive_timeout; a 'timeout' message from
%% a process is an ordinary receive; a port's message is an ordinary receive; a timer's
%% 'timeout' message (erlang:send_after/3) is traced by the VM exactly like a fired
%% `after' and so also comes as receive_timeout (a known limit).
timeouts_test() ->
    {ok, T} = riarc_route:new(self()),
    Self = self(),
    P = spawn(fun() ->
                      receive go -> ok end,
                      receive never -> ok after 0 -> ok end,
                      receive never -> ok after 2 -> ok end,
                      Self ! ready,
                      receive timeout -> ok end,
                      erlang:send_after(1, self(), timeout),
                      receive timeout -> ok end,
                      Port = open_port({spawn, "echo timeout"}, [binary, exit_status]),
                      receive {Port, {exit_status, _}} -> ok end,
                      receive stop -> ok end
              end),
    ok = riarc_route:trace(T, P, Self, ['receive']),
    P ! go,
    receive ready -> P ! timeout end,
    ?assertEqual([{trace, P, 'receive', go}, {trace, P, receive_timeout},
                  {trace, P, receive_timeout}, {trace, P, 'receive', timeout},
                  {trace, P, receive_timeout}],
                 [next(P) || _ <- lists:seq(1, 5)]),
    %% Then the port's messages (open_port's own reply first), up to its exit status.
    PortEvs = until_exit_status(P),
    ?assertMatch([_ | _], [x || {trace, _, 'receive', {_, {data, <<"timeout\n">>}}} <- PortEvs]),
    ?assertEqual([], [E || {trace, _, receive_timeout} = E <- PortEvs]),
    ok = riarc_route:stop(T),
    exit(P, kill).

until_exit_status(P) ->
    case next(P) of
        {trace, P, 'receive', {_, {exit_status, _}}} = E -> [E];
        E -> [E | until_exit_status(P)]
    end.

%% Last (EUnit runs a module's tests in order): the receive pattern new/1 installs is
%% node-global; give the tests of other modules in this VM the VM's default back.
restore_receive_pattern_test() ->
    _ = erlang:trace_pattern('receive', true, []),
    ?assertEqual({match_spec, true}, erlang:trace_info('receive', match_spec)).
