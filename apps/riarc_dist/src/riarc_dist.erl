%% @doc riarc across nodes: the implementation of riarc's distribution behaviour
%% ({@link riarc_distribution}), which the core finds without depending on this app.
%% Sessions on another node are riarc_remote's; a session's part that follows its
%% system onto other nodes is riarc_session_dist's (with riarc_follow's book and
%% riarc_join's watcher of nodes that come up).
%% ```
%% 1> riarc_distribution:module().
%% {ok,riarc_dist}
%% 2> riarc_dist:start(node(), {riarc_demo_pqr, p, []}, fun(_) -> undefined end, #{}).
%% {error,{riarc_remote,not_distributed}}
%% '''
-module(riarc_dist).
-behaviour(riarc_distribution).

-export([start/4, attach/4, follower/4]).
-export([session_init/6, tracer_cfg/2, handle_info/3, remote_child/5, wait/2, stop_followers/2,
         entries/2, held/1]).

%% @doc riarc:start/3 on Node (riarc_remote:start/4).
-spec start(node(), {module(), atom(), list()}, riarc_lambda:spec(), map()) ->
    {ok, pid()} | {error, term()}.
start(Node, MFA, Spec, Opts) -> riarc_remote:start(Node, MFA, Spec, Opts).

%% @doc riarc:attach/3 on Node (riarc_remote:attach/4).
-spec attach(node(), term(), riarc_lambda:spec(), map()) -> {ok, pid()} | {error, term()}.
attach(Node, Target, Spec, Opts) -> riarc_remote:attach(Node, Target, Spec, Opts).

%% @doc The session on Node following a system of Owner's (riarc_remote:follower/4).
-spec follower(node(), riarc_lambda:spec(), map(), pid()) ->
    {ok, {node(), pid(), reference()}} | {error, term()}.
follower(Node, Spec, Opts, Owner) -> riarc_remote:follower(Node, Spec, Opts, Owner).

%% @doc A session's distribution part (riarc_session_dist:init/6).
-spec session_init(pid(), map(), term(), riarc_opts:limits(), reference(), riarc_lambda:spec()) ->
    {ok, riarc_session_dist:t()} | {error, term()}.
session_init(Session, Opts, Backend, Limits, Token, Spec) ->
    riarc_session_dist:init(Session, Opts, Backend, Limits, Token, Spec).

%% @doc riarc_session_dist:tracer_cfg/2.
-spec tracer_cfg(map(), riarc_session_dist:t()) -> map().
tracer_cfg(Cfg, D) -> riarc_session_dist:tracer_cfg(Cfg, D).

%% @doc riarc_session_dist:handle_info/3.
-spec handle_info(term(), riarc_distribution:ctx(), riarc_session_dist:t()) ->
    {riarc_distribution:next(), riarc_session_dist:t(), [riarc_distribution:effect()]} | unknown.
handle_info(Msg, Ctx, D) -> riarc_session_dist:handle_info(Msg, Ctx, D).

%% @doc riarc_session_dist:remote_child/5.
-spec remote_child(pid(), relayed | own, map(), riarc_distribution:ctx(), riarc_session_dist:t()) ->
    {riarc_session_dist:t(), [riarc_distribution:effect()]}.
remote_child(Tracer, Kind, Info, Ctx, D) -> riarc_session_dist:remote_child(Tracer, Kind, Info, Ctx, D).

%% @doc riarc_session_dist:wait/2.
-spec wait(boolean(), riarc_session_dist:t()) -> {wait | wait_closed, riarc_session_dist:t()} | done.
wait(Stopping, D) -> riarc_session_dist:wait(Stopping, D).

%% @doc riarc_session_dist:stop_followers/2.
-spec stop_followers(term(), riarc_session_dist:t()) -> riarc_session_dist:t().
stop_followers(Cut, D) -> riarc_session_dist:stop_followers(Cut, D).

%% @doc riarc_session_dist:entries/2.
-spec entries(boolean(), riarc_session_dist:t()) -> [map()].
entries(Final, D) -> riarc_session_dist:entries(Final, D).

%% @doc riarc_session_dist:held/1.
-spec held(riarc_session_dist:t()) -> non_neg_integer().
held(D) -> riarc_session_dist:held(D).
