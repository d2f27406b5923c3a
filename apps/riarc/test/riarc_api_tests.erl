%% The API for long-running systems (start/verdicts/stop) and incomplete traces.
-module(riarc_api_tests).

-include_lib("eunit/include/eunit.hrl").

-export([service/0, family/1, member/0, analyse/2, explain/2, flood/1, family_exit/1, gated/0, kid/1]).

%% A service that runs until told to stop, answering pings.
service() ->
    receive
        {ping, From} -> From ! pong, service();
        stop -> ok
    end.

%% A generous timeout: run first in a VM, this test starts the riarc application and loads
%% its modules, which under `rebar3 eunit' on a loaded machine took 1.6 to 5.7 s (the
%% loader reading files), over EUnit's default 5 s.
start_verdicts_stop_test_() ->
    {timeout, 60, fun start_verdicts_stop/0}.

start_verdicts_stop() ->
    Test = self(),
    %% Tagged: this test process runs other modules' tests too.
    Tag = make_ref(),
    Spec = fun({?MODULE, service, []}) ->
                   {ok, fun M(E = {recv, _, {ping, _}}) -> Test ! {Tag, E}, reject; M(_) -> M end};
              (_) -> undefined
           end,
    {ok, S} = riarc:start({?MODULE, service, []}, Spec, #{log => false}),
    #{processes := [Root]} = riarc:alive(S),
    ?assert(is_list(riarc:verdicts(S))),
    Root ! {ping, self()},
    receive pong -> ok end,
    receive {Tag, _} -> ok end,
    {ok, #{verdicts := [#{pid := Root, verdict := reject, events := 2}]}} = riarc:stop(S),
    %% Monitoring stopped; the service did not.
    ?assert(is_process_alive(Root)),
    ?assertEqual({tracer, []}, erlang:trace_info(Root, tracer)),
    Root ! stop.

%% A Spec that monitors nothing is not a silent success: the result says so.
nothing_monitored_test() ->
    Spec = fun(_) -> undefined end,
    {ok, R} = riarc:run({riarc_demo_pqr, p, []}, Spec, #{}),
    ?assertEqual([], maps:get(verdicts, R)),
    ?assertEqual([{no_process_monitored, Spec}], maps:get(warnings, R)),
    ?assertEqual("no process was monitored: the Spec gave none of the system's processes a monitor",
                 riarc_result:format_warning(hd(maps:get(warnings, R)))).

%% stop/1 at any point of a growing system: a tracer announced after the stop (started by
%% a tracer that had not taken the stop yet) is stopped too, so stop/1 returns. Before
%% that was handled, about one stop in a few hundred waited for ever (found by the doc
%% tests of riarc_session); each stop here must return, whenever it lands.
stop_while_growing_test_() ->
    {timeout, 120, fun() ->
        Spec = fun(_) -> {ok, fun M({exit, _, normal}) -> accept; M(_) -> M end} end,
        [begin
             {ok, S} = riarc:start({riarc_demo_pqr, p, []}, Spec, #{}),
             ?assertMatch({ok, #{verdicts := _}}, riarc:stop(S))
         end || _ <- lists:seq(1, 300)]
    end}.

%% A process some of whose events a tracer could not deliver (reported when that tracer
%% ends) gets the verdict error, whatever its monitor said on the partial trace.
incomplete_trace_test() ->
    Spec = fun(_) -> {ok, fun(_) -> accept end} end,
    {ok, S} = riarc:start({?MODULE, service, []}, Spec, #{log => false}),
    #{processes := [Root]} = riarc:alive(S),
    %% Forged (without the session's token): refused, and counted.
    S ! {riarc_incomplete, self(), #{Root => [{recv, Root, forged}]}},
    S ! {riarc_s, make_ref(), {riarc_incomplete, self(), #{Root => [{recv, Root, forged}]}}},
    %% As a tracer says it.
    S ! {riarc_s, riarc_session:token(S), {riarc_incomplete, self(), #{Root => [{recv, Root, lost}]}}},
    {ok, #{verdicts := [V], errors := Errors}} = riarc:stop(S),
    ?assertMatch(#{pid := Root, verdict := error,
                   reason := {incomplete_trace, #{lost_events := 1, verdict_on_partial_trace := accept}}}, V),
    ?assertEqual([{riarc_session, {forged_messages, 2}}], Errors),
    Root ! stop.

%% A tracer's answer to info/3 (alive/1 asks each tracer so) that comes after info/3
%% stopped waiting (a loaded machine) is dropped, never left in the asker's mailbox (the
%% session's, which had no use for it and crashed on it). The tracer here answers only
%% once told, after the timeout; its exit signal follows its answer, so once the exit is
%% seen, an answer not dropped would be in the mailbox.
late_info_answer_test() ->
    Token = make_ref(),
    Slow = spawn(fun() ->
                         receive {riarc_ctl, From, Ref, {Token, info}} ->
                                 receive answer -> From ! {Ref, #{gamma => #{}}} end
                         end
                 end),
    Mon = monitor(process, Slow),
    ?assertEqual({error, timeout}, riarc_tracer:info(Slow, Token, 10)),
    Slow ! answer,
    receive {'DOWN', Mon, process, Slow, normal} -> ok end,
    ?assertEqual([], [M || {messages, Ms} <- [process_info(self(), messages)], M = {R, _} <- Ms,
                           is_reference(R)]),
    %% In time, the answer is the tracer's state.
    {ok, S} = riarc:start({?MODULE, service, []}, fun(_) -> {ok, fun(_) -> accept end} end,
                          #{log => false}),
    #{processes := [Root]} = riarc:alive(S),
    {ok, _} = riarc:stop(S),
    Root ! stop.

%% A system whose processes another tool traces already (here: every new process, as
%% `dbg:p(new, ...)' does) cannot be traced by riarc: run/3 says so at once, naming the
%% process and the other tracer, with either backend; nothing runs, nothing is left traced.
already_traced_test_() ->
    [{atom_to_list(B), fun() -> already_traced(B) end} || B <- [route, evm]].

already_traced(Backend) ->
    Other = spawn(fun Sink() -> receive _ -> Sink() end end),
    erlang:trace(new_processes, true, [procs, {tracer, Other}]),
    Result = try riarc:run({riarc_demo_pqr, p, []}, fun(_) -> undefined end,
                           #{backend => Backend, log => false, timeout => 5000})
             after erlang:trace(new_processes, false, [all])
             end,
    exit(Other, kill),
    ?assertMatch({error, {_, {already_traced, _, Other}}}, Result),
    {error, Reason} = Result,
    Msg = riarc:format_error(Reason),
    ?assertNotEqual(nomatch, string:find(Msg, "already traced by " ++ pid_to_list(Other))).

%% A root with N children, all waiting until told to stop.
-spec family(pos_integer()) -> ok.
family(N) ->
    Kids = [spawn(?MODULE, member, []) || _ <- lists:seq(1, N)],
    receive stop -> [K ! stop || K <- Kids], ok end.

-spec member() -> ok.
member() -> receive stop -> ok end.

%% A session that ends in any way (killed here) leaves every process it traced untraced:
%% its tracers monitor it, clear what they trace and close the routing table.
killed_session_leaves_nothing_traced_test_() ->
    [{atom_to_list(B), fun() -> killed_session(B) end} || B <- [route, evm]].

killed_session(Backend) ->
    Spec = fun(_) -> {ok, fun M(_) -> M end} end,
    {ok, S} = riarc:start({?MODULE, family, [5]}, Spec, #{log => false, backend => Backend}),
    ?assertEqual([S], [P || {_, P, _, _} <- supervisor:which_children(riarc_session_sup), P =:= S]),
    Procs = wait_alive(S, 6),
    #{tracers := Tracers} = riarc:alive(S),
    Refs = [monitor(process, T) || T <- Tracers],
    exit(S, kill),
    [receive {'DOWN', R, process, _, _} -> ok end || R <- Refs],
    ?assertEqual([{P, {flags, []}} || P <- Procs], [{P, erlang:trace_info(P, flags)} || P <- Procs]),
    [Root | _] = Procs,
    Root ! stop.

%% The system's processes once all six are traced (the root first); each answer of
%% alive/1 comes after the tracers took in what was in their mailboxes.
wait_alive(S, N) ->
    case riarc:alive(S) of
        #{processes := Ps} when length(Ps) =:= N ->
            [Root] = [P || P <- Ps, erlang:process_info(P, initial_call) =/= {initial_call, {?MODULE, member, 0}}],
            [Root | lists:delete(Root, Ps)];
        _ -> erlang:yield(), wait_alive(S, N)
    end.

%% A reject explains itself: the process, its MFA, its last events up to the deciding
%% one, and the state of a {Module, State} monitor.
explanation_test() ->
    Spec = fun({?MODULE, service, []}) -> {ok, {?MODULE, 0}}; (_) -> undefined end,
    {ok, S} = riarc:start({?MODULE, service, []}, Spec, #{log => false, explain => 2}),
    #{processes := [Root]} = riarc:alive(S),
    [begin Root ! {ping, self()}, receive pong -> ok end end || _ <- [1, 2, 3]],
    Root ! stop,
    {ok, #{verdicts := [V]}} = riarc_session:finish(S, 5000),
    ?assertMatch(#{verdict := reject,
                   explanation := #{process := Root, mfa := {?MODULE, service, []},
                                    deciding_event := {recv, Root, {ping, _}},
                                    last_events := [{send, Root, _, pong}, {recv, Root, {ping, _}}],
                                    monitor := #{state := 2, words := <<"a third ping">>}}}, V),
    Text = riarc_result:format_explanation(V),
    ?assertNotEqual(nomatch, string:find(Text, "why: a third ping")).

%% The monitor of explanation_test: rejects the third ping.
-spec analyse(riarc_event:event(), non_neg_integer()) -> {next, non_neg_integer()} | reject.
analyse({recv, _, {ping, _}}, 2) -> reject;
analyse({recv, _, {ping, _}}, N) -> {next, N + 1};
analyse(_, N) -> {next, N}.
-spec explain(riarc_event:event(), non_neg_integer()) -> iodata().
explain(_, 2) -> "a third ping".

%% Overload, policy stop: a monitor too slow for its process fills its tracer's mailbox
%% past the limit; riarc detaches from the whole system and says so. The partition has
%% no verdict: inconclusive, never accept; the exit status is 1. The system runs on.
%% The slow monitor takes about a second (1024 events at 1 ms) before the first look at
%% the mailbox; longer on a loaded machine.
overload_stop_test_() ->
    {timeout, 120, fun overload_stop/0}.

overload_stop() ->
    Slow = fun M(_) -> receive after 1 -> M end end,
    Spec = fun({?MODULE, flood, _}) -> {ok, Slow}; (_) -> undefined end,
    {ok, R = #{verdicts := [V]}} =
        riarc:run({?MODULE, flood, [20000]}, Spec,
                  #{log => false, events => [send, recv], limits => #{max_queue => 2000}}),
    %% The tracer's mailbox, or the monitor's backlog, whichever is seen over first.
    ?assertMatch({Kind, _, _, 2000} when Kind =:= mailbox; Kind =:= analysis, maps:get(overload, R)),
    ?assertMatch(#{verdict := inconclusive, reason := {overload, {_, _, _, 2000}}}, V),
    ?assertEqual(1, riarc_result:status(R)).

%% Too many tracers for the limit: the same policy.
overload_tracers_test_() ->
    {timeout, 120, fun overload_tracers/0}.

overload_tracers() ->
    Spec = fun(_) -> {ok, fun M(_) -> M end} end,
    {ok, R} = riarc:run({?MODULE, family_exit, [50]}, Spec,
                        #{log => false, limits => #{max_tracers => 10}}),
    ?assertMatch({tracers, 11, 10}, maps:get(overload, R)),
    ?assert(lists:any(fun(#{verdict := V}) -> V =:= inconclusive end, maps:get(verdicts, R))),
    ?assertEqual(1, riarc_result:status(R)).

-spec flood(pos_integer()) -> ok.
flood(N) ->
    [self() ! {n, I} || I <- lists:seq(1, N)],
    [receive {n, I} -> ok end || I <- lists:seq(1, N)],
    ok.

-spec family_exit(pos_integer()) -> ok.
family_exit(N) ->
    Kids = [spawn_monitor(fun() -> receive go -> ok end end) || _ <- lists:seq(1, N)],
    [K ! go || {K, _} <- Kids],
    [receive {'DOWN', R, process, _, _} -> ok end || {_, R} <- Kids],
    ok.

-spec status_test() -> ok.
status_test() ->
    E = fun(V) -> #{pid => p, mfa => undefined, verdict => V, events => 0} end,
    ?assertEqual(0, riarc_result:status(riarc_result:make(#{verdicts => [E(accept), E(none)]}))),
    [?assertEqual(1, riarc_result:status(riarc_result:make(#{verdicts => [E(accept), E(V)]})))
     || V <- [reject, error, inconclusive]],
    ?assertEqual(1, riarc_result:status(riarc_result:make(#{errors => [x]}))),
    ?assertEqual(1, riarc_result:status(riarc_result:make(#{violations => [x]}))),
    ok.

%% A system whose root crashes at start is not a silent empty result: the result names
%% the root and its exit reason.
root_crash_test() ->
    {ok, R} = riarc:run({lists, seq, [1, notanumber]}, fun(_) -> undefined end, #{}),
    ?assertMatch([#{mfa := {lists, seq, [1, notanumber]}, reason := {function_clause, _}}],
                 maps:get(root_exits, R)),
    {ok, R2} = riarc:run({riarc_demo_pqr, p, []}, fun(_) -> undefined end, #{}),
    ?assertEqual([], maps:get(root_exits, R2)).

%% The session's verdict stream (riarc_session:subscribe/3, what a remote session's proxy
%% hears): every verdict as it is reached, every later change to one, and the last entry
%% streamed for a process is the one the result lists.
subscribe_test_() ->
    {timeout, 60, fun subscribe/0}.

subscribe() ->
    Spec = fun({?MODULE, kid, [exit]}) -> {ok, fun M({exit, _, normal}) -> accept; M(_) -> M end};
              ({?MODULE, kid, [wait]}) -> {ok, fun M(_) -> M end};
              (_) -> undefined
           end,
    {ok, S} = riarc:start({?MODULE, gated, []}, Spec, #{log => false, limits => #{max_tracers => 10}}),
    #{processes := [Root]} = riarc:alive(S),
    Tag = make_ref(),
    ?assertEqual([], riarc_session:subscribe(S, self(), Tag)),
    %% Six verdicts, each streamed as it is reached: nothing else asks for them.
    _ = kids(Root, 6, exit),
    Accepted = [receive {riarc_session_verdict, Tag, E = #{verdict := accept}} -> E
                after 10000 -> error({no_verdict_streamed, #{expected => accept, nth => I, out_of => 6}})
                end
                || I <- lists:seq(1, 6)],
    %% Three partitions whose monitors decide nothing: their entries say none once their
    %% processes have exited, and are streamed so.
    Waiting = lists:sort(kids(Root, 3, wait)),
    _ = [K ! stop || K <- Waiting],
    None = [receive {riarc_session_verdict, Tag, E = #{verdict := none}} -> E
            after 10000 -> error({no_verdict_streamed, #{expected => none, nth => I, among => Waiting}})
            end
            || I <- lists:seq(1, length(Waiting))],
    ?assertEqual(Waiting, lists:sort([P || #{pid := P} <- None])),
    %% Past max_tracers, the overload policy cuts the run short: the three entries that
    %% said none now say inconclusive, and the stream says so.
    _ = kids(Root, 12, wait),
    Cut = [receive {riarc_session_verdict, Tag, E = #{pid := P, verdict := inconclusive}} -> E
           after 10000 -> error({no_verdict_streamed, #{expected => inconclusive, pid => P}})
           end
           || P <- Waiting],
    {ok, R} = riarc:stop(S),
    Root ! stop,
    Streamed = drain(Tag, maps:from_list([{P, E} || E = #{pid := P} <- Accepted ++ None ++ Cut])),
    ?assertMatch({tracers, _, 10}, maps:get(overload, R)),
    ?assertEqual(maps:from_list([{P, E} || E = #{pid := P} <- maps:get(verdicts, R)]), Streamed).

%% The gated root starts N kids; their pids.
kids(Root, N, Life) ->
    Root ! {spawn, N, Life, self()},
    receive {kids, Root, Kids} -> Kids
    after 10000 -> error({no_kids_started, #{root => Root, expected => N, life => Life}})
    end.

%% What the stream has said since, the last entry per process.
drain(Tag, Acc) ->
    receive {riarc_session_verdict, Tag, E = #{pid := P}} -> drain(Tag, Acc#{P => E})
    after 0 -> Acc
    end.

%% A root that starts kids when told (to exit at once, or to wait for stop).
-spec gated() -> ok.
gated() -> gated([]).

gated(Kids) ->
    receive
        {spawn, N, Life, From} ->
            New = [spawn(?MODULE, kid, [Life]) || _ <- lists:seq(1, N)],
            From ! {kids, self(), New},
            gated(New ++ Kids);
        stop -> _ = [K ! stop || K <- Kids], ok
    end.

-spec kid(exit | wait) -> ok.
kid(exit) -> ok;
kid(wait) -> receive stop -> ok end.

%% finish/2 gives the run's result once and ends the session without building it again
%% (release); the session ends; only its owner may release it (anyone else's attempt is
%% refused and counted as forged).
finish_releases_test() ->
    Spec = fun({?MODULE, flood, _}) -> {ok, fun M({exit, _, normal}) -> accept; M(_) -> M end};
              (_) -> undefined end,
    {ok, S} = riarc:start({?MODULE, flood, [10]}, Spec, #{}),
    Self = self(),
    _ = spawn(fun() -> Self ! {other, catch gen_server:call(S, release)} end),
    ?assertEqual({error, {riarc_session, not_owner}}, receive {other, R} -> R end),
    Ref = monitor(process, S),
    {ok, #{verdicts := [#{verdict := accept}], errors := Errors}} = riarc_session:finish(S, 30000),
    ?assertMatch([{riarc_session, {forged_messages, 1}}], Errors),
    receive {'DOWN', Ref, process, S, Why} -> ?assertEqual(normal, Why) end.

%% The result's count of analysed events is each monitor's count once, wherever the
%% monitors ran: in an analysis process of their own, in their tracer, or in a tracer
%% that adopted their partition (it was twice the events for the last two, where the
%% tracer's statistics counted them as well as the verdicts). Monitors that never decide
%% take every event of their partitions: p's 4, q's 4 and r's 2 (riarc_demo_pqr).
analysed_counted_once_test_() ->
    {timeout, 60, fun analysed_counted_once/0}.

analysed_counted_once() ->
    Spec = fun(_) -> {ok, fun M(_) -> M end} end,
    Placements = [#{analysis => isolated}, #{analysis => inline, adopt => 0}, #{analysis => inline}],
    [begin
         {ok, R = #{verdicts := Vs}} = riarc:run({riarc_demo_pqr, p, []}, Spec, Opts),
         ?assertEqual({Opts, [4, 4, 2]}, {Opts, [N || #{events := N} <- Vs]}),
         ?assertEqual({Opts, 10}, {Opts, maps:get(analysed, R)})
     end || Opts <- Placements].
