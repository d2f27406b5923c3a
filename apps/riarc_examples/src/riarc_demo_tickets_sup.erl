%% @doc The supervisor of the demo's ticket dispenser.
%% ```
%% 1> {ok, Sup} = riarc_demo_tickets_sup:start_link().
%% '''
-module(riarc_demo_tickets_sup).
-behaviour(supervisor).

-export([start_link/0, init/1]).

%% @doc Starts the supervisor and the dispenser under it.
-spec start_link() -> {ok, pid()} | ignore | {error, term()}.
start_link() ->
    supervisor:start_link(?MODULE, []).

%% @private
init([]) ->
    Child = #{id => tickets, start => {riarc_demo_tickets, start_link, []},
              restart => permanent, shutdown => 1000, type => worker},
    {ok, {#{strategy => one_for_one, intensity => 3, period => 5}, [Child]}}.
