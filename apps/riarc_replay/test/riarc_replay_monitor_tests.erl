%% @doc The stock system's lost update (riarc_replay_stock, issue 28 item 4) under its
%% property (riarc_replay_stock.prop) in the three modes: a plain monitored run, a
%% recording hunted until the monitors reject, and a replay of that recording under the
%% same property; each must reject, with status 1. Also the trace patterns of a woven run
%% (riarc_replay_monitor:trace_patterns/1). Every wait is bounded (EUnit timeouts,
%% riarc_replay's timeout).
%% ```
%% $ rebar3 eunit --module=riarc_replay_monitor_tests
%% '''
-module(riarc_replay_monitor_tests).

-include_lib("eunit/include/eunit.hrl").

-define(S, riarc_replay_stock).
-define(MFA, {?S, main, [1000, 4, 25]}).
%% Recordings to try before giving up: the woven run loses updates in most recordings.
-define(TRIES, 10).

dir(Name) ->
    Dir = filename:join(["/tmp", "riarc_replay_monitor_tests_" ++ os:getpid(), Name]),
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    Dir.

%% The property file sits next to the test module's source.
prop_file() ->
    Src = proplists:get_value(source, ?S:module_info(compile)),
    filename:join(filename:dirname(Src), "riarc_replay_stock.prop").

%% The property compiled to a directory on the code path: the peer node of an `otp'
%% run gets this VM's code path, and loads the Spec module from there.
with_prop(Fun) ->
    Dir = dir("props"),
    {ok, Beam} = riarc_shml:compile_file(prop_file(), Dir),
    Mod = list_to_atom(filename:basename(Beam, ".beam")),
    true = code:add_patha(Dir),
    {module, Mod} = code:ensure_loaded(Mod),
    try Fun(Mod)
    after
        code:del_path(Dir)
    end.

%%% The three modes ------------------------------------------------------------------------

%% A run (this VM, nothing woven), a recording kept when the monitors reject it, and a
%% replay of it: a reject and status 1 in each. Before the trace patterns were made to
%% select wrapped messages, the recordings and the replay accepted every lost update.
three_modes_test_() ->
    {timeout, 180, fun three_modes/0}.

three_modes() ->
    with_prop(fun(Mod) ->
        {ok, Run} = riarc:run(?MFA, Mod, #{timeout => 30000}),
        ?assertEqual({run, 1}, {run, riarc_result:status(Run)}),
        ?assert(riarc_replay_monitor:rejected(Run)),
        File = filename:join(dir("rr"), "stock.rr"),
        Opts = #{otp => true, monitor => Mod, timeout => 30000},
        {K, #{result := Rec, monitoring := RecMon}} = hunt(File, Opts, 1),
        ?debugFmt("recording ~b of ~b rejected: ~0p", [K, ?TRIES, Rec]),
        ?assertEqual({record, 1}, {record, riarc_result:status(RecMon)}),
        ?assert(?S:lost(Rec) > 0),
        {ok, #{result := Rep, monitoring := RepMon}} = riarc_replay:replay(File, Opts),
        ?assertEqual(Rec, Rep),
        ?assertEqual({replay, 1}, {replay, riarc_result:status(RepMon)}),
        ?assertEqual(stock_verdicts(RecMon), stock_verdicts(RepMon)),
        ?assertEqual([reject], stock_verdicts(RepMon))
    end).

hunt(File, Opts, K) when K =< ?TRIES ->
    {ok, Info = #{monitoring := Mon}} = riarc_replay:record(?MFA, File, Opts),
    case riarc_replay_monitor:rejected(Mon) of
        true -> {K, Info};
        false -> hunt(File, Opts, K + 1)
    end;
hunt(_File, _Opts, K) ->
    error({no_reject_in, K - 1}).

stock_verdicts(#{verdicts := Vs}) ->
    [V || #{mfa := {?S, init, _}, verdict := V} <- Vs].

%%% The runtime's own questions -----------------------------------------------------------

%% A crash and an exit/2 that end processes waiting in a receive, monitored as run and
%% as recorded with either strategy: the monitors of the crashing worker and of the
%% killer reject any receive the program does not make, and accept in every mode. When
%% the recording's runtime asked the VM about the processes an exit ends (their links,
%% trap_exit, pending events) from the ending process itself, the VM's answers showed as
%% receives of that process, and the record modes rejected.
exit_questions_test_() ->
    {timeout, 120, fun exit_questions/0}.

exit_questions() ->
    MFA = {riarc_replay_progs, crash_links, []},
    Opts = #{modules => [riarc_replay_progs], monitor => fun only_program_receives/1, timeout => 30000},
    {ok, Run} = riarc:run(MFA, fun only_program_receives/1, #{timeout => 30000}),
    Recorded = [{S, riarc_replay:record(MFA, filename:join(dir("questions"), atom_to_list(S) ++ ".rr"),
                                        Opts#{strategy => S})}
                || S <- [receiver, sender]],
    Want = [{crash_worker, accept}, {killer, accept}],
    ?assertEqual({run, Want, 0}, {run, verdicts(Run), riarc_result:status(Run)}),
    _ = [begin
             {ok, #{result := crashed, monitoring := Mon}} = Rec,
             ?assertEqual({S, Want, 0}, {S, verdicts(Mon), riarc_result:status(Mon)})
         end || {S, Rec} <- Recorded].

only_program_receives({riarc_replay_progs, crash_worker, []}) ->
    {ok, receives(fun(_) -> false end)};
only_program_receives({riarc_replay_progs, killer, [_]}) ->
    {ok, receives(fun({linked, P}) -> is_pid(P); (_) -> false end)};
only_program_receives(_) ->
    undefined.

receives(Made) ->
    fun M({recv, _, Msg}) ->
            case Made(Msg) of
                true -> M;
                false -> reject
            end;
        M({exit, _, _}) -> accept;
        M(_) -> M
    end.

verdicts(#{verdicts := Vs}) ->
    lists:sort([{F, V} || #{mfa := {riarc_replay_progs, F, _}, verdict := V} <- Vs]).

%%% Trace patterns of a woven run ---------------------------------------------------------

%% The property's patterns, made for the woven run, keep a store however it is wrapped,
%% and still keep it plain; what the property's patterns drop stays dropped.
trace_patterns_test() ->
    with_prop(fun(Mod) ->
        #{'receive' := R, send := S} = riarc_replay_monitor:trace_patterns(Mod:trace_patterns()),
        ?assertEqual(false, S),
        Store = {'$gen_cast', {store, 7}},
        [?assert(kept(R, [node(), self(), M])) || M <- [Store, {'$riarc_rr', (3 bsl 40) bor 12, Store}, {'$riarc_rv', 4, Store}]],
        [?assertNot(kept(R, [node(), self(), M]))
         || M <- [{'$gen_cast', other}, {'$riarc_rr', (3 bsl 40) bor 12, {'$gen_cast', other}}, {'$riarc_rv', 4, read}]]
    end).

%% Whatever a plain pattern keeps, its woven form keeps wrapped either way; guards on the
%% message's variables carry over; a clause it cannot read traces every message.
trace_patterns_guards_test() ->
    MS = [{['_', {n, '$1'}], [{is_integer, '$1'}], []}],
    #{send := W} = riarc_replay_monitor:trace_patterns(#{send => MS}),
    [?assertEqual({M, kept(MS, [x, M])}, {M, kept(W, [x, M])}) || M <- [{n, 1}, {n, a}, n]],
    [?assertEqual({M, kept(MS, [x, M])}, {M, kept(W, [x, Wr])})
     || M <- [{n, 1}, {n, a}, n], Wr <- [{'$riarc_rr', (1 bsl 40) bor 2, M}, {'$riarc_rv', 1, M}]],
    %% No receive at all but the runtime's timeout marks, which stand for timeouts.
    ?assertEqual(#{send => true, 'receive' => [{['_', '_', '$riarc_rr_timed_out'], [], []}]},
                 riarc_replay_monitor:trace_patterns(#{send => [{'_', [], []}], 'receive' => false})),
    ?assertEqual(#{'receive' => true},
                 riarc_replay_monitor:trace_patterns(#{'receive' => [{['_', '_', '$1'], [{is_tuple, '$_'}], []}]})),
    ?assertEqual(#{}, riarc_replay_monitor:trace_patterns(#{})).

kept(MS, Input) ->
    {ok, Kept, _, _} = erlang:match_spec_test(Input, MS, trace),
    Kept.
