%% @doc The supervisor of the demo's ticket dispenser.
%% ```
%% 1> {ok, Sup} = riarc_demo_tickets_sup:start_link(racy).
%% 2> [Id || {Id, _, worker, _} <- supervisor:which_children(Sup)].
%% [tickets]
%% 3> gen_server:stop(Sup).
%% ok
%% '''
-module(riarc_demo_tickets_sup).
-behaviour(supervisor).

-export([start_link/1, init/1]).

%% @doc Starts the supervisor and the dispenser (racy or safe) under it.
-spec start_link(racy | safe) -> {ok, pid()} | ignore | {error, term()}.
start_link(Mode) ->
    supervisor:start_link(?MODULE, Mode).

%% @private
init(Mode) ->
    Child = #{id => tickets, start => {riarc_demo_tickets, start_link, [Mode]},
              restart => permanent, shutdown => 1000, type => worker},
    {ok, {#{strategy => one_for_one, intensity => 3, period => 5}, [Child]}}.
