%% @doc riarc's top supervisor and the supervisor of its sessions. Sessions are
%% `temporary' children of `riarc_session_sup' (a simple_one_for_one): a session that
%% ends or crashes is not restarted, since a new session would not know the system it
%% watched; the tracers of a crashed session notice (they monitor it) and leave the
%% system untraced.
%% ```
%% 1> {ok, S} = riarc:start({riarc_demo_pqr, p, []}, fun(_) -> undefined end, #{}).
%% 2> lists:member(S, [P || {_, P, _, _} <- supervisor:which_children(riarc_session_sup)]).
%% true
%% 3> {ok, _} = riarc:stop(S).
%% '''
-module(riarc_sup).
-behaviour(supervisor).

-export([start_link/0, start_session/1, init/1]).

%% @doc Starts the top supervisor (the application does).
-spec start_link() -> {ok, pid()} | {error, term()}.
start_link() ->
    supervisor:start_link({local, riarc_sup}, ?MODULE, top).

%% @doc Starts a session under riarc_session_sup with the arguments of
%% riarc_session:start_link/1.
-spec start_session(term()) -> {ok, pid()} | {error, term()}.
start_session(Args) ->
    supervisor:start_child(riarc_session_sup, [Args]).

%% @private
-spec init(top | sessions) -> {ok, {supervisor:sup_flags(), [supervisor:child_spec()]}}.
init(top) ->
    {ok, {#{strategy => one_for_one, intensity => 5, period => 10},
          [#{id => riarc_session_sup, type => supervisor,
             start => {supervisor, start_link, [{local, riarc_session_sup}, ?MODULE, sessions]}}]}};
init(sessions) ->
    {ok, {#{strategy => simple_one_for_one, intensity => 0, period => 1},
          [#{id => riarc_session, restart => temporary, shutdown => 5000,
             start => {riarc_session, start_link, []}}]}}.
