%% The `new_processes' target: every process spawned after the attach point is watched
%% from its first event. The three-process system of fig. 2a (riarc_demo_pqr) is started
%% by the test itself, untraced, after the attach, many times at once, under every
%% arrangement of monitors: each process's events, in its partition, are exactly its local
%% trace (complete and in order), whichever partition it is in. Detaching leaves no
%% process traced and the VM's defaults for new processes off; a killed session does too.
-module(riarc_attach_new_tests).

-include_lib("eunit/include/eunit.hrl").

-export([orphan_parent/1, orphan_child/0]).

-define(RUNS, 40).

%% A Spec giving P, Q and R a monitor each as Arr says; every monitor sends the test
%% what it sees, tagged with its own partition.
spec({MonP, MonQ, MonR}, Test) ->
    fun({riarc_demo_pqr, p, []}) when MonP -> {ok, rec(Test, make_ref())};
       ({riarc_demo_pqr, q, []}) when MonQ -> {ok, rec(Test, make_ref())};
       ({riarc_demo_pqr, r, []}) when MonR -> {ok, rec(Test, make_ref())};
       (_) -> undefined
    end.
rec(Test, Part) -> fun(E) -> Test ! {event, Part, E}, rec(Test, Part) end.

arrangements() ->
    [{P, Q, R} || P <- [true, false], Q <- [true, false], R <- [true, false]].

arrangements_test_() ->
    %% Loaded beforehand: a first call that loads the module would show in P's trace
    %% as its exchange with the code server (rightly).
    {setup, fun() -> {module, _} = code:ensure_loaded(riarc_demo_pqr),
                     {ok, _} = application:ensure_all_started(riarc) end,
     [{lists:flatten(io_lib:format("~p", [A])), {timeout, 60, fun() -> arrangement(A) end}}
      || A <- arrangements()]}.

arrangement(Arr) ->
    {ok, S} = riarc:attach(new_processes, spec(Arr, self()), #{}),
    Ps = [begin {P, Ref} = spawn_monitor(riarc_demo_pqr, p, []), {P, Ref} end
          || _ <- lists:seq(1, ?RUNS)],
    [receive {'DOWN', Ref, process, P, normal} -> ok end || {P, Ref} <- Ps],
    %% Every exit a partition can see has been seen: the run is over (Q and R end on
    %% their own, after P); processes of no partition are not waited for.
    Expected = expected_partitions(Arr),
    Events = collect(?RUNS * length(covered(Arr)), []),
    {ok, #{verdicts := Vs, violations := [], errors := []}} = riarc:stop(S),
    ?assertEqual(?RUNS * Expected, length(Vs)),
    %% Per partition, per process: its local trace, opened by an init event that names
    %% its real parent: for P, the test's process, which no tracer traces.
    Parts = group(Events),
    [check_partition(Arr, self(), Es) || Es <- maps:values(Parts)],
    ?assertEqual(?RUNS * Expected, map_size(Parts)),
    untraced(),
    %% Nothing came after the run: every partition got its processes' events once.
    ?assertEqual([], [E || {event, _, E} <- flush()]).

flush() -> receive M -> [M | flush()] after 0 -> [] end.

%% Stopped as soon as a new process it monitors has ended: the process is in the result,
%% whatever the VM had not delivered to the tracers yet when the stop came (each tracer
%% takes what the VM made before the stop first). Before, the process could be missing
%% from the result altogether, every listed partition accepting: 20 times in a row.
stop_after_end_test_() ->
    {timeout, 120, fun() ->
        {module, _} = code:ensure_loaded(riarc_demo_timers),
        Spec = fun({riarc_demo_timers, plain_timeout, []}) ->
                       {ok, fun M({exit, _, _}) -> accept; M(_) -> M end};
                  (_) -> undefined
               end,
        [begin
             {ok, S} = riarc:attach(new_processes, Spec, #{}),
             {P, Ref} = spawn_monitor(riarc_demo_timers, plain_timeout, []),
             receive {'DOWN', Ref, process, P, normal} -> ok end,
             {ok, #{verdicts := Vs}} = riarc:stop(S),
             ?assertMatch({K, [_]}, {K, [V || V = #{pid := Pid} <- Vs, Pid =:= P]}),
             untraced()
         end || K <- lists:seq(1, 20)]
    end}.

%% A receive that times out in a new process is a timeout, not the message `timeout': the
%% backend holds riarc's receive pattern, which marks what the clock service delivers.
%% Before it did, attach(new_processes, ...) showed every timeout as a receive of
%% `timeout': `[P ?? timeout] ff' accepted, `[P ? timeout] ff' rejected.
timeout_is_a_timeout_test_() ->
    {timeout, 60, fun() ->
        {module, _} = code:ensure_loaded(riarc_demo_timers),
        Spec = fun({riarc_demo_timers, plain_timeout, []}) ->
                       {ok, fun M({timeout, _}) -> reject; M({recv, _, timeout}) -> accept;
                                M({exit, _, _}) -> accept; M(_) -> M end};
                  (_) -> undefined
               end,
        {ok, S} = riarc:attach(new_processes, Spec, #{}),
        Tag = make_ref(),
        [] = riarc_session:subscribe(S, self(), Tag),
        {P, Ref} = spawn_monitor(riarc_demo_timers, plain_timeout, []),
        receive {'DOWN', Ref, process, P, normal} -> ok end,
        Entry = receive {riarc_session_verdict, Tag, E = #{pid := P}} -> E end,
        ?assertMatch(#{verdict := reject, why := #{event := {timeout, P}}}, Entry),
        {ok, _} = riarc:stop(S),
        untraced()
    end}.

%% A timer a new process sets to send itself the atom `timeout' as its first act, before
%% any tracer took it over: its call is traced from the process's start (the defaults
%% carry the calls), so its message is read both ways, as riarc reads it anywhere
%% (riarc_timer_timeout_tests): a monitor rejecting on the message `timeout' is
%% inconclusive, never an accept.
timer_before_takeover_test_() ->
    {timeout, 60, fun() ->
        {module, _} = code:ensure_loaded(riarc_demo_timers),
        Spec = fun({riarc_demo_timers, self_timer, []}) ->
                       {ok, fun M({recv, _, timeout}) -> reject; M({exit, _, _}) -> accept; M(_) -> M end};
                  (_) -> undefined
               end,
        {ok, S} = riarc:attach(new_processes, Spec, #{}),
        Tag = make_ref(),
        [] = riarc_session:subscribe(S, self(), Tag),
        {P, Ref} = spawn_monitor(riarc_demo_timers, self_timer, []),
        receive {'DOWN', Ref, process, P, normal} -> ok end,
        Entry = receive {riarc_session_verdict, Tag, E = #{pid := P}} -> E end,
        ?assertMatch(#{verdict := inconclusive, reason := {ambiguous_timeout, #{process := P}}}, Entry),
        {ok, _} = riarc:stop(S),
        untraced()
    end}.

expected_partitions({P, Q, R}) -> length([x || true <- [P, Q, R]]).

%% The roles in some partition: a monitored one, or the child of one in a partition.
covered({P, Q, R}) -> [p || P] ++ [q || Q orelse P] ++ [r || R orelse Q orelse P].

%% Events until N exits have been seen.
collect(0, Acc) -> lists:reverse(Acc);
collect(N, Acc) ->
    receive
        {event, Part, E = {exit, _, _}} -> collect(N - 1, [{Part, E} | Acc]);
        {event, Part, E} -> collect(N, [{Part, E} | Acc])
    after 30000 -> error({timeout, N, length(Acc)})
    end.

group(Events) ->
    lists:foldl(fun({Part, E}, M) -> maps:update_with(Part, fun(L) -> L ++ [E] end, [E], M) end,
                #{}, Events).

%% The processes of one partition: its root, and the children of its processes that
%% have no monitor of their own.
check_partition({_, MonQ, MonR}, Test, Es = [{init, Root, _, {riarc_demo_pqr, Role, []}} | _]) ->
    Procs = lists:usort([riarc_event:origin(E) || E <- Es]),
    Roles = maps:from_list([{C, R} || {init, C, _, {riarc_demo_pqr, R, []}} <- Es]),
    [?assertEqual({Pid, riarc_demo_pqr:local_traces(maps:get(Pid, Roles))},
                  {Pid, [riarc_event:kind(E) || E <- Es, riarc_event:origin(E) =:= Pid]})
     || Pid <- Procs],
    %% Which roles share the root's partition follows from the Spec alone.
    Inside = case Role of
                 p -> [p] ++ [q || not MonQ] ++ [r || not MonQ, not MonR];
                 q -> [q] ++ [r || not MonR];
                 r -> [r]
             end,
    ?assertEqual(lists:sort(Inside), lists:sort(maps:values(Roles))),
    %% P's parent is the test process, which no tracer traces, named as run/3 names a
    %% root's caller.
    [?assertEqual(Test, Parent) || {init, _, Parent, {_, p, _}} <- Es],
    ?assert(is_pid(Root)).

%% Nothing on the node is traced any more, and new processes are not either.
%% A new process that takes itself, or a child, out of riarc's view (riarc_demo_untracer)
%% and then takes what its monitor forbids: never an accept under attach either, as in
%% run/3 (riarc_trust_tests): its partition, and its child's, are errors for the cut.
untracer_test_() ->
    [{atom_to_list(How), {timeout, 60, fun() ->
          Mon = fun M({recv, _, {error, _}}) -> reject; M({exit, _, normal}) -> accept; M(_) -> M end,
          {ok, S} = riarc:attach(new_processes, fun(_) -> {ok, Mon} end, #{}),
          {P, Ref} = spawn_monitor(riarc_demo_untracer, run, [How]),
          receive {'DOWN', Ref, process, P, normal} -> ok end,
          {ok, R = #{verdicts := Vs}} = riarc:stop(S),
          ?assertMatch([#{verdict := error, reason := {cut, #{process := P}}}],
                       [V || V = #{pid := Pid} <- Vs, Pid =:= P]),
          [?assertNotEqual(accept, maps:get(verdict, V)) || V <- Vs],
          ?assertEqual(1, riarc_result:status(R)),
          untraced()
      end}} || How <- riarc_demo_untracer:hows()].

untraced() ->
    ?assertEqual(#{processes => [], new_processes => []}, riarc_test_peer:traced(node())).

%% A process its own tracer took over from the tracer of new processes turns off its
%% `set_on_spawn' and spawns a monitored child: the child gets the defaults for new
%% processes (that tracer's), while its start is its parent's tracer's, which counts it as
%% its own. Its parent's tracer finds it so (its look, or a stop's last look): an error,
%% as under run/3, where such a child is not traced at all. Before, its events stayed at
%% the tracer of new processes, where nobody took them: its partition waited for its exit
%% until the session stopped (inconclusive; followed onto a node, until the run's
%% timeout). Monitors isolated, and in a tracer for each partition as in the paper.
orphan_test_() ->
    {setup, fun() -> {module, _} = code:ensure_loaded(?MODULE),
                     {ok, _} = application:ensure_all_started(riarc) end,
     [{atom_to_list(Placement), {timeout, 60, fun() -> orphan(Placement) end}}
      || Placement <- [isolated, paper]]}.

orphan(Placement) ->
    Opts = case Placement of
               paper -> #{analysis => inline, adopt => 0};
               _ -> #{analysis => Placement}
           end,
    Mon = fun M({exit, _, _}) -> accept; M(_) -> M end,
    Spec = fun({?MODULE, F, _}) when F =:= orphan_parent; F =:= orphan_child -> {ok, Mon};
              (_) -> undefined
           end,
    {ok, S} = riarc:attach(new_processes, Spec, Opts),
    {P, Ref} = spawn_monitor(?MODULE, orphan_parent, [self()]),
    %% The parent's own tracer takes it over from the tracer of new processes (a tracer
    %% for each partition, isolated or as in the paper); the parent waits meanwhile.
    {tracer, Adopter} = erlang:trace_info(new_processes, tracer),
    ok = taken_over(P, Adopter),
    P ! go,
    C = receive {child, P, C0} -> C0 end,
    receive {'DOWN', Ref, process, P, normal} -> ok end,
    %% The child's partition is judged by its tracer's look (once a second), not by the
    %% stop: waited for in the session's stream.
    Tag = make_ref(),
    ok = judged(C, Tag, riarc_session:subscribe(S, self(), Tag)),
    {ok, R = #{verdicts := Vs}} = riarc:stop(S),
    %% The parent's own verdict rests on its own call, or its takeover's end (not this
    %% test's concern): no accept.
    ?assertMatch([#{verdict := V}] when V =:= error; V =:= inconclusive, [V || V = #{pid := Pid} <- Vs, Pid =:= P]),
    ?assertMatch([#{verdict := error, reason := {cut, #{process := C}}}], [V || V = #{pid := Pid} <- Vs, Pid =:= C],
                 Vs),
    ?assertEqual(1, riarc_result:status(R)),
    untraced().

%% @private The parent: once told, it turns off its `set_on_spawn', then spawns the child
%% and waits for it.
-spec orphan_parent(pid()) -> ok.
orphan_parent(Test) ->
    receive go -> ok end,
    _ = erlang:trace(self(), false, [set_on_spawn]),
    {C, Ref} = spawn_monitor(?MODULE, orphan_child, []),
    Test ! {child, self(), C},
    C ! go,
    receive {'DOWN', Ref, process, C, normal} -> ok end.

judged(C, Tag, Known) ->
    case [E || E = #{pid := Pid, verdict := V} <- Known, Pid =:= C, V =/= none] of
        [_ | _] -> ok;
        [] -> receive {riarc_session_verdict, Tag, E} -> judged(C, Tag, [E]) end
    end.

%% A takeover is done by the tracer taking over, on its own time: watched from here (the
%% test's process is no new process, and traced by nobody).
taken_over(P, Adopter) ->
    case erlang:trace_info(P, tracer) of
        {tracer, Adopter} -> erlang:yield(), taken_over(P, Adopter);
        {tracer, _} -> ok
    end.

%% @private The child: takes one message and ends.
-spec orphan_child() -> ok.
orphan_child() ->
    receive go -> ok end.

%% A session killed while it watches: its tracers notice, turn the defaults off and
%% untrace what they traced; a process spawned afterwards is not traced.
killed_session_test() ->
    {ok, _} = application:ensure_all_started(riarc),
    Test = self(),
    {ok, S} = riarc:attach(new_processes, fun(_) -> {ok, rec(Test, s)} end, #{}),
    Ws = [spawn(fun() -> receive stop -> ok end end) || _ <- lists:seq(1, 20)],
    %% Each worker has a tracer of its own (its monitor saw its init) before the kill.
    [receive {event, s, {init, W, _, _}} -> ok end || W <- Ws],
    %% Each worker is traced by a tracer of its own. Other tracers may exist too:
    %% new_processes watches every process, so whatever else this VM spawned meanwhile
    %% (the test runner's own) has one as well; all of them must end with the session.
    #{tracers := Tracers, traced := Traced} = riarc:alive(S),
    ?assertEqual([], [W || W <- Ws, not lists:member([W], maps:values(Traced))]),
    Refs = [monitor(process, T) || T <- Tracers],
    exit(S, kill),
    [receive {'DOWN', R, process, _, _} -> ok end || R <- Refs],
    untraced(),
    [W ! stop || W <- Ws].

%% One default tracer for new processes per node: another tool's is an error, and
%% nothing is attached.
already_traced_test() ->
    {ok, _} = application:ensure_all_started(riarc),
    Other = spawn(fun() -> receive stop -> ok end end),
    erlang:trace(new_processes, true, [{tracer, Other}, procs]),
    try
        ?assertMatch({error, {riarc_backend_new_processes, {already_traced, new_processes, Other}}},
                     riarc:attach(new_processes, fun(_) -> undefined end, #{})),
        ?assertEqual("new processes are traced by " ++ pid_to_list(Other) ++
                         " already: the VM has one default tracer for new processes",
                     riarc:format_error({riarc_backend_new_processes, {already_traced, new_processes, Other}}))
    after
        erlang:trace(new_processes, false, [all]),
        Other ! stop
    end.
