%% @doc A small reference interpreter of sHML as riarc defines it (docs/properties.md):
%% straight from the definitions, on the parsed formula, with erl_eval doing the pattern
%% matching. It is slow and is there to test the compiler against
%% (riarc_shml_tests compares the two on random formulae and traces).
%%
%% A state is `ff' or a list of pending necessities `{[Action]F, Bindings, RecEnv}';
%% `tt' is the empty list, and so is any formula from which no path leads to ff. On an
%% event every pending necessity whose action matches is replaced by its continuation and
%% every other one is dropped; the verdict is reject once `ff' is reached and accept once
%% nothing is pending.
%% ```
%% 1> {ok, Cs} = riarc_shml:parse_string("with m:f() monitor [P ? x][P:_ ! y]ff.", "t").
%% 2> riarc_shml_ref:verdict(Cs, {m, f, []}, [{init, a, b, {m, f, []}}]).
%% none
%% 3> riarc_shml_ref:verdict(Cs, {m, f, []}, [{recv, a, x}]).
%% none
%% 4> riarc_shml_ref:verdict(Cs, {m, f, []}, [{recv, a, x}, {send, a, b, y}]).
%% reject
%% '''
-module(riarc_shml_ref).

-export([verdict/3, project/2]).

%% @doc The verdict of the first clause whose `with' pattern matches MFA on a trace (a
%% partition's events in order), or undefined when no clause matches. The monitor sees
%% the trace as docs/properties.md says ("Which events a monitor sees"): project/2.
-spec verdict([riarc_shml:clause()], {module(), atom(), list()}, [riarc_event:event()]) ->
    accept | reject | none | undefined.
verdict([], _MFA, _Trace) -> undefined;
verdict([{clause, A, {call, _, M, F, Args}, _} = C | Rest], MFA, Trace) ->
    Pat = {tuple, A, [M, F, lists:foldr(fun(E, T) -> {cons, A, E, T} end, {nil, A}, Args)]},
    case match(Pat, [], MFA, erl_eval:new_bindings()) of
        {ok, B} ->
            {{clause, _, _, Formula}, Visible} = project(C, Trace),
            run(norm(Formula, B, #{}), Visible);
        nomatch -> verdict(Rest, MFA, Trace)
    end.

%% @doc A clause and a trace as this interpreter runs them to give the verdict riarc's
%% monitors give: the trace keeps the events of the kinds the clause mentions
%% (riarc_shml_patterns:mentions/1), and its process's own exit; a start the clause does
%% not mention (no init action) is consumed by a necessity that matches it and leads to
%% the clause's formula (the start then leaves the first state as it is, and decides a
%% formula that is ff or tt from the start); an attached start is the process's init,
%% with parent undefined.
-spec project(riarc_shml:clause(), [riarc_event:event()]) -> {riarc_shml:clause(), [riarc_event:event()]}.
project(C, []) -> {C, []};
project(C, [{attached, P, MFA} | Rest]) ->
    %% A process riarc attached to starts, for its monitor, as one it saw start: its
    %% attached event is its init, with parent undefined.
    project(C, [{init, P, undefined, MFA} | Rest]);
project({clause, A, Target, F} = C, [First | Rest]) ->
    Ms = riarc_shml_patterns:mentions(C),
    Self = element(2, First),
    Seen = fun(E) -> seen(E, Ms, Self) end,
    Init = lists:member(init, Ms),
    case {element(1, First), Init} of
        {attached, true} ->
            {C, [First | lists:filter(Seen, Rest)]};
        {K, false} when K =:= init; K =:= attached ->
            Any = {var, A, '_'},
            Consume = {act, A, init, [Any, Any, {call, A, Any, Any, []}], []},
            {{clause, A, Target, {nec, A, Consume, F}},
             [{init, Self, riarc_parent, {riarc_start, start, []}} | lists:filter(Seen, Rest)]};
        _ ->
            {C, lists:filter(Seen, [First | Rest])}
    end.

seen({exit, Self, _}, _Ms, Self) -> true;
seen({attached, _, _}, Ms, _) -> lists:member(init, Ms);
seen(E, Ms, _) -> lists:member(element(1, E), Ms).

%% A verdict is given on an event: the first one for ff and tt, else the event after
%% which ff is reached or nothing is pending.
run(_, []) -> none;
run(ff, [_ | _]) -> reject;
run([], [_ | _]) -> accept;
run(Pending, [E | Es]) ->
    case step(Pending, E) of
        ff -> reject;
        [] -> accept;
        Next -> run(Next, Es)
    end.

%% All pending necessities see the event; their continuations are conjoined. A
%% conjunction holds each necessity once: kept twice, a loop whose body conjoins two
%% branches back to it doubled the list at every event (cases of minutes).
step(Pending, E) ->
    case lists:foldl(fun(_, ff) -> ff;
                        (P, Acc) -> conj(Acc, derive(P, E)) end, [], Pending) of
        ff -> ff;
        Next -> lists:usort(Next)
    end.

derive({{nec, _, Act, Body}, B, R}, E) ->
    case match_action(Act, E, B) of
        {ok, B1} -> norm(Body, B1, R);
        nomatch -> []
    end.

conj(ff, _) -> ff;
conj(_, ff) -> ff;
conj(L1, L2) -> L1 ++ L2.

%% A formula, unfolded down to its pending necessities; one that can never reach ff
%% leaves nothing pending.
norm(F, B, R) ->
    case can_fail(F, R, []) of
        true -> norm1(F, B, R);
        false -> []
    end.

norm1({ff, _}, _, _) -> ff;
norm1({tt, _}, _, _) -> [];
norm1({nec, _, _, _} = N, B, R) -> [{N, B, R}];
norm1({'and', _, Fs}, B, R) ->
    lists:foldl(fun(_, ff) -> ff;
                   (F, Acc) -> conj(Acc, norm(F, B, R)) end, [], Fs);
norm1({max, _, X, Body} = Max, B, R) -> norm(Body, B, R#{X => {Max, B, R}});
norm1({rvar, _, X}, _, R) ->
    #{X := {Max, B0, R0}} = R,
    norm(Max, B0, R0).

%% Whether some path of the formula leads to ff, following recursion variables to their
%% max (each max at most once on a path: looping back to it adds no new path).
can_fail({ff, _}, _, _) -> true;
can_fail({tt, _}, _, _) -> false;
can_fail({nec, _, _, Body}, R, Seen) -> can_fail(Body, R, Seen);
can_fail({'and', _, Fs}, R, Seen) -> lists:any(fun(F) -> can_fail(F, R, Seen) end, Fs);
can_fail({max, _, X, Body} = Max, R, Seen) ->
    can_fail(Body, R#{X => {Max, none, R}}, [Max | Seen]);
can_fail({rvar, _, X}, R, Seen) ->
    #{X := {Max, _, R0}} = R,
    not lists:member(Max, Seen) andalso can_fail(Max, R0, Seen).

match_action({act, A, Kind, Fields, Guard}, Event, B) ->
    match(event_pattern(Kind, Fields, A), Guard, Event, B).

event_pattern(Kind, [X, Y, {call, A, M, F, Args}], A0) when Kind =:= spawn; Kind =:= init ->
    MFA = {tuple, A, [M, F, lists:foldr(fun(E, T) -> {cons, A, E, T} end, {nil, A}, Args)]},
    {tuple, A0, [{atom, A0, Kind}, X, Y, MFA]};
event_pattern(Kind, Fields, A) -> {tuple, A, [{atom, A, Kind} | Fields]}.

match(Pat, Guard, Value, B) ->
    A = element(2, Pat),
    case erl_eval:match_clause([{clause, A, [Pat], Guard, [{atom, A, true}]}], [Value], B,
                               none) of
        {_Body, B1} -> {ok, B1};
        nomatch -> nomatch
    end.
