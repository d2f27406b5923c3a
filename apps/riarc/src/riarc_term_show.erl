%% @doc A term as one bounded line, for what riarc shows of the monitored system: events,
%% monitor states and reasons in explanations and why lines, in text and in JSON alike.
%% A log report's binary or a monitor's state must never flood a line, so a small term
%% prints as `~0tp' prints it, and a big one is cut: references and funs are elided
%% (`#Ref', `#Fun': their text says nothing to a reader and differs from run to run),
%% binaries over 64 bytes are cut with their size (`<<"abc"...>> (1200 bytes)'), strings
%% over 64 characters, lists, tuples and maps over 32 elements, terms nested over 8 deep,
%% and anything past about 600 characters end in `...'; an integer over 256 bits is only
%% sized (`#Integer<8001 bits>'). The whole term is never walked: the time taken is
%% bounded too.
%% ```
%% 1> riarc_term_show:show({send, [1, 2], #{a => <<"x">>}}).
%% "{send,[1,2],#{a => <<\"x\">>}}"
%% 2> riarc_term_show:show({make_ref(), fun() -> ok end}).
%% "{#Ref,#Fun}"
%% 3> riarc_term_show:show(binary:copy(<<"ab">>, 600)).
%% "<<\"abababab...\"...>> (1200 bytes)"
%% 4> riarc_term_show:show(lists:seq(1, 5), #{items => 3}).
%% "[1,2,3,...]"
%% '''
-module(riarc_term_show).

-export([show/1, show/2, limits/0]).
-export_type([limits/0]).

%% `bytes': of a binary; `chars': of a string; `items': elements of a list, tuple or map;
%% `depth': nesting; `width': characters of the whole line, about (a cut may add `...').
-type limits() :: #{bytes => pos_integer(), chars => pos_integer(), items => pos_integer(),
                    depth => pos_integer(), width => pos_integer()}.

%% @doc The limits show/1 uses.
-spec limits() -> limits().
limits() ->
    #{bytes => 64, chars => 64, items => 32, depth => 8, width => 600}.

%% @doc Term as one bounded line, under the default limits.
-spec show(term()) -> string().
show(Term) ->
    show(Term, #{}).

%% @doc Term as one bounded line, under Limits (those not given are the defaults).
-spec show(term(), limits()) -> string().
show(Term, Limits) ->
    L = maps:merge(limits(), Limits),
    {Text, _Left} = term(Term, maps:get(depth, L), maps:get(width, L), L),
    lists:flatten(Text).

%% term(Term, DepthLeft, WidthLeft, Limits) -> {Chars, WidthLeft1}.
term(_T, _D, Width, _L) when Width =< 0 ->
    {"...", Width - 3};
term(T, _D, W, _L) when is_reference(T) -> emit("#Ref", W);
term(T, _D, W, _L) when is_function(T) -> emit("#Fun", W);
%% Near the end of the line, a binary shows fewer bytes (a byte prints as up to 4 chars).
term(T, _D, W, L) when is_bitstring(T) -> emit(bits(T, min(maps:get(bytes, L), max(8, W div 4))), W);
term(T, D, W, L) when is_list(T) -> list(T, D, W, L);
%% At the last level of depth, a container is only said to be there.
term(T, D, W, _L) when D =< 1, is_tuple(T), tuple_size(T) > 0 -> emit("{...}", W);
term(T, D, W, L) when is_tuple(T) ->
    N = tuple_size(T),
    Shown = [element(I, T) || I <- lists:seq(1, min(N, maps:get(items, L)))],
    seq("{", Shown, N > length(Shown), "}", D, W, L);
term(T, D, W, _L) when D =< 1, is_map(T), map_size(T) > 0 -> emit("#{...}", W);
term(T, D, W, L) when is_map(T) ->
    map(T, D, W, L);
term(T, _D, W, _L) when is_integer(T), abs(T) > 1 bsl 256 ->
    %% Printing a huge integer takes time as well as room.
    <<First, Rest/binary>> = binary:encode_unsigned(abs(T)),
    Bits = bit_size(Rest) + length(integer_to_list(First, 2)),
    emit(io_lib:format("#Integer<~b bits>", [Bits]), W);
term(T, _D, W, L) ->
    %% Atoms, numbers, pids and ports, as Erlang prints them; an atom can be long.
    Chars = lists:flatten(io_lib:format("~0tp", [T])),
    case take(Chars, maps:get(chars, L)) of
        {Head, [_ | _]} -> emit([Head, "..."], W);
        {_, []} -> emit(Chars, W)
    end.

emit(Chars, W) ->
    Flat = lists:flatten(Chars),
    {Flat, W - length(Flat)}.

%% A binary as ~0tp prints it; past Max bytes its first bytes (cut where a UTF-8
%% character starts, so that text still prints as text), then its size.
bits(B, Max) when byte_size(B) =< Max ->
    io_lib:format("~0tp", [B]);
bits(B, Max) ->
    <<Part:Max/binary, _/bitstring>> = B,
    Head = lists:flatten(io_lib:format("~0tp", [utf8_head(Part)])),
    Open = lists:sublist(Head, length(Head) - 2),
    Cut = case lists:last(Open) of
              $" -> "...>>";
              $8 -> "...>>";   % text printed as <<"..."/utf8>>
              _ -> ",...>>"
          end,
    Size = case bit_size(B) rem 8 of
               0 -> io_lib:format(" (~b bytes)", [byte_size(B)]);
               R -> io_lib:format(" (~b bytes and ~b bits)", [byte_size(B) - 1, R])
           end,
    [Open, Cut, Size].

%% Up to three bytes are dropped to end on a whole UTF-8 character; a binary that is not
%% UTF-8 text is cut where it was.
utf8_head(B) ->
    Cuts = [binary:part(B, 0, byte_size(B) - N) || N <- [0, 1, 2, 3], N < byte_size(B)],
    case [C || C <- Cuts, is_binary(unicode:characters_to_binary(C))] of
        [Text | _] -> Text;
        [] -> B
    end.

%% A list: only the elements it shows are visited, so an improper or a long one costs no
%% more than a short one. A printable one prints as a string, as ~0tp prints it.
list([], _D, W, _L) -> emit("[]", W);
list(T, D, W, L) ->
    Chars = min(maps:get(chars, L), max(8, W)),
    case take(T, Chars) of
        {Head, []} ->
            case io_lib:printable_list(Head) of
                true -> emit(io_lib:format("~0tp", [Head]), W);
                false -> items(T, D, W, L)
            end;
        {Head, [_ | _]} ->
            case io_lib:printable_list(Head) of
                true -> emit([io_lib:format("~0tp", [Head]), "..."], W);
                false -> items(T, D, W, L)
            end;
        {_Head, _Improper} -> items(T, D, W, L)
    end.

items(_T, D, W, _L) when D =< 1 ->
    emit("[...]", W);
items(T, D, W, L) ->
    case take(T, maps:get(items, L)) of
        {Head, []} -> seq("[", Head, false, "]", D, W, L);
        {Head, [_ | _]} -> seq("[", Head, true, "]", D, W, L);
        {Head, Tail} ->
            %% An improper list: `[a,b|c]'.
            {Open, W1} = seq("[", Head, false, "", D, W, L),
            {TailChars, W2} = term(Tail, D - 1, W1 - 1, L),
            {[Open, "|", TailChars, "]"], W2 - 1}
    end.

%% The first N elements of a list and what follows them (a list, or an improper tail).
take(T, N) -> take(T, N, []).

take([H | T], N, Acc) when N > 0 -> take(T, N - 1, [H | Acc]);
take(Rest, _N, Acc) -> {lists:reverse(Acc), Rest}.

map(M, D, W, L) ->
    Max = maps:get(items, L),
    %% In the map's own order, as ~0tp prints it (key order for a small map).
    Pairs = next(maps:next(maps:iterator(M)), Max),
    {Open, W1} = emit("#{", W),
    {Body, W2} = pairs(Pairs, map_size(M) > Max, D - 1, W1, L, first),
    {Close, W3} = emit("}", W2),
    {[Open, Body, Close], W3}.

next(none, _N) -> [];
next(_It, 0) -> [];
next({K, V, It}, N) -> [{K, V} | next(maps:next(It), N - 1)].

pairs([], true, _D, W, _L, First) -> more(First, W);
pairs([], false, _D, W, _L, _First) -> {[], W};
pairs(_Ps, _More, _D, W, _L, First) when W =< 0 -> more(First, W);
pairs([{K, V} | Ps], More, D, W, L, First) ->
    {Sep, W0} = sep(First, W),
    {KC, W1} = term(K, D, W0, L),
    {VC, W2} = term(V, D, W1 - 4, L),
    {Rest, W3} = pairs(Ps, More, D, W2, L, rest),
    {[Sep, KC, " => ", VC, Rest], W3}.

%% Open, the elements, `...' when More were left out or the width ran out, and Close.
seq(Open, Elems, More, Close, D, W, L) ->
    {O, W1} = emit(Open, W),
    {Body, W2} = elems(Elems, More, D - 1, W1, L, first),
    {C, W3} = emit(Close, W2),
    {[O, Body, C], W3}.

elems([], true, _D, W, _L, First) -> more(First, W);
elems([], false, _D, W, _L, _First) -> {[], W};
elems(_Es, _More, _D, W, _L, First) when W =< 0 -> more(First, W);
elems([E | Es], More, D, W, L, First) ->
    {Sep, W0} = sep(First, W),
    {EC, W1} = term(E, D, W0, L),
    {Rest, W2} = elems(Es, More, D, W1, L, rest),
    {[Sep, EC, Rest], W2}.

sep(first, W) -> {"", W};
sep(rest, W) -> {",", W - 1}.

more(first, W) -> {"...", W - 3};
more(rest, W) -> {",...", W - 4}.
