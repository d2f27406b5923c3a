%% @doc The flags `--dashboard [PORT]' and `--dashboard-bind ADDR' of `run' and `attach':
%% a live view of the run in a browser ({@link riarc_dashboard}), its address on standard
%% error. It listens on 127.0.0.1 only unless `--dashboard-bind' names another address.
%% PORT may be left out (8787); 0 takes any free port. The command's summary and exit
%% status are the same with or without it; the command ends once the browsers have the
%% summary (at most a few seconds after the run).
%% ```
%% 1> riarc_dashboard_cli:args(["--dashboard", "-m", "m"]).
%% ["--dashboard=8787","-m","m"]
%% 2> riarc_dashboard_cli:args(["--dashboard", "0"]).
%% ["--dashboard=0"]
%% 3> riarc_dashboard_cli:opts(#{dashboard => 0, dashboard_bind => {0, 0, 0, 0}}).
%% {ok,#{bind => {0,0,0,0},port => 0}}
%% 4> riarc_dashboard_cli:opts(#{}).
%% none
%% '''
-module(riarc_dashboard_cli).

-export([flags/0, args/1, opts/1, run/4, attach/2, wait/0]).

-define(DEFAULT_PORT, 8787).
%% How long the command waits, after the run, for its dashboard to send the summary.
-define(WAIT_MS, 5000).

%% @doc The two flags, for a command's declaration.
-spec flags() -> [riarc_cli_args:flag()].
flags() ->
    [#{name => "--dashboard", key => dashboard, type => {int, 0, 65535}, metavar => "PORT",
       help => "a live dashboard of the run at http://127.0.0.1:PORT/ (PORT may be left out: "
               "8787; 0: any free port), its address on standard error"},
     #{name => "--dashboard-bind", key => dashboard_bind, type => {check, fun address/1},
       metavar => "ADDR",
       help => "the address the dashboard listens on (default 127.0.0.1, this machine "
               "only; 0.0.0.0 opens it to the network)"}].

address(Text) ->
    case inet:parse_address(Text) of
        {ok, IP} -> {ok, IP};
        {error, _} -> {error, "an IP address such as 127.0.0.1 or 0.0.0.0"}
    end.

%% @doc The arguments with a bare `--dashboard' given its port: the argument parser
%% wants a value for every flag that takes one, and `--dashboard' may go without.
-spec args([string()]) -> [string()].
args(["--dashboard", Next | Rest]) ->
    case string:to_integer(Next) of
        {_, ""} -> ["--dashboard=" ++ Next | args(Rest)];
        _ -> ["--dashboard=" ++ integer_to_list(?DEFAULT_PORT) | args([Next | Rest])]
    end;
args(["--dashboard"]) ->
    ["--dashboard=" ++ integer_to_list(?DEFAULT_PORT)];
args(["--" | _] = Rest) ->
    Rest;
args([A | Rest]) ->
    [A | args(Rest)];
args([]) ->
    [].

%% @doc The dashboard's options of the flags given, or `none' when `--dashboard' is not.
-spec opts(riarc_cli_args:opts()) -> {ok, riarc_dashboard:opts()} | none.
opts(#{dashboard := Port} = Flags) ->
    {ok, maps:merge(#{port => Port}, case Flags of
                                         #{dashboard_bind := IP} -> #{bind => IP};
                                         #{} -> #{}
                                     end)};
opts(_) ->
    none.

%% @doc `run': riarc:run/3, with a dashboard when the flags ask for one.
-spec run({module(), atom(), list()}, riarc_lambda:spec(), riarc:opts(), riarc_cli_args:opts()) ->
    {ok, riarc:result()} | {error, term()}.
run(MFA, Spec, Opts, Flags) ->
    case opts(Flags) of
        none -> riarc:run(MFA, Spec, Opts);
        {ok, _} ->
            case attach(riarc:start(MFA, Spec, Opts), Flags) of
                {ok, S} ->
                    Timeout = maps:get(timeout, Opts, maps:get(timeout, riarc_opts:defaults())),
                    Result = riarc_session:finish(S, Timeout),
                    wait(),
                    Result;
                Error -> Error
            end
    end.

%% @doc A session just started (riarc:start/3, riarc:attach/3), with a dashboard when the
%% flags ask for one: the session, or (the dashboard cannot listen, say) an error, the
%% session stopped.
-spec attach({ok, pid()} | {error, term()}, riarc_cli_args:opts()) -> {ok, pid()} | {error, term()}.
attach({ok, S}, Flags) ->
    case opts(Flags) of
        none -> {ok, S};
        {ok, DOpts} ->
            case riarc_dashboard:start(S, DOpts) of
                {ok, D} ->
                    io:format(standard_error, "riarc: dashboard at ~s~ts~n",
                              [riarc_dashboard:url(D), loopback_note(DOpts)]),
                    {ok, S};
                {error, _} = Error ->
                    _ = riarc:stop(S),
                    Error
            end
    end;
attach(Error, _Flags) ->
    Error.

loopback_note(#{bind := _}) -> "";
loopback_note(_) -> " (this machine only; --dashboard-bind ADDR to open it)".

%% @doc After the run: waits (a few seconds at most) for this VM's dashboards to have
%% sent their summary and ended; at once when there are none.
-spec wait() -> ok.
wait() ->
    Ds = case whereis(riarc_dashboard_sup) of
             undefined -> [];
             _ -> [P || {_, P, _, _} <- supervisor:which_children(riarc_dashboard_sup), is_pid(P)]
         end,
    Deadline = erlang:monotonic_time(millisecond) + ?WAIT_MS,
    lists:foreach(fun(D) ->
                          _ = riarc_dashboard:wait(D, max(0, Deadline - erlang:monotonic_time(millisecond)))
                  end, Ds).
