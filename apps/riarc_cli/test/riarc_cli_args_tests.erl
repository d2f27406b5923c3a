%% The one argument parser (riarc_cli_args) and the command line built on it, in this
%% VM: riarc_cli:status/1 returns what bin/riarc would exit with.
-module(riarc_cli_args_tests).

-include_lib("eunit/include/eunit.hrl").

-define(CMD, #{name => "greet", summary => "says hello",
               flags => [#{name => "--times", short => "-n", key => times, type => {int, 1},
                           default => 1, help => "how often"},
                         #{name => "--loud", key => loud, type => boolean, help => "shout"},
                         #{name => "--tag", key => tag, type => atom, repeat => true, help => "t"},
                         #{name => "--mood", key => mood, type => {enum, [glad, sad]}, help => "m"},
                         #{name => "--rate", key => rate, type => number, help => "r"},
                         #{name => "--args", short => "-a", key => args, type => term_list, help => "a"},
                         #{name => "--to", key => to, type => string, required => true, help => "w"},
                         #{name => "--cat", key => cat, type => string, conflicts => [dog], help => "c"},
                         #{name => "--dog", key => dog, type => string, help => "d"},
                         #{name => "--odd", key => odd, help => "o",
                           type => {check, fun(V) -> case list_to_integer(V) rem 2 of
                                                         1 -> {ok, odd};
                                                         0 -> {error, "an odd number"}
                                                     end end}}],
               positionals => [#{key => words, metavar => "WORD", repeat => true}]}).

parse(Args) -> riarc_cli_args:parse(?CMD, Args).

parse_test() ->
    ?assertEqual({ok, #{times => 1, to => "x"}}, parse(["--to", "x"])),
    ?assertEqual({ok, #{times => 3, to => "x", loud => true, tag => [a, b], mood => sad,
                        rate => 2.5, args => [1, foo], words => ["hi", "there"]}},
                 parse(["hi", "-n", "3", "--to=x", "--loud", "--tag", "a", "--tag", "b",
                        "--mood", "sad", "--rate", "2.5", "-a", "[1, foo]", "there"])),
    %% A value is the next argument even when it starts with a dash; after `--' all is
    %% positional.
    ?assertEqual({ok, #{times => 1, to => "-x", words => ["--loud"]}}, parse(["--to", "-x", "--", "--loud"])),
    ?assertEqual({ok, #{times => 1, to => "x", odd => odd}}, parse(["--to", "x", "--odd", "7"])).

errors_test() ->
    ?assertEqual({error, {unknown_flag, "--bogus"}}, parse(["--to", "x", "--bogus", "1"])),
    ?assertEqual({error, {missing_value, "--to"}}, parse(["--to"])),
    ?assertEqual({error, {missing_flag, "--to"}}, parse([])),
    ?assertEqual({error, {conflict, "--cat", "--dog"}}, parse(["--to", "x", "--cat", "a", "--dog", "b"])),
    ?assertEqual({error, {twice, "--to"}}, parse(["--to", "x", "--to", "y"])),
    ?assertEqual({error, {no_value, "--loud"}}, parse(["--to", "x", "--loud=yes"])),
    ?assertMatch({error, {bad_value, "-n", "0", {int, 1}}}, parse(["--to", "x", "-n", "0"])),
    ?assertMatch({error, {bad_value, "--mood", "meh", _}}, parse(["--to", "x", "--mood", "meh"])),
    ?assertMatch({error, {bad_value, "--rate", "fast", number}}, parse(["--to", "x", "--rate", "fast"])),
    ?assertMatch({error, {bad_value, "-a", "notalist", term_list}}, parse(["--to", "x", "-a", "notalist"])),
    ?assertEqual({error, {bad_value, "--odd", "2", "an odd number"}}, parse(["--to", "x", "--odd", "2"])),
    ?assertEqual("--odd takes an odd number, not 2",
                 riarc_cli_args:format_error({bad_value, "--odd", "2", "an odd number"})),
    ?assertEqual("--cat and --dog cannot be given together",
                 riarc_cli_args:format_error({conflict, "--cat", "--dog"})),
    One = #{name => "x", summary => "", flags => riarc_cli_monitors:flags(), one_of => [[monitors, props]]},
    ?assertEqual({error, {one_of, ["--monitors", "--props"]}}, riarc_cli_args:parse(One, [])),
    ?assertEqual({error, {unexpected, "y"}}, riarc_cli_args:parse(One, ["--props", "f", "y"])),
    ?assertEqual({error, {conflict, "--monitors", "--props"}},
                 riarc_cli_args:parse(One, ["--monitors", "m", "--props", "f"])).

%% `--help' or `-h' anywhere is help, even after an error.
help_test() ->
    ?assertEqual(help, parse(["--help"])),
    ?assertEqual(help, parse(["--to", "x", "-h"])),
    ?assertEqual(help, parse(["--bogus", "--help"])).

usage_test() ->
    ?assertEqual("usage: riarc greet [-n TIMES] [--loud] [--tag TAG]... [--mood glad|sad] [--rate RATE]\n"
                 "                   [-a ARGS] --to TO [--cat CAT] [--dog DOG] [--odd ODD] [WORD...]",
                 riarc_cli_args:usage_line(?CMD)),
    Help = riarc_cli_args:usage(?CMD),
    ?assertMatch("usage: riarc greet " ++ _, Help),
    [?assertNotEqual(nomatch, string:find(Help, S))
     || S <- ["-n, --times TIMES", "how often (default 1)", "(repeatable)", "(required)", "-h, --help"]].

%%% The command line --------------------------------------------------------------------

names() -> [N || #{name := N} <- riarc_cli:commands()].

every_command_test() ->
    ?assertEqual(["run", "demo", "check", "record", "verify", "attach", "replay", "compile", "bench",
                  "experiment", "study", "export"], names()).

%% Every command prints its usage for --help and -h, with status 0, and does nothing else
%% (`demo --help' does not run the demo).
help_of_every_command_test_() ->
    [{N ++ " " ++ H, fun() ->
         {Out, Status} = capture(fun() -> riarc_cli:status([N, H]) end),
         ?assertEqual(0, Status),
         ?assertMatch("usage: riarc " ++ _, Out),
         ?assertEqual(N, hd(string:lexemes(lists:nthtail(length("usage: riarc "), Out), " \n"))),
         ?assertEqual(nomatch, string:find(Out, "riarc demo: a supervised"))
     end} || N <- names(), H <- ["--help", "-h"]].

%% Every command rejects an unknown flag with status 2.
unknown_flag_of_every_command_test_() ->
    [{N, ?_assertMatch({"", 2}, capture(fun() -> riarc_cli:status([N, "--bogus", "1"]) end))}
     || N <- names()].

%% bin/riarc with no arguments: the usage on standard error, nothing on standard output,
%% status 2 (bad input); `help' prints the same usage to standard output with status 0.
no_arguments_test() ->
    {Out, Err, Status} = riarc_capture:capture_all(fun() -> riarc_cli:status([]) end),
    ?assertEqual({"", 2}, {Out, Status}),
    ?assertEqual({Err, 0}, capture(fun() -> riarc_cli:status(["help"]) end)).

top_level_test() ->
    {Usage, 0} = capture(fun() -> riarc_cli:status(["help"]) end),
    ?assertMatch("usage: riarc COMMAND" ++ _, Usage),
    [?assertNotEqual(nomatch, string:find(Usage, "  " ++ N ++ " ")) || N <- names()],
    ?assertEqual({Usage, 0}, capture(fun() -> riarc_cli:status(["--help"]) end)),
    {RunHelp, 0} = capture(fun() -> riarc_cli:status(["help", "run"]) end),
    ?assertMatch("usage: riarc run -m MOD -f FUN" ++ _, RunHelp),
    ?assertEqual({"", 2}, capture(fun() -> riarc_cli:status(["help", "nope"]) end)),
    ?assertEqual({"", 2}, capture(fun() -> riarc_cli:status(["frobnicate"]) end)),
    _ = application:load(riarc),
    {ok, Vsn} = application:get_key(riarc, vsn),
    ?assertEqual({"riarc " ++ Vsn ++ "\n", 0}, capture(fun() -> riarc_cli:status(["--version"]) end)).

conflicting_monitors_test() ->
    Run = ["run", "-m", "riarc_demo_pqr", "-f", "p"],
    ?assertEqual({"", 2}, capture(fun() -> riarc_cli:status(Run ++ ["--monitors", "riarc_demo_monitors",
                                                                     "--props", "x.prop"]) end)),
    ?assertEqual({"", 2}, capture(fun() -> riarc_cli:status(["check", "--trace", "t", "--props", "x.prop",
                                                              "--monitors", "riarc_demo_monitors"]) end)),
    ?assertEqual({"", 2}, capture(fun() -> riarc_cli:status(Run) end)).

%% A closed standard output (its I/O server gone) ends the command with 141, quietly.
closed_stdout_test() ->
    Dead = spawn(fun() -> ok end),
    Ref = monitor(process, Dead),
    receive {'DOWN', Ref, process, Dead, _} -> ok end,
    Self = self(),
    Pid = spawn(fun() -> group_leader(Dead, self()), Self ! {self(), riarc_cli:status(["--version"])} end),
    receive {Pid, Status} -> ?assertEqual(141, Status) end.

%%% Users' code: -pa and --lib ----------------------------------------------------------

tmp(Name) ->
    riarc_test_tmp:dir("riarc_cli_args_tests/" ++ Name).

%% A system and its Spec module, compiled into Dir and not loaded.
user_code(Dir, Sys, Spec) ->
    Sources = [{Sys, "-module(" ++ Sys ++ ").\n-export([main/0]).\nmain() -> ok.\n"},
               {Spec, "-module(" ++ Spec ++ ").\n-export([spec/1]).\n"
                      "spec(_) -> {ok, fun M({exit, _, normal}) -> accept; M(_) -> M end}.\n"}],
    [begin
         Src = filename:join(Dir, M ++ ".erl"),
         ok = file:write_file(Src, Text),
         {ok, _} = compile:file(Src, [{outdir, Dir}, return_errors]),
         ok = file:delete(Src)
     end || {M, Text} <- Sources],
    ok.

user_code_test_() ->
    {timeout, 60, fun() ->
        Pa = tmp("pa"),
        user_code(Pa, "riarc_cli_user_sys", "riarc_cli_user_spec"),
        Run = ["run", "-m", "riarc_cli_user_sys", "-f", "main", "--monitors", "riarc_cli_user_spec"],
        %% Not on the code path: the monitors are bad input.
        ?assertEqual({"", 2}, capture(fun() -> riarc_cli:status(Run) end)),
        {Out, 0} = capture(fun() -> riarc_cli:status(Run ++ ["-pa", Pa]) end),
        ?assertMatch([_, "riarc_cli_user_sys:main/0", "accept"], string:lexemes(hd(string:lexemes(Out, "\n")), " ")),
        Lib = tmp("lib"),
        Ebin = filename:join([Lib, "myapp-1.0", "ebin"]),
        ok = filelib:ensure_dir(filename:join(Ebin, "x")),
        user_code(Ebin, "riarc_cli_lib_sys", "riarc_cli_lib_spec"),
        {Out2, 0} = capture(fun() -> riarc_cli:status(["run", "-m", "riarc_cli_lib_sys", "-f", "main",
                                                       "--lib", Lib, "--monitors", "riarc_cli_lib_spec"]) end),
        ?assertMatch([_, "riarc_cli_lib_sys:main/0", "accept"], string:lexemes(hd(string:lexemes(Out2, "\n")), " ")),
        ?assertEqual({"", 2}, capture(fun() -> riarc_cli:status(Run ++ ["-pa", filename:join(Pa, "nope")]) end)),
        true = code:del_path(Pa),
        true = code:del_path(Ebin)
    end}.

%%% Capturing standard output -----------------------------------------------------------

capture(Fun) -> riarc_capture:capture(Fun).
