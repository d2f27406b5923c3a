%% @doc The `bin/riarc' command line (all but the load driver's commands, which
%% riarc_bench_cli serves).
%% ```
%% $ bin/riarc run -m riarc_demo -f main -a '[8, 20]' --monitors riarc_demo_monitors
%% <0.83.0> riarc_demo_tickets:init/1 reject
%% <0.85.0> riarc_demo:client/2 accept
%% ...
%% $ echo $?
%% 1
%% '''
%% Exit status: 0 when no verdict is reject or error, 1 otherwise, 2 on bad input.
-module(riarc_cli).

-export([main/1, demo/1]).

-define(USAGE,
"usage: riarc COMMAND ...~n"
"  run -m MOD -f FUN [-a ARGS] (--monitors MODULE | --props FILE) [--timeout MS]~n"
"                                  run a system under RIARC monitoring~n"
"  demo                            the bundled buggy ticket service, monitored~n"
"  check --trace FILE (--monitors MODULE | --props FILE)   check a recorded trace~n"
"  record -m MOD -f FUN [-a ARGS] -o FILE                  record a run to a trace file~n"
"  verify [--max-procs N]          exhaustive interleaving verification~n"
"  compile FILE [-o DIR]           compile a property file to a .beam~n"
"  bench ... / experiment ...      the load driver (see docs/bench.md)~n").

%% @doc Entry point: runs the command and halts the VM with its status.
-spec main([string()]) -> no_return().
main(Args) ->
    erlang:halt(dispatch(Args)).

dispatch(["run" | Rest]) -> run(Rest);
dispatch(["demo" | Rest]) -> demo(Rest);
dispatch([Cmd | _] = Args) when Cmd =:= "check"; Cmd =:= "record"; Cmd =:= "verify" ->
    riarc_offline_cli:main(Args);
dispatch(["compile" | Rest]) -> riarc_shml_cli:main(Rest);
dispatch([H | _]) when H =:= "-h"; H =:= "--help"; H =:= "help" ->
    io:format(?USAGE), 0;
dispatch(Other) ->
    io:format(standard_error, "riarc: unknown command ~0tp~n" ?USAGE, [Other]),
    2.

%%% run

run(Args) ->
    case parse_run(Args) of
        {ok, MFA, Spec, Opts} -> report(riarc:run(MFA, Spec, Opts#{log => false}));
        {error, Msg} -> fail(Msg)
    end.

parse_run(Args) ->
    maybe_parsed(riarc_cli_args:parse_args(Args), fun(Flags) ->
        case {Flags, riarc_cli_args:spec_of(Flags)} of
            {_, {error, _} = E} -> E;
            {#{"-m" := M, "-f" := F}, {ok, Spec, SpecOpts}} ->
                case {riarc_cli_args:term_list(maps:get("-a", Flags, "[]")), timeout_of(Flags)} of
                    {{ok, A}, {ok, T}} ->
                        {ok, {list_to_atom(M), list_to_atom(F), A}, Spec, SpecOpts#{timeout => T}};
                    {{error, _} = E, _} -> E;
                    {_, {error, _} = E} -> E
                end;
            _ -> {error, "run needs -m MOD and -f FUN"}
        end
    end).

maybe_parsed({ok, Flags}, Fun) -> Fun(Flags);
maybe_parsed({error, _} = E, _Fun) -> E.

timeout_of(Flags) ->
    case string:to_integer(maps:get("--timeout", Flags, "60000")) of
        {T, ""} when T >= 0 -> {ok, T};
        _ -> {error, "--timeout takes a number of milliseconds"}
    end.

report({ok, #{verdicts := Vs}}) ->
    _ = [io:format("~s~n", [riarc:format_verdict(V)]) || V <- Vs],
    status(Vs);
report({error, Reason}) ->
    fail(riarc:format_error(Reason)).

status(Vs) ->
    case [V || #{verdict := V} <- Vs, V =:= reject orelse V =:= error] of
        [] -> 0;
        _ -> 1
    end.

fail(Msg) ->
    io:format(standard_error, "riarc: ~s~n", [Msg]),
    2.

%%% demo

%% @doc `make demo': the ticket service with eight clients, monitored three ways: by
%% Erlang monitors online, by a property file online, and offline over a recording.
-spec demo([string()]) -> 0 | 1 | 2.
demo(_Args) ->
    MFA = {riarc_demo, main, [8, 25]},
    io:format("riarc demo: a supervised ticket dispenser (gen_server) with a lost-update race,~n"
              "8 concurrent clients x 25 tickets, every process monitored from outside.~n"
              "Property: the dispenser never hands out a ticket twice; every client gets~n"
              "distinct tickets and exits normally.~n"),
    Steps = [{"1. online, properties as Erlang monitors (riarc_demo_monitors)",
              fun() -> riarc:run(MFA, riarc_demo_monitors, #{timeout => 30000, log => false}) end},
             {"2. online, properties in sHML (examples/props/demo.prop)",
              fun() -> with_props("examples/props/demo.prop", fun(Spec, Opts) ->
                           riarc:run(MFA, Spec, Opts#{timeout => 30000, log => false}) end) end},
             {"3. offline: the run recorded to a trace file, then checked",
              fun() -> record_and_check(MFA) end}],
    Statuses = [demo_step(Title, Fun) || {Title, Fun} <- Steps],
    lists:max(Statuses).

demo_step(Title, Fun) ->
    io:format("~n~s~n", [Title]),
    case Fun() of
        {ok, R = #{verdicts := Vs, tracers := #{spawned := Sp, peak := Pk}}} ->
            _ = [io:format("  ~s~n", [riarc:format_verdict(V)]) || V <- Vs],
            io:format("  tracers: ~b spawned, ~b at peak, all collected; ~b events traced, "
                      "~b analysed, ~b routed between tracers; ~b invariant violations; ~.1f ms~n",
                      [Sp, Pk, maps:get(events, R), maps:get(analysed, R), maps:get(routed, R),
                       length(maps:get(violations, R)), maps:get(duration_us, R) / 1000]),
            io:format("  ~s~n", [case [V || V = #{verdict := reject} <- Vs] of
                                     [] -> "this run happened not to hit the race; run it again";
                                     _ -> "caught: the dispenser handed out a duplicate ticket"
                                 end]),
            0;
        {error, Msg} when is_list(Msg) -> fail(Msg);
        {error, Reason} -> fail(riarc:format_error(Reason))
    end.

with_props(File, Fun) ->
    case riarc_cli_args:spec_of(#{"--props" => File}) of
        {ok, Spec, Opts} -> Fun(Spec, Opts);
        {error, Msg} -> {error, lists:flatten(Msg)}
    end.

record_and_check(MFA) ->
    File = filename:join(os:getenv("TMPDIR", "/tmp"),
                         "riarc-demo-" ++ os:getpid() ++ ".rtf"),
    try riarc_offline:record(MFA, File, #{}) of
        {ok, #{events := N}} ->
            io:format("  recorded ~b events to ~s~n", [N, File]),
            riarc_offline:check(File, riarc_demo_monitors, #{});
        {error, Reason} -> {error, lists:flatten(riarc:format_error(Reason))}
    after
        _ = file:delete(File)
    end.
