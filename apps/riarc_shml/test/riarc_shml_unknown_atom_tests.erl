%% @doc A trace file's atoms this node does not have read as {riarc_unknown_atom, Name}
%% (riarc_term_text, riarc_etf). A compiled property treats such a term as the atom it
%% stands for: `_' and variables match it, it equals itself and no other atom, no tuple
%% pattern matches it, and is_atom/1 holds of it in a guard.
%% ```
%% $ rebar3 eunit --module=riarc_shml_unknown_atom_tests
%% '''
-module(riarc_shml_unknown_atom_tests).

-include_lib("eunit/include/eunit.hrl").

-define(INIT, {init, c, p, {m, f, []}}).

u(Name) -> {riarc_unknown_atom, Name}.

v(Formula, Events) ->
    riarc_shml_tests:verdict("with m:f() monitor [_ <- _, _:_()] " ++ Formula ++ ".",
                             {m, f, []}, [?INIT | Events]).

patterns_and_guards_test_() ->
    [%% no tuple pattern matches an atom
     ?_assertEqual(accept, v("[_ ? {_, _}] ff", [{recv, c, u(<<"zq">>)}])),
     ?_assertEqual(accept, v("[_ ? {riarc_unknown_atom, _}] ff", [{recv, c, u(<<"zq">>)}])),
     ?_assertEqual(accept, v("[_ ? {t, {_, _}}] ff", [{recv, c, {t, u(<<"zq">>)}}])),
     ?_assertEqual(reject, v("[_ ? {t, {_, _}}] ff", [{recv, c, {t, {1, 2}}}])),
     %% `_' and variables match it
     ?_assertEqual(reject, v("[_ ? _] ff", [{recv, c, u(<<"zq">>)}])),
     ?_assertEqual(reject, v("[_ ? {t, X}] ff", [{recv, c, {t, u(<<"zq">>)}}])),
     %% is_atom/1 holds, is_tuple/1 does not
     ?_assertEqual(reject, v("[_ ? X when is_atom(X)] ff", [{recv, c, u(<<"zq">>)}])),
     ?_assertEqual(accept, v("[_ ? X when is_tuple(X)] ff", [{recv, c, u(<<"zq">>)}])),
     ?_assertEqual(reject, v("[_ ? X when is_tuple(X)] ff", [{recv, c, {a, b}}])),
     %% equal to itself, to no other atom
     ?_assertEqual(reject, v("[_ ? X] [_ ? X] ff", [{recv, c, u(<<"zq">>)}, {recv, c, u(<<"zq">>)}])),
     ?_assertEqual(accept, v("[_ ? X] [_ ? X] ff", [{recv, c, u(<<"zq">>)}, {recv, c, u(<<"zr">>)}])),
     ?_assertEqual(accept, v("[_ ? X] [_ ? X] ff", [{recv, c, u(<<"zq">>)}, {recv, c, zq}])),
     ?_assertEqual(reject, v("[_ ? X] [_ ? Y when X =/= Y] ff",
                             [{recv, c, u(<<"zq">>)}, {recv, c, u(<<"zr">>)}]))].

%% The with clause: its argument patterns, as the actions'.
with_test_() ->
    Src = "with m:f({_, _}) monitor ff, with m:f(X) monitor [_ <- _, _:_(_)] [_ ? X] ff.",
    MFA = {m, f, [u(<<"zq">>)]},
    Init = {init, c, p, MFA},
    [?_assertEqual(reject, riarc_shml_tests:verdict(Src, MFA, [Init, {recv, c, u(<<"zq">>)}])),
     ?_assertEqual(reject, riarc_shml_tests:verdict(Src, {m, f, [{1, 2}]}, [{init, c, p, {m, f, [{1, 2}]}}])),
     fun() ->
             {ok, Mod} = riarc_shml:load_string(Src, riarc_shml_unknown_atom_with, "t.prop"),
             ?assertEqual([2], Mod:clauses(MFA)),
             ?assertEqual([1, 2], Mod:clauses({m, f, [{1, 2}]}))
     end].
