%% @doc Trace events: the public terms monitors receive, and the helpers the tracers use.
%%
%% Every event a monitor sees is one of
%% ```
%% {init,  Child,  Parent, MFA}   % first event of a spawned process, seen in Child
%% {spawn, Parent, Child,  MFA}   % Parent spawned Child, seen in Parent
%% {exit,  Pid,    Reason}
%% {send,  From,   To,     Msg}
%% {recv,  Pid,    Msg}
%% {timeout, Pid}                 % a receive ... after T in Pid timed out
%% {attached, Pid, MFA}           % first event of a process riarc attached to while it ran
%% '''
%% Two more events are riarc's own and never reach a monitor: `{timer_timeout, Pid, Dest}',
%% Pid set a timer to send Dest the atom `timeout', which the VM traces exactly as a
%% receive timeout (riarc_trace_pattern:call_event/2, riarc_analysis_core); and
%% `{cut, Pid, Why}', Pid made a call that may take away what riarc sees (Why is
%% `{trace | trace_pattern, Args}'), or a look found Pid's view cut by someone riarc does
%% not trace (`{flags_removed, FlagsLeft}', `{tracer_replaced, Tracer}', or the node's
%% patterns, `{patterns_changed, Info}', the root's). Trace files keep both.
%% MFA is the logical initial call of the spawned process (see {@link riarc_lambda}).
%% Online the process names are pids; offline they are whatever the trace file names
%% (atoms, integers, pids).
%%
%% The originator of an event (e.ıS in the paper) is the process that exhibited it:
%% ```
%% 1> riarc_event:origin({spawn, p, q, {m, f, []}}).
%% p
%% 2> riarc_event:origin({init, q, p, {m, f, []}}).
%% q
%% '''
-module(riarc_event).

-export([origin/1, kind/1, is_event/1, is_cut/1, format/1, truncate/2, truncated/1, is_name/1]).
-export_type([event/0, timer_event/0, cut_event/0, traced/0, sid/0, mfa_args/0, kind/0]).

-type sid() :: term().
-type mfa_args() :: {module(), atom(), list()} | undefined.
-type event() :: {init, sid(), sid(), mfa_args()}
               | {spawn, sid(), sid(), mfa_args()}
               | {exit, sid(), term()}
               | {send, sid(), sid(), term()}
               | {recv, sid(), term()}
               | {timeout, sid()}
               | {attached, sid(), mfa_args()}.
-type kind() :: init | spawn | exit | send | recv | timeout | attached.
%% riarc's own: a timer set to send the atom `timeout' (above).
-type timer_event() :: {timer_timeout, sid(), term()}.
%% riarc's own: a call that may take away what riarc sees (above).
-type cut_event() :: {cut, sid(), {trace | trace_pattern, list()} | {flags_removed, [atom()]}
                                   | {tracer_replaced, term()} | {patterns_changed, term()}}.
%% What a trace holds: the events, and riarc's own timer_event() and cut_event().
-type traced() :: event() | timer_event() | cut_event().

%% @doc The process that exhibited the event: the paper's e.ıS.
-spec origin(traced()) -> sid().
origin({init, Child, _Parent, _MFA}) -> Child;
origin({spawn, Parent, _Child, _MFA}) -> Parent;
origin({exit, Pid, _Reason}) -> Pid;
origin({send, From, _To, _Msg}) -> From;
origin({recv, Pid, _Msg}) -> Pid;
origin({timeout, Pid}) -> Pid;
origin({attached, Pid, _MFA}) -> Pid;
origin({timer_timeout, Pid, _Dest}) -> Pid;
origin({cut, Pid, _Why}) -> Pid.

%% @doc The event's label: the paper's e.ℓ, with init split from spawn.
-spec kind(traced()) -> kind() | timer_timeout | cut.
kind(Event) -> element(1, Event).

%% @doc True when the term has the shape of what cut a view in a cut_event(): a call, or
%% what a look found (trace files are read with it).
-spec is_cut(term()) -> boolean().
is_cut({Kind, Args}) when Kind =:= trace; Kind =:= trace_pattern -> is_list(Args);
is_cut({flags_removed, Left}) -> is_list(Left);
is_cut({Lost, _}) -> Lost =:= tracer_replaced orelse Lost =:= patterns_changed;
is_cut(_) -> false.

%% @doc True when the term has the shape of a public event.
-spec is_event(term()) -> boolean().
is_event({init, _, _, _}) -> true;
is_event({spawn, _, _, _}) -> true;
is_event({exit, _, _}) -> true;
is_event({send, _, _, _}) -> true;
is_event({recv, _, _}) -> true;
is_event({timeout, _}) -> true;
is_event({attached, _, _}) -> true;
is_event(_) -> false.

%% @doc Whether a term names a module or function: an atom, or an atom of a recording
%% that the checking node does not have, which offline reads as `{riarc_unknown_atom,
%% Utf8}' (riarc_offline) and which a property still matches with `_' and variables.
-spec is_name(term()) -> boolean().
is_name(A) when is_atom(A) -> true;
is_name({riarc_unknown_atom, B}) when is_binary(B) -> true;
is_name(_) -> false.

%% @doc Limit `max_payload': a send or receive event whose message is larger than Max
%% bytes (its external size) as a monitor gets it, with `{riarc_truncated, Size}' in
%% place of the message, so that one huge message is neither copied to a monitor nor kept
%% in its explanation window; any other event as it is.
%% ```
%% 1> riarc_event:truncate({recv, p, lists:seq(1, 100)}, 64).
%% {recv,p,{riarc_truncated,206}}
%% '''
-spec truncate(event(), pos_integer() | infinity) -> event().
truncate(E = {send, From, To, Msg}, Max) when Max =/= infinity ->
    case erlang:external_size(Msg) of
        Size when Size > Max -> {send, From, To, {riarc_truncated, Size}};
        _ -> E
    end;
truncate(E = {recv, P, Msg}, Max) when Max =/= infinity ->
    case erlang:external_size(Msg) of
        Size when Size > Max -> {recv, P, {riarc_truncated, Size}};
        _ -> E
    end;
truncate(E, _Max) ->
    E.

%% @doc Whether an event's message was cut out by truncate/2, and its size then. A
%% message of the system's that reads `{riarc_truncated, Size}' counts too: the monitor
%% cannot tell it apart, and taking it for a cut one only makes a verdict inconclusive.
%% ```
%% 1> riarc_event:truncated({recv, p, {riarc_truncated, 206}}).
%% {true,206}
%% '''
-spec truncated(event()) -> {true, non_neg_integer()} | false.
truncated({send, _, _, {riarc_truncated, Size}}) when is_integer(Size) -> {true, Size};
truncated({recv, _, {riarc_truncated, Size}}) when is_integer(Size) -> {true, Size};
truncated(_) -> false.

%% @doc A one-line rendering, for logs and the command line.
-spec format(event()) -> iolist().
format(Event) -> io_lib:format("~0tp", [Event]).
