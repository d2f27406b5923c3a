%% @doc What a running session shows of itself (riarc_session:alive/1 and stats/1): the
%% live tracers and the system processes they trace, for a timeout's error and for
%% tests; and, for a live view such as the dashboard, cheap figures read once a second
%% without asking any tracer.
%% ```
%% 1> riarc_session_stats:alive(#{}, make_ref(), 0).
%% #{processes => [],relayed_waiting => 0,traced => #{},tracers => []}
%% '''
-module(riarc_session_stats).

-export([alive/3, stats/1]).
-export_type([alive/0, stats/0]).

-type alive() :: #{tracers := [pid()], processes := [term()], traced := #{pid() => [term()]},
                   relayed_waiting := non_neg_integer()}.
-type stats() :: #{tracers := non_neg_integer(), analysers := non_neg_integer(),
                   events := non_neg_integer(), routed := non_neg_integer() | undefined,
                   forged := non_neg_integer(), overload := term(),
                   memory := non_neg_integer(), finished := boolean()}.

%% @doc The live tracers (Tracers, asked with the session's Token, each within 1 s) and
%% the processes each traces; RelayedWaiting: the events relayed from followed nodes
%% that no tracer here has claimed yet.
-spec alive(#{pid() => true}, reference(), non_neg_integer()) -> alive().
alive(Tracers, Token, RelayedWaiting) ->
    Traced = maps:from_list([{Pid, procs_of(Pid, Token)} || Pid <- maps:keys(Tracers)]),
    #{tracers => maps:keys(Tracers), processes => lists:usort(lists:append(maps:values(Traced))),
      traced => Traced, relayed_waiting => RelayedWaiting}.

procs_of(Tracer, Token) ->
    case riarc_tracer:info(Tracer, Token, 1000) of
        {ok, #{gamma := G}} -> maps:keys(G);
        {error, timeout} -> []
    end.

%% @doc The figures of a live view: one process_info per riarc process, no message sent.
%% The routing table counts as it sends (one NIF call); a closed table, or another
%% backend, has no count.
-spec stats(#{tracers := #{pid() => true}, analysers := [pid()], limits := riarc_session_limits:t(),
              finished := boolean(), backend := riarc_backend:t()}) -> stats().
stats(#{tracers := T, analysers := As, limits := L, finished := Finished, backend := B}) ->
    Mem = lists:foldl(fun(P, Acc) ->
                              case erlang:process_info(P, memory) of
                                  {memory, M} -> Acc + M;
                                  undefined -> Acc
                              end
                      end, 0, [self() | maps:keys(T) ++ As]),
    Routed = case riarc_backend:tracer_module(B) of
                 {riarc_route, Table} ->
                     try maps:get(events, riarc_route:stats(Table)) catch error:_ -> undefined end;
                 _ -> undefined
             end,
    #{tracers => map_size(T), analysers => length(As), events => riarc_session_limits:events(L),
      routed => Routed, forged => riarc_session_limits:forged(L),
      overload => riarc_session_limits:overload(L), memory => Mem, finished => Finished}.
