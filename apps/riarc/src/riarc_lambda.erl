%% @doc Λ, the instrumentation map: which spawned processes get a tracer and monitor of
%% their own, decided from the process's logical initial call.
%%
%% A Spec is `fun((MFA) -> {ok, Monitor} | undefined)` or a module exporting `spec/1` of
%% that shape. The MFA a Spec sees is always `{Module, Function, Args}` with Args a list:
%% <ul>
%% <li>`spawn(M, F, Args)' (and spawn_link, spawn_opt, ...): `{M, F, Args}' as written;</li>
%% <li>a fun, `spawn(fun ...)' or `proc_lib:spawn(fun ...)': `{Module, Name, []}' where
%%     Name is the fun's name as `erlang:fun_info(Fun, name)' gives it (`'-start/0-fun-0-''
%%     for an anonymous fun, `loop' for `fun loop/0');</li>
%% <li>gen_server, gen_statem and supervisor processes started through proc_lib:
%%     `{CallbackModule, init, [InitArg]}', the call the behaviour makes into your code;</li>
%% <li>Elixir processes: a GenServer, Supervisor or Agent is a gen_server above, so it is
%%     `{CallbackModule, init, [InitArg]}' (``{'Elixir.Bank', init, [Arg]}'' for
%%     `GenServer.start_link(Bank, Arg)'); a DynamicSupervisor (and so a Task.Supervisor)
%%     is `{CallbackModule, init, [InitArg]}' of the module given to
%%     `DynamicSupervisor.start_link/3', as for an Erlang supervisor;</li>
%% <li>an Elixir Task whose function its spawn carries (`Task.start/1,3',
%%     `Task.start_link/1,3', `Task.Supervisor.start_child/2,4', a Task child of a
%%     Supervisor): the function it runs, `{M, F, Args}' for `Task.start(M, F, Args)' and
%%     `{Module, Name, []}' for a fun, as for spawn;</li>
%% <li>an Elixir Task that is sent its function after it starts (`Task.async/1,3',
%%     `Task.Supervisor.async/2,4', `Task.Supervisor.async_nolink/2,4' in Elixir 1.14):
%%     ``{'Elixir.Task', async, [Owner]}'' with Owner the pid that asked for the Task;
%%     Λ decides at the spawn, before the function is known;</li>
%% <li>any other `proc_lib' start `proc_lib:spawn(M, F, Args)': `{M, F, Args}'.</li>
%% </ul>
%% The root of a run is asked with the MFA given to {@link riarc:run/3}.
%%
%% A Spec that returns undefined puts the process in its parent's partition (one tracer,
%% one monitor for both); one that returns a monitor for every process gives the
%% one-tracer-per-process set-up of fig. 2b, one that returns a monitor only for the root
%% gives the centralised set-up of fig. 1b, and anything between gives groups (fig. 1c).
%% ```
%% 1> riarc_lambda:logical_mfa({proc_lib, init_p, [self(), [], gen, init_it,
%%        [gen_server, self(), self(), my_srv, [], []]]}).
%% {my_srv,init,[[]]}
%% 2> L = riarc_lambda:new(fun({my_srv, init, _}) -> {ok, fun(_) -> accept end};
%%                            (_) -> undefined end).
%% 3> riarc_lambda:lookup(L, {my_srv, init, [[]]}).
%% {ok,#Fun<...>}
%% 4> riarc_lambda:logical_mfa({proc_lib, init_p, [self(), [], 'Elixir.Task.Supervised',
%%        noreply, [{node(), self(), self()}, [self()], {'Elixir.Bank', settle, [1, 2]}]]}).
%% {'Elixir.Bank',settle,[1,2]}
%% 5> riarc_lambda:logical_mfa({erts_internal, dist_spawn_init, [{bank, open, 2}]}).
%% {bank,open,['$unknown','$unknown']}
%% '''
-module(riarc_lambda).

-export([new/1, lookup/2, logical_mfa/1, running_mfa/1, remote_spawn/1, valid_spec/1,
         spec_defaults/1]).
-export_type([t/0, spec/0]).

-type spec() :: fun((riarc_event:mfa_args()) -> {ok, riarc_monitor:monitor()} | undefined)
              | module().
-opaque t() :: #{spec := spec()}.

%% @doc Wraps a Spec as Λ.
-spec new(spec()) -> t().
new(Spec) -> #{spec => Spec}.

%% @doc True when Spec has one of the two accepted shapes.
-spec valid_spec(term()) -> boolean().
valid_spec(Spec) when is_function(Spec, 1) -> true;
valid_spec(Spec) when is_atom(Spec) ->
    _ = code:ensure_loaded(Spec),
    erlang:function_exported(Spec, spec, 1);
valid_spec(_) -> false.

%% @doc The options a Spec module sets: one that knows which message events its monitors
%% can need (a compiled property file exports trace_flags/0 and trace_patterns/0) sets
%% the defaults of `events' and `trace_patterns'; one whose monitors' steps are bounded
%% (a compiled property's: guard tests and pattern matches) may say where they run,
%% `analysis/0'.
-spec spec_defaults(riarc_lambda:spec()) -> #{events => [send | recv],
                                             trace_patterns => riarc_trace_pattern:patterns(),
                                             analysis => isolated | inline}.
spec_defaults(Spec) when is_atom(Spec) ->
    _ = code:ensure_loaded(Spec),
    maps:from_list([{Opt, Spec:Fun()} || {Opt, Fun} <- [{events, trace_flags},
                                                          {trace_patterns, trace_patterns},
                                                          {analysis, analysis}],
                                         erlang:function_exported(Spec, Fun, 0)]);
spec_defaults(_) ->
    #{}.

%% @doc Λ(ςS): the monitor for a process with this logical MFA, or undefined. A Spec that
%% crashes or answers something else is treated as undefined and reported by the caller.
-spec lookup(t(), riarc_event:mfa_args()) ->
    {ok, riarc_monitor:monitor()} | undefined | {error, term()}.
lookup(#{spec := Spec}, MFA) ->
    try call_spec(Spec, MFA) of
        {ok, Monitor} -> {ok, Monitor};
        undefined -> undefined;
        Other -> {error, {bad_spec_result, MFA, Other}}
    catch
        Class:Reason:Stack -> {error, {spec_crashed, MFA, {Class, Reason, Stack}}}
    end.

call_spec(Spec, MFA) when is_function(Spec, 1) -> Spec(MFA);
call_spec(Spec, MFA) when is_atom(Spec) -> Spec:spec(MFA).

%% @doc The logical initial call of a process from the MFA its spawn trace event carries,
%% translated as proc_lib's own `translate_initial_call' does, but keeping the arguments.
-spec logical_mfa(term()) -> riarc_event:mfa_args().
logical_mfa({erlang, apply, [Fun, Args]}) when is_function(Fun), is_list(Args) ->
    fun_mfa(Fun, Args);
logical_mfa({proc_lib, init_p, [_Parent, _Ancestors, Fun]}) when is_function(Fun) ->
    fun_mfa(Fun, []);
logical_mfa({proc_lib, init_p, [_Parent, _Ancestors, M, F, A]}) ->
    proc_lib_mfa(M, F, A);
%% erpc (and rpc, built on it) runs a call from another node in a process of its own: the
%% process is the call it runs, as a Task is its function.
logical_mfa({erpc, execute_call, [_Ref, M, F, A]}) when is_atom(M), is_atom(F), is_list(A) ->
    {M, F, A};
logical_mfa({erpc, execute_cast, [M, F, A]}) when is_atom(M), is_atom(F), is_list(A) ->
    {M, F, A};
%% Spawned from another node, before its arguments are known (remote_spawn/1): each is
%% given as the atom `'$unknown'', as for a process riarc attaches to.
logical_mfa({erts_internal, dist_spawn_init, [{M, F, Arity}]}) when is_integer(Arity) ->
    {M, F, lists:duplicate(Arity, '$unknown')};
logical_mfa({M, F, A}) when is_atom(M), is_atom(F), is_list(A) -> {M, F, A};
logical_mfa(MFA = {M, F, A}) when is_list(A) ->
    %% Offline, a name the checking node lacks stays a name (riarc_event:is_name/1).
    case riarc_event:is_name(M) andalso riarc_event:is_name(F) of
        true -> MFA;
        false -> undefined
    end;
logical_mfa(_) -> undefined.

%% @doc The logical initial call of a process that is already running (riarc attaches to
%% it): proc_lib's `$initial_call' where there is one (so a gen_server is its callback
%% module's init), else the VM's initial call. The arguments it was started with are
%% gone: each is given as the atom `'$unknown''.
-spec running_mfa(pid()) -> riarc_event:mfa_args().
running_mfa(Pid) ->
    case erlang:process_info(Pid, [dictionary, initial_call]) of
        [{dictionary, D}, {initial_call, Init}] ->
            {M, F, Arity} = case lists:keyfind('$initial_call', 1, D) of
                                {_, {_, _, _} = IC} -> IC;
                                false -> Init
                            end,
            {M, F, lists:duplicate(Arity, '$unknown')};
        undefined -> undefined
    end.

%% @doc A process spawned from another node (spawn/4, spawn_link/4, erpc, rpc) starts in
%% `erts_internal:dist_spawn_init/1' with only the arity of its call: the VM passes the
%% arguments as the process's first message, which it receives at once (its first
%% `receive' trace event is the argument list). `{M, F, Arity}' for such an initial call,
%% `false' for any other; logical_mfa({M, F, Args}) is the call once Args are known.
-spec remote_spawn(term()) -> {module(), atom(), arity()} | false.
remote_spawn({erts_internal, dist_spawn_init, [{M, F, Arity}]})
  when is_atom(M), is_atom(F), is_integer(Arity) ->
    {M, F, Arity};
remote_spawn(_) ->
    false.

%% gen:init_it/6 and /7 are how gen_server, gen_statem and supervisor processes start.
proc_lib_mfa(gen, init_it, [GenMod, _Starter, _Parent, Mod, Args, _Opts])
  when is_atom(GenMod), is_atom(Mod) ->
    callback_mfa(GenMod, Mod, Args);
proc_lib_mfa(gen, init_it, [GenMod, _Starter, _Parent, _Name, Mod, Args, _Opts])
  when is_atom(GenMod), is_atom(Mod) ->
    callback_mfa(GenMod, Mod, Args);
proc_lib_mfa('Elixir.Task.Supervised', F, A) when is_atom(F), is_list(A) ->
    task_mfa(F, A);
proc_lib_mfa(M, F, A) when is_atom(M), is_atom(F), is_list(A) -> {M, F, A};
proc_lib_mfa(_, _, _) -> undefined.

%% Elixir's Task processes all start in 'Elixir.Task.Supervised'. Where the spawn carries
%% the Task's function (its last argument, `{M, F, Args}' or `{erlang, apply, [Fun, Args]}':
%% noreply/3 in Elixir 1.14, used by Task.start and Task.start_link), the Task is that
%% function. Where it does not (reply/2 in 1.14: Task.async sends the function in a
%% message once the Task runs), the spawn says only who asked for it: the Task's
%% function is not known when Λ is asked, and cannot be, since Λ decides at the spawn.
task_mfa(F, A) when A =/= [] ->
    case lists:last(A) of
        {erlang, apply, [Fun, Args]} when is_function(Fun), is_list(Args) -> fun_mfa(Fun, Args);
        {M, Fn, Args} when is_atom(M), is_atom(Fn), is_list(Args) -> {M, Fn, Args};
        _ -> task_async_mfa(F, A)
    end;
task_mfa(F, A) ->
    task_async_mfa(F, A).

task_async_mfa(reply, [{_Node, _NameOrPid, Owner} | _]) when is_pid(Owner) ->
    {'Elixir.Task', async, [Owner]};
task_async_mfa(F, A) -> {'Elixir.Task.Supervised', F, A}.

%% A supervisor is a gen_server whose callback module is `supervisor' and whose argument
%% carries the user's module: report the user's module, as the issue and proc_lib do.
callback_mfa(gen_server, supervisor, {_SupName, Mod, Args}) -> {Mod, init, [Args]};
callback_mfa(gen_server, supervisor_bridge, [Mod, Args | _]) -> {Mod, init, [Args]};
%% Elixir's DynamicSupervisor (and Task.Supervisor, built on it) is a gen_server whose
%% argument carries the user's module, as for supervisor.
callback_mfa(gen_server, 'Elixir.DynamicSupervisor', {Mod, Args, _Name}) when is_atom(Mod) ->
    {Mod, init, [Args]};
callback_mfa(_GenMod, Mod, Args) -> {Mod, init, [Args]}.

fun_mfa(Fun, Args) ->
    {module, M} = erlang:fun_info(Fun, module),
    {name, N} = erlang:fun_info(Fun, name),
    {M, N, Args}.
