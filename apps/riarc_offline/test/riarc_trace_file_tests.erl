%% Trace file formats: round trips, truncated files, malformed input (always an error
%% naming file and position, never a crash).
-module(riarc_trace_file_tests).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

events() ->
    [{init, p, undefined, {riarc_demo_pqr, p, []}},
     {spawn, p, 7, {riarc_demo_pqr, q, [a, "b", 3]}},
     {init, 7, p, {riarc_demo_pqr, q, [a, "b", 3]}},
     {send, p, 7, {req, <<"bin">>, 1.5, #{k => [v]}}},
     {recv, 7, {req, <<"bin">>, 1.5, #{k => [v]}}},
     {spawn, 7, self(), undefined},
     {exit, self(), {shutdown, why}},
     {exit, 7, normal},
     {exit, p, normal}].

binary_round_trip_test() ->
    F = tmp("rt.rtrc"),
    ok = riarc_trace_file:write(F, events(), #{}),
    {ok, Es, Info} = riarc_trace_file:read_all(F),
    ?assertEqual(events(), Es),
    ?assertMatch(#{format := binary, node := _, start_us := _, payloads := true,
                   truncated := false, events := 9}, Info).

binary_without_payloads_test() ->
    F = tmp("np.rtrc"),
    ok = riarc_trace_file:write(F, events(), #{payloads => false}),
    {ok, Es, #{payloads := false}} = riarc_trace_file:read_all(F),
    ?assertEqual([riarc_omitted], lists:usort([M || {send, _, _, M} <- Es] ++ [M || {recv, _, M} <- Es])),
    %% The MFA keeps its arity; exit reasons are always kept.
    ?assertMatch([{spawn, p, 7, {riarc_demo_pqr, q, [riarc_omitted, riarc_omitted, riarc_omitted]}} | _],
                 [E || E = {spawn, p, _, _} <- Es]),
    ?assert(lists:member({exit, 7, normal}, Es)).

text_round_trip_test() ->
    F = tmp("rt.txt"),
    ok = riarc_trace_file:write(F, events(), #{format => text}),
    {ok, Es, #{format := text}} = riarc_trace_file:read_all(F),
    %% Pids read back as pids (tagged in the file, which file:consult/1 still reads).
    ?assertEqual(events(), Es),
    {ok, Consulted} = file:consult(F),
    ?assertEqual(riarc_trace_text:readable(events()), Consulted).

%% Cut a binary trace at every byte: up to the header it is an error, after it the
%% events of the whole records are read and the cut is reported.
truncated_binary_test_() ->
    {timeout, 60, fun truncated_binary/0}.

truncated_binary() ->
    F = tmp("cut.rtrc"),
    ok = riarc_trace_file:write(F, events(), #{}),
    {ok, Bin} = file:read_file(F),
    HeaderLen = byte_size(riarc_trace_bin:encode_header(#{node => node(), start_us => 0,
                                                          payloads => true})),
    Counts = [begin
                  ok = file:write_file(F, binary:part(Bin, 0, Cut)),
                  case riarc_trace_file:read_all(F) of
                      {ok, Es, #{truncated := T}} ->
                          ?assert(Cut >= HeaderLen),
                          ?assertEqual(lists:sublist(events(), length(Es)), Es),
                          ?assert(T =:= false orelse (is_integer(T) andalso T =< Cut)),
                          length(Es);
                      {error, {riarc_trace_file, {bad_header, _, _}}} ->
                          ?assert(Cut < HeaderLen),
                          header
                  end
              end || Cut <- lists:seq(8, byte_size(Bin))],
    ?assertEqual(9, lists:last(Counts)).

malformed_binary_test() ->
    H = riarc_trace_bin:encode_header(#{node => node(), start_us => 0, payloads => true}),
    Proc = <<7:32, 1, 0:32, 1, "p">>,
    Cases = [{<<"RIARCTRC", 9, 0, 0:16, 0:64>>, bad_version},
             {<<"RIARCTRX", 1, 0>>, not_a_trace_file},
             {<<H/binary, 0:32>>, bad_record},
             {<<H/binary, 9:32, 6, 3:32, 0:32>>, unknown_process},
             {<<H/binary, Proc/binary, 6:32, 99, 0:40>>, bad_record},
             {<<H/binary, Proc/binary, Proc/binary>>, bad_record},
             {<<H/binary, 16#7fffffff:32, 2>>, too_big},
             {<<H/binary, Proc/binary, 9:32, 4, 0:32, 99:32>>, bad_record},
             {<<H/binary, Proc/binary, 3:32, 4, 0:16>>, bad_record}],
    [check_error(Bytes, Kind) || {Bytes, Kind} <- Cases].

check_error(Bytes, Kind) ->
    F = tmp("bad.rtrc"),
    ok = file:write_file(F, Bytes),
    Result = riarc_trace_file:read_all(F),
    ?assertMatch({error, {riarc_trace_file, _}}, Result),
    {error, {riarc_trace_file, Reason} = Why} = Result,
    ?assertEqual(Kind, element(1, Reason)),
    Msg = riarc_trace_file:format_error(Why),
    ?assertNotEqual(nomatch, string:find(Msg, F)).

%% An undecodable payload (corrupt bytes, or atoms this node does not know) keeps its
%% event and is counted.
undecodable_payload_test() ->
    H = riarc_trace_bin:encode_header(#{node => node(), start_us => 0, payloads => true}),
    Proc = <<7:32, 1, 0:32, 1, "p">>,
    Junk = <<131, 100, 0, 3, "zzz">>, % ATOM_EXT is fine; make it unknown below
    Unknown = <<131, 119, 12, "riarc_nosuch">>,
    Rec = fun(T) -> <<(1 + 4 + 4 + byte_size(T)):32, 6, 0:32, (byte_size(T)):32, T/binary>> end,
    F = tmp("undec.rtrc"),
    ok = file:write_file(F, <<H/binary, Proc/binary, (Rec(Junk))/binary, (Rec(Unknown))/binary>>),
    {ok, [{recv, p, zzz}, {recv, p, {riarc_unknown_atom, <<"riarc_nosuch">>}}],
     #{undecodable := 0, unknown_atoms := 1}} = riarc_trace_file:read_all(F),
    Corrupt = <<131, 104, 9>>,
    ok = file:write_file(F, <<H/binary, Proc/binary, (Rec(Corrupt))/binary>>),
    {ok, [{recv, p, {riarc_undecodable, Corrupt}}], #{undecodable := 1}} =
        riarc_trace_file:read_all(F).

malformed_text_test() ->
    Cases = [{"{exit, a, normal}.\n{exit, a\n", syntax},
             {"{exit, a, normal}.\n\n{boom, a}.\n", {not_an_event, {line, 3}}},
             {"{spawn, a, b, {m, \"f\", []}}.\n", {not_an_event, {line, 1}}},
             {"{exit, a, normal}.\nfoo bar.\n", syntax}],
    [begin
         F = tmp("bad.txt"),
         ok = file:write_file(F, Text),
         {error, {riarc_trace_file, Why}} = riarc_trace_file:read_all(F),
         case Kind of
             syntax -> ?assertMatch({syntax, _, _, _}, Why);
             {not_an_event, Pos} -> ?assertMatch({not_an_event, _, Pos, _}, Why)
         end,
         ?assertNotEqual(nomatch, string:find(riarc_trace_file:format_error(Why), F))
     end || {Text, Kind} <- Cases].

malformed_dbg_test() ->
    F = tmp("bad.dbg"),
    Msg = term_to_binary({trace, self(), exit, normal}),
    Good = <<0, (byte_size(Msg)):32, Msg/binary>>,
    ok = file:write_file(F, <<Good/binary, 1, 5:32, Good/binary>>),
    {ok, [_, _], #{dropped := 5}} = riarc_trace_file:read_all(F),
    At = byte_size(Good),
    ok = file:write_file(F, <<Good/binary, 7, 0:32>>),
    ?assertMatch({error, {riarc_trace_file, {bad_record, _, At, _}}}, riarc_trace_file:read_all(F)),
    ok = file:write_file(F, <<Good/binary, 0, 3:32, 131, 1, 2>>),
    ?assertMatch({error, {riarc_trace_file, {bad_term, _, At}}}, riarc_trace_file:read_all(F)),
    X = term_to_binary(x),
    ok = file:write_file(F, <<Good/binary, 0, (byte_size(X)):32, X/binary>>),
    ?assertMatch({error, {riarc_trace_file, {bad_record, _, At, _}}}, riarc_trace_file:read_all(F)),
    ok = file:write_file(F, <<Good/binary, Good:10/binary>>),
    ?assertMatch({ok, [_], #{truncated := At}}, riarc_trace_file:read_all(F)).

open_errors_test() ->
    ?assertMatch({error, {riarc_trace_file, {open, _, enoent}}}, riarc_trace_file:read_all(tmp("missing"))),
    ?assertMatch({error, {riarc_trace_file, {write, _, _}}}, riarc_trace_file:write("/nonexistent/x", [], #{})).

%%% ---------------------------------------------------------------------------
%%% PropEr: random traces round-trip; random corruption never crashes the reader
%%% ---------------------------------------------------------------------------

round_trip_prop_test_() ->
    {timeout, 60, fun() ->
        ?assert(riarc_test_tier:quickcheck(prop_round_trip(), {100, 200}))
    end}.

corruption_prop_test_() ->
    {timeout, 60, fun() ->
        ?assert(riarc_test_tier:quickcheck(prop_corruption(), {150, 500}))
    end}.

prop_round_trip() ->
    ?FORALL(Es, list(event()),
            begin
                F = tmp("prop.rtrc"),
                ok = riarc_trace_file:write(F, Es, #{}),
                {ok, Read, _} = riarc_trace_file:read_all(F),
                Read =:= Es
            end).

prop_corruption() ->
    ?FORALL({Es, Flips, Cut}, {non_empty(list(event())), list({non_neg_integer(), byte()}),
                               non_neg_integer()},
            begin
                F = tmp("corrupt.rtrc"),
                ok = riarc_trace_file:write(F, Es, #{}),
                {ok, Bin} = file:read_file(F),
                ok = file:write_file(F, corrupt(Bin, Flips, Cut)),
                case riarc_trace_file:read_all(F) of
                    {ok, Read, _} -> is_list(Read);
                    {error, Why} -> is_list(riarc_trace_file:format_error(Why))
                end
            end).

corrupt(Bin, Flips, Cut) ->
    B1 = lists:foldl(fun({At, Byte}, B) ->
                             P = At rem byte_size(B),
                             <<Pre:P/binary, _, Post/binary>> = B,
                             <<Pre/binary, Byte, Post/binary>>
                     end, Bin, Flips),
    binary:part(B1, 0, byte_size(B1) - (Cut rem (byte_size(B1) div 2 + 1))).

sid() -> oneof([name(), non_neg_integer(), integer(), exactly(self())]).
mfa() -> oneof([undefined, {name(), name(), list(term())}]).
name() -> elements([p, q, r, 'with space', 'ünï']).

event() ->
    oneof([{init, sid(), sid(), mfa()}, {spawn, sid(), sid(), mfa()}, {exit, sid(), term()},
           {send, sid(), sid(), term()}, {recv, sid(), term()}]).

tmp(Name) ->
    filename:join(riarc_test_tmp:dir("riarc_trace_file_tests"), Name).
