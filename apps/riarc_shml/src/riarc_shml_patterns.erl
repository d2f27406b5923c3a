%% @doc Which message events a property can see: the projection of a clause onto the
%% send and receive events that can change its monitor's state, as match specifications
%% for `erlang:trace_pattern/3' (send: matched against `[Receiver, Msg]'; 'receive':
%% against `[Node, Sender, Msg]'). riarc installs them so that the VM never produces the
%% other message events (docs/properties.md, "Trace patterns").
%%
%% The argument. A monitor's state (docs/properties.md, "Semantics") is a set of pending
%% necessities. An event E is a *stutter* of a state S when it leaves S as it is; removing
%% stutters from a trace changes no verdict, since a verdict is given only on an event that
%% changes the state. An event that matches no necessity is no stutter: it empties the
%% state (accept). For a kind K (send or receive), call a necessity `[a]F' of kind K a
%% *loop* if `a' binds nothing F uses and the pending necessities F unfolds to lie inside
%% every block that holds `[a]F' (a *block*: the necessities one necessity's continuation
%% unfolds to; after the first event a state is a union of blocks). An event of kind K is
%% then a stutter of every state after the first event if it matches none of the other
%% (non-loop) necessities and, in every block, the loops it matches give back the whole
%% block together: what they give back lies inside the state, and everything else is
%% dropped and given back. The first event of every partition's trace is its process's
%% init (or attached) event, never a message, so the initial state needs no such argument.
%%
%% The pattern kept: the non-loop necessities' messages, widened where they cannot be
%% expressed as a match specification (a variable bound earlier, a binary, a guard test on
%% the process fields): widening only keeps more events; and every message but the
%% stutters, as a clause whose guard is `not' of the second condition (each loop's action
%% as a guard that is never an exception, narrowed where it cannot be said: a stutter
%% taken for none only keeps more). When every loop matches every message, that guard is
%% `true' and the clause is left out; when some block has no loop, it is `false' and every
%% event of the kind is kept (`true').
%%
%% Receive timeouts (`{timeout, P}') are not filtered: riarc's receive pattern always
%% passes them (`riarc_route:receive_pattern/1'). A kind the clause does not mention gets
%% `false': its monitor does not see it (a clause naming only timeouts asks for no
%% receive).
%% ```
%% 1> {ok, [C]} = riarc_shml:parse_string("with m:f(_) monitor [_ <- _, m:f(_)]
%%        max(X. and([_ ? {error, _}] ff, [_ ? _] X, [_:_ ! _] X)).", "t").
%% 2> riarc_shml_patterns:clause(C).
%% #{recv => [{['_','_',{error,'_'}],[],[]}],send => false}
%% 3> riarc_shml_patterns:module([C]).
%% #{'receive' => [{['_','_',{error,'_'}],[],[]}],send => false}
%% 4> {ok, [D]} = riarc_shml:parse_string("with m:f(_) monitor
%%        max(X. and([_ ? {resp, _, _}] X, [_ ? {error, _}] ff)).", "t").
%% 5> #{recv := MS} = riarc_shml_patterns:clause(D).
%% 6> [riarc_shml_patterns:keeps(MS, [n, s, M]) || M <- [{resp, 1, 2}, {error, x}, done]].
%% [false,true,true]
%% '''
-module(riarc_shml_patterns).

-export([clause/1, module/1, keeps/2, kinds/1, mentions/1]).
-export_type([pattern/0]).

%% A kind's pattern: every message (`true'), none (`false'), or the messages a match
%% specification list matches.
-type pattern() :: riarc_trace_pattern:pattern().
-type kind() :: send | recv.

%% @doc The patterns of one clause, for the message kinds it mentions (`false' for a kind
%% it does not mention: its monitor sees no event of that kind; a timeout action alone
%% asks for no receive).
-spec clause(riarc_shml:clause()) -> #{kind() => pattern()}.
clause({clause, _, {call, _, _M, _F, Args}, Formula} = C) ->
    Kinds = mentions(C),
    {Numbered, {_, Necs}} = number(Formula, names(Args), #{}, {0, #{}}),
    %% Without an init action the start leaves the first state as it is: that state is
    %% then one of the states a message may find, as a block is.
    Reached = reached(Numbered, Necs, lists:member(init, Kinds)),
    maps:from_list([{K, case lists:member(K, Kinds) of
                            true -> pattern(K, Necs, Reached);
                            false -> false
                        end} || K <- [send, recv]]).

%% @doc The patterns of a compiled property module: the union over its clauses, keyed as
%% `erlang:trace_pattern/3' names the events.
-spec module([riarc_shml:clause()]) -> #{send | 'receive' => pattern()}.
module(Clauses) ->
    Per = [clause(C) || C <- Clauses],
    #{send => riarc_trace_pattern:union([maps:get(send, P) || P <- Per]),
      'receive' => riarc_trace_pattern:union([maps:get(recv, P) || P <- Per])}.

%% @doc Whether a pattern keeps a message: Input is `[Receiver, Msg]' for send and
%% `[Node, Sender, Msg]' for 'receive', as the VM matches them.
-spec keeps(pattern(), list()) -> boolean().
keeps(true, _) -> true;
keeps(false, _) -> false;
keeps(MS, Input) ->
    case erlang:match_spec_test(Input, MS, trace) of
        {ok, false, _, _} -> false;
        {ok, _, _, _} -> true
    end.

%%% Event kinds

%% @doc The message trace flags (send, recv) a formula needs: send for a send action,
%% recv for a receive or a timeout action (the VM reports receive timeouts with the
%% `receive' flag).
-spec kinds(tuple()) -> [send | recv].
kinds(Term) ->
    lists:usort([flag(K) || K <- mentions(Term), K =:= send orelse K =:= recv
                                orelse K =:= timeout]).

flag(timeout) -> recv;
flag(K) -> K.

%% @doc The event kinds a formula mentions: the kinds of its actions. A clause's monitor
%% sees the events of these kinds, and of the others only its process's start and exit
%% (docs/properties.md, "Which events a monitor sees").
-spec mentions(tuple()) -> [init | spawn | exit | send | recv | timeout].
mentions({clause, _, _, F}) -> mentions(F);
mentions({max, _, _, F}) -> mentions(F);
mentions({'and', _, Fs}) -> lists:usort(lists:append([mentions(F) || F <- Fs]));
mentions({nec, _, {act, _, Kind, _, _}, F}) -> lists:usort([Kind | mentions(F)]);
mentions(_) -> [].

%%% Necessities, numbered

%% Every necessity gets a number, and Necs maps it to what the analysis needs: the action,
%% the continuation, the data variables bound before the action (Scope) and the recursion
%% variables in force there (Rec: X => the key of its max). Each max gets a key, and Necs
%% maps {max, Key} to the max and the Rec in force inside its body.
number({nec, _, Act, Body}, Scope, Rec, {N0, Necs0}) ->
    N = N0 + 1,
    Bound = lists:usort(Scope ++ act_vars(Act)),
    {Body1, {N1, Necs1}} = number(Body, Bound, Rec, {N, Necs0}),
    {{nec, N, Act, Body1},
     {N1, Necs1#{N => #{act => Act, body => Body1, scope => Scope, rec => Rec}}}};
number({max, _, X, Body}, Scope, Rec, Acc) ->
    Key = make_ref(),
    Inside = Rec#{X => Key},
    {Body1, {N, Necs}} = number(Body, Scope, Inside, Acc),
    Max = {max, Key, X, Body1},
    {Max, {N, Necs#{{max, Key} => #{node => Max, rec => Inside}}}};
number({'and', A, Fs}, Scope, Rec, Acc0) ->
    {Fs1, Acc} = lists:mapfoldl(fun(F, Acc1) -> number(F, Scope, Rec, Acc1) end, Acc0, Fs),
    {{'and', A, Fs1}, Acc};
number(F, _Scope, _Rec, Acc) ->
    {F, Acc}.

act_vars({act, _, Kind, Fields, _}) -> names(action_patterns(Kind, Fields)).

action_patterns(Kind, [P, C, {call, _, M, F, Args}]) when Kind =:= spawn; Kind =:= init ->
    [P, C, M, F | Args];
action_patterns(_, Fields) -> Fields.

%% The necessities a formula unfolds to (a sorted list of numbers), or ff; a formula that
%% cannot reach ff leaves nothing pending (as in riarc_shml_compile and riarc_shml_ref).
unfold(F, Rec, Necs) ->
    case can_fail(F, Rec, Necs, []) of
        true -> unfold1(F, Rec, Necs);
        false -> []
    end.

unfold1({ff, _}, _, _) -> ff;
unfold1({tt, _}, _, _) -> [];
unfold1({nec, N, _, _}, _, _) -> [N];
unfold1({'and', _, Fs}, Rec, Necs) ->
    lists:foldl(fun(_, ff) -> ff;
                   (F, Acc) -> case unfold(F, Rec, Necs) of
                                   ff -> ff;
                                   L -> lists:umerge(Acc, L)
                               end end, [], Fs);
unfold1({max, Key, _, Body}, _Rec, Necs) ->
    #{{max, Key} := #{rec := Inside}} = Necs,
    unfold(Body, Inside, Necs);
unfold1({rvar, _, X}, Rec, Necs) ->
    unfold(max_of(X, Rec, Necs), Rec, Necs).

max_of(X, Rec, Necs) ->
    #{X := Key} = Rec,
    #{{max, Key} := #{node := Max}} = Necs,
    Max.

%% Whether some path leads to ff, following recursion variables (each max once per path).
can_fail({ff, _}, _, _, _) -> true;
can_fail({tt, _}, _, _, _) -> false;
can_fail({nec, N, _, _}, _, Necs, Seen) ->
    #{N := #{body := Body, rec := Rec}} = Necs,
    can_fail(Body, Rec, Necs, Seen);
can_fail({'and', _, Fs}, Rec, Necs, Seen) ->
    lists:any(fun(F) -> can_fail(F, Rec, Necs, Seen) end, Fs);
can_fail({max, Key, _, Body}, _Rec, Necs, Seen) ->
    #{{max, Key} := #{rec := Inside}} = Necs,
    not lists:member(Key, Seen) andalso can_fail(Body, Inside, Necs, [Key | Seen]);
can_fail({rvar, _, X}, Rec, Necs, Seen) ->
    can_fail(max_of(X, Rec, Necs), Rec, Necs, Seen).

%% What each reachable necessity's continuation unfolds to: #{N => ff | [N']}, for every
%% necessity that can be pending after the first event, and the first state's own. When
%% the start does not consume the first state (Consumed false), the first state is kept
%% under the key `first', so that it counts as a block.
reached(Formula, Necs, Consumed) ->
    First = case unfold(Formula, #{}, Necs) of ff -> []; L -> L end,
    Conts = closure(First, #{}, Necs),
    case Consumed of
        true -> Conts;
        false -> Conts#{first => First}
    end.

closure([], Conts, _Necs) -> Conts;
closure([N | Rest], Conts, Necs) when is_map_key(N, Conts) -> closure(Rest, Conts, Necs);
closure([N | Rest], Conts, Necs) ->
    #{N := #{body := Body, rec := Rec}} = Necs,
    U = unfold(Body, Rec, Necs),
    closure(case U of ff -> Rest; _ -> U ++ Rest end, Conts#{N => U}, Necs).

%%% The projection for one kind

pattern(K, Necs, Conts) ->
    %% The blocks: the states a necessity's match can leave (after the first event, a
    %% state is a union of these).
    Blocks = lists:usort([U || {_, U} <- maps:to_list(Conts), is_list(U), U =/= []]),
    Pending = lists:usort(lists:append(Blocks)),
    Loops = [N || N <- Pending, loop(K, N, Necs, Conts, Blocks)],
    Keep = [keep(K, maps:get(N, Necs)) || N <- Pending, not lists:member(N, Loops),
                                          kind_of(maps:get(N, Necs)) =:= K],
    case stutter(Blocks, Loops, Necs, Conts) of
        true -> riarc_trace_pattern:union(Keep);
        false -> true;
        Stutter ->
            %% Every message but the stutters: a guard that is never an exception, so
            %% that `not' of it is true exactly off the stutters.
            Rest = [{head(K, '$1'), [{'not', Stutter}], []}],
            case valid(input(K), Rest) of
                true -> riarc_trace_pattern:union([Rest | Keep]);
                false -> true
            end
    end.

kind_of(#{act := {act, _, send, _, _}}) -> send;
kind_of(#{act := {act, _, recv, _, _}}) -> recv;
kind_of(_) -> other.

%% A loop of kind K: a necessity of that kind that binds nothing its continuation uses,
%% and whose continuation unfolds to a part of every block it is in. A message it matches
%% gives back no more than the state had; which messages it matches is its test (test/1).
loop(K, N, Necs, Conts, Blocks) ->
    #{N := Nec = #{act := Act, body := Body, scope := Scope}} = Necs,
    U = maps:get(N, Conts),
    kind_of(Nec) =:= K andalso is_list(U)
        andalso not lists:any(fun(V) -> lists:member(V, names(Body)) end, act_vars(Act) -- Scope)
        andalso lists:all(fun(B) -> not lists:member(N, B) orelse ordsets:is_subset(U, B) end,
                          Blocks).

%% A guard on the message `$1' that holds only of stutters of every state: messages that
%% match, in every block, loops whose continuations give back the whole block. A message
%% that also matches a non-loop necessity is kept by that one's own clause. true: every
%% message of the kind that no non-loop necessity matches is a stutter; false: none is
%% known to be.
stutter(Blocks, Loops, Necs, Conts) ->
    Tests = maps:from_list([{N, test(maps:get(N, Necs))} || N <- Loops]),
    g_and([g_or([g_and([maps:get(N, Tests) || N <- Cover])
                 || Cover <- covers(B, [N || N <- B, maps:get(N, Tests, false) =/= false],
                                    Conts)])
           || B <- Blocks]).

%% The least sets of Loops whose continuations together give back Block (at most 2^10
%% sets are tried, past that the one set of them all; at most 32 kept, so that the guard
%% stays small: fewer covers only keep more).
covers(Block, Loops, Conts) ->
    Gives = fun(Set) -> ordsets:is_subset(Block, lists:usort(lists:append(
                                                   [maps:get(N, Conts) || N <- Set])))
            end,
    Sets = case length(Loops) =< 10 of
               true -> lists:sort(fun(A, B) -> length(A) =< length(B) end, subsets(Loops));
               false -> [Loops]
           end,
    Least = lists:foldl(fun(Set, Acc) ->
                                Smaller = lists:any(fun(L) -> ordsets:is_subset(L, Set) end, Acc),
                                case not Smaller andalso Gives(Set) of
                                    true -> Acc ++ [Set];
                                    false -> Acc
                                end
                        end, [], Sets),
    lists:sublist(Least, 32).

subsets([]) -> [[]];
subsets([X | Xs]) -> Rest = subsets(Xs), [[X | S] || S <- Rest] ++ Rest.

%%% A loop's test: the messages it certainly matches, as a guard

%% A guard on `$1' that is true only of messages the loop's action matches (narrowed
%% where the action cannot be said: a stutter taken for none only keeps more), and never
%% an exception (structure is tested before its parts are read). The fields other than
%% the message must match anything: `_' or distinct variables bound nowhere else.
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

%% Conjunction and disjunction of match specification guards, true and false folded.
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

%% The messages a non-loop necessity of this kind may match, widened to what a match
%% specification can say.
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

input(send) -> [a, b];
input(recv) -> [a, b, c].

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

names(Term) -> lists:usort([V || {var, _, V} <- subterms(Term), V =/= '_']).

subterms(T) when is_tuple(T) -> [T | subterms(tuple_to_list(T))];
subterms(L) when is_list(L) -> lists:append([subterms(X) || X <- L]);
subterms(_) -> [].
