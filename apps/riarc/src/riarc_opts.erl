%% @doc riarc's options, in one place: what each defaults to and which values are valid.
%% The API (riarc:run/3, start/3, attach/3) fills in defaults/0; the session reads the
%% safety limits through limits/1 and every analysis process its step budget through
%% budget/1, so that a default is written once. What each option means is in riarc's
%% module documentation and docs/production.md.
%% ```
%% 1> maps:get(timeout, riarc_opts:defaults()).
%% infinity
%% 2> maps:get(policy, riarc_opts:limits(#{limits => #{max_queue => 10}})).
%% stop
%% 3> riarc_opts:check(#{timeout => -1}).
%% {bad_option,timeout,-1}
%% '''
-module(riarc_opts).

-export([defaults/0, with_spec/2, limits/1, budget/1, priority/1, check/1]).
-export_type([limits/0, budget/0]).

%% The default priority of riarc's tracers and analysis processes (option
%% tracer_priority): low. Measured (docs/evaluation.md, "Issue 30"): at the load
%% driver's own pace the system's median response time was lower in every one of 10
%% interleaved repetitions (0.65 to 0.93 × normal's); under ten times that load, and on
%% the other shapes, neither was cheaper by more than the noise; verdicts stay sound.
-define(TRACER_PRIORITY, low).

%% How many partitions one tracer may adopt (option adopt, riarc_tracer_adopted): no
%% bound. Measured (docs/evaluation.md, "Adoption"): on every shape of bench-shapes, the
%% fewer tracers the cheaper on this machine; a bound only brings back tracers (and
%% their takeovers) past it.
-define(ADOPT, infinity).

-type limits() :: #{max_queue := pos_integer(), max_queue_bytes := pos_integer() | infinity,
                    max_tracers := pos_integer(), max_events := pos_integer() | infinity,
                    max_payload := pos_integer() | infinity,
                    policy := stop | shed | backpressure, max_suspend := pos_integer(),
                    max_join_hold := pos_integer()}.
%% What one step of a monitor may take: wall time, reductions (`infinity': no limit) and
%% heap (words, the analysis process's max_heap_size).
-type budget() :: #{time_ms := pos_integer(), reductions := pos_integer() | infinity,
                    heap_words := pos_integer()}.

%% @doc The API's defaults: a run lasts as long as the system does (the command line sets
%% its own timeout), and verdicts are returned rather than logged unless asked for. A run
%% that follows its system onto other nodes waits 30 s at most, once everything else is
%% over, for a child started there to show (follow_grace): a start that failed there
%% shows nowhere, and the run would otherwise wait for ever. riarc's tracers and analysis
%% processes run at low priority (tracer_priority, priority/1).
-spec defaults() -> #{timeout := infinity, events := [send | recv], trace_patterns := map(),
                      invariants := boolean(), log := boolean(), perturb := undefined,
                      backend := auto, explain := non_neg_integer(), analysis := isolated,
                      follow_grace := non_neg_integer(), tracer_priority := low | normal,
                      adopt := non_neg_integer() | infinity}.
defaults() ->
    #{timeout => infinity, events => [send, recv], trace_patterns => #{}, invariants => true,
      log => false, perturb => undefined, backend => auto, explain => 8, analysis => isolated,
      follow_grace => 30000, tracer_priority => ?TRACER_PRIORITY, adopt => ?ADOPT}.

%% @doc What a Spec module sets (riarc_lambda:spec_defaults/1) under what the caller
%% says. A caller who gives a step budget and does not say where monitors run gets them
%% in processes of their own, the only place a budget is kept, whatever the Spec
%% module's default.
-spec with_spec(map(), map()) -> map().
with_spec(SpecDefaults, Opts) ->
    Given = maps:merge(SpecDefaults, Opts),
    case is_map_key(monitor_budget, Opts) andalso not is_map_key(analysis, Opts) of
        true -> Given#{analysis => isolated};
        false -> Given
    end.

%% @doc The safety limits in force: the defaults with what the option `limits' says: a
%% tracer's mailbox length (and a monitor's backlog), the number of live tracers, the
%% payload size monitors get, the overload policy. Each monitored partition has a tracer
%% and an analysis process: by default at most an eighth of the node's process limit in
%% tracers, so that riarc never takes more than a quarter of it, never the processes the
%% system needs (one tracer per monitored process would otherwise double the system's
%% process count with no cap). A tracer's memory (its mailbox, off its heap, and its
%% state) is bounded too: 1 GiB, five times what a million small trace messages take
%% (about 200 bytes each, measured), so that max_queue comes first for ordinary messages
%% and this one for large ones. The events of a whole session are not bounded by default
%% (max_events): how many a session sees is how long it runs, not how much of the node
%% it holds (docs/production.md). With follow_joining, the system is held back while riarc
%% starts on a node that joins: 5 s at most (on a node loaded by two busy schedulers,
%% starting took 3 s; idle, under half a second).
-spec limits(map()) -> limits().
limits(Opts) ->
    maps:merge(#{max_queue => 1000000, max_queue_bytes => 1 bsl 30,
                 max_tracers => max(1, erlang:system_info(process_limit) div 8),
                 max_events => infinity, max_payload => 65536, policy => stop,
                 max_suspend => 1000, max_join_hold => 5000},
               maps:get(limits, Opts, #{})).

%% @doc The step budget in force: the defaults (10 s, 100 million reductions, 64 Mwords of
%% heap a step) with what the option `monitor_budget' says. Reductions bound a step's
%% work; wall time bounds a step that waits (a monitor blocked in a call). Wall time also
%% counts the time a runnable step waits for a scheduler or for the code server: on a
%% loaded node the first step of a monitor, which loads its code, took over 1 s
%% (riarc_bench_nodes_SUITE), so the default leaves room for that.
-spec budget(map()) -> budget().
budget(Opts) ->
    maps:merge(#{time_ms => 10000, reductions => 100000000, heap_words => 64 * 1024 * 1024},
               maps:get(monitor_budget, Opts, #{})).

%% @doc The priority riarc's tracers and analysis processes run at: option
%% `tracer_priority' in Opts (a session's, or a tracer's configuration), else the default.
%% At `low', the VM picks riarc's processes less often than the system's (low and normal
%% share a run queue, a low one is passed over a few times before it runs): on a loaded
%% node thousands of runnable tracers no longer take a share each of the schedulers, but a
%% tracer that falls behind meets its limits (max_queue) sooner (docs/production.md).
-spec priority(map()) -> low | normal.
priority(Opts) ->
    maps:get(tracer_priority, Opts, ?TRACER_PRIORITY).

%% @doc `ok' when every option is known and its value valid, else the first that is not.
%% A step budget is kept only by a monitor's own process: `monitor_budget' with
%% `analysis => inline' asks for what cannot be given.
-spec check(map()) -> ok | {bad_option, atom(), term()} | {inline_budget, map()}.
check(Opts) ->
    case [K || {K, V} <- maps:to_list(Opts), not valid(K, V)] of
        [] when map_get(analysis, Opts) =:= inline, is_map_key(monitor_budget, Opts) ->
            {inline_budget, maps:get(monitor_budget, Opts)};
        [] -> ok;
        [K | _] -> {bad_option, K, maps:get(K, Opts)}
    end.

valid(timeout, infinity) -> true;
%% The longest a receive can wait: a larger timeout would crash the wait, not end it.
valid(timeout, T) -> is_integer(T) andalso T >= 0 andalso T =< 16#ffffffff;
valid(events, Es) -> is_list(Es) andalso lists:all(fun(E) -> E =:= send orelse E =:= recv end, Es);
valid(trace_patterns, P) -> riarc_trace_pattern:valid(P);
valid(invariants, B) -> is_boolean(B);
valid(log, B) -> is_boolean(B);
valid(backend, B) -> lists:member(B, [auto, route, evm]);
valid(explain, K) -> is_integer(K) andalso K >= 0;
valid(analysis, A) -> A =:= isolated orelse A =:= inline;
valid(tracer_priority, P) -> P =:= low orelse P =:= normal;
valid(adopt, infinity) -> true;
valid(adopt, N) -> is_integer(N) andalso N >= 0;
valid(monitored_elsewhere, Ns) -> is_list(Ns) andalso lists:all(fun is_atom/1, Ns);
valid(follow, Ns) -> is_list(Ns) andalso lists:all(fun is_atom/1, Ns) andalso not lists:member(node(), Ns);
valid(follow_joining, B) -> is_boolean(B);
%% Set by a session that follows its system onto this node (riarc_remote:follower/4).
valid(lineage, B) -> is_boolean(B);
valid(relay_to, {Pid, Secret}) -> is_pid(Pid) andalso is_reference(Secret);
valid(follow_grace, infinity) -> true;
valid(follow_grace, T) -> is_integer(T) andalso T >= 0 andalso T =< 16#ffffffff;
%% Set by a caller on another node, which starts the followers (riarc:start/3 and
%% attach/3 with node and follow).
valid(follow_from, {N, Spec}) -> is_atom(N) andalso riarc_lambda:valid_spec(Spec);
valid(limits, L) when is_map(L) ->
    lists:all(fun({policy, P}) -> lists:member(P, [stop, shed, backpressure]);
                 ({K, infinity}) -> lists:member(K, [max_payload, max_queue_bytes, max_events]);
                 ({K, V}) -> lists:member(K, [max_queue, max_tracers, max_payload, max_suspend,
                                              max_queue_bytes, max_events, max_join_hold])
                                 andalso is_integer(V) andalso V > 0
              end, maps:to_list(L));
valid(monitor_budget, B) when is_map(B) ->
    lists:all(fun({time_ms, V}) -> is_integer(V) andalso V > 0;
                 ({reductions, infinity}) -> true;
                 ({reductions, V}) -> is_integer(V) andalso V > 0;
                 ({heap_words, V}) -> is_integer(V) andalso V > 0;
                 (_) -> false
              end, maps:to_list(B));
valid(perturb, undefined) -> true;
valid(perturb, N) when is_integer(N) -> N > 0;
%% A test hook, not for users: each new tracer waits before its takeover until Pid
%% opens the gate (riarc_tracer's perturb/1).
valid(perturb, {gate, Pid}) -> is_pid(Pid);
valid(_, _) -> false.
