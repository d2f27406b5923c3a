%% Export of recordings: a recorded run of P/Q/R in the Chrome trace-event format decodes
%% (riarc_json) into traceEvents with one slice per event, one thread per process and one
%% flow per message received; --max-events cuts with the sentence in the output; the
%% HTML chart of a trace; a file that is not a trace is an error and writes nothing.
-module(riarc_trace_export_tests).

-include_lib("eunit/include/eunit.hrl").

dir() -> riarc_test_tmp:dir("riarc_trace_export_tests").

recorded() ->
    File = filename:join(dir(), "pqr.rtrc"),
    {ok, #{events := 10}} = riarc_offline:record({riarc_demo_pqr, p, []}, File, #{}),
    {ok, Events, _} = riarc_trace_file:read_all(File),
    {File, Events}.

decode(File) ->
    {ok, Bin} = file:read_file(File),
    {ok, Doc = #{<<"traceEvents">> := Evs}} = riarc_json:decode(Bin),
    {Doc, Evs}.

phase(Ph, Evs) -> [E || E = #{<<"ph">> := P} <- Evs, P =:= Ph].

chrome_test() ->
    {File, Events} = recorded(),
    Out = filename:join(dir(), "pqr.json"),
    ?assertEqual({ok, #{events => 10, cut => false}},
                 riarc_trace_export:export(File, Out, #{format => chrome})),
    {Doc, Evs} = decode(Out),
    %% One slice per event, in file order, each on its process's thread.
    Slices = phase(<<"X">>, Evs),
    ?assertEqual(length(Events), length(Slices)),
    ?assertEqual([atom_to_binary(riarc_event:kind(E)) || E <- Events],
                 [C || #{<<"cat">> := C} <- Slices]),
    Procs = lists:usort([riarc_event:origin(E) || E <- Events]
                        ++ [To || {send, _, To, _} <- Events] ++ [C || {spawn, _, C, _} <- Events]),
    Threads = [E || E = #{<<"name">> := <<"thread_name">>} <- phase(<<"M">>, Evs)],
    ?assertEqual(length(Procs), length(Threads)),
    %% P's req to Q, received: one flow, its start on P's thread and its end on Q's.
    ?assertMatch([#{<<"id">> := Id}, #{<<"id">> := Id}], phase(<<"s">>, Evs) ++ phase(<<"f">>, Evs)),
    [#{<<"tid">> := From}] = phase(<<"s">>, Evs),
    [#{<<"tid">> := To}] = phase(<<"f">>, Evs),
    ?assertNotEqual(From, To),
    %% Nothing was cut, and the output does not say it was.
    ?assertEqual([], phase(<<"i">>, Evs)),
    ?assertNot(is_map_key(<<"note">>, maps:get(<<"otherData">>, Doc))).

cut_test() ->
    {File, _} = recorded(),
    Out = filename:join(dir(), "cut.json"),
    ?assertEqual({ok, #{events => 4, cut => true}},
                 riarc_trace_export:export(File, Out, #{format => chrome, max_events => 4})),
    {Doc, Evs} = decode(Out),
    ?assertEqual(4, length(phase(<<"X">>, Evs))),
    Sentence = list_to_binary(riarc_trace_export:cut_sentence(4)),
    ?assertMatch([#{<<"name">> := Sentence, <<"s">> := <<"g">>}], phase(<<"i">>, Evs)),
    ?assertEqual(Sentence, maps:get(<<"note">>, maps:get(<<"otherData">>, Doc))),
    %% Exactly as many events as the bound: nothing is cut.
    ?assertMatch({ok, #{events := 10, cut := false}},
                 riarc_trace_export:export(File, Out, #{format => chrome, max_events => 10})).

html_test() ->
    {File, Events} = recorded(),
    Out = filename:join(dir(), "pqr.html"),
    {ok, #{events := 10}} = riarc_trace_export:export(File, Out, #{format => html}),
    {ok, Html} = file:read_file(Out),
    ?assertEqual(length(riarc_chart:lifelines(#{process => riarc_event:origin(hd(Events)),
                                                last_events => Events})),
                 length(binary:matches(Html, <<"<g class=\"lifeline\">">>))),
    ?assertEqual(10, length(binary:matches(Html, <<"<g class=\"ev ">>))),
    {ok, #{cut := true}} = riarc_trace_export:export(File, Out, #{format => html, max_events => 3}),
    {ok, Cut} = file:read_file(Out),
    ?assertMatch({_, _}, binary:match(Cut, list_to_binary(riarc_trace_export:cut_sentence(3)))).

bad_file_test() ->
    Bad = filename:join(dir(), "bad.txt"),
    ok = file:write_file(Bad, "this is not a trace\n"),
    Out = filename:join(dir(), "bad.json"),
    _ = file:delete(Out),
    ?assertMatch({error, {riarc_trace_file, _}},
                 riarc_trace_export:export(Bad, Out, #{format => chrome})),
    ?assertNot(filelib:is_file(Out)),
    {error, Reason} = riarc_trace_export:export(filename:join(dir(), "none"), Out, #{format => chrome}),
    ?assertMatch([_ | _], riarc:format_error(Reason)),
    {File, _} = recorded(),
    {error, Write} = riarc_trace_export:export(File, "/nonexistent-dir/x.json", #{format => chrome}),
    ?assertMatch({riarc_trace_export, {write, _, enoent}}, Write),
    ?assertEqual("cannot write /nonexistent-dir/x.json: no such file or directory",
                 riarc:format_error(Write)).
