%% @doc Differential property test of the sHML compiler: on random formulae (as source
%% text, so the parser is exercised too) and random traces, the compiled monitor and the
%% reference interpreter {@link riarc_shml_ref} give the same verdict.
%% ```
%% $ rebar3 eunit --module=riarc_shml_prop_tests
%% '''
-module(riarc_shml_prop_tests).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-define(NUMTESTS, 600).

%% The generators, shared with riarc_shml_patterns_prop_tests.
-export([formula/1, event/0, loop_action/2]).

compiled_equals_reference_test_() ->
    {timeout, 300,
     fun() ->
             ?assert(riarc_test_tier:quickcheck(prop_compiled_equals_reference(), {60, ?NUMTESTS}))
     end}.

prop_compiled_equals_reference() ->
    ?FORALL({Formula, Traces}, {formula(), vector(4, trace())},
            begin
                Src = "with m:f(W) monitor " ++ lists:flatten(Formula) ++ ".",
                {ok, Clauses} = riarc_shml:parse_string(Src, "random.prop"),
                MFA = {m, f, [1]},
                Ref = [riarc_shml_tests:ref_verdict(Clauses, MFA, T) || T <- Traces],
                %% (PropEr 1.2 cannot report a crashing property on OTP 25: catch here.)
                Compiled = [try riarc_shml_tests:verdict(Src, MFA, T)
                            catch C:R -> {crashed, C, R} end || T <- Traces],
                aggregate(Ref,
                          ?WHENFAIL(io:format(user, "~ts~nref:      ~p~ncompiled: ~p~n",
                                              [Src, Ref, Compiled]),
                                    Ref =:= Compiled))
            end).

%%% Traces: events over two processes, small messages

trace() ->
    ?LET({Init, Events}, {boolean(), list(event())},
         case Init of
             true -> [{init, a, b, {m, f, [1]}} | Events];
             false -> Events
         end).

event() ->
    frequency([{4, {recv, pid(), msg()}},
               {1, {recv, pid(), timeout}},
               {2, {timeout, pid()}},
               {4, {send, pid(), pid(), msg()}},
               {1, {exit, pid(), oneof([normal, crash])}},
               {1, {spawn, pid(), pid(), {m, g, [msg()]}}},
               {1, {init, pid(), pid(), {m, oneof([f, g]), [msg()]}}}]).

pid() -> frequency([{3, a}, {1, b}]).

msg() -> oneof([0, 1, 2, {t, oneof([0, 1])}]).

%%% Formulae, as text. Scope: the data variables bound so far; Recs: the recursion
%%% variables in scope, with whether a necessity separates them from their max.

formula() -> formula(0).

%% @doc A random formula in which W is bound; with Loops > 0, also (that often, against
%% the other constructs' weights of 1 to 6) maxes whose body has loops, on every message
%% (`[_ ? _] X' and `[_:_ ! _] X') or on specific ones (loop_action/2): the shape of
%% formulae whose trace patterns filter.
formula(Loops) -> ?SIZED(Size, formula(min(Size div 10 + 2, 6), ["W"], [], Loops)).

formula(0, _Scope, Recs, _L) ->
    oneof(["ff", "tt" | [R || {R, true} <- Recs]]);
formula(D, Scope, Recs, L) ->
    Guarded = [R || {R, true} <- Recs],
    frequency([{1, "ff"}, {1, "tt"}]
              ++ [{6, oneof(Guarded)} || Guarded =/= []]
              ++ [{2, ?LAZY(max_formula(D, Scope, Recs, L))} || length(Recs) < 3]
              ++ [{L, ?LAZY(loop_formula(D, Scope, Recs, L))} || L > 0, length(Recs) < 3]
              ++ [{2, ?LAZY(and_formula(D, Scope, Recs, L))},
                  {6, ?LAZY(necessity(D, Scope, Recs, L))}]).

max_formula(D, Scope, Recs, L) ->
    X = "X" ++ integer_to_list(length(Recs)),
    ?LET(Body, formula(D - 1, Scope, [{X, false} | Recs], L), ["max(", X, ". ", Body, ")"]).

loop_formula(D, Scope, Recs, L) ->
    X = "X" ++ integer_to_list(length(Recs)),
    Z = "Z" ++ integer_to_list(length(Recs)),
    ?LET({Body, Kinds}, {formula(D - 1, Scope, [{X, false} | Recs], L),
                         frequency([{1, oneof([["[_ ? _] "], ["[_:_ ! _] "],
                                               ["[_ ? _] ", "[_:_ ! _] "]])},
                                    {1, ?LET(As, non_empty(list(loop_action(Z, Scope))),
                                             lists:sublist(As, 3))}])},
         ["max(", X, ". and(", Body, [[", ", K, X] || K <- Kinds], "))"]).

%% A loop's action on specific messages (riarc_shml_patterns keeps all but the messages
%% the loops give the state back on): constants, tuples, lists, maps, repeated and bound
%% variables, guards that can be said as match specifications and guards that cannot.
-spec loop_action(string(), [string()]) -> proper_types:type().
loop_action(Z, Scope) ->
    ?LET(A, oneof(["[_ ? {t, _}] ", "[_ ? {t, 1}] ", "[_ ? 1] ", "[_ ? timeout] ",
                   "[_ ? {t, Z, Z}] ", "[_ ? [1 | _]] ", "[_ ? #{k := Z} when is_integer(Z)] ",
                   "[_ ? {t, Z} when Z > 0; Z =:= a] ",
                   "[_ ? Z when not is_tuple(Z) orelse Z =:= {t, 0}] ",
                   "[_ ? Z when element(1, Z) =:= t] ", "[_ ? Z when Z orelse Z =:= 2] ",
                   "[_ ? Z when not (Z > 1) and is_integer(Z)] ",
                   "[_ ? Z when (Z =:= 1) xor is_tuple(Z)] ",
                   "[QZ ? {t, _}] ", "[a ? 1] ", "[_:_ ! {t, _}] ", "[_:_ ! Z when Z >= 1] ",
                   "[_:b ! _] ", "[QZ:_ ! 0] "]
                  ++ [["[_ ? ", V, "] "] || V <- Scope]
                  ++ [["[", V, " ? _] "] || V <- Scope]
                  ++ [["[_ ? {t, ", V, "}] "] || V <- Scope]
                  ++ [["[_ ? {t, Z} when Z >= ", V, "] "] || V <- Scope]),
         lists:flatten(string:replace(lists:flatten(A), "Z", Z, all))).

and_formula(D, Scope, Recs, L) ->
    ?LET(Fs, vector(2, formula(D - 1, Scope, Recs, L)), ["and(", lists:join(", ", Fs), ")"]).

necessity(D, Scope, Recs, L) ->
    ?LET({Act, Bound}, action(Scope),
         ?LET(Body, formula(D - 1, lists:usort(Scope ++ Bound), [{R, true} || {R, _} <- Recs], L),
              ["[", Act, "] ", Body])).

%% An action as {Text, Variables it binds}.
action(Scope) ->
    N = integer_to_list(length(Scope)),
    ?LET({Kind, P1, P2, M, G},
         {oneof([recv, recv, send, send, exit, spawn, init, timeout]),
          proc(Scope, "P" ++ N), proc(Scope, "Q" ++ N), msg_pat(Scope, "M" ++ N),
          frequency([{2, none}, {1, guard}])},
         begin
             {Text, Pats} = case Kind of
                                recv -> {[P1, " ? ", M], [P1, M]};
                                timeout -> {[P1, " ?? timeout"], [P1]};
                                send -> {[P1, ":", P2, " ! ", M], [P1, P2, M]};
                                exit -> {[P1, " ** ", exit_pat(M)], [P1, M]};
                                spawn -> {[P1, " -> ", P2, ", m:g(", M, ")"], [P1, P2, M]};
                                init -> {[P1, " <- ", P2, ", m:_(", M, ")"], [P1, P2, M]}
                            end,
             Vars = lists:usort(lists:append([vars_in(P) || P <- Pats])),
             ?LET(Guard, guard(G, Vars, Scope), {[Text, Guard], Vars})
         end).

%% A process pattern: a pid atom, _, a variable in scope, or a fresh one.
proc(Scope, Fresh) ->
    frequency([{4, "_"}, {2, Fresh}, {1, "a"}, {1, "b"} | [{1, V} || V <- Scope]]).

msg_pat(Scope, Fresh) ->
    frequency([{4, "_"}, {2, Fresh}, {1, "0"}, {1, "1"}, {1, "{t, " ++ Fresh ++ "}"},
               {1, "timeout"},
               {1, "{t, 1}"} | [{1, V} || V <- Scope]]).

exit_pat("0") -> "normal";
exit_pat("1") -> "crash";
exit_pat(M) -> M.

vars_in(Pat) ->
    [W || W <- string:lexemes(Pat, "{}, "), is_var(W)].

is_var([C | _]) -> C >= $A andalso C =< $Z.

guard(none, _, _) -> "";
guard(guard, Vars, Scope) ->
    case lists:usort(Vars ++ Scope) of
        [] -> "";
        All -> ?LET({V1, V2, Op}, {oneof(All), oneof(All), oneof(["=:=", "=/=", "<", ">="])},
                    [" when ", V1, " ", Op, " ", V2, "; is_integer(", V1, "), ", V1, " > 1"])
    end.
