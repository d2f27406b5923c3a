%% Λ on real code: the logical initial call of spawn/3, funs, gen_server, gen_statem and
%% supervisor processes, taken from live spawn trace events.
-module(riarc_lambda_tests).

-include_lib("eunit/include/eunit.hrl").

-export([named/0]).

named() -> ok.

%% Spawns through Fun while tracing the caller, and returns the MFA its spawn event carries.
spawn_mfa(Fun) ->
    Self = self(),
    Tracer = spawn(fun() -> receive {trace, _, spawn, _, MFA} -> Self ! {mfa, MFA} end end),
    erlang:trace(self(), true, [procs, {tracer, Tracer}]),
    Fun(),
    erlang:trace(self(), false, [procs]),
    receive {mfa, MFA} -> riarc_lambda:logical_mfa(MFA) end.

spawn3_test() ->
    ?assertEqual({lists, seq, [1, 2]}, spawn_mfa(fun() -> spawn(lists, seq, [1, 2]) end)).

fun_test() ->
    ?assertMatch({?MODULE, _, []}, spawn_mfa(fun() -> spawn(fun() -> ok end) end)),
    ?assertEqual({?MODULE, named, []}, spawn_mfa(fun() -> spawn(fun named/0) end)),
    ?assertEqual({?MODULE, named, []}, spawn_mfa(fun() -> proc_lib:spawn(fun named/0) end)).

proc_lib_mfa_test() ->
    ?assertEqual({lists, seq, [1, 2]}, spawn_mfa(fun() -> proc_lib:spawn(lists, seq, [1, 2]) end)).

gen_server_test() ->
    ok = load_callback(riarc_lambda_server, {ok, s}),
    MFA = spawn_mfa(fun() -> {ok, P} = gen_server:start(riarc_lambda_server, x, []), exit(P, kill) end),
    ?assertEqual({riarc_lambda_server, init, [x]}, MFA).

supervisor_test() ->
    ok = load_callback(riarc_lambda_sup, {ok, {#{}, []}}),
    MFA = spawn_mfa(fun() -> {ok, P} = supervisor:start_link(riarc_lambda_sup, x), unlink(P), exit(P, kill) end),
    ?assertEqual({riarc_lambda_sup, init, [x]}, MFA).

gen_statem_test() ->
    ok = load_callback(riarc_lambda_statem, {ok, s, d}),
    MFA = spawn_mfa(fun() -> {ok, P} = gen_statem:start(riarc_lambda_statem, x, []), exit(P, kill) end),
    ?assertEqual({riarc_lambda_statem, init, [x]}, MFA).

%% A behaviour callback module made at run time, whose init/1 returns Init, so that the
%% test needs no example system.
load_callback(Mod, Init) ->
    Forms = [{attribute, 1, module, Mod},
             {attribute, 2, export, [{init, 1}, {callback_mode, 0}]},
             {function, 3, init, 1, [{clause, 3, [{var, 3, '_'}], [], [erl_parse:abstract(Init, 3)]}]},
             {function, 4, callback_mode, 0, [{clause, 4, [], [], [{atom, 4, state_functions}]}]}],
    {ok, Mod, Bin} = compile:forms(Forms),
    {module, Mod} = code:load_binary(Mod, atom_to_list(Mod) ++ ".erl", Bin),
    ok.

spec_crash_test() ->
    L = riarc_lambda:new(fun(_) -> error(oops) end),
    ?assertMatch({error, {spec_crashed, {m, f, []}, _}}, riarc_lambda:lookup(L, {m, f, []})),
    L2 = riarc_lambda:new(fun(_) -> yes end),
    ?assertMatch({error, {bad_spec_result, _, yes}}, riarc_lambda:lookup(L2, {m, f, []})).
