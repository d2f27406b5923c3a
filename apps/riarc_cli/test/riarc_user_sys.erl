%% @doc A small user system for `bench -m' tests: a server and N clients, each making K
%% calls and timing them; main/2 returns `{latencies_us, L}', the convention of
%% riarc_bench_user. spec/1 (for `--monitors riarc_user_sys') accepts a client that
%% exits normally and the server once it stops normally.
%% ```
%% 1> {latencies_us, L} = riarc_user_sys:main(20, 10), length(L).
%% 200
%% '''
-module(riarc_user_sys).

-export([main/2, spread/3, spreader/0, server/0, client/3, spec/1]).

-spec main(pos_integer(), pos_integer()) -> {latencies_us, [integer()]}.
main(N, K) ->
    Server = spawn(?MODULE, server, []),
    Self = self(),
    Clients = [spawn(?MODULE, client, [Server, Self, K]) || _ <- lists:seq(1, N)],
    Ls = lists:append([receive {done, C, L} -> L end || C <- Clients]),
    %% Returns only when the server is gone too: the whole system's work is done.
    Ref = monitor(process, Server),
    Server ! stop,
    receive {'DOWN', Ref, process, _, _} -> ok end,
    {latencies_us, Ls}.

%% The same with the N clients on another node (spawn/4; this module loaded there), for
%% `run --follow'; returns ok.
-spec spread(node(), pos_integer(), pos_integer()) -> ok.
spread(Node, N, K) ->
    Server = spawn(?MODULE, server, []),
    Self = self(),
    Clients = [spawn(Node, ?MODULE, client, [Server, Self, K]) || _ <- lists:seq(1, N)],
    _ = [receive {done, C, _} -> ok end || C <- Clients],
    Ref = monitor(process, Server),
    Server ! stop,
    receive {'DOWN', Ref, process, _, _} -> ok end.

%% A live process that runs spread/3 when told (`{go, Node, N, K, From}', answered
%% `spread_done'), for `attach --follow'.
-spec spreader() -> no_return().
spreader() ->
    receive
        {go, Node, N, K, From} ->
            ok = spread(Node, N, K),
            From ! spread_done,
            spreader()
    end.

-spec server() -> ok.
server() ->
    receive
        {req, From, X} -> From ! {resp, X}, server();
        stop -> ok
    end.

-spec client(pid(), pid(), pos_integer()) -> ok.
client(Server, Parent, K) ->
    L = [begin
             T0 = erlang:monotonic_time(microsecond),
             Server ! {req, self(), I},
             receive {resp, I} -> ok end,
             erlang:monotonic_time(microsecond) - T0
         end || I <- lists:seq(1, K)],
    Parent ! {done, self(), L},
    ok.

-spec spec(tuple()) -> {ok, riarc_monitor:monitor()} | undefined.
spec({?MODULE, F, _}) when F =:= client; F =:= server ->
    {ok, fun M({exit, _, normal}) -> accept; M({exit, _, _}) -> reject; M(_) -> M end};
spec(_) -> undefined.
