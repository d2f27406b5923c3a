%% Centralised monitoring (riarc_central): the same verdicts as riarc's decentralised
%% monitoring on the same systems and monitors, nothing lost under a spawn storm, riarc's
%% partitions, and errors that stay errors.
-module(riarc_central_tests).

-include_lib("eunit/include/eunit.hrl").

-export([storm/1, storm_child/0, parent_of_helper/1, helper/1]).

%% A monitor that accepts when its process's local trace, as kinds, is the expected one.
trace_monitor(Expected) ->
    trace_monitor(Expected, []).

trace_monitor(Expected, Seen) ->
    fun(E = {exit, _, _}) ->
            case lists:reverse([kind(E) | Seen]) of
                Expected -> accept;
                _ -> reject
            end;
       (E) -> trace_monitor(Expected, [kind(E) | Seen])
    end.

kind(E) -> element(1, E).

pqr_spec() ->
    fun({riarc_demo_pqr, Role, []}) -> {ok, trace_monitor(riarc_demo_pqr:local_traces(Role))};
       (_) -> undefined
    end.

%% {MFA, verdict} per slice; the arguments are compared by number only, since they hold
%% pids of the run.
verdicts(#{verdicts := Vs}) ->
    lists:sort([{mfa(maps:get(mfa, V)), maps:get(verdict, V)} || V <- Vs]).

mfa({M, F, A}) when is_list(A), A =/= [] -> {M, F, length(A)};
mfa(MFA) -> MFA.

%% P, Q and R each see exactly their own local trace, in order, every time.
pqr_test_() ->
    {timeout, 120,
     fun() ->
             Expected = lists:sort([{{riarc_demo_pqr, R, []}, accept} || R <- [p, q, r]]),
             [begin
                  {ok, Res} = riarc_central:run({riarc_demo_pqr, p, []}, pqr_spec(), #{log => false}),
                  ?assertEqual(Expected, verdicts(Res)),
                  ?assertMatch(#{tracers := #{spawned := 1, peak := 1}, routed := 0, errors := []}, Res)
              end || _ <- lists:seq(1, 200)]
     end}.

%% The demo's ticket service, racy and safe: the verdicts riarc gives, slice for slice.
demo_same_as_riarc_test_() ->
    [{atom_to_list(Mode), {timeout, 60,
       fun() ->
               MFA = {riarc_demo, main, [6, 20, Mode]},
               {ok, C} = riarc_central:run(MFA, riarc_demo_monitors, #{log => false}),
               {ok, R} = riarc:run(MFA, riarc_demo_monitors, #{log => false}),
               ?assertEqual(length(maps:get(verdicts, R)), length(maps:get(verdicts, C))),
               %% Which clients see a duplicate varies from run to run; the dispenser's
               %% monitor and the count of monitored processes do not.
               Tickets = fun(Res) -> [V || {{riarc_demo_tickets, _, _}, V} <- verdicts(Res)] end,
               case Mode of
                   safe -> ?assertEqual(Tickets(R), Tickets(C)),
                           ?assertEqual(verdicts(R), verdicts(C));
                   racy -> ?assertEqual(1, length(Tickets(C)))
               end
       end}} || Mode <- [racy, safe]].

%% A root that spawns 2000 children and exits at once: every child's three events reach
%% its slice, none is lost, and children seen before their parent's spawn are reordered.
storm(N) ->
    [spawn(?MODULE, storm_child, []) || _ <- lists:seq(1, N)],
    ok.

storm_child() ->
    self() ! ping,
    receive ping -> ok end.

storm_test_() ->
    {timeout, 120,
     fun() ->
             Spec = fun({?MODULE, storm_child, []}) -> {ok, trace_monitor([init, send, recv, exit])};
                       ({?MODULE, storm, _}) -> {ok, fun M(_) -> M end};
                       (_) -> undefined
                    end,
             {ok, Res} = riarc_central:run({?MODULE, storm, [2000]}, Spec, #{log => false}),
             Vs = maps:get(verdicts, Res),
             ?assertEqual(2001, length(Vs)),
             ?assertEqual(2000, length([V || V = #{verdict := accept, events := 4} <- Vs])),
             ?assertEqual([], maps:get(errors, Res)),
             %% spawn, init, send, recv and exit of every child, and the root's own events.
             ?assert(maps:get(events, Res) >= 2000 * 5)
     end}.

%% Partitions as in riarc: a child Λ does not select belongs to its parent's slice.
parent_of_helper(Test) ->
    H = spawn(?MODULE, helper, [self()]),
    receive {done, H} -> Test ! parent_done end.

helper(Parent) ->
    Parent ! {done, self()}.

partition_test() ->
    Self = self(),
    Spec = fun({?MODULE, parent_of_helper, _}) ->
                   {ok, fun M({send, _, P, {done, _}}) when is_pid(P) -> Self ! {helper_send_seen, P}, M;
                            M(_) -> M end};
              (_) -> undefined
           end,
    {ok, Res} = riarc_central:run({?MODULE, parent_of_helper, [self()]}, Spec, #{log => false}),
    receive parent_done -> ok end,
    receive {helper_send_seen, _} -> ok end,
    ?assertMatch([#{mfa := {?MODULE, parent_of_helper, _}, verdict := none}], maps:get(verdicts, Res)).

%% A monitor that crashes gives its own slice the verdict error; the others carry on.
crashing_monitor_test() ->
    Spec = fun({riarc_demo_pqr, q, []}) -> {ok, fun(E) -> element(99, E) end};
              ({riarc_demo_pqr, Role, []}) -> {ok, trace_monitor(riarc_demo_pqr:local_traces(Role))}
           end,
    {ok, Res} = riarc_central:run({riarc_demo_pqr, p, []}, Spec, #{log => false}),
    ?assertEqual([{{riarc_demo_pqr, p, []}, accept}, {{riarc_demo_pqr, q, []}, error},
                  {{riarc_demo_pqr, r, []}, accept}], verdicts(Res)).

%% A Spec that crashes is reported, and its process joins its parent's slice.
crashing_spec_test() ->
    Spec = fun({riarc_demo_pqr, r, []}) -> error(boom);
              ({riarc_demo_pqr, Role, []}) -> {ok, trace_monitor(riarc_demo_pqr:local_traces(Role))}
           end,
    {ok, Res} = riarc_central:run({riarc_demo_pqr, p, []}, Spec, #{log => false}),
    ?assertMatch([{riarc_spec_error, _, {riarc_demo_pqr, r, []}, _}], maps:get(errors, Res)),
    %% Q's slice now holds R's init and exit too, so Q's local trace no longer matches.
    ?assertEqual([{{riarc_demo_pqr, p, []}, accept}, {{riarc_demo_pqr, q, []}, reject}], verdicts(Res)).

bad_input_test_() ->
    [?_assertMatch({error, {riarc_central, {riarc, {bad_mfa, _}}}}, riarc_central:run(nonsense, pqr_spec(), #{})),
     ?_assertMatch({error, {riarc_central, {riarc, {bad_spec, 42}}}},
                   riarc_central:run({riarc_demo_pqr, p, []}, 42, #{})),
     ?_assertMatch({error, {riarc_central, {riarc, {bad_option, events, _}}}},
                   riarc_central:run({riarc_demo_pqr, p, []}, pqr_spec(), #{events => [oops]})),
     ?_assertMatch({match, _}, re:run(riarc_central:format_error({riarc, {bad_mfa, nonsense}}),
                                      "nonsense is not a {Module, Function, Args}"))].

%% A system that does not end: run/3 gives up after the timeout and names what is alive.
%% A timer set to send the atom `timeout', whose message the VM traces exactly as a
%% receive timeout: read both ways, as riarc reads it (riarc_timer_timeout_tests): the
%% same verdicts and errors in both methods (riarc_demo_timers).
timer_timeout_test() ->
    NoMessage = fun({riarc_demo_timers, self_timer, []}) ->
                        {ok, fun M({recv, _, timeout}) -> reject; M({exit, _, _}) -> accept; M(_) -> M end};
                   (_) -> undefined
                end,
    Any = fun({riarc_demo_timers, other_timer, []}) -> {ok, fun M({exit, _, _}) -> accept; M(_) -> M end};
             (_) -> undefined
          end,
    Read = fun(#{verdicts := Vs, errors := Es}) -> {[{V, maps:get(reason, E, none)} || E = #{verdict := V} <- Vs], Es} end,
    [begin
         {ok, R} = Run({riarc_demo_timers, self_timer, []}, NoMessage, #{log => false}),
         ?assertMatch({[{inconclusive, {ambiguous_timeout, #{event_no := 2}}}], []}, Read(R)),
         {ok, R2} = Run({riarc_demo_timers, other_timer, []}, Any, #{log => false}),
         ?assertMatch({[{accept, none}], [{riarc_session, {ambiguous_timer, _}}]}, Read(R2)),
         ?assertEqual(1, riarc_result:status(R2)),
         %% To a name nobody holds: maybe its own, maybe another's: both.
         NoTimeout = fun({riarc_demo_timers, nobody_timer, []}) ->
                             {ok, fun M({timeout, _}) -> reject; M({exit, _, _}) -> accept; M(_) -> M end};
                        (_) -> undefined
                     end,
         {ok, R3} = Run({riarc_demo_timers, nobody_timer, []}, NoTimeout, #{log => false}),
         ?assertMatch({[{inconclusive, {ambiguous_timeout, _}}], [{riarc_session, {ambiguous_timer, _}}]}, Read(R3))
     end || Run <- [fun riarc_central:run/3, fun riarc:run/3]].

timeout_test() ->
    {error, {riarc_central, {timeout, 200, Alive} = E}} =
        riarc_central:run({riarc_api_tests, service, []}, fun(_) -> undefined end,
                          #{timeout => 200, log => false}),
    ?assertMatch([_], Alive),
    [Pid] = Alive,
    ?assertMatch({match, _}, re:run(riarc_central:format_error(E), "1 traced process")),
    Pid ! stop.

%% Trace patterns as riarc's: the VM traces only the messages they keep, for centralised
%% monitoring as for riarc, so both see the same events and give the same verdicts. Here
%% sends are not traced and only the receives of `req': P's monitor expects its local
%% trace without its send, Q's with its receive. The node's patterns are back afterwards.
trace_patterns_test_() ->
    Patterns = #{send => false, 'receive' => [{['_', '_', req], [], []}]},
    Spec = fun({riarc_demo_pqr, Role, []}) ->
                   {ok, trace_monitor(riarc_demo_pqr:local_traces(Role) -- [send])}
           end,
    Opts = #{log => false, trace_patterns => Patterns},
    Expected = lists:sort([{{riarc_demo_pqr, R, []}, accept} || R <- [p, q, r]]),
    [{atom_to_list(Name),
      fun() ->
              Before = riarc_trace_pattern:installed(),
              {ok, Res} = Run({riarc_demo_pqr, p, []}, Spec, Opts),
              ?assertEqual(Expected, verdicts(Res)),
              ?assertEqual(Before, riarc_trace_pattern:installed())
      end} || {Name, Run} <- [{centralised, fun riarc_central:run/3}, {riarc, fun riarc:run/3}]].

%% With every message traced (no patterns), P's monitor sees its send and rejects the
%% trace without it: the patterns above are what made the difference.
no_trace_patterns_test() ->
    Spec = fun({riarc_demo_pqr, Role, []}) ->
                   {ok, trace_monitor(riarc_demo_pqr:local_traces(Role) -- [send])}
           end,
    {ok, Res} = riarc_central:run({riarc_demo_pqr, p, []}, Spec, #{log => false}),
    ?assertEqual([{{riarc_demo_pqr, p, []}, reject}, {{riarc_demo_pqr, q, []}, accept},
                  {{riarc_demo_pqr, r, []}, accept}], verdicts(Res)).

%% A system that takes itself, or a child, out of the tracer's view (riarc_demo_untracer),
%% then takes the message its monitor forbids: never an accept, and never a run that
%% waits for ever (no timeout here). Every entry is an error saying what cut it, and the
%% verdicts are riarc's.
untracing_test_() ->
    [{atom_to_list(How), {timeout, 60, fun() -> untracing(How) end}} || How <- riarc_demo_untracer:hows()].

untracing(How) ->
    Mon = fun M({recv, _, {error, _}}) -> reject; M({exit, _, normal}) -> accept; M(_) -> M end,
    Spec = fun(_) -> {ok, Mon} end,
    MFA = {riarc_demo_untracer, run, [How]},
    [{ok, C}, {ok, R}] = [Run(MFA, Spec, #{}) || Run <- [fun riarc_central:run/3, fun riarc:run/3]],
    #{verdicts := Vs} = C,
    [Root] = [P || #{pid := P, mfa := {riarc_demo_untracer, run, _}} <- Vs],
    ?assertMatch([#{verdict := error, reason := {cut, #{process := Root}}}],
                 [V || V = #{pid := P} <- Vs, P =:= Root]),
    [?assertMatch(#{verdict := error, reason := {cut, _}}, V) || V <- Vs],
    ?assertEqual(1, riarc_result:status(C)),
    ?assertEqual(verdicts(R), verdicts(C)).

%% A reject reached before the process cut its own view stands, as under riarc.
decided_before_cut_test() ->
    Mon = fun M({recv, _, {error, _}}) -> reject; M({exit, _, normal}) -> accept; M(_) -> M end,
    {ok, C} = riarc_central:run({riarc_demo_untracer, decided_first, []}, fun(_) -> {ok, Mon} end, #{}),
    ?assertMatch([#{verdict := reject}], maps:get(verdicts, C)).

%% The node's receive pattern turned off by someone outside the system, after which a
%% process takes the forbidden message and ends before any look
%% (riarc_demo_untracer:outsider_patterns/1): the central tracer's last look finds the
%% change, and the accept in since the look before is an error, as riarc's session makes
%% it. Before, the central tracer made no last look and accepted.
patterns_changed_before_end_test_() ->
    [{atom_to_list(Sys), {timeout, 60, fun() ->
        Mon = fun M({recv, _, {error, _}}) -> reject; M({exit, _, normal}) -> accept; M(_) -> M end,
        Before = riarc_trace_pattern:installed(),
        H = riarc_demo_outsider:start(),
        {ok, C} = riarc_central:run({riarc_demo_untracer, Sys, [H]}, fun(_) -> {ok, Mon} end, #{}),
        exit(H, kill),
        ?assertMatch([#{verdict := error, reason := {cut, #{call := {patterns_changed, _},
                                                             verdict_on_partial_trace := accept}}}],
                     maps:get(verdicts, C)),
        ?assertEqual(1, riarc_result:status(C)),
        ?assertEqual(Before, riarc_trace_pattern:installed())
    end}} || Sys <- [outsider_patterns, outsider_ends]].

%% A process whose flags someone outside the system took (riarc_demo_untracer:outsider/1):
%% no call shows it, and no exit of its will come. The central tracer looks at how the VM
%% traces the system, as riarc's tracers do: the run ends, an error for the cut, as
%% riarc's; before, it waited for the exit for ever.
outsider_cut_test_() ->
    {timeout, 60, fun() ->
        Mon = fun M({recv, _, {error, _}}) -> reject; M({exit, _, normal}) -> accept; M(_) -> M end,
        H = riarc_demo_outsider:start(),
        MFA = {riarc_demo_untracer, outsider, [H]},
        {ok, C} = riarc_central:run(MFA, fun(_) -> {ok, Mon} end, #{}),
        ?assertMatch([#{verdict := error, reason := {cut, #{call := {flags_removed, _}}}}],
                     maps:get(verdicts, C)),
        ?assertEqual(1, riarc_result:status(C)),
        exit(H, kill)
    end}.
