%% @doc Partial-order reduction for {@link riarc_explore}: in each state of
%% {@link riarc_explore_model}, a persistent subset of the enabled transitions, so that
%% the search reaches every terminal state and every failure of the full graph through
%% far fewer states. The sets are stubborn sets over actors (a process, a tracer), built
%% from each seed actor, the smallest taken; a process action whose route nobody can
%% switch any more, and a quiet delivery, are taken alone. riarc_explore's module doc
%% has the argument: the independence relation, read off the tracer core's code (keep
%% the two in step), and why the sets are persistent.
%%
%% Below, after P spawns Q, P's send and the delivery of the spawn event are enabled;
%% P is in its tracer's Γ, so nobody can switch its route: its send is taken alone.
%% ```
%% 1> Env = riarc_explore_model:env(#{root => p, scripts => #{p => [{spawn, q}, {send, q, req}, exit], q => [{recv, req}, exit]}}, [], #{}).
%% 2> S = riarc_explore_model:step({proc, p, {spawn, q}}, riarc_explore_model:initial(Env), Env, []).
%% 3> Trs = riarc_explore_model:transitions(S, Env).
%% 4> length(Trs).
%% 2
%% 5> riarc_explore_por:reduce(Trs, S, Env).
%% [{proc,p,{send,q,req}}]
%% 6> riarc_explore_por:reduce(Trs, S, Env#{por := false}) =:= Trs.
%% true
%% '''
-module(riarc_explore_por).

-export([reduce/3]).

-include("riarc_explore_process.hrl").

-import(riarc_explore_model, [enabled/2, strip/1]).

%%% ---------------------------------------------------------------------------
%%% Partial-order reduction: persistent sets (see riarc_explore's module doc)
%%% ---------------------------------------------------------------------------

%% An actor is a process ({p, S}) or a tracer ({t, T}); every transition is one actor's.
actor({proc, S, _}) -> {p, S};
actor({boot, T}) -> {t, T};
actor({deliver, _, T, _}) -> {t, T}.

%% @doc A persistent subset of the enabled transitions Trs (non-empty when Trs is):
%% Trs itself with `por => false'.
-spec reduce([riarc_explore_model:transition()], riarc_explore_model:state(),
             riarc_explore_model:env()) -> [riarc_explore_model:transition()].
reduce(Trs, _St, #{por := false}) -> Trs;
reduce([_] = Trs, _St, _Env) -> Trs;
reduce(Trs, St = #{tracers := Ts}, Env) ->
    %% Γ-owner: the tracer that has the process in its Γ (at most one, ever).
    Gamma = maps:from_list([{S, T} || {T, {run, Core}} <- maps:to_list(Ts),
                                      S <- riarc_tracer_core:gamma(Core)]),
    Ctx = ctx(St, Env, Gamma),
    case [Tr || Tr = {proc, S, _} <- Trs, detachers(S, Ctx) =:= []]
         ++ [Tr || Tr = {deliver, _, _, _} <- Trs, quiet(Tr, Ts)] of
        [Tr | _] ->
            %% A process whose route nobody can switch any more commutes with every
            %% other actor; so does a quiet delivery (see quiet/2).
            [Tr];
        [] ->
            Seeds = lists:usort([actor(Tr) || Tr <- Trs]),
            {_, Best} = lists:foldl(
                          fun(Seed, {Size, _} = Acc) ->
                                  Q = closure([Seed], #{}, Ctx),
                                  Sel = [Tr || Tr <- Trs, is_map_key(actor(Tr), Q)],
                                  case length(Sel) of
                                      L when L < Size -> {L, Sel};
                                      _ -> Acc
                                  end
                          end, {length(Trs) + 1, Trs}, Seeds),
            Best
    end.

%% A delivery is quiet when it only feeds the partition's monitor an event of a process
%% the tracer traces itself.
quiet({deliver, S, T, {trace, S, 'receive', _}}, Ts) ->
    quiet_for(S, maps:get(T, Ts));
quiet({deliver, S, T, {trace, S, send, _, _}}, Ts) ->
    quiet_for(S, maps:get(T, Ts));
quiet(_, _) -> false.

quiet_for(S, {run, Core}) ->
    riarc_tracer_core:mode(Core) =:= direct andalso
        lists:member(S, riarc_tracer_core:gamma(Core)) andalso
        not is_map_key(S, maps:get(pi, riarc_tracer_core:state_map(Core))).

ctx(St = #{tracers := Ts, chans := Cs}, Env, Gamma) ->
    Live = [T || {T, V} <- maps:to_list(Ts), V =/= stopped],
    %% A held route (short routes: the packets wait for the tracer that will ask for
    %% them) may go to any tracer: its requester is not known before its dtc arrives.
    Pi = maps:from_list([{T, [case R of {held, _} -> any; _ -> R end
                              || R <- maps:values(maps:get(pi, riarc_tracer_core:state_map(Core)))]}
                         || {T, {run, Core}} <- maps:to_list(Ts)]),
    %% Tracers that a routed spawn event in flight may make someone send a dtc to.
    Disps = lists:usort([D || Ms <- maps:values(Cs),
                              {riarc_rtd, D, {evt, {spawn, _, _, _}}} <- Ms]),
    erase({?MODULE, held}),
    #{st => St, env => Env, gamma => Gamma, live => Live, pi => Pi, disps => Disps}.

%% The actors whose future transitions a persistent set must take in with Seed's.
closure([], Q, _Ctx) -> Q;
closure([A | Rest], Q, Ctx) ->
    case Q of
        #{A := _} -> closure(Rest, Q, Ctx);
        #{} -> closure(deps(A, Ctx) ++ Rest, Q#{A => true}, Ctx)
    end.

%% deps(A): the actors that may, before any transition of A, take a transition dependent
%% on one of A's enabled ones, or enable one of A's disabled ones.
deps({p, S}, Ctx = #{st := #{procs := Ps}, env := #{scripts := Scripts, parent := Parent}}) ->
    Script = maps:get(S, Scripts),
    case Ps of
        #{S := {Pc, _}} when Pc >= length(Script) -> [];
        #{S := {Pc, Mbox}} ->
            A = lists:nth(Pc + 1, Script),
            case enabled(A, Mbox) of
                true -> [{t, T} || T <- detachers(S, Ctx)];
                false -> {recv, M} = A, senders(S, M, Ctx)
            end;
        #{} ->
            %% Not spawned yet: its parent must act first.
            [{p, maps:get(S, Parent)}]
    end;
deps({t, T}, Ctx = #{st := #{tracers := Ts}, live := Live, pi := Pi, disps := Disps}) ->
    case Ts of
        #{T := {boot, {_Mon, S, _MFA, _Disp}}} -> [{p, S}];
        #{T := {run, _}} ->
            %% Its enabled deliveries may detach a process it may be the detacher of;
            %% its other channels may be filled by the processes that may have it as
            %% owner and by the tracers that may send to it.
            Senders = case lists:member(T, Disps) of
                          true -> Live;
                          false -> [X || X <- Live,
                                         case Ts of
                                             #{X := {boot, {_, _, _, T}}} -> true;
                                             #{X := {run, _}} ->
                                                 Routes = maps:get(X, Pi),
                                                 lists:member(T, Routes) orelse lists:member(any, Routes);
                                             #{} -> false
                                         end]
                      end,
            [{p, X} || X <- may_own(T, Ctx)] ++ [{t, X} || X <- Senders, X =/= T];
        #{} -> []
    end.

%% The tracers that may yet switch S's route: none once S is in a Γ; its own tracer, if
%% S is monitored and that tracer exists; else the Γ-owner of its parent (the only one
%% that may handle its spawn event with no route for the parent, I21); any if unknown.
detachers(S, Ctx = #{st := #{tracers := Ts}, env := #{own := Own, parent := Parent},
                     gamma := Gamma}) ->
    case Gamma of
        #{S := _} -> [];
        #{} ->
            case {is_map_key(S, Own), Ts} of
                {true, #{{t, S} := {boot, _}}} -> [{t, S}];
                {true, #{{t, S} := _}} -> [];
                {Mon, _} -> holders(S, maps:get(S, Parent), Mon, Ctx)
            end
    end.

%% The tracers that may hold the spawn event of C by P: the receiver of the channel it is
%% in, or else every tracer whose state has the event or its trace message somewhere
%% (held back in priority mode or for reordering; a monitor's expectations may name it
%% too, which only makes the answer larger). Until one of them takes a step, nobody else
%% can handle that event, hence nobody else can switch C's route or start its tracer.
holders(C, P, Mon, #{st := #{chans := Cs, tracers := Ts}, live := Live, gamma := Gamma}) ->
    case [{To, M} || {{_, To}, Ms} <- maps:to_list(Cs), M <- Ms, carries_spawn(M, P, C)] of
        [{To, {trace, _, _, _, _}}] when not Mon, map_get(P, Gamma) =:= To ->
            %% A direct-mode tracer (it never leaves that mode) that traces P handles
            %% the event itself: it takes C into its Γ, switching nothing.
            case Ts of
                #{To := {run, Core}} ->
                    case riarc_tracer_core:mode(Core) of
                        direct -> [];
                        priority -> [To]
                    end;
                #{} -> [To]
            end;
        [{To, _} | _] -> [To];
        [] ->
            case [T || {T, Spawns} <- held(Ts), is_map_key({P, C}, Spawns)] of
                [] -> Live;
                Hs -> Hs
            end
    end.

carries_spawn({trace, P, spawn, C, _}, P, C) -> true;
carries_spawn({riarc_rtd, _, {evt, {spawn, P, C, _}}}, P, C) -> true;
carries_spawn(_, _, _) -> false.

%% Per running tracer, the spawn events (P, C) its state holds anywhere: found once per
%% state, when first asked for (ctx/3 forgets the last state's).
held(Ts) ->
    case get({?MODULE, held}) of
        undefined ->
            Held = [{T, spawns_in(strip(Core), #{})} || {T, {run, Core}} <- maps:to_list(Ts)],
            put({?MODULE, held}, Held),
            Held;
        Held -> Held
    end.

%% The spawn events anywhere in a term, as an event or as its trace message: {P, C} keys.
spawns_in({spawn, P, C, MFA}, Acc) when MFA =:= ?PROCESS_MFA(C) ->
    Acc#{{P, C} => true};
spawns_in({trace, P, spawn, C, MFA}, Acc) when MFA =:= ?PROCESS_MFA(C) ->
    Acc#{{P, C} => true};
spawns_in(T, Acc) when is_tuple(T) ->
    spawns_in(tuple_to_list(T), Acc);
spawns_in([H | T], Acc) ->
    spawns_in(T, spawns_in(H, Acc));
spawns_in(M, Acc) when is_map(M) ->
    spawns_in(maps:to_list(M), Acc);
spawns_in(F, Acc) when is_function(F) ->
    %% What a closure captured is in the state too.
    {env, Env} = erlang:fun_info(F, env),
    spawns_in(Env, Acc);
spawns_in(_, Acc) ->
    Acc.

senders(S, M, #{st := #{procs := Ps}, env := #{senders := Senders}}) ->
    [{p, X} || {X, I} <- maps:get({S, M}, Senders, []),
               case Ps of #{X := {Pc, _}} -> I > Pc; #{} -> true end].

%% Processes with actions left that may send trace messages to T.
may_own(T, Ctx = #{st := #{procs := Ps}, env := #{scripts := Scripts}}) ->
    [X || {X, Sc} <- maps:to_list(Scripts),
          case Ps of
              #{X := {Pc, _}} -> Pc < length(Sc);
              #{} -> true
          end,
          may_own1(T, X, Ctx)].

may_own1(T, X, Ctx = #{st := #{procs := Ps, table := Tab}, env := #{parent := Parent}}) ->
    case Tab of
        #{X := {T, _}} -> true;
        #{} ->
            lists:member(T, detachers(X, Ctx)) orelse
                (not is_map_key(X, Ps) andalso may_own1(T, maps:get(X, Parent), Ctx))
    end.
