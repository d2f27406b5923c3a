%% @doc The tracing backend of the `new_processes' target ({@link riarc:attach/3}): every
%% process spawned from the attach point on is traced from its birth, and each one that
%% Λ gives a monitor is taken over by a tracer of its own, as a spawned child is under
%% run/3.
%%
%% How. The VM's default trace settings for new processes (`erlang:trace(new_processes,
%% ...)') name one tracer, the session's root tracer, the adopter: every process created
%% afterwards carries that tracer and the flags `procs', `send', `'receive'' before it
%% runs its first instruction, so its trace is complete from its first event. The adopter
%% announces each new process C to the tracer core exactly once, as a spawn event: C's
%% parent's own `spawn' event when the adopter traces the parent, else (the parent was
%% alive at the attach point, or is not traced) `{spawn, new_processes, C, MFA}', made
%% from C's `spawned' event once every trace message of the parent has been delivered
%% (the VM delivers the two in either order). From there the tracer core does what it
%% does for any spawn (Alg. 1 HANDLSPWN∘, Alg. 2 INSTRUMENT): a tracer for the child if Λ
%% gives it a monitor, which takes it over with the process tracers' PREEMPT
%% ({@link riarc_backend_evm}: suspend, switch, resume, `trace_delivered'), the adopter's
%% Γ otherwise. The child's own first events can reach the adopter before its
%% announcement: the core's App. B buffer holds them until it comes.
%%
%% Default flags carry no `set_on_spawn': a child of a process the adopter traces is a
%% new process, traced by the adopter through the defaults and announced by its own
%% `spawned' event. A process a monitor's tracer has taken over does carry
%% `set_on_spawn' (the takeover sets the process tracers' flags), so its children stay in
%% its partition as under run/3, and that tracer decodes their `spawned' events as
%% nothing (every tracer makes the child's init event from the parent's spawn event:
%% init_from_spawn/1 is true).
%%
%% Children spawned from another node (spawn/4, erpc) are announced from their `spawned'
%% event, which names the remote parent; no tracer of this node traces that parent, so
%% no spawn event of it comes. The announcement is a spawn event of `new_processes', but
%% the child's init event names its remote parent (init_parent/3, as it names the real
%% parent of any child announced by its `spawned' event): its monitor, and a
%% session following its system here (riarc_follow), know whose child it is. Such a
%% child starts in `erts_internal:dist_spawn_init/1' with only the arity of its call and
%% receives its arguments as its first message
%% ({@link riarc_lambda:remote_spawn/1}): the announcement waits for that receive, so
%% that Λ is asked with the real call (the receive itself is the VM's, not the
%% program's: it is no event). New processes carry the `receive' flag for it whatever
%% events the session asked for, and the receive pattern always keeps that message
%% (riarc_route:receive_pattern/1); a session that traces no receive has every other
%% receive the flag shows dropped here, and a takeover gives the child the tracer's own
%% flags. Only a child that ends before its arguments come is announced without them,
%% each argument `'$unknown'' (Λ's `with' clauses on arguments match none of them).
%%
%% riarc's own processes. Tracers the session starts after the attach point are new
%% processes too, traced by the adopter through the defaults. The adopter keeps them
%% (Λ is never asked about them: riarc:attach/3 answers undefined for riarc's own initial
%% calls), but turns their message events off as soon as it decodes their `spawned'
%% event: what is left is their spawn and exit events, so the adopter's Γ shrinks as they
%% end.
%% ```
%% 1> {ok, B} = riarc_backend_new_processes:new([send, recv], self()).
%% 2> riarc_backend:init_from_spawn(B).
%% true
%% 3> riarc_backend:event(B, {trace, self(), spawned, self(), {m, f, []}}).
%% skip
%% '''
-module(riarc_backend_new_processes).
-behaviour(riarc_backend).

-export([new/2, launch/3, trace/3, preempt/3, clear/3, event/2, init_from_spawn/1,
         init_parent/3, close/1, is_own/1, watching/3, format_error/1]).
-export_type([config/0, error_reason/0]).

-opaque config() :: #{evm := riarc_backend_evm:config(), defaults := [atom()], recv := boolean(),
                      patterns := reference()}.
-type error_reason() :: {already_traced, new_processes, term()}.

%% The adopter marks itself in its process dictionary: event/2 decodes differently there;
%% and each process it announced, `{?ADOPTER, P}': a takeover takes no other process from
%% it (riarc_backend_evm's holder/2 reads both).
-define(ADOPTER, '$riarc_adopter').
-define(ADOPTER_COUNT, '$riarc_adopter_count').
-define(ADOPTER_LIMIT, '$riarc_adopter_limit').
-define(ADOPTER_WAIT, '$riarc_adopter_wait').
%% A child from another node whose arguments are still to come: its spawned event's MFA.
-define(ADOPTER_ARGS, '$riarc_adopter_args').
%% A child from another node announced, not yet handled by the tracer core: its parent.
-define(ADOPTER_FROM, '$riarc_adopter_from').

%% @doc A backend for a session whose root is the pseudo-process `new_processes', tracing
%% spawn and exit always and the message events asked for. (The session is not needed:
%% the argument makes it a backend maker as riarc_backend_route:new/2 is.)
-spec new([send | recv], pid()) -> {ok, riarc_backend:t()}.
new(Events, Session) ->
    %% riarc's patterns, every message kept (the process tracers take every event of the
    %% kinds asked for), held for the session as the other backends hold them: the
    %% receive pattern marks what the clock service delivers, so that a receive timeout is
    %% a timeout and not the message `timeout', and the call patterns show the calls riarc
    %% reads (a timer set to send `timeout', a change of tracing).
    Key = make_ref(),
    ok = riarc_trace_pattern:hold(Key, Session, #{}),
    Evm = riarc_backend_evm:calls(riarc_backend_evm:config(Events)),
    %% With `call': a timer set before a tracer takes a process over is seen too.
    %% riarc's own processes are new processes as well: their calls (a tracer's
    %% takeovers) are dropped by event/2 until the adopter untraces them.
    %% And `receive' always: a child spawned from another node takes its call's
    %% arguments as its first message, which the receive pattern always keeps
    %% (riarc_route:receive_pattern/1); without the session's `recv' the adopter drops
    %% every other receive, and a takeover gives the child the tracer's flags alone.
    Defaults = (riarc_backend_evm:flags(Evm) -- [set_on_spawn, 'receive']) ++ ['receive'],
    %% A process the adopter traces shows the defaults: its takeover gives it every flag.
    {ok, riarc_backend:new(?MODULE, #{evm => riarc_backend_evm:taking_over(Evm, Defaults),
                                      defaults => Defaults,
                                      recv => lists:member(recv, Events), patterns => Key})}.

%% @doc Never called: nothing is launched, the target is every process spawned from now on.
-spec launch(config(), riarc_event:sid(), pid()) -> {error, {riarc_backend_new_processes, term()}}.
launch(_Config, Root, _T) ->
    {error, {?MODULE, {already_traced, new_processes, Root}}}.

%% @doc TRACE(S, T). For the pseudo-process `new_processes' (called by the root tracer T
%% itself, Alg. 6 ROOT), T becomes the VM's default tracer of new processes: the attach
%% point. `{error, ...}' when another tool set the defaults already.
-spec trace(config(), riarc_event:sid(), pid()) -> ok | {error, {riarc_backend_new_processes, error_reason()}}.
trace(#{defaults := Flags}, new_processes, T) when T =:= self() ->
    case erlang:trace_info(new_processes, tracer) of
        {tracer, []} ->
            put(?ADOPTER, true),
            _ = erlang:trace(new_processes, true, [{tracer, T} | Flags]),
            ok;
        {tracer, Other} ->
            {error, {?MODULE, {already_traced, new_processes, Other}}}
    end;
trace(#{evm := Evm}, S, T) ->
    riarc_backend_evm:trace(Evm, S, T).

%% @doc PREEMPT(S, T): the process tracers' takeover; from then on S carries T's flags,
%% `set_on_spawn' among them.
-spec preempt(config(), pid(), pid()) -> ok.
preempt(#{evm := Evm}, S, T) ->
    riarc_backend_evm:preempt(Evm, S, T).

%% @doc Cut detection (riarc_backend:watching/3): S still has every flag its tracer gave it
%% and that tracer. A process the adopter traces carries the defaults for new processes;
%% one a tracer took over, the tracer's flags.
-spec watching(config(), riarc_event:sid(), pid()) -> ok | {flags_removed | tracer_replaced, term()}.
watching(#{defaults := Defaults, evm := Evm}, S, T) ->
    case get(?ADOPTER) of
        true -> riarc_backend:compare_view(S, Defaults, T);
        undefined -> riarc_backend_evm:watching(Evm, S, T)
    end.

%% @doc CLEAR(S, T). For `new_processes': the defaults are turned off (nothing spawned
%% afterwards is traced), then every process still carrying T as its tracer is untraced
%% (created between the tracer's last look and the defaults' end).
-spec clear(config(), riarc_event:sid(), pid()) -> ok.
clear(_Config, new_processes, T) ->
    defaults_off(T),
    sweep(fun(Tracer) -> Tracer =:= T end);
clear(#{evm := Evm}, S, T) ->
    riarc_backend_evm:clear(Evm, S, T).

%% @doc Every tracer makes a child's init event from its parent's spawn event.
-spec init_from_spawn(config()) -> true.
init_from_spawn(_) -> true.

%% @doc The parent a child's init event names: for a child announced as spawned by the
%% pseudo-process `new_processes', its real parent (the `spawned' event's), here or on
%% another node, so that its monitor, and the session, know whose child it is, as under
%% run/3 (a session following its system onto this node matches a remote child with the
%% parent's start, riarc_session's `follow'); any other child's parent as its spawn event
%% says.
-spec init_parent(config(), riarc_event:sid(), riarc_event:sid()) -> riarc_event:sid().
init_parent(_Config, C, new_processes) ->
    case erase({?ADOPTER_FROM, C}) of
        undefined -> new_processes;
        P -> P
    end;
init_parent(_Config, _C, P) ->
    P.

%% @doc The session is over: the defaults are off if a tracer of riarc's set them and is
%% gone, and no process is left with a dead tracer (a tracer killed on overload or crashed
%% leaves its processes' flags behind until their next event).
-spec close(config()) -> ok.
close(#{patterns := Key}) ->
    ok = riarc_trace_pattern:release(Key),
    case erlang:trace_info(new_processes, tracer) of
        {tracer, D} when is_pid(D) ->
            case is_process_alive(D) of
                false -> defaults_off(D);
                true -> ok
            end;
        _ -> ok
    end,
    sweep(fun(Tracer) -> is_pid(Tracer) andalso not is_process_alive(Tracer) end).

defaults_off(T) ->
    case erlang:trace_info(new_processes, tracer) of
        {tracer, T} -> _ = riarc_untrace:untrace(new_processes), ok;
        _ -> ok
    end.

%% Untraces every process whose tracer Dead says is done.
sweep(Done) ->
    _ = [catch riarc_untrace:untrace(P)
         || P <- erlang:processes(),
            {tracer, Tracer} <- [erlang:trace_info(P, tracer)],
            Tracer =/= [], Done(Tracer)],
    ok.

%% @doc Decodes a trace message. In the adopter every new process is announced exactly
%% once (see the module's doc); elsewhere a `spawned' event is nothing (the child's init
%% event comes from its parent's spawn event).
-spec event(config(), term()) -> {ok, riarc_backend:decoded()} | skip | no.
event(#{evm := Evm}, Msg = {trace, P, Tag, C, MFA}) when Tag =:= spawn; Tag =:= spawned ->
    case get(?ADOPTER) of
        true -> adopt(Tag, P, C, MFA);
        undefined when Tag =:= spawned -> skip;
        undefined -> riarc_backend_evm:event(Evm, Msg)
    end;
event(_Config, {trace_delivered, _P, Ref}) ->
    case get(?ADOPTER) of
        true -> delivered(Ref);
        undefined -> no
    end;
event(#{evm := Evm, recv := Recv}, Msg = {trace, C, 'receive', Args}) ->
    case get({?ADOPTER_ARGS, C}) of
        undefined when Recv -> riarc_backend_evm:event(Evm, Msg);
        %% The adopter's own flag, for a remote child's arguments: no event of the
        %% session's.
        undefined -> skip;
        MFA0 ->
            case riarc_lambda:remote_spawn(MFA0) of
                {M, F, Arity} when is_list(Args), length(Args) =:= Arity ->
                    erase({?ADOPTER_ARGS, C}),
                    announce_new(C, {M, F, Args});
                _ ->
                    %% Not its arguments (a VM that passes them otherwise): announced
                    %% as it is.
                    with_announcement(C, case Recv of
                                             true -> riarc_backend_evm:event(Evm, Msg);
                                             false -> skip
                                         end)
            end
    end;
event(#{evm := Evm}, Msg = {trace, P, exit, _}) ->
    _ = get(?ADOPTER) =:= true andalso erase({?ADOPTER, P}),
    case get({?ADOPTER_ARGS, P}) of
        undefined -> riarc_backend_evm:event(Evm, Msg);
        %% Ended before its arguments came (killed at once): announced without them.
        _ -> with_announcement(P, riarc_backend_evm:event(Evm, Msg))
    end;
%% A call of one of riarc's own processes (a new tracer's takeover, before the adopter
%% untraced it on its `spawned' event): no event of the system's, and never one of a
%% process that will be announced, so it is dropped rather than held for ever.
event(#{evm := Evm}, Msg = {trace, P, call, _}) ->
    case get(?ADOPTER) =:= true andalso get({?ADOPTER, P}) =:= undefined andalso own_pid(P) of
        true -> skip;
        false -> riarc_backend_evm:event(Evm, Msg)
    end;
%% A receive timeout (marked by the receive pattern) seen through the adopter's own
%% `receive' flag, when the session traces no receive.
event(#{recv := false}, {trace, _P, 'receive', _Msg, _Marked}) ->
    skip;
event(#{evm := Evm}, Msg) ->
    riarc_backend_evm:event(Evm, Msg).

%% The adopter learns of a child C exactly once: from its parent P's `spawn' event when
%% P was traced by the adopter when it spawned C, else from C's own `spawned' event (C is
%% then announced as spawned by the pseudo-process `new_processes'). Both messages are
%% produced in P's context, but the VM delivers them in either order. So a `spawned'
%% event whose parent is not known yet (P's own announcement may still be on its way) is
%% decided only once every trace message P produced so far has been delivered
%% (`erlang:trace_delivered/1'): if P's spawn event has announced C by then, P was traced
%% and nothing more is done; otherwise P was not, and C is announced then. The children
%% announced are remembered in the adopter's process dictionary until their exit (or, for
%% those a tracer took over, until a prune finds them dead).
adopt(Kind, A, B, MFA0) ->
    {C, P} = case Kind of spawn -> {B, A}; spawned -> {A, B} end,
    case is_own(riarc_lambda:logical_mfa(MFA0)) of
        %% One of riarc's own processes (a tracer, an analysis process) is no part of the
        %% system: untraced at once, never announced, so that what it spawns is not
        %% either; its parent's spawn event is the parent's (ignored) event.
        true ->
            _ = (catch riarc_untrace:untrace(C)),
            case Kind of spawn -> {ok, {ignored, P}}; spawned -> skip end;
        false ->
            adopt_system(Kind, A, B, MFA0)
    end.

adopt_system(spawn, P, C, MFA0) ->
    case announce(C, MFA0) of
        {ok, MFA} -> {ok, {spawn, P, C, MFA}};
        known -> {ok, {ignored, P}}
    end;
adopt_system(spawned, C, P, MFA0) ->
    case {known(C), known(P)} of
        {true, _} -> skip;
        {false, true} ->
            case erlang:trace_info(P, tracer) of
                %% P is still the adopter's: its spawn event of C came here, or comes.
                {tracer, Self} when Self =:= self() -> skip;
                %% P's tracer took it over; P spawned C with `set_on_spawn' off (C got
                %% the defaults, not P's tracer): P's spawn event went here before the
                %% takeover, or to P's tracer after it.
                _ ->
                    Ref = erlang:trace_delivered(P),
                    put({?ADOPTER_WAIT, Ref}, {known_parent, C}),
                    skip
            end;
        {false, false} when node(P) =/= node() ->
            %% Spawned from another node (spawn/4, erpc): that parent is traced by no
            %% tracer of this node, so no spawn event of it comes here.
            put({?ADOPTER_FROM, C}, P),
            case riarc_lambda:remote_spawn(MFA0) of
                {_, _, _} -> put({?ADOPTER_ARGS, C}, MFA0), skip;
                false -> announce_new(C, MFA0)
            end;
        {false, false} ->
            Ref = erlang:trace_delivered(P),
            put({?ADOPTER_WAIT, Ref}, {C, P, MFA0}),
            skip
    end.

%% Every trace message of P has been delivered: C's parent's spawn event announced it,
%% or never will.
delivered(Ref) ->
    case erase({?ADOPTER_WAIT, Ref}) of
        undefined -> no;
        {known_parent, C} ->
            case known(C) of
                true -> skip;
                false -> orphan(C)
            end;
        {C, P, MFA0} ->
            %% Race: P announced meanwhile was traced when it spawned C, by the adopter
            %% (whose spawn event then announced C) or by its own tracer after a takeover
            %% (which took C over from P's spawn event, never seen here): either way C is
            %% someone's already, and announcing it again would instrument it twice.
            case known(P) of
                true -> skip;
                false ->
                    %% Its init event names P (init_parent/3), as run/3's root's names
                    %% its caller, also a process no tracer traces.
                    case announce_new(C, MFA0) of
                        skip -> skip;
                        Announced -> put({?ADOPTER_FROM, C}, P), Announced
                    end
            end
    end.

known(P) -> get({?ADOPTER, P}) =:= true.

%% C, traced here by the defaults, is a child of a process another tracer traces, whose
%% spawn event of C went there: that tracer counts C as its own (Alg. 2, as a child
%% inherits its parent's tracer) and waits for its events, which come here, where C is
%% nobody's; announcing C here would instrument it twice, and no takeover takes it from
%% here (riarc_backend_evm's holder/2: C was never announced). So C is untraced: that
%% tracer's look finds it so and cuts its partition's view, as under run/3, where such a
%% child is not traced at all, and nobody waits for its exit. The events C showed here
%% stay held until the adopter ends (held events of a partition that is an error).
%% Race: another tool may trace C between the check of its tracer and the untracing;
%% C is suspended meanwhile, so that only riarc's tracing of it is taken away.
orphan(C) ->
    try erlang:suspend_process(C) of
        true ->
            try
                _ = erlang:trace_info(C, tracer) =:= {tracer, self()} andalso riarc_untrace:untrace(C),
                ok
            after
                catch erlang:resume_process(C)
            end
    catch
        error:badarg -> ok
    end,
    skip.

%% C announced as spawned by the pseudo-process `new_processes'.
announce_new(C, MFA0) ->
    case announce(C, MFA0) of
        {ok, MFA} -> {ok, {spawn, new_processes, C, MFA}};
        known -> skip
    end.

%% A child from another node announced without its arguments, then its event Decoded.
with_announcement(C, Decoded) ->
    case {announce_new(C, erase({?ADOPTER_ARGS, C})), Decoded} of
        {{ok, Spawn}, {ok, E}} -> {ok, [Spawn, E]};
        {{ok, Spawn}, _} -> {ok, Spawn};
        {skip, _} -> Decoded
    end.

announce(C, MFA0) ->
    case known(C) of
        true -> known;
        false ->
            put({?ADOPTER, C}, true),
            prune(),
            {ok, riarc_lambda:logical_mfa(MFA0)}
    end.

%% Bounded memory: every time the announced children double, the dead are forgotten.
prune() ->
    N = case get(?ADOPTER_COUNT) of undefined -> 1; K -> K + 1 end,
    Limit = case get(?ADOPTER_LIMIT) of undefined -> 1024; L -> L end,
    case N >= Limit of
        false -> put(?ADOPTER_COUNT, N);
        true ->
            Dead = [K || {{?ADOPTER, Pid} = K, true} <- get(), not is_process_alive(Pid)],
            _ = [erase(K) || K <- Dead],
            put(?ADOPTER_COUNT, N - length(Dead)),
            put(?ADOPTER_LIMIT, 2 * max(1024, N - length(Dead)))
    end.

%% Whether P, alive, was started as one of riarc's own processes (proc_lib's initial call).
own_pid(P) ->
    case erlang:process_info(P, dictionary) of
        {dictionary, D} ->
            case lists:keyfind('$initial_call', 1, D) of
                {_, {M, F, A}} when is_integer(A) -> is_own({M, F, []});
                _ -> false
            end;
        undefined -> false
    end.

%% @doc True for the logical initial call of one of riarc's own processes (a tracer, an
%% analysis process, a session, and on a node riarc attached to from elsewhere, its
%% janitor and the erpc calls that start things there): never monitored, whatever the
%% Spec says.
-spec is_own(riarc_event:mfa_args()) -> boolean().
is_own({M, _, _}) -> lists:member(M, [riarc_tracer, riarc_session, riarc_analysis, riarc_remote]);
is_own(_) -> false.

%% @doc A sentence for an error of this backend.
-spec format_error(error_reason()) -> string().
format_error({already_traced, new_processes, Tracer}) ->
    lists:flatten(io_lib:format("new processes are traced by ~p already: the VM has one default "
                                "tracer for new processes", [Tracer])).
