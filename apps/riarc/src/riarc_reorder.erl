%% @doc The reordering buffer of App. B of the RIARC paper. The paper assumes (A4) that a
%% child's events reach its tracer only after the parent's spawn event; on the VM they
%% often do not (different senders, no ordering between them). An event of a process
%% not known yet is held here, per process and in arrival order, until the process
%% becomes known (its spawn event has been handled); then its events are released,
%% oldest first. The tracer ({@link riarc_tracer}), centralised monitoring and the
%% offline engine all reorder through this module.
%% ```
%% 1> B0 = riarc_reorder:new().
%% 2> B1 = riarc_reorder:hold(q, {recv, q, req}, riarc_reorder:hold(q, {init, q, p, {m, q, []}}, B0)).
%% 3> riarc_reorder:release(q, B1).
%% {[{init,q,p,{m,q,[]}},{recv,q,req}],#{}}
%% 4> riarc_reorder:size(B1).
%% 2
%% '''
-module(riarc_reorder).

-export([new/0, hold/3, release/2, size/1, is_empty/1, counts/1, to_map/1]).
-export_type([t/0]).

%% Per process, its held events newest first (so that holding one is O(1)).
-opaque t() :: #{riarc_event:sid() => [riarc_event:traced()]}.

%% @doc An empty buffer.
-spec new() -> t().
new() -> #{}.

%% @doc Holds an event of process S, behind S's events held already.
-spec hold(riarc_event:sid(), riarc_event:traced(), t()) -> t().
hold(S, Event, B) ->
    case B of
        #{S := Es} -> B#{S := [Event | Es]};
        #{} -> B#{S => [Event]}
    end.

%% @doc Takes out S's held events, oldest first ([] when none).
-spec release(riarc_event:sid(), t()) -> {[riarc_event:traced()], t()}.
release(S, B) ->
    case maps:take(S, B) of
        error -> {[], B};
        {Es, Rest} -> {lists:reverse(Es), Rest}
    end.

%% @doc How many events are held, over all processes.
-spec size(t()) -> non_neg_integer().
size(B) -> maps:fold(fun(_, Es, N) -> N + length(Es) end, 0, B).

%% @doc True when nothing is held.
-spec is_empty(t()) -> boolean().
is_empty(B) -> map_size(B) =:= 0.

%% @doc Held events per process, for reports of what never became known.
-spec counts(t()) -> #{riarc_event:sid() => pos_integer()}.
counts(B) -> maps:map(fun(_, Es) -> length(Es) end, B).

%% @doc Held events per process, oldest first, for diagnostics.
-spec to_map(t()) -> #{riarc_event:sid() => [riarc_event:traced()]}.
to_map(B) -> maps:map(fun(_, Es) -> lists:reverse(Es) end, B).
