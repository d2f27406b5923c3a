%% @doc Record &amp; replay on the command line (docs/replay.md): `record --replayable'
%% (its flags are declared here, the `record' command itself in riarc_offline_cli),
%% the `replay' command, the hunt for a run whose result satisfies a predicate
%% (`--until-result MOD:FUN'), and step 4 of `make demo'.
%% ```
%% $ bin/riarc record --replayable -m riarc_demo -f tickets -a '[8, 20]' \
%%       --until-result riarc_demo:has_duplicate --tries 20 -o race.rr
%% recording 1 of 20: result satisfies riarc_demo:has_duplicate/1
%% recorded 822 events (7420 bytes) to race.rr
%% $ bin/riarc replay race.rr
%% result: [[0,1,2,...],...]
%% replayed 822 events of riarc_demo:tickets/2 (receiver side), run time 21.4 ms
%% '''
%% From Erlang, the functions return the exit status instead of halting:
%% ```
%% 1> riarc_replay_cli:run(["record", "--replayable", "-m", "riarc_demo", "-f", "tickets",
%% ..                         "-a", "[4, 5]", "-o", "/tmp/race.rr"]).
%% recorded ... to /tmp/race.rr
%% 0
%% 2> riarc_replay_cli:run(["replay", "/tmp/race.rr"]).
%% result: ...
%% 0
%% '''
%% Every run of this module weaves OTP's behaviours (`otp => true' of riarc_replay), so
%% it happens in a fresh peer node: the demo's gen_server and supervisor are recorded,
%% and the replay must weave them the same way, which it then always does.
%% Exit status: 0 done (and the replay followed its recording); 1 a replay that
%% diverged, a run that failed (timeout, deadlock, crashed peer) or a hunt in which no
%% recording satisfied the predicate; 2 bad input: a corrupt, truncated or unreadable
%% recording, a module that cannot be woven, an unknown predicate. Errors are one
%% sentence on standard error.
-module(riarc_replay_cli).

-export([commands/0, record_flags/0, run/1, record/1, hunt/3, demo_step/1]).

-export_type([hunt_opts/0, demo_result/0]).

-type hunt_opts() :: #{tries := pos_integer(),
                       until := {module(), atom()} | reject | undefined,
                       monitor => riarc_lambda:spec(),
                       monitor_opts => riarc:opts(),
                       strategy := receiver | sender,
                       timeout := pos_integer(),
                       modules => [module()],
                       log => fun((pos_integer(), boolean()) -> ok)}.
%% `until': the predicate on the root's result, or `reject' (a reject verdict of the
%% monitors, `monitor' and `monitor_opts' as for riarc_replay:record/3); undefined: the
%% first recording is kept;
%% `log': called after each recording with its number and whether `until' held.

-type demo_result() :: #{status := 0 | 1 | 2,
                         recorded => term(),
                         replays => [term()]}.

-define(DEFAULT_TRIES, 20).
-define(DEMO_MFA, {riarc_demo, tickets, [8, 20]}).
-define(DEMO_UNTIL, {riarc_demo, has_duplicate}).
-define(DEMO_TRIES, 20).
-define(DEMO_REPLAYS, 3).

%%% Declarations -------------------------------------------------------------------------

%% @doc The declaration of `replay' (riarc_cli_args parses it).
-spec commands() -> [riarc_cli_args:command()].
commands() ->
    [#{name => "replay",
       summary => "replay a recording made by record --replayable",
       description => "Runs the system of a recording (record --replayable) again, taking "
                      "the recorded decisions,\nand prints the root's result and the number "
                      "of events replayed; with --monitors or --props, under riarc's\nmonitoring, "
                      "printing the verdicts as `riarc run' does (status 1 on a reject).\nA "
                      "replay that cannot follow its recording stops with one sentence "
                      "(status 1);\na corrupt or truncated file is bad input (status 2).",
       flags => [riarc_cli_args:timeout_flag("replay")]
           ++ riarc_cli_args:code_flags() ++ riarc_cli_monitors:flags()
           ++ [riarc_view_cli:chart_flag(), riarc_cli_report:format_flag()],
       positionals => [#{key => file, metavar => "FILE", required => true,
                         help => "the recording"}]}].

%% @doc The flags `record' takes for a replayable recording; riarc_offline_cli adds them
%% to its declaration and hands the options to record/1 when `--replayable' is given.
-spec record_flags() -> [riarc_cli_args:flag()].
record_flags() ->
    %% The trace-file flags have defaults, but the parser checks conflicts on what was
    %% given, so `--replayable --format text' is still refused.
    [#{name => "--replayable", key => replayable, type => boolean, conflicts => [payloads, format],
       help => "record a replayable run (docs/replay.md) instead of a trace to check"},
     #{name => "--strategy", key => strategy, type => {enum, [receiver, sender]},
       help => "with --replayable: which side records message order (default receiver)"},
     #{name => "--until-result", key => until_result, type => {check, fun mod_fun/1},
       metavar => "MOD:FUN", help => "with --replayable: record until MOD:FUN(Result) is true "
                                     "for the root's Result (see --tries)"},
     #{name => "--tries", key => tries, type => {int, 1}, metavar => "N",
       help => "with --until-result: give up after N recordings (default 20)"},
     #{name => "--until-reject", key => until_reject, type => {int, 1}, metavar => "N",
       conflicts => [until_result, tries],
       help => "with --replayable and --monitors or --props: record up to N times, "
               "keep the first run with a reject"},
     #{name => "--weave", key => weave, type => atom, metavar => "MOD", repeat => true,
       help => "with --replayable: weave MOD too (default: MOD of -m and the modules next "
               "to it; those without debug_info are left unwoven, with a warning)"}
     | [F#{help => "with --replayable: " ++ H} || F = #{help := H} <- riarc_cli_monitors:flags()]].

mod_fun(Text) ->
    case string:split(Text, ":") of
        [M, F] when M =/= "", F =/= "" -> {ok, {list_to_atom(M), list_to_atom(F)}};
        _ -> {error, "a predicate MOD:FUN, such as riarc_demo:has_duplicate"}
    end.

%%% replay -------------------------------------------------------------------------------

%% @doc Runs `replay' (Args: the command's name and its arguments); returns the status.
-spec run([string()]) -> 0 | 1 | 2.
run(["replay" | Args]) ->
    [Cmd] = commands(),
    riarc_cli_args:run(Cmd, Args, fun(O) -> riarc_cli_syslog:with(O, fun() -> replay(Cmd, O) end) end);
run(_) ->
    fail("give the command replay", 2).

replay(Cmd, O = #{file := File, timeout := T}) ->
    ok = load_user_code(),
    BadInput = fun(Msg) -> riarc_cli_report:bad_input(Cmd, O, Msg) end,
    with_monitors(BadInput, O, fun(MOpts) ->
        case {riarc_replay:replay(File, MOpts#{otp => true, timeout => T}), riarc_cli_report:format(O)} of
            {{ok, Info = #{result := R, events := N, mfa := {M, F, A}, strategy := St, wall_us := W}}, text} ->
                warn_unwoven(Info),
                Status = riarc_view_cli:chart(O, {ok, maps:get(monitoring, Info, riarc_result:make(#{}))},
                                              verdicts(Info, #{})),
                io:format("result: ~tp~n", [R]),
                io:format("replayed ~b events of ~s:~s/~b (~s side), run time ~.1f ms~n",
                          [N, M, F, length(A), St, W / 1000]),
                Status;
            {{ok, Info = #{result := R, events := N, mfa := {M, F, A}, strategy := St, wall_us := W}}, json} ->
                %% The replay's own lines are fields of the summary; its result bounded.
                Summary = #{result => riarc_result_json:text(riarc_term_show:show(R)),
                            replayed_events => N, strategy => St, wall_us => W,
                            mfa => riarc_result_json:text(riarc_result:format_mfa({M, F, A}))},
                Warnings = [riarc_result_json:text(S) || S <- unwoven(Info)],
                riarc_view_cli:chart(O, {ok, maps:get(monitoring, Info, riarc_result:make(#{}))},
                                     verdicts(Info, #{format => json, summary => Summary, warnings => Warnings}));
            {{error, Reason}, _} -> failed(O, Reason)
        end
    end).

%% riarc_replay decodes the file's header (MFA, modules) without creating atoms, as it
%% should for a file from anywhere; a fresh `bin/riarc' VM has not loaded the recorded
%% system yet, so its atoms would not exist and a good file would read as corrupt.
%% Loading the modules on the code path (riarc's own and those of -pa/--lib, not OTP's)
%% makes their names, functions and literal atoms known.
load_user_code() ->
    Root = code:root_dir(),
    _ = [code:ensure_loaded(list_to_atom(filename:basename(B, ".beam")))
         || Dir <- code:get_path(), not lists:prefix(Root, Dir),
            B <- filelib:wildcard(filename:join(Dir, "*.beam"))],
    ok.

%%% Monitors ------------------------------------------------------------------------------

%% The run options of --monitors / --props for riarc_replay (none without them), for Fun;
%% BadInput says what is wrong with them.
%% riarc_replay monitors where the run runs, in a peer node (otp => true): a property file
%% is compiled to a temporary directory put on the code path, which the peer gets, and
%% removed afterwards; a --monitors module is on the path already.
with_monitors(BadInput, O, Fun) ->
    case is_map_key(monitors, O) orelse is_map_key(props, O) of
        false ->
            Fun(#{});
        true ->
            case riarc_cli_monitors:spec_of(O) of
                {ok, Spec, ROpts} ->
                    MOpts = #{monitor => Spec, monitor_opts => ROpts#{log => false}},
                    case O of
                        #{props := File} -> with_props_on_path(File, fun() -> Fun(MOpts) end);
                        #{} -> Fun(MOpts)
                    end;
                {error, Reason} ->
                    BadInput(riarc:format_error(Reason))
            end
    end.

with_props_on_path(File, Fun) ->
    Dir = filename:join(os:getenv("TMPDIR", "/tmp"),
                        lists:flatten(io_lib:format("riarc-props-~s-~b",
                                                    [os:getpid(), erlang:unique_integer([positive])]))),
    ok = file:make_dir(Dir),
    try
        {ok, Beam} = riarc_shml:compile_file(File, Dir),
        true = code:add_patha(Dir),
        try Fun()
        after
            _ = code:del_path(Dir),
            _ = file:delete(Beam)
        end
    after
        _ = file:del_dir(Dir)
    end.

%% Modules left unwoven (no debug_info) ran without being recorded: the recording and its
%% replays hold what the woven code did, not what these did. Said on every use of the
%% file, since a replay that looks right may still differ there.
warn_unwoven(Info) ->
    _ = [io:format(standard_error, "riarc: warning: ~ts~n", [S]) || S <- unwoven(Info)],
    ok.

unwoven(#{unwoven := [_ | _] = Ms}) ->
    [lists:flatten(io_lib:format("not woven (no debug_info): ~ts; what their code does is not "
                                 "recorded, and a replay does not reproduce it",
                                 [lists:join(", ", [atom_to_list(M) || M <- Ms])]))];
unwoven(#{}) ->
    [].

%% The verdicts of a monitored run, as `run' prints them; its status (0 unmonitored). In
%% json, the summary comes last whether monitored or not.
verdicts(Info) -> verdicts(Info, #{}).

verdicts(#{monitoring := Mon}, ReportOpts) -> riarc_cli_report:result(Mon, ReportOpts);
verdicts(#{}, ReportOpts) ->
    Fields = maps:merge(maps:with([warnings], ReportOpts), maps:get(summary, ReportOpts, #{})),
    riarc_cli_report:summary(ReportOpts, Fields, 0).

%%% record --replayable ------------------------------------------------------------------

%% @doc `record --replayable' with the options riarc_cli_args parsed (riarc_offline_cli
%% calls it); records until the predicate holds when `--until-result' is given.
-spec record(riarc_cli_args:opts()) -> 0 | 1 | 2.
record(Opts = #{module := M, function := F, args := A, out := Out, timeout := T}) ->
    case predicate(Opts) of
        {ok, Until} ->
            Tries = maps:get(tries, Opts, maps:get(until_reject, Opts, ?DEFAULT_TRIES)),
            HOpts0 = #{tries => Tries, until => Until, timeout => T,
                       strategy => maps:get(strategy, Opts, receiver),
                       log => fun(K, Held) -> log_try(K, Tries, Until, Held) end},
            HOpts1 = case Opts of
                         #{weave := Ws} -> HOpts0#{modules => lists:usort([M | riarc_replay:default_modules(M)] ++ Ws)};
                         #{} -> HOpts0
                     end,
            with_monitors(fun(Msg) -> fail(Msg, 2) end, Opts, fun(MOpts) ->
                case hunt({M, F, A}, Out, maps:merge(HOpts1, MOpts)) of
                    {found, _K, Info = #{events := N, bytes := B}} ->
                        warn_unwoven(Info),
                        Status = verdicts(Info),
                        io:format("recorded ~b events (~b bytes) to ~ts~n", [N, B, Out]),
                        Status;
                    {none, K, Statuses} when Until =:= reject ->
                        %% Every run was checked and none was rejected: nothing to keep,
                        %% and (as for `run') status 0 only if every verdict was accepted.
                        io:format(standard_error, "riarc: none of ~b recordings was rejected; "
                                  "nothing written to ~ts~n", [K, Out]),
                        lists:max([0 | Statuses]);
                    {none, K, _} ->
                        fail(io_lib:format("none of ~b recordings satisfied ~s; nothing written to ~ts",
                                           [K, show_pred(Until), Out]), 1);
                    {error, Reason} -> failed(Reason)
                end
            end);
        {error, Msg} -> fail(Msg, 2)
    end.

%% The flags that only mean something together are checked here: the parser knows
%% conflicts, not dependencies.
predicate(Opts) ->
    Monitored = is_map_key(monitors, Opts) orelse is_map_key(props, Opts),
    case Opts of
        #{tries := _} when not is_map_key(until_result, Opts) ->
            {error, "--tries needs --until-result"};
        #{until_reject := _} when not Monitored ->
            {error, "--until-reject needs --monitors or --props"};
        #{until_reject := _} ->
            {ok, reject};
        #{until_result := {PM, PF}} ->
            _ = code:ensure_loaded(PM),
            case erlang:function_exported(PM, PF, 1) of
                true -> {ok, {PM, PF}};
                false -> {error, lists:flatten(io_lib:format("the predicate ~s:~s/1 does not exist",
                                                             [PM, PF]))}
            end;
        #{} -> {ok, undefined}
    end.

log_try(_K, _Tries, undefined, _Held) ->
    ok;
log_try(K, Tries, reject, Held) ->
    io:format("recording ~b of ~b: ~s~n",
              [K, Tries, case Held of true -> "rejected"; false -> "no reject" end]);
log_try(K, Tries, Until, Held) ->
    io:format("recording ~b of ~b: result ~s ~s~n",
              [K, Tries, case Held of true -> "satisfies"; false -> "does not satisfy" end,
               show_pred(Until)]).

show_pred({M, F}) -> io_lib:format("~s:~s/1", [M, F]).

%% @doc Records MFA to File up to `tries' times, keeping the first recording whose root
%% result satisfies `until' (the first recording, when `until' is undefined). When none
%% did, File is removed: a recording left there would be one without the property.
-spec hunt({module(), atom(), list()}, file:filename(), hunt_opts()) ->
    {found, pos_integer(), riarc_replay:info()} | {none, pos_integer(), [0 | 1 | 2]} | {error, term()}.
hunt(MFA, File, Opts = #{tries := Tries}) ->
    hunt(MFA, File, Opts, 1, Tries, []).

hunt(_MFA, File, _Opts, K, Tries, Statuses) when K > Tries ->
    _ = file:delete(File),
    {none, Tries, Statuses};
hunt(MFA, File, Opts = #{until := Until, strategy := St, timeout := T}, K, Tries, Statuses) ->
    ROpts = maps:merge(#{otp => true, strategy => St, timeout => T},
                       maps:with([modules, monitor, monitor_opts], Opts)),
    case riarc_replay:record(MFA, File, ROpts) of
        {ok, Info} ->
            Log = maps:get(log, Opts, fun(_, _) -> ok end),
            case holds(Until, Info) of
                {ok, true} -> Log(K, true), {found, K, Info};
                {ok, _} -> Log(K, false), hunt(MFA, File, Opts, K + 1, Tries, [status_of(Info) | Statuses]);
                {error, _} = E -> _ = file:delete(File), E
            end;
        %% A failed recording writes nothing, so FILE may still hold an earlier try's
        %% recording, one without the property: not something to leave behind.
        {error, _} = E when K > 1 ->
            _ = file:delete(File),
            E;
        {error, _} = E ->
            E
    end.

%% A monitored run's status as `run' gives it (riarc_result:status/1); 0 unmonitored.
status_of(#{monitoring := Mon}) -> riarc_result:status(Mon);
status_of(#{}) -> 0.

%% Anything but `true' is "does not hold"; a predicate that raises is the user's bug, an
%% error rather than a miss (hunting on would only repeat it).
holds(undefined, _Info) ->
    {ok, true};
holds(reject, #{monitoring := Mon}) ->
    {ok, riarc_replay_monitor:rejected(Mon)};
holds({M, F}, #{result := Result}) ->
    try {ok, M:F(Result)}
    catch Class:Why -> {error, {predicate, {M, F}, Class, Why}}
    end.

%%% make demo, step 4 ---------------------------------------------------------------------

%% @doc Step 4 of `make demo': hunts the dispenser's race by recording
%% riarc_demo:tickets(8, 20) (up to 20 times, until riarc_demo:has_duplicate/1), then
%% replays the recording in File three times and prints the duplicate tickets of each
%% replay. Status 0 when every replay gave the recorded result, 1 when one did not (or
%% no recording hit the race), 2 when recording or replay failed outright. File is
%% left for the caller to remove.
-spec demo_step(file:filename()) -> demo_result().
demo_step(File) ->
    {M, F, A} = ?DEMO_MFA,
    {UM, UF} = ?DEMO_UNTIL,
    io:format("  hunting: up to ~b recordings of ~s:~s(~s) until ~s:~s/1~n",
              [?DEMO_TRIES, M, F, lists:join(", ", [integer_to_list(X) || X <- A]), UM, UF]),
    Opts = #{tries => ?DEMO_TRIES, until => ?DEMO_UNTIL, strategy => receiver, timeout => 30000},
    case timed(fun() -> hunt(?DEMO_MFA, File, Opts) end) of
        {{found, K, #{result := Rec, events := N, bytes := B}}, Ms} ->
            io:format("  recording ~b hit the race: ~b events, ~b bytes, ~s (~b ms)~n",
                      [K, N, B, show_dups(Rec), Ms]),
            Replays = [demo_replay(I, File, Rec) || I <- lists:seq(1, ?DEMO_REPLAYS)],
            case [R || {error, R} <- Replays] of
                [] ->
                    Results = [R || {ok, R} <- Replays],
                    Same = lists:all(fun(R) -> R =:= Rec end, Results),
                    io:format("  ~s~n", [case Same of
                                             true -> "every replay handed out the recorded tickets, "
                                                     "duplicates included";
                                             false -> "a replay differs from the recording: "
                                                      "replay is NOT deterministic here"
                                         end]),
                    #{status => case Same of true -> 0; false -> 1 end, recorded => Rec,
                      replays => Results};
                [Reason | _] ->
                    #{status => failed(Reason), recorded => Rec}
            end;
        {{none, K, _}, _} ->
            io:format("  none of ~b recordings hit the race; run the demo again~n", [K]),
            #{status => 1};
        {{error, Reason}, _} ->
            #{status => failed(Reason)}
    end.

demo_replay(I, File, Rec) ->
    case timed(fun() -> riarc_replay:replay(File, #{otp => true, timeout => 30000}) end) of
        {{ok, #{result := R, events := N}}, Ms} ->
            io:format("  replay ~b: ~b events, ~s~s (~b ms)~n",
                      [I, N, show_dups(R), case R =:= Rec of
                                                true -> ", as recorded";
                                                false -> ", DIFFERENT from the recording"
                                            end, Ms]),
            {ok, R};
        {{error, Reason}, _} ->
            {error, Reason}
    end.

%% All the duplicates, as ranges: which tickets were handed out twice differs from run to
%% run (the first is nearly always 0), so the whole set is what shows a replay is the same.
show_dups(Result) ->
    case riarc_demo:duplicates(Result) of
        [] -> "no duplicate ticket";
        [D] -> io_lib:format("duplicate ticket ~b", [D]);
        Ds -> io_lib:format("duplicate tickets ~s", [lists:join(",", ranges(Ds))])
    end.

ranges([]) -> [];
ranges([A | T]) -> ranges(A, A, T).

ranges(A, B, [C | T]) when C =:= B + 1 -> ranges(A, C, T);
ranges(A, A, T) -> [integer_to_list(A) | ranges(T)];
ranges(A, B, T) -> [io_lib:format("~b-~b", [A, B]) | ranges(T)].

timed(Fun) ->
    T0 = erlang:monotonic_time(millisecond),
    R = Fun(),
    {R, erlang:monotonic_time(millisecond) - T0}.

%%% Errors --------------------------------------------------------------------------------

%% A divergence or a run that did not complete is a failed run (1); what is wrong with the
%% input (the file, a module that cannot be woven, the options, the predicate) is 2.
failed(Reason) ->
    fail(sentence(Reason), status(Reason)).

failed(O, Reason) ->
    riarc_cli_report:fail(O, sentence(Reason), status(Reason)).

status({diverged, _, _, _}) -> 1;
status({riarc_replay, {timeout, _, _}}) -> 1;
status({riarc_replay, {deadlock, _}}) -> 1;
status({riarc_replay, {peer, _}}) -> 1;
status({riarc_replay, {controller_crashed, _}}) -> 1;
status({riarc_replay_monitor, _}) -> 1;
status(_) -> 2.

sentence({diverged, _, _, _} = D) -> "the replay diverged: " ++ riarc_replay:format_error(D);
sentence({riarc_replay, R}) -> riarc_replay:format_error(R);
sentence({Mod, _} = E) when is_atom(Mod), Mod =/= predicate -> riarc:format_error(E);
sentence({predicate, {M, F}, Class, Why}) ->
    io_lib:format("the predicate ~s:~s/1 raised ~s:~0tp", [M, F, Class, Why]).

fail(Msg, Status) ->
    io:format(standard_error, "riarc: ~ts~n", [Msg]),
    Status.
