%% The offline engine (App. B.1 reordering, Examples 7-9), check/3 over trace files,
%% record/3 (bounded memory, payloads) and the online/offline round trip.
-module(riarc_offline_tests).

-include_lib("eunit/include/eunit.hrl").

%% Entry points of the systems recorded here.
-export([flood/1, sink/1, timeouts/0, timeout_child/0]).
%% Shared with riarc_trace_reader_tests (the formats-agree test).
-export([dbg_record/1]).

-define(M, riarc_demo_pqr).

%%% ---------------------------------------------------------------------------
%%% App. B.1: the engine alone
%%% ---------------------------------------------------------------------------

%% Example 7: Q's events are read before P's spawn of Q; they wait for it.
example7_test() ->
    In = [{recv, q, req}, {spawn, q, r, {?M, r, []}}, {spawn, p, q, {?M, q, []}},
          {send, p, q, req}],
    {Out, Summary} = riarc_backend_log:replay(In, [p]),
    ?assertEqual([{spawn, p, q, {?M, q, []}}, {recv, q, req}, {spawn, q, r, {?M, r, []}},
                  {send, p, q, req}], Out),
    ?assertMatch(#{read := 4, delivered := 4, held := 0}, Summary).

%% Example 8: other interleavings, grandchildren's events before both spawns included.
example8_test() ->
    In = [{recv, q, req}, {spawn, p, q, {?M, q, []}}, {spawn, q, r, {?M, r, []}},
          {send, p, q, req}],
    ?assertEqual([{spawn, p, q, {?M, q, []}}, {recv, q, req}, {spawn, q, r, {?M, r, []}},
                  {send, p, q, req}], element(1, riarc_backend_log:replay(In, [p]))),
    In2 = [{init, r, q, {?M, r, []}}, {exit, r, normal}, {recv, q, req},
           {spawn, q, r, {?M, r, []}}, {spawn, p, q, {?M, q, []}}],
    ?assertEqual([{spawn, p, q, {?M, q, []}}, {recv, q, req}, {spawn, q, r, {?M, r, []}},
                  {init, r, q, {?M, r, []}}, {exit, r, normal}],
                 element(1, riarc_backend_log:replay(In2, [p]))).

%% Example 9: a consistent input is delivered unchanged.
example9_test() ->
    In = [{spawn, p, q, {?M, q, []}}, {recv, q, req}, {send, p, q, req},
          {spawn, q, r, {?M, r, []}}],
    ?assertEqual({In, 4}, {element(1, riarc_backend_log:replay(In, [p])), 4}).

%% A3: TRACE of a process already traced by another tracer is refused.
one_tracer_per_process_test() ->
    {ok, E} = riarc_backend_log:start(#{source => {events, []}, roots => [a, b]}),
    B = riarc_backend_log:backend(E),
    Other = spawn(fun() -> receive stop -> ok end end),
    ok = riarc_backend:launch(B, a, self()),
    ok = riarc_backend:trace(B, a, Other),
    ok = riarc_backend:launch(B, b, self()),
    {ok, #{conflicts := 1}} = riarc_backend_log:await(E, 5000),
    Other ! stop,
    riarc_backend_log:stop(E).

%%% ---------------------------------------------------------------------------
%%% check/3
%%% ---------------------------------------------------------------------------

pqr_text() ->
    "% P/Q/R of fig. 2a, Q's and R's events written before P's spawn of Q\n"
    "{recv, q, req}.\n{init, r, q, {riarc_demo_pqr, r, []}}.\n"
    "{init, p, undefined, {riarc_demo_pqr, p, []}}.\n{spawn, p, q, {riarc_demo_pqr, q, []}}.\n"
    "{send, p, q, req}.\n{exit, r, normal}.\n{exit, p, normal}.\n".

%% Q's own init/spawn/exit are left out on purpose: Q's trace is what the file says.
check_text_test() ->
    File = tmp("pqr.txt"),
    ok = file:write_file(File, pqr_text() ++ "{init, q, p, {riarc_demo_pqr, q, []}}.\n"
                         "{spawn, q, r, {riarc_demo_pqr, r, []}}.\n{exit, q, normal}.\n"),
    Spec = fun(_) -> {ok, fun M({exit, _, normal}) -> accept; M(_) -> M end} end,
    {ok, R} = riarc_offline:check(File, Spec, #{}),
    ?assertEqual([{p, accept}, {q, accept}, {r, accept}],
                 lists:sort([{P, V} || #{pid := P, verdict := V} <- maps:get(verdicts, R)])),
    ?assertMatch(#{violations := [], errors := [], tracers := #{spawned := 3},
                   trace := #{format := text, events := 10, held := 0}}, R).

%% A process no spawn creates is a root: asked with the MFA of its init event, or with
%% undefined when it has none.
roots_test() ->
    Self = self(),
    Spec = fun(MFA) -> Self ! {asked, MFA}, {ok, fun M(_) -> M end} end,
    Events = [{init, a, nobody, {m, a, []}}, {send, a, b, hi}, {recv, b, hi},
              {exit, a, normal}, {exit, b, normal}],
    {ok, R} = riarc_offline:check({events, Events}, Spec, #{}),
    ?assertEqual(lists:sort([{m, a, []}, undefined]), lists:sort(asked())),
    ?assertEqual([{a, {m, a, []}, 3}, {b, undefined, 2}],
                 lists:sort([{P, MFA, N} || #{pid := P, mfa := MFA, events := N} <- maps:get(verdicts, R)])).

asked() ->
    receive {asked, MFA} -> [MFA | asked()] after 0 -> [] end.

%% A recording that ends before its processes do: the check still ends, with verdicts
%% as the partitions stand; b, spawned but with no event of its own, is an error.
open_processes_test() ->
    Spec = fun(_) -> {ok, fun M(_) -> M end} end,
    Events = [{init, a, x, {m, a, []}}, {spawn, a, b, {m, b, []}}, {send, a, b, go}],
    {ok, R} = riarc_offline:check({events, Events}, Spec, #{timeout => 5000}),
    ?assertEqual([{a, none, 3}, {b, error, 0}],
                 lists:sort([{P, V, N} || #{pid := P, verdict := V, events := N} <- maps:get(verdicts, R)])),
    ?assertMatch([#{reason := {no_events, a}}], [V || V = #{pid := b} <- maps:get(verdicts, R)]).

empty_and_errors_test() ->
    Empty = tmp("empty.txt"),
    ok = file:write_file(Empty, ""),
    Spec = fun(_) -> undefined end,
    ?assertMatch({ok, #{verdicts := [], events := 0}}, riarc_offline:check(Empty, Spec, #{})),
    ?assertMatch({error, {riarc_trace_file, {open, _, enoent}}}, riarc_offline:check(tmp("nope"), Spec, #{})),
    ?assertMatch({error, {bad_spec, 42}}, riarc_offline:check(Empty, 42, #{})),
    Bad = tmp("bad.txt"),
    ok = file:write_file(Bad, "{exit, a, normal}.\n{hello}.\n"),
    {error, Why} = riarc_offline:check(Bad, Spec, #{}),
    ?assertMatch({riarc_trace_file, {not_an_event, _, {line, 2}, {hello}}}, Why),
    ?assertMatch("/" ++ _, riarc_offline:format_error(Why)).

%%% ---------------------------------------------------------------------------
%%% record/3 and the round trip
%%% ---------------------------------------------------------------------------

%% Monitors that report every event, and a Spec giving every process one.
collecting_spec(To) ->
    fun(MFA) -> {ok, fun M(Ev) -> To ! {ev, MFA, Ev}, M end} end.

collected() ->
    receive {ev, MFA, Ev} -> [{MFA, Ev} | collected()] after 0 -> [] end.

%% Pids differ between two runs: name each process by its MFA.
normalise(Pairs) ->
    Names = maps:from_list([{C, MFA} || {_, {init, C, _, MFA}} <- Pairs]),
    N = fun(P) -> maps:get(P, Names, other) end,
    lists:sort([{MFA, [norm_event(E, N) || {M2, E} <- Pairs, M2 =:= MFA]}
                || MFA <- lists:usort([M || {M, _} <- Pairs])]).

norm_event({init, C, _P, MFA}, N) -> {init, N(C), MFA};
norm_event({spawn, P, C, MFA}, N) -> {spawn, N(P), N(C), MFA};
norm_event({exit, P, R}, N) -> {exit, N(P), R};
norm_event({send, F, T, Msg}, N) -> {send, N(F), N(T), Msg};
norm_event({recv, P, Msg}, N) -> {recv, N(P), Msg};
norm_event({timeout, P}, N) -> {timeout, N(P)}.

verdicts(R) -> lists:sort([{MFA, V, Ev} || #{mfa := MFA, verdict := V, events := Ev} <- maps:get(verdicts, R)]).

round_trip_test() ->
    Spec = collecting_spec(self()),
    MFA = {?M, p, []},
    {ok, Online} = riarc:run(MFA, Spec, #{log => false}),
    OnlineEvents = normalise(collected()),
    File = tmp("pqr.rtrc"),
    {ok, #{events := 10}} = riarc_offline:record(MFA, File, #{}),
    {ok, Offline} = riarc_offline:check(File, Spec, #{}),
    OfflineEvents = normalise(collected()),
    ?assertEqual(OnlineEvents, OfflineEvents),
    ?assertEqual(verdicts(Online), verdicts(Offline)),
    ?assertEqual([init, spawn, send, exit],
                 [element(1, E) || E <- proplists:get_value({?M, p, []}, OfflineEvents)]).

record_without_payloads_test() ->
    File = tmp("nopay.rtrc"),
    {ok, _} = riarc_offline:record({?M, p, []}, File, #{payloads => false}),
    {ok, Es, #{payloads := false}} = riarc_trace_file:read_all(File),
    ?assertEqual([riarc_omitted, riarc_omitted],
                 [M || {send, _, _, M} <- Es] ++ [M || {recv, _, M} <- Es]).

record_text_test() ->
    File = tmp("pqr_rec.txt"),
    {ok, _} = riarc_offline:record({?M, p, []}, File, #{format => text}),
    {ok, Terms} = file:consult(File),
    ?assertEqual(10, length(Terms)).

record_errors_test() ->
    ?assertMatch({error, {undef, {nomod, f, 0}}}, riarc_offline:record({nomod, f, []}, tmp("x"), #{})),
    ?assertMatch({error, {bad_mfa, _}}, riarc_offline:record(bad, tmp("x"), #{})),
    ?assertMatch({error, {riarc_trace_file, {write, _, _}}},
                 riarc_offline:record({?M, p, []}, "/nonexistent/dir/f", #{})).

%%% ---------------------------------------------------------------------------
%%% Receive timeouts (issue 28): one event, {timeout, P}, online and in every format
%%% ---------------------------------------------------------------------------

%% A receive timeout in both processes, then the message `timeout' sent by the parent:
%% a receive, not a timeout. The parent sends it once the child has timed out: its
%% arrival is then never before the child's timeout, whatever the load (it was after a
%% wait of 20 ms, which a loaded machine outran).
%% (Pids differ from run to run, and the tests compare runs' events: the child tells the
%% parent by its registered name, with a message that names no process.)
timeouts() ->
    true = register(riarc_offline_tests_timeouts, self()),
    receive never -> ok after 0 -> ok end,
    C = spawn(?MODULE, timeout_child, []),
    receive timed_out -> ok end,
    true = unregister(riarc_offline_tests_timeouts),
    C ! timeout,
    ok.

timeout_child() ->
    receive never -> ok after 5 -> ok end,
    riarc_offline_tests_timeouts ! timed_out,
    receive timeout -> ok end.

%% `[W ?? timeout] ff' as riarc_shml compiles it, for the system's two processes.
timeout_prop() ->
    Text = "with riarc_offline_tests:timeouts() monitor [W <- _, riarc_offline_tests:timeouts()] [W ?? timeout] ff,\n"
           "with riarc_offline_tests:timeout_child() monitor [W <- _, riarc_offline_tests:timeout_child()] and([W ?? timeout] ff, [W ? timeout] ff).\n",
    {ok, Mod} = riarc_shml:load_string(Text, riarc_offline_timeout_prop, "timeout.prop"),
    Mod.

timeouts_test_() ->
    {timeout, 60, fun timeouts_agree/0}.

timeouts_agree() ->
    MFA = {?MODULE, timeouts, []},
    Prop = timeout_prop(),
    {ok, Online} = riarc:run(MFA, Prop, #{log => false}),
    Expected = [{{?MODULE, timeout_child, []}, reject, 2}, {MFA, reject, 2}],
    ?assertEqual(Expected, verdicts(Online)),
    Spec = collecting_spec(self()),
    {ok, _} = riarc:run(MFA, Spec, #{log => false}),
    OnlineEvents = normalise(collected()),
    ?assertEqual([{?MODULE, timeout_child, []}, {timeout, child}, {recv, child, timeout}],
                 [{?MODULE, timeout_child, []} | [case E of {K, _} -> {K, child}; {K, _, M} -> {K, child, M} end
                   || E <- proplists:get_value({?MODULE, timeout_child, []}, OnlineEvents),
                      element(1, E) =:= timeout orelse element(1, E) =:= recv]]),
    [begin
         File = tmp("timeouts." ++ atom_to_list(Format)),
         {ok, _} = riarc_offline:record(MFA, File, #{format => Format}),
         {ok, Offline} = riarc_offline:check(File, Prop, #{}),
         ?assertEqual({Format, verdicts(Online)}, {Format, verdicts(Offline)}),
         {ok, _} = riarc_offline:check(File, Spec, #{}),
         ?assertEqual({Format, OnlineEvents}, {Format, normalise(collected())})
     end || Format <- [binary, text]].

%% A timer set to send the atom `timeout', whose message the VM traces exactly as a
%% receive timeout, is recorded (its call): a check reads the receiver's timeouts both
%% ways from then on, as a live run does (riarc_analysis_core), in both formats; a timer
%% to another process makes the check an error. Before, the message read as a timeout,
%% and a monitor rejecting on the message `timeout' accepted (riarc_demo_timers).
timer_timeout_test_() ->
    NoMessage = fun({riarc_demo_timers, self_timer, []}) ->
                        {ok, fun M({recv, _, timeout}) -> reject; M({exit, _, _}) -> accept; M(_) -> M end};
                   (_) -> undefined
                end,
    Any = fun({riarc_demo_timers, _, []}) -> {ok, fun M({exit, _, _}) -> accept; M(_) -> M end};
             (_) -> undefined
          end,
    [{atom_to_list(Format), fun() ->
          File = tmp("timer." ++ atom_to_list(Format)),
          {ok, _} = riarc_offline:record({riarc_demo_timers, self_timer, []}, File, #{format => Format}),
          {ok, Events, _} = riarc_trace_file:read_all(File),
          ?assertMatch([{init, P, _, _}, {timer_timeout, P, P}, {timeout, P}, {exit, P, normal}], Events),
          {ok, R} = riarc_offline:check(File, NoMessage, #{}),
          ?assertMatch([#{verdict := inconclusive, reason := {ambiguous_timeout, #{event_no := 2}}}],
                       maps:get(verdicts, R)),
          {ok, R2} = riarc_offline:check(File, Any, #{}),
          ?assertMatch([#{verdict := accept}], maps:get(verdicts, R2)),
          Other = tmp("other_timer." ++ atom_to_list(Format)),
          {ok, _} = riarc_offline:record({riarc_demo_timers, other_timer, []}, Other, #{format => Format}),
          {ok, R3} = riarc_offline:check(Other, Any, #{}),
          ?assertMatch([{riarc_session, {ambiguous_timer, _}}], maps:get(errors, R3)),
          ?assertEqual(1, riarc_result:status(R3))
      end} || Format <- [binary, text]].

%% A recording's cut found by a look (`{flags_removed, Left}', riarc_recorder) names atoms
%% of riarc's: read in a fresh VM, where nothing of riarc was loaded and binary_to_term's
%% safe decoding knows only the atoms that exist, both formats read it as written
%% (before, the binary reader refused the record as bad).
fresh_vm_reads_look_cut_test_() ->
    P = list_to_pid("<0.4242.0>"),
    Events = [{init, P, undefined, {m, f, []}}, {cut, P, {flags_removed, []}}, {cut, P, {tracer_replaced, P}}],
    Paths = lists:append([["-pa", filename:dirname(code:which(M))] || M <- [riarc_event, riarc_trace_file]]),
    [{atom_to_list(Format), {timeout, 60, fun() ->
          File = tmp("look_cut." ++ atom_to_list(Format)),
          ok = riarc_trace_file:write(File, Events, #{format => Format}),
          {ok, Peer, _} = peer:start(#{name => peer:random_name(riarc_fresh_reader),
                                       connection => standard_io, args => Paths}),
          try
              ?assertEqual(false, peer:call(Peer, erlang, module_loaded, [riarc_event])),
              {ok, Read, _} = peer:call(Peer, riarc_trace_file, read_all, [File]),
              %% (A pid read there is the other node's.)
              ?assertMatch([{flags_removed, []}, {tracer_replaced, T}] when is_pid(T),
                           [Why || {cut, _, Why} <- Read])
          after
              peer:stop(Peer)
          end
      end}} || Format <- [binary, text]].

%% A system that takes itself, or a child, out of the recorder's view (riarc_demo_untracer)
%% leaves the call in the recording (a CUT record, or the text term): a check reads the
%% view as cut, as a live run does, never accepting what the trace no longer shows. The
%% recorder does not wait for the exit of a process that lost all its flags. The same
%% verdicts as the live run, in both formats; before, the file held no trace of the call
%% and the check accepted where the run gave error.
untraced_recording_test_() ->
    Mon = fun M({recv, _, {error, _}}) -> reject; M({exit, _, normal}) -> accept; M(_) -> M end,
    Spec = fun(_) -> {ok, Mon} end,
    Pairs = fun(#{verdicts := Vs}) -> lists:sort([{maps:get(mfa, V), maps:get(verdict, V)} || V <- Vs]) end,
    [{lists:flatten(io_lib:format("~s, ~s", [How, Format])), {timeout, 60, fun() ->
          MFA = {riarc_demo_untracer, run, [How]},
          {ok, Live} = riarc:run(MFA, Spec, #{}),
          File = tmp("untraced." ++ atom_to_list(How) ++ "." ++ atom_to_list(Format)),
          Before = riarc_trace_pattern:installed(),
          {ok, #{root := Root}} = riarc_offline:record(MFA, File, #{format => Format}),
          %% The node's patterns are its own again, whatever the system did to them.
          ?assertEqual(Before, riarc_trace_pattern:installed()),
          {ok, Events, _} = riarc_trace_file:read_all(File),
          %% The call's cut; with receive_pattern, the recorder's last look also finds the
          %% node's patterns changed, and writes that too.
          ?assertMatch([_], [Ev || Ev = {cut, P, Why} <- Events, P =:= Root,
                                   element(1, Why) =/= patterns_changed]),
          {ok, R} = riarc_offline:check(File, Spec, #{}),
          ?assertMatch([#{verdict := error, reason := {cut, #{process := Root}}}],
                       [V || V = #{pid := P} <- maps:get(verdicts, R), P =:= Root]),
          [?assertMatch(#{verdict := error, reason := {cut, _}}, V) || V <- maps:get(verdicts, R)],
          ?assertEqual(1, riarc_result:status(R)),
          %% A process never seen to start (hidden_child) has events in the file, its
          %% call: a check lists it with no MFA, an error (every entry is, above); a
          %% live run cannot place them and lists nothing for it.
          ?assertEqual(Pairs(Live), [P || P = {M, _} <- Pairs(R), M =/= undefined])
      end}} || How <- riarc_demo_untracer:hows(), Format <- [binary, text]]
    ++ [{"decided before the cut, " ++ atom_to_list(Format), fun() ->
            %% A reject reached before the cut stands, as in a live run.
            File = tmp("decided_first." ++ atom_to_list(Format)),
            {ok, _} = riarc_offline:record({riarc_demo_untracer, decided_first, []}, File, #{format => Format}),
            {ok, R} = riarc_offline:check(File, Spec, #{}),
            ?assertMatch([#{verdict := reject}], maps:get(verdicts, R))
        end} || Format <- [binary, text]].

%% A process whose flags someone outside the system took (riarc_demo_untracer:outsider/1):
%% no call shows it. The recorder looks at how the VM traces the system, as a live
%% tracer does: the recording ends (the process will show no exit) and keeps the cut, so
%% a check gives the live run's error, in both formats; before, the recorder waited
%% for the process's exit until its timeout.
outsider_cut_test_() ->
    Mon = fun M({recv, _, {error, _}}) -> reject; M({exit, _, normal}) -> accept; M(_) -> M end,
    Spec = fun(_) -> {ok, Mon} end,
    [{atom_to_list(Format), {timeout, 60, fun() ->
          H = riarc_demo_outsider:start(),
          MFA = {riarc_demo_untracer, outsider, [H]},
          {ok, #{verdicts := [Live]}} = riarc:run(MFA, Spec, #{}),
          ?assertMatch(#{verdict := error, reason := {cut, #{call := {flags_removed, _}}}}, Live),
          File = tmp("outsider." ++ atom_to_list(Format)),
          {ok, #{root := Root}} = riarc_offline:record(MFA, File, #{format => Format}),
          {ok, Events, _} = riarc_trace_file:read_all(File),
          %% The look's finding, and the helper's call, which the keeper's meta pattern
          %% saw (written with the node's patterns, as the root's).
          Cuts = [E || E = {cut, _, _} <- Events],
          ?assertEqual(2, length(Cuts)),
          ?assertMatch([{cut, Root, {flags_removed, _}}], [E || E = {cut, _, {flags_removed, _}} <- Cuts]),
          ?assertMatch([{cut, Root, {patterns_changed, #{untraced := [_]}}}],
                       [E || E = {cut, _, {patterns_changed, _}} <- Cuts]),
          {ok, R} = riarc_offline:check(File, Spec, #{}),
          ?assertMatch([#{verdict := error, reason := {cut, #{call := {flags_removed, _}}}}],
                       maps:get(verdicts, R)),
          exit(H, kill)
      end}} || Format <- [binary, text]].

%% The node's receive pattern turned off by someone outside the system, after which a
%% process takes the forbidden message and ends before any look
%% (riarc_demo_untracer:outsider_patterns/1). The recorder's last look finds the change
%% and writes it; a check cannot tell when it came, so no verdict stands it: an error, as
%% the live run's. Before, the recorder made no last look, and the check accepted.
patterns_changed_before_end_test_() ->
    Mon = fun M({recv, _, {error, _}}) -> reject; M({exit, _, normal}) -> accept; M(_) -> M end,
    Spec = fun(_) -> {ok, Mon} end,
    [{lists:flatten(io_lib:format("~s, ~s", [Sys, Format])), {timeout, 60, fun() ->
          Before = riarc_trace_pattern:installed(),
          H = riarc_demo_outsider:start(),
          MFA = {riarc_demo_untracer, Sys, [H]},
          File = tmp(atom_to_list(Sys) ++ "." ++ atom_to_list(Format)),
          {ok, #{root := Root}} = riarc_offline:record(MFA, File, #{format => Format}),
          exit(H, kill),
          ?assertEqual(Before, riarc_trace_pattern:installed()),
          {ok, Events, _} = riarc_trace_file:read_all(File),
          ?assertMatch([{cut, Root, {patterns_changed, _}}], [E || E = {cut, _, _} <- Events]),
          {ok, R} = riarc_offline:check(File, Spec, #{}),
          ?assertMatch([#{verdict := error, reason := {cut, #{call := {patterns_changed, _},
                                                               verdict_on_partial_trace := accept}}}],
                       maps:get(verdicts, R)),
          ?assertEqual(1, riarc_result:status(R))
      end}} || Sys <- [outsider_patterns, outsider_ends], Format <- [binary, text]].

%% The recorder's note that a look found the node's tracing changed says how many events
%% it had written at its look before, which found it intact: what those events decide
%% stands, as a live run's verdicts in at that look do; every other verdict is an error.
%% A note that does not say (recordings made before) keeps none. The note itself reaches
%% no tracer: it names the root, but it is no event of the root's.
intact_prefix_test_() ->
    Mon = fun M({recv, _, {error, _}}) -> reject; M({exit, _, normal}) -> accept; M(_) -> M end,
    Spec = fun(_) -> {ok, Mon} end,
    Trace = fun(RootMsg, Intact) ->
                    Info = maps:merge(#{untraced => []}, Intact),
                    [{init, r, x, {m, r, []}}, {spawn, r, c, {m, c, []}}, {init, c, r, {m, c, []}},
                     {exit, c, normal}, {recv, r, RootMsg}, {cut, r, {patterns_changed, Info}},
                     {exit, r, normal}]
            end,
    Checked = fun(Events) ->
                      {ok, R} = riarc_offline:check({events, Events}, Spec, #{timeout => 10000}),
                      lists:sort([{P, V} || #{pid := P, verdict := V} <- maps:get(verdicts, R)])
              end,
    [?_assertEqual([{c, accept}, {r, error}], Checked(Trace(ok, #{intact_events => 4}))),
     %% The child's exit written after the look: its accept does not stand.
     ?_assertEqual([{c, error}, {r, error}], Checked(Trace(ok, #{intact_events => 3}))),
     ?_assertEqual([{c, error}, {r, error}], Checked(Trace(ok, #{}))),
     %% A reject on the intact events stands, and an accept past them does not.
     ?_assertEqual([{c, accept}, {r, reject}], Checked(Trace({error, early}, #{intact_events => 5}))),
     ?_assertEqual([{c, accept}, {r, error}], Checked(Trace({error, early}, #{intact_events => 4}))),
     %% The reason is the live run's: where the look was is not part of it.
     ?_test(begin
                [#{pid := r, reason := {cut, Cut}}] = intact_errors(Trace(ok, #{intact_events => 4}), Spec),
                ?assertEqual(#{process => undefined, call => {patterns_changed, #{untraced => []}},
                               verdict_on_partial_trace => accept}, Cut)
            end)].

intact_errors(Events, Spec) ->
    {ok, #{verdicts := Vs}} = riarc_offline:check({events, Events}, Spec, #{timeout => 10000}),
    [E || E = #{verdict := error} <- Vs].

%% Recordings made before timeouts had their own event wrote one as {recv, P, timeout},
%% which the message `timeout' also gives: such an event is refused with its position,
%% never read as one or the other. Any other old event reads as before.
old_timeouts_test() ->
    Text = tmp("old.txt"),
    ok = file:write_file(Text, "{init, p, x, undefined}.\n{recv, p, timeout}.\n{exit, p, normal}.\n"),
    {error, Why} = riarc_offline:check(Text, fun(_) -> undefined end, #{}),
    ?assertMatch({riarc_trace_file, {ambiguous_timeout, _, {line, 2}}}, Why),
    ?assertMatch("/" ++ _, riarc_offline:format_error(Why)),
    %% With the version line, it is the message.
    ok = file:write_file(Text, riarc_trace_reader:text_version_line() ++ "\n{recv, p, timeout}.\n{timeout, p}.\n"),
    ?assertMatch({ok, [{recv, p, timeout}, {timeout, p}], _}, riarc_trace_file:read_all(Text)),
    %% A version-1 binary file: a RECV of `timeout', or of an omitted message, is refused.
    Hdr = fun(V) -> <<H:8/binary, _, Rest/binary>> = riarc_trace_bin:encode_header(#{node => a@h, start_us => 0, payloads => true}),
                    <<H/binary, V, Rest/binary>> end,
    Proc = <<7:32, 1, 0:32, 1, "p">>,
    Recv = fun(Msg) -> <<(1 + 4 + byte_size(Msg)):32, 6, 0:32, Msg/binary>> end,
    T = term_to_binary(timeout),
    Bin = tmp("old.rtrc"),
    ok = file:write_file(Bin, [Hdr(1), Proc, Recv(<<(byte_size(T)):32, T/binary>>)]),
    ?assertMatch({error, {riarc_trace_file, {ambiguous_timeout, _, {byte, 34}}}}, riarc_trace_file:read_all(Bin)),
    ok = file:write_file(Bin, [Hdr(1), Proc, Recv(<<0:32>>)]),
    ?assertMatch({error, {riarc_trace_file, {ambiguous_timeout, _, {byte, 34}}}}, riarc_trace_file:read_all(Bin)),
    Req = term_to_binary(req),
    ok = file:write_file(Bin, [Hdr(1), Proc, Recv(<<(byte_size(Req)):32, Req/binary>>)]),
    ?assertMatch({ok, [{recv, p, req}], #{version := 1}}, riarc_trace_file:read_all(Bin)),
    %% Version 2: the message `timeout' is a receive, and TIMEOUT is the timeout.
    ok = file:write_file(Bin, [Hdr(2), Proc, Recv(<<(byte_size(T)):32, T/binary>>), <<5:32, 8, 0:32>>]),
    ?assertMatch({ok, [{recv, p, timeout}, {timeout, p}], #{version := 2}}, riarc_trace_file:read_all(Bin)),
    %% In a version-1 file the type is reserved.
    ok = file:write_file(Bin, [Hdr(1), Proc, <<5:32, 8, 0:32>>]),
    ?assertMatch({error, {riarc_trace_file, {bad_record, _, _, _}}}, riarc_trace_file:read_all(Bin)),
    %% A dbg trace, made without riarc's receive pattern, cannot tell them apart either;
    %% with it, the timeout comes marked.
    Dbg = tmp("old.dbg"),
    Rec = fun(M) -> B = term_to_binary(M), <<0, (byte_size(B)):32, B/binary>> end,
    P = list_to_pid("<0.500.0>"),
    First = Rec({trace, P, 'receive', req}),
    ok = file:write_file(Dbg, [First, Rec({trace, P, 'receive', timeout})]),
    %% The second record starts after the first, whose size depends on how this node
    %% writes a pid (its name, once it is distributed).
    Second = byte_size(First),
    ?assertMatch({error, {riarc_trace_file, {ambiguous_timeout, _, {byte, Second}}}},
                 riarc_trace_file:read_all(Dbg)),
    ok = file:write_file(Dbg, [Rec({trace, P, 'receive', timeout, clock_service}),
                               Rec({trace, P, 'receive', tick, clock_service})]),
    ?assertMatch({ok, [{timeout, P}, {recv, P, tick}], _}, riarc_trace_file:read_all(Dbg)).

%% A system that floods the recorder: its mailbox stays bounded, since the system is
%% suspended while the recorder catches up, and nothing is lost.
bounded_memory_test_() ->
    {timeout, 60, fun() ->
        File = tmp("flood.rtrc"),
        N = 100000,
        {ok, #{events := Events, peak_queue := Peak, suspensions := Susp}} =
            riarc_offline:record({riarc_offline_tests, flood, [N]}, File,
                                 #{max_queue => 2000, payloads => false}),
        %% init, exits, and per message a send and a receive, for two processes.
        ?assertEqual(1 + 1 + 1 + 2 + 2 * N, Events),
        ?assert(Susp > 0),
        ?assert(Peak < 2 * N div 4),
        {ok, #{trace := #{events := Events}, violations := []}} =
            riarc_offline:check(File, fun(_) -> {ok, fun M(_) -> M end} end, #{}),
        ?debugFmt("flood of ~b messages: peak recorder queue ~b, ~b suspensions",
                  [N, Peak, Susp])
    end}.

%% The flooding system: a child sinks N messages from its parent.
flood(N) ->
    Sink = spawn(?MODULE, sink, [N]),
    [Sink ! {n, I} || I <- lists:seq(1, N)],
    ok.

sink(0) -> ok;
sink(N) -> receive {n, _} -> sink(N - 1) end.

%%% ---------------------------------------------------------------------------
%%% The command line (riarc_offline_cli:run/1 returns the exit status main/1 halts with)
%%% ---------------------------------------------------------------------------

%% Trace P/Q/R with OTP's own dbg into a file, then check that file.
%% Generous timeouts: these load dbg, its port driver and the dbg reader for the first
%% time, and under a full test run on a loaded machine first loads waited seconds for
%% the disk (measured: 40-160x the idle time of the tests before, which load modules too).
dbg_file_test_() ->
    {timeout, 60, fun dbg_file/0}.

dbg_file() ->
    File = tmp("pqr.dbg"),
    dbg_record({file, File}),
    {ok, Read, Info} = riarc_trace_file:read_all(File),
    ?assertEqual(9, length(Read)),
    ?assertMatch(#{format := dbg, truncated := false}, Info),
    Spec = fun(_) -> {ok, fun M(_) -> M end} end,
    {ok, R} = riarc_offline:check(File, Spec, #{}),
    Kinds = lists:sort([{MFA, N} || #{mfa := MFA, events := N} <- maps:get(verdicts, R)]),
    %% The root's init is not in a dbg file (it started before tracing did), so the
    %% Spec is asked for the root with undefined.
    ?assertEqual([{undefined, 3}, {{?M, q, []}, 4}, {{?M, r, []}, 2}], Kinds).

dbg_wrap_test_() ->
    {timeout, 60, fun dbg_wrap/0}.

dbg_wrap() ->
    Name = tmp("wrap_"),
    _ = [file:delete(F) || F <- filelib:wildcard(Name ++ "*.trc")],
    dbg_record({wrap, Name}),
    ?assert(length(riarc_trace_dbg:wrap_files(Name, ".trc")) > 1),
    {ok, Read, #{files := Files}} = riarc_trace_file:read_all({dbg_wrap, Name, ".trc"}),
    ?assert(Files > 1),
    %% Oldest first: the sink's receive sequence numbers come in increasing order.
    Ns = [I || {recv, _, {n, I}} <- Read],
    ?assert(length(Ns) > 0),
    ?assertEqual(lists:sort(Ns), Ns),
    ?assertMatch({error, {riarc_trace_file, {no_wrap_files, _, ".none"}}},
                 riarc_trace_file:read_all({dbg_wrap, Name, ".none"})).

%% Runs P/Q/R (or a chattier system for wrap files) traced into a dbg file port, and
%% returns once every process of it has exited and the port is flushed.
dbg_record(Kind) ->
    PortFun = case Kind of
                  {file, F} -> dbg:trace_port(file, F);
                  {wrap, N} -> dbg:trace_port(file, {N, wrap, ".trc", 512, 4})
              end,
    {ok, _} = dbg:tracer(port, PortFun),
    {ok, Port} = dbg:get_tracer(),
    MFA = case Kind of {file, _} -> {?M, p, []}; {wrap, _} -> {?MODULE, flood, [200]} end,
    Before = erlang:processes(),
    Root = riarc_backend_evm:spawn_paused(MFA),
    %% The paused root turns tracing on itself once it has taken the go message, so the
    %% go is not in the trace (the online backend's own launch).
    ok = riarc_backend_evm:launch(riarc_backend_evm:config([send, recv]), Root, Port),
    await_system(Before, Port, #{}),
    dbg:flush_trace_port(),
    dbg:stop().

%% Waits for every process traced by Port that was not there Before; new ones may
%% appear while waiting (children of the ones waited for).
await_system(Before, Port, Seen) ->
    New = [P || P <- erlang:processes() -- Before, not is_map_key(P, Seen),
                erlang:trace_info(P, tracer) =:= {tracer, Port}],
    case New of
        [] -> ok;
        _ ->
            Refs = [monitor(process, P) || P <- New],
            [receive {'DOWN', R, process, _, _} -> ok end || R <- Refs],
            await_system(Before, Port, maps:merge(Seen, maps:from_list([{P, true} || P <- New])))
    end.

tmp(Name) ->
    filename:join(riarc_test_tmp:dir("riarc_offline_tests"), Name).
