%% @doc One case through every mode: a process outside the system changes how the VM
%% traces it (riarc_demo_untracer: the node's receive pattern turned off, or the process's
%% send and receive flags taken), after which the process takes the message its monitor
%% forbids and ends, its exit traced, before any look could find the change. No mode may
%% accept: every mode that reads the VM's trace says its view was cut (error), whether
%% it runs live (both backends, both placements of the monitor), centralised, as a check
%% of a recording (both formats), or records and replays a run (both strategies); inline
%% monitoring, which reads no trace, sees the message and rejects.
%% ```
%% $ rebar3 eunit --module=riarc_outsider_modes_tests
%% '''
-module(riarc_outsider_modes_tests).

-include_lib("eunit/include/eunit.hrl").

-define(SYS, riarc_demo_untracer).
-define(RUN_MS, 30000).

every_mode_test_() ->
    [{atom_to_list(Sys), {timeout, 300, fun() -> every_mode(Sys) end}}
     || Sys <- [outsider_patterns, outsider_ends]].

every_mode(Sys) ->
    Before = riarc_trace_pattern:installed(),
    %% Started before every run: no mode traces it.
    H = riarc_demo_outsider:start(),
    try
        MFA = {?SYS, Sys, [H]},
        Got = lists:append([verdicts(Mode, MFA) || Mode <- modes()]),
        Want = [{Mode, expected(Mode)} || {Mode, _} <- Got],
        ?assertEqual(Want, [{Mode, V} || {Mode, #{verdict := V}} <- Got]),
        [?assertMatch({_, #{reason := {cut, #{call := {patterns_changed, _}}}}}, G)
         || G = {Mode, _} <- Got, expected(Mode) =:= error]
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

expected(inline) -> reject;
expected(_) -> error.

spec(_MFA) ->
    {ok, fun M({recv, _, {error, _}}) -> reject; M({exit, _, normal}) -> accept; M(_) -> M end}.

%% The system's one process's entry in each mode the run gives (a recording comes with
%% its replay).
verdicts(Mode = {run, Backend, Analysis}, MFA) ->
    {ok, R} = riarc:run(MFA, fun spec/1, #{backend => Backend, analysis => Analysis, timeout => ?RUN_MS}),
    [{Mode, only(R)}];
verdicts(central, MFA) ->
    {ok, R} = riarc_central:run(MFA, fun spec/1, #{timeout => ?RUN_MS}),
    [{central, only(R)}];
verdicts(Mode = {check, Format}, MFA) ->
    File = file(Mode),
    {ok, _} = riarc_offline:record(MFA, File, #{format => Format, timeout => ?RUN_MS}),
    {ok, R} = riarc_offline:check(File, fun spec/1, #{timeout => ?RUN_MS}),
    [{Mode, only(R)}];
verdicts(Mode = {record, Strategy}, MFA) ->
    File = file(Mode),
    Opts = #{strategy => Strategy, modules => [?SYS], monitor => fun spec/1, timeout => ?RUN_MS},
    {ok, #{monitoring := Rec}} = riarc_replay:record(MFA, File, Opts),
    {ok, #{monitoring := Rep}} = riarc_replay:replay(File, #{monitor => fun spec/1, timeout => ?RUN_MS}),
    [{Mode, only(Rec)}, {{replay, Strategy}, only(Rep)}];
verdicts(inline, MFA) ->
    %% Inline monitoring holds no patterns, so nothing puts back what the outsider
    %% changed on the node: the test does.
    #{'receive' := Receive} = riarc_trace_pattern:installed(),
    ok = riarc_inline:instrument([?SYS]),
    try riarc_inline:run(MFA, fun spec/1, #{timeout => ?RUN_MS}) of
        {ok, R} -> [{inline, only(R)}]
    after
        ok = riarc_inline:restore([?SYS]),
        _ = apply(erlang, trace_pattern, ['receive', Receive, []])
    end.

%% The entry of the system's process, the run's exit status agreeing with it.
only(R = #{verdicts := Vs}) ->
    [E] = [E || E = #{mfa := {?SYS, _, _}} <- Vs],
    ?assertEqual(1, riarc_result:status(R)),
    E.

file(Mode) ->
    Dir = riarc_test_tmp:dir("riarc_outsider_modes"),
    filename:join(Dir, lists:flatten(io_lib:format("~p", [Mode]))).
