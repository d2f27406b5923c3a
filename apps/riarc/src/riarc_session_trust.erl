%% @doc A session's trust boundary (riarc_session): which of the messages that reach it
%% riarc's own processes sent, and which the monitored system may have forged. riarc's
%% own processes tag what they send the session with its token (a reference the
%% monitored system never sees); the routing table seals the events it sends; the VM
%% sends 'DOWN' and 'EXIT' only once their process has ended. Anything else in riarc's
%% shape is forged: counted, not believed.
%% ```
%% 1> Token = make_ref().
%% 2> riarc_session_trust:check({riarc_s, Token, hello}, Token, none).
%% {trusted,hello}
%% 3> riarc_session_trust:check({'DOWN', make_ref(), process, self(), normal}, Token, none).
%% forged
%% 4> riarc_session_trust:unknown({riarc_s, make_ref(), hello}).
%% forged
%% 5> riarc_session_trust:unknown({other, 1}).
%% ignore
%% '''
-module(riarc_session_trust).

-export([check/3, unknown/1, unsealed/1]).

%% @doc What a message reaching the session is: one of riarc's own with the session's
%% Token (its contents); an event the routing table sent it as the default owner, of a
%% process no tracer owned (`orphan'), or one the backend skips; forged; or `other', to
%% be routed (the distribution part's, the session's own timers and monitors).
-spec check(term(), reference(), riarc_backend:t() | none) -> {trusted, term()} | orphan | skip | forged | other.
check({riarc_s, Token, Msg}, Token, _Backend) ->
    {trusted, Msg};
check(Msg, _Token, Backend) when element(1, Msg) =:= trace; element(1, Msg) =:= riarc_sealed ->
    %% Only the table's own (sealed) events count; forged ones are counted as forged.
    case riarc_backend:event(Backend, Msg) of
        {ok, _} -> orphan;
        skip -> skip;
        no -> forged
    end;
check(Msg, _Token, _Backend) when (element(1, Msg) =:= 'DOWN' orelse element(1, Msg) =:= 'EXIT'),
                                  is_pid(element(tuple_size(Msg) - 1, Msg)) ->
    %% The VM sends 'DOWN' and 'EXIT' once their process has ended; one about a process
    %% of this node that still lives was sent by someone else.
    Pid = element(tuple_size(Msg) - 1, Msg),
    case node(Pid) =:= node() andalso is_process_alive(Pid) of
        true -> forged;
        false -> other
    end;
check(_Msg, _Token, _Backend) ->
    other.

%% @doc A message no part of the session knew: in riarc's shape (a message with the
%% session's tag but not its token, say, forged by the monitored system), `forged';
%% anything else is ignored.
-spec unknown(term()) -> forged | ignore.
unknown(Msg) when is_tuple(Msg), tuple_size(Msg) > 1, is_atom(element(1, Msg)) ->
    case atom_to_list(element(1, Msg)) of
        "riarc_" ++ _ -> forged;
        _ -> ignore
    end;
unknown(_Msg) ->
    ignore.

%% @doc Whether Backend takes as an event a trace message the session made up: it would
%% take one the monitored system made up too (the process tracers' backend: the VM's
%% trace messages carry no seal, and an Erlang process cannot tell who sent a message).
%% Asked once, with a message of the calling session's own.
-spec unsealed(riarc_backend:t()) -> boolean().
unsealed(Backend) ->
    case riarc_backend:event(Backend, {trace, self(), exit, normal}) of
        {ok, _} -> true;
        _ -> false
    end.
