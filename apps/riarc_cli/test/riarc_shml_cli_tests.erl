%% Property files end to end: `bin/riarc compile', and the bundled example properties
%% (examples/props) compiled, run online on P/Q/R and the demo, and checked offline.
-module(riarc_shml_cli_tests).

-include_lib("eunit/include/eunit.hrl").

with(Formula) -> "with m:f() monitor " ++ Formula ++ ".".

tmp_dir() -> riarc_test_tmp:dir("riarc_shml_cli_tests").

%% Each compile looks the module's name up on the whole code path (code:which/1, through
%% the one erl_prim_loader): about ten walks of some 150 directories here, 0.07 s on an
%% idle machine and over eunit's default 5 s once with both cores taken by other work.
%% So these tests say how long they may take.
files_test_() ->
    {timeout, 120, fun files/0}.

files() ->
    Dir = tmp_dir(),
    File = filename:join(Dir, "my-props.prop"),
    ok = file:write_file(File, with("[_ <- _, _:_()] [_ ? x] ff")),
    ?assertEqual(riarc_props_my_props, riarc_shml:module_name(File)),
    {ok, Beam} = riarc_shml:compile_file(File, Dir),
    ?assertEqual(filename:join(Dir, "riarc_props_my_props.beam"), Beam),
    ?assert(filelib:is_regular(Beam)),
    {ok, Mod} = riarc_shml:load_file(File),
    ?assertEqual([recv], Mod:trace_flags()),
    ?assertEqual(0, riarc_shml_cli:run([File, "-o", Dir])),
    Bad = filename:join(Dir, "bad.prop"),
    ok = file:write_file(Bad, "with m:f() monitor\n  [_ ? X when Y] ff."),
    ?assertEqual(2, riarc_shml_cli:run([Bad, "-o", Dir])),
    ?assertEqual(2, riarc_shml_cli:run([])),
    ?assertEqual(2, riarc_shml_cli:run([File, "--bogus"])),
    ?assertEqual(2, riarc_shml_cli:run([File, "-o", filename:join(Dir, "no/such/dir")])).

%% --module names the compiled module; a name of another module on the code path, or
%% one that is no module name, is refused (status 2).
module_option_test_() ->
    {timeout, 120, fun module_option/0}.

module_option() ->
    Dir = tmp_dir(),
    File = filename:join(Dir, "named.prop"),
    ok = file:write_file(File, with("[_ <- _, _:_()] [_ ? x] ff")),
    ?assertEqual(0, riarc_shml_cli:run([File, "-o", Dir, "--module", "my_named_props"])),
    Beam = filename:join(Dir, "my_named_props.beam"),
    ?assert(filelib:is_regular(Beam)),
    {ok, {my_named_props, [{exports, Exports}]}} = beam_lib:chunks(Beam, [exports]),
    ?assert(lists:member({trace_patterns, 0}, Exports)),
    %% Once that directory is on the code path, compiling there again is fine.
    true = code:add_patha(Dir),
    try ?assertEqual(0, riarc_shml_cli:run([File, "-o", Dir, "--module", "my_named_props"]))
    after code:del_path(Dir)
    end,
    ?assertEqual({error, {module_exists, lists, code:which(lists)}},
                 riarc_shml:compile_file(File, Dir, #{module => lists})),
    ?assertEqual(2, riarc_shml_cli:run([File, "-o", Dir, "--module", "lists"])),
    ?assertNot(filelib:is_regular(filename:join(Dir, "lists.beam"))),
    ?assertEqual(2, riarc_shml_cli:run([File, "-o", Dir, "--module", "../evil"])),
    ?assertEqual(2, riarc_shml_cli:run([File, "-o", Dir, "--module", ""])).

%%% The example property files

examples_dir() ->
    filename:join(code:lib_dir(riarc), "../../../../examples/props").

example_files() ->
    case filelib:wildcard(filename:join(examples_dir(), "*.prop")) of
        [] -> filelib:wildcard("examples/props/*.prop");
        Fs -> Fs
    end.

examples_compile_test_() ->
    Files = example_files(),
    [?_assert(length(Files) >= 2)
     | [{filename:basename(F), ?_assertMatch({ok, _}, riarc_shml:parse_file(F))} || F <- Files]].

%% P, Q and R keep their properties (every process accepts), online.
pqr_run_test() ->
    {ok, Mod} = riarc_shml:load_file(example("pqr.prop")),
    {ok, R} = riarc:run({riarc_demo_pqr, p, []}, Mod,
                        #{timeout => 10000, log => false, events => Mod:trace_flags()}),
    ?assertEqual([accept, accept, accept], [V || #{verdict := V} <- maps:get(verdicts, R)]).

%% The demo's property catches the lost update (the race shows at least once in ten
%% runs; every run in practice), and raises no false alarm on the safe dispenser.
demo_run_test_() ->
    {timeout, 120, fun() ->
        {ok, Mod} = riarc_shml:load_file(example("demo.prop")),
        ?assertEqual([none], demo_verdicts(Mod, safe)),
        ?assert(lists:member([reject], [demo_verdicts(Mod, racy) || _ <- lists:seq(1, 10)]))
    end}.

demo_verdicts(Mod, Mode) ->
    {ok, R} = riarc:run({riarc_demo, main, [8, 20, Mode]}, Mod,
                        #{timeout => 30000, log => false, events => Mod:trace_flags()}),
    Vs = [{F, V} || #{mfa := {_, F, _}, verdict := V} <- maps:get(verdicts, R)],
    ?assertEqual(8, length([ok || {client, accept} <- Vs])),
    [V || {init, V} <- Vs].

example(Name) ->
    hd([F || F <- example_files(), filename:basename(F) =:= Name]).

%% The same properties offline, on traces with atoms for pids: a faithful P/Q/R run, and
%% one where P sends its request to the wrong process.
pqr_offline_test() ->
    {ok, Mod} = riarc_shml:load_file(example("pqr.prop")),
    MFA = fun(F) -> {riarc_demo_pqr, F, []} end,
    Trace = fun(To) ->
                    [{init, p, x, MFA(p)}, {spawn, p, q, MFA(q)}, {init, q, p, MFA(q)},
                     {send, p, To, req}, {recv, q, req}, {exit, p, normal},
                     {spawn, q, r, MFA(r)}, {init, r, q, MFA(r)}, {exit, q, normal},
                     {exit, r, normal}]
            end,
    Verdicts = fun(T) ->
                       {ok, R} = riarc_offline:check({events, T}, Mod, #{}),
                       lists:sort([{P, V} || #{pid := P, verdict := V} <- maps:get(verdicts, R)])
               end,
    ?assertEqual([{p, accept}, {q, accept}, {r, accept}], Verdicts(Trace(q))),
    ?assertEqual([{p, reject}, {q, accept}, {r, accept}], Verdicts(Trace(z))).
