%% @doc The riarc application: its supervision tree holds every monitoring session, so
%% that sessions are OTP processes (crash reports, shutdown with the node) and outlive
%% the process that started them only as long as it is alive (each session monitors its
%% owner). `riarc:start/3' and `riarc:run/3' start the application when it is not running.
%% ```
%% 1> {ok, _} = application:ensure_all_started(riarc).
%% 2> [{Id, Type} || {Id, _, Type, _} <- supervisor:which_children(riarc_sup)].
%% [{riarc_session_sup,supervisor}]
%% '''
-module(riarc_app).
-behaviour(application).

-export([start/2, stop/1]).

%% @private
-spec start(application:start_type(), term()) -> {ok, pid()} | {error, term()}.
start(_Type, _Args) ->
    riarc_sup:start_link().

%% @private
-spec stop(term()) -> ok.
stop(_State) ->
    ok.
