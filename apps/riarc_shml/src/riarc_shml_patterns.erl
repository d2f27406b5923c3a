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
%% event of the kind is kept (`true'). How a necessity's action is said as a match
%% specification, widened or narrowed, is {@link riarc_shml_match_spec}'s.
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

%% Which necessities are said, and as what (messages kept, or a loop's test), is decided
%% here; how an action is said as a match specification is riarc_shml_match_spec's.
-import(riarc_shml_match_spec, [keep/2, test/1, head/2, input/1, valid/2, g_and/1, g_or/1,
                                names/1]).

%% A kind's pattern: every message (`true'), none (`false'), or the messages a match
%% specification list matches.
-type pattern() :: riarc_trace_pattern:pattern().
-type kind() :: riarc_shml_match_spec:kind().

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
