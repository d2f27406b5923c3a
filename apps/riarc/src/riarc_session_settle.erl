%% @doc A session's settling (riarc_session:settle/2): before a stop, waiting until
%% every live tracer has handed on what it held, so that a stop cuts the run where the
%% caller meant and not in the middle of a takeover (riarc_tracer_control's settle
%% request; riarc_stopped_short tells of a stop that did not wait). Pure: the session
%% sends the requests and replies to the caller.
%%
%% A tracer started while the session settles (announced by riarc_tracer_up, before
%% its starter can answer) is asked too; one that ends is no longer waited for.
%% ```
%% 1> W0 = riarc_session_settle:new(from, ref, [t1, t2]).
%% 2> {waiting, W1} = riarc_session_settle:settled(t1, ref, W0).
%% 3> {waiting, W2} = riarc_session_settle:up(t3, W1).
%% 4> {waiting, W3} = riarc_session_settle:gone(t2, W2).
%% 5> riarc_session_settle:settled(t3, ref, W3).
%% {done, from}
%% 6> riarc_session_settle:left(W3).
%% 1
%% '''
-module(riarc_session_settle).

-export([new/3, up/2, settled/3, gone/2, left/1, from/1, ref/1]).
-export_type([t/0]).

-record(settling, {
    from :: term(),                          % the caller, answered once nobody is left
    ref :: term(),                           % this settling's: the requests carry it
    waiting = #{} :: #{term() => true}       % the tracers asked that have not answered
}).
-opaque t() :: #settling{}.

%% @doc Settling Ref for From, the Tracers live now asked.
-spec new(term(), term(), [term()]) -> t().
new(From, Ref, Tracers) -> #settling{from = From, ref = Ref, waiting = maps:from_keys(Tracers, true)}.

%% @doc A tracer started meanwhile, asked too.
-spec up(term(), t()) -> {waiting, t()}.
up(Tracer, W = #settling{waiting = Ws}) -> {waiting, W#settling{waiting = Ws#{Tracer => true}}}.

%% @doc Tracer answered Ref: settled (an answer to an earlier settling is not).
-spec settled(term(), term(), t()) -> {waiting, t()} | {done, term()}.
settled(Tracer, Ref, W = #settling{ref = Ref}) -> drop(Tracer, W);
settled(_Tracer, _Ref, W) -> {waiting, W}.

%% @doc Tracer ended (it has nothing left to hand on).
-spec gone(term(), t()) -> {waiting, t()} | {done, term()}.
gone(Tracer, W) -> drop(Tracer, W).

%% @doc How many tracers have not answered.
-spec left(t()) -> non_neg_integer().
left(#settling{waiting = Ws}) -> map_size(Ws).

%% @doc The settling's reference.
-spec ref(t()) -> term().
ref(#settling{ref = Ref}) -> Ref.

%% @doc Who waits for the settling.
-spec from(t()) -> term().
from(#settling{from = From}) -> From.

drop(Tracer, W = #settling{from = From, waiting = Ws}) ->
    case maps:remove(Tracer, Ws) of
        Left when map_size(Left) =:= 0 -> {done, From};
        Left -> {waiting, W#settling{waiting = Left}}
    end.
