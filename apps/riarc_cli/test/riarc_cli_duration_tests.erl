%% Durations on the command line (riarc_cli_args:duration/2): one syntax for every
%% `--timeout' and every other time a command takes, and the commands that use it.
-module(riarc_cli_duration_tests).

-include_lib("eunit/include/eunit.hrl").

ms(Text) -> riarc_cli_args:duration(Text, millisecond).
s(Text) -> riarc_cli_args:duration(Text, second).

%% A bare number is seconds, decimals allowed; ms, s and m are units. The arithmetic is
%% exact: 0.1 s is 100 ms, not 101 after a float's rounding.
good_test() ->
    ?assertEqual({ok, 30000}, ms("30")),
    ?assertEqual({ok, 1500}, ms("1.5")),
    ?assertEqual({ok, 100}, ms("0.1")),
    ?assertEqual({ok, 500}, ms("500ms")),
    ?assertEqual({ok, 2000}, ms("2s")),
    ?assertEqual({ok, 120000}, ms("2m")),
    ?assertEqual({ok, 90000}, ms("1.5m")),
    ?assertEqual({ok, 1}, ms("0.0001")),           % below a millisecond: rounded up
    ?assertEqual({ok, 16#ffffffff}, ms("4294967.295")),
    ?assertEqual({ok, 300}, s("300")),
    ?assertEqual({ok, 90}, s("1.5m")),
    ?assertEqual({ok, 2}, s("2000ms")).

bad_test_() ->
    [{T, ?_assertMatch({error, [_ | _]}, riarc_cli_args:duration(T, U))}
     || {T, U} <- [{"", millisecond}, {"abc", millisecond}, {"-3", millisecond},
                   {"0", millisecond}, {"0ms", millisecond}, {"10h", millisecond},
                   {"1.", millisecond}, {".5", millisecond}, {"5 s", millisecond},
                   {"1e3", millisecond}, {"4294967.296", millisecond},
                   {lists:duplicate(60, $9), millisecond},
                   {"2.5", second}, {"1500ms", second}]].

%% What a user reads: the flag, what it takes, and what was given.
sentence_test() ->
    {error, R} = riarc_cli_args:parse(#{name => "x", summary => "",
                                        flags => [riarc_cli_args:timeout_flag("x")]},
                                      ["--timeout", "soon"]),
    ?assertEqual("--timeout takes a duration: seconds (such as 30 or 1.5), or a number with "
                 "a unit ms, s or m (such as 500ms or 2m), not soon",
                 riarc_cli_args:format_error(R)).

%% Every --timeout of bin/riarc is a duration, and so is every other flag whose value
%% names a time: no command is left taking milliseconds in one place and seconds in another.
every_timeout_is_a_duration_test() ->
    Flags = [{N, F} || #{name := N, flags := Fs} <- riarc_cli:commands(), F <- Fs],
    Timeouts = [{N, T} || {N, #{name := "--timeout", type := T}} <- Flags],
    ?assert(length(Timeouts) >= 4),
    ?assertEqual([], [X || X = {_, T} <- Timeouts, not is_tuple(T) orelse element(1, T) =/= duration]),
    ?assertEqual([], [{N, Name} || {N, #{name := Name, metavar := M}} <- Flags,
                                   lists:member(M, ["MS", "SECONDS"])]).

%% `bench -m' (a declaration of its own): its --timeout is a duration held in seconds.
bench_user_timeout_test() ->
    Args = ["bench", "-m", "riarc_demo", "-f", "main", "--monitors", "riarc_demo_monitors",
            "--out", "d", "--timeout"],
    ?assertMatch({ok, {bench_user, #{timeout := 120}, "d", _}}, riarc_bench_cli:parse(Args ++ ["2m"])),
    ?assertMatch({ok, {bench_user, #{timeout := 300}, "d", _}}, riarc_bench_cli:parse(Args ++ ["300"])),
    ?assertMatch({error, _}, riarc_bench_cli:parse(Args ++ ["2.5"])).

%% The durations reach the commands: `run --timeout 0.5' gives up after 500 ms, as its
%% warning says.
run_timeout_test_() ->
    {timeout, 60, fun() ->
        {_Out, Err, Status} = riarc_capture:capture_all(fun() ->
            riarc_cli:status(["run", "-m", "timer", "-f", "sleep", "-a", "[5000]",
                              "--props", filename:join(riarc_test_cli:root(), "examples/props/demo.prop"),
                              "--timeout", "0.5"]) end),
        ?assertEqual(1, Status),
        ?assertNotEqual(nomatch, string:find(Err, "did not end within 500 ms"))
    end}.

%% A bad duration is bad input: status 2, nothing run.
bad_input_status_test_() ->
    [{lists:flatten(lists:join(" ", A)), ?_assertMatch({"", 2}, riarc_capture:capture(fun() -> riarc_cli:status(A) end))}
     || A <- [["run", "-m", "riarc_demo", "-f", "main", "--monitors", "riarc_demo_monitors",
               "--timeout", "fast"],
              ["run", "-m", "riarc_demo", "-f", "main", "--monitors", "riarc_demo_monitors",
               "--monitor-budget", "0"],
              ["bench", "-m", "riarc_demo", "-f", "main", "--monitors", "riarc_demo_monitors",
               "--timeout", "2.5", "--out", "/tmp/riarc-never"]]].
