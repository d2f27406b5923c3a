%% riarc_result_json: a verdict entry as a JSON object that riarc_json encodes and reads
%% back, with what the text says (the why line, the explanation), its terms bounded as
%% the text's are; and the text explanation bounded too.
-module(riarc_result_json_tests).

-include_lib("eunit/include/eunit.hrl").

-define(MB, <<0:(8 * 1048576)>>).

%% A reject with its explanation: a ref in the deciding event, a 1 MB binary in the
%% monitor's state.
rejected() ->
    Deciding = {send, self(), make_ref(), {reply, ?MB}},
    (riarc_result:entry(self(), {riarc_demo_pqr, p, []}, reject, 2, undefined))#{
        why => #{event_no => 2, event => Deciding, words => <<"ff reached">>},
        explanation => #{process => self(), mfa => {riarc_demo_pqr, p, []},
                         last_events => [{init, self(), self(), {riarc_demo_pqr, p, []}}, Deciding],
                         deciding_event => Deciding,
                         monitor => #{state => {waiting, ?MB, fun() -> ok end}, words => <<"ff reached">>}}}.

decode(Map) ->
    {ok, Decoded} = riarc_json:decode(riarc_json:encode(Map)),
    Decoded.

reject_entry_test() ->
    E = rejected(),
    J = decode(riarc_result_json:entry(E)),
    Pid = list_to_binary(pid_to_list(self())),
    Node = atom_to_binary(node()),
    ?assertMatch(#{<<"pid">> := Pid, <<"node">> := Node,
                   <<"mfa">> := <<"riarc_demo_pqr:p/0">>, <<"verdict">> := <<"reject">>,
                   <<"events">> := 2}, J),
    #{<<"why">> := Why, <<"explanation">> := Ex} = J,
    ?assertMatch(#{<<"event_no">> := 2, <<"words">> := <<"ff reached">>}, Why),
    %% The why object's text is the text's why line.
    ?assertEqual(list_to_binary(string:trim(riarc_result:format_why(E), leading)),
                 maps:get(<<"text">>, Why)),
    #{<<"events">> := [_, Last], <<"deciding_event">> := Deciding, <<"state">> := State,
      <<"words">> := <<"ff reached">>} = Ex,
    ?assertEqual(Last, Deciding),
    %% Bounded: the ref and the fun elided, the megabyte cut with its size.
    [?assert(byte_size(T) < 700) || T <- [Deciding, State, maps:get(<<"event">>, Why)]],
    ?assertNotEqual(nomatch, binary:match(Deciding, <<"#Ref,">>)),
    ?assertNotEqual(nomatch, binary:match(State, <<"(1048576 bytes)">>)),
    ?assertNotEqual(nomatch, binary:match(State, <<"#Fun}">>)),
    ?assertEqual(nomatch, binary:match(Deciding, <<"#Ref<">>)).

%% The text explanation: every line bounded, the megabyte said by its size.
text_explanation_bounded_test() ->
    Lines = string:lexemes(riarc_result:format_explanation(rejected()), "\n"),
    ?assertEqual(5, length(Lines)),
    [?assert(length(L) < 700) || L <- Lines],
    ?assertMatch("    monitor state: {waiting,<<0,0," ++ _, lists:last(Lines)),
    ?assert(lists:suffix("(1048576 bytes),#Fun}", lists:last(Lines))).

%% A process a trace names by text, and an error's reason.
text_pid_and_reason_test() ->
    E = riarc_result:entry(<<"<0.90.0>">>, {m, f, [1]}, error, 0, {crashed, make_ref()}),
    ?assertEqual(#{<<"pid">> => <<"<0.90.0>">>, <<"node">> => null, <<"mfa">> => <<"m:f/1">>,
                   <<"verdict">> => <<"error">>, <<"events">> => 0,
                   <<"reason">> => <<"{crashed,#Ref}">>,
                   <<"why">> => #{<<"text">> => <<"reason: {crashed,#Ref}">>}},
                 decode(riarc_result_json:entry(E))).

%% A partition whose trace ended without a verdict.
no_verdict_test() ->
    E = (riarc_result:entry(list_to_pid("<0.5.0>"), {m, f, []}, none, 3, undefined))#{
          why => #{ended_after => 3}},
    ?assertMatch(#{<<"verdict">> := <<"none">>,
                   <<"why">> := #{<<"ended_after">> := 3,
                                  <<"text">> := <<"no verdict: the partition's trace ended after 3 events">>}},
                 decode(riarc_result_json:entry(E))).

counts_test() ->
    E = riarc_result:entry(p, {m, f, []}, accept, 1, undefined),
    ?assertEqual(#{accept => 2, reject => 1},
                 riarc_result_json:counts([E, E, E#{verdict := reject}])),
    ?assertEqual(#{}, riarc_result_json:counts([])).

%% Text that is not UTF-8 (a name from a foreign trace) is shown as a term, not refused.
not_utf8_test() ->
    ?assertEqual(<<"abc">>, riarc_result_json:text("abc")),
    ?assertEqual(<<"\"é\""/utf8>>, riarc_result_json:text([<<"\"">>, 233, <<"\"">>])),
    Bad = riarc_result_json:text([<<255, 254>>]),
    ?assertEqual(unicode:characters_to_binary(io_lib:format("~0tp", [[<<255, 254>>]])), Bad),
    ?assertMatch({ok, _}, riarc_json:decode(riarc_json:encode(Bad))).
