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
%% '''
-module(riarc_lambda).

-export([new/1, lookup/2, logical_mfa/1, running_mfa/1, valid_spec/1]).
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
logical_mfa({M, F, A}) when is_atom(M), is_atom(F), is_list(A) -> {M, F, A};
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

%% gen:init_it/6 and /7 are how gen_server, gen_statem and supervisor processes start.
proc_lib_mfa(gen, init_it, [GenMod, _Starter, _Parent, Mod, Args, _Opts])
  when is_atom(GenMod), is_atom(Mod) ->
    callback_mfa(GenMod, Mod, Args);
proc_lib_mfa(gen, init_it, [GenMod, _Starter, _Parent, _Name, Mod, Args, _Opts])
  when is_atom(GenMod), is_atom(Mod) ->
    callback_mfa(GenMod, Mod, Args);
proc_lib_mfa(M, F, A) when is_atom(M), is_atom(F), is_list(A) -> {M, F, A};
proc_lib_mfa(_, _, _) -> undefined.

%% A supervisor is a gen_server whose callback module is `supervisor' and whose argument
%% carries the user's module: report the user's module, as the issue and proc_lib do.
callback_mfa(gen_server, supervisor, {_SupName, Mod, Args}) -> {Mod, init, [Args]};
callback_mfa(gen_server, supervisor_bridge, [Mod, Args | _]) -> {Mod, init, [Args]};
callback_mfa(_GenMod, Mod, Args) -> {Mod, init, [Args]}.

fun_mfa(Fun, Args) ->
    {module, M} = erlang:fun_info(Fun, module),
    {name, N} = erlang:fun_info(Fun, name),
    {M, N, Args}.
