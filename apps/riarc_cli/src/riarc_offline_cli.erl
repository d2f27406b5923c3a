%% @doc The offline commands of `bin/riarc': check a trace file, record a run, and the
%% exhaustive interleaving sweep behind `make verify'.
%% ```
%% $ bin/riarc record -m riarc_demo_pqr -f p -o pqr.rtrc
%% recorded 10 events to pqr.rtrc (peak recorder queue 3, 0 suspensions)
%% $ bin/riarc check --trace pqr.rtrc --monitors my_monitors
%% <0.90.0> accept
%% <0.91.0> accept
%% $ bin/riarc check --trace run.dbg --wrap .trc --props props/pqr.prop
%% $ bin/riarc verify --max-procs 3
%% P/Q/R (fig. 2a): 3150 interleavings x 8 arrangements = 25200 replays, ok (1.3 s)
%% ...
%% '''
%% Exit status: 0 when no verdict is reject or error (check) or every replay passed
%% (verify), 1 otherwise, 2 on bad input, with the error sentence on stderr.
-module(riarc_offline_cli).

-export([main/1, run/1]).

-define(USAGE,
"usage: riarc check --trace FILE [--wrap TAIL] (--monitors MODULE | --props FILE)~n"
"                   [--timeout MS]~n"
"       riarc record -m MOD -f FUN [-a ARGS] -o FILE [--payloads true|false]~n"
"                   [--format binary|text] [--timeout MS]~n"
"       riarc verify [--max-procs N] [--workers N] [--perturb MICROSECONDS]~n").

%% @doc Runs the command in Args (its first element) and halts with its status.
-spec main([string()]) -> no_return().
main(Args) ->
    erlang:halt(run(Args)).

%% @doc Runs the command and returns its exit status.
-spec run([string()]) -> 0 | 1 | 2.
run(["check" | Args]) -> with_flags(Args, fun check/1);
run(["record" | Args]) -> with_flags(Args, fun record/1);
run(["verify" | Args]) -> with_flags(Args, fun verify/1);
run(_) -> fail(io_lib:format(?USAGE, [])).

with_flags(Args, Fun) ->
    case riarc_cli_args:parse_args(Args) of
        {ok, Flags} -> Fun(Flags);
        {error, Msg} -> fail(Msg)
    end.

%%% check

check(Flags = #{"--trace" := File}) ->
    Source = case Flags of
                 #{"--wrap" := Tail} -> {dbg_wrap, File, Tail};
                 #{} -> File
             end,
    case {riarc_cli_args:spec_of(Flags), integer(Flags, "--timeout", 60000)} of
        {{ok, Spec, _RunOpts}, {ok, T}} -> checked(Source, riarc_offline:check(Source, Spec, #{timeout => T}));
        {{error, Msg}, _} -> fail(Msg);
        {_, {error, Msg}} -> fail(Msg)
    end;
check(_) ->
    fail("check needs --trace FILE").

checked(_Source, {error, Reason}) ->
    fail(riarc:format_error(Reason));
checked(Source, {ok, Result = #{verdicts := Vs}}) ->
    warn_trace(Source, maps:get(trace, Result, #{})),
    _ = [io:format("~ts ~s~n", [process(P), V]) || #{pid := P, verdict := V} <- Vs],
    case [V || #{verdict := V} <- Vs, V =:= reject orelse V =:= error] of
        [] -> 0;
        _ -> 1
    end.

%% What the file did not give whole is said on stderr: the verdicts are about less.
warn_trace(Source, Info) ->
    Name = case Source of {dbg_wrap, N, T} -> N ++ "*" ++ T; F -> F end,
    _ = [warn("~ts is truncated at byte ~b: checked the events before it", [Name, B])
         || #{truncated := B} <- [Info], is_integer(B)],
    _ = [warn("~ts: the VM dropped ~b trace messages while recording", [Name, D])
         || #{dropped := D} <- [Info], D > 0],
    _ = [warn("~ts: ~b event(s) of processes no traced process spawned were not checked",
              [Name, H]) || #{held := H} <- [Info], H > 0],
    ok.

warn(Fmt, Args) -> io:format(standard_error, "riarc: warning: " ++ Fmt ++ "~n", Args).

%% Names as the file wrote them: pids in their usual form, atoms and integers as terms.
process(P) when is_pid(P) -> pid_to_list(P);
process(B) when is_binary(B) -> binary_to_list(B);
process(T) -> io_lib:format("~0tp", [T]).

%%% record

record(Flags = #{"-m" := M, "-f" := F, "-o" := Out}) ->
    case record_opts(Flags) of
        {ok, Args, Opts} ->
            MFA = {list_to_atom(M), list_to_atom(F), Args},
            case riarc_offline:record(MFA, Out, Opts) of
                {ok, #{events := N, peak_queue := Q, suspensions := S}} ->
                    io:format("recorded ~b events to ~ts (peak recorder queue ~b, ~b suspensions)~n",
                              [N, Out, Q, S]),
                    0;
                {error, Reason} -> fail(riarc:format_error(Reason))
            end;
        {error, Msg} -> fail(Msg)
    end;
record(_) ->
    fail("record needs -m MOD, -f FUN and -o FILE").

record_opts(Flags) ->
    Payloads = maps:get("--payloads", Flags, "true"),
    Format = maps:get("--format", Flags, "binary"),
    case {riarc_cli_args:term_list(maps:get("-a", Flags, "[]")), integer(Flags, "--timeout", 60000)} of
        {{ok, A}, {ok, T}} when (Payloads =:= "true" orelse Payloads =:= "false"),
                                (Format =:= "binary" orelse Format =:= "text") ->
            {ok, A, #{payloads => Payloads =:= "true", format => list_to_atom(Format),
                      timeout => T}};
        {{error, _} = E, _} -> E;
        {_, {error, _} = E} -> E;
        _ -> {error, "--payloads takes true or false, --format binary or text"}
    end.

%%% verify

verify(Flags) ->
    case {integer(Flags, "--max-procs", 4),
          integer(Flags, "--workers", erlang:system_info(schedulers_online)),
          integer(Flags, "--perturb", 0)} of
        {{ok, N}, {ok, W}, {ok, P}} when N >= 1, W >= 1 ->
            T0 = erlang:monotonic_time(millisecond),
            Opts = #{workers => W, perturb => case P of 0 -> undefined; _ -> P end},
            Status = sweep(riarc_interleave:sweep_systems(N), Opts, 0),
            io:format("total: ~.1f s~n", [(erlang:monotonic_time(millisecond) - T0) / 1000]),
            Status;
        _ -> fail("--max-procs and --workers take a positive number, --perturb a number")
    end.

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

integer(Flags, Flag, Default) ->
    case maps:find(Flag, Flags) of
        error -> {ok, Default};
        {ok, Text} ->
            case string:to_integer(Text) of
                {N, ""} when N >= 0 -> {ok, N};
                _ -> {error, io_lib:format("~s takes a number, not ~s", [Flag, Text])}
            end
    end.

fail(Msg) ->
    io:format(standard_error, "riarc: ~ts~n", [Msg]),
    2.
