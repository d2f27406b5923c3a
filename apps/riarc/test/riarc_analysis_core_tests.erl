%% One partition's analysis (riarc_analysis_core): a reject's explanation holds exactly the
%% partition's last `explain' events, in order, whatever the trace's length (the window is
%% trimmed every few steps, not at each); an accept's words are the monitor's own.
-module(riarc_analysis_core_tests).

-include_lib("eunit/include/eunit.hrl").

%% Rejects at the N-th event, a receive of `stop'.
rejecting() ->
    fun M({recv, _, stop}) -> reject;
        M(_) -> M
    end.

window_test_() ->
    [{lists:flatten(io_lib:format("explain ~b, ~b events", [K, N])),
      fun() ->
              A0 = riarc_analysis_core:new(t, K, {p, {m, f, []}}, rejecting()),
              Events = [{recv, p, I} || I <- lists:seq(1, N - 1)] ++ [{recv, p, stop}],
              {done, _, Told} = lists:foldl(fun(E, {next, A, _}) -> riarc_analysis_core:step(E, A);
                                              (_, Done) -> Done
                                           end, {next, A0, []}, Events),
              Entry = riarc_analysis_core:entry(Told),
              ?assertMatch(#{verdict := reject, events := N, why := #{event_no := N}}, Entry),
              Expected = lists:nthtail(max(0, N - K), Events),
              ?assertEqual(Expected, maps:get(last_events, maps:get(explanation, Entry)))
      end} || K <- [1, 2, 3, 8], N <- lists:seq(1, 30)].

%% No explanation at all with explain 0: nothing kept.
no_window_test() ->
    A0 = riarc_analysis_core:new(t, 0, {p, {m, f, []}}, rejecting()),
    {next, A1, []} = riarc_analysis_core:step({recv, p, 1}, A0),
    {done, _, Told} = riarc_analysis_core:step({recv, p, stop}, A1),
    ?assertMatch(#{explanation := #{last_events := []}}, riarc_analysis_core:entry(Told)).

%% A verdict with words keeps them, as UTF-8 text in a binary whether the monitor gave
%% a string or a binary: the monitor is not asked again. Words that are not text make the
%% verdict an error, never an accept.
words_test() ->
    Entry = fun(Answer) ->
                    {done, _, Told} = riarc_analysis_core:step({exit, p, normal},
                                                               riarc_analysis_core:new(t, 8, {p, {m, f, []}},
                                                                                       fun(_) -> Answer end)),
                    riarc_analysis_core:entry(Told)
            end,
    ?assertMatch(#{verdict := accept, why := #{words := <<"done here">>, event_no := 1}},
                 Entry({accept, "done here"})),
    ?assertMatch(#{verdict := reject, why := #{words := <<"fin ", 8364/utf8>>}},
                 Entry({reject, <<"fin ", 8364/utf8>>})),
    ?assertMatch(#{verdict := error, reason := {bad_monitor_result, {accept, [-1]}}},
                 Entry({accept, [-1]})),
    ?assertMatch(#{verdict := error, reason := {bad_monitor_result, {accept, 42}}},
                 Entry({accept, 42})).
