%% @doc The tracing backend interface (Alg. 5): TRACE, CLEAR and PREEMPT, plus decoding of
%% the direct trace messages a backend deposits in a tracer's mailbox.
%%
%% The tracer ({@link riarc_tracer}) only ever talks to tracing through this interface, so
%% the online backend over the VM's tracing ({@link riarc_backend_evm}) and an offline one
%% over trace files drive the very same algorithm. A backend is a pair `{Module, Config}'.
%%
%% Contract, for a backend B with configuration C:
%% <ul>
%% <li>`B:launch(C, Root, T)': Alg. 6: the root tracer T asks for the paused system to
%%     start with Root traced by T (TRACE, then resume); `{error, Reason}' when Root
%%     cannot be traced (another tool traces it, say).</li>
%% <li>`B:trace(C, S, T)': from now on every event of S (and of the processes S spawns,
%%     tracing inheritance A2) is deposited in T's mailbox, in the order S produced them.
%%     Called by T for the root.</li>
%% <li>`B:preempt(C, S, T)': T takes S over from whichever tracer traces it now, and says
%%     where the cut is ({@link cut()}): `{ok, {count, N}}' when the old tracer was sent
%%     exactly N of S's events (it has them all once it has handled N), `{ok, exited}'
%%     when S had exited (its events, exit last, all went to the old tracer), `ok' (read
%%     as `{ok, none}') when the backend returns only once the old tracer has them all in
%%     its mailbox, so that a message T sends it afterwards arrives behind them. Nothing
%%     is lost or duplicated.</li>
%% <li>`B:clear(C, S, T)': T stops tracing S; returns once S's events in flight to T have
%%     been deposited.</li>
%% <li>`B:init_from_spawn(C)' (optional, default false): true when the backend gives no
%%     init events of its own, so that the tracer handling a spawn event makes the
%%     child's.</li>
%% <li>`B:init_parent(C, Child, Parent)' (optional, default Parent): the parent the
%%     child's init event names, when the spawn event's is a stand-in (riarc_backend_new_processes
%%     announces a child whose parent it does not trace, here or on another node, as
%%     spawned by `new_processes'; its init event names its real parent). Called once
%%     per spawn event.</li>
%% <li>`B:close(C)' (optional): the session is over; release what the backend holds.</li>
%% <li>`B:tracer_module(C)' (optional, default none): the tracer `erlang:trace_info(P,
%%     tracer)' shows for a process the backend traces through a tracer module, when it
%%     does (its other processes show their tracer's pid).</li>
%% <li>`B:event(C, Msg)': decodes a message found in a tracer's mailbox: `{ok, Event}' for
%%     a direct trace event (`{ok, {ignored, S}}' for one of S's that monitors do not
%%     see but that counts towards a Cut; `{ok, {remote_spawn, S, Node, MFA}}' for S's
%%     start of a process on another node, which no monitor sees either; `{ok, {cut, S,
%%     Why}}' for S's call that may take away what riarc sees of the system (see
%%     riarc_trace_pattern:call_event/2); `{ok, [Event, ...]}' for a message that stands
%%     for several events, in order), `skip' for a trace message riarc does not use,
%%     `no' for a message that is not a trace message of this backend.</li>
%% </ul>
%% ```
%% 1> B = riarc_backend:new(riarc_backend_evm, riarc_backend_evm:config([send, recv])).
%% 2> riarc_backend:event(B, {trace, self(), 'receive', hi}).
%% {ok,{recv,<0.85.0>,hi}}
%% '''
-module(riarc_backend).

-export([new/2, launch/3, trace/3, preempt/3, clear/3, event/2, init_from_spawn/1, init_parent/3,
         names_parents/1, close/1, tracer_module/1, tracer_of/1, watching/3, watches/1, compare_view/3,
         look_slice/2]).
-export_type([t/0, cut/0, decoded/0]).

%% How many processes a look takes at most (look_slice/2).
-define(LOOK_SLICE, 2000).

-type cut() :: {count, non_neg_integer()} | exited | none.
%% What a tracer gets from a trace message.
-type decoded() :: riarc_event:traced() | {ignored, riarc_event:sid()}
                 | {remote_spawn, riarc_event:sid(), node(), riarc_event:mfa_args()}
                 | {cut, riarc_event:sid(), term()}
                 | [riarc_event:event()].

-callback launch(Config :: term(), Root :: riarc_event:sid(), T :: pid()) -> ok | {error, term()}.
-callback trace(Config :: term(), S :: riarc_event:sid(), T :: pid()) -> ok | {error, term()}.
-callback preempt(Config :: term(), S :: riarc_event:sid(), T :: pid()) -> ok | {ok, cut()}.
-callback init_from_spawn(Config :: term()) -> boolean().
-callback init_parent(Config :: term(), Child :: riarc_event:sid(), Parent :: riarc_event:sid()) ->
    riarc_event:sid().
-callback close(Config :: term()) -> ok.
-callback tracer_module(Config :: term()) -> {module(), term()} | none.
-callback watching(Config :: term(), S :: riarc_event:sid(), T :: pid()) ->
    ok | {flags_removed | tracer_replaced, term()}.
-optional_callbacks([init_from_spawn/1, init_parent/3, close/1, tracer_module/1, watching/3]).
-callback clear(Config :: term(), S :: riarc_event:sid(), T :: pid()) -> ok.
-callback event(Config :: term(), Msg :: term()) -> {ok, decoded()} | skip | no.

-opaque t() :: {module(), term()}.

%% @doc A backend value.
-spec new(module(), term()) -> t().
new(Mod, Config) when is_atom(Mod) -> {Mod, Config}.

%% @doc Alg. 6: launch the paused system with Root traced by T.
-spec launch(t(), riarc_event:sid(), pid()) -> ok | {error, term()}.
launch({Mod, C}, Root, T) -> Mod:launch(C, Root, T).

%% @doc TRACE(S, T).
-spec trace(t(), riarc_event:sid(), pid()) -> ok | {error, term()}.
trace({Mod, C}, S, T) -> Mod:trace(C, S, T).

%% @doc PREEMPT(S, T), and where the cut between the old and the new tracer is.
-spec preempt(t(), riarc_event:sid(), pid()) -> {ok, cut()}.
preempt({Mod, C}, S, T) ->
    case Mod:preempt(C, S, T) of
        ok -> {ok, none};
        {ok, Cut} -> {ok, Cut}
    end.

%% @doc True when the tracers make each child's init event from its parent's spawn.
-spec init_from_spawn(t()) -> boolean().
init_from_spawn({Mod, C}) ->
    erlang:function_exported(Mod, init_from_spawn, 1) andalso Mod:init_from_spawn(C).

%% @doc True when the backend's children's init events may name another parent than
%% their spawn events (it exports init_parent/3); a tracer reads it once.
-spec names_parents(t()) -> boolean().
names_parents({Mod, _C}) ->
    erlang:function_exported(Mod, init_parent, 3).

%% @doc The parent Child's init event names, its spawn event saying Parent; asked only of
%% a backend that names_parents/1 says may name another (the tracer checks that once).
-spec init_parent(t(), riarc_event:sid(), riarc_event:sid()) -> riarc_event:sid().
init_parent({Mod, C}, Child, Parent) ->
    Mod:init_parent(C, Child, Parent).

%% @doc Releases what the backend holds, once the session is over.
-spec close(t()) -> ok.
close({Mod, C}) ->
    case erlang:function_exported(Mod, close, 1) of
        true -> Mod:close(C);
        false -> ok
    end.

%% @doc The tracer module and state that show as the tracer of the processes the backend
%% traces through one (none when it traces through tracer processes alone).
-spec tracer_module(t()) -> {module(), term()} | none.
tracer_module({Mod, C}) ->
    case erlang:function_exported(Mod, tracer_module, 1) of
        true -> Mod:tracer_module(C);
        false -> none
    end.

%% @doc What traces P, as erlang:trace_info/2 shows it: a tracer process, a tracer
%% module and its state, `[]' for nobody, or undefined for a process that is gone. OTP
%% 25's spec of erlang:trace_info/2 leaves out tracer modules (`{Module, State}'), which
%% the VM does return: called through apply/3 so that the answer is taken as it comes.
-spec tracer_of(pid()) -> pid() | port() | {module(), term()} | [] | undefined.
tracer_of(P) ->
    case erlang:apply(erlang, trace_info, [P, tracer]) of
        {tracer, T} -> T;
        undefined -> undefined
    end.

%% @doc Whether the VM still traces S for T as the backend set it up: `ok' (or S is gone:
%% its exit comes or came), `{flags_removed, FlagsLeft}' or `{tracer_replaced, Tracer}'.
%% A backend with no such check (offline: nothing can change) says ok.
-spec watching(t(), riarc_event:sid(), pid()) -> ok | {flags_removed | tracer_replaced, term()}.
watching(B = {Mod, C}, S, T) ->
    case watches(B) of
        true -> Mod:watching(C, S, T);
        false -> ok
    end.

%% @doc Whether the backend's processes are this node's, traced by its VM (it has
%% watching/3): not offline, where process names are whatever a file holds.
-spec watches(t()) -> boolean().
watches({Mod, _}) ->
    erlang:function_exported(Mod, watching, 3).

%% @doc The processes a look takes (Slice) and those left for the next looks of the round
%% (Rest), from the round's Queue, or, the round done, from a new one, All() (every
%% process the looker traces). A look costs a few microseconds a process: a tracer of
%% every new process of an idle node of 100 000 spent a third of a scheduler on looks
%% that took them all each second; ?LOOK_SLICE a look bounds that (a round of 100 000
%% takes fifty looks), and a change is found up to a round later.
%% ```
%% 1> riarc_backend:look_slice([], fun() -> [a, b] end).
%% {[a,b],[]}
%% '''
-spec look_slice([P], fun(() -> [P])) -> {[P], [P]}.
look_slice([], All) -> look_slice1(All());
look_slice(Queue, _All) -> look_slice1(Queue).

look_slice1(Queue) -> lists:split(min(?LOOK_SLICE, length(Queue)), Queue).

%% @doc The flags the VM shows for P against the flags it should have, and its tracer
%% against the one it should have (a backend's watching/3).
-spec compare_view(pid(), [atom()], term()) -> ok | {flags_removed | tracer_replaced, term()}.
compare_view(P, Flags, Tracer) when is_pid(P) ->
    case {erlang:trace_info(P, flags), tracer_of(P)} of
        {undefined, _} -> ok;
        {_, undefined} -> ok;
        {{flags, F}, T} ->
            case {Flags -- F, T} of
                {[_ | _], _} -> {flags_removed, F};
                {[], Tracer} -> ok;
                {[], Other} -> {tracer_replaced, Other}
            end
    end;
compare_view(_P, _Flags, _Tracer) ->
    ok.

%% @doc CLEAR(S, T).
-spec clear(t(), riarc_event:sid(), pid()) -> ok.
clear({Mod, C}, S, T) -> Mod:clear(C, S, T).

%% @doc Decodes a direct trace message.
-spec event(t(), term()) -> {ok, decoded()} | skip | no.
event({Mod, C}, Msg) -> Mod:event(C, Msg).
