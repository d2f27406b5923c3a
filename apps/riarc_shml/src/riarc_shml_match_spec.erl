%% @doc sHML actions as match specifications, for the projection of
%% {@link riarc_shml_patterns}: an action's message pattern and guard, in Erlang's
%% abstract format, said in the VM's match specification language. Neither can always be
%% said, and each way errs on the side that only keeps more events. A non-loop
%% necessity's messages are widened (keep/2: a variable bound before the action and a
%% binary match anything, a guard test that cannot be said is left out). A loop's messages are
%% narrowed (test/1: a guard on the message `$1' true only of messages the loop certainly
%% matches, and never an exception, so that `not' of it is true exactly off them). What is
%% kept is first offered to the VM (valid/2): a guard function it does not know would make
%% `erlang:trace_pattern/3' fail.
%% ```
%% 1> {ok, [{clause, _, _, {nec, _, Act, _}}]} = riarc_shml:parse_string("with m:f(_) monitor [_ ? {resp, N, _} when N > 0] ff.", "t").
%% 2> riarc_shml_match_spec:keep(recv, #{act => Act, scope => []}).
%% [{['_','_',{resp,'$1','_'}],[{'>','$1',{const,0}}],[]}]
%% 3> riarc_shml_match_spec:test(#{act => Act, scope => []}).
%% {'andalso',{'andalso',{is_tuple,'$1'},
%%                       {'andalso',{'=:=',{size,'$1'},3},{'=:=',{element,1,'$1'},{const,resp}}}},
%%            {'>',{element,2,'$1'},{const,0}}}
%% 4> Bound = #{act => Act, scope => ['N']}, riarc_shml_match_spec:keep(recv, Bound).
%% [{['_','_',{resp,'_','_'}],[],[]}]
%% 5> riarc_shml_match_spec:test(Bound).
%% false
%% '''
-module(riarc_shml_match_spec).

-export([keep/2, test/1, head/2, input/1, valid/2, g_and/1, g_or/1, names/1]).
-export_type([kind/0, guard/0, necessity/0]).

-type kind() :: send | recv.
%% A match specification guard: true, false, or a guard expression.
-type guard() :: boolean() | tuple().
%% A necessity as riarc_shml_patterns numbers it: its action, and the data variables bound
%% before the action (scope).
-type necessity() :: #{act := tuple(), scope := [atom()], atom() => term()}.

%%% A loop's test: the messages it certainly matches, as a guard

%% @doc A guard on `$1' that is true only of messages the loop's action matches (narrowed
%% where the action cannot be said: a stutter taken for none only keeps more), and never
%% an exception (structure is tested before its parts are read). The fields other than
%% the message must match anything: `_' or distinct variables bound nowhere else.
-spec test(necessity()) -> guard().
test(#{act := {act, _, _, Fields, Guard}, scope := Scope}) ->
    {Others, [Msg]} = lists:split(length(Fields) - 1, Fields),
    Hidden = [V || {var, _, V} <- Others, V =/= '_'],
    Free = lists:all(fun({var, _, _}) -> true; (_) -> false end, Others)
        andalso length(Hidden) =:= length(lists:usort(Hidden))
        andalso not lists:any(fun(V) -> lists:member(V, Scope) end, Hidden),
    try
        Free orelse throw(untranslatable),
        {Match, {Vars, _}} = mtest(Msg, '$1', {#{}, Scope ++ Hidden}),
        Alts = case Guard of [] -> [[]]; _ -> Guard end,
        g_and([Match, g_or([alt_test(Alt, Vars) || Alt <- Alts])])
    catch throw:untranslatable -> false
    end.

alt_test(Alt, Vars) ->
    try g_and([is_true(T, Vars) || T <- Alt])
    catch throw:untranslatable -> false
    end.

%% A pattern as a test of the term at Path; Vars maps the pattern's variables to their
%% paths (Outer: variables whose values the VM does not know).
mtest({var, _, '_'}, _Path, Acc) -> {true, Acc};
mtest({var, _, V}, Path, {Vars, Outer} = Acc) ->
    case {lists:member(V, Outer), Vars} of
        {true, _} -> throw(untranslatable);
        {false, #{V := Bound}} -> {{'=:=', Path, Bound}, Acc};
        {false, _} -> {true, {Vars#{V => Path}, Outer}}
    end;
mtest({tuple, _, Es}, Path, Acc0) ->
    {Tests, Acc} = lists:mapfoldl(fun({I, E}, A) -> mtest(E, {element, I, Path}, A) end,
                                  Acc0, lists:zip(lists:seq(1, length(Es)), Es)),
    {g_and([{is_tuple, Path}, {'=:=', {size, Path}, length(Es)} | Tests]), Acc};
mtest({cons, _, H, T}, Path, Acc0) ->
    {HT, Acc1} = mtest(H, {hd, Path}, Acc0),
    {TT, Acc} = mtest(T, {tl, Path}, Acc1),
    {g_and([{is_list, Path}, {'=/=', Path, []}, HT, TT]), Acc};
mtest({op, A, '++', {string, _, S}, R}, Path, Acc) ->
    mtest(lists:foldr(fun(C, T) -> {cons, A, {integer, A, C}, T} end, R, S), Path, Acc);
mtest({op, _, '++', {nil, _}, R}, Path, Acc) -> mtest(R, Path, Acc);
mtest({op, A, '++', {cons, _, H, T}, R}, Path, Acc) ->
    mtest({cons, A, H, {op, A, '++', T, R}}, Path, Acc);
mtest({match, _, L, R}, Path, Acc0) ->
    {LT, Acc1} = mtest(L, Path, Acc0),
    {RT, Acc} = mtest(R, Path, Acc1),
    {g_and([LT, RT]), Acc};
mtest({map, _, Fields}, Path, Acc0) ->
    {Tests, Acc} = lists:mapfoldl(
                     fun({map_field_exact, _, K, V}, A) ->
                             Key = {const, constant(K)},
                             {VT, A1} = mtest(V, {map_get, Key, Path}, A),
                             {g_and([{is_map_key, Key, Path}, VT]), A1};
                        (_, _) -> throw(untranslatable)
                     end, Acc0, Fields),
    {g_and([{is_map, Path} | Tests]), Acc};
mtest(Literal, Path, Acc) ->
    %% Binaries and expressions are not said: the loop is taken to match nothing.
    {{'=:=', Path, {const, constant(Literal)}}, Acc}.

constant(E) ->
    try erl_parse:normalise(E)
    catch _:_ -> throw(untranslatable)
    end.

%% A guard test as a match specification guard true exactly when the test is true, and
%% never an exception: a test that could raise one is not said.
is_true({atom, _, true}, _) -> true;
is_true({atom, _, false}, _) -> false;
is_true({var, _, _} = V, Vars) -> {'=:=', value(V, Vars), true};
is_true({op, _, 'not', E}, Vars) -> is_false(E, Vars);
is_true({op, _, Op, L, R}, Vars) when Op =:= 'andalso'; Op =:= 'and' ->
    g_and([is_true(L, Vars), is_true(R, Vars)]);
is_true({op, _, 'orelse', L, R}, Vars) ->
    g_or([is_true(L, Vars), g_and([is_false(L, Vars), is_true(R, Vars)])]);
is_true({op, _, 'or', L, R}, Vars) ->
    g_and([boolean(L, Vars), boolean(R, Vars), g_or([is_true(L, Vars), is_true(R, Vars)])]);
is_true({op, _, 'xor', L, R}, Vars) ->
    g_or([g_and([is_true(L, Vars), is_false(R, Vars)]),
          g_and([is_false(L, Vars), is_true(R, Vars)])]);
is_true(E, Vars) -> total(E, Vars).

is_false({atom, _, true}, _) -> false;
is_false({atom, _, false}, _) -> true;
is_false({var, _, _} = V, Vars) -> {'=:=', value(V, Vars), false};
is_false({op, _, 'not', E}, Vars) -> is_true(E, Vars);
is_false({op, _, 'andalso', L, R}, Vars) ->
    g_or([is_false(L, Vars), g_and([is_true(L, Vars), is_false(R, Vars)])]);
is_false({op, _, 'and', L, R}, Vars) ->
    g_and([boolean(L, Vars), boolean(R, Vars), g_or([is_false(L, Vars), is_false(R, Vars)])]);
is_false({op, _, Op, L, R}, Vars) when Op =:= 'orelse'; Op =:= 'or' ->
    g_and([is_false(L, Vars), is_false(R, Vars)]);
is_false({op, _, 'xor', L, R}, Vars) ->
    g_or([g_and([is_true(L, Vars), is_true(R, Vars)]),
          g_and([is_false(L, Vars), is_false(R, Vars)])]);
is_false(E, Vars) -> {'not', total(E, Vars)}.

boolean(E, Vars) -> g_or([is_true(E, Vars), is_false(E, Vars)]).

%% Comparisons and type tests of values: always true or false.
total({op, _, Op, L, R}, Vars) ->
    case lists:member(Op, ['==', '/=', '=:=', '=/=', '<', '>', '=<', '>=']) of
        true -> {Op, value(L, Vars), value(R, Vars)};
        false -> throw(untranslatable)
    end;
total({call, _, {remote, _, {atom, _, erlang}, F}, Args}, Vars) ->
    total({call, 0, F, Args}, Vars);
total({call, _, {atom, _, F}, [Arg]}, Vars) ->
    case lists:member(F, [is_atom, is_float, is_integer, is_list, is_number, is_pid, is_port,
                          is_reference, is_tuple, is_map, is_binary, is_function]) of
        true -> {F, value(Arg, Vars)};
        false -> throw(untranslatable)
    end;
total(_, _) -> throw(untranslatable).

%% A value a comparison can read: a variable of the message, a constant, a tuple of them.
value({var, _, V}, Vars) ->
    case Vars of
        #{V := Path} -> Path;
        _ -> throw(untranslatable)
    end;
value({tuple, _, Es}, Vars) -> {list_to_tuple([value(E, Vars) || E <- Es])};
value(E, _) -> {const, constant(E)}.

%% @doc Conjunction of match specification guards, true and false folded.
-spec g_and([guard()]) -> guard().
g_and(Gs) ->
    case lists:member(false, Gs) of
        true -> false;
        false ->
            case [G || G <- Gs, G =/= true] of
                [] -> true;
                Rest -> lists:foldr(fun(G, Acc) -> {'andalso', G, Acc} end, lists:last(Rest),
                                    lists:droplast(Rest))
            end
    end.

%% @doc Disjunction of match specification guards, true and false folded.
-spec g_or([guard()]) -> guard().
g_or(Gs) ->
    case lists:member(true, Gs) of
        true -> true;
        false ->
            case lists:usort([G || G <- Gs, G =/= false]) of
                [] -> false;
                Rest -> lists:foldr(fun(G, Acc) -> {'orelse', G, Acc} end, lists:last(Rest),
                                    lists:droplast(Rest))
            end
    end.

%%% From a necessity's action to a match specification

%% @doc The messages a non-loop necessity of this kind may match, widened to what a match
%% specification can say.
-spec keep(kind(), necessity()) -> riarc_trace_pattern:pattern().
keep(K, #{act := {act, _, _, Fields, Guard}, scope := Scope}) ->
    Msg = lists:last(Fields),
    St0 = #{vars => #{}, next => 1, outer => Scope, opaque => [], tests => []},
    {Pat, St} = pat(Msg, St0),
    Alts = case Guard of [] -> [[]]; _ -> Guard end,
    Clauses = lists:usort([{head(K, Pat), maps:get(tests, St) ++ tests(Alt, St), []}
                           || Alt <- Alts]),
    Any = Pat =:= '_' orelse (is_atom(Pat) andalso special_atom(Pat)),
    case lists:any(fun({_, [], _}) -> Any; (_) -> false end, Clauses) of
        true -> true;
        false -> checked(K, Clauses, Pat)
    end.

%% @doc The head of a match specification clause on the message Pat, as the VM matches
%% an event of the kind: `[Receiver, Msg]' for send, `[Node, Sender, Msg]' for receive.
-spec head(kind(), term()) -> list().
head(send, Pat) -> ['_', Pat];
head(recv, Pat) -> ['_', '_', Pat].

%% The VM accepts the match specification (a guard function it does not know would make
%% trace_pattern/3 fail): else without guards, else every message.
checked(K, Clauses, Pat) ->
    Input = input(K),
    case valid(Input, Clauses) of
        true -> Clauses;
        false ->
            Bare = [{head(K, Pat), [], []}],
            case valid(Input, Bare) of
                true -> Bare;
                false -> true
            end
    end.

%% @doc An input of the kind's shape, to ask the VM about a match specification with.
-spec input(kind()) -> list().
input(send) -> [a, b];
input(recv) -> [a, b, c].

%% @doc Whether the VM takes the match specification (trace_pattern/3 would fail on one
%% it does not).
-spec valid(list(), [{list(), list(), list()}]) -> boolean().
valid(Input, MS) ->
    case erlang:match_spec_test(Input, MS, trace) of
        {ok, _, _, _} -> true;
        {error, _} -> false
    end.

%% A pattern in Erlang's abstract format to a match specification head. Variables bound
%% before the action (outer) are not known to the VM: `_'.
pat({var, _, '_'}, St) -> {'_', St};
pat({var, _, V}, St = #{vars := Vars, next := I, outer := Outer, opaque := Opq}) ->
    case {lists:member(V, Outer) orelse lists:member(V, Opq), Vars} of
        {true, _} -> {'_', St};
        {false, #{V := MV}} -> {MV, St};
        {false, _} ->
            MV = ms_var(I),
            {MV, St#{vars := Vars#{V => MV}, next := I + 1}}
    end;
pat({atom, _, A}, St = #{next := I, tests := Ts}) ->
    case special_atom(A) of
        %% An atom the VM would read as a variable: matched by a test instead.
        true -> MV = ms_var(I),
                {MV, St#{next := I + 1, tests := Ts ++ [{'=:=', MV, {const, A}}]}};
        false -> {A, St}
    end;
pat({integer, _, N}, St) -> {N, St};
pat({char, _, C}, St) -> {C, St};
pat({float, _, F}, St) -> {F, St};
pat({string, _, S}, St) -> {S, St};
pat({nil, _}, St) -> {[], St};
pat({op, _, '-', {T, _, N}}, St) when T =:= integer; T =:= float; T =:= char -> {-N, St};
pat({op, _, '+', {T, _, N}}, St) when T =:= integer; T =:= float; T =:= char -> {N, St};
pat({op, _, '++', {string, _, S}, R}, St0) ->
    {R1, St} = pat(R, St0),
    {lists:foldr(fun(C, Acc) -> [C | Acc] end, R1, S), St};
pat({op, _, '++', {nil, _}, R}, St) -> pat(R, St);
pat({cons, _, H, T}, St0) ->
    {H1, St1} = pat(H, St0),
    {T1, St} = pat(T, St1),
    {[H1 | T1], St};
pat({tuple, _, Es}, St0) ->
    {Es1, St} = lists:mapfoldl(fun pat/2, St0, Es),
    {list_to_tuple(Es1), St};
pat({match, _, {var, _, _} = V, R}, St) -> alias(V, R, St);
pat({match, _, L, {var, _, _} = V}, St) -> alias(V, L, St);
pat({match, _, L, R}, St0) ->
    %% Both sides structured: matching L alone keeps more; R's variables are unknown.
    {L1, St} = pat(L, St0),
    {L1, opaque(R, St)};
pat({map, _, Fields} = Map, St0) ->
    case [K || {map_field_exact, _, K, _} <- Fields, not literal(K)] of
        [] ->
            {Kvs, St} = lists:mapfoldl(fun({map_field_exact, _, K, V}, S) ->
                                               {V1, S1} = pat(V, S),
                                               {{erl_parse:normalise(K), V1}, S1}
                                       end, St0, Fields),
            {maps:from_list(Kvs), St};
        _ -> {'_', opaque(Map, St0)}
    end;
pat(Other, St) ->
    %% Binaries and anything else: any term, and its variables unknown.
    {'_', opaque(Other, St)}.

%% `V = Pat': the match specification matches Pat; V itself cannot be named in a guard.
alias({var, _, V}, Pat, St0) ->
    {P, St} = pat(Pat, St0),
    {P, St#{opaque := [V | maps:get(opaque, St)]}}.

opaque(Term, St = #{opaque := Opq}) -> St#{opaque := names(Term) ++ Opq}.

literal(K) ->
    try erl_parse:normalise(K) of
        V -> not is_atom(V) orelse not special_atom(V)
    catch _:_ -> false
    end.

special_atom(A) ->
    case atom_to_list(A) of
        "_" -> true;
        [$$ | Ds] -> Ds =/= [] andalso lists:all(fun(C) -> C >= $0 andalso C =< $9 end, Ds);
        _ -> false
    end.

ms_var(I) -> list_to_atom([$$ | integer_to_list(I)]).

%% A guard alternative's tests, each translated whole or left out (leaving a test of a
%% conjunction out only widens it).
tests(Alt, St) ->
    lists:append([try [gexpr(T, St)] catch throw:untranslatable -> [] end || T <- Alt]).

gexpr({var, _, V}, #{vars := Vars, opaque := Opq}) ->
    case {lists:member(V, Opq), Vars} of
        {false, #{V := MV}} -> MV;
        _ -> throw(untranslatable)
    end;
gexpr({tuple, _, Es}, St) -> {list_to_tuple([gexpr(E, St) || E <- Es])};
gexpr({op, _, Op, L, R}, St) ->
    case lists:member(Op, binary_ops()) of
        true -> {Op, gexpr(L, St), gexpr(R, St)};
        false -> throw(untranslatable)
    end;
gexpr({op, _, Op, E}, St) when Op =:= 'not'; Op =:= '-'; Op =:= '+'; Op =:= 'bnot' ->
    {Op, gexpr(E, St)};
gexpr({call, _, {remote, _, {atom, _, erlang}, {atom, _, F}}, Args}, St) ->
    gcall(F, Args, St);
gexpr({call, _, {atom, _, F}, Args}, St) ->
    gcall(F, Args, St);
gexpr(E, _St) ->
    try erl_parse:normalise(E) of
        V -> {const, V}
    catch _:_ -> throw(untranslatable)
    end.

gcall(F, Args, St) ->
    case lists:member({F, length(Args)}, guard_functions()) of
        true -> list_to_tuple([F | [gexpr(A, St) || A <- Args]]);
        false -> throw(untranslatable)
    end.

binary_ops() ->
    ['andalso', 'orelse', 'and', 'or', 'xor', '==', '/=', '=:=', '=/=', '<', '>', '=<', '>=',
     '+', '-', '*', 'div', 'rem', 'band', 'bor', 'bxor', 'bsl', 'bsr'].

%% The guard functions of match specifications that mean the same as in an Erlang guard
%% about the message (self/0 and node/0 would name the traced process's, not the
%% monitor's).
guard_functions() ->
    [{is_atom, 1}, {is_float, 1}, {is_integer, 1}, {is_list, 1}, {is_number, 1},
     {is_pid, 1}, {is_port, 1}, {is_reference, 1}, {is_tuple, 1}, {is_map, 1},
     {is_binary, 1}, {is_function, 1}, {is_map_key, 2}, {abs, 1}, {element, 2}, {hd, 1},
     {tl, 1}, {length, 1}, {map_get, 2}, {map_size, 1}, {round, 1}, {trunc, 1},
     {tuple_size, 1}, {byte_size, 1}, {bit_size, 1}, {size, 1}, {float, 1}].

%%% Variables

%% @doc The variables a term of Erlang's abstract format names (a pattern, a guard, a
%% formula), `_' left out.
-spec names(term()) -> [atom()].
names(Term) -> lists:usort([V || {var, _, V} <- subterms(Term), V =/= '_']).

subterms(T) when is_tuple(T) -> [T | subterms(tuple_to_list(T))];
subterms(L) when is_list(L) -> lists:append([subterms(X) || X <- L]);
subterms(_) -> [].
