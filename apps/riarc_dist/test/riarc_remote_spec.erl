%% A Spec module for riarc_remote_SUITE that, as a compiled property does, says which
%% message events its monitors need (trace_flags/0) and which messages (trace_patterns/0):
%% the receives of `{double, _}' calls of the pool's workers.
-module(riarc_remote_spec).

-export([spec/1, trace_flags/0, trace_patterns/0]).

-spec spec(term()) -> {ok, riarc_monitor:monitor()} | undefined.
spec({riarc_pool_worker, init, _}) -> {ok, fun M(_) -> M end};
spec(_) -> undefined.

-spec trace_flags() -> [recv].
trace_flags() -> [recv].

-spec trace_patterns() -> riarc_trace_pattern:patterns().
trace_patterns() ->
    #{send => false, 'receive' => [{['_', '_', {'$gen_call', '_', {double, '_'}}], [], []}]}.
