%% @doc How riarc's core reaches distribution (the app riarc_dist) without depending on
%% it: a behaviour for running a session on another node (riarc's option `node') and
%% for a session's part that follows its system onto other nodes (options `follow' and
%% `follow_joining'). The implementation is found here alone: the riarc application's
%% environment key `distribution', or else riarc_dist when it can be loaded; without one,
%% those options are an error of riarc's (`{riarc, {no_distribution, Option}}').
%% ```
%% 1> riarc_distribution:module().
%% {ok,riarc_dist}
%% 2> riarc_distribution:needed(#{follow => ['b@h']}).
%% follow
%% 3> riarc_distribution:needed(#{timeout => 1000}).
%% none
%% '''
-module(riarc_distribution).

-export([module/0, needed/1]).
-export_type([ctx/0, effect/0, next/0]).

%% What the session tells its distribution part of itself: whether its run is over,
%% whether stop/1 was asked, and whether anyone subscribed to its verdicts.
-type ctx() :: #{finished := boolean(), stopping := boolean(), subscribed := boolean()}.
%% For the session's books: an error of the run, forged messages, entries of the
%% system's processes on followed nodes as known now (for the subscribers).
-type effect() :: {error, term()} | {forged, non_neg_integer()} | {followed, [map()]}.
%% What the session does next: nothing more; see whether the run is over (the last
%% followed child may be accounted for); end the run (follow_grace is over).
-type next() :: noreply | changed | finish.

%%% Another node (riarc's option node, and the followers of option follow)

%% riarc:start/3 on Node: the local proxy of the session there.
-callback start(node(), {module(), atom(), list()}, riarc_lambda:spec(), map()) ->
    {ok, pid()} | {error, term()}.
%% riarc:attach/3 on Node: the local proxy of the session there.
-callback attach(node(), term(), riarc_lambda:spec(), map()) -> {ok, pid()} | {error, term()}.
%% The session on Node following a system of Owner's there, streaming to Owner with the
%% tag returned.
-callback follower(node(), riarc_lambda:spec(), map(), pid()) ->
    {ok, {node(), pid(), reference()}} | {error, term()}.

%%% A session's distribution part (riarc_session)

%% The part of Session (options, backend, safety limits, token, Spec); followers start
%% before the system does.
-callback session_init(pid(), map(), term(), riarc_opts:limits(), reference(), riarc_lambda:spec()) ->
    {ok, term()} | {error, term()}.
%% The root tracers' configuration, with what relaying needs.
-callback tracer_cfg(map(), term()) -> map().
%% A message the session does not know: the part's own, or `unknown'.
-callback handle_info(term(), ctx(), term()) -> {next(), term(), [effect()]} | unknown.
%% A tracer's word of a child on another node, `relayed' or with a monitor of its own.
-callback remote_child(pid(), relayed | own, map(), ctx(), term()) -> {term(), [effect()]}.
%% Every tracer here has ended: does the run wait for the part (Stopping: stop/1 asked)?
-callback wait(boolean(), term()) -> {wait | wait_closed, term()} | done.
%% The run ends (Cut: why riarc cut it short, if it did): the followers stop.
-callback stop_followers(term(), term()) -> term().
%% The system's entries on followed nodes (final: the run is over).
-callback entries(boolean(), term()) -> [map()].
%% The events relayed that no tracer here has claimed yet.
-callback held(term()) -> non_neg_integer().

%% The implementation when nothing is configured.
-define(DEFAULT, riarc_dist).

%% @doc The module implementing distribution: the riarc application's `distribution'
%% setting, or riarc_dist when it can be loaded.
-spec module() -> {ok, module()} | none.
module() ->
    M = application:get_env(riarc, distribution, ?DEFAULT),
    case code:ensure_loaded(M) of
        {module, M} -> {ok, M};
        {error, _} -> none
    end.

%% @doc The first option in Opts that needs distribution, or `none'.
-spec needed(map()) -> node | follow | follow_joining | none.
needed(Opts) ->
    Node = maps:get(node, Opts, node()),
    case {Node =/= node(), maps:get(follow, Opts, []) =/= [], maps:get(follow_joining, Opts, false) =:= true} of
        {true, _, _} -> node;
        {_, true, _} -> follow;
        {_, _, true} -> follow_joining;
        _ -> none
    end.
