%% @doc "Instrumentation alone" for the load driver's system run as a user's system
%% (`bin/riarc bench -m riarc_bench_shapes -f load ... --monitors riarc_bench_alone'): the
%% master and every worker get a monitor of their own that does nothing and never reaches
%% a verdict (riarc_bench_monitor's `none'), so that a set-up's cost is that of collecting
%% and routing the events, not of analysing them. Receive events only, as `make
%% bench-takeover' (`--events recv'): the events the soundness monitors would need.
%% ```
%% 1> {ok, R} = riarc:run({riarc_bench_shapes, load, [burst, 30]}, riarc_bench_alone, #{}).
%% 2> lists:usort([V || #{verdict := V} <- maps:get(verdicts, R)]).
%% [none]
%% '''
-module(riarc_bench_alone).

-export([spec/1, trace_flags/0, analysis/0]).

%% @doc A monitor that does nothing for the master and each worker, none for the rest.
-spec spec(riarc_event:mfa_args()) -> {ok, riarc_bench_monitor:monitor()} | undefined.
spec(MFA) -> (riarc_bench_monitor:spec(#{monitors => none}))(MFA).

%% @doc The monitors run in their tracers (riarc's `analysis => inline'): a monitor that
%% does nothing needs no process of its own, and the set-up's cost is then that of
%% collecting and routing alone, as centralised monitoring's is (its one tracer steps
%% the monitors itself). The set-up `riarc_isolated' gives each its process all the same.
-spec analysis() -> inline.
analysis() -> inline.

%% @doc Receive events only (and spawn and exit, which every set-up traces).
-spec trace_flags() -> [recv].
trace_flags() -> [recv].
