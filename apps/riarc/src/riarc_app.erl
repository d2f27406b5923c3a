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
%% riarc's modules are loaded at once, not one by one as a first session reaches them:
%% each load waits for every scheduler to pass a barrier, and on a loaded node a first
%% riarc:start/3 that loaded them one by one took 3.0 to 3.5 s (two busy processes on the
%% two cores), loaded at once here 0.3 s and the start 0.2 to 0.9 s: less time with the
%% system traced while code loads, too. A module that does not load is left to fail
%% where it is used, as it would have.
-spec start(application:start_type(), term()) -> {ok, pid()} | {error, term()}.
start(_Type, _Args) ->
    _ = case application:get_key(riarc, modules) of
            {ok, Modules} -> code:ensure_modules_loaded(Modules);
            undefined -> ok
        end,
    riarc_sup:start_link().

%% @private
-spec stop(term()) -> ok.
stop(_State) ->
    ok.
