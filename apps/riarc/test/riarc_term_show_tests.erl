%% riarc_term_show: small terms print as ~0tp prints them; big ones are cut, whatever
%% their size, in a line of bounded length, and a cut says so.
-module(riarc_term_show_tests).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-define(MAX_LINE, 700).

show(T) -> riarc_term_show:show(T).

%% A 1 MB binary: its first 64 bytes and its size, not a megabyte of text.
megabyte_binary_test() ->
    S = show(binary:copy(<<"abcd">>, 262144)),
    ?assertEqual("<<\"" ++ lists:append(lists:duplicate(16, "abcd")) ++ "\"...>> (1048576 bytes)", S),
    Bytes = show(<<0:(8 * 1048576)>>),
    ?assert(lists:prefix("<<0,0,0,", Bytes)),
    ?assert(lists:suffix(",...>> (1048576 bytes)", Bytes)),
    ?assert(length(Bytes) < 300).

%% A binary of 64 bytes is whole; one more byte, and it is cut.
binary_limit_test() ->
    B = binary:copy(<<"x">>, 64),
    ?assertEqual(lists:flatten(io_lib:format("~0tp", [B])), show(B)),
    ?assertMatch("<<\"xxxx" ++ _, show(<<B/binary, "y">>)),
    ?assert(lists:suffix("...>> (65 bytes)", show(<<B/binary, "y">>))).

%% UTF-8 text is cut where a character starts, so that it still prints as text.
utf8_cut_test() ->
    S = show(binary:copy(<<"é"/utf8>>, 100)),
    ?assert(lists:suffix("...>> (200 bytes)", S)),
    ?assertEqual(nomatch, string:find(S, "195")).

ref_and_fun_test() ->
    ?assertEqual("#Ref", show(make_ref())),
    ?assertEqual("#Fun", show(fun() -> ok end)),
    ?assertEqual("#Fun", show(fun lists:map/2)),
    ?assertEqual("{send,#Ref,[#Fun]}", show({send, make_ref(), [fun erlang:self/0]})).

%% A list nested 10 000 deep: cut at depth 8.
deep_list_test() ->
    Deep = lists:foldl(fun(_, Acc) -> [Acc] end, leaf, lists:seq(1, 10000)),
    ?assertEqual("[[[[[[[[...]]]]]]]]", show(Deep)),
    ?assertEqual("{a,{...}}", riarc_term_show:show({a, {b, {c, d}}}, #{depth => 2})),
    ?assertEqual("{a,{...},[...],#{...},\"str\"}",
                 riarc_term_show:show({a, {b, {c, d}}, [[1]], #{k => v}, "str"}, #{depth => 2})).

%% A huge integer: its size, not its digits.
huge_integer_test() ->
    ?assertEqual("#Integer<8000001 bits>", show(1 bsl 8000000)),
    ?assertEqual(integer_to_list(1 bsl 200), show(1 bsl 200)).

%% Long lists, tuples, maps and strings: their first elements, then `...'.
long_terms_test() ->
    ?assertEqual("[1,2,3,...]", riarc_term_show:show(lists:seq(1, 1000000), #{items => 3})),
    ?assertEqual("{1,2,...}", riarc_term_show:show(list_to_tuple(lists:seq(1, 100)), #{items => 2})),
    ?assertEqual("#{a => 1,...}", riarc_term_show:show(#{a => 1, b => 2}, #{items => 1})),
    ?assertEqual("\"" ++ lists:duplicate(64, $a) ++ "\"...", show(lists:duplicate(10000, $a))),
    ?assertEqual("[a,b|c]", show([a, b | c])).

%% A term that is wide at every level (2^40 leaves, shared) still makes one short line,
%% and fast: only what is shown is visited.
wide_term_test() ->
    Wide = lists:foldl(fun(_, Acc) -> {Acc, Acc} end, leaf, lists:seq(1, 40)),
    S = show(Wide),
    ?assert(length(S) =< ?MAX_LINE),
    ?assertNotEqual(nomatch, string:find(S, "...")).

%% Any term: one line, at most about the width long. A small one (shallow, short) prints
%% exactly as ~0tp prints it.
bounded_test_() ->
    {timeout, 120, ?_assert(riarc_test_tier:quickcheck(prop_bounded(), {300, 3000}))}.

prop_bounded() ->
    ?FORALL(T, any_term(),
            begin
                S = show(T),
                %% Printed only when small: ~0tp of a big term is what show/1 avoids.
                Small = erts_debug:flat_size(T) < 60 andalso depth(T) < 8
                    andalso length(lists:flatten(io_lib:format("~0tp", [T]))) < 60,
                length(S) =< ?MAX_LINE andalso string:find(S, "\n") =:= nomatch
                    andalso (not Small orelse S =:= lists:flatten(io_lib:format("~0tp", [T])))
            end).

any_term() ->
    ?SIZED(N, any_term(min(N, 30))).

any_term(N) when N < 2 ->
    oneof([integer(), float(), atom(), binary(), bitstring(), utf8(), list(char()),
           ?LET(B, binary(), binary:copy(B, 40))]);
any_term(N) ->
    frequency([{3, any_term(0)},
               {1, ?LAZY(list(any_term(N div 4)))},
               {1, ?LAZY(?LET(L, list(any_term(N div 4)), list_to_tuple(L)))},
               {1, ?LAZY(?LET(Ps, list({any_term(0), any_term(N div 4)}), maps:from_list(Ps)))},
               {1, ?LAZY(?LET({H, T}, {list(any_term(N div 4)), any_term(0)}, H ++ T))},
               {1, ?LAZY(?LET(T, any_term(N div 2), [[[[[[[[T]]]]]]]]))}]).

depth(T) when is_list(T) -> 1 + lists:max([0 | [depth(E) || E <- proper_list(T)]]);
depth(T) when is_tuple(T) -> 1 + lists:max([0 | [depth(E) || E <- tuple_to_list(T)]]);
depth(T) when is_map(T) -> 1 + lists:max([0 | [max(depth(K), depth(V)) || {K, V} <- maps:to_list(T)]]);
depth(_) -> 1.

proper_list([H | T]) -> [H | proper_list(T)];
proper_list([]) -> [];
proper_list(Tail) -> [Tail].
