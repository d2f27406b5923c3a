%% @doc The riarc_view application and the supervisor of its live dashboards
%% ({@link riarc_dashboard}). Dashboards are `temporary' children of a simple_one_for_one:
%% one that ends or crashes is not restarted, since its session (which it monitors) may
%% be gone; `riarc_dashboard:start/2' starts the application when it is not running.
%% ```
%% 1> {ok, _} = application:ensure_all_started(riarc_view).
%% 2> proplists:get_value(active, supervisor:count_children(riarc_dashboard_sup)) >= 0.
%% true
%% '''
-module(riarc_dashboard_sup).
-behaviour(application).
-behaviour(supervisor).

-export([start/2, stop/1, start_link/0, start_dashboard/2, init/1]).

%% @private
-spec start(application:start_type(), term()) -> {ok, pid()} | {error, term()}.
start(_Type, _Args) ->
    start_link().

%% @private
-spec stop(term()) -> ok.
stop(_State) ->
    ok.

%% @doc Starts the supervisor (the application does).
-spec start_link() -> {ok, pid()} | {error, term()}.
start_link() ->
    supervisor:start_link({local, riarc_dashboard_sup}, ?MODULE, []).

%% @doc Starts a dashboard of Session under the supervisor (riarc_dashboard:start_link/2).
-spec start_dashboard(pid(), map()) -> {ok, pid()} | {error, term()}.
start_dashboard(Session, Opts) ->
    supervisor:start_child(riarc_dashboard_sup, [Session, Opts]).

%% @private
-spec init([]) -> {ok, {supervisor:sup_flags(), [supervisor:child_spec()]}}.
init([]) ->
    {ok, {#{strategy => simple_one_for_one, intensity => 0, period => 1},
          [#{id => riarc_dashboard, restart => temporary, shutdown => 5000,
             start => {riarc_dashboard, start_link, []}}]}}.
