%% @doc A lost-update race in a gen_server, for the record &amp; replay tests (issue 28
%% item 4): the server holds a stock count; each client reads it with a call and then
%% stores what it read minus one with a cast, so two clients that read the same value
%% store the same value and one decrement is lost. main/3 returns
%% `{left, Count, expected, Start - Clients * Rounds}'; a lost update shows as a count
%% above the expected one, and as a second `{store, V}' with the same V at the server
%% (what riarc_replay_stock.prop rejects).
%% ```
%% 1> riarc_replay_stock:main(1000, 4, 25).
%% {left,963,expected,900}
%% '''
-module(riarc_replay_stock).
-behaviour(gen_server).

-export([main/3, client/3, lost/1]).
-export([init/1, handle_call/3, handle_cast/2]).

%% @doc The root: the server with Start, Clients clients of Rounds read-then-store rounds
%% each, the final count against the one without lost updates.
-spec main(non_neg_integer(), pos_integer(), pos_integer()) ->
    {left, integer(), expected, integer()}.
main(Start, Clients, Rounds) ->
    {ok, S} = gen_server:start_link(?MODULE, Start, []),
    Self = self(),
    Pids = [spawn(?MODULE, client, [Self, S, Rounds]) || _ <- lists:seq(1, Clients)],
    [receive {done, P} -> ok end || P <- Pids],
    Left = gen_server:call(S, read),
    ok = gen_server:stop(S),
    {left, Left, expected, Start - Clients * Rounds}.

%% @doc A client: Rounds times, read the count and store it minus one; the last call
%% comes after the client's casts, so the server has them when it answers.
-spec client(pid(), pid(), pos_integer()) -> ok.
client(Root, S, Rounds) ->
    lists:foreach(fun(_) ->
                          V = gen_server:call(S, read),
                          gen_server:cast(S, {store, V - 1})
                  end, lists:seq(1, Rounds)),
    _ = gen_server:call(S, read),
    Root ! {done, self()},
    ok.

%% @doc How many decrements main/3's result says were lost.
-spec lost({left, integer(), expected, integer()}) -> integer().
lost({left, Left, expected, Expected}) ->
    Left - Expected.

%% @private
init(Start) ->
    {ok, Start}.

%% @private
handle_call(read, _From, N) ->
    {reply, N, N}.

%% @private
handle_cast({store, V}, _N) ->
    {noreply, V}.
