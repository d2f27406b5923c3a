%% @doc The command line's safety limits, for the commands that monitor a live system
%% (`run', `attach'): the flags, and the riarc options they stand for (docs/production.md
%% says what each limit and policy costs). A flag not given leaves riarc's default.
%% ```
%% 1> riarc_cli_limits:opts(#{max_queue => 5000, policy => shed, monitor_budget => 200}).
%% #{limits => #{max_queue => 5000,policy => shed},monitor_budget => #{time_ms => 200}}
%% 2> riarc_cli_limits:opts(#{}).
%% #{}
%% '''
-module(riarc_cli_limits).

-export([flags/0, opts/1, limit_flags/0]).

%% @doc The flags, for a command's declaration.
-spec flags() -> [riarc_cli_args:flag()].
flags() ->
    [#{name => "--max-queue", key => max_queue, type => {int, 1}, metavar => "N",
       help => "at most N messages waiting in a tracer or a monitor (default 1000000)"},
     #{name => "--max-queue-bytes", key => max_queue_bytes, type => {int, 1}, metavar => "BYTES",
       help => "at most BYTES of memory in a tracer, its mailbox with it (default 1073741824)"},
     #{name => "--max-events", key => max_events, type => {int, 1}, metavar => "N",
       help => "stop (under every policy) once the tracers have taken N events in all "
               "(default: no limit)"},
     #{name => "--max-tracers", key => max_tracers, type => {int, 1}, metavar => "N",
       help => "at most N live tracers (default: an eighth of the process limit)"},
     #{name => "--max-payload", key => max_payload, type => {int, 1}, metavar => "BYTES",
       help => "messages larger than BYTES reach monitors as {riarc_truncated, Size} "
               "(default 65536)"},
     #{name => "--policy", key => policy, type => {enum, [stop, shed, backpressure]},
       metavar => "POLICY",
       help => "at a limit: stop (detach everything), shed (drop the overloaded partition, "
               "inconclusive) or backpressure (suspend its processes a while, then shed); "
               "default stop"},
     #{name => "--monitor-budget", key => monitor_budget, type => {duration, millisecond},
       metavar => "TIME",
       help => "a monitor step longer than TIME (seconds, or 200ms) is an error verdict for "
               "its partition (default 10s; monitors run isolated)"},
     #{name => "--analysis", key => analysis, type => {enum, [isolated, inline]},
       metavar => "WHERE",
       help => "where monitors run: isolated (a process each, under the step budget) or "
               "inline (in their tracers: cheaper, no budget); default inline for --props, "
               "isolated for --monitors"},
     #{name => "--adopt", key => adopt, type => {int, 0}, metavar => "N",
       help => "with monitors in their tracers, at most N partitions one tracer keeps "
               "(adopts: no tracer or takeover of their own); 0: a tracer for every "
               "partition, as in the RIARC paper; default no bound"}].

%% @doc The flags of the limits alone (`check': offline, under the same limits as a run).
-spec limit_flags() -> [riarc_cli_args:flag()].
limit_flags() ->
    [F || F = #{key := K} <- flags(),
          lists:member(K, [max_queue, max_queue_bytes, max_events, max_tracers, max_payload, policy])].

%% @doc The riarc options (`limits', `monitor_budget', `analysis', `adopt') of the flags
%% given.
-spec opts(riarc_cli_args:opts()) -> riarc:opts().
opts(Flags) ->
    Limits = maps:with([max_queue, max_queue_bytes, max_tracers, max_events, max_payload, policy],
                       Flags),
    maps:merge(maps:merge(case map_size(Limits) of 0 -> #{}; _ -> #{limits => Limits} end,
                          maps:with([analysis, adopt], Flags)),
               case Flags of
                   #{monitor_budget := Ms} -> #{monitor_budget => #{time_ms => Ms}};
                   #{} -> #{}
               end).
