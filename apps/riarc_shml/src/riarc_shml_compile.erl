%% @doc The sHML compiler: checks the clauses {@link riarc_shml_parser} returns (scoping,
%% guards, patterns, constructs) and turns them into an Erlang module, in abstract format,
%% that is compiled with `compile:forms/2'.
%%
%% A monitor's state is a list of pending necessities `{I, Env}': necessity number I of
%% the file, with the values of the variables it needs (a tuple), or `ff'. Each necessity
%% becomes one clause of `nec/3' whose head is the action's pattern over the event, so
%% matching an event is ordinary Erlang pattern matching; a matching clause returns the
%% continuation's pending necessities, and no clause matching is `nomatch' (no further
%% obligation). `max(X. F)' becomes a function `rec_J' of the variables F needs, called
%% where X occurs. A verdict comes with its words (riarc_monitor:decide/2): which
%% necessity reached ff (its place in the file), that tt was reached, that the process
%% exited, or that no necessity named the event (an accept that holds vacuously). A reject
%% by a necessity also names its file and line as data (`clause => {File, Line}'), which
%% the verdict's why map carries for charts and machines.
%% ```
%% 1> {ok, Cs} = riarc_shml:parse_string("with m:f() monitor [P ? x][P:_ ! y]ff.", "t").
%% 2> {ok, Bin} = riarc_shml_compile:binary(Cs, t, "t").
%% 3> {module, t} = code:load_binary(t, "t", Bin).
%% 4> {ok, M0} = t:spec({m, f, []}), M1 = M0({recv, a, x}), M1({send, a, b, y}).
%% {reject,<<"ff reached after the necessity at t:1:27">>,#{clause => {"t",1}}}
%% 5> t:trace_flags().
%% [recv,send]
%% '''
-module(riarc_shml_compile).

-export([check/1, warnings/1, format_warning/2, forms/3, binary/3, kinds/1]).

-define(A0, erl_anno:new(1)).

%%% Checking

%% @doc Checks scoping, guards, patterns and constructs; the first error found, with its
%% {Line, Column}, or ok.
-spec check([riarc_shml:clause()]) -> ok | {error, riarc_shml:loc(), string()}.
check(Clauses) ->
    try
        lists:foreach(fun check_clause/1, Clauses)
    catch
        throw:{shml_error, Loc, Msg} -> {error, Loc, Msg}
    end.

check_clause({clause, _, Target, Formula}) ->
    Bound = check_target(Target),
    check_formula(Formula, Bound, #{}).

check_target({call, _, M, F, Args}) ->
    lists:foreach(fun name_pattern/1, [M, F]),
    lists:foreach(fun check_pattern/1, Args),
    pattern_vars(Args);
check_target({badcall, _, M, E}) ->
    fail(first_loc([M, E]), "the with pattern must be a call Module:Function(Patterns)");
check_target({other, E}) ->
    fail(first_loc(E), "the with pattern must be a call Module:Function(Patterns)").

name_pattern({atom, _, _}) -> ok;
name_pattern({var, _, _}) -> ok;
name_pattern(E) -> fail(first_loc(E), "a module or function name must be an atom or a variable").

check_formula({ff, _}, _, _) -> ok;
check_formula({tt, _}, _, _) -> ok;
check_formula({rvar, A, X}, Bound, Rec) ->
    case Rec of
        #{X := true} -> ok;
        #{X := false} ->
            fail(A, flat("recursion variable ~ts is not guarded: it must occur after a "
                         "necessity [Action] inside max(~ts. ...)", [X, X]));
        _ ->
            case lists:member(X, Bound) of
                true -> fail(A, flat("~ts is a data variable; only a variable bound by "
                                     "max(~ts. ...) can stand for a formula", [X, X]));
                false -> fail(A, flat("unbound recursion variable ~ts", [X]))
            end
    end;
check_formula({max, _, X, F}, Bound, Rec) ->
    check_formula(F, Bound, Rec#{X => false});
check_formula({'and', _, Fs}, Bound, Rec) ->
    lists:foreach(fun(F) -> check_formula(F, Bound, Rec) end, Fs);
check_formula({nec, _, Act, F}, Bound, Rec) ->
    Bound1 = check_action(Act, Bound),
    check_formula(F, Bound1, maps:map(fun(_, _) -> true end, Rec));
check_formula({unknown, A, Name, Args}, _, _) ->
    What = case Args of none -> atom_to_list(Name);
                        _ -> flat("~ts/~b", [Name, length(Args)]) end,
    Why = case Name of
              'or' -> " (sHML, the safety fragment, has no disjunction)";
              'not' -> " (sHML has no negation)";
              true -> " (did you mean tt?)";
              false -> " (did you mean ff?)";
              _ -> ""
          end,
    fail(A, flat("unknown construct ~ts~ts; a formula is ff, tt, X, max(X. F), "
                 "and(F1, ..., Fk) or [Action]F", [What, Why])).

check_action({act, _, Kind, Fields, Guard}, Bound) ->
    Pats = action_patterns(Kind, Fields),
    lists:foreach(fun check_pattern/1, Pats),
    Bound1 = lists:usort(Bound ++ pattern_vars(Pats)),
    lists:foreach(fun(Tests) -> lists:foreach(fun(T) -> check_guard(T, Bound1) end, Tests) end,
                  Guard),
    Bound1.

action_patterns(Kind, [P, C, {call, _, M, F, Args}]) when Kind =:= spawn; Kind =:= init ->
    name_pattern(M),
    name_pattern(F),
    [P, C, M, F | Args];
action_patterns(Kind, [_, _, {badcall, _, M, Call}]) when Kind =:= spawn; Kind =:= init ->
    fail(first_loc([M, Call]), "expected the spawned call Module:Function(Patterns)");
action_patterns(_, Fields) -> Fields.

check_guard(Test, Bound) ->
    _ = [fail(A, flat("variable '~ts' is unbound", [V]))
     || {V, A} <- all_vars(Test), not lists:member(V, Bound)],
    case erl_lint:is_guard_test(Test) of
        true -> ok;
        false -> fail(first_loc(Test), "illegal guard expression (only guard tests and guard "
                                  "BIFs are allowed after when)")
    end.

check_pattern({var, _, _}) -> ok;
check_pattern({atom, _, _}) -> ok;
check_pattern({integer, _, _}) -> ok;
check_pattern({float, _, _}) -> ok;
check_pattern({char, _, _}) -> ok;
check_pattern({string, _, _}) -> ok;
check_pattern({nil, _}) -> ok;
check_pattern({cons, _, H, T}) -> check_pattern(H), check_pattern(T);
check_pattern({tuple, _, Es}) -> lists:foreach(fun check_pattern/1, Es);
check_pattern({match, _, L, R}) -> check_pattern(L), check_pattern(R);
check_pattern({op, _, Op, {N, _, _}}) when (Op =:= '-' orelse Op =:= '+'),
                                           (N =:= integer orelse N =:= float
                                            orelse N =:= char) -> ok;
check_pattern({op, _, '++', {S, _, _}, R}) when S =:= string -> check_pattern(R);
check_pattern({op, _, '++', {nil, _}, R}) -> check_pattern(R);
check_pattern({bin, _, Elements}) ->
    lists:foreach(fun({bin_element, _, E, _Size, _Types}) -> check_pattern(E) end, Elements);
check_pattern({map, _, Fields}) ->
    lists:foreach(fun({map_field_exact, _, _K, V}) -> check_pattern(V);
                     ({map_field_assoc, _, _, _} = Field) ->
                          fail(first_loc(Field), "a map pattern uses := (Key := Pattern), not =>")
                  end, Fields);
check_pattern(E) -> fail(first_loc(E), "illegal pattern").

-spec fail(riarc_shml:loc(), string()) -> no_return().
fail(Loc, Msg) -> throw({shml_error, Loc, Msg}).

%%% Warnings

%% @doc What is legal but most likely not meant, with its place: a variable in the
%% module position of a call pattern (`with Bank:init(_)', or a spawn or init action) that
%% occurs nowhere else in its clause. It matches every module; a capitalised module name,
%% such as an Elixir module's, must be quoted: `'Elixir.Bank':init(_)'.
-spec warnings([riarc_shml:clause()]) -> [{riarc_shml:loc(), string()}].
warnings(Clauses) ->
    lists:append([clause_warnings(C) || C <- Clauses]).

clause_warnings({clause, _, Target, Formula} = C) ->
    Counts = lists:foldl(fun({V, _}, Acc) -> maps:update_with(V, fun(N) -> N + 1 end, 1, Acc) end,
                         #{}, all_vars(C)),
    Calls = [{with, Target} | [{action, Call} || {act, _, K, [_, _, Call], _} <- subterms(Formula),
                                                 K =:= spawn orelse K =:= init]],
    [{loc(A), module_variable_warning(V, Where, F, length(Args))}
     || {Where, {call, _, {var, A, V}, F, Args}} <- Calls, V =/= '_', maps:get(V, Counts) =:= 1].

module_variable_warning(V, Where, F, Arity) ->
    Fun = case F of {atom, _, Name} -> io_lib:format("~tp", [Name]); _ -> "F" end,
    What = case Where of with -> "`with'"; action -> "the action" end,
    Args = lists:join(", ", lists:duplicate(Arity, "_")),
    flat("~ts in ~ts is a variable: it matches every module's ~ts/~b. To name the Elixir "
         "module ~ts write '~ts':~ts(~ts) (an Erlang module named ~ts: '~ts':~ts(~ts))",
         [V, What, Fun, Arity, V, elixir_name(V), Fun, Args, V, V, Fun, Args]).

%% @doc A warning as one sentence: `FILE:LINE:COLUMN: warning: ...'.
-spec format_warning(file:filename(), {riarc_shml:loc(), string()}) -> string().
format_warning(File, {{Line, Col}, Msg}) ->
    flat("~ts:~b:~b: warning: ~ts", [File, Line, Col, Msg]).

%% Elixir's modules are atoms 'Elixir.Name'.
elixir_name(V) ->
    case atom_to_list(V) of
        "Elixir." ++ _ = N -> N;
        N -> "Elixir." ++ N
    end.

subterms(T) when is_tuple(T) -> [T | subterms(tuple_to_list(T))];
subterms(L) when is_list(L) -> lists:append([subterms(X) || X <- L]);
subterms(_) -> [].

%%% Variables

%% All variable occurrences {Name, Anno} in an abstract term, `_' included.
all_vars({var, A, V}) when is_atom(V) -> [{V, A}];
all_vars(T) when is_tuple(T) -> all_vars(tuple_to_list(T));
all_vars([H | T]) -> all_vars(H) ++ all_vars(T);
all_vars(_) -> [].

%% The names of the variables in a term, without `_'.
names(Term) -> lists:usort([V || {V, _} <- all_vars(Term), V =/= '_']).

pattern_vars(Pats) -> names(Pats).

%%% Event kinds

%% @doc The message event kinds (send, recv) a formula mentions (see
%% riarc_shml_patterns:kinds/1).
-spec kinds(tuple()) -> [send | recv].
kinds(F) -> riarc_shml_patterns:kinds(F).

%%% Code generation

%% @doc The module's forms.
-spec forms([riarc_shml:clause()], module(), file:filename()) -> [erl_parse:abstract_form()].
forms(Clauses, Mod, File) ->
    Indexed = lists:zip(lists:seq(1, length(Clauses)), Clauses),
    St0 = #{nec => 0, max => 0, necs => [], recs => [], where => []},
    {SpecClauses, St} = lists:mapfoldl(fun spec_clause/2, St0, Indexed),
    #{necs := Necs, recs := Recs, where := Where} = St,
    A = ?A0,
    Any = {var, A, '_'},
    Kinds = [{I, kinds(C)} || {I, C} <- Indexed],
    Flags = lists:usort(lists:append([K || {_, K} <- Kinds])),
    Mentions = [{I, riarc_shml_patterns:mentions(C)} || {I, C} <- Indexed],
    Self = {var, A, 'Self'},
    %% Per clause, the events of a kind it does not mention are not seen, except its
    %% process's own exit.
    Visible = lists:append(
                [[{clause, A, [{integer, A, I}, {tuple, A, [{atom, A, exit}, Self, Any]}, Self],
                   [], [{atom, A, true}]} || not lists:member(exit, Ms)]
                 ++ [{clause, A, [{integer, A, I}, Pat, Any], [], [{atom, A, false}]}
                     || K <- event_kinds(), not lists:member(K, Ms), Pat <- event_any(K)]
                 || {I, Ms} <- Mentions])
        ++ [{clause, A, [Any, Any, Any], [], [{atom, A, true}]}],
    %% Whether the start (the first event, the process's init or attached) is an
    %% ordinary event for the clause: only when it mentions init.
    Start = [{clause, A, [{integer, A, I}], [], [{atom, A, lists:member(init, Ms)}]}
             || {I, Ms} <- Mentions] ++ [{clause, A, [Any], [], [{atom, A, false}]}],
    [{attribute, A, file, {File, 1}},
     {attribute, A, module, Mod},
     {attribute, A, export, [{spec, 1}, {trace_flags, 0}, {trace_patterns, 0}, {analysis, 0},
                             {clauses, 0}, {clauses, 1}, {warnings, 0}]},
     {function, A, clauses, 0, [{clause, A, [], [], [erl_parse:abstract(clause_list(Indexed, File))]}]},
     {function, A, clauses, 1, [{clause, A, [{var, A, 'MFA'}], [], [matching(Indexed)]}]},
     {function, A, warnings, 0,
      [{clause, A, [], [], [erl_parse:abstract([format_warning(File, W)
                                                || W <- warnings(Clauses)])]}]},
     {function, A, spec, 1, SpecClauses ++ [{clause, A, [Any], [], [{atom, A, undefined}]}]},
     {function, A, trace_flags, 0, [{clause, A, [], [], [erl_parse:abstract(Flags)]}]},
     {function, A, trace_patterns, 0,
      [{clause, A, [], [], [erl_parse:abstract(riarc_shml_patterns:module(Clauses))]}]},
     %% A step is pattern matches and guard tests over the event and the pending
     %% obligations: bounded, so the monitors run in their tracers (riarc's `analysis').
     {function, A, analysis, 0, [{clause, A, [], [], [{atom, A, inline}]}]},
     {function, A, '$visible', 3, Visible},
     {function, A, '$start', 1, Start},
     {function, A, '$nec', 3,
      lists:reverse(Necs) ++ [{clause, A, [Any, Any, Any], [], [{atom, A, nomatch}]}]},
     %% A reject's words: where the necessity that reached ff stands in the property
     %% file. Words are binaries, literals of the module (riarc_monitor:decide/2).
     {function, A, '$where', 1,
      [{clause, A, [{integer, A, I}], [], [erl_parse:abstract(ff_words(flat("~ts:~b:~b", [File, L, Col])))]}
       || {I, {L, Col}} <- lists:reverse(Where)]
      ++ [{clause, A, [Any], [], [erl_parse:abstract(ff_words(File))]}]},
     %% The same place as data, for a verdict's why map (`clause => {File, Line}').
     {function, A, '$clause', 1,
      [{clause, A, [{integer, A, I}], [], [erl_parse:abstract({File, L})]}
       || {I, {L, _Col}} <- lists:reverse(Where)]
      ++ [{clause, A, [Any], [], [erl_parse:abstract({File, 1})]}]}]
        ++ lists:reverse(Recs) ++ scaffolding().

%% `clauses/0': each `with' clause's number, place and pattern, as text.
clause_list(Indexed, File) ->
    [{I, flat("~ts:~b:~b", [File, L, C]), with_text(T)}
     || {I, {clause, Loc, T, _}} <- Indexed, {L, C} <- [loc(Loc)]].

with_text({call, A, M, F, Args}) ->
    lists:flatten(erl_pp:expr({call, A, {remote, A, M, F}, Args})).

%% `clauses(MFA)': the numbers of the clauses whose `with' pattern MFA matches (Λ uses
%% the first of them).
matching(Indexed) ->
    A = ?A0,
    lists:foldr(fun({I, {clause, _, {call, CA, M, F, Args0}, _}}, Rest) ->
                        {Args, Guard} = atomlike(Args0, []),
                        Case = {'case', A, {var, A, 'MFA'},
                                [{clause, A, [{tuple, CA, [M, F, list_expr(Args, CA)]}], Guard,
                                  [{cons, A, {integer, A, I}, {nil, A}}]},
                                 {clause, A, [{var, A, '_'}], [], [{nil, A}]}]},
                        {op, A, '++', Case, Rest}
                end, {nil, A}, Indexed).

event_kinds() -> [init, spawn, exit, send, recv, timeout].

%% The events of a kind. An attached event starts a process as init does.
event_any(K) ->
    Any = {var, ?A0, '_'},
    Arity = #{init => 3, spawn => 3, exit => 2, send => 3, recv => 2, timeout => 1},
    [{tuple, ?A0, [{atom, ?A0, K} | lists:duplicate(maps:get(K, Arity), Any)]}]
        ++ [{tuple, ?A0, [{atom, ?A0, attached}, Any, Any]} || K =:= init].

%% @doc Compiles the clauses to a .beam binary for module Mod; compiler errors are given
%% at their place in the property file.
-spec binary([riarc_shml:clause()], module(), file:filename()) ->
    {ok, binary()} | {error, riarc_shml:loc(), string()}.
binary(Clauses, Mod, File) ->
    Opts = [binary, return_errors, nowarn_unused_vars, nowarn_unused_function,
            nowarn_shadow_vars, no_error_module_mismatch, {source, File}],
    case compile:forms(forms(Clauses, Mod, File), Opts) of
        {ok, Mod, Bin} -> {ok, Bin};
        {ok, Mod, Bin, _Warnings} -> {ok, Bin};
        {error, [{_, [{Loc, EMod, Desc} | _]} | _], _} ->
            {error, loc(Loc), lists:flatten(EMod:format_error(Desc))}
    end.

loc({L, C}) -> {L, C};
loc(L) when is_integer(L) -> {L, 1};
loc(_) -> {1, 1}.

spec_clause({Ci, {clause, A, {call, _, M, F, Args}, Formula}}, St0) ->
    Scope = pattern_vars(Args),
    {Cont, St} = cont(Formula, Scope, #{}, St0),
    {Args1, Guard} = atomlike(Args, []),
    Head = {tuple, A, [M, F, list_expr(Args1, A)]},
    Body = {tuple, A, [{atom, A, ok},
                       {call, A, {atom, A, '$mon'}, [{integer, A, Ci}, to_expr(Cont, A)]}]},
    {{clause, A, [Head], Guard, [Body]}, St}.

%% The continuation of a formula: ff | {list, [PendingExpr]} | {dyn, Expr}. A formula
%% that can never reach ff is tt: nothing is left pending for it.
cont(F, Scope, Rec, St) ->
    case can_fail(F, Rec) of
        true -> cont1(F, Scope, Rec, St);
        false -> {{list, []}, St}
    end.

cont1({ff, _}, _, _, St) -> {ff, St};
cont1({rvar, A, X}, _, Rec, St) ->
    #{X := {J, Params, _}} = Rec,
    {{dyn, {call, A, {atom, A, rec_name(J)}, vars(Params, A)}}, St};
cont1({max, A, X, Body} = F, Scope, Rec, #{max := J0} = St0) ->
    J = J0 + 1,
    Params = fv(F, Scope, Rec),
    {BodyCont, St1} = cont(Body, Params, Rec#{X => {J, Params, true}}, St0#{max := J}),
    Fun = {function, A, rec_name(J), length(Params),
           [{clause, A, vars(Params, A), [], [to_expr(BodyCont, A)]}]},
    #{recs := Recs} = St1,
    {{dyn, {call, A, {atom, A, rec_name(J)}, vars(Params, A)}}, St1#{recs := [Fun | Recs]}};
cont1({'and', A, Fs}, Scope, Rec, St0) ->
    {Conts, St} = lists:mapfoldl(fun(F, S) -> cont(F, Scope, Rec, S) end, St0, Fs),
    {lists:foldl(fun(C, Acc) -> conj(Acc, C, A) end, {list, []}, Conts), St};
cont1({nec, A, {act, _, Kind, Fields, Guard}, Body} = F, Scope, Rec, #{nec := I0} = St0) ->
    I = I0 + 1,
    Params = fv(F, Scope, Rec),
    Pats = action_patterns(Kind, Fields),
    {BodyCont, St1} = cont(Body, lists:usort(Params ++ pattern_vars(Pats)), Rec,
                           St0#{nec := I}),
    {Fields1, Guard1} = atomlike_fields(Kind, Fields, Guard),
    Clause = {clause, A, [{integer, A, I}, event_pattern(Kind, Fields1, A),
                          {tuple, A, vars(Params, A)}],
              Guard1, [to_expr(BodyCont, A)]},
    #{necs := Necs, where := Where} = St1,
    Pending = {tuple, A, [{integer, A, I}, {tuple, A, vars(Params, A)}]},
    {{list, [Pending]}, St1#{necs := [Clause | Necs], where := [{I, loc(A)} | Where]}}.

%%% Atoms a trace file names and this node does not know

%% Offline, an atom this node does not have reads as {riarc_unknown_atom, Name}. A
%% property treats it as the atom it stands for: `_' and variables match it, it equals
%% itself and no other atom, no tuple pattern matches it, and is_atom/1 (is_tuple/1) in a
%% guard says it is (is not) an atom. The rewritten patterns and guard of an action's
%% fields (the MFA's arguments for spawn and init) say so.
atomlike_fields(Kind, [P, C, {call, A, M, F, Args}], Guard) when Kind =:= spawn; Kind =:= init ->
    {[P1, C1 | Args1], G} = atomlike([P, C | Args], Guard),
    {[P1, C1, {call, A, M, F, Args1}], G};
atomlike_fields(_Kind, Fields, Guard) ->
    atomlike(Fields, Guard).

%% Patterns and a guard sequence: each two-element tuple pattern gets a name, and every
%% alternative of the guard a test that the name is not an unknown atom.
atomlike(Pats, Guard) ->
    {Pats1, {_, Tests}} = lists:mapfoldl(fun tuples/2, {0, []}, Pats),
    Alts = [[guard_atomlike(T) || T <- Alt] || Alt <- Guard],
    Guard1 = case {Alts, lists:reverse(Tests)} of
                 {[], []} -> [];
                 {[], Ts} -> [Ts];
                 {_, Ts} -> [Alt ++ Ts || Alt <- Alts]
             end,
    {Pats1, Guard1}.

tuples({tuple, A, [_, _] = Es}, Acc0) ->
    {Es1, {N, Tests}} = lists:mapfoldl(fun tuples/2, Acc0, Es),
    V = {var, A, list_to_atom("_RiarcTuple" ++ integer_to_list(N + 1))},
    {{match, A, {tuple, A, Es1}, V}, {N + 1, [{op, A, 'not', unknown_atom(V, A)} | Tests]}};
tuples({tuple, A, Es}, Acc0) ->
    {Es1, Acc} = lists:mapfoldl(fun tuples/2, Acc0, Es),
    {{tuple, A, Es1}, Acc};
tuples({cons, A, H, T}, Acc0) ->
    {[H1, T1], Acc} = lists:mapfoldl(fun tuples/2, Acc0, [H, T]),
    {{cons, A, H1, T1}, Acc};
tuples({match, A, L, R}, Acc0) ->
    {[L1, R1], Acc} = lists:mapfoldl(fun tuples/2, Acc0, [L, R]),
    {{match, A, L1, R1}, Acc};
tuples({op, A, '++', L, R}, Acc0) ->
    {R1, Acc} = tuples(R, Acc0),
    {{op, A, '++', L, R1}, Acc};
tuples({map, A, Fields}, Acc0) ->
    {Fields1, Acc} = lists:mapfoldl(fun({map_field_exact, FA, K, V}, Acc1) ->
                                            {V1, Acc2} = tuples(V, Acc1),
                                            {{map_field_exact, FA, K, V1}, Acc2}
                                    end, Acc0, Fields),
    {{map, A, Fields1}, Acc};
tuples(P, Acc) ->
    {P, Acc}.

%% is_atom(E) also holds of an unknown atom, is_tuple(E) does not.
guard_atomlike({call, A, {atom, _, F} = Name, [E]}) when F =:= is_atom; F =:= is_tuple ->
    guard_type(F, {call, A, Name, [guard_atomlike(E)]}, guard_atomlike(E), A);
guard_atomlike({call, A, {remote, _, {atom, _, erlang}, {atom, _, F}} = Name, [E]})
  when F =:= is_atom; F =:= is_tuple ->
    guard_type(F, {call, A, Name, [guard_atomlike(E)]}, guard_atomlike(E), A);
guard_atomlike(T) when is_tuple(T) ->
    list_to_tuple([guard_atomlike(X) || X <- tuple_to_list(T)]);
guard_atomlike(L) when is_list(L) ->
    [guard_atomlike(X) || X <- L];
guard_atomlike(X) -> X.

guard_type(is_atom, Call, E, A) -> {op, A, 'orelse', Call, unknown_atom(E, A)};
guard_type(is_tuple, Call, E, A) -> {op, A, 'andalso', Call, {op, A, 'not', unknown_atom(E, A)}}.

%% The guard expression: E is {riarc_unknown_atom, Name} with Name a binary.
unknown_atom(E, A) ->
    Elem = fun(N) -> {call, A, {atom, A, element}, [{integer, A, N}, E]} end,
    lists:foldr(fun(T, Acc) -> {op, A, 'andalso', T, Acc} end,
                {call, A, {atom, A, is_binary}, [Elem(2)]},
                [{call, A, {atom, A, is_tuple}, [E]},
                 {op, A, '=:=', {call, A, {atom, A, tuple_size}, [E]}, {integer, A, 2}},
                 {op, A, '=:=', Elem(1), {atom, A, riarc_unknown_atom}}]).

conj(ff, _, _) -> ff;
conj(_, ff, _) -> ff;
conj({list, L1}, {list, L2}, _) -> {list, L1 ++ L2};
conj({list, []}, C, _) -> C;
conj(C1, C2, A) -> {dyn, {call, A, {atom, A, '$conj'}, [to_expr(C1, A), to_expr(C2, A)]}}.

to_expr(ff, A) -> {atom, A, ff};
to_expr({list, Es}, A) -> list_expr(Es, A);
to_expr({dyn, E}, _) -> E.

%% The data variables a formula needs from the scope it occurs in.
fv({max, _, X, Body}, Scope, Rec) -> fv(Body, Scope, Rec#{X => {0, [], false}});
fv({rvar, _, X}, _, Rec) -> #{X := {_, Params, _}} = Rec, Params;
fv({'and', _, Fs}, Scope, Rec) -> lists:usort(lists:append([fv(F, Scope, Rec) || F <- Fs]));
fv({nec, _, {act, _, Kind, Fields, Guard}, Body}, Scope, Rec) ->
    Pats = action_patterns(Kind, Fields),
    Inner = fv(Body, lists:usort(Scope ++ pattern_vars(Pats)), Rec),
    ordsets:intersection(lists:usort(names(Pats) ++ names(Guard) ++ Inner), Scope);
fv(_, _, _) -> [].

%% Whether a formula can ever reach ff (assuming every action may match). For max(X. F)
%% this is the least fixpoint: F with X taken as unable to fail.
can_fail({ff, _}, _) -> true;
can_fail({tt, _}, _) -> false;
can_fail({rvar, _, X}, Rec) -> #{X := {_, _, Can}} = Rec, Can;
can_fail({max, _, X, Body}, Rec) -> can_fail(Body, Rec#{X => {0, [], false}});
can_fail({'and', _, Fs}, Rec) -> lists:any(fun(F) -> can_fail(F, Rec) end, Fs);
can_fail({nec, _, _, Body}, Rec) -> can_fail(Body, Rec).

event_pattern(spawn, [P, C, {call, A, M, F, Args}], A0) ->
    {tuple, A0, [{atom, A0, spawn}, P, C, {tuple, A, [M, F, list_expr(Args, A)]}]};
event_pattern(init, [C, P, {call, A, M, F, Args}], A0) ->
    {tuple, A0, [{atom, A0, init}, C, P, {tuple, A, [M, F, list_expr(Args, A)]}]};
event_pattern(exit, [P, R], A) -> {tuple, A, [{atom, A, exit}, P, R]};
event_pattern(send, [S, R, M], A) -> {tuple, A, [{atom, A, send}, S, R, M]};
event_pattern(recv, [R, M], A) -> {tuple, A, [{atom, A, recv}, R, M]};
event_pattern(timeout, [P], A) -> {tuple, A, [{atom, A, timeout}, P]}.

list_expr(Es, A) -> lists:foldr(fun(E, T) -> {cons, A, E, T} end, {nil, A}, Es).

vars(Names, A) -> [{var, A, N} || N <- Names].

rec_name(J) -> list_to_atom("rec_" ++ integer_to_list(J)).

%% The leftmost {Line, Column} in an abstract term: where an expression starts.
first_loc(Term) ->
    case locs(Term) of
        [] -> {1, 1};
        Locs -> lists:min(Locs)
    end.

locs({L, C} = Loc) when is_integer(L), is_integer(C) -> [Loc];
locs(T) when is_tuple(T) -> locs(tuple_to_list(T));
locs([H | T]) -> locs(H) ++ locs(T);
locs(_) -> [].

ff_words(Place) -> unicode:characters_to_binary(["ff reached after the necessity at ", Place]).

%% The fixed part of every compiled module: running the pending necessities on an event.
scaffolding() ->
    Src = "'$mon'(C, S) -> fun(E) -> '$first'(C, E, S) end.
'$mon'(C, S, P) -> fun(E) -> '$step'(C, E, S, P) end.
'$first'(C, {attached, P0, MFA}, S) ->
    '$first'(C, {init, P0, undefined, MFA}, S);
'$first'(C, E, S) ->
    P = element(2, E),
    case '$start'(C) orelse not '$is_start'(E) of
        true -> '$step'(C, E, S, P);
        false when S =:= ff -> {reject, <<\"the property is ff from the start\">>};
        false when S =:= [] -> {accept, <<\"the property is tt from the start\">>};
        false -> '$mon'(C, S, P)
    end.
'$is_start'({init, _, _, _}) -> true;
'$is_start'({attached, _, _}) -> true;
'$is_start'(_) -> false.
'$step'(C, E, S, P) ->
    case '$visible'(C, E, P) of
        false -> '$mon'(C, S, P);
        true ->
            case '$advance'(E, S, [], false) of
                {next, S1} -> '$mon'(C, S1, P);
                Verdict -> '$why'(Verdict, E, P)
            end
    end.
'$advance'(_, ff, _, _) -> {reject, ff};
'$advance'(E, [{I, Env} | Rest], Acc, Matched) ->
    case '$nec'(I, E, Env) of
        ff -> {reject, {ff, I}};
        nomatch -> '$advance'(E, Rest, Acc, Matched);
        L -> '$advance'(E, Rest, L ++ Acc, true)
    end;
'$advance'(_, [], [], true) -> {accept, tt};
'$advance'(_, [], [], false) -> {accept, nomatch};
'$advance'(_, [], [_] = Acc, _) -> {next, Acc};
'$advance'(_, [], Acc, _) -> {next, maps:keys(maps:from_keys(Acc, []))}.
'$why'({reject, {ff, I}}, _, _) ->
    {reject, '$where'(I), #{clause => '$clause'(I)}};
'$why'({reject, ff}, _, _) -> {reject, <<\"ff reached\">>};
'$why'({accept, tt}, _, _) -> {accept, <<\"tt reached: nothing left that could fail\">>};
'$why'({accept, nomatch}, {exit, P, _}, P) ->
    {accept, <<\"the process exited: nothing left that could fail\">>};
'$why'({accept, nomatch}, _, _) ->
    {accept, <<\"vacuous: no necessity named this event, so the property holds from here\">>}.
'$conj'(ff, _) -> ff;
'$conj'(_, ff) -> ff;
'$conj'(A, B) -> A ++ B.
",
    {ok, Toks, _} = erl_scan:string(Src),
    [begin {ok, F} = erl_parse:parse_form(Ts), F end || Ts <- split_forms(Toks, [])].

split_forms([], []) -> [];
split_forms([{dot, _} = D | Rest], Acc) -> [lists:reverse([D | Acc]) | split_forms(Rest, [])];
split_forms([T | Rest], Acc) -> split_forms(Rest, [T | Acc]).

flat(Fmt, Args) -> lists:flatten(io_lib:format(Fmt, Args)).
