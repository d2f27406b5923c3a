%% @doc The state space that {@link riarc_explore} searches: a model of the VM with the
%% routing-table backend ({@link riarc_backend_route}) running the RIARC tracer core
%% ({@link riarc_tracer_core}) on a system of scripted processes.
%%
%% The static part, built once per search (env/3), is what a system and an arrangement
%% of monitors fix: each process's parent, partition and local trace, the events each
%% partition's monitor expects, the tracers' configuration. The dynamic part is the
%% states, the transitions enabled in each (transitions/2), one step (step/4) and the
%% checks of a terminal state (terminal/3). riarc_explore's module doc describes the
%% model; {@link riarc_explore_por} chooses which transitions a search takes.
%%
%% A failure (a report to the session that is one, such as an invariant violation or a
%% verdict other than `none'; a terminal state that fails its checks) is thrown as
%% `{riarc_explore_model, Why, Trace}', Trace being the transitions that led to it,
%% newest first: the search ends its path there or reports it.
%% ```
%% 1> Env = riarc_explore_model:env(#{root => p, scripts => #{p => [exit]}}, [], #{}).
%% 2> S0 = riarc_explore_model:initial(Env).
%% 3> riarc_explore_model:transitions(S0, Env).
%% [{proc,p,exit}]
%% 4> S1 = riarc_explore_model:step({proc, p, exit}, S0, Env, []).
%% 5> [Tr] = riarc_explore_model:transitions(S1, Env).
%% [{deliver,p,{t,p},{trace,p,exit,normal}}]
%% 6> S2 = riarc_explore_model:step(Tr, S1, Env, []).
%% 7> riarc_explore_model:transitions(S2, Env).
%% []
%% 8> riarc_explore_model:terminal(S2, Env, []).
%% ok
%% '''
-module(riarc_explore_model).
-behaviour(riarc_monitor).

%% The static part.
-export([env/3]).
%% The dynamic part.
-export([initial/1, transitions/2, enabled/2, step/4, terminal/3, key/1, strip/1]).
%% The monitor of a partition in the model (riarc_monitor callback).
-export([analyse/2]).
-export_type([sid/0, action/0, system/0, env/0, state/0, transition/0, trace/0]).

-include("riarc_explore_process.hrl").

-type sid() :: term().
-type action() :: {spawn, sid()} | {send, sid(), term()} | {recv, term()} | exit.
-type system() :: #{root := sid(), scripts := #{sid() => [action()]}}.
%% A tracer is named after the process it was started for.
-type tracer() :: {t, sid()}.
%% What env/3 fixes for a search: see there. cfg is a tracer's configuration
%% (riarc_tracer_core:cfg()) but its `self', which each tracer's gets.
-type env() :: #{root := sid(), scripts := #{sid() => [action()]},
                 cfg := map(), monitored := [sid()],
                 expected := #{sid() => non_neg_integer()},
                 bug := none | ignore_cut, max_states := pos_integer() | infinity,
                 por := boolean(), failures := first | all,
                 parent := #{sid() => sid()},
                 senders := #{{sid(), term()} => [{sid(), pos_integer()}]},
                 own := #{sid() => true}}.
%% procs: per spawned process, its program counter and its mailbox (a sorted multiset);
%% table: per traced process, {Owner, events sent to it since the entry | exited};
%% chans: per (sender, receiver), the messages in flight, oldest first;
%% tracers: {boot, Args} before its init_tracer, {run, Core}, or stopped;
%% verdicts: the `none' verdicts the session got, sorted.
-type state() :: #{procs := #{sid() => {non_neg_integer(), [term()]}},
                   table := #{sid() => {tracer(), non_neg_integer() | exited}},
                   chans := #{{term(), term()} => [term()]},
                   tracers := #{tracer() => {boot, tuple()} | {run, riarc_tracer_core:state()}
                                           | stopped},
                   verdicts := [{sid(), non_neg_integer()}]}.
%% One process action, one tracer's start, one tracer taking the head of a channel.
-type transition() :: {proc, sid(), action()} | {boot, tracer()}
                    | {deliver, term(), tracer(), term()}.
%% The transitions so far, newest first, after the initial state's `init'.
-type trace() :: [init | transition()].

%%% ---------------------------------------------------------------------------
%%% The static part: scripts, partitions, expected traces, tracer configurations
%%% ---------------------------------------------------------------------------

mfa(S) -> ?PROCESS_MFA(S).

%% @doc What a system and an arrangement fix for a search: each process's parent and the
%% sends of each message (for the reduction), each partition's expected event count, the
%% tracers' configuration (Λ gives each monitored process this module's monitor), and the
%% options of riarc_explore:check/2 the search reads. Monitored: the non-root processes
%% with a monitor of their own.
-spec env(system(), [sid()], map()) -> env().
env(#{root := Root, scripts := Scripts}, Monitored, Opts) ->
    Parent = maps:from_list([{C, P} || {P, Sc} <- maps:to_list(Scripts), {spawn, C} <- Sc]),
    Own = [Root | Monitored],
    Senders = lists:foldl(fun({X, Sc}, Acc) ->
                                  lists:foldl(fun({I, {send, To, M}}, A) ->
                                                      maps:update_with({To, M}, fun(L) -> [{X, I} | L] end,
                                                                       [{X, I}], A);
                                                 (_, A) -> A
                                              end, Acc, lists:zip(lists:seq(1, length(Sc)), Sc))
                          end, #{}, maps:to_list(Scripts)),
    Part = maps:from_list([{S, partition(S, Own, Parent)} || S <- maps:keys(Scripts)]),
    Local = maps:from_list([{S, local(S, maps:get(S, Parent, undefined), Sc)}
                            || {S, Sc} <- maps:to_list(Scripts)]),
    Expected = maps:from_list(
                 [{P, maps:with([S || {S, P1} <- maps:to_list(Part), P1 =:= P], Local)}
                  || P <- Own]),
    Spec = fun(?PROCESS_MFA(S)) ->
                   case Expected of
                       #{S := Exp} -> {ok, {?MODULE, Exp}};
                       #{} -> undefined
                   end
           end,
    Base = #{lambda => riarc_lambda:new(Spec),
             %% Only event/2 is used, and it ignores the configuration.
             backend => riarc_backend:new(riarc_backend_route, #{table => undefined, flags => []}),
             session => session,
             checks => true,
             perturb => undefined,
             %% The model starts the tracer itself, as a later step: the core only names it.
             start_tracer => fun(Mon, C, MFA, Disp) ->
                                     T = {t, C},
                                     put({?MODULE, start, T}, {Mon, C, MFA, Disp}),
                                     T
                             end,
             init_from_spawn => true},
    Adopt = case maps:get(adopt, Opts, 0) of
                0 -> #{};
                Max -> #{adopt => fun(N) -> N < Max end}
            end,
    #{root => Root, scripts => Scripts, cfg => maps:merge(Base, Adopt), monitored => Own,
      expected => maps:map(fun(_, E) -> lists:sum([length(L) || L <- maps:values(E)]) end,
                           Expected),
      bug => maps:get(bug, Opts, none), max_states => maps:get(max_states, Opts, infinity),
      por => maps:get(por, Opts, true), failures => maps:get(failures, Opts, first),
      parent => Parent, senders => Senders,
      own => maps:from_list([{S, true} || S <- Own])}.

partition(S, Own, Parent) ->
    case lists:member(S, Own) of
        true -> S;
        false -> partition(maps:get(S, Parent), Own, Parent)
    end.

%% A process's local trace, as its monitor must see it.
local(S, Parent, Script) ->
    [{init, S, Parent, mfa(S)} |
     [case A of
          {spawn, C} -> {spawn, S, C, mfa(C)};
          {send, To, M} -> {send, S, To, M};
          {recv, M} -> {recv, S, M};
          exit -> {exit, S, normal}
      end || A <- Script]].

cfg(T, #{cfg := Base}) -> Base#{self => T}.

%% @private The partition's monitor: per process, the events still expected.
-spec analyse(riarc_event:event(), #{sid() => [riarc_event:event()]}) ->
    {next, #{sid() => [riarc_event:event()]}} | reject.
analyse(E, Exp) ->
    S = riarc_event:origin(E),
    case Exp of
        #{S := [E]} -> {next, maps:remove(S, Exp)};
        #{S := [E | Rest]} -> {next, Exp#{S := Rest}};
        #{} -> reject
    end.

%%% ---------------------------------------------------------------------------
%%% The dynamic part: states and transitions
%%% ---------------------------------------------------------------------------

%% @doc The initial state: the root spawned, traced by its tracer, which has run its
%% init_root.
-spec initial(env()) -> state().
initial(Env = #{root := Root}) ->
    T = {t, Root},
    St0 = #{procs => #{Root => {0, []}}, table => #{Root => {T, 0}}, chans => #{},
            tracers => #{}, verdicts => []},
    {Core, Fx} = riarc_tracer_core:init_root(cfg(T, Env), Root, mfa(Root),
                                             {init, Root, undefined, mfa(Root)}),
    effects(T, Fx, set_tracer(T, {run, Core}, St0), Env, [init]).

set_tracer(T, V, St = #{tracers := Ts}) -> St#{tracers := Ts#{T => V}}.

%% @doc The visited set's key of a state: an MD5 of a canonical term of it.
%% The tracers' configurations are the same in every state: leave them out of the key.
-spec key(state()) -> binary().
key(St = #{tracers := Ts}) ->
    Ts1 = maps:map(fun(_, {run, Core}) -> {run, strip(Core)}; (_, V) -> V end, Ts),
    erlang:md5(term_to_binary(St#{tracers := Ts1}, [deterministic])).

%% @doc A tracer core without its configuration, which holds funs and is the same in
%% every state: for the key, and for the reduction to walk.
-spec strip(riarc_tracer_core:state()) -> tuple().
strip(Core) ->
    setelement(cfg_pos(Core), Core, cfg).

%% Where the core keeps its configuration (the map with start_tracer): found once per
%% process, since the core is opaque.
cfg_pos(Core) ->
    case get({?MODULE, cfg_pos}) of
        undefined ->
            [Pos | _] = [I || {I, X} <- lists:zip(lists:seq(1, tuple_size(Core)), tuple_to_list(Core)),
                              is_map(X), is_map_key(start_tracer, X)],
            put({?MODULE, cfg_pos}, Pos),
            Pos;
        Pos -> Pos
    end.

%% @doc The transitions enabled in a state, in a fixed order.
-spec transitions(state(), env()) -> [transition()].
transitions(St = #{procs := Ps, tracers := Ts, chans := Cs}, #{scripts := Scripts}) ->
    [{proc, S, A} || {S, {Pc, Mbox}} <- lists:sort(maps:to_list(Ps)),
                     A <- [lists:nth(Pc + 1, maps:get(S, Scripts)) || Pc < length(maps:get(S, Scripts))],
                     enabled(A, Mbox)]
    ++ [{boot, T} || {T, {boot, _}} <- lists:sort(maps:to_list(Ts))]
    ++ [{deliver, From, To, M} || {{From, To}, [M | _]} <- lists:sort(maps:to_list(Cs)),
                                  running(To, St)].

%% @doc Whether a process with this mailbox can take this action: only a receive waits.
-spec enabled(action(), [term()]) -> boolean().
enabled({recv, M}, Mbox) -> lists:member(M, Mbox);
enabled(_, _) -> true.

running(T, #{tracers := Ts}) ->
    case Ts of
        #{T := {run, _}} -> true;
        #{} -> false
    end.

%% @doc The state after one transition; Trace, which ends with it, goes with a failure.
-spec step(transition(), state(), env(), trace()) -> state().
step({proc, S, A}, St = #{procs := Ps}, Env, Trace) ->
    {Pc, Mbox} = maps:get(S, Ps),
    proc(S, A, St#{procs := Ps#{S := {Pc + 1, Mbox}}}, Env, Trace);
step({boot, T}, St = #{tracers := Ts}, Env, Trace) ->
    {boot, {Mon, S, MFA, Disp}} = maps:get(T, Ts),
    {Core, Fx} = riarc_tracer_core:init_tracer(cfg(T, Env), Mon, S, MFA, Disp),
    effects(T, Fx, set_tracer(T, {run, Core}, St), Env, Trace);
step({deliver, From, To, M}, St = #{chans := Cs, tracers := Ts}, Env, Trace) ->
    Cs1 = case maps:get({From, To}, Cs) of
              [M] -> maps:remove({From, To}, Cs);
              [M | Rest] -> Cs#{{From, To} := Rest}
          end,
    {run, Core} = maps:get(To, Ts),
    {Core1, Fx} = riarc_tracer_core:handle(M, Core),
    effects(To, Fx, set_tracer(To, {run, Core1}, St#{chans := Cs1}), Env, Trace).

%% One action of process S: what it does, and the trace message the table sends.
proc(S, {spawn, C}, St = #{procs := Ps, table := Tab}, _Env, _Trace) ->
    Tab1 = case Tab of
               %% Tracing inheritance: the child is routed where its parent is now.
               #{S := {Owner, _}} -> Tab#{C => {Owner, 0}};
               #{} -> Tab
           end,
    emit(S, {trace, S, spawn, C, mfa(C)}, St#{procs := Ps#{C => {0, []}}, table := Tab1});
proc(S, {send, To, M}, St = #{procs := Ps}, _Env, _Trace) ->
    {Pc, Mbox} = maps:get(To, Ps),
    emit(S, {trace, S, send, M, To}, St#{procs := Ps#{To := {Pc, lists:sort([M | Mbox])}}});
proc(S, {recv, M}, St = #{procs := Ps}, _Env, _Trace) ->
    {Pc, Mbox} = maps:get(S, Ps),
    emit(S, {trace, S, 'receive', M}, St#{procs := Ps#{S := {Pc, lists:delete(M, Mbox)}}});
proc(S, exit, St, _Env, _Trace) ->
    St1 = #{table := Tab} = emit(S, {trace, S, exit, normal}, St),
    case Tab of
        #{S := {Owner, _}} -> St1#{table := Tab#{S := {Owner, exited}}};
        #{} -> St1
    end.

emit(S, Msg, St = #{table := Tab}) ->
    case Tab of
        #{S := {Owner, N}} when is_integer(N) ->
            enqueue(S, Owner, Msg, St#{table := Tab#{S := {Owner, N + 1}}});
        #{} ->
            %% Untraced (cleared) processes send nothing.
            St
    end.

enqueue(From, To, Msg, St = #{chans := Cs}) ->
    St#{chans := Cs#{{From, To} => maps:get({From, To}, Cs, []) ++ [Msg]}}.

%% The effects of one step of tracer T, in order.
effects(_T, [], St, _Env, _Trace) ->
    St;
effects(T, [{send, session, R} | Fx], St, Env, Trace) ->
    effects(T, Fx, session(R, St, Trace), Env, Trace);
effects(T, [{send, To, M} | Fx], St, Env, Trace) ->
    effects(T, Fx, enqueue(T, To, M, St), Env, Trace);
effects(T, [{detach, S, Disp} | Fx], St = #{table := Tab}, Env, Trace) ->
    %% PREEMPT: a counted change of route, atomic with S's sending of events.
    {Cut, Tab1} = case Tab of
                      #{S := {_, exited}} -> {exited, Tab#{S := {T, exited}}};
                      #{S := {_, N}} -> {{count, N}, Tab#{S := {T, 0}}};
                      #{} -> {exited, Tab}
                  end,
    Cut1 = case Env of
               #{bug := ignore_cut} -> none;
               #{} -> Cut
           end,
    effects(T, Fx, enqueue(T, Disp, {riarc_dtc, T, S, Cut1}, St#{table := Tab1}), Env, Trace);
effects(T, [{clear, S} | Fx], St = #{table := Tab}, Env, Trace) ->
    effects(T, Fx, St#{table := maps:remove(S, Tab)}, Env, Trace);
effects(T, [{started, T2, _S} | Fx], St = #{tracers := Ts}, Env, Trace) ->
    Args = erase({?MODULE, start, T2}),
    is_map_key(T2, Ts) andalso throw({?MODULE, {second_tracer, T2}, Trace}),
    effects(T, Fx, set_tracer(T2, {boot, Args}, St), Env, Trace);
effects(T, [perturb | Fx], St, Env, Trace) ->
    effects(T, Fx, St, Env, Trace);
effects(T, [{stop, Told, Stats} | Fx], St, Env, Trace) ->
    St1 = lists:foldl(fun(R, A) -> session(R, A, Trace) end, St, Told ++ [{riarc_tracer_down, T, Stats}]),
    effects(T, Fx, set_tracer(T, stopped, St1), Env, Trace).

%% What the session is told. Only `none' verdicts are kept (for the terminal check);
%% anything that is itself a failure ends the exploration at once.
session({riarc_tracer_up, _, _, _, _}, St, _Trace) -> St;
session({riarc_adopted, _, _, _, _, _}, St, _Trace) -> St;
session({riarc_tracer_down, _, _}, St, _Trace) -> St;
session({riarc_explanation, _, _}, St, _Trace) -> St;
session({riarc_partition, _, _, _}, St, _Trace) -> St;
session({riarc_root_exit, _, _, _, _}, St, _Trace) -> St;
session({riarc_verdict, _T, S, _MFA, none, _Why, N}, St = #{verdicts := Vs}, _Trace) ->
    St#{verdicts := lists:sort([{S, N} | Vs])};
session(R, _St, Trace) ->
    throw({?MODULE, R, Trace}).

own_ack(To, {riarc_rtd, _, {dtc, To, _}}) -> true;
own_ack(_, _) -> false.

%% @doc The checks of a state with no transition enabled: ok, or a failure thrown.
-spec terminal(state(), env(), trace()) -> ok.
terminal(#{tracers := Ts, chans := Cs, procs := Ps, verdicts := Vs},
         #{scripts := Scripts, expected := Expected}, Trace) ->
    Live = [T || {T, V} <- maps:to_list(Ts), V =/= stopped],
    Live =:= [] orelse throw({?MODULE, {deadlock, live_tracers, Live}, Trace}),
    Lost = maps:filter(fun({_, To}, Ms) -> [M || M <- Ms, not own_ack(To, M)] =/= [] end, Cs),
    map_size(Lost) =:= 0 orelse throw({?MODULE, {undelivered, Lost}, Trace}),
    Stuck = [S || {S, Sc} <- maps:to_list(Scripts),
                  element(1, maps:get(S, Ps, {-1, []})) =/= length(Sc)],
    Stuck =:= [] orelse throw({?MODULE, {processes_not_finished, Stuck}, Trace}),
    Want = lists:sort(maps:to_list(Expected)),
    Want =:= Vs orelse throw({?MODULE, {verdicts, #{expected => Want, got => Vs}}, Trace}),
    ok.
