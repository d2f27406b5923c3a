%% @doc Savina-style actor programs (written here, after the Savina suite's descriptions)
%% that {@link riarc_replay_bench} records and replays. Each program's root waits until
%% every process it started has ended, and returns a small summary.
%% ```
%% 1> riarc_replay_savina:pingpong(1000).
%% 1000
%% '''
-module(riarc_replay_savina).

-export([pingpong/1, counting/1, forkjoin/2, ring/2, chameneos/2, big/2, bank/2, ets_dict/2]).

%% @doc Ping-pong: N round trips between two processes.
-spec pingpong(pos_integer()) -> pos_integer().
pingpong(N) ->
    Self = self(),
    Pong = spawn(fun() -> pong(Self) end),
    ping(Pong, N),
    Pong ! stop,
    receive pong_done -> N end.

ping(_Pong, 0) -> ok;
ping(Pong, K) ->
    Pong ! {ping, self()},
    receive pong -> ping(Pong, K - 1) end.

pong(Root) ->
    receive
        {ping, From} -> From ! pong, pong(Root);
        stop -> Root ! pong_done
    end.

%% @doc Counting: a producer sends N increments to a counter, then asks for the total.
-spec counting(pos_integer()) -> pos_integer().
counting(N) ->
    Counter = spawn(fun() -> count(0) end),
    _ = [Counter ! inc || _ <- lists:seq(1, N)],
    Counter ! {get, self()},
    receive {total, T} -> T end.

count(T) ->
    receive
        inc -> count(T + 1);
        {get, From} -> From ! {total, T}
    end.

%% @doc Fork-join throughput: N messages to each of P workers, which each do a little
%% work per message and report when done.
-spec forkjoin(pos_integer(), pos_integer()) -> pos_integer().
forkjoin(P, N) ->
    Self = self(),
    Ws = [spawn(fun() -> fj_worker(Self, N, 0) end) || _ <- lists:seq(1, P)],
    lists:foreach(fun(K) -> [W ! {work, K} || W <- Ws] end, lists:seq(1, N)),
    lists:sum([receive {fj_done, S} -> S end || _ <- Ws]).

fj_worker(Root, 0, Acc) -> Root ! {fj_done, Acc};
fj_worker(Root, N, Acc) ->
    receive {work, K} -> fj_worker(Root, N - 1, Acc + (K * K) rem 7) end.

%% @doc Thread ring: R processes in a ring pass a token N hops.
-spec ring(pos_integer(), pos_integer()) -> 0.
ring(R, N) ->
    Self = self(),
    First = lists:foldl(fun(_, Next) -> spawn(fun() -> ring_node(Next, Self) end) end, Self, lists:seq(1, R)),
    First ! {token, N},
    Result = ring_root(First),
    lists:foreach(fun(_) -> receive ring_stopped -> ok end end, lists:seq(1, R)),
    Result.

ring_root(First) ->
    receive
        {token, 0} -> First ! stop, 0;
        {token, K} -> First ! {token, K - 1}, ring_root(First)
    end.

ring_node(Next, Root) ->
    receive
        {token, 0} -> Next ! {token, 0}, ring_node(Next, Root);
        {token, K} -> Next ! {token, K - 1}, ring_node(Next, Root);
        stop -> Next ! stop, Root ! ring_stopped
    end.

%% @doc Chameneos: C creatures meet pairwise at a broker N times in all; each meeting
%% changes both creatures' colours.
-spec chameneos(pos_integer(), pos_integer()) -> [{pos_integer(), non_neg_integer()}].
chameneos(C, N) ->
    Self = self(),
    Broker = spawn(fun() -> broker(N, none, Self) end),
    Cs = [spawn(fun() -> creature(Broker, Self, I, I rem 3, 0) end) || I <- lists:seq(1, C)],
    Meetings = lists:sort([receive {creature_done, I, M} -> {I, M} end || _ <- Cs]),
    Broker ! all_stopped,
    receive broker_done -> Meetings end.

broker(0, Waiting, Root) ->
    case Waiting of
        none -> ok;
        {W, _} -> W ! stop
    end,
    broker_drain(Root);
broker(N, none, Root) ->
    receive {meet, From, Colour} -> broker(N, {From, Colour}, Root) end;
broker(N, {W, WColour}, Root) ->
    receive
        {meet, From, Colour} ->
            W ! {mate, Colour},
            From ! {mate, WColour},
            broker(N - 1, none, Root)
    end.

%% After the last meeting every creature that asks is told to stop; the broker ends when
%% the root, which counts the stopped creatures, says all have stopped.
broker_drain(Root) ->
    receive
        {meet, From, _} -> From ! stop, broker_drain(Root);
        all_stopped -> Root ! broker_done
    after 0 ->
        receive
            {meet, From, _} -> From ! stop, broker_drain(Root);
            all_stopped -> Root ! broker_done
        end
    end.

creature(Broker, Root, I, Colour, M) ->
    Broker ! {meet, self(), Colour},
    receive
        {mate, Other} -> creature(Broker, Root, I, (Colour + Other) rem 3, M + 1);
        stop -> Root ! {creature_done, I, M}
    end.

%% @doc Big: W workers each send N pings to random other workers, which answer pong.
-spec big(pos_integer(), pos_integer()) -> pos_integer().
big(W, N) ->
    Self = self(),
    Ws = [spawn(fun() -> big_init(Self, N) end) || _ <- lists:seq(1, W)],
    All = list_to_tuple(Ws),
    _ = [P ! {peers, All} || P <- Ws],
    _ = [receive {big_sent, _} -> ok end || _ <- Ws],
    _ = [P ! big_stop || P <- Ws],
    lists:sum([receive {big_done, Pongs} -> Pongs end || _ <- Ws]).

big_init(Root, N) ->
    receive {peers, All} -> big_loop(Root, All, N, 0, false) end.

%% Pings go out one at a time; the worker answers others' pings meanwhile.
big_loop(Root, All, 0, Pongs, false) ->
    Root ! {big_sent, self()},
    big_loop(Root, All, 0, Pongs, true);
big_loop(Root, All, N, Pongs, Reported) when N > 0 ->
    Peer = element(rand:uniform(tuple_size(All)), All),
    Peer ! {ping, self()},
    big_wait(Root, All, N, Pongs, Reported);
big_loop(Root, All, 0, Pongs, true) ->
    receive
        {ping, From} -> From ! pong, big_loop(Root, All, 0, Pongs, true);
        big_stop -> Root ! {big_done, Pongs}
    end.

big_wait(Root, All, N, Pongs, Reported) ->
    receive
        {ping, From} -> From ! pong, big_wait(Root, All, N, Pongs, Reported);
        pong -> big_loop(Root, All, N - 1, Pongs + 1, Reported)
    end.

%% @doc Bank: a teller makes T transfers between A accounts; the source debits and asks
%% the destination to credit, which acknowledges to the teller.
-spec bank(pos_integer(), pos_integer()) -> integer().
bank(A, T) ->
    Self = self(),
    Accounts = list_to_tuple([spawn(fun() -> account(1000) end) || _ <- lists:seq(1, A)]),
    lists:foreach(fun(_) ->
                          Src = element(rand:uniform(A), Accounts),
                          Dst = element(rand:uniform(A), Accounts),
                          Src ! {debit, rand:uniform(100), Dst, Self}
                  end, lists:seq(1, T)),
    _ = [receive credited -> ok end || _ <- lists:seq(1, T)],
    _ = [P ! {stop, Self} || P <- tuple_to_list(Accounts)],
    lists:sum([receive {balance, B} -> B end || _ <- lists:seq(1, A)]).

account(Balance) ->
    receive
        {debit, Amount, Dst, Teller} -> Dst ! {credit, Amount, Teller}, account(Balance - Amount);
        {credit, Amount, Teller} -> Teller ! credited, account(Balance + Amount);
        {stop, Root} -> Root ! {balance, Balance}
    end.

%% @doc ETS dictionary: W workers do N operations each on a shared table, one write for
%% every four reads.
-spec ets_dict(pos_integer(), pos_integer()) -> non_neg_integer().
ets_dict(W, N) ->
    T = ets:new(dict, [public, set]),
    Self = self(),
    _ = [spawn(fun() -> dict_worker(T, N, Self) end) || _ <- lists:seq(1, W)],
    _ = [receive dict_done -> ok end || _ <- lists:seq(1, W)],
    Size = ets:info(T, size),
    ets:delete(T),
    Size.

dict_worker(_T, 0, Root) -> Root ! dict_done;
dict_worker(T, N, Root) ->
    K = rand:uniform(1000),
    _ = case N rem 5 of
            0 -> ets:insert(T, {K, N});
            _ -> ets:lookup(T, K)
        end,
    dict_worker(T, N - 1, Root).
