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
%%     start with Root traced by T (TRACE, then resume).</li>
%% <li>`B:trace(C, S, T)': from now on every event of S (and of the processes S spawns,
%%     tracing inheritance A2) is deposited in T's mailbox, in the order S produced them.
%%     Called by T for the root.</li>
%% <li>`B:preempt(C, S, T)': T takes S over from whichever tracer traces it now. Returns
%%     only once every event S produced before the switch has been deposited with the old
%%     tracer, so that a message T sends the old tracer afterwards arrives behind them.
%%     Nothing is lost or duplicated. S may already be dead: then nothing changes hands.</li>
%% <li>`B:clear(C, S, T)': T stops tracing S; returns once S's events in flight to T have
%%     been deposited.</li>
%% <li>`B:event(C, Msg)': decodes a message found in a tracer's mailbox: `{ok, Event}' for
%%     a direct trace event, `skip' for a trace message riarc does not use, `no' for a
%%     message that is not a trace message of this backend.</li>
%% </ul>
%% ```
%% 1> B = riarc_backend:new(riarc_backend_evm, riarc_backend_evm:config([send, recv])).
%% 2> riarc_backend:event(B, {trace, self(), 'receive', hi}).
%% {ok,{recv,<0.85.0>,hi}}
%% '''
-module(riarc_backend).

-export([new/2, launch/3, trace/3, preempt/3, clear/3, event/2]).
-export_type([t/0]).

-callback launch(Config :: term(), Root :: riarc_event:sid(), T :: pid()) -> ok.
-callback trace(Config :: term(), S :: riarc_event:sid(), T :: pid()) -> ok.
-callback preempt(Config :: term(), S :: riarc_event:sid(), T :: pid()) -> ok.
-callback clear(Config :: term(), S :: riarc_event:sid(), T :: pid()) -> ok.
-callback event(Config :: term(), Msg :: term()) -> {ok, riarc_event:event()} | skip | no.

-opaque t() :: {module(), term()}.

%% @doc A backend value.
-spec new(module(), term()) -> t().
new(Mod, Config) when is_atom(Mod) -> {Mod, Config}.

%% @doc Alg. 6: launch the paused system with Root traced by T.
-spec launch(t(), riarc_event:sid(), pid()) -> ok.
launch({Mod, C}, Root, T) -> Mod:launch(C, Root, T).

%% @doc TRACE(S, T).
-spec trace(t(), riarc_event:sid(), pid()) -> ok.
trace({Mod, C}, S, T) -> Mod:trace(C, S, T).

%% @doc PREEMPT(S, T).
-spec preempt(t(), riarc_event:sid(), pid()) -> ok.
preempt({Mod, C}, S, T) -> Mod:preempt(C, S, T).

%% @doc CLEAR(S, T).
-spec clear(t(), riarc_event:sid(), pid()) -> ok.
clear({Mod, C}, S, T) -> Mod:clear(C, S, T).

%% @doc Decodes a direct trace message.
-spec event(t(), term()) -> {ok, riarc_event:event()} | skip | no.
event({Mod, C}, Msg) -> Mod:event(C, Msg).
