%% @doc Bounded, atom-safe decoding of Erlang's external term format, for terms read from
%% trace files (which may come from another node, or from an attacker).
%%
%% {@link decode/2} first refuses a compressed term (`<<131, 80, Size:32, ...>>') whose
%% announced uncompressed size is over the bound, before anything is inflated: the VM's
%% own decoder allocates and inflates whatever size the term announces, so a 1 MB record
%% could otherwise expand to gigabytes. It then tries `binary_to_term(B, [safe])', which
%% creates no atom. When that fails (a term naming atoms this node does not have, or
%% corrupt bytes), a decoder of its own, written here for the tags term_to_binary/1
%% produces, decodes the term without creating any atom: an unknown atom reads as
%% `{riarc_unknown_atom, NameUtf8}', and a pid, port or reference of a node whose name
%% is not an atom here reads as a stand-in that keeps equality (the same pid always reads
%% as the same stand-in): `{riarc_pid, Node, Id, Serial}', `{riarc_port, Node, Id}',
%% `{riarc_ref, Node, [Word]}'. A fun that cannot be rebuilt reads as
%% `{riarc_unknown_fun, Bytes}'. Each such replacement is counted.
%% ```
%% 1> riarc_etf:decode(term_to_binary({a, [1]}), 1024).
%% {ok,{a,[1]},0}
%% 2> riarc_etf:decode(<<131, 104, 2, 119, 3, "zzq", 97, 1>>, 1024).
%% {ok,{{riarc_unknown_atom,<<"zzq">>},1},1}
%% 3> riarc_etf:decode(<<131, 80, 16#80000000:32, 0>>, 1024).
%% {error,{compressed_too_big,2147483648}}
%% '''
-module(riarc_etf).

-export([decode/2, format_error/1]).
-export_type([error_reason/0]).

-type error_reason() :: {compressed_too_big, non_neg_integer()}
                      | {bad_term, string()}.

%% The decoder recurses on nested terms: a bound on nesting keeps its stack bounded too
%% (term_to_binary/1 of real payloads never comes near it).
-define(MAX_DEPTH, 100000).

%% @doc Decodes one term of at most MaxBytes bytes in uncompressed external form, creating
%% no atom; also returns how many atoms (or pids, ports, references and funs naming
%% them) were unknown here and replaced by stand-ins.
-spec decode(binary(), pos_integer()) ->
    {ok, term(), non_neg_integer()} | {error, error_reason()}.
decode(<<131, 80, USize:32, _/binary>>, Max) when USize > Max ->
    {error, {compressed_too_big, USize}};
decode(Bin, Max) ->
    try binary_to_term(Bin, [safe]) of
        T -> {ok, T, 0}
    catch error:badarg -> fallback(Bin, Max)
    end.

fallback(<<131, 80, USize:32, Z/binary>>, _Max) ->
    case inflate(Z, USize) of
        {ok, Body} -> body(Body);
        {error, _} = Err -> Err
    end;
fallback(<<131, Body/binary>>, _Max) -> body(Body);
fallback(_, _) -> {error, {bad_term, "no version byte 131"}}.

body(Body) ->
    try t(Body, 0, 0) of
        {T, <<>>, N} -> {ok, T, N};
        {_, _, _} -> {error, {bad_term, "bytes left over after the term"}}
    catch
        throw:{riarc_etf, Why} -> {error, {bad_term, Why}};
        error:_ -> {error, {bad_term, "malformed external term"}}
    end.

%% Inflates at most USize bytes: the stream is read in chunks and abandoned as soon as
%% it yields more than it announced.
inflate(Z, USize) ->
    Zs = zlib:open(),
    try
        ok = zlib:inflateInit(Zs),
        inflate_loop(Zs, zlib:safeInflate(Zs, Z), USize, [], 0)
    catch error:_ -> {error, {bad_term, "corrupt compressed term"}}
    after zlib:close(Zs)
    end.

inflate_loop(Zs, {continue, Out}, USize, Acc, N) ->
    N1 = N + iolist_size(Out),
    case N1 > USize of
        true -> {error, {bad_term, "compressed term larger than it announces"}};
        false -> inflate_loop(Zs, zlib:safeInflate(Zs, []), USize, [Acc | Out], N1)
    end;
inflate_loop(_Zs, {finished, Out}, USize, Acc, N) ->
    case N + iolist_size(Out) of
        USize -> {ok, iolist_to_binary([Acc | Out])};
        _ -> {error, {bad_term, "compressed term of another size than it announces"}}
    end.

-spec bad(string()) -> no_return().
bad(Why) -> throw({riarc_etf, Why}).

%% t(Bytes, Depth, Unknown) -> {Term, Rest, Unknown}
t(_, D, _) when D > ?MAX_DEPTH -> bad("term nested too deep");
t(<<97, I, R/binary>>, _, N) -> {I, R, N};
t(<<98, I:32/signed, R/binary>>, _, N) -> {I, R, N};
t(<<70, F:64/float, R/binary>>, _, N) -> {F, R, N};
t(<<99, S:31/binary, R/binary>>, _, N) ->
    {binary_to_float(hd(binary:split(S, <<0>>))), R, N};
t(<<100, L:16, A:L/binary, R/binary>>, _, N) -> atom(A, latin1, R, N);
t(<<115, L, A:L/binary, R/binary>>, _, N) -> atom(A, latin1, R, N);
t(<<118, L:16, A:L/binary, R/binary>>, _, N) -> atom(A, utf8, R, N);
t(<<119, L, A:L/binary, R/binary>>, _, N) -> atom(A, utf8, R, N);
t(<<104, Ar, R/binary>>, D, N) -> tuple(Ar, R, D, N);
t(<<105, Ar:32, R/binary>>, D, N) -> tuple(Ar, R, D, N);
t(<<106, R/binary>>, _, N) -> {[], R, N};
t(<<107, L:16, S:L/binary, R/binary>>, _, N) -> {binary_to_list(S), R, N};
t(<<108, L:32, R/binary>>, D, N) ->
    %% Each element takes at least one byte: a length over what is left is corrupt, and
    %% must not be trusted to size anything.
    L > byte_size(R) andalso bad("list longer than the term"),
    {Es, R1, N1} = elements(L, R, D, N, []),
    {Tail, R2, N2} = t(R1, D + 1, N1),
    {lists:foldl(fun(E, Acc) -> [E | Acc] end, Tail, Es), R2, N2};
t(<<109, L:32, B:L/binary, R/binary>>, _, N) -> {B, R, N};
t(<<77, L:32, Bits, B:L/binary, R/binary>>, _, N) when L > 0, Bits >= 1, Bits =< 8 ->
    Pre = binary:part(B, 0, L - 1),
    <<_:(L - 1)/binary, Last:Bits, _/bitstring>> = B,
    {<<Pre/binary, Last:Bits>>, R, N};
t(<<110, L, Sign, B:L/binary, R/binary>>, _, N) -> {big(Sign, B), R, N};
t(<<111, L:32, Sign, B:L/binary, R/binary>>, _, N) -> {big(Sign, B), R, N};
t(<<116, Ar:32, R/binary>>, D, N) ->
    2 * Ar > byte_size(R) andalso bad("map larger than the term"),
    {KVs, R1, N1} = elements(2 * Ar, R, D, N, []),
    {maps:from_list(pairs(lists:reverse(KVs))), R1, N1};
%% Pids, ports and references name their node by an atom.
t(<<88, R/binary>> = B, _, N) -> node_term(B, R, fun(<<I:32, S:32, _:32, R1/binary>>) -> {{riarc_pid, I, S}, 12, R1} end, N);
t(<<103, R/binary>> = B, _, N) -> node_term(B, R, fun(<<I:32, S:32, _, R1/binary>>) -> {{riarc_pid, I, S}, 9, R1} end, N);
t(<<89, R/binary>> = B, _, N) -> node_term(B, R, fun(<<I:32, _:32, R1/binary>>) -> {{riarc_port, I}, 8, R1} end, N);
t(<<120, R/binary>> = B, _, N) -> node_term(B, R, fun(<<I:64, _:32, R1/binary>>) -> {{riarc_port, I}, 12, R1} end, N);
t(<<102, R/binary>> = B, _, N) -> node_term(B, R, fun(<<I:32, _, R1/binary>>) -> {{riarc_port, I}, 5, R1} end, N);
t(<<101, R/binary>> = B, _, N) -> node_term(B, R, fun(<<I:32, _, R1/binary>>) -> {{riarc_ref, [I]}, 5, R1} end, N);
t(<<90, Len:16, R/binary>>, _, N) ->
    {Node, R1} = node_name(R),
    <<_:32, Ids:(4 * Len)/binary, R2/binary>> = R1,
    ref(<<90, Len:16>>, Node, R1, 4 + 4 * Len, Ids, R2, N);
t(<<114, Len:16, R/binary>>, _, N) ->
    {Node, R1} = node_name(R),
    <<_, Ids:(4 * Len)/binary, R2/binary>> = R1,
    ref(<<114, Len:16>>, Node, R1, 1 + 4 * Len, Ids, R2, N);
t(<<112, Size:32, _/binary>> = B, _, N) when Size >= 4 ->
    <<Fun:(Size + 1)/binary, R/binary>> = B,
    try binary_to_term(<<131, Fun/binary>>, [safe]) of
        F -> {F, R, N}
    catch error:badarg -> {{riarc_unknown_fun, Fun}, R, N + 1}
    end;
t(<<113, R/binary>>, D, N) ->
    {M, R1, N1} = t(R, D + 1, 0),
    {F, R2, N2} = t(R1, D + 1, 0),
    {A, R3, _} = t(R2, D + 1, 0),
    case N1 + N2 =:= 0 andalso is_atom(M) andalso is_atom(F) andalso is_integer(A)
        andalso A >= 0 andalso A =< 255 of
        true -> {fun M:F/A, R3, N};
        false -> {{riarc_unknown_fun, {M, F, A}}, R3, N + 1}
    end;
t(<<Tag, _/binary>>, _, _) -> bad(lists:flatten(io_lib:format("unsupported tag ~b", [Tag])));
t(<<>>, _, _) -> bad("term cut short").

atom(Name, Enc, R, N) ->
    try binary_to_existing_atom(Name, Enc) of
        A -> {A, R, N}
    catch error:badarg ->
        Utf8 = case Enc of
                   latin1 -> unicode:characters_to_binary(Name, latin1, utf8);
                   utf8 -> Name
               end,
        {{riarc_unknown_atom, Utf8}, R, N + 1}
    end.

tuple(Ar, R, D, N) ->
    Ar > byte_size(R) andalso bad("tuple larger than the term"),
    {Es, R1, N1} = elements(Ar, R, D, N, []),
    {list_to_tuple(lists:reverse(Es)), R1, N1}.

%% Newest first.
elements(0, R, _D, N, Acc) -> {Acc, R, N};
elements(K, R, D, N, Acc) ->
    {E, R1, N1} = t(R, D + 1, N),
    elements(K - 1, R1, D, N1, [E | Acc]).

pairs([K, V | Rest]) -> [{K, V} | pairs(Rest)];
pairs([]) -> [].

big(0, B) -> binary:decode_unsigned(B, little);
big(1, B) -> -binary:decode_unsigned(B, little);
big(_, _) -> bad("bad sign of a big integer").

%% The node's name, as the bytes of its atom (no atom made).
node_name(<<100, L:16, A:L/binary, R/binary>>) -> {{latin1, A}, R};
node_name(<<115, L, A:L/binary, R/binary>>) -> {{latin1, A}, R};
node_name(<<118, L:16, A:L/binary, R/binary>>) -> {{utf8, A}, R};
node_name(<<119, L, A:L/binary, R/binary>>) -> {{utf8, A}, R};
node_name(_) -> bad("a pid, port or reference without a node name").

%% With the node's atom known here, the VM rebuilds the real pid or port from its bytes;
%% otherwise a stand-in names the node by its text.
node_term(<<Tag, _/binary>>, R, Fields, N) ->
    {Node, R1} = node_name(R),
    {StandIn, Len, R2} = Fields(R1),
    NodeLen = byte_size(R) - byte_size(R1),
    Bytes = <<Tag, (binary:part(R, 0, NodeLen + Len))/binary>>,
    try binary_to_term(<<131, Bytes/binary>>, [safe]) of
        T -> {T, R2, N}
    catch error:badarg ->
        [Kind | Rest] = tuple_to_list(StandIn),
        {list_to_tuple([Kind, node_text(Node) | Rest]), R2, N + 1}
    end.

%% Head is the tag and the id count; the node name sits between it and R1.
ref(Head, Node, R1, Len, Ids, R2, N) ->
    try binary_to_term(<<131, Head/binary, (node_ext(Node))/binary,
                         (binary:part(R1, 0, Len))/binary>>, [safe]) of
        T -> {T, R2, N}
    catch error:badarg ->
        {{riarc_ref, node_text(Node), [W || <<W:32>> <= Ids]}, R2, N + 1}
    end.

node_ext({latin1, A}) -> <<100, (byte_size(A)):16, A/binary>>;
node_ext({utf8, A}) -> <<118, (byte_size(A)):16, A/binary>>.

node_text({latin1, A}) -> unicode:characters_to_binary(A, latin1, utf8);
node_text({utf8, A}) -> A.

%% @doc A sentence for a decoding error.
-spec format_error(error_reason()) -> string().
format_error({compressed_too_big, Size}) ->
    lists:flatten(io_lib:format("a compressed term announcing ~b bytes uncompressed, over the limit", [Size]));
format_error({bad_term, Why}) ->
    "malformed external term: " ++ Why.
