%% @doc The demo's service: a ticket dispenser, a gen_server under a supervisor, that
%% should hand every client a different ticket. It has a real concurrency bug: to keep the
%% server responsive, `next' is served by a short-lived helper process that reads the
%% counter, replies to the client and writes the counter back. Two helpers that read
%% before either writes hand out the same ticket, a lost update that no single-process
%% test finds and that shows only under concurrent clients. Started `safe', it serves
%% `next' itself, as it should: the control case of the tests.
%% ```
%% 1> {ok, _} = riarc_demo_tickets:start_link(racy).
%% 2> riarc_demo_tickets:next().
%% 0
%% 3> riarc_demo_tickets:next().
%% 1
%% 4> gen_server:stop(riarc_demo_tickets).
%% ok
%% '''
-module(riarc_demo_tickets).
-behaviour(gen_server).

-export([start_link/1, next/0]).
-export([init/1, handle_call/3, handle_cast/2]).

%% @doc Starts the dispenser, registered locally as riarc_demo_tickets.
-spec start_link(racy | safe) -> {ok, pid()} | {error, term()}.
start_link(Mode) ->
    gen_server:start_link({local, ?MODULE}, ?MODULE, Mode, []).

%% @doc A ticket. Meant to be unique.
-spec next() -> non_neg_integer().
next() ->
    gen_server:call(?MODULE, next).

%% @private
init(Mode) ->
    {ok, {Mode, 0}}.

%% @private
handle_call(next, _From, {safe, N}) ->
    {reply, N, {safe, N + 1}};
handle_call(next, From, State = {racy, _}) ->
    Server = self(),
    %% The bug: the helper reads, then writes back later; the server serves others between.
    _ = spawn(fun() -> serve(Server, From) end),
    {noreply, State};
handle_call(read, _From, State = {_, N}) ->
    {reply, N, State}.

%% @private
handle_cast({write, N}, {Mode, _Old}) ->
    {noreply, {Mode, N}}.

serve(Server, From) ->
    N = gen_server:call(Server, read),
    gen_server:reply(From, N),
    gen_server:cast(Server, {write, N + 1}).
