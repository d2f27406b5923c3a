%% Record & replay on the command line: `record --replayable', `replay', `--until-result'
%% and step 4 of the demo, through the functions bin/riarc calls (they return the exit
%% status instead of halting). Every run happens in a peer node (otp => true), about 1.5 s
%% each; every wait is bounded by riarc_replay's timeout and watchdog.
-module(riarc_replay_cli_tests).

-include_lib("eunit/include/eunit.hrl").

%% A predicate no result satisfies, for --until-result.
-export([never/1]).

-define(SYS, ["-m", "riarc_demo", "-f", "tickets", "-a", "[3, 4]"]).

%% @doc Never true.
-spec never(term()) -> false.
never(_) -> false.

tmp(Name) ->
    filename:join(riarc_test_tmp:dir("riarc_replay_cli_tests"), Name).

%%% record, then replay three times, with each strategy -----------------------------------

%% Full tier: riarc_replay_monitor_tests records and replays through the API in the fast
%% one, and bad_files_test_ runs this command's record and replay.
record_replay_test_() ->
    riarc_test_tier:slow([{atom_to_list(St), {timeout, 120, fun() -> record_replay(St) end}}
                          || St <- [receiver, sender]]).

record_replay(St) ->
    File = tmp("rr_" ++ atom_to_list(St) ++ ".rr"),
    try
        {Out, Err, 0} = cli(fun riarc_offline_cli:run/1,
                            ["record", "--replayable", "--strategy", atom_to_list(St), "-o", File | ?SYS]),
        ?assertEqual("", Err),
        {match, [N]} = re:run(Out, "^recorded (\\d+) events \\(\\d+ bytes\\) to ", [{capture, all_but_first, list}]),
        %% Through riarc_cli too: the command table has the entry.
        Replays = [cli(fun riarc_cli:run/1, ["replay", File]) || _ <- [1, 2, 3]],
        [?assertMatch({_, "", 0}, R) || R <- Replays],
        Results = [result_of(O) || {O, _, _} <- Replays],
        [R1 | _] = Results,
        ?assertEqual([R1, R1, R1], Results),
        ?assertEqual(3, length(R1)),
        [?assertNotEqual(nomatch, string:find(O, "replayed " ++ N ++ " events of riarc_demo:tickets/2 ("
                                                  ++ atom_to_list(St) ++ " side)"))
         || {O, _, _} <- Replays]
    after
        file:delete(File)
    end.

%% The term after "result: ".
result_of(Out) ->
    {match, [Text]} = re:run(Out, "^result: (.*?)\\nreplayed ", [dotall, {capture, all_but_first, list}]),
    {ok, Tokens, _} = erl_scan:string(Text ++ "."),
    {ok, Term} = erl_parse:parse_term(Tokens),
    Term.

%%% bad files: 2; a replay that cannot follow its recording: 1 ------------------------------

bad_files_test_() ->
    {timeout, 120, fun bad_files/0}.

bad_files() ->
    File = tmp("bad.rr"),
    Cut = tmp("cut.rr"),
    try
        {_, _, 0} = cli(fun riarc_offline_cli:run/1, ["record", "--replayable", "-o", File | ?SYS]),
        {ok, Bin} = file:read_file(File),
        [begin
             ok = file:write_file(Cut, binary:part(Bin, 0, Len)),
             {Out, Err, Status} = cli(fun riarc_replay_cli:run/1, ["replay", Cut]),
             ?assertEqual({"", 2}, {Out, Status}),
             one_sentence(Err)
         %% Every cut in the full tier; two (in the middle, at the start) in the fast one.
         end || Len <- lists:sublist([byte_size(Bin) div 2, 0, 5, 20, byte_size(Bin) - 1],
                                     riarc_test_tier:count(2, 5))],
        {"", Err1, 2} = cli(fun riarc_replay_cli:run/1, ["replay", tmp("none.rr")]),
        one_sentence(Err1),
        %% The same recording under a header that asks for more tickets per client: the
        %% program does more than was recorded, a divergence.
        ok = file:write_file(Cut, with_args(Bin, [3, 5])),
        {"", Err2, 1} = cli(fun riarc_replay_cli:run/1, ["replay", Cut]),
        one_sentence(Err2),
        ?assertMatch("riarc: the replay diverged" ++ _, Err2)
    after
        file:delete(File),
        file:delete(Cut)
    end.

one_sentence(Err) ->
    ?assertMatch(["riarc: " ++ _], string:split(string:trim(Err, trailing), "\n", all)).

%% The file's header with other arguments for the root, and the CRC made right again
%% (docs/replay.md has the layout).
with_args(<<"RIARCRR", V:8, HLen:32, H:HLen/binary, Rest/binary>>, Args) ->
    #{mfa := {M, F, _}} = Header = binary_to_term(H),
    H2 = term_to_binary(Header#{mfa := {M, F, Args}}),
    Body = binary:part(Rest, 0, byte_size(Rest) - 4),
    Before = <<"RIARCRR", V:8, (byte_size(H2)):32, H2/binary, Body/binary>>,
    <<Before/binary, (erlang:crc32(Before)):32>>.

%%% --until-result ------------------------------------------------------------------------

%% Full tier: it records until the race shows.
until_result_test_() ->
    riarc_test_tier:slow({timeout, 120, fun until_result/0}).

until_result() ->
    File = tmp("until.rr"),
    try
        {Out, "", 0} = cli(fun riarc_offline_cli:run/1,
                           ["record", "--replayable", "--until-result", "riarc_demo:has_duplicate",
                            "--tries", "10", "-o", File, "-m", "riarc_demo", "-f", "tickets",
                            "-a", "[4, 5]"]),
        ?assertMatch({match, _}, re:run(Out, "^recording \\d+ of 10: result satisfies "
                                              "riarc_demo:has_duplicate/1$", [multiline])),
        {ROut, "", 0} = cli(fun riarc_replay_cli:run/1, ["replay", File]),
        ?assert(riarc_demo:has_duplicate(result_of(ROut))),
        %% None satisfies: status 1, one sentence, and no file left behind.
        {Out2, Err2, 1} = cli(fun riarc_offline_cli:run/1,
                              ["record", "--replayable", "--until-result", "riarc_replay_cli_tests:never",
                               "--tries", "2", "-o", File | ?SYS]),
        ?assertEqual(2, length(string:lexemes(Out2, "\n"))),
        one_sentence(Err2),
        ?assertNot(filelib:is_file(File))
    after
        file:delete(File)
    end.

%% Flags that need another flag, and an unknown predicate: bad input, nothing run.
flags_test() ->
    File = tmp("flags.rr"),
    [?assertMatch({"", _, 2}, cli(fun riarc_offline_cli:run/1, ["record", "-o", File | ?SYS] ++ A))
     || A <- [["--strategy", "sender"], ["--until-result", "riarc_demo:has_duplicate"],
              ["--replayable", "--tries", "3"], ["--replayable", "--format", "text"],
              ["--replayable", "--until-result", "riarc_demo"],
              ["--replayable", "--until-result", "riarc_demo:no_such_predicate"],
              ["--replayable", "--strategy", "both"]]],
    ?assertMatch({"", _, 2}, cli(fun riarc_replay_cli:run/1, ["replay"])),
    ?assertNot(filelib:is_file(File)).

%% The predicates the demo's hunt uses.
duplicates_test() ->
    ?assertEqual([], riarc_demo:duplicates([[0, 1], [2, 3]])),
    ?assertEqual([0, 2], riarc_demo:duplicates([[0, 1, 2], [0, 2, 2, 3]])),
    ?assertEqual([], riarc_demo:duplicates(not_a_result)),
    ?assert(riarc_demo:has_duplicate([[5], [5]])),
    ?assertNot(riarc_demo:has_duplicate([[]])).

%%% make demo, step 4 ----------------------------------------------------------------------

%% The function behind the demo's fourth step: the hunt finds the race and the three
%% replays give the recorded tickets, duplicates included (full tier: `make demo' runs it
%% too).
demo_step_test_() ->
    riarc_test_tier:slow({timeout, 180, fun() ->
        File = tmp("demo.rr"),
        try
            {Out, "", R} = capture(fun() -> riarc_replay_cli:demo_step(File) end),
            #{status := 0, recorded := Rec, replays := Replays} = R,
            ?assert(riarc_demo:has_duplicate(Rec)),
            ?assertEqual([Rec, Rec, Rec], Replays),
            %% What the demo prints about each replay: the same duplicate tickets.
            Dups = [hd(string:split(tl(string:find(L, "duplicate")), " ("))
                    || L <- string:split(Out, "\n", all), string:prefix(L, "  replay ") =/= nomatch],
            ?assertMatch([D, D, D], Dups),
            ?assertNotEqual(nomatch, string:find(Out, "every replay handed out the recorded tickets"))
        after
            file:delete(File)
        end
    end}).

%%% The stock system's lost update in the three modes (issue 28 item 4) ---------------------

-define(STOCK, ["-m", "riarc_replay_stock", "-f", "main", "-a", "[1000, 4, 25]"]).

%% The property file next to riarc_replay_stock's source (riarc_replay's tests).
stock_prop() ->
    Src = proplists:get_value(source, riarc_replay_stock:module_info(compile)),
    filename:join(filename:dirname(Src), "riarc_replay_stock.prop").

%% `run --props' rejects the lost update, `record --replayable --until-reject --props'
%% keeps a recording with it, and `replay --props' of that recording rejects it again:
%% status 1 and the server's reject each time. Before, the recordings and the replay saw
%% none of the server's stores (the property's trace patterns selected plain messages)
%% and accepted.
%% Full tier (three peer runs at least): riarc_replay_monitor_tests checks the same
%% through the API in the fast one.
stock_three_modes_test_() ->
    riarc_test_tier:slow({timeout, 300, fun stock_three_modes/0}).

stock_three_modes() ->
    Prop = stock_prop(),
    File = tmp("stock.rr"),
    Reject = "riarc_replay_stock:init/1 reject",
    try
        {Run, _, 1} = cli(fun riarc_cli:run/1, ["run", "--props", Prop | ?STOCK]),
        ?assertNotEqual(nomatch, string:find(Run, Reject)),
        {Rec, _, 1} = cli(fun riarc_offline_cli:run/1,
                          ["record", "--replayable", "--until-reject", "10", "--props", Prop,
                           "-o", File | ?STOCK]),
        ?assertMatch({match, _}, re:run(Rec, "^recording \\d+ of 10: rejected$", [multiline])),
        ?assertNotEqual(nomatch, string:find(Rec, Reject)),
        {Rep, _, 1} = cli(fun riarc_replay_cli:run/1, ["replay", File, "--props", Prop]),
        ?assertNotEqual(nomatch, string:find(Rep, Reject)),
        %% The verdicts come first, then the result.
        [_, AfterVerdicts] = string:split(Rep, "\nresult: "),
        ?assert(riarc_replay_stock:lost(result_of("result: " ++ AfterVerdicts)) > 0)
    after
        file:delete(File)
    end.

%%% A module without debug_info -------------------------------------------------------------

%% `record --replayable' of a system one of whose modules has no debug_info records it,
%% status 0, and names the module in a warning on standard error; the replay gives the
%% recorded result and the same warning. Before, the recording stopped with status 2.
%% Full tier: riarc_replay_tests checks the same through the API in the fast one.
no_debug_info_test_() ->
    riarc_test_tier:slow({timeout, 120, fun no_debug_info/0}).

no_debug_info() ->
    Dir = riarc_replay_tests:nodi_modules(),
    File = filename:join(Dir, "nodi.rr"),
    true = code:add_patha(Dir),
    Warning = "riarc: warning: not woven (no debug_info): rrnodi_helper;",
    try
        {Out, Err, 0} = cli(fun riarc_offline_cli:run/1,
                            ["record", "--replayable", "-m", "rrnodi_root", "-f", "main", "-a", "[5]",
                             "-o", File]),
        ?assertMatch("recorded " ++ _, Out),
        ?assert(lists:prefix(Warning, Err)),
        {ROut, RErr, 0} = cli(fun riarc_replay_cli:run/1, ["replay", File]),
        ?assertEqual([2, 4, 6, 8, 10], result_of(ROut)),
        ?assert(lists:prefix(Warning, RErr))
    after
        code:del_path(Dir),
        _ = [file:delete(F) || F <- filelib:wildcard(filename:join(Dir, "*"))],
        file:del_dir(Dir)
    end.

%%% capturing standard output and standard error -------------------------------------------

cli(Run, Args) ->
    {Out, Err, Status} = capture(fun() -> Run(Args) end),
    {Out, Err, Status}.

capture(Fun) -> riarc_capture:capture_all(Fun).
