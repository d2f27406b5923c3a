%% A gen_server for riarc_inline_tests, without terminate/2: started, called (with and
%% without a timeout), cast to, timed out and stopped by a woven client, so that what
%% OTP's code does for both sides (the start, the ack, the replies, the timeout, the
%% exit) is compared inline and outline.
-module(riarc_inline_gen).
-behaviour(gen_server).

-export([client/0, late/0, failing/0, init/1, handle_call/3, handle_cast/2, handle_info/2]).

%% The client: starts the server, calls it twice, lets it time out once (it says when),
%% stops it and waits for its end.
client() ->
    {ok, S} = gen_server:start(?MODULE, x, []),
    {a, 1} = gen_server:call(S, {q, 1}),
    {a, 2} = gen_server:call(S, {q, 2}, infinity),
    ok = gen_server:cast(S, {idle, self()}),
    receive {idled, S} -> ok end,
    stop(S).

%% A message `timeout' the server takes when its own timeout is due: the cast {hold,
%% Client} sends the server `timeout' itself, then asks for a timeout of 0, so
%% gen_server's receive finds the message first. The server handles it as it would its
%% timeout (handle_info(timeout, _)), but it was a message.
late() ->
    {ok, S} = gen_server:start(?MODULE, x, []),
    ok = gen_server:cast(S, {hold, self()}),
    receive {idled, S} -> ok end,
    stop(S).

%% Calls that fail after their request was sent: one times out (the server never
%% replies), one goes to a server that is gone; and one to the client itself, which
%% exits before anything is sent.
failing() ->
    {ok, S} = gen_server:start(?MODULE, x, []),
    {'EXIT', {timeout, _}} = (catch gen_server:call(S, hang, 0)),
    {'EXIT', {calling_self, _}} = (catch gen_server:call(self(), hang)),
    stop(S),
    {'EXIT', {noproc, _}} = (catch gen_server:call(S, {q, 1})),
    ok.

stop(S) ->
    Ref = monitor(process, S),
    ok = gen_server:cast(S, stop),
    receive {'DOWN', Ref, process, S, _} -> ok end.

init(x) -> {ok, #{}}.

handle_call({q, V}, _From, S) -> {reply, {a, V}, S};
handle_call(hang, _From, S) -> {noreply, S}.

handle_cast({idle, Client}, S) -> {noreply, S#{client => Client}, 0};
handle_cast({hold, Client}, S) ->
    self() ! timeout,
    {noreply, S#{client => Client}, 0};
handle_cast(stop, S) -> {stop, normal, S}.

%% The timeout asked for above, or the message `timeout' (late/0).
handle_info(timeout, S = #{client := Client}) ->
    Client ! {idled, self()},
    {noreply, S}.

