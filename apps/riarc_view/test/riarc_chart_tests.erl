%% Message sequence charts: the chart of a known reject (checked offline with a compiled
%% property, so its why names the clause) has one lifeline per process and peer, the
%% deciding event highlighted, the system's data escaped and the clause's file:line; an
%% error's chart gives its reason; labels stay bounded; sends join their receives.
-module(riarc_chart_tests).

-include_lib("eunit/include/eunit.hrl").

%% The trace's names, so that the offline reader finds them as atoms on this node.
-define(NAMES, [m, f, g, p, c, q, sup, hello, boom, reply, ok]).

%% P (m:f) spawns C, which is in its partition; P says hello to C, C sends a message
%% holding a script tag to Q; P gets a reply and sends boom to Q, which the property
%% forbids (line 5).
trace() ->
    "{init, p, sup, {m, f, []}}.\n"
    "{spawn, p, c, {m, g, []}}.\n"
    "{init, c, p, {m, g, []}}.\n"
    "{send, p, c, hello}.\n"
    "{recv, c, hello}.\n"
    "{send, c, q, \"<script>alert(1)</script>\"}.\n"
    "{recv, p, {reply, ok}}.\n"
    "{send, p, q, boom}.\n".

prop() ->
    "with m:f() monitor\n"
    "  [P <- _, m:f()]\n"
    "  max(X. and([_ -> _, _:_()] X, [_ <- _, _:_()] X, [_ ? _] X,\n"
    "             [_:_ ! Msg when Msg =/= boom] X,\n"
    "             [_:_ ! boom] ff)).\n".

files() ->
    _ = ?NAMES,
    Dir = riarc_test_tmp:dir("riarc_chart_tests"),
    Trace = filename:join(Dir, "t.txt"),
    Prop = filename:join(Dir, "chart_reject.prop"),
    ok = file:write_file(Trace, trace()),
    ok = file:write_file(Prop, prop()),
    {Trace, Prop}.

check(Trace, Spec) ->
    {ok, #{verdicts := Vs}} = riarc_offline:check(Trace, Spec, #{}),
    Vs.

%% A generous timeout: run first in a VM, this test starts the riarc application and loads
%% its modules, which under `make test' beside other loaded work took over EUnit's default
%% 5 s (the application controller's start call timed out).
known_reject_test_() ->
    {timeout, 60, fun known_reject/0}.

known_reject() ->
    {Trace, Prop} = files(),
    {ok, Mod} = riarc_shml:load_file(Prop),
    Vs = check(Trace, Mod),
    [Reject] = [E || E = #{verdict := reject} <- Vs],
    %% The clause that decided, as data in the why map: the necessity on line 5.
    ?assertMatch(#{why := #{clause := {Prop, 5}}}, Reject),
    Html = iolist_to_binary(riarc_chart:html(Vs, #{})),
    %% One lifeline per process of the partition (p, its child c) and per peer (sup, q).
    ?assertEqual([p, c, sup, q], riarc_chart:lifelines(maps:get(explanation, Reject))),
    ?assertEqual(4, count(Html, <<"<g class=\"lifeline\">">>)),
    _ = [?assertMatch({match, _}, re:run(Html, ["class=\"lname\"[^>]*>", Name, "</text>"]))
         || Name <- ["p", "c", "sup", "q"]],
    %% The deciding event, and only it, is highlighted.
    ?assertEqual(1, count(Html, <<" deciding\">">>)),
    ?assertMatch({match, _}, re:run(Html, "<g class=\"ev send deciding\"><title>\\{send,p,q,boom\\}</title>")),
    %% The monitored system's data is escaped: the script tag shows as text.
    ?assertEqual(nomatch, binary:match(Html, <<"<script">>)),
    ?assertMatch({_, _}, binary:match(Html, <<"&quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;">>)),
    %% The clause's file:line and the verdict's sentence.
    ?assertMatch({_, _}, binary:match(Html, iolist_to_binary(["decided by the property clause at ",
                                                              riarc_chart:escape(Prop), ":5"]))),
    ?assertMatch({_, _}, binary:match(Html, iolist_to_binary(
                                              riarc_chart:escape(string:trim(riarc_result:format_why(Reject)))))),
    %% The page charts the reject only: the other verdicts are counted.
    ?assertEqual(1, count(Html, <<"<svg ">>)).

%% A monitor that crashes: an error, charted with its reason (escaped).
error_test() ->
    {Trace, _} = files(),
    Spec = fun({m, f, _}) -> {ok, fun M({send, _, _, boom}) -> error({bad, "<x>"}); M(_) -> M end};
              (_) -> undefined
           end,
    [#{verdict := error} = E] = check(Trace, Spec),
    Html = iolist_to_binary(riarc_chart:html([E], #{})),
    ?assertMatch({_, _}, binary:match(Html, <<"reason: {error,{bad,&quot;&lt;x&gt;&quot;}">>)),
    ?assertEqual(1, count(Html, <<" deciding\">">>)),
    ?assertEqual(nomatch, binary:match(Html, <<"<x>">>)).

%% No reject or error: the page says so, with no chart.
no_rejects_test() ->
    Html = iolist_to_binary(riarc_chart:html([#{pid => p, mfa => {m, f, []}, verdict => accept,
                                                events => 2}], #{})),
    ?assertMatch({_, _}, binary:match(Html, <<"no rejects or errors">>)),
    ?assertEqual(0, count(Html, <<"<svg ">>)).

%% A send and its receive, both in view, are one arrow: it ends at the receive's row. A
%% receive takes the oldest send of its message to it.
joins_test() ->
    ?assertEqual(#{{send, 0} => 2, {recv, 2} => 0, {send, 1} => 3, {recv, 3} => 1},
                 riarc_chart:joins([{send, p, q, m}, {send, r, q, m}, {recv, q, m}, {recv, q, m}])),
    ?assertEqual(#{}, riarc_chart:joins([{recv, q, m}, {send, p, q, m}])),
    Svg = iolist_to_binary(riarc_chart:events_svg([{send, p, q, m}, {recv, p, x}, {recv, q, m}], #{})),
    %% Rows are 30 px apart from y=76: the arrow leaves at row 0 and reaches row 2.
    ?assertMatch({match, _}, re:run(Svg, "<line class=\"msg\" x1=\"\\d+\" y1=\"76\" x2=\"[0-9.]+\" y2=\"1(2|3)\\d")).

%% Labels are bounded whatever the term: references and funs elided, long terms cut.
label_test() ->
    Big = {lists:seq(1, 100000), binary:copy(<<"x">>, 100000), make_ref(), fun() -> ok end,
           maps:from_list([{I, I} || I <- lists:seq(1, 1000)])},
    L = riarc_chart:label(Big, 200),
    ?assert(length(L) =< 200),
    ?assertMatch({match, _}, re:run(L, "#Ref,#Fun")),
    ?assert(length(riarc_chart:label(Big)) =< 44),
    ?assertEqual("{a,\"b\",<<\"c\">>,[1|2]}", riarc_chart:label({a, "b", <<"c">>, [1 | 2]})),
    ?assertEqual("&lt;&amp;&gt;&quot;&#39;", riarc_chart:escape("<&>\"'")).

count(Bin, Pat) -> length(binary:matches(Bin, Pat)).

%% riarc's own events, which no monitor sees, are drawn and exported with what they say:
%% a timer to send `timeout' and a call that may cut the view.
own_events_test() ->
    Evs = [{init, p, x, undefined}, {timer_timeout, p, p}, {cut, p, {trace, [p, false, [all]]}}],
    Svg = iolist_to_binary(riarc_chart:events_svg(Evs, #{})),
    ?assertNotEqual(nomatch, binary:match(Svg, <<"timer: timeout to p">>)),
    ?assertNotEqual(nomatch, binary:match(Svg, <<"class=\"cut\"">>)),
    ?assertNotEqual(nomatch, binary:match(Svg, <<"cut: trace call">>)),
    Json = iolist_to_binary(riarc_trace_export:chrome(Evs, #{})),
    ?assertNotEqual(nomatch, binary:match(Json, <<"cut: trace call">>)),
    %% What a recording's look found.
    Looked = iolist_to_binary(riarc_chart:events_svg([{init, p, x, undefined},
                                                      {cut, p, {flags_removed, [procs]}}], #{})),
    ?assertNotEqual(nomatch, binary:match(Looked, <<"cut: flags taken">>)).
