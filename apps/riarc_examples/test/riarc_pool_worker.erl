%% A poolboy worker for riarc_remote_SUITE, loaded onto the peer node by the suite (the
%% system under test, not riarc's): `{double, N}' is answered with 2N, `{double_wrong, N}'
%% with 2N + 1 (a bug the suite's property catches).
-module(riarc_pool_worker).
-behaviour(gen_server).
-behaviour(poolboy_worker).

-export([start_link/1, init/1, handle_call/3, handle_cast/2]).

start_link(Args) -> gen_server:start_link(?MODULE, Args, []).

init(Args) -> {ok, Args}.

handle_call({double, N}, _From, S) -> {reply, 2 * N, S};
handle_call({double_wrong, N}, _From, S) -> {reply, 2 * N + 1, S}.

handle_cast(_Msg, S) -> {noreply, S}.
