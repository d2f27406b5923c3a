%% `--dashboard [PORT]' and `--dashboard-bind ADDR' on the command line: a run with a
%% dashboard ends with the same status as one without, its dashboard gone with it; a bad
%% address or a port in use is status 2; `attach' takes the flags too.
-module(riarc_dashboard_cli_tests).

-import(riarc_test_cli, [root/0]).

-include_lib("eunit/include/eunit.hrl").

run_test_() ->
    {timeout, 120, fun run/0}.

run() ->
    Args = ["run", "-m", "riarc_demo_pqr", "-f", "p",
            "--props", filename:join(root(), "examples/props/pqr.prop")],
    Plain = riarc_cli:run(Args),
    ?assertNotEqual(2, Plain),
    ?assertEqual(Plain, riarc_cli:run(Args ++ ["--dashboard", "0"])),
    %% The command waited for its dashboard to end.
    ?assertEqual([], supervisor:which_children(riarc_dashboard_sup)),
    ?assertEqual(2, riarc_cli:run(Args ++ ["--dashboard", "0", "--dashboard-bind", "nowhere"])),
    {ok, L} = gen_tcp:listen(0, [{ip, {127, 0, 0, 1}}]),
    {ok, Port} = inet:port(L),
    try
        ?assertEqual(2, riarc_cli:run(Args ++ ["--dashboard", integer_to_list(Port)]))
    after
        gen_tcp:close(L)
    end,
    ?assertEqual([], supervisor:which_children(riarc_dashboard_sup)).

%% A bare --dashboard takes the default port, before another flag or at the end.
attach_flags_test() ->
    [Cmd] = riarc_attach_cli:commands(),
    Base = ["--node", "a@b", "--new", "--monitors", "m"],
    {ok, O1} = riarc_cli_args:parse(Cmd, riarc_dashboard_cli:args(["--dashboard" | Base])),
    ?assertEqual(8787, maps:get(dashboard, O1)),
    {ok, O2} = riarc_cli_args:parse(Cmd, riarc_dashboard_cli:args(Base ++ ["--dashboard", "0",
                                                                          "--dashboard-bind", "0.0.0.0"])),
    ?assertEqual({ok, #{port => 0, bind => {0, 0, 0, 0}}}, riarc_dashboard_cli:opts(O2)),
    ?assertMatch({error, {bad_value, "--dashboard", "70000", _}},
                 riarc_cli_args:parse(Cmd, riarc_dashboard_cli:args(Base ++ ["--dashboard", "70000"]))).
