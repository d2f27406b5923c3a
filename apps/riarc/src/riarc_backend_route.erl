%% @doc The online tracing backend over {@link riarc_route}: the VM's tracer of every
%% traced process is one routing table, and TRACE, PREEMPT and CLEAR (Alg. 5) change
%% the table, never the VM's tracer.
%%
%% PREEMPT is a change of route (`riarc_route:switch/3'), atomic with the sending of
%% events: it returns exactly how many of the process's events went to the old tracer
%% (`{count, N}'), or `exited' when the process had ended. The old tracer holds the
%% detach request until it has dispatched that many events of the process
%% ({@link riarc_tracer_core}, DISPATCHDTC), so no event can be lost, duplicated or late,
%% whatever order the VM delivers messages from different senders in. No suspension, no
%% clock: see "The takeover" in docs/core.md for the argument.
%%
%% The VM's `spawned' events are not used (they come from the parent's context, unordered
%% with the child's own events): the tracer that handles a spawn event makes the child's
%% init event itself (init_from_spawn/1 is true).
%% ```
%% 1> {ok, B} = riarc_backend_route:new([send, recv], self()).
%% 2> riarc_backend:event(B, {trace, self(), receive_timeout}).
%% {ok,{timeout,<0.85.0>}}
%% 3> riarc_backend:close(B).
%% ok
%% '''
-module(riarc_backend_route).
-behaviour(riarc_backend).

-export([new/2, new/3, spawn_paused/1, launch/3, trace/3, preempt/3, clear/3, event/2,
         init_from_spawn/1, close/1, tracer_module/1, watching/3, format_error/1]).
%% Spawned entry point.
-export([paused_root/1]).
-export_type([config/0, error_reason/0]).

%% seal: the secret every event of the table carries (riarc_route:new/2); a config
%% without one (the model checker's) takes events unsealed. patterns: the hold on the
%% node-global message patterns this session installed (riarc_trace_pattern).
-opaque config() :: #{table := riarc_route:table() | undefined, flags := [atom()],
                      seal => pos_integer(), patterns => reference()}.
-type error_reason() :: riarc_route:error_reason().

%% @doc A backend tracing spawn and exit always and the message events asked for, over a
%% new routing table whose events of unknown processes go to DefaultOwner.
-spec new([send | recv], pid()) -> {ok, riarc_backend:t()} | {error, {riarc_route, error_reason()}}.
new(Events, DefaultOwner) ->
    new(Events, #{}, DefaultOwner).

%% @doc As new/2, tracing only the sent and received messages Patterns keep (see
%% riarc_trace_pattern; node-global, held until close/1).
-spec new([send | recv], riarc_trace_pattern:patterns(), pid()) ->
    {ok, riarc_backend:t()} | {error, {riarc_route, error_reason()}}.
new(Events, Patterns, DefaultOwner) ->
    %% Trust boundary: the session's secret, never given to the system.
    {Seal, _} = rand:uniform_s(1 bsl 56 - 1, rand:seed_s(exsss)),
    %% The session's message patterns, held for as long as the session (DefaultOwner)
    %% lives or until close/1, before the table: the receive pattern the table needs
    %% comes with them (riarc_trace_pattern), and the node's own is saved first.
    Key = make_ref(),
    ok = riarc_trace_pattern:hold(Key, DefaultOwner, Patterns),
    case riarc_route:new(DefaultOwner, #{seal => Seal, receive_pattern => false}) of
        {ok, Table} ->
            %% `call': with riarc_trace_pattern's pattern on the function the starts of
            %% processes on other nodes go through, such a start is an event of its
            %% parent's (remote_spawn), in the parent's order.
            Flags = [procs, call | [send || lists:member(send, Events)]
                     ++ ['receive' || lists:member(recv, Events)]],
            {ok, riarc_backend:new(?MODULE, #{table => Table, flags => Flags, seal => Seal,
                                              patterns => Key})};
        {error, Reason} ->
            ok = riarc_trace_pattern:release(Key),
            {error, {riarc_route, Reason}}
    end.

%% @doc Alg. 6 START: spawns the system's root process, paused until its tracer launches it.
-spec spawn_paused({module(), atom(), list()}) -> pid().
spawn_paused(MFA) ->
    spawn(?MODULE, paused_root, [MFA]).

%% @private The paused root: its tracer traces it, then says go. The `go' message is the
%% root's first traced event; event/2 drops it (it is riarc's, not the system's).
-spec paused_root({module(), atom(), list()}) -> term().
paused_root({M, F, A}) ->
    receive
        {riarc_go, Ref} when is_reference(Ref) -> apply(M, F, A);
        {riarc_abort, Ref} when is_reference(Ref) -> ok
    end.

%% @doc Alg. 6 ROOT: trace the paused root for T, then let it run. An error (the root is
%% traced by another tool already) leaves the root unstarted, and it is told to end.
-spec launch(config(), pid(), pid()) -> ok | {error, {riarc_route, error_reason()}}.
launch(Config, Root, T) ->
    Ref = make_ref(),
    case trace(Config, Root, T) of
        ok -> Root ! {riarc_go, Ref}, ok;
        {error, _} = E -> Root ! {riarc_abort, Ref}, E
    end.

%% @doc TRACE(S, T).
-spec trace(config(), pid(), pid()) -> ok | {error, {riarc_route, error_reason()}}.
trace(#{table := Table, flags := Flags}, S, T) ->
    case riarc_route:trace(Table, S, T, Flags) of
        ok -> ok;
        {error, Reason} -> {error, {riarc_route, Reason}}
    end.

%% @doc PREEMPT(S, T): a change of route, and where the cut is.
-spec preempt(config(), pid(), pid()) -> {ok, riarc_backend:cut()}.
preempt(#{table := Table}, S, T) ->
    case riarc_route:switch(Table, S, T) of
        {ok, N} -> {ok, {count, N}};
        {error, gone} -> {ok, exited}
    end.

%% @doc CLEAR(S, T): S runs on untraced. Nothing of S is in flight afterwards: the table
%% sends from inside S, so what it sent is in the owner's mailbox already.
-spec clear(config(), pid(), pid()) -> ok.
clear(#{table := Table}, S, _T) ->
    riarc_route:clear(Table, S).

%% @doc Every tracer makes its children's init events from their spawn events.
-spec init_from_spawn(config()) -> true.
init_from_spawn(_) -> true.

%% @doc The session is over: the table stops sending, and every process still carrying
%% it as its tracer is untraced (a process the tracers did not clear: the session ended
%% abruptly, or detached everything at once on overload); its message patterns are let go.
-spec close(config()) -> ok.
close(#{table := Table, patterns := Key}) ->
    ok = riarc_route:stop(Table),
    _ = [riarc_route:clear(Table, P) || P <- erlang:processes(), traced_by(P, Table)],
    riarc_trace_pattern:release(Key).

%% @doc What erlang:trace_info/2 shows as the tracer of a process the table traces.
-spec tracer_module(config()) -> {riarc_route, riarc_route:table()}.
tracer_module(#{table := Table}) -> {riarc_route, Table}.

traced_by(P, Table) ->
    riarc_backend:tracer_of(P) =:= {riarc_route, Table}.

%% @doc Cut detection: S still has every flag the table set, and the table as its tracer.
%% Race: riarc's own detach (close/1, at an overload) stops the table, then untraces every
%% process it traced; a tracer that looks at S in between finds S untraced, by riarc. A
%% stopped table and S with no flag and no tracer left is that: no cut by someone else.
%% Anything else is one, stopped table or not (another tracer, some flags only).
-spec watching(config(), riarc_event:sid(), pid()) -> ok | {flags_removed | tracer_replaced, term()}.
watching(#{table := Table, flags := Flags}, S, _T) ->
    case riarc_backend:compare_view(S, Flags, {riarc_route, Table}) of
        ok -> ok;
        {flags_removed, []} = Lost ->
            %% The stop comes before the untracing (close/1): a process found untraced
            %% after it finds the table stopped too.
            case riarc_route:enabled(trace_status, Table, S) of
                remove -> ok;
                _ -> Lost
            end;
        Lost -> Lost
    end.

%% @doc Decodes the table's messages into riarc events. A message the table sent that
%% monitors do not see (the root's `go', a link event of the `procs' flag) is still one
%% of the process's events for the count a Cut is made of: `{ignored, P}'. A trace
%% message without the table's seal did not come from the table (the system forged it):
%% `no', it is not an event.
-spec event(config(), term()) -> {ok, riarc_backend:decoded()} | no.
event(#{seal := Seal}, {riarc_sealed, Seal, Msg}) -> decode(Msg);
event(#{seal := _}, _) -> no;
event(_, Msg) -> decode(Msg).

decode({trace, P, send, Msg, To}) -> {ok, {send, P, To, Msg}};
decode({trace, P, 'receive', {riarc_go, Ref}}) when is_reference(Ref) -> {ok, {ignored, P}};
decode({trace, P, 'receive', Msg}) -> {ok, {recv, P, Msg}};
decode({trace, P, receive_timeout}) -> {ok, {timeout, P}};
decode({trace, P, spawn, C, MFA}) -> {ok, {spawn, P, C, riarc_lambda:logical_mfa(MFA)}};
decode({trace, P, exit, Reason}) -> {ok, {exit, P, Reason}};
decode({trace, P, call, Call}) -> {ok, riarc_trace_pattern:call_event(P, Call)};
decode({trace, P, send_to_non_existing_process, Msg, To}) -> {ok, {send, P, To, Msg}};
decode(Msg) when element(1, Msg) =:= trace, is_pid(element(2, Msg)) -> {ok, {ignored, element(2, Msg)}};
decode(_) -> no.

%% @doc A sentence for an error of this backend.
-spec format_error(error_reason()) -> string().
format_error(Reason) -> riarc_route:format_error(Reason).
