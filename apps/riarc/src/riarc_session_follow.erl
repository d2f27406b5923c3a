%% @doc A session's part that follows its system onto other nodes (riarc_session), as
%% the session holds it: the distribution module's part (riarc_distribution's callbacks,
%% riarc_session_dist's by default) with its state, or `undefined' when riarc has no
%% distribution. Each call answers for both, so that the session never asks which.
%% ```
%% 1> riarc_session_follow:wait(false, undefined).
%% done
%% 2> riarc_session_follow:entries(true, undefined).
%% []
%% 3> riarc_session_follow:held(undefined).
%% 0
%% 4> riarc_session_follow:remote_child(self(), own, #{}, #{}, undefined).
%% none
%% '''
-module(riarc_session_follow).

-export([init/5, tracer_cfg/2, handle_info/3, remote_child/5, wait/2, stop_followers/2,
         entries/2, held/1]).
-export_type([t/0]).

%% The distribution module and its part's state, or none.
-type t() :: undefined | {module(), term()}.

%% @doc The distribution part (riarc_distribution), when riarc has one, of the calling
%% session, with its options, backend, safety limits, token and Spec.
-spec init(map(), riarc_backend:t(), riarc_opts:limits(), reference(), riarc_lambda:spec()) ->
    {ok, t()} | {error, term()}.
init(Opts, Backend, Limits, Token, Spec) ->
    case riarc_distribution:module() of
        {ok, Mod} ->
            case Mod:session_init(self(), Opts, Backend, Limits, Token, Spec) of
                {ok, D} -> {ok, {Mod, D}};
                {error, _} = E -> E
            end;
        none -> {ok, undefined}
    end.

%% @doc The root tracers' configuration, with what relaying needs.
-spec tracer_cfg(map(), t()) -> map().
tracer_cfg(Cfg, {Mod, D}) -> Mod:tracer_cfg(Cfg, D);
tracer_cfg(Cfg, undefined) -> Cfg.

%% @doc A message the session does not know: the part's own (its followers' streams,
%% relayed events, nodes joining, its timers), or `unknown'.
-spec handle_info(term(), riarc_distribution:ctx(), t()) ->
    {riarc_distribution:next(), t(), [riarc_distribution:effect()]} | unknown.
handle_info(Msg, Ctx, {Mod, D}) ->
    case Mod:handle_info(Msg, Ctx, D) of
        unknown -> unknown;
        {Next, D1, Fx} -> {Next, {Mod, D1}, Fx}
    end;
handle_info(_Msg, _Ctx, undefined) ->
    unknown.

%% @doc A tracer's word of a child on another node (`relayed' into its parent's
%% partition, or `own', with a monitor of its own), or `none' when nothing follows the
%% system onto other nodes.
-spec remote_child(pid(), relayed | own, map(), riarc_distribution:ctx(), t()) ->
    {t(), [riarc_distribution:effect()]} | none.
remote_child(Tracer, Kind, Info, Ctx, {Mod, D}) ->
    {D1, Fx} = Mod:remote_child(Tracer, Kind, Info, Ctx, D),
    {{Mod, D1}, Fx};
remote_child(_Tracer, _Kind, _Info, _Ctx, undefined) ->
    none.

%% @doc Every tracer here has ended and no analysis runs: whether the run waits for the
%% part (nodes being joined, children on followed nodes not accounted for yet;
%% Stopping: stop/1 asked), and whether the backend is to be closed meanwhile.
-spec wait(boolean(), t()) -> {wait | wait_closed, t()} | done.
wait(Stopping, {Mod, D}) ->
    case Mod:wait(Stopping, D) of
        {Wait, D1} -> {Wait, {Mod, D1}};
        done -> done
    end;
wait(_Stopping, undefined) ->
    done.

%% @doc The run ends (Cut: why riarc cut it short, if it did): the followers stop.
-spec stop_followers(term(), t()) -> t().
stop_followers(Cut, {Mod, D}) -> {Mod, Mod:stop_followers(Cut, D)};
stop_followers(_Cut, undefined) -> undefined.

%% @doc The system's entries on followed nodes (Finished: final, the run is over).
-spec entries(boolean(), t()) -> [map()].
entries(Finished, {Mod, D}) -> Mod:entries(Finished, D);
entries(_Finished, undefined) -> [].

%% @doc The events relayed from followed nodes that no tracer here has claimed yet.
-spec held(t()) -> non_neg_integer().
held({Mod, D}) -> Mod:held(D);
held(undefined) -> 0.
