%% @doc A supervised ticket dispenser with a lost-update race, in the shape of the riarc
%% demo: `next' is served by a helper process that reads the counter from the server,
%% replies, then writes the counter back; two helpers that read before either writes hand
%% out the same ticket. main/2 starts the supervisor, runs the clients and returns every
%% ticket handed out, in the order the clients got them.
%% ```
%% 1> riarc_replay_tickets:main(4, 5).
%% [0,1,1,2,...]
%% '''
-module(riarc_replay_tickets).
-behaviour(gen_server).

-export([main/2, client/2, start_link/0, next/0]).
-export([init/1, handle_call/3, handle_cast/2]).

%% @doc The root: supervisor, Clients clients taking Tickets tickets each, shutdown.
-spec main(pos_integer(), pos_integer()) -> [non_neg_integer()].
main(Clients, Tickets) ->
    process_flag(trap_exit, true),
    {ok, Sup} = supervisor:start_link(?MODULE, sup),
    Self = self(),
    Pids = [spawn_link(?MODULE, client, [Self, Tickets]) || _ <- lists:seq(1, Clients)],
    Got = lists:append([receive {tickets, P, Ts} -> Ts end || P <- Pids]),
    [receive {'EXIT', P, normal} -> ok end || P <- Pids],
    unlink(Sup),
    Ref = monitor(process, Sup),
    exit(Sup, shutdown),
    receive {'DOWN', Ref, process, Sup, _} -> ok end,
    Got.

%% @doc A client: Tickets tickets, one after the other.
-spec client(pid(), pos_integer()) -> ok.
client(Root, Tickets) ->
    Ts = [next() || _ <- lists:seq(1, Tickets)],
    Root ! {tickets, self(), Ts},
    ok.

%% @doc Starts the dispenser.
-spec start_link() -> {ok, pid()}.
start_link() ->
    gen_server:start_link({local, riarc_replay_tickets_server}, ?MODULE, server, []).

%% @doc A ticket, meant to be unique.
-spec next() -> non_neg_integer().
next() ->
    gen_server:call(riarc_replay_tickets_server, next).

%% @private
init(sup) ->
    Child = #{id => tickets, start => {?MODULE, start_link, []}, restart => permanent,
              shutdown => 1000, type => worker},
    {ok, {#{strategy => one_for_one, intensity => 3, period => 5}, [Child]}};
init(server) ->
    {ok, 0}.

%% @private
handle_call(next, From, N) ->
    Server = self(),
    _ = spawn(fun() -> serve(Server, From) end),
    {noreply, N};
handle_call(read, _From, N) ->
    {reply, N, N}.

%% @private
handle_cast({write, N}, _Old) ->
    {noreply, N}.

serve(Server, From) ->
    N = gen_server:call(Server, read),
    gen_server:reply(From, N),
    gen_server:cast(Server, {write, N + 1}).
