%% @doc The offline commands of `bin/riarc': check a trace file, record a run, and the
%% exhaustive interleaving sweep behind `make verify'.
%% ```
%% $ bin/riarc record -pa _build/test/lib/riarc_testkit/ebin -m riarc_demo_pqr -f p -o pqr.rtrc
%% recorded 10 events to pqr.rtrc (peak recorder queue 3, 0 suspensions)
%% $ bin/riarc record --replayable -m riarc_demo -f tickets -a '[8, 20]' -o race.rr
%% recorded 822 events (7420 bytes) to race.rr
%% $ bin/riarc check --trace pqr.rtrc --monitors my_monitors
%% <0.90.0> riarc_demo_pqr:p/0 accept
%% <0.91.0> riarc_demo_pqr:q/0 accept
%% $ bin/riarc check --trace run.dbg --wrap .trc --props props/pqr.prop
%% $ bin/riarc verify --max-procs 3
%% P/Q/R (fig. 2a): 3150 interleavings x 8 arrangements = 25200 replays, ok (1.3 s)
%% ...
%% '''
%% `record --replayable' records for `bin/riarc replay' instead (riarc_replay_cli, which
%% declares its flags and runs it; docs/replay.md).
%% Exit status: 0 when no verdict is reject or error and some process was monitored
%% (check) or every replay passed (verify), 1 otherwise, 2 on bad input, with the error
%% sentence on stderr. Every warning of a check (atoms this node lacks, clauses or Specs
%% that matched nothing, ...) goes to stderr.
%% From Erlang, run/1 prints the same and returns the status:
%% ```
%% 1> riarc_offline_cli:run(["record", "-m", "riarc_demo_pqr", "-f", "p", "-o", "/tmp/pqr.rtrc"]).
%% recorded 10 events to /tmp/pqr.rtrc ...
%% 0
%% 2> riarc_offline_cli:run(["check", "--trace", "/tmp/pqr.rtrc", "--props", "examples/props/pqr.prop"]).
%% <0.90.0> riarc_demo_pqr:p/0 accept
%% ...
%% 0
%% '''
-module(riarc_offline_cli).

-export([run/1, commands/0]).

%% @doc The declarations of check, record and verify (riarc_cli_args parses them).
-spec commands() -> [riarc_cli_args:command()].
commands() ->
    Timeout = riarc_cli_args:timeout_flag("command"),
    [#{name => "check",
       summary => "check a recorded trace file",
       description => "Checks a recorded trace file (riarc's binary or text format, or a dbg "
                  "trace) and prints
one verdict line (process, initial call, verdict) per "
                  "monitored process.",
       flags => [#{name => "--trace", key => trace, type => string, metavar => "FILE",
                   required => true, help => "the trace file"},
                 #{name => "--wrap", key => wrap, type => string, metavar => "TAIL",
                   help => "FILE is the prefix of a dbg wrap set whose files end in TAIL"},
                 Timeout]
           ++ riarc_cli_args:code_flags() ++ riarc_cli_monitors:flags() ++ [riarc_cli_args:strict_flag()]
           ++ riarc_cli_limits:limit_flags() ++ [riarc_view_cli:chart_flag(), riarc_cli_report:format_flag()],
       one_of => [[monitors, props]]},
     #{name => "record",
       summary => "record a run to a trace file",
       description => "Runs M:F(Args) and records every event of it to a trace file, to be "
                  "checked later;\nwith --replayable, records the run's decisions instead, for "
                  "`riarc replay' (docs/replay.md).",
       flags => [#{name => "--module", short => "-m", key => module, type => atom,
                   metavar => "MOD", required => true, help => "the module of the system's entry point"},
                 #{name => "--function", short => "-f", key => function, type => atom,
                   metavar => "FUN", required => true, help => "its function"},
                 #{name => "--args", short => "-a", key => args, type => term_list,
                   metavar => "ARGS", default => [], help => "its arguments, an Erlang list"},
                 #{name => "--out", short => "-o", key => out, type => string, metavar => "FILE",
                   required => true, help => "the trace file to write"},
                 #{name => "--payloads", key => payloads, type => {enum, [true, false]},
                   default => true, help => "record message contents"},
                 #{name => "--format", key => format, type => {enum, [binary, text]},
                   default => binary, help => "the trace format (docs/trace-format.md)"},
                 Timeout]
           ++ riarc_replay_cli:record_flags() ++ riarc_cli_args:code_flags()},
     #{name => "verify",
       summary => "exhaustive interleaving verification",
       description => "Exhaustive interleaving verification of the tracers (the sweep behind "
                  "`make verify').",
       flags => [#{name => "--max-procs", key => max_procs, type => {int, 1}, metavar => "N",
                   default => 4, help => "the largest test system, in processes"},
                 #{name => "--workers", key => workers, type => {int, 1}, metavar => "N",
                   help => "replays in parallel (default: one per scheduler)"},
                 #{name => "--perturb", key => perturb, type => {int, 0}, metavar => "MICROSECONDS",
                   default => 0, help => "random delays of up to this many microseconds"}]}].

%% @doc Runs the command in Args (its first element) and returns its exit status.
-spec run([string()]) -> 0 | 1 | 2.
run([Name | Args]) when Name =:= "check"; Name =:= "record"; Name =:= "verify" ->
    [Cmd] = [C || C = #{name := N} <- commands(), N =:= Name],
    riarc_cli_args:run(Cmd, Args, fun(Opts) -> command(Name, Cmd, Opts) end);
run(_) ->
    fail("give one of the commands check, record or verify").

%% Whatever the VM logs goes to standard error, never among the verdicts (riarc_cli_syslog).
command("check", Cmd, Opts) -> riarc_cli_syslog:with(Opts, fun() -> check(Cmd, Opts) end);
command("record", Cmd, Opts) -> riarc_cli_syslog:with(Opts, fun() -> record(Cmd, Opts) end);
command("verify", _Cmd, Opts) -> verify(Opts).

%%% check

check(Cmd, Opts = #{trace := File, timeout := T}) ->
    Source = case Opts of
                 #{wrap := Tail} -> {dbg_wrap, File, Tail};
                 #{} -> File
             end,
    case riarc_cli_monitors:spec_of(Opts) of
        {ok, Spec, _RunOpts} ->
            %% Offline under the same limits as online (issue 29): past one, the check is
            %% inconclusive, naming it.
            Limits = maps:with([limits], riarc_cli_limits:opts(Opts)),
            Checked = riarc_offline:check(Source, Spec, Limits#{timeout => T}),
            riarc_view_cli:chart(Opts, Checked, checked(Source, Checked,
                                                        #{spec => Spec, strict => maps:get(strict, Opts),
                                                          format => maps:get(format, Opts)}));
        {error, Reason} -> riarc_cli_report:bad_input(Cmd, Opts, riarc:format_error(Reason))
    end.

checked(_Source, {error, Reason}, ReportOpts) ->
    riarc_cli_report:fail(ReportOpts, riarc:format_error(Reason), 2);
checked(Source, {ok, Result}, ReportOpts) ->
    Warnings = trace_warnings(Source, maps:get(trace, Result, #{})),
    riarc_cli_report:result(Result, ReportOpts#{warnings => Warnings}).

%% What the file did not give whole, or gave otherwise than the recording node had it, is
%% said (on stderr, or in the json summary): the verdicts are about less. Every warning
%% of the check's result, in riarc_offline's words, but those said here in the command's
%% own words.
trace_warnings(Source, Info) ->
    Name = case Source of {dbg_wrap, N, T} -> N ++ "*" ++ T; F -> F end,
    [fmt("~ts is truncated at byte ~b: checked the events before it", [Name, B])
     || #{truncated := B} <- [Info], is_integer(B)]
        ++ [fmt("~ts: the VM dropped ~b trace messages while recording", [Name, D])
            || #{dropped := D} <- [Info], D > 0]
        ++ [fmt("~ts: ~b event(s) of processes no traced process spawned were not checked",
                [Name, H]) || #{held := H} <- [Info], H > 0]
        ++ [fmt("~ts", [riarc_offline:format_warning(W)])
            || W <- maps:get(warnings, Info, []),
               not lists:member(element(1, W), [truncated, dropped, held])].

fmt(Fmt, Args) -> lists:flatten(io_lib:format(Fmt, Args)).

%%% record

%% The replayable flags without --replayable are refused rather than ignored: a user who
%% asked for a strategy expects a replayable file.
record(_Cmd, Opts = #{replayable := true}) ->
    riarc_replay_cli:record(Opts);
record(Cmd, Opts) ->
    case [N || {K, N} <- [{strategy, "--strategy"}, {until_result, "--until-result"},
                          {tries, "--tries"}, {weave, "--weave"}, {until_reject, "--until-reject"},
                          {monitors, "--monitors"}, {props, "--props"}], is_map_key(K, Opts)] of
        [N | _] -> riarc_cli_args:bad_input(Cmd, N ++ " needs --replayable");
        [] -> record(Opts)
    end.

record(#{module := M, function := F, args := A, out := Out, payloads := P,
         format := Format, timeout := T}) ->
    case riarc_offline:record({M, F, A}, Out, #{payloads => P, format => Format, timeout => T}) of
        {ok, #{events := N, peak_queue := Q, suspensions := S}} ->
            io:format("recorded ~b events to ~ts (peak recorder queue ~b, ~b suspensions)~n",
                      [N, Out, Q, S]),
            0;
        {error, Reason} -> fail(riarc:format_error(Reason))
    end.

%%% verify

verify(#{max_procs := N, perturb := P} = Opts) ->
    W = maps:get(workers, Opts, erlang:system_info(schedulers_online)),
    T0 = erlang:monotonic_time(millisecond),
    Status = sweep(riarc_interleave:sweep_systems(N),
                   #{workers => W, perturb => case P of 0 -> undefined; _ -> P end}, 0),
    io:format("total: ~.1f s~n", [(erlang:monotonic_time(millisecond) - T0) / 1000]),
    Status.

sweep([], _Opts, Runs) ->
    io:format("all ~b replays passed~n", [Runs]),
    0;
sweep([{Name, Sys} | Rest], Opts, Runs) ->
    case riarc_interleave:verify(Sys, Opts) of
        {ok, #{interleavings := I, arrangements := A, runs := R, duration_us := D}} ->
            io:format("~s: ~b interleavings x ~b arrangements = ~b replays, ok (~.1f s)~n",
                      [Name, I, A, R, D / 1.0e6]),
            sweep(Rest, Opts, Runs + R);
        {error, Failure} ->
            io:format("~s: FAILED~n~ts~n", [Name, riarc_interleave:format_error(Failure)]),
            1
    end.

%%% helpers

fail(Msg) ->
    io:format(standard_error, "riarc: ~ts~n", [Msg]),
    2.
