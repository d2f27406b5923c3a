%% @doc Small racy programs the record &amp; replay tests (and the docs) run; woven by
%% riarc_replay:instrument/1 from their debug_info.
%% ```
%% 1> riarc_replay_progs:race(3, 2).
%% [{2,1},{1,1},{3,1},{2,2},{1,2},{3,2}]
%% '''
-module(riarc_replay_progs).

%% now/0 is one of the values the runtime records.
-compile({nowarn_deprecated_function, [{erlang, now, 0}]}).

-export([race/2, sender/3, timeouts/1, ets_race/2, values/0, tree/1, variant/1,
         selective/1, mixed/2, timers/1, timer_sender/2, mnesia_race/2, mnesia_worker/3, mnesia_dirty_race/2, mnesia_dirty_worker/3,
         fanout/2, fan_sender/3, fan_collector/3, flood/1, exits/1, held/0, timer_race/1, ticks/1, applied/2, tick_sender/2,
         shapes/0, idle/0, named/0,
         crash_links/0, crash_trapper/1, crash_worker/0, waiter/0, killer/1, kill_target/1]).
%% idle/0's server, whose gen_server loop is OTP's.
-behaviour(gen_server).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2]).

%% @doc N senders send M messages each to this process, which returns the arrival order.
-spec race(pos_integer(), pos_integer()) -> [{pos_integer(), pos_integer()}].
race(N, M) ->
    Self = self(),
    _ = [spawn(?MODULE, sender, [Self, I, M]) || I <- lists:seq(1, N)],
    collect(N * M, []).

collect(0, Acc) ->
    lists:reverse(Acc);
collect(K, Acc) ->
    receive
        {msg, I, J} -> collect(K - 1, [{I, J} | Acc])
    end.

%% @doc A sender of race/2; it spins a little between messages so that senders overlap.
-spec sender(pid(), pos_integer(), pos_integer()) -> ok.
sender(To, I, M) ->
    lists:foreach(fun(J) -> spin(50 + rand:uniform(200)), To ! {msg, I, J} end, lists:seq(1, M)).

spin(0) -> ok;
spin(K) -> spin(K - 1).

%% @doc N rounds of: a helper spawned to answer after a random amount of work, and a
%% receive with a short timeout; returns which rounds timed out.
-spec timeouts(pos_integer()) -> [{pos_integer(), answered | timed_out}].
timeouts(N) ->
    Self = self(),
    [begin
         _ = spawn(fun() -> spin(rand:uniform(600000)), Self ! {answer, K} end),
         receive
             {answer, K} -> {K, answered}
         after 2 ->
             {K, timed_out}
         end
     end || K <- lists:seq(1, N)].

%% @doc N processes each add 1 to a shared ETS counter M times by lookup-then-insert: a
%% lost update race. Returns the final value and the order of the writers.
-spec ets_race(pos_integer(), pos_integer()) -> {integer(), [pos_integer()]}.
ets_race(N, M) ->
    T = ets:new(counter, [public, set]),
    true = ets:insert(T, {n, 0}),
    Self = self(),
    _ = [spawn(fun() ->
                       lists:foreach(fun(_) ->
                                             [{n, V}] = ets:lookup(T, n),
                                             spin(rand:uniform(5000)),
                                             true = ets:insert(T, {n, V + 1}),
                                             ets:insert(T, {last, I}),
                                             _ = ets:update_counter(T, n, 0)
                                     end, lists:seq(1, M)),
                       Self ! {done, I}
               end) || I <- lists:seq(1, N)],
    Order = [receive {done, I} -> I end || _ <- lists:seq(1, N)],
    [{n, Final}] = ets:lookup(T, n),
    {Final, Order}.

%% @doc The time and random values the runtime records.
-spec values() -> map().
values() ->
    R1 = make_ref(),
    R2 = erlang:make_ref(),
    #{mono => erlang:monotonic_time(), mono_us => erlang:monotonic_time(microsecond),
      sys => erlang:system_time(), sys_ms => erlang:system_time(millisecond),
      ts => os:timestamp(), now => erlang:now(), float => rand:uniform(),
      int => rand:uniform(1000000), big => rand:uniform(1 bsl 80),
      uniq => erlang:unique_integer(), uniq_pos => erlang:unique_integer([positive]),
      refs_ordered => R1 < R2}.

%% @doc A spawn tree of the given depth: each node spawns two children, which report
%% their depth-first path; the root returns the reports in arrival order.
-spec tree(non_neg_integer()) -> [[1 | 2]].
tree(Depth) ->
    Self = self(),
    node(Self, Depth, []),
    collect_paths((1 bsl (Depth + 1)) - 1, []).

node(Report, 0, Path) ->
    Report ! {path, lists:reverse(Path)};
node(Report, D, Path) ->
    _ = [spawn_link(fun() -> node(Report, D - 1, [K | Path]) end) || K <- [1, 2]],
    Report ! {path, lists:reverse(Path)}.

collect_paths(0, Acc) -> lists:reverse(Acc);
collect_paths(K, Acc) -> receive {path, P} -> collect_paths(K - 1, [P | Acc]) end.

%% @doc race/2, but with an extra receive when the persistent term
%% riarc_replay_variant is `extra': a changed program, for divergence tests.
-spec variant(pos_integer()) -> term().
variant(N) ->
    R = race(N, 2),
    case persistent_term:get(riarc_replay_variant, plain) of
        plain -> R;
        extra -> receive never -> R after 10 -> R end;
        spawn -> spawn(fun() -> ok end), R
    end.

%% @doc Selective receive: two senders, the receiver takes b-messages first when there
%% are any, with an `after 0' poll.
-spec selective(pos_integer()) -> [term()].
selective(N) ->
    Self = self(),
    _ = [spawn(fun() -> [Self ! {T, K} || K <- lists:seq(1, N)] end) || T <- [a, b]],
    sel(2 * N, []).

sel(0, Acc) -> lists:reverse(Acc);
sel(K, Acc) ->
    receive
        {b, J} -> sel(K - 1, [{b, J} | Acc])
    after 0 ->
        receive
            {T, J} -> sel(K - 1, [{T, J} | Acc])
        end
    end.

%% @doc Woven and plain messages mixed: monitors' 'DOWN' messages (not wrapped) race with
%% the children's results (wrapped).
-spec mixed(pos_integer(), pos_integer()) -> [term()].
mixed(N, Work) ->
    Self = self(),
    _ = [spawn_monitor(fun() -> spin(rand:uniform(Work)), Self ! {res, I} end) || I <- lists:seq(1, N)],
    [receive
         {res, I} -> {res, I};
         {'DOWN', _, process, _, normal} -> down
     end || _ <- lists:seq(1, 2 * N)].

%% @doc Exits that end processes waiting in a receive: a worker linked to a process that
%% traps exits and to a waiter crashes; a killer ends with `exit/2' a waiter linked to
%% another. Returns when all of them have ended, with the trapper's 'EXIT' reason. The
%% worker receives nothing and the killer one message, `{linked, Pid}'; a monitored run
%% must show them nothing else (riarc_replay_monitor_tests).
-spec crash_links() -> term().
crash_links() ->
    {_, T} = spawn_monitor(?MODULE, crash_trapper, [self()]),
    {_, K} = spawn_monitor(?MODULE, killer, [self()]),
    Reason = receive {trapped, R} -> R end,
    receive {'DOWN', T, process, _, normal} -> ok end,
    receive {'DOWN', K, process, _, normal} -> ok end,
    Reason.

%% @private
-spec crash_trapper(pid()) -> ok.
crash_trapper(Parent) ->
    process_flag(trap_exit, true),
    W = spawn_link(?MODULE, crash_worker, []),
    receive {'EXIT', W, R} -> Parent ! {trapped, R}, ok end.

%% @private Links a waiter and crashes, ending it.
-spec crash_worker() -> no_return().
crash_worker() ->
    _ = spawn_link(?MODULE, waiter, []),
    exit(crashed).

%% @private
-spec waiter() -> ok.
waiter() ->
    receive never -> ok end.

%% @private Kills a target linked to a waiter once the link is made.
-spec killer(pid()) -> ok.
killer(_Parent) ->
    Target = spawn(?MODULE, kill_target, [self()]),
    receive {linked, Target} -> ok end,
    true = exit(Target, kill),
    ok.

%% @private
-spec kill_target(pid()) -> ok.
kill_target(Killer) ->
    _ = spawn_link(?MODULE, waiter, []),
    Killer ! {linked, self()},
    waiter().

%% @doc N workers linked to this process (which traps exits) and N it monitors, each
%% ending with its own reason after an amount of work that differs from run to run and is
%% not recorded (unrecorded/1): the order the
%% 'EXIT' and 'DOWN' messages are taken in is the race, and only naming their sources in
%% the recording makes a replay take them in the same order.
-spec exits(pos_integer()) -> [{exit | down, pos_integer()}].
exits(N) ->
    process_flag(trap_exit, true),
    _ = [spawn_link(fun() -> spin(unrecorded(40000)), exit({done, I}) end)
         || I <- lists:seq(1, N)],
    _ = [spawn_monitor(fun() -> spin(unrecorded(40000)), exit({gone, I}) end)
         || I <- lists:seq(1, N)],
    [receive
         {'EXIT', _, {done, I}} -> {exit, I};
         {'DOWN', _, process, _, {gone, I}} -> {down, I}
     end || _ <- lists:seq(1, 2 * N)].

%% @doc N send_after and N start_timer timers of this process to itself, each of 0 to 2
%% ms from unrecorded/1 (a replay's timers fire in another order);
%% returns the order their messages were taken in.
-spec timer_race(pos_integer()) -> [{tick | timer, pos_integer()}].
timer_race(N) ->
    Self = self(),
    _ = [begin
             _ = erlang:send_after(unrecorded(3), Self, {tick, K}),
             erlang:start_timer(unrecorded(3), Self, K)
         end || K <- lists:seq(1, N)],
    [take() || _ <- lists:seq(1, 2 * N)].

%% @doc An interval timer's ticks (timer:send_interval/2), a timed apply and an interval
%% apply (timer:apply_after/4, apply_interval/4, each spawning applied/2) race with a
%% sender's N messages, sent after work that differs from run to run and is not
%% recorded; returns the order of the first 2N messages taken. Both intervals are
%% cancelled at the end; in a run, the result ends with whether each ticker
%% (riarc_replay_timers:timer_send_interval/3) had ended when its cancel returned.
-spec ticks(pos_integer()) -> [term()].
ticks(N) ->
    Self = self(),
    {ok, TRef} = timer:send_interval(1, tick),
    {ok, _} = timer:apply_after(2, ?MODULE, applied, [Self, once]),
    {ok, ARef} = timer:apply_interval(3, ?MODULE, applied, [Self, interval]),
    _ = spawn(?MODULE, tick_sender, [Self, N]),
    Taken = [receive
                 tick -> tick;
                 {applied, K} -> {applied, K};
                 {msg, J} -> {msg, J}
             end || _ <- lists:seq(1, 2 * N)],
    {ok, cancel} = timer:cancel(TRef),
    {ok, cancel} = timer:cancel(ARef),
    Taken ++ [{ended, not is_process_alive(P)} || {riarc_ticker, P} <- [TRef, ARef]].

%% @doc What ticks/1's timed applies run.
-spec applied(pid(), once | interval) -> {applied, once | interval}.
applied(To, K) ->
    To ! {applied, K}.

%% @doc The sender of ticks/1: N messages, up to about a millisecond of work before each.
-spec tick_sender(pid(), pos_integer()) -> ok.
tick_sender(To, N) ->
    lists:foreach(fun(J) -> spin(unrecorded(300000)), To ! {msg, J} end, lists:seq(1, N)).

%% A number in 0..N-1 that differs from run to run and is not recorded (os:perf_counter/0
%% is not woven), hashed: successive readings of the counter are close, and their
%% remainders would grow with the order of the calls.
unrecorded(N) ->
    erlang:phash2(os:perf_counter(), N).

%% @doc A plain message from a process outside the run and the 'EXIT' of a worker of the
%% run, both taken by catch-all receives. Which comes first is set from outside the
%% recording (persistent_term {riarc_replay_progs, outside_first}, default true): the
%% outside process sends `outside' and only then lets the worker end, or lets it end,
%% waits for it, and only then sends `outside'. A test records one order and replays
%% under the other.
-spec held() -> [outside | worker_exit].
held() ->
    process_flag(trap_exit, true),
    Self = self(),
    W = spawn_link(fun() -> receive go -> ok end end),
    OutsideFirst = persistent_term:get({?MODULE, outside_first}, true),
    _ = proc_lib:spawn(fun() ->
                               case OutsideFirst of
                                   true ->
                                       Self ! outside,
                                       W ! go;
                                   false ->
                                       Ref = erlang:monitor(process, W),
                                       W ! go,
                                       receive {'DOWN', Ref, process, W, _} -> ok end,
                                       Self ! outside
                               end
                       end),
    [case receive M -> M end of
         outside -> outside;
         {'EXIT', W, normal} -> worker_exit
     end || _ <- [1, 2]].

%% @doc Timer messages racing with a sender's messages: N timers of 1..3 ms
%% (erlang:send_after, erlang:start_timer, timer:send_after and an absolute start_timer
%% in turn) against N messages of a sender; after taking N messages, the erlang timers K
%% with K rem 3 =:= 0 are cancelled (in time or not: that is part of the result, as is
%% read_timer on timer 1). Returns the order messages were taken in and the outcomes.
-spec timers(pos_integer()) -> {[term()], [{pos_integer(), boolean()}], term()}.
timers(N) ->
    Self = self(),
    _ = spawn(?MODULE, timer_sender, [Self, N]),
    Timers = [{K, start(K rem 4, K, Self)} || K <- lists:seq(1, N)],
    Read = case lists:keyfind(1, 1, Timers) of
               {1, {ref, R1}} -> is_integer(erlang:read_timer(R1));
               _ -> none
           end,
    First = [take() || _ <- lists:seq(1, N)],
    Cancels = [{K, erlang:cancel_timer(R) =/= false} || {K, {ref, R}} <- Timers, K rem 3 =:= 0],
    InTime = length([K || {K, true} <- Cancels]),
    Rest = [take() || _ <- lists:seq(1, N - InTime)],
    {First ++ Rest, Cancels, Read}.

start(0, K, Self) -> {ref, erlang:send_after(rand:uniform(3), Self, {tick, K})};
start(1, K, Self) -> {ref, erlang:start_timer(rand:uniform(3), Self, K)};
start(2, K, _Self) -> {ok, TRef} = timer:send_after(rand:uniform(3), {tick, K}), {tref, TRef};
start(3, K, Self) -> {ref, erlang:start_timer(erlang:monotonic_time(millisecond) + rand:uniform(3), Self, K, [{abs, true}])}.

take() ->
    receive
        {tick, K} -> {tick, K};
        {timeout, R, K} when is_reference(R) -> {timer, K};
        {msg, J} -> {msg, J}
    end.

%% @doc The sender of timers/1: N messages, a little work between them.
-spec timer_sender(pid(), pos_integer()) -> ok.
timer_sender(To, N) ->
    lists:foreach(fun(J) -> spin(2000 + rand:uniform(20000)), To ! {msg, J} end, lists:seq(1, N)).

%% @doc N processes each prepend their number to one mnesia record M times, one
%% transaction each (the table riarc_rr_log, {riarc_rr_log, Key, Value}, must exist);
%% returns the record's list: the commit order of the transactions.
-spec mnesia_race(pos_integer(), pos_integer()) -> [pos_integer()].
mnesia_race(N, M) ->
    {atomic, ok} = mnesia:transaction(fun() -> mnesia:write({riarc_rr_log, log, []}) end),
    Self = self(),
    Pids = [spawn(?MODULE, mnesia_worker, [Self, I, M]) || I <- lists:seq(1, N)],
    [receive {mnesia_done, P} -> ok end || P <- Pids],
    {atomic, [{riarc_rr_log, log, L}]} = mnesia:transaction(fun() -> mnesia:read(riarc_rr_log, log) end),
    L.

%% @doc A worker of mnesia_race/2.
-spec mnesia_worker(pid(), pos_integer(), pos_integer()) -> ok.
mnesia_worker(Root, I, M) ->
    lists:foreach(fun(_) ->
                          spin(rand:uniform(20000)),
                          {atomic, ok} = mnesia:transaction(
                                           fun() ->
                                                   [{_, log, L}] = mnesia:read(riarc_rr_log, log),
                                                   mnesia:write({riarc_rr_log, log, [I | L]})
                                           end)
                  end, lists:seq(1, M)),
    Root ! {mnesia_done, self()},
    ok.

%% @doc N processes each add `{I, C}' to one mnesia record M times with dirty operations:
%% C from a dirty counter, then a dirty read of the record and, a moment later, a dirty
%% write of it (every other time both inside an async_dirty activity), so that the
%% processes lose each other's updates (the table riarc_rr_log must exist); returns the
%% record's list: which updates survived, in which order.
-spec mnesia_dirty_race(pos_integer(), pos_integer()) -> [{pos_integer(), integer()}].
mnesia_dirty_race(N, M) ->
    ok = mnesia:dirty_write({riarc_rr_log, log, []}),
    ok = mnesia:dirty_write({riarc_rr_log, ctr, 0}),
    Self = self(),
    Pids = [spawn(?MODULE, mnesia_dirty_worker, [Self, I, M]) || I <- lists:seq(1, N)],
    [receive {mnesia_done, P} -> ok end || P <- Pids],
    [{riarc_rr_log, log, L}] = mnesia:dirty_read(riarc_rr_log, log),
    L.

%% @doc A worker of mnesia_dirty_race/2.
-spec mnesia_dirty_worker(pid(), pos_integer(), pos_integer()) -> ok.
mnesia_dirty_worker(Root, I, M) ->
    lists:foreach(fun(J) when J rem 2 =:= 0 ->
                          C = mnesia:dirty_update_counter(riarc_rr_log, ctr, 1),
                          [{_, log, L}] = mnesia:dirty_read(riarc_rr_log, log),
                          spin(rand:uniform(5000)),
                          ok = mnesia:dirty_write({riarc_rr_log, log, [{I, C} | L]});
                     (_) ->
                          C = mnesia:dirty_update_counter(riarc_rr_log, ctr, 1),
                          ok = mnesia:activity(async_dirty,
                                               fun() ->
                                                       [{_, log, L}] = mnesia:read(riarc_rr_log, log),
                                                       spin(rand:uniform(5000)),
                                                       mnesia:write({riarc_rr_log, log, [{I, C} | L]})
                                               end)
                  end, lists:seq(1, M)),
    Root ! {mnesia_done, self()},
    ok.

%% @doc N senders each send M messages, every one of them to two collectors in turn, so
%% that each sender's messages to one receiver are not consecutive among its sends;
%% returns each collector's arrival order.
-spec fanout(pos_integer(), pos_integer()) -> [{1 | 2, [{pos_integer(), pos_integer()}]}].
fanout(N, M) ->
    Self = self(),
    Cs = [spawn(?MODULE, fan_collector, [Self, C, N * M]) || C <- [1, 2]],
    _ = [spawn(?MODULE, fan_sender, [Cs, I, M]) || I <- lists:seq(1, N)],
    [receive {fan_done, C, Order} -> {C, Order} end || C <- [1, 2]].

%% @doc A sender of fanout/2.
-spec fan_sender([pid()], pos_integer(), pos_integer()) -> ok.
fan_sender(Cs, I, M) ->
    lists:foreach(fun(J) -> spin(50 + rand:uniform(200)), [C ! {msg, I, J} || C <- Cs] end,
                  lists:seq(1, M)).

%% @doc A collector of fanout/2.
-spec fan_collector(pid(), 1 | 2, non_neg_integer()) -> {fan_done, 1 | 2, list()}.
fan_collector(Root, C, K) ->
    Root ! {fan_done, C, collect(K, [])}.

%% @doc A process finds N messages in its mailbox when it starts receiving them; returns
%% a checksum of the order it took them in and where its mailbox was kept at the end
%% (a recording moves a long mailbox off the heap, see riarc_replay_stream).
-spec flood(pos_integer()) -> {non_neg_integer(), on_heap | off_heap}.
flood(N) ->
    Self = self(),
    C = spawn(fun() ->
                      receive go -> ok end,
                      Sum = flood_sum(N, 0),
                      {message_queue_data, Where} = process_info(self(), message_queue_data),
                      Self ! {flood, Sum, Where}
              end),
    _ = [C ! {n, K} || K <- lists:seq(1, N)],
    C ! go,
    receive {flood, Sum, Where} -> {Sum, Where} end.

flood_sum(0, Acc) -> Acc;
flood_sum(K, Acc) -> receive {n, X} -> flood_sum(K - 1, (Acc * 31 + X) rem 1000000007) end.

%% @doc Receives of the shapes the weaver's inline receive copies with renamed variables
%% (riarc_replay_transform): patterns on variables bound before, repeated variables, a
%% guard on a pattern's variable, a map key and a binary size bound before or in the
%% pattern, receives nested in a body, in a fun and in a comprehension, an `after'
%% expression, a variable every clause binds. The process
%% sends every message to itself first, so the result is the same in every run.
-spec shapes() -> list().
shapes() ->
    Self = self(),
    K = 7,
    _ = [Self ! M || M <- [{k, 6}, {k, 7}, {pair, 1, 2}, {pair, 3, 3}, #{key => 6, v => b},
                           #{key => 7, v => a}, <<3, "abcde">>, {nested, 1}, {inner, 2},
                           {lc, 1}, {lc, 2}, {fun_msg, 3}, {fun_msg, 5}, {v2, 40}]],
    A = receive {k, K} -> K end,
    B = receive {pair, X, X} -> {same, X} end,
    C = receive {pair, Y, Z} when Y < Z -> {less, Y, Z} end,
    D = receive #{key := K, v := V} -> V end,
    E = receive <<L:8, Bin:L/binary, _/binary>> -> Bin end,
    F = receive {nested, N1} -> receive {inner, N2} -> N1 + N2 end end,
    G = [receive {lc, I} -> I end || _ <- [1, 2]],
    H = (fun() -> receive {fun_msg, M} when M > K - 3 -> M end end)(),
    T = 5,
    J = receive never -> never after T - 5 -> timed_out end,
    Q = receive {v1, Q1} -> Q1; {v2, Q1} -> Q1 end,
    Left = receive {k, _} = Km -> Km; {fun_msg, _} = Fm -> Fm after 0 -> none end,
    [A, B, C, D, E, F, G, H, J, Q + 1, Left, receive R -> R after 0 -> empty end].

%% @doc Timeouts of code that is not woven without `otp => true': a server whose
%% gen_server loop times out (it asks for a timeout of 0) and tells this process, and a
%% sleep (timer's `receive after'). Returns what the server said.
-spec idle() -> {idle, pid()}.
idle() ->
    {ok, Pid} = gen_server:start(?MODULE, self(), []),
    ok = gen_server:cast(Pid, idle),
    Said = receive {idle, Pid} = M -> M end,
    ok = timer:sleep(1),
    ok = gen_server:stop(Pid),
    Said.

%% @private
init(Root) -> {ok, Root}.

%% @private
handle_call(_, _, Root) -> {reply, ok, Root}.

%% @private
handle_cast(idle, Root) -> {noreply, Root, 0}.

%% @private
handle_info(timeout, Root) ->
    Root ! {idle, self()},
    {noreply, Root}.

%% @doc A send to a registered name: a child registered by this process, sent `hello'
%% by its name; returns once the child has taken it and ended.
-spec named() -> ok.
named() ->
    {C, Ref} = spawn_monitor(fun() -> receive hello -> ok end end),
    true = register(riarc_replay_named, C),
    riarc_replay_named ! hello,
    receive {'DOWN', Ref, process, C, normal} -> ok end.
