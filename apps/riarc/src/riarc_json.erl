%% @doc JSON (RFC 8259) for what riarc tells machines: `--format json' lines, the
%% dashboard's events, Chrome trace files. OTP 25 has no JSON module and Debian's jiffy
%% is a NIF more than this needs, so this is a small encoder and a decoder (the decoder
%% reads what others write: a trace exported for a browser, a test's check of a line).
%%
%% Erlang to JSON: a map is an object (keys atoms, binaries or integers), a list an
%% array, a binary a string (UTF-8), `true', `false' and `null' themselves, any other
%% atom a string, numbers as numbers. JSON to Erlang: objects are maps with binary keys,
%% strings binaries.
%% ```
%% 1> riarc_json:encode(#{verdict => reject, events => [1, 2.5, <<"x">>, null]}).
%% <<"{\"events\":[1,2.5,\"x\",null],\"verdict\":\"reject\"}">>
%% 2> riarc_json:decode(<<"{\"a\": [true, -1e2, \"x\\ny\"]}">>).
%% {ok,#{<<"a">> => [true,-100.0,<<"x\ny">>]}}
%% '''
-module(riarc_json).

-export([encode/1, decode/1, format_error/1]).
-export_type([json/0, error_reason/0]).

-type json() :: #{atom() | binary() | integer() => json()} | [json()] | binary() | atom()
              | number().
-type error_reason() :: {syntax, non_neg_integer()} | trailing_bytes | {not_json, term()}.

%% Strings nest at most this deep in a decoded document: input is untrusted.
-define(MAX_DEPTH, 512).

%% @doc The JSON text of Term. A term with no JSON form (a pid, a tuple, a string that is
%% not UTF-8) is a caller's bug: error `{riarc_json, {not_json, T}}'.
-spec encode(json()) -> binary().
encode(Term) ->
    iolist_to_binary(value(Term)).

value(true) -> <<"true">>;
value(false) -> <<"false">>;
value(null) -> <<"null">>;
value(A) when is_atom(A) -> string(atom_to_binary(A, utf8));
value(B) when is_binary(B) -> string(B);
value(I) when is_integer(I) -> integer_to_binary(I);
value(F) when is_float(F) -> float_to_binary(F, [short]);
value(L) when is_list(L) -> [$[, join([value(V) || V <- L]), $]];
value(M) when is_map(M) ->
    Pairs = lists:sort([{key(K), V} || {K, V} <- maps:to_list(M)]),
    [${, join([[string(K), $:, value(V)] || {K, V} <- Pairs]), $}];
value(T) -> erlang:error({?MODULE, {not_json, T}}).

key(K) when is_atom(K) -> atom_to_binary(K, utf8);
key(K) when is_binary(K) -> K;
key(K) when is_integer(K) -> integer_to_binary(K);
key(K) -> erlang:error({?MODULE, {not_json, K}}).

join([]) -> [];
join([H | T]) -> [H | [[$, | V] || V <- T]].

string(B) ->
    case unicode:characters_to_binary(B, utf8, utf8) of
        B -> [$", escape(B, <<>>), $"];
        _ -> erlang:error({?MODULE, {not_json, B}})
    end.

%% Runs of bytes that need no escape are copied as slices of B, not byte by byte: a
%% recording's export writes megabytes of strings.
escape(B, Acc) -> escape(B, B, 0, 0, Acc).

escape(<<C, R/binary>>, B, Start, Len, Acc)
  when C >= 16#20, C =/= $", C =/= $\\, C =/= $<, C =/= $>, C =/= $& ->
    escape(R, B, Start, Len + 1, Acc);
escape(<<C, R/binary>>, B, Start, Len, Acc) ->
    escape(R, B, Start + Len + 1, 0, [Acc, binary:part(B, Start, Len) | esc(C)]);
escape(<<>>, B, Start, Len, Acc) ->
    [Acc, binary:part(B, Start, Len)].

esc($") -> <<"\\\"">>;
esc($\\) -> <<"\\\\">>;
esc($\n) -> <<"\\n">>;
esc($\r) -> <<"\\r">>;
esc($\t) -> <<"\\t">>;
%% Kept out of a string that may land in a <script> element or an HTML page.
esc(C) -> io_lib:format("\\u~4.16.0b", [C]).

%% @doc The term a JSON text stands for, or where it stops being JSON (a byte offset).
-spec decode(binary()) -> {ok, json()} | {error, {?MODULE, error_reason()}}.
decode(Bin) when is_binary(Bin) ->
    try
        {V, Rest} = parse(ws(Bin), Bin, 0),
        case ws(Rest) of
            <<>> -> {ok, V};
            _ -> {error, {?MODULE, trailing_bytes}}
        end
    catch
        throw:{syntax, Rest1} -> {error, {?MODULE, {syntax, byte_size(Bin) - byte_size(Rest1)}}}
    end.

ws(<<C, R/binary>>) when C =:= $\s; C =:= $\t; C =:= $\n; C =:= $\r -> ws(R);
ws(B) -> B.

parse(B, _Doc, Depth) when Depth > ?MAX_DEPTH -> throw({syntax, B});
parse(<<"true", R/binary>>, _, _) -> {true, R};
parse(<<"false", R/binary>>, _, _) -> {false, R};
parse(<<"null", R/binary>>, _, _) -> {null, R};
parse(<<$", R/binary>>, _, _) -> str(R, <<>>);
parse(<<$[, R/binary>>, Doc, D) ->
    case ws(R) of
        <<$], R1/binary>> -> {[], R1};
        R1 -> array(R1, Doc, D + 1, [])
    end;
parse(<<${, R/binary>>, Doc, D) ->
    case ws(R) of
        <<$}, R1/binary>> -> {#{}, R1};
        R1 -> object(R1, Doc, D + 1, #{})
    end;
parse(B = <<C, _/binary>>, _, _) when C =:= $-; C >= $0, C =< $9 -> number(B);
parse(B, _, _) -> throw({syntax, B}).

array(B, Doc, D, Acc) ->
    {V, R} = parse(B, Doc, D),
    case ws(R) of
        <<$,, R1/binary>> -> array(ws(R1), Doc, D, [V | Acc]);
        <<$], R1/binary>> -> {lists:reverse([V | Acc]), R1};
        R1 -> throw({syntax, R1})
    end.

object(<<$", R/binary>>, Doc, D, Acc) ->
    {K, R1} = str(R, <<>>),
    case ws(R1) of
        <<$:, R2/binary>> ->
            {V, R3} = parse(ws(R2), Doc, D),
            case ws(R3) of
                <<$,, R4/binary>> -> object(ws(R4), Doc, D, Acc#{K => V});
                <<$}, R4/binary>> -> {Acc#{K => V}, R4};
                R4 -> throw({syntax, R4})
            end;
        R2 -> throw({syntax, R2})
    end;
object(B, _, _, _) -> throw({syntax, B}).

str(<<$", R/binary>>, Acc) -> {Acc, R};
str(<<$\\, E, R/binary>>, Acc) when E =:= $"; E =:= $\\; E =:= $/ -> str(R, <<Acc/binary, E>>);
str(<<"\\b", R/binary>>, Acc) -> str(R, <<Acc/binary, 8>>);
str(<<"\\f", R/binary>>, Acc) -> str(R, <<Acc/binary, 12>>);
str(<<"\\n", R/binary>>, Acc) -> str(R, <<Acc/binary, $\n>>);
str(<<"\\r", R/binary>>, Acc) -> str(R, <<Acc/binary, $\r>>);
str(<<"\\t", R/binary>>, Acc) -> str(R, <<Acc/binary, $\t>>);
str(B = <<"\\u", H:4/binary, R/binary>>, Acc) ->
    case hex(H, B) of
        Hi when Hi >= 16#D800, Hi =< 16#DBFF ->
            case R of
                <<"\\u", L:4/binary, R1/binary>> ->
                    case hex(L, R) of
                        Lo when Lo >= 16#DC00, Lo =< 16#DFFF ->
                            C = 16#10000 + ((Hi - 16#D800) bsl 10) + (Lo - 16#DC00),
                            str(R1, <<Acc/binary, C/utf8>>);
                        _ -> throw({syntax, R})
                    end;
                _ -> throw({syntax, R})
            end;
        Lone when Lone >= 16#DC00, Lone =< 16#DFFF -> throw({syntax, B});
        C -> str(R, <<Acc/binary, C/utf8>>)
    end;
str(B = <<C, _/binary>>, Acc) when C >= 16#20, C =/= $\\ ->
    %% A run of plain characters up to the next quote or escape, taken as one slice.
    Len = case binary:match(B, [<<"\"">>, <<"\\">>]) of
              {At, _} -> At;
              nomatch -> byte_size(B)
          end,
    <<Run:Len/binary, R/binary>> = B,
    case unicode:characters_to_binary(Run) =:= Run andalso [X || <<X>> <= Run, X < 16#20] =:= [] of
        true -> str(R, <<Acc/binary, Run/binary>>);
        false -> throw({syntax, B})
    end;
str(B, _) -> throw({syntax, B}).

hex(H, At) ->
    try binary_to_integer(H, 16) of
        N when N >= 0 -> N;
        _ -> throw({syntax, At})
    catch error:badarg -> throw({syntax, At})
    end.

number(B) ->
    {Text, R} = numchars(B, <<>>),
    try {binary_to_integer(Text), R}
    catch error:badarg -> {float_of(Text, B), R}
    end.

numchars(<<C, R/binary>>, Acc) when C >= $0, C =< $9; C =:= $-; C =:= $+; C =:= $.; C =:= $e; C =:= $E ->
    numchars(R, <<Acc/binary, C>>);
numchars(R, Acc) -> {Acc, R}.

%% JSON allows 1e5 and 1.5; Erlang's float parser wants a fraction before an exponent.
float_of(Text, At) ->
    Norm = case binary:match(Text, <<".">>) of
               nomatch -> binary:replace(binary:replace(Text, <<"e">>, <<".0e">>), <<"E">>, <<".0e">>);
               _ -> Text
           end,
    try binary_to_float(Norm)
    catch error:badarg -> throw({syntax, At})
    end.

%% @doc A sentence for a reason of this module.
-spec format_error(error_reason()) -> string().
format_error({syntax, At}) ->
    lists:flatten(io_lib:format("not JSON at byte ~b", [At]));
format_error(trailing_bytes) ->
    "bytes follow the JSON value";
format_error({not_json, T}) ->
    lists:flatten(io_lib:format("~0tp has no JSON form", [T])).
