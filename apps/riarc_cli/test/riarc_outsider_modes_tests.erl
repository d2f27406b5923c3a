%% @doc One case through every mode: a process outside the system changes how the VM
%% traces it (riarc_demo_untracer: the node's receive pattern turned off, or the process's
%% send and receive flags taken), after which the process takes the message its monitor
%% forbids and ends, its exit traced, before any look could find the change (or, with
%% outsider_put_back, after the pattern was put back, so that no look ever finds it
%% changed: only the keeper's log of the calls says what happened). No mode may
%% accept: every mode that reads the VM's trace says its view was cut (error), whether
%% it runs live (both backends, both placements of the monitor), centralised, as a check
%% of a recording (both formats), or records and replays a run (both strategies); inline
%% monitoring, which reads no trace, sees the message and rejects. And the same with a
%% child that ended accepted before, riarc's looks having found the tracing intact since
%% (riarc_demo_untracer:outsider_after_look/2): its accept stands in every mode, a check
%% of a recording too (the recorder says where its last intact look was).
%% ```
%% $ rebar3 eunit --module=riarc_outsider_modes_tests
%% '''
-module(riarc_outsider_modes_tests).

-include_lib("eunit/include/eunit.hrl").

-define(SYS, riarc_demo_untracer).
-define(RUN_MS, 30000).

every_mode_test_() ->
    [{atom_to_list(Sys), {timeout, 300, fun() -> every_mode(Sys, [outsider]) end}}
     || Sys <- [outsider_patterns, outsider_ends, outsider_put_back]]
        ++ [{"outsider_after_look, " ++ atom_to_list(What),
             {timeout, 300, fun() -> every_mode(outsider_after_look, [outsider, What]) end}}
            || What <- [unpattern, untrace_comm]].

%% Args: the system's arguments, `outsider' for the outsider's pid.
every_mode(Sys, Args0) ->
    Before = riarc_trace_pattern:installed(),
    %% Started before every run: no mode traces it.
    H = riarc_demo_outsider:start(),
    try
        MFA = {?SYS, Sys, [case A of outsider -> H; _ -> A end || A <- Args0]},
        Got = lists:append([verdicts(Mode, MFA) || Mode <- modes()]),
        %% The entries not as expected (all of each).
        ?assertEqual([], [G || G = {Mode, F, #{verdict := V}} <- Got, V =/= expected(Mode, F)]),
        [?assertMatch({_, _, #{reason := {cut, #{call := {patterns_changed, _}}}}}, G)
         || G = {Mode, F, _} <- Got, expected(Mode, F) =:= error],
        %% Every process of the system in every mode, once.
        ?assertEqual(lists:sort([{Mode, F} || Mode <- modes_run(), F <- funs(Sys)]),
                     lists:sort([{Mode, F} || {Mode, F, _} <- Got]))
    after
        exit(H, kill)
    end,
    ?assertEqual(Before, riarc_trace_pattern:installed()).

modes() ->
    [{run, B, A} || B <- [route, evm], A <- [isolated, inline]]
        ++ [central]
        ++ [{check, F} || F <- [binary, text]]
        ++ [{record, S} || S <- [receiver, sender]]
        ++ [inline].

%% The modes as the results come: a recording with its replay.
modes_run() ->
    lists:append([case M of
                      {record, S} -> [M, {replay, S}];
                      _ -> [M]
                  end || M <- modes()]).

funs(outsider_after_look) -> [outsider_after_look, quiet];
funs(Sys) -> [Sys].

%% The child ended accepted before the change, and riarc looked since.
expected(_, quiet) -> accept;
expected(inline, _) -> reject;
expected(_, _) -> error.

spec(_MFA) ->
    {ok, fun M({recv, _, {error, _}}) -> reject; M({exit, _, normal}) -> accept; M(_) -> M end}.

%% The entries of the system's processes in each mode the run gives (a recording comes
%% with its replay), by the function each started with.
verdicts(Mode = {run, Backend, Analysis}, MFA) ->
    {ok, R} = riarc:run(MFA, fun spec/1, #{backend => Backend, analysis => Analysis, timeout => ?RUN_MS}),
    entries(Mode, R);
verdicts(central, MFA) ->
    {ok, R} = riarc_central:run(MFA, fun spec/1, #{timeout => ?RUN_MS}),
    entries(central, R);
verdicts(Mode = {check, Format}, MFA) ->
    File = file(Mode),
    {ok, _} = riarc_offline:record(MFA, File, #{format => Format, timeout => ?RUN_MS}),
    {ok, R} = riarc_offline:check(File, fun spec/1, #{timeout => ?RUN_MS}),
    entries(Mode, R);
verdicts(Mode = {record, Strategy}, MFA) ->
    File = file(Mode),
    Opts = #{strategy => Strategy, modules => [?SYS], monitor => fun spec/1, timeout => ?RUN_MS},
    {ok, #{monitoring := Rec}} = riarc_replay:record(MFA, File, Opts),
    %% The outsider, outside the run, answers the replayed run too, after riarc's looks
    %% (seconds, where the watchdog's default stall is one): it is waited for.
    {ok, #{monitoring := Rep}} = riarc_replay:replay(File, #{monitor => fun spec/1, timeout => ?RUN_MS,
                                                             stall => ?RUN_MS}),
    entries(Mode, Rec) ++ entries({replay, Strategy}, Rep);
verdicts(inline, MFA) ->
    %% Inline monitoring holds no patterns, so nothing puts back what the outsider
    %% changed on the node: the test does.
    #{'receive' := Receive} = riarc_trace_pattern:installed(),
    ok = riarc_inline:instrument([?SYS]),
    try riarc_inline:run(MFA, fun spec/1, #{timeout => ?RUN_MS}) of
        {ok, R} -> entries(inline, R)
    after
        ok = riarc_inline:restore([?SYS]),
        _ = apply(erlang, trace_pattern, ['receive', Receive, []])
    end.

%% The entries of the system's processes, in the order started; the run's exit status
%% says it was not all accepted (the mode named, with the verdicts, if not).
entries(Mode, R = #{verdicts := Vs}) ->
    ?assertEqual({Mode, 1}, {Mode, riarc_result:status(R)}, Vs),
    [{Mode, F, E} || E = #{mfa := {?SYS, F, _}} <- Vs].

file(Mode) ->
    Dir = riarc_test_tmp:dir("riarc_outsider_modes"),
    filename:join(Dir, lists:flatten(io_lib:format("~p", [Mode]))).
