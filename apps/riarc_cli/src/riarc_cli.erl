%% @doc The `bin/riarc' command line: the entry point, the command list, `help' and
%% `--version', and the commands `run' and `demo'. The other commands live in
%% riarc_offline_cli (check, record, verify), riarc_replay_cli (replay), riarc_shml_cli (compile),
%% riarc_bench_cli (bench, experiment, study) and riarc_view_cli (export, and the `--chart'
%% of run, check, replay and attach); all of them parse their arguments with
%% riarc_cli_args, from the declarations their commands/0 export.
%% ```
%% $ bin/riarc run -m riarc_demo -f main -a '[8, 20]' --monitors riarc_demo_monitors
%% <0.83.0> riarc_demo_tickets:init/1 reject
%% <0.85.0> riarc_demo:client/2 accept
%% ...
%% $ echo $?
%% 1
%% $ bin/riarc run --help
%% usage: riarc run -m MOD -f FUN [-a ARGS] [--timeout TIME] [-pa DIR]... [--lib DIR]...
%%                  (--monitors MODULE | --props FILE)
%% ...
%% '''
%% From Erlang, run/1 does what main/1 does and returns the exit status:
%% ```
%% 1> riarc_cli:run(["--version"]).
%% riarc 0.2.0
%% 0
%% '''
%% Exit status: 0 when no verdict is reject or error, 1 otherwise (or when a run fails),
%% 2 on bad input; 141 when standard output was closed early (as `| head' does).
-module(riarc_cli).

-export([main/1, status/1, run/1, demo/1, commands/0, usage/0]).

%% @doc Entry point of bin/riarc: runs the command and halts the VM with its status.
-spec main([string()]) -> no_return().
main(Args) ->
    erlang:halt(status(Args)).

%% @doc What main/1 halts with: the command's exit status, where a closed standard output
%% (EPIPE: `bin/riarc run ... | head -1') ends the program quietly with status 141, as
%% SIGPIPE ends a C program, and a crash of riarc is one message and status 1.
-spec status([string()]) -> non_neg_integer().
status(Args) ->
    try run(Args)
    catch Class:Reason:Stack -> crashed(Class, Reason, Stack)
    end.

%% io raises `terminated' when the I/O server is gone, and the server of standard output
%% dies when it writes to a closed pipe: that is the reader going away, not a bug.
crashed(error, terminated, [{io, _, _, _} | _]) ->
    141;
crashed(Class, Reason, Stack) ->
    io:format(standard_error, "riarc: internal error: ~tp~n~tp~n", [{Class, Reason}, Stack]),
    1.

%% @doc Runs the command in Args and returns its exit status.
-spec run([string()]) -> non_neg_integer().
%% No command at all is a mistake (a script that lost its arguments), not a request for
%% help: the usage goes to standard error and the status says bad input.
run([]) ->
    io:put_chars(standard_error, usage()),
    2;
run([H]) when H =:= "help"; H =:= "--help"; H =:= "-h" -> help();
run(["help", Name]) ->
    case lists:keyfind(Name, 1, table()) of
        {_, Cmd, _} ->
            io:put_chars(riarc_cli_args:usage(Cmd)),
            0;
        false -> unknown(Name)
    end;
run(["help" | Extra]) ->
    io:format(standard_error, "riarc help: give one command, not ~ts~n", [lists:join(" ", Extra)]),
    2;
run(["--version"]) ->
    io:format("riarc ~s~n", [version()]),
    0;
run([Name | Args]) ->
    case lists:keyfind(Name, 1, table()) of
        {_, _Cmd, Run} -> Run(Args);
        false -> unknown(Name)
    end.

help() ->
    io:put_chars(usage()),
    0.

unknown(Name) ->
    io:format(standard_error, "riarc: unknown command ~ts; `riarc help' lists them~n", [Name]),
    2.

%% @doc The overall help: every command with its summary.
-spec usage() -> string().
usage() ->
    Lines = [io_lib:format("  ~-11s~s~n", [N, S]) || #{name := N, summary := S} <- commands()],
    lists:flatten(["usage: riarc COMMAND [OPTION...]\n"
                   "       riarc help [COMMAND]      a command's options\n"
                   "       riarc --version\n\ncommands:\n", Lines,
                   "\nExit status: 0 accepted (or no verdict), 1 a reject or error verdict or a "
                   "failed run,\n2 bad input. docs/cli.md has the details.\n"]).

%% The version of the riarc app (the core), which every app of the umbrella shares.
version() ->
    _ = application:load(riarc),
    {ok, V} = application:get_key(riarc, vsn),
    V.

%% @doc The declarations of every command, in the order the help lists them.
-spec commands() -> [riarc_cli_args:command()].
commands() ->
    [C || {_, C, _} <- table()].

table() ->
    [{"run", run_command(), fun run_cmd/1},
     {"demo", demo_command(), fun demo/1}]
        ++ [{N, C, fun(Args) -> riarc_offline_cli:run([N | Args]) end}
            || C = #{name := N} <- riarc_offline_cli:commands()]
        ++ [{N, C, fun(Args) -> riarc_attach_cli:run([N | Args]) end} || C = #{name := N} <- riarc_attach_cli:commands()]
        ++ [{N, C, fun(Args) -> riarc_replay_cli:run([N | Args]) end}
            || C = #{name := N} <- riarc_replay_cli:commands()]
        ++ [{N, C, fun riarc_shml_cli:run/1} || C = #{name := N} <- riarc_shml_cli:commands()]
        ++ [{N, C, fun(Args) -> riarc_bench_cli:run([N | Args]) end}
            || C = #{name := N} <- riarc_bench_cli:commands()]
        ++ [{N, C, fun(Args) -> riarc_view_cli:run([N | Args]) end}
            || C = #{name := N} <- riarc_view_cli:commands()].

%%% run

run_command() ->
    #{name => "run",
      summary => "run a system under riarc monitoring",
      description => "Runs M:F(Args) with every process it spawns monitored, and prints one "
                     "verdict line\n(pid, initial call, verdict) per monitored process.",
      flags => [#{name => "--module", short => "-m", key => module, type => atom,
                  metavar => "MOD", required => true, help => "the module of the system's entry point"},
                #{name => "--function", short => "-f", key => function, type => atom,
                  metavar => "FUN", required => true, help => "its function"},
                #{name => "--args", short => "-a", key => args, type => term_list,
                  metavar => "ARGS", default => [], help => "its arguments, an Erlang list such as '[8, 20]'"},
                riarc_attach_cli:follow_flag(),
                #{name => "--monitored-elsewhere", key => monitored_elsewhere, type => atom,
                  metavar => "NODE", repeat => true,
                  help => "a session of its own monitors what the system starts on NODE"},
                #{name => "--cookie", key => cookie, type => atom, metavar => "C",
                  help => "the cookie of the nodes followed (default: ~/.erlang.cookie)"},
                riarc_cli_args:timeout_flag("run")]
          ++ riarc_cli_args:code_flags() ++ riarc_cli_monitors:flags() ++ [riarc_cli_args:strict_flag()]
          ++ riarc_cli_limits:flags() ++ [riarc_view_cli:chart_flag()] ++ riarc_dashboard_cli:flags()
          ++ [riarc_cli_report:format_flag(), riarc_cli_syslog:flag()],
      one_of => [[monitors, props]]}.

run_cmd(Args) ->
    Cmd = run_command(),
    riarc_cli_args:run(Cmd, riarc_dashboard_cli:args(Args),
                       fun(O) -> riarc_cli_syslog:with(O, fun() -> run_sys(Cmd, O) end) end).

%% The system's own log output goes to stderr or --system-log (riarc_cli_syslog), so that
%% standard output holds the verdicts only; --format json prints them as JSON Lines.
run_sys(Cmd, O = #{module := M, function := F, args := A}) ->
    case {riarc_cli_monitors:spec_of(O), node_opts(O)} of
        {{ok, Spec, Opts}, {ok, NodeOpts}} ->
            RunOpts = maps:merge(maps:merge(Opts, riarc_cli_limits:opts(O)), NodeOpts),
            Ran = riarc_dashboard_cli:run({M, F, A}, Spec, RunOpts#{timeout => maps:get(timeout, O), log => false}, O),
            riarc_view_cli:chart(O, Ran, report(Ran, #{spec => Spec, strict => maps:get(strict, O),
                                                       format => maps:get(format, O)}));
        {{error, Reason}, _} -> riarc_cli_report:bad_input(Cmd, O, riarc:format_error(Reason));
        {_, {error, Msg}} -> riarc_cli_report:fail(O, Msg, 2)
    end.

%% `--follow' and `--monitored-elsewhere': riarc's options of the same names; with any
%% node named, this VM becomes a distributed node first (riarc_attach_cli's way).
node_opts(O) ->
    Opts = maps:with([follow, monitored_elsewhere], O),
    case lists:append(maps:values(Opts)) of
        [] -> {ok, Opts};
        Nodes ->
            case riarc_attach_cli:distributed(Nodes, maps:get(cookie, O, undefined)) of
                ok -> {ok, Opts};
                {error, _} = E -> E
            end
    end.

report({ok, R}, ReportOpts) ->
    riarc_cli_report:result(R, ReportOpts);
report({error, Reason}, ReportOpts) ->
    riarc_cli_report:fail(ReportOpts, riarc:format_error(Reason), 2).

fail(Msg) ->
    io:format(standard_error, "riarc: ~ts~n", [Msg]),
    2.

%%% demo

demo_command() ->
    #{name => "demo",
      summary => "the bundled buggy ticket service, monitored",
      description => "The bundled buggy ticket service (a gen_server with a lost-update race, 8 "
                     "clients),\nmonitored three ways: Erlang monitors online, a property file "
                     "online, and offline\nover a recording; then the race hunted with record & "
                     "replay and replayed three times;\nthen what monitoring costs, measured "
                     "on a small scale (a few minutes). It ends with\na summary of what was "
                     "caught and what it cost. Run it from the project's top directory.",
      flags => [#{name => "--quick", key => quick, type => boolean, default => false,
                  help => "skip the cost measurement"}]}.

%% @doc `make demo': the ticket service with eight clients, monitored three ways: by
%% Erlang monitors online, by a property file online, and offline over a recording; then
%% (step 4) the race hunted by recording replayable runs until one hands out a duplicate
%% ticket, and that recording replayed three times (riarc_replay_cli:demo_step/1).
%% Each step says how long it took.
-spec demo([string()]) -> 0 | 1 | 2.
demo(Args) ->
    riarc_cli_args:run(demo_command(), Args, fun(#{quick := Quick}) -> demo_steps(Quick) end).

demo_steps(Quick) ->
    MFA = {riarc_demo, main, [8, 25]},
    io:format("riarc demo: a supervised ticket dispenser (gen_server) with a lost-update race,~n"
              "8 concurrent clients x 25 tickets, every process monitored from outside.~n"
              "Property: the dispenser never hands out a ticket twice; every client gets~n"
              "distinct tickets and exits normally.~n"),
    Steps = [{"1. online, properties as Erlang monitors (riarc_demo_monitors)",
              fun() -> riarc:run(MFA, riarc_demo_monitors, #{timeout => 30000, log => false}) end},
             {"2. online, the same property in riarc's property language (examples/props/demo.prop)",
              fun() -> with_props("examples/props/demo.prop", fun(Spec, Opts) ->
                           riarc:run(MFA, Spec, Opts#{timeout => 30000, log => false}) end) end},
             {"3. offline: the run recorded to a trace file, then checked",
              fun() -> record_and_check(MFA) end}],
    Results = [timed_step(Title, fun() -> demo_step(Title, Fun) end) || {Title, Fun} <- Steps],
    Statuses = [S || {S, _} <- Results],
    Title4 = "4. record & replay: hunt the race, then replay the recording three times",
    Replay = timed_step(Title4, fun() -> replay_step(Title4) end),
    Rejects = [R || {_, R} <- Results, is_integer(R)],
    Caught = #{runs => length(Rejects), caught => length([R || R <- Rejects, R > 0]),
               rejects => lists:sum(Rejects)},
    Cost = case Quick of
               true ->
                   io:format("~n~s~n", riarc_demo_summary:lines(Caught, [], undefined)),
                   0;
               false -> cost_step(Caught)
           end,
    lists:max([Replay, Cost | Statuses]).

%% Step 5 measures what monitoring costs and ends the demo with its summary
%% (riarc_demo_summary): at most five lines, below everything else.
cost_step(Caught) ->
    Title = "5. what monitoring costs: the load driver's system unmonitored and monitored "
            "three ways,\n   3 runs each, each in a fresh VM (a few minutes; progress below)",
    io:format("~n~s~n", [Title]),
    T0 = erlang:monotonic_time(millisecond),
    case riarc_demo_summary:measure(#{}) of
        {ok, #{rows := Rows, html := Html}} ->
            io:format("  (step 5 took ~.1f s)~n~n", [(erlang:monotonic_time(millisecond) - T0) / 1000]),
            io:put_chars([[L, $\n] || L <- riarc_demo_summary:lines(Caught, Rows, Html)]),
            0;
        %% A measurement that failed is a failed run (1), as `experiment' says it.
        {error, Reason} ->
            io:format(standard_error, "riarc demo: ~ts~n", [riarc:format_error(Reason)]),
            1
    end.

timed_step(Title, Fun) ->
    T0 = erlang:monotonic_time(millisecond),
    Status = Fun(),
    io:format("  (step ~s took ~.1f s)~n",
              [hd(string:split(Title, ".")), (erlang:monotonic_time(millisecond) - T0) / 1000]),
    Status.

%% Step 4 runs no monitor: a replayed run is judged by its root's result (the tickets).
replay_step(Title) ->
    io:format("~n~s~n", [Title]),
    File = filename:join(os:getenv("TMPDIR", "/tmp"), "riarc-demo-" ++ os:getpid() ++ ".rr"),
    try maps:get(status, riarc_replay_cli:demo_step(File))
    after _ = file:delete(File)
    end.

demo_step(Title, Fun) ->
    io:format("~n~s~n", [Title]),
    case Fun() of
        {ok, R = #{verdicts := Vs, tracers := #{spawned := Sp, peak := Pk}}} ->
            _ = riarc_cli_report:result(R, #{indent => "  "}),
            io:format("  tracers: ~b spawned, ~b at peak, all collected; ~b events traced, "
                      "~b analysed, ~b routed between tracers; ~b invariant violations; ~.1f ms~n",
                      [Sp, Pk, maps:get(events, R), maps:get(analysed, R), maps:get(routed, R),
                       length(maps:get(violations, R)), maps:get(duration_us, R) / 1000]),
            Rejects = length([V || V = #{verdict := reject} <- Vs]),
            io:format("  ~s~n", [case Rejects of
                                     0 -> "this run happened not to hit the race; run it again";
                                     _ -> "caught: the dispenser handed out a duplicate ticket"
                                 end]),
            {0, Rejects};
        {error, Reason} -> {fail(riarc:format_error(Reason)), none}
    end.

with_props(File, Fun) ->
    case riarc_cli_monitors:spec_of(#{props => File}) of
        {ok, Spec, Opts} -> Fun(Spec, Opts);
        {error, _} = Error -> Error
    end.

record_and_check(MFA) ->
    File = filename:join(os:getenv("TMPDIR", "/tmp"),
                         "riarc-demo-" ++ os:getpid() ++ ".rtf"),
    try riarc_offline:record(MFA, File, #{}) of
        {ok, #{events := N}} ->
            io:format("  recorded ~b events to ~s~n", [N, File]),
            riarc_offline:check(File, riarc_demo_monitors, #{});
        {error, _} = Error -> Error
    after
        _ = file:delete(File)
    end.
