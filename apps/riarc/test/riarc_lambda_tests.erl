%% Λ on real code: the logical initial call of spawn/3, funs, gen_server, gen_statem and
%% supervisor processes, and of Elixir's Tasks, Agents and Task.Supervisors (through
%% Elixir's own standard library, when it is installed), taken from live spawn trace
%% events.
-module(riarc_lambda_tests).

-include_lib("eunit/include/eunit.hrl").

-export([named/0, wait/0, running/1]).

named() -> ok.

%% A Task body that stays until told to go.
wait() -> receive go -> ok end.

%% A Task body that says it runs, then stays until told to go.
running(Parent) -> Parent ! {running, self()}, wait().

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

%%% Elixir (docs/elixir.md): real Tasks, started through Elixir's standard library.

%% The logical MFAs of every process Fun spawns, directly or through the processes it
%% spawns, in the order the spawns were traced.
spawn_mfas(Fun) ->
    Self = self(),
    Tracer = spawn(fun() -> collect(Self, []) end),
    erlang:trace(self(), true, [procs, set_on_spawn, {tracer, Tracer}]),
    Fun(),
    erlang:trace(self(), false, [procs, set_on_spawn]),
    %% Every spawn event (of this process and of those it spawned) is delivered before
    %% the tracer is asked.
    Ref = erlang:trace_delivered(all),
    receive {trace_delivered, _, Ref} -> ok end,
    Tracer ! {done, self()},
    receive {mfas, MFAs} -> [riarc_lambda:logical_mfa(MFA) || MFA <- MFAs] end.

collect(Self, Acc) ->
    receive
        {trace, _, spawn, _, MFA} -> collect(Self, [MFA | Acc]);
        {done, Self} -> Self ! {mfas, lists:reverse(Acc)};
        _ -> collect(Self, Acc)
    end.

%% Elixir's standard library on the code path, or why not (Debian's `elixir' package puts
%% it in /usr/lib/elixir).
elixir() ->
    case code:which('Elixir.Task') of
        non_existing ->
            Ebin = "/usr/lib/elixir/lib/elixir/ebin",
            case filelib:is_dir(Ebin) of
                true -> true = code:add_patha(Ebin), ok;
                false -> {skip, "Elixir is not installed (no " ++ Ebin ++ ")"}
            end;
        _ -> ok
    end.

elixir_test_() ->
    case elixir() of
        ok ->
            [fun task_start_mfa/0, fun task_start_fun/0, fun task_start_link/0,
             fun task_supervisor/0, fun task_async/0, fun agent/0, fun task_attached/0];
        {skip, Why} ->
            io:format(user, "riarc_lambda_tests: Elixir tests skipped: ~s~n", [Why]),
            []
    end.

%% Task.start(M, F, Args) is asked as {M, F, Args}, the function the Task runs.
task_start_mfa() ->
    ?assertEqual([{lists, seq, [1, 2]}],
                 spawn_mfas(fun() -> {ok, _} = 'Elixir.Task':start(lists, seq, [1, 2]) end)).

%% Task.start(fun) is asked as the fun, as spawn(fun) is.
task_start_fun() ->
    ?assertEqual([{?MODULE, named, []}],
                 spawn_mfas(fun() -> {ok, _} = 'Elixir.Task':start(fun named/0) end)).

task_start_link() ->
    ?assertEqual([{?MODULE, wait, []}],
                 spawn_mfas(fun() -> {ok, P} = 'Elixir.Task':start_link(?MODULE, wait, []),
                                      unlink(P), P ! go end)).

%% A Task.Supervisor is a DynamicSupervisor: asked as its own module's init, and its
%% children as the functions they run.
task_supervisor() ->
    MFAs = spawn_mfas(fun() ->
                              {ok, Sup} = 'Elixir.Task.Supervisor':start_link([]),
                              {ok, _} = 'Elixir.Task.Supervisor':start_child(Sup, lists, seq, [1, 3]),
                              unlink(Sup), exit(Sup, kill)
                      end),
    ?assertMatch([{'Elixir.Task.Supervisor', init, [_]}, {lists, seq, [1, 3]}], MFAs).

%% Task.async sends the Task its function after the spawn, so Λ can only know who asked.
task_async() ->
    Self = self(),
    ?assertEqual([{'Elixir.Task', async, [Self]}],
                 spawn_mfas(fun() -> [1, 2] = 'Elixir.Task':await('Elixir.Task':async(lists, seq, [1, 2])) end)).

%% An Agent is a GenServer: asked as its callback module's init with the Agent's fun.
agent() ->
    F = fun() -> 0 end,
    ?assertEqual([{'Elixir.Agent.Server', init, [F]}],
                 spawn_mfas(fun() -> {ok, A} = 'Elixir.Agent':start(F), ok = 'Elixir.Agent':stop(A) end)).

%% A running Task (riarc attaches to it) is the function it runs: Elixir keeps it as
%% `$initial_call', put there before the function is called.
task_attached() ->
    {ok, P} = 'Elixir.Task':start(?MODULE, running, [self()]),
    receive {running, P} -> ok end,
    ?assertEqual({?MODULE, running, ['$unknown']}, riarc_lambda:running_mfa(P)),
    P ! go.
