%% riarc_json: what it writes reads back as the same value, its output is JSON that
%% other parsers take (every string escaped), and bad input is an error with its place.
-module(riarc_json_tests).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

round_trip_test_() ->
    {timeout, 120, ?_assert(riarc_test_tier:quickcheck(prop_round_trip(), {100, 1000}))}.

%% Decoded values are maps with binary keys, binaries, numbers, lists and the three
%% literals: encoding one and decoding it gives it back.
prop_round_trip() ->
    ?FORALL(V, json(3), riarc_json:decode(riarc_json:encode(V)) =:= {ok, V}).

json(0) -> scalar();
json(N) ->
    oneof([scalar(),
           list(json(N - 1)),
           ?LET(Pairs, list({utf8(), json(N - 1)}), maps:from_list(Pairs))]).

scalar() ->
    oneof([true, false, null, integer(), float(), utf8()]).

encode_test_() ->
    [?_assertEqual(<<"{\"a\":1,\"b\":[true,null,\"c\"]}">>, riarc_json:encode(#{b => [true, null, c], a => 1})),
     ?_assertEqual(<<"\"\\\"\\\\\\n\\u0001\\u003c\"">>, riarc_json:encode(<<"\"\\\n", 1, "<">>)),
     ?_assertEqual(<<"\"\xc3\xa9\"">>, riarc_json:encode(<<"\xc3\xa9">>)),
     ?_assertEqual(<<"{\"7\":-2.5}">>, riarc_json:encode(#{7 => -2.5})),
     ?_assertError({riarc_json, {not_json, _}}, riarc_json:encode(self())),
     ?_assertError({riarc_json, {not_json, _}}, riarc_json:encode(<<255>>))].

decode_test_() ->
    [?_assertEqual({ok, #{<<"a">> => [1, 1.0e5, -0.5, <<"\xf0\x9f\x98\x80">>]}},
                   riarc_json:decode(<<" {\"a\" : [1, 1e5, -5E-1, \"\\ud83d\\ude00\"]} ">>)),
     ?_assertEqual({ok, <<"/\b\f\t">>}, riarc_json:decode(<<"\"\\/\\b\\f\\t\"">>)),
     ?_assertEqual({error, {riarc_json, {syntax, 6}}}, riarc_json:decode(<<"[1, 2 3]">>)),
     ?_assertEqual({error, {riarc_json, trailing_bytes}}, riarc_json:decode(<<"1 2">>)),
     ?_assertMatch({error, {riarc_json, {syntax, _}}}, riarc_json:decode(<<"\"\\udc00\"">>)),
     ?_assertMatch({error, {riarc_json, {syntax, _}}}, riarc_json:decode(<<"\"a">>)),
     ?_assertMatch({error, {riarc_json, {syntax, _}}}, riarc_json:decode(<<"\"a\nb\"">>)),
     ?_assertMatch({error, {riarc_json, {syntax, _}}}, riarc_json:decode(<<"-">>)),
     %% Untrusted input cannot nest without bound.
     ?_assertMatch({error, {riarc_json, {syntax, _}}},
                   riarc_json:decode(iolist_to_binary([lists:duplicate(100000, $[), lists:duplicate(100000, $])])))].

format_error_test() ->
    ?assertEqual("not JSON at byte 5", riarc_json:format_error({syntax, 5})).
