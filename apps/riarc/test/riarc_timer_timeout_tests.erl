%% @doc A timer set to send the atom `timeout' (erlang:send_after/3,4): the clock service
%% delivers its message, and the VM traces it exactly as a receive timeout of its
%% receiver's. riarc sees the timer's call (riarc_trace_pattern's call patterns) and reads
%% the receiver's timeouts from then on both ways: when the monitor answers both alike the
%% step stands, otherwise the partition is inconclusive; a timer to another process makes
%% the run an error. Before, such a message read as a timeout: `[P ? timeout] ff'
%% accepted a process that took the message `timeout', and `[P ?? timeout] ff' rejected
%% one that never timed out.
-module(riarc_timer_timeout_tests).

-include_lib("eunit/include/eunit.hrl").

-define(SYS, riarc_demo_timers).

%% Monitors of the system's root only: rejecting on the message `timeout', rejecting on
%% a timeout, or indifferent to both; each accepts at the exit.
spec(Reject) ->
    fun({?SYS, F, []}) when F =/= '-other_timer/0-fun-0-' -> {ok, monitor(Reject)};
       (_) -> undefined
    end.

monitor(Reject) ->
    fun M(E) ->
            case {Reject, E} of
                {message, {recv, _, timeout}} -> reject;
                {timeout, {timeout, _}} -> reject;
                {_, {exit, _, _}} -> accept;
                _ -> M
            end
    end.

%% Each backend, and the monitors in their tracers or in analysis processes of their own.
runs() ->
    [{list_to_atom(atom_to_list(B) ++ "/" ++ atom_to_list(A)),
      fun(MFA, Spec) -> riarc:run(MFA, Spec, #{log => false, backend => B, analysis => A}) end}
     || B <- [route, evm], A <- [inline, isolated]].

root_verdict(#{verdicts := Vs}, F) ->
    [V] = [{Verdict, maps:get(reason, E, none)} || E = #{mfa := {?SYS, F1, []}, verdict := Verdict} <- Vs,
                                                   F1 =:= F],
    V.

%% A timer to itself: a monitor that tells the message from a timeout is inconclusive,
%% saying which event; one that does not accepts. With either backend, through
%% send_after/3 and /4, and to its own name.
self_timer_test_() ->
    [{atom_to_list(B) ++ " " ++ atom_to_list(F),
      fun() ->
              [?assertMatch({{inconclusive, {ambiguous_timeout, #{event_no := 2}}}, _},
                            {root_verdict(ok(Run({?SYS, F, []}, spec(Reject))), F), Reject})
               || Reject <- [message, timeout]],
              {ok, R} = Run({?SYS, F, []}, spec(none)),
              ?assertEqual({accept, none}, root_verdict(R, F)),
              case {F, maps:get(errors, R)} of
                  %% Race: the process may have ended, and its name gone with it, before
                  %% its tracer decodes the timer's call: the name may then have been
                  %% another's, and the run is an error too.
                  {named_timer, [{riarc_session, {ambiguous_timer, #{to := riarc_demo_timers_named}}}]} ->
                      ?assertEqual(1, riarc_result:status(R));
                  {_, Errors} ->
                      ?assertEqual({[], 0}, {Errors, riarc_result:status(R)})
              end
      end} || {B, Run} <- runs(), F <- [self_timer, self_timer4, named_timer]].

%% A timer to another process: that process's trace cannot be read, whichever partition
%% it is in: an error of the run, whatever the verdicts.
other_timer_test_() ->
    [{atom_to_list(B), fun() ->
                               {ok, R} = Run({?SYS, other_timer, []}, spec(none)),
                               ?assertMatch([{riarc_session, {ambiguous_timer, #{process := _, to := _}}}],
                                            maps:get(errors, R)),
                               ?assertEqual(1, riarc_result:status(R)),
                               [E] = maps:get(errors, R),
                               ?assertMatch({match, _}, re:run(riarc_error:format(E), "traces exactly as a receive timeout"))
                       end} || {B, Run} <- runs()].

%% A timer to a name its process does not hold when the call is decoded: the name may
%% have been its own or another's, so both: its timeouts are read both ways, and the run
%% is an error.
nobody_timer_test_() ->
    [{atom_to_list(B), fun() ->
                               {ok, R} = Run({?SYS, nobody_timer, []}, spec(timeout)),
                               ?assertMatch({inconclusive, {ambiguous_timeout, _}}, root_verdict(R, nobody_timer)),
                               ?assertMatch([{riarc_session, {ambiguous_timer, #{to := riarc_demo_timers_nobody}}}],
                                            maps:get(errors, R))
                       end} || {B, Run} <- runs()].

%% Without a timer, a timeout is a timeout: nothing changes.
plain_timeout_test_() ->
    [{atom_to_list(B), fun() ->
                               ?assertEqual({reject, none}, root_verdict(ok(Run({?SYS, plain_timeout, []}, spec(timeout))), plain_timeout)),
                               ?assertEqual({accept, none}, root_verdict(ok(Run({?SYS, plain_timeout, []}, spec(message))), plain_timeout))
                       end} || {B, Run} <- runs()].

%% The call decoded, the timer's receiver named as the traced process when it is its own
%% name, and the analysis of both readings.
call_event_test() ->
    P = self(),
    ?assertEqual({timer_timeout, P, P}, riarc_trace_pattern:call_event(P, {erlang, send_after, [5, P, timeout]})),
    ?assertEqual({timer_timeout, P, other}, riarc_trace_pattern:call_event(P, {erlang, send_after, [5, other, timeout, []]})),
    true = register(riarc_timer_timeout_tests_me, P),
    try ?assertEqual({timer_timeout, P, P},
                     riarc_trace_pattern:call_event(P, {erlang, send_after, [5, riarc_timer_timeout_tests_me, timeout]}))
    after unregister(riarc_timer_timeout_tests_me)
    end,
    Other = spawn(fun() -> ok end),
    ?assertEqual([own, both, other], [riarc_analysis_core:timer_reading(P, D) || D <- [P, some_name, Other]]).

analysis_test() ->
    A0 = riarc_analysis_core:new(t0, 8, {p, {m, f, []}}, monitor(message)),
    %% Before the timer a timeout is a timeout.
    {next, A1, []} = riarc_analysis_core:step({timeout, p}, A0),
    {next, A2, []} = riarc_analysis_core:step({timer_timeout, p, p}, A1),
    ?assertEqual(1, riarc_analysis_core:analysed(A2)),
    %% Another process's timeouts are not this one's.
    {next, A3, []} = riarc_analysis_core:step({timeout, q}, A2),
    {done, _, [{riarc_verdict, t0, p, {m, f, []}, inconclusive, {ambiguous_timeout, #{event_no := 3, process := p}}, 3}]} =
        riarc_analysis_core:step({timeout, p}, A3),
    %% A monitor that answers both readings alike goes on.
    B0 = riarc_analysis_core:new(t0, 8, {p, {m, f, []}}, monitor(none)),
    {next, B1, []} = riarc_analysis_core:step({timer_timeout, p, p}, B0),
    {next, B2, []} = riarc_analysis_core:step({timeout, p}, B1),
    {done, _, [{riarc_verdict, t0, p, {m, f, []}, accept, _, 2}]} = riarc_analysis_core:step({exit, p, normal}, B2).

ok({ok, R}) -> R.
