%% @doc What monitoring costs on YOUR system, with YOUR properties: runs a user's entry
%% point `M:F(Args)' bare (`baseline') and under each chosen set-up, every run in a fresh
%% VM (OTP `peer', as riarc_bench_experiment does, with the caller's code path and the
%% user's `-pa' directories), interleaved (repetition 1 of every set-up, then repetition
%% 2, ...) so that a drift of the machine spreads over all set-ups instead of biasing the
%% last one, after one uncounted warm-up run per set-up. It records per run the wall time,
%% peak memory (`erlang:memory(total)' sampled in the VM and the VM's peak RSS), the
%% events traced and analysed and the verdict counts, and writes `runs.csv' and a
%% self-contained `report.html' with riarc_bench_ci's medians, intervals and ratios
%% ({@link riarc_bench_user_report}, which also prints the table `bench -m' shows).
%%
%% Latency convention: when `M:F(Args)' returns `{latencies_us, [Integer]}', those
%% latencies (µs, measured by the user's own code) are summarised per run as their mean
%% (the mean response time, MRT, when they are response times) and p50/p90/p99.
%%
%% The `tracing' set-up is the floor under riarc: the VM's tracing of the events riarc
%% would ask for (the same trace flags, and the same `erlang:trace_pattern/3' match
%% specifications when the monitors have trace patterns, installed the way riarc installs
%% them) into a process that only counts them. What riarc costs above it is riarc's own.
%%
%% Wall time is from the start of the set-up until it is over: for the baseline until
%% `M:F' returns, for a monitored set-up until `run/3' returns, i.e. the system has ended
%% and its last events are analysed. So `M:F' should return only once its work is done.
%% ```
%% 1> riarc_bench_user:run(#{mfa => {riarc_demo, main, [8, 25]},
%% ..                        monitors => {module, riarc_demo_monitors},
%% ..                        setups => [baseline, riarc], runs => 1}, #{out => "/tmp/u"}).
%% {ok,#{csv => "/tmp/u/runs.csv",html => "/tmp/u/report.html",failed => 0,...}}
%% '''
-module(riarc_bench_user).

-export([run/2, setups/0, parse_setups/1, format_error/1]).
%% Entry points inside the run's VM.
-export([run_one/4, root/4]).

-export_type([config/0, error_reason/0]).

%% The caller's input, refused before any run (the command line's exit status 2), then
%% what can go wrong in one run.
-type error_reason() :: {undef, {module(), atom(), arity()}}
                      | {bad_runs, term()}
                      | {bad_timeout, term()}
                      | {bad_memory_limit, term()}
                      | {bad_setups, term()}
                      | {bad_args, term()}
                      | {bad_monitors, term()}
                      | {riarc_shml, riarc_shml:reason()}
                      | {out_dir, file:filename(), file:posix()}
                      | {timeout, Seconds :: pos_integer()}
                      | {memory_limit, Mb :: pos_integer()}
                      | {root_crashed, term()}
                      | {monitoring, atom(), riarc_bench_run:monitoring_error()}
                      | {riarc_bench_peer, riarc_bench_peer:error_reason()}.

-type monitors() :: {module, module()} | {props, file:filename()}.
-type config() :: #{mfa := {module(), atom(), list()}, monitors := monitors(),
                    setups => [atom()], runs => pos_integer(), pa => [file:filename()],
                    timeout => pos_integer(), memory_limit => pos_integer()}.

-define(DEFAULTS, #{setups => [baseline, riarc], runs => 5, pa => [], timeout => 300,
                    memory_limit => 8192}).
%% The riarc_* set-ups are riarc with some of its options set (riarc_bench_run:
%% riarc_variants/0).
-define(SETUPS, [baseline, tracing, riarc, riarc_isolated, riarc_inline, riarc_low, riarc_normal,
                 riarc_evm, riarc_paper, centralised, inline]).
%% How often the run's VM has erlang:memory(total) read (in the VM) and its RSS read
%% (from /proc, by the driver), in ms: often enough for runs of a fraction of a second.
-define(MEM_POLL, 10).
-define(COLUMNS, [setup, rep, status, wall_ms, mem_peak, rss_peak, events, analysed,
                  monitored, accepted, rejected, errors, inconclusive,
                  lat_count, lat_mean_us, lat_p50_us, lat_p90_us, lat_p99_us]).

%% @doc The set-ups a user's system can run under.
%% ```
%% 1> riarc_bench_user:setups().
%% [baseline,tracing,riarc,riarc_isolated,riarc_inline,riarc_low,riarc_normal,riarc_evm,
%%  riarc_paper,centralised,inline]
%% '''
-spec setups() -> [atom()].
setups() -> ?SETUPS.

%% @doc Reads `baseline,riarc,centralised' (the CLI's `--instrumentation').
%% ```
%% 1> riarc_bench_user:parse_setups("riarc,centralised").
%% {ok,[riarc,centralised]}
%% 2> riarc_bench_user:parse_setups("riarc,psychic").
%% {error,"a comma-separated list of baseline, tracing, riarc, riarc_isolated, riarc_inline, riarc_low, riarc_normal, riarc_evm, riarc_paper, centralised, inline"}
%% '''
-spec parse_setups(string()) -> {ok, [atom()]} | {error, string()}.
parse_setups(Text) ->
    Names = [string:trim(N) || N <- string:split(Text, ",", all)],
    Known = [{atom_to_list(S), S} || S <- ?SETUPS],
    case [proplists:get_value(N, Known) || N <- Names] of
        Ss when Ss =/= [] ->
            case lists:member(undefined, Ss) of
                false -> {ok, dedup(Ss)};
                true -> {error, setups_help()}
            end;
        _ -> {error, setups_help()}
    end.

setups_help() ->
    "a comma-separated list of " ++ lists:join(", ", [atom_to_list(S) || S <- ?SETUPS]).

dedup(L) -> lists:reverse(lists:foldl(fun(X, A) -> [X || not lists:member(X, A)] ++ A end, [], L)).

%%% The driver --------------------------------------------------------------------------

%% @doc Benchmarks the user's system and writes Out/runs.csv and Out/report.html. The
%% baseline is always run (every ratio needs it). `failed' counts the monitored runs
%% (warm-ups included: a reject is a reject) with a reject or error verdict, `crashed'
%% the runs that did not finish.
%% ```
%% 1> {ok, R} = riarc_bench_user:run(#{mfa => {my_sys, main, []}, monitors => {props, "my.prop"},
%% ..                                  runs => 5}, #{out => "/tmp/my"}).
%% 2> io:put_chars(riarc_bench_user_report:table(R)).
%% '''
-spec run(config(), #{out := file:filename(), progress => boolean()}) ->
    {ok, #{csv := file:filename(), html := file:filename(), rows := [map()],
           summary := [{atom(), map()}], setups := [atom()],
           failed := non_neg_integer(), crashed := non_neg_integer()}}
    | {error, {?MODULE, error_reason()}}.
run(Cfg0, Opts = #{out := Out}) ->
    Cfg = maps:merge(?DEFAULTS, Cfg0),
    %% Paths first: the checks below load the user's modules from them.
    ok = code:add_pathsa(lists:reverse([filename:absname(P) || P <- maps:get(pa, Cfg)])),
    case check(Cfg) of
        ok ->
            case filelib:ensure_dir(filename:join(Out, "x")) of
                ok -> drive(Cfg, Out, maps:get(progress, Opts, false));
                {error, Reason} -> {error, {?MODULE, {out_dir, Out, Reason}}}
            end;
        {error, Reason} -> {error, {?MODULE, Reason}}
    end.

check(#{mfa := {M, F, A}, monitors := Mons, setups := Ss, runs := N, timeout := T,
        memory_limit := L}) ->
    Known = [S || S <- Ss, lists:member(S, ?SETUPS)],
    if
        not (is_integer(N) andalso N >= 1) -> {error, {bad_runs, N}};
        not (is_integer(T) andalso T >= 1) -> {error, {bad_timeout, T}};
        not (is_integer(L) andalso L >= 64) -> {error, {bad_memory_limit, L}};
        Known =/= Ss orelse Ss =:= [] -> {error, {bad_setups, Ss}};
        not is_list(A) -> {error, {bad_args, A}};
        true ->
            _ = code:ensure_loaded(M),
            case erlang:function_exported(M, F, length(A)) of
                false -> {error, {undef, {M, F, length(A)}}};
                true -> check_monitors(Mons)
            end
    end.

%% Checked here, in the driver's VM, so that a typo is bad input (status 2) before the
%% first VM starts; each run's VM loads the monitors again for itself.
check_monitors({module, Mod}) ->
    case riarc_lambda:valid_spec(Mod) of
        true -> ok;
        false -> {error, {bad_monitors, Mod}}
    end;
check_monitors({props, File}) ->
    case riarc_shml:load_file(File) of
        {ok, _} -> ok;
        {error, Reason} -> {error, {riarc_shml, Reason}}
    end;
check_monitors(Other) -> {error, {bad_monitors, Other}}.

drive(Cfg = #{runs := N}, Out, Progress) ->
    Setups = [baseline | maps:get(setups, Cfg) -- [baseline]],
    Say = fun(Fmt, Args) when Progress -> io:format(standard_error, Fmt, Args);
             (_, _) -> ok end,
    One = fun(S, Rep) ->
                  R = run_in_peer(S, Cfg),
                  Say("riarc bench: ~s ~s: ~ts~n", [S, rep_label(Rep), progress_text(R)]),
                  row(S, Rep, R)
          end,
    %% One uncounted run per set-up first: the first VM of a series pays for cold
    %% caches (the file system's, the CPU's) that later runs do not.
    Warm = [One(S, warmup) || S <- Setups],
    Rows = [One(S, Rep) || Rep <- lists:seq(1, N), S <- Setups],
    Csv = filename:join(Out, "runs.csv"),
    ok = riarc_bench_writer:write_csv(Csv, ?COLUMNS, [[maps:get(C, R, "") || C <- ?COLUMNS]
                                                      || R <- Rows]),
    Summary = riarc_bench_user_report:summarise(Setups, Rows),
    Html = riarc_bench_user_report:write_report(Out, Cfg, Setups, Summary),
    Failed = length([R || R <- Warm ++ Rows, bad_verdicts(R) > 0]),
    Crashed = length([R || R = #{status := S} <- Warm ++ Rows, S =/= ok]),
    {ok, #{csv => Csv, html => Html, rows => Rows, summary => Summary, failed => Failed,
           crashed => Crashed, setups => Setups}}.

rep_label(warmup) -> "warm-up";
rep_label(I) -> io_lib:format("run ~b", [I]).

progress_text({ok, #{wall_ms := W}}) -> io_lib:format("~.1f ms", [W]);
progress_text({error, {?MODULE, R}}) -> format_error(R).

bad_verdicts(R) -> maps:get(rejected, R, 0) + maps:get(errors, R, 0).

row(S, Rep, {ok, M}) -> M#{setup => S, rep => Rep, status => ok};
row(S, Rep, {error, R}) -> #{setup => S, rep => Rep, status => error, reason => R}.

%%% One run in a fresh VM ---------------------------------------------------------------

%% A fresh VM per run (riarc_bench_peer), so that one run's heap, atoms and ETS tables
%% cannot help or hurt the next; killed above the memory limit, so that a set-up that
%% cannot keep up ends as a failed run, not a swapping host.
run_in_peer(Setup, Cfg = #{mfa := MFA, monitors := Mons, timeout := TimeoutS,
                           memory_limit := LimitMb}) ->
    case riarc_bench_peer:call({?MODULE, run_one, [Setup, MFA, Mons, weave(Setup, Cfg)]}, [],
                               TimeoutS * 1000 + 5000, LimitMb) of
        {ok, {ok, R}, #{rss_peak_kb := Kb}} -> {ok, R#{rss_peak => 1024 * Kb}};
        {ok, {error, {?MODULE, _}} = Error, _} -> Error;
        {error, {riarc_bench_peer, {timeout, _, _}}} -> {error, {?MODULE, {timeout, TimeoutS}}};
        {error, {riarc_bench_peer, {memory_limit, _, _}}} -> {error, {?MODULE, {memory_limit, LimitMb}}};
        {error, {riarc_bench_peer, _} = Error} -> {error, {?MODULE, Error}}
    end.

%% Inline monitoring weaves the modules it monitors: the entry module and every module
%% of the user's -pa directories.
weave(inline, #{mfa := {M, _, _}, pa := Pa}) ->
    lists:usort([M | [list_to_atom(filename:basename(B, ".beam"))
                      || D <- Pa, B <- filelib:wildcard(filename:join(D, "*.beam"))]]);
weave(_, _) -> [].

%% @doc Inside the run's VM: one run of the user's system under Setup. Not for direct use
%% (the driver calls it in a fresh VM), but harmless in a shell:
%% ```
%% 1> riarc_bench_user:run_one(baseline, {riarc_demo, main, [8, 25]}, {module, riarc_demo_monitors}, []).
%% {ok,#{wall_ms => 12.3,mem_peak => 31457280,events => 0,...}}
%% '''
-spec run_one(atom(), {module(), atom(), list()}, monitors(), [module()]) ->
    {ok, map()} | {error, {?MODULE, error_reason()}}.
run_one(Setup, {M, F, A}, Mons, Weave) ->
    case load_monitors(Mons) of
        {ok, UserSpec, Defaults} ->
            Tab = ets:new(?MODULE, [public, set]),
            %% The root runs through root/4 to catch M:F's return value; spec/3 makes the
            %% wrapper invisible to the user's monitors.
            Root = {?MODULE, root, [Tab, M, F, A]},
            Spec = spec(UserSpec, Root, {M, F, A}),
            %% The wrapper Spec is a fun, for which riarc takes no defaults: what the Spec
            %% module sets (its trace flags and patterns, and where its monitors run, a
            %% property module's `analysis() -> inline') is passed on explicitly, so that
            %% the set-up `riarc' runs as `riarc run' would.
            Opts = maps:merge(Defaults, #{timeout => infinity, log => false,
                                          invariants => false}),
            ok = load_code(),
            Sampler = start_sampler(),
            T0 = erlang:monotonic_time(microsecond),
            Result = run_setup(Setup, Root, Spec, Opts, Weave),
            Wall = (erlang:monotonic_time(microsecond) - T0) / 1000,
            MemPeak = stop_sampler(Sampler),
            case Result of
                {ok, R} ->
                    {ok, maps:merge(#{wall_ms => Wall, mem_peak => MemPeak},
                                    maps:merge(counts(R), latencies(ets:lookup(Tab, result))))};
                {error, Reason} -> {error, {?MODULE, Reason}}
            end;
        {error, Reason} -> {error, {?MODULE, Reason}}
    end.

%% Every set-up starts from a node where riarc and the comparison methods are loaded and
%% riarc's application runs, as on a node that monitors for a living: loading them (21
%% modules and the routing table's NIF for riarc, 23 to 30 ms in a fresh VM, against about
%% 1 ms for each later run) is paid once per node, and would otherwise be charged to
%% whichever set-up happens to need the most code, on runs of 50 to 100 ms. Every app a
%% run of any set-up may reach is loaded: riarc_dist too, when present (riarc reaches it
%% through riarc_distribution, not as a dependency), which riarc's session loads at its
%% first start: 2 ms of a run, charged to riarc alone until 2026-11-28.
-define(RUN_APPS, [riarc, riarc_shml, riarc_methods, riarc_dist, riarc_bench]).

load_code() ->
    {ok, _} = application:ensure_all_started(riarc),
    Mods = lists:append([M || App <- ?RUN_APPS, loaded(application:load(App)),
                              {ok, M} <- [application:get_key(App, modules)]]),
    _ = code:ensure_modules_loaded(Mods),
    ok.

loaded(ok) -> true;
loaded({error, {already_loaded, _}}) -> true;
loaded({error, _}) -> false.

%% The options riarc would run the Spec module with: riarc's defaults under what the
%% module sets (riarc_lambda:spec_defaults/1: the messages its monitors can need, where
%% they run).
load_monitors({module, Mod}) -> {ok, Mod, defaults(Mod)};
load_monitors({props, File}) ->
    %% A property file compiles to a module in memory: it must be compiled in this VM.
    case riarc_shml:load_file(File) of
        {ok, Mod} -> {ok, Mod, defaults(Mod)};
        {error, Reason} -> {error, {riarc_shml, Reason}}
    end.

defaults(Mod) ->
    maps:merge(riarc_opts:defaults(), riarc_lambda:spec_defaults(Mod)).

%% @doc The root process of every set-up: the user's entry point, its result kept in an
%% ETS table (no message, so no event the user's monitors would see).
%% ```
%% 1> T = ets:new(t, [public]), riarc_bench_user:root(T, lists, seq, [1, 3]), ets:lookup(T, result).
%% [{result,[1,2,3]}]
%% '''
-spec root(ets:tid(), module(), atom(), list()) -> true.
root(Tab, M, F, A) ->
    ets:insert(Tab, {result, apply(M, F, A)}).

%% The user's Spec, asked about the root as the user's MFA, with the root's init event
%% showing that MFA, so that properties naming M:F match as under `riarc run'.
spec(UserSpec, Root, User) ->
    fun(MFA) when MFA =:= Root ->
            case call_spec(UserSpec, User) of
                {ok, Mon} -> {ok, rename_init(Mon, Root, User)};
                Other -> Other
            end;
       (MFA) -> call_spec(UserSpec, MFA)
    end.

call_spec(Spec, MFA) when is_function(Spec, 1) -> Spec(MFA);
call_spec(Spec, MFA) -> Spec:spec(MFA).

rename_init(Mon, Root, User) ->
    fun({init, C, P, MFA}) when MFA =:= Root -> step(Mon, {init, C, P, User});
       (E) -> step(Mon, E)
    end.

step(Mon, E) ->
    case riarc_monitor:analyse(Mon, E) of
        {next, Next} -> Next;
        {verdict, V} -> V;
        {verdict, error, {Class, Reason, Stack}} -> erlang:raise(Class, Reason, Stack);
        {verdict, error, Reason} -> exit(Reason)
    end.

run_setup(baseline, {M, F, A}, _Spec, _Opts, _) ->
    {_Pid, Ref} = spawn_monitor(M, F, A),
    down(Ref);
run_setup(tracing, {M, F, A}, _Spec, #{events := Events, trace_patterns := Patterns}, _) ->
    %% The VM's tracing alone, into a process that counts and drops every event, with
    %% riarc's trace flags and riarc's own installation of the patterns
    %% (riarc_trace_pattern:hold/3, which also adds the receive clause that marks
    %% timeouts), so that the VM builds exactly the trace messages riarc gets.
    Sink = spawn_opt(fun() -> sink(0) end, [{message_queue_data, off_heap}]),
    Flags = [procs, set_on_spawn] ++ [send || lists:member(send, Events)]
        ++ ['receive' || lists:member(recv, Events)],
    Key = {?MODULE, make_ref()},
    ok = riarc_trace_pattern:hold(Key, self(), Patterns),
    try
        {Pid, Ref} = spawn_monitor(fun() -> receive go -> apply(M, F, A) end end),
        1 = erlang:trace(Pid, true, [{tracer, Sink} | Flags]),
        Pid ! go,
        R = down(Ref),
        %% Race: the root's last trace messages may still be on their way to the sink;
        %% the count is taken once every one of them is delivered.
        Delivered = erlang:trace_delivered(Pid),
        receive {trace_delivered, Pid, Delivered} -> ok end,
        Sink ! {stop, self()},
        receive {sink, Sink, N} -> with_events(R, N) end
    after
        riarc_trace_pattern:release(Key)
    end;
run_setup(riarc, Root, Spec, Opts, _) -> monitored(riarc, riarc:run(Root, Spec, Opts));
run_setup(centralised, Root, Spec, Opts, _) -> monitored(centralised, riarc_central:run(Root, Spec, Opts));
run_setup(inline, Root, Spec, Opts, Weave) ->
    case riarc_inline:instrument(Weave) of
        ok ->
            try monitored(inline, riarc_inline:run(Root, Spec, maps:remove(invariants, Opts)))
            after ok = riarc_inline:restore(Weave)
            end;
        Error -> monitored(inline, Error)
    end;
run_setup(Variant, Root, Spec, Opts, _) ->
    #{Variant := Extra} = riarc_bench_run:riarc_variants(),
    monitored(Variant, riarc:run(Root, Spec, maps:merge(Opts, Extra))).

monitored(_Setup, {ok, _} = Ok) -> Ok;
monitored(Setup, {error, Error}) -> {error, {monitoring, Setup, Error}}.

%% The tracing floor's sink: counts its events and answers the count at the end.
sink(N) ->
    receive
        {stop, From} -> From ! {sink, self(), N};
        _ -> sink(N + 1)
    end.

with_events({ok, R}, N) -> {ok, R#{events => N}};
with_events(Error, _) -> Error.

down(Ref) ->
    receive
        {'DOWN', Ref, process, _, normal} -> {ok, #{}};
        {'DOWN', Ref, process, _, Reason} -> {error, {root_crashed, Reason}}
    end.

counts(R) ->
    Vs = maps:get(verdicts, R, []),
    Count = fun(V) -> length([x || #{verdict := V1} <- Vs, V1 =:= V]) end,
    #{events => maps:get(events, R, 0), analysed => maps:get(analysed, R, 0),
      monitored => length(Vs), accepted => Count(accept), rejected => Count(reject),
      errors => Count(error), inconclusive => length(Vs) - Count(accept) - Count(reject) - Count(error)}.

latencies([{result, {latencies_us, L = [_ | _]}}]) ->
    case lists:all(fun is_integer/1, L) of
        true ->
            Q = fun(P) -> riarc_bench_ci:quantile(L, P) end,
            #{lat_count => length(L), lat_mean_us => lists:sum(L) / length(L),
              lat_p50_us => Q(0.5), lat_p90_us => Q(0.9), lat_p99_us => Q(0.99)};
        false -> #{}
    end;
latencies(_) -> #{}.

start_sampler() ->
    Owner = self(),
    spawn_link(fun() -> sample(Owner, erlang:memory(total)) end).

sample(Owner, Max) ->
    receive
        {stop, Owner} -> Owner ! {sampler, self(), max(Max, erlang:memory(total))}
    after ?MEM_POLL -> sample(Owner, max(Max, erlang:memory(total)))
    end.

stop_sampler(S) ->
    S ! {stop, self()},
    receive {sampler, S, Max} -> unlink(S), Max end.

%%% Errors ------------------------------------------------------------------------------

%% @doc One sentence for an error of run/2 or of a single run.
%% ```
%% 1> riarc_bench_user:format_error({undef, {my_sys, main, 0}}).
%% "my_sys:main/0 is not an exported function on the code path (see -pa)"
%% '''
-spec format_error(error_reason()) -> string().
format_error({undef, {M, F, Ar}}) ->
    fmt("~s:~s/~b is not an exported function on the code path (see -pa)", [M, F, Ar]);
format_error({bad_runs, N}) -> fmt("the number of runs must be an integer >= 1, not ~0tp", [N]);
format_error({bad_timeout, T}) -> fmt("the timeout must be an integer >= 1 (seconds), not ~0tp", [T]);
format_error({bad_memory_limit, L}) -> fmt("the memory limit must be an integer >= 64 (MB), not ~0tp", [L]);
format_error({bad_setups, Ss}) -> fmt("unknown set-up in ~0tp: use ~s", [Ss, setups_help()]);
format_error({bad_args, A}) -> fmt("the arguments must be a list, not ~0tp", [A]);
format_error({bad_monitors, M}) -> fmt("~0tp is not a module exporting spec/1 on the code path", [M]);
format_error({riarc_shml, R}) -> riarc_shml:format_error(R);
format_error({out_dir, Out, R}) -> fmt("cannot create ~ts: ~ts", [Out, file:format_error(R)]);
format_error({timeout, S}) -> fmt("the run did not end within ~b s and was killed", [S]);
format_error({memory_limit, L}) -> fmt("the run's VM passed ~b MB and was killed", [L]);
format_error({root_crashed, R}) -> fmt("the entry point crashed: ~0tP", [R, 12]);
format_error({monitoring, Setup, E}) -> fmt("the ~s set-up failed: ~ts", [Setup, riarc:format_error(E)]);
format_error({riarc_bench_peer, R}) -> riarc_bench_peer:format_error(R).

fmt(F, A) -> lists:flatten(io_lib:format(F, A)).
