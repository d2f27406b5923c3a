%% @doc The `attach' command: monitor a system where it runs, on another Erlang node,
%% from the command line. It makes this VM a distributed node (a generated name; long
%% names when the target's host has a dot), attaches there ({@link riarc_remote}), prints
%% one verdict line as each verdict is reached (the format of `run'), and detaches at
%% `--for' TIME, on SIGTERM or SIGHUP, or when the node goes; then the summary on
%% standard error. `--follow NODE' follows the system onto NODE as `run --follow' does
%% (riarc's option follow with node: the followers are started from this VM).
%% ```
%% $ bin/riarc attach --node app@myhost --name my_server --monitors my_spec --for 60
%% riarc attach: attached to app@myhost
%% <12345.130.0> my_server:init/1 accept
%% riarc attach: 1 verdict (1 accept); detached from app@myhost
%% '''
%% Ctrl-C (SIGINT) cannot be caught by an Erlang VM started with `-noshell' (its break
%% handler ends the VM): the remote session then sees this node go, stops tracing and
%% leaves the node untraced, and riarc's janitor there unloads its modules; only the
%% summary is lost. SIGTERM and SIGHUP detach cleanly.
%% ```
%% 1> riarc_cli:run(["attach", "--name", "x", "--monitors", "riarc_demo_monitors"]).
%% 2
%% '''
-module(riarc_attach_cli).

%% How long the end of a watch waits for takeovers under way (riarc:settle/2).
-define(SETTLE_MS, 2000).
-behaviour(gen_event).

-export([commands/0, run/1, distributed/2, follow_flag/0]).
%% A handler of the VM's signal events (erl_signal_server): the signals riarc detaches on.
-export([init/1, handle_event/2, handle_call/2, handle_info/2, terminate/2]).

%% @doc The command's declaration (riarc_cli_args).
-spec commands() -> [riarc_cli_args:command()].
commands() ->
    [#{name => "attach",
       summary => "monitor a running system on another node",
       description => "Attaches to processes of a running Erlang node (connecting as a node of "
                      "its own,\nwith the cookie given or ~/.erlang.cookie), prints one verdict "
                      "line as each verdict\nis reached, and detaches at --for, on SIGTERM or "
                      "SIGHUP, or when the node goes,\nleaving nothing traced nor loaded there. "
                      "A summary goes to standard error.",
       flags => [#{name => "--node", key => node, type => atom, metavar => "NAME",
                   required => true, help => "the node to attach to, name@host"},
                 #{name => "--cookie", key => cookie, type => atom, metavar => "C",
                   help => "its cookie (default: ~/.erlang.cookie)"},
                 #{name => "--pid", key => pid, type => string, metavar => "P",
                   help => "a process, as the node shows it: <0.123.0>"},
                 #{name => "--name", key => name, type => atom, metavar => "REG",
                   help => "a registered process"},
                 #{name => "--app", key => app, type => atom, metavar => "APP",
                   help => "every process of a running application"},
                 #{name => "--sup", key => sup, type => string, metavar => "REF",
                   help => "a supervision tree: a registered name or <0.123.0>"},
                 #{name => "--new", key => new, type => boolean,
                   help => "every process spawned from now on"},
                 #{name => "--for", key => for, type => {duration, millisecond}, metavar => "TIME",
                   help => "detach after TIME (seconds, or 500ms, 2m; default: at a signal, or when the node goes)"},
                 follow_flag()]
           ++ riarc_cli_args:code_flags() ++ riarc_cli_monitors:flags() ++ riarc_cli_limits:flags()
           ++ [riarc_view_cli:chart_flag()] ++ riarc_dashboard_cli:flags() ++ [riarc_cli_report:format_flag()],
       one_of => [[pid, name, app, sup, new], [monitors, props]]}].

%% @doc Runs `attach ARGS...'; returns the exit status.
-spec run([string()]) -> non_neg_integer().
run(["attach" | Args]) ->
    [Cmd] = commands(),
    riarc_cli_args:run(Cmd, riarc_dashboard_cli:args(Args), fun(Opts) ->
                                      riarc_cli_syslog:with(Opts, fun() -> attach(Cmd, Opts) end)
                                  end).

attach(Cmd, Opts = #{node := Node}) ->
    Follow = maps:get(follow, Opts, []),
    case distributed([Node | Follow], maps:get(cookie, Opts, undefined)) of
        ok ->
            case {target(Node, Opts), spec(Opts)} of
                {{error, Msg}, _} -> riarc_cli_report:bad_input(Cmd, Opts, Msg);
                {_, {error, Reason}} -> riarc_cli_report:bad_input(Cmd, Opts, riarc:format_error(Reason));
                {{ok, Target}, {ok, Spec, RunOpts}} ->
                    Limits = riarc_cli_limits:opts(Opts),
                    AOpts = maps:merge(RunOpts, Limits#{node => Node, log => false}),
                    watch(Node, riarc_dashboard_cli:attach(riarc:attach(Target, Spec, follow(Follow, AOpts)), Opts),
                          maps:get(for, Opts, infinity), Opts)
            end;
        {error, Msg} -> fail(Msg, riarc_cli_report:format(Opts))
    end.

follow([], Opts) -> Opts;
follow(Nodes, Opts) -> Opts#{follow => Nodes}.

%% @doc The flag `--follow NODE' (repeatable) of `attach' and `run': riarc's option
%% follow, the system followed onto NODE.
-spec follow_flag() -> riarc_cli_args:flag().
follow_flag() ->
    #{name => "--follow", key => follow, type => atom, metavar => "NODE", repeat => true,
      help => "follow the system onto NODE (name@host): what it starts there is monitored "
              "there and listed here"}.

%% @doc This VM as a distributed node, to reach Nodes: a name of its own (riarc_attach_
%% and its OS pid), long or short as the first node's, with Cookie for each when given;
%% `ok' when it is one already.
-spec distributed([node(), ...], atom() | undefined) -> ok | {error, string()}.
distributed(Nodes = [Node | _], Cookie) ->
    Long = case string:split(atom_to_list(Node), "@") of
               [_, Host] -> lists:member($., Host);
               _ -> false
           end,
    Started = case node() of
                  nonode@nohost ->
                      _ = os:cmd("epmd -daemon"),
                      Name = list_to_atom("riarc_attach_" ++ os:getpid()),
                      net_kernel:start([Name, case Long of true -> longnames; false -> shortnames end]);
                  _ -> {ok, already}
              end,
    case Started of
        {ok, _} ->
            _ = [erlang:set_cookie(N, Cookie) || Cookie =/= undefined, N <- Nodes],
            ok;
        {error, Why} -> {error, flat("could not start this VM as a node: ~0tp", [Why])}
    end.

target(_Node, #{new := true}) -> {ok, new_processes};
target(_Node, #{name := Name}) -> {ok, Name};
target(_Node, #{app := App}) -> {ok, {application, App}};
target(Node, #{pid := P}) -> remote_pid(Node, P);
target(Node, #{sup := Ref}) ->
    case remote_pid(Node, Ref) of
        {ok, Pid} -> {ok, {supervisor, Pid}};
        {error, _} -> {ok, {supervisor, list_to_atom(Ref)}}
    end;
target(_Node, _) -> {error, "give what to attach to: --pid, --name, --app, --sup or --new"}.

%% A pid as the remote node prints it, `<0.123.0>', is that node's own process.
remote_pid(Node, Text) ->
    try erpc:call(Node, erlang, list_to_pid, [Text], 10000) of
        Pid -> {ok, Pid}
    catch
        error:{exception, badarg, _} -> {error, flat("~ts is not a pid such as <0.123.0>", [Text])};
        _:_ -> {error, flat("cannot reach node ~s", [Node])}
    end.

%% The Spec module; a property file's is compiled to a .beam file in a directory on the
%% code path, so that its object code (code:get_object_code/1) can be loaded onto the node.
spec(Opts = #{props := File}) ->
    case riarc_cli_monitors:spec_of(Opts) of
        {ok, Mod, RunOpts} ->
            Dir = filename:join(os:getenv("TMPDIR", "/tmp"), "riarc-attach-" ++ os:getpid()),
            ok = filelib:ensure_dir(filename:join(Dir, "x")),
            {ok, Beam} = riarc_shml:compile_file(File, Dir),
            true = code:add_patha(Dir),
            _ = code:purge(Mod),
            {module, Mod} = code:load_abs(filename:rootname(Beam)),
            {ok, Mod, RunOpts};
        Error -> Error
    end;
spec(Opts) ->
    riarc_cli_monitors:spec_of(Opts).

watch(_Node, {error, Reason}, _For, Opts) ->
    fail(riarc:format_error(Reason), riarc_cli_report:format(Opts));
watch(Node, {ok, S}, For, Opts) ->
    Format = riarc_cli_report:format(Opts),
    catch_signals(),
    io:format(standard_error, "riarc attach: attached to ~s~n", [Node]),
    Print = fun(E, Printed) -> print(E, Printed, Format) end,
    Printed = lists:foldl(Print, #{}, riarc_remote:subscribe(S)),
    Deadline = For,  % milliseconds, or infinity
    Timer = case Deadline of infinity -> undefined; _ -> erlang:send_after(Deadline, self(), riarc_attach_for) end,
    {Why, Printed1} = loop(S, Printed, Print),
    _ = Timer =/= undefined andalso erlang:cancel_timer(Timer),
    %% Takeovers under way end before the stop, so that it cuts no new process's
    %% partition short of what it did before (that partition would be inconclusive); a
    %% system that keeps starting processes gets SETTLE_MS.
    _ = riarc:settle(S, ?SETTLE_MS),
    {ok, Result = #{verdicts := Vs}} = riarc:stop(S),
    _ = lists:foldl(Print, Printed1, Vs),
    Status = riarc_result:status(Result),
    _ = case Format of
            text -> summary(Node, Why, Vs);
            json ->
                %% The summary says what went wrong (an error, an overload), as run's does.
                Fields = (riarc_cli_report:notes(Result, #{}))#{verdicts => riarc_result_json:counts(Vs),
                                                                node => Node,
                                                                ended => riarc_result_json:text(how(Why))},
                riarc_cli_report:summary(#{format => json}, Fields, Status)
        end,
    _ = riarc_dashboard_cli:wait(),
    riarc_view_cli:chart(Opts, {ok, Result}, Status).

loop(S, Printed, Print) ->
    receive
        {riarc_verdict, S, E} -> loop(S, Print(E, Printed), Print);
        {riarc_remote_down, S, Why} -> {{down, Why}, Printed};
        riarc_attach_for -> {for, Printed};
        {riarc_signal, Sig} -> {{signal, Sig}, Printed}
    end.

%% One line per verdict (and its explanation under a reject or an error), each once.
print(E = #{pid := P, verdict := V}, Printed, Format) ->
    case maps:get(P, Printed, undefined) of
        V -> Printed;
        _ ->
            ok = riarc_cli_report:verdict(E, Format),
            Printed#{P => V}
    end.

summary(Node, Why, Vs) ->
    Counts = lists:foldl(fun(#{verdict := V}, M) -> maps:update_with(V, fun(N) -> N + 1 end, 1, M) end,
                         #{}, Vs),
    Parts = [io_lib:format("~b ~s", [N, V]) || {V, N} <- lists:sort(maps:to_list(Counts))],
    io:format(standard_error, "riarc attach: ~b verdict~s (~ts); ~ts from ~s~n",
              [length(Vs), case length(Vs) of 1 -> ""; _ -> "s" end,
               lists:join(", ", Parts), how(Why), Node]).

%% How the attachment ended, for the summary.
how(for) -> "detached";
how({signal, Sig}) -> io_lib:format("detached on ~s", [Sig]);
how({down, nodedown}) -> "the node went down or the link was cut";
how({down, Other}) -> io_lib:format("the session ended (~ts)", [riarc_term_show:show(Other)]).

fail(Msg, text) ->
    io:format(standard_error, "riarc attach: ~ts~n", [Msg]),
    1;
fail(Msg, json) ->
    riarc_cli_report:fail(#{format => json}, Msg, 1).

flat(F, A) -> lists:flatten(io_lib:format(F, A)).

%%% Signals: SIGTERM and SIGHUP detach (erl_signal_server's events, forwarded here)

catch_signals() ->
    %% The VM's own handler would stop the VM on SIGTERM (init:stop/0), racing the detach.
    _ = gen_event:delete_handler(erl_signal_server, erl_signal_handler, []),
    ok = gen_event:add_handler(erl_signal_server, ?MODULE, self()),
    ok = os:set_signal(sigterm, handle),
    ok = os:set_signal(sighup, handle).

%% @private
-spec init(pid()) -> {ok, pid()}.
init(Pid) -> {ok, Pid}.

%% @private
-spec handle_event(term(), pid()) -> {ok, pid()}.
handle_event(Sig, Pid) when Sig =:= sigterm; Sig =:= sighup ->
    Pid ! {riarc_signal, Sig},
    {ok, Pid};
handle_event(_Other, Pid) ->
    {ok, Pid}.

%% @private
-spec handle_call(term(), pid()) -> {ok, ok, pid()}.
handle_call(_Req, Pid) -> {ok, ok, Pid}.

%% @private
-spec handle_info(term(), pid()) -> {ok, pid()}.
handle_info(_Info, Pid) -> {ok, Pid}.

%% @private
-spec terminate(term(), pid()) -> ok.
terminate(_Reason, _Pid) -> ok.
