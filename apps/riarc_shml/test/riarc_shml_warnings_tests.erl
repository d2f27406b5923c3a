%% @doc Tests of what a property file says about itself beyond errors: the warning for a
%% variable in a module position (`with Bank:init(_)' matches every init/1), and which
%% `with' clauses a process matches (`clauses/0,1' of the compiled module) and which
%% matched nothing in a run (riarc_shml:unmatched/2).
%% ```
%% $ rebar3 eunit --module=riarc_shml_warnings_tests
%% '''
-module(riarc_shml_warnings_tests).

-include_lib("eunit/include/eunit.hrl").

warnings(Src) ->
    {ok, Cs} = riarc_shml:parse_string(Src, "t.prop"),
    riarc_shml_compile:warnings(Cs).

module_variable_warned_test() ->
    [{{1, 6}, Msg}] = warnings("with Bank:init(_) monitor [P <- _, bank:init(_)] ff."),
    ?assertEqual("Bank in `with' is a variable: it matches every module's init/1. To name the "
                 "Elixir module Bank write 'Elixir.Bank':init(_) (an Erlang module named Bank: "
                 "'Bank':init(_))", Msg),
    ?assertMatch([{{1, 45}, "Srv in the action is a variable" ++ _}],
                 warnings("with m:f() monitor [P <- _, m:f()] [_ -> _, Srv:init()] ff.")).

%% `_', a quoted module, and a variable used elsewhere in the clause are not warned.
no_warning_test() ->
    ?assertEqual([], warnings("with _:_(_) monitor ff.")),
    ?assertEqual([], warnings("with 'Elixir.Bank':init(_) monitor ff.")),
    ?assertEqual([], warnings("with M:init(_) monitor [_ -> _, M:g() when M =/= x] ff.")),
    ?assertEqual([], warnings("with m:f() monitor [Q -> _, M:F() when {M, F} =/= {m, r}] ff.")).

file_warnings_test() ->
    File = filename:join("/tmp", "riarc_shml_warnings_" ++ os:getpid() ++ ".prop"),
    ok = file:write_file(File, "with Bank:init(_) monitor ff."),
    {ok, [W]} = riarc_shml:warnings(File),
    ?assertEqual(File ++ ":1:6: warning: Bank in `with'", lists:sublist(W, length(File) + 29)),
    {ok, Mod} = riarc_shml:load_file(File),
    ?assertEqual([W], Mod:warnings()),
    ok = file:delete(File).

clauses_test() ->
    {ok, Mod} = riarc_shml:load_string("with m:f(X, X) monitor ff.\nwith m:_(_, _) monitor ff.",
                                       riarc_shml_warnings_mod, "t.prop"),
    ?assertEqual([{1, "t.prop:1:1", "m:f(X, X)"}, {2, "t.prop:2:1", "m:_(_, _)"}], Mod:clauses()),
    ?assertEqual([1, 2], Mod:clauses({m, f, [a, a]})),
    ?assertEqual([2], Mod:clauses({m, f, [a, b]})),
    ?assertEqual([], Mod:clauses({n, f, [a, b]})).

%% In a run of P/Q/R, a clause for a function nobody runs matched nothing.
unmatched_test() ->
    {ok, Mod} = riarc_shml:load_string(
                  "with riarc_demo_pqr:p() monitor [P <- _, riarc_demo_pqr:p()] ff.\n"
                  "with riarc_demo_pqr:nosuch() monitor ff.", riarc_shml_warnings_run, "t.prop"),
    {ok, R} = riarc:run({riarc_demo_pqr, p, []}, Mod, #{}),
    ?assertEqual([{"t.prop:2:1", "riarc_demo_pqr:nosuch()"}], riarc_shml:unmatched(Mod, R)),
    %% The API's result says it too.
    ?assertEqual([{unmatched_clause, "t.prop:2:1", "riarc_demo_pqr:nosuch()"}], maps:get(warnings, R)).
