%% @doc What a session's result tallies besides the verdicts (riarc_session): events of
%% processes nobody traced, the tracers' statistics, roots that ended abnormally,
%% invariant violations, the run's errors, and whether the backend's trace messages carry
%% a seal; and the result made of them.
%% ```
%% 1> T0 = riarc_session_tally:new(false).
%% 2> T1 = riarc_session_tally:add_error({spec, {m, f, []}, badarg}, riarc_session_tally:stats(#{collected => 3}, T0)).
%% 3> R = riarc_session_tally:result(T1, #{verdicts => [], spec => riarc_demo_monitors, tracers => #{spawned => 0, peak => 0}, events => 0, forged => 0, overload => undefined, duration_us => 1}).
%% 4> {maps:get(events, R), maps:get(errors, R)}.
%% {3,[{spec,{m,f,[]},badarg}]}
%% '''
-module(riarc_session_tally).

-export([new/1, orphan/1, add_error/2, append_error/2, violation/2, root_exit/2, stats/2,
         analysed/2, learnt/2, result/2]).
-export_type([t/0, learnt/0]).

-record(tally, {
    orphans = 0 :: non_neg_integer(),                % events of processes nobody traced
    stats = #{collected => 0, routed => 0, analysed => 0, reordered => 0} :: map(),
    root_exits = [] :: [map()],                      % roots that ended abnormally
    violations = [] :: [map()],
    errors = [] :: [term()],
    %% The backend takes a trace message anyone could have sent (no seal: the process
    %% tracers' fallback): the result says so.
    unsealed = false :: boolean()
}).

-opaque t() :: #tally{}.
%% What riarc's own processes tell the session that only the tally learns.
-type learnt() :: {riarc_tracer_down, pid(), map()}
                | {riarc_root_exit, pid(), riarc_event:sid(), riarc_event:mfa_args(), term()}
                | {riarc_violation, pid(), atom(), term(), term()}
                | {riarc_spec_error, pid(), riarc_event:mfa_args(), term()}.

%% @doc Nothing tallied yet; Unsealed: the backend's trace messages carry no seal.
-spec new(boolean()) -> t().
new(Unsealed) -> #tally{unsealed = Unsealed}.

%% @doc One more event of a process nobody traced.
-spec orphan(t()) -> t().
orphan(T = #tally{orphans = N}) -> T#tally{orphans = N + 1}.

%% @doc An error of the run (the result lists the errors in the order they came).
-spec add_error(term(), t()) -> t().
add_error(E, T = #tally{errors = Es}) -> T#tally{errors = [E | Es]}.

%% @doc An error the result lists first (why riarc cut the run short).
-spec append_error(term(), t()) -> t().
append_error(E, T = #tally{errors = Es}) -> T#tally{errors = Es ++ [E]}.

%% @doc An invariant violation, or a tracer's crash.
-spec violation(map(), t()) -> t().
violation(V, T = #tally{violations = Vs}) -> T#tally{violations = [V | Vs]}.

%% @doc A root that ended abnormally.
-spec root_exit(map(), t()) -> t().
root_exit(R, T = #tally{root_exits = Rs}) -> T#tally{root_exits = [R | Rs]}.

%% @doc An ended tracer's statistics, added up.
-spec stats(map(), t()) -> t().
stats(#{collected := C, routed := R, reordered := O} = Stats,
      T = #tally{stats = Acc = #{collected := C0, routed := R0, reordered := O0}})
  when map_size(Stats) =:= 3 ->
    %% Every tracer's, once per tracer: added up without a fold.
    T#tally{stats = Acc#{collected := C0 + C, routed := R0 + R, reordered := O0 + O}};
stats(Stats, T = #tally{stats = Acc}) ->
    T#tally{stats = maps:fold(fun(K, V, A) -> maps:update_with(K, fun(X) -> X + V end, V, A) end,
                              Acc, Stats)}.

%% @doc The events a monitor took, as its verdict counts them (in an analysis process of
%% its own or in its tracer).
-spec analysed(non_neg_integer(), t()) -> t().
analysed(N, T = #tally{stats = Stats = #{analysed := A}}) ->
    %% Once per partition: a key update, no fun.
    T#tally{stats = Stats#{analysed := A + N}}.

%% @doc What riarc's own processes tell the session that only the tally learns: a
%% tracer's statistics as it ends, a root that ended abnormally, an invariant violated
%% in a tracer and the Spec failing for a process (both logged too).
-spec learnt(learnt(), t()) -> t().
learnt({riarc_tracer_down, _Pid, Stats}, T) ->
    stats(Stats, T);
learnt({riarc_root_exit, _Tracer, Root, MFA, Reason}, T) ->
    root_exit(#{pid => Root, mfa => MFA, reason => Reason}, T);
learnt({riarc_violation, Tracer, Id, Info, State}, T) ->
    logger:error("riarc: invariant ~p violated in tracer ~p: ~0tp~n  tracer state: ~0tp",
                 [Id, Tracer, Info, State]),
    violation(#{tracer => Tracer, invariant => Id, info => Info, state => State}, T);
learnt({riarc_spec_error, Tracer, MFA, Reason}, T) ->
    logger:warning("riarc: the Spec failed for ~0tp (tracer ~p): ~0tp", [MFA, Tracer, Reason]),
    add_error({spec, MFA, Reason}, T).

%% @doc The run's result: the tally, with the verdicts, the Spec (for the warnings), the
%% tracers' counts, the events the tracers reported taking, the forged messages refused,
%% why riarc detached (if it did) and how long the run took.
-spec result(t(), #{verdicts := [map()], spec := riarc_lambda:spec(), tracers := map(),
                    events := non_neg_integer(), forged := non_neg_integer(),
                    overload := term(), duration_us := integer()}) -> map().
result(T = #tally{stats = Stats}, #{verdicts := Verdicts, spec := Spec, tracers := Tracers,
                                    events := Events, forged := Forged, overload := Over,
                                    duration_us := Duration}) ->
    riarc_result:make(#{verdicts => Verdicts,
                        warnings => riarc_result:warnings(Spec, Verdicts)
                                    ++ [{unsealed, evm} || T#tally.unsealed],
                        tracers => Tracers,
                        %% A tracer ended by the overload policy gives no statistics:
                        %% its events are known from its counts (limit max_events).
                        events => max(maps:get(collected, Stats), Events),
                        analysed => maps:get(analysed, Stats),
                        routed => maps:get(routed, Stats),
                        reordered => maps:get(reordered, Stats),
                        violations => lists:reverse(T#tally.violations),
                        errors => lists:reverse(T#tally.errors)
                                  ++ [{orphan_events, T#tally.orphans} || T#tally.orphans > 0]
                                  ++ [{riarc_session, {forged_messages, Forged}} || Forged > 0],
                        overload => Over,
                        root_exits => lists:reverse(T#tally.root_exits),
                        duration_us => Duration}).
