%% @doc A parser of Erlang terms written as text (what `io_lib:format("~tp.~n", [T])'
%% prints, and what people write by hand), that creates no atom. Erlang's own scanner
%% (erl_scan, io:scan_erl_form) turns every name it reads into an atom, so a text file of
%% a million distinct names would exhaust the atom table; here a name is an atom only
%% when that atom exists already, and otherwise reads as `{riarc_unknown_atom, Utf8}'
%% (counted). It also bounds what a term may cost: nesting, integer digits, bit sizes.
%%
%% Input is UTF-8 in a binary, which may end in the middle of a term: {@link next/3}
%% then says `more' (unless told the input is complete), and the caller reads on.
%% Accepted: integers (`16#ff', `$a', `1_000'), floats, atoms (quoted or not), strings
%% (adjacent ones concatenated), tuples, lists (improper too), maps, binaries and
%% bitstrings (`<<1,2:3>>', `<<"é"/utf8>>'), `%' comments; each term ends with a full
%% stop.
%% ```
%% 1> riarc_term_text:next(<<"{a, \"s\", [1|ok]}. rest">>, 1, true).
%% {ok,{a,"s",[1|ok]},<<" rest">>,1,1,0}
%% 2> riarc_term_text:next(<<"{no_such_atom_here, 1}.\n">>, 1, true).
%% {ok,{{riarc_unknown_atom,<<"no_such_atom_here">>},1},<<"\n">>,1,1,1}
%% 3> riarc_term_text:next(<<"{a, ">>, 1, false).
%% more
%% '''
-module(riarc_term_text).

-export([next/3]).
-export_type([result/0]).

-type result() :: {ok, term(), Rest :: binary(), StartLine :: pos_integer(),
                   EndLine :: pos_integer(), UnknownAtoms :: non_neg_integer()}
                | {eof, pos_integer()}
                | more
                | {error, {Line :: pos_integer(), Msg :: string()}}.

%% Bounds on what one term may cost beyond its length: the recursion of nesting, and
%% integer conversion, which is quadratic in the digits.
-define(MAX_DEPTH, 100000).
-define(MAX_DIGITS, 10000).
-define(MAX_BITS, 65536).

%% @doc The next term of Text, whose first line is Line. `Final' says Text is all there
%% is; otherwise a term (or full stop) that reaches the end of Text gives `more'.
-spec next(binary(), pos_integer(), boolean()) -> result().
next(Text, Line, Final) ->
    %% Two values every rule needs, and only at its edges (the end of the input, a new
    %% unknown atom): kept in the process dictionary for the one call, rather than
    %% threaded through every rule.
    put(riarc_term_final, Final),
    put(riarc_term_unknown, 0),
    try
        case skip_ws(Text, Line) of
            {<<>>, L} when Final -> {eof, L};
            {<<>>, _} -> more;
            {T1, L1} ->
                {Term, T2, L2} = term(T1, L1, 0),
                {T3, L3} = skip_ws(T2, L2),
                {Rest, L4} = full_stop(T3, L3),
                {ok, Term, Rest, L1, L4, get(riarc_term_unknown)}
        end
    catch
        throw:riarc_more -> more;
        throw:{riarc_syntax, ErrLine, Msg} -> {error, {ErrLine, Msg}}
    after
        erase(riarc_term_final),
        erase(riarc_term_unknown)
    end.

%% The end of the input: more to come, or an error when the input is complete.
-spec at_end(pos_integer(), string()) -> no_return().
at_end(Line, What) ->
    case get(riarc_term_final) of
        true -> syntax(Line, What);
        _ -> throw(riarc_more)
    end.

-spec syntax(pos_integer(), string()) -> no_return().
syntax(Line, Msg) -> throw({riarc_syntax, Line, Msg}).

-spec syntax(pos_integer(), string(), list()) -> no_return().
syntax(Line, Fmt, Args) -> syntax(Line, lists:flatten(io_lib:format(Fmt, Args))).

skip_ws(<<$\n, R/binary>>, L) -> skip_ws(R, L + 1);
skip_ws(<<C, R/binary>>, L) when C =:= $\s; C =:= $\t; C =:= $\r; C =:= $\f; C =:= $\v ->
    skip_ws(R, L);
skip_ws(<<$%, R/binary>>, L) ->
    case binary:match(R, <<"\n">>) of
        {At, 1} -> skip_ws(binary:part(R, At, byte_size(R) - At), L);
        nomatch ->
            case get(riarc_term_final) of
                true -> {<<>>, L};
                _ -> throw(riarc_more)
            end
    end;
skip_ws(T, L) -> {T, L}.

full_stop(<<$., R/binary>>, L) ->
    case R of
        <<>> -> at_end(L, "the last term has no full stop"), {R, L};
        <<C, _/binary>> when C =:= $\s; C =:= $\t; C =:= $\r; C =:= $\n; C =:= $%;
                             C =:= $\f; C =:= $\v -> {R, L};
        _ -> syntax(L, "a full stop must be followed by white space")
    end;
full_stop(<<>>, L) -> at_end(L, "the last term has no full stop");
full_stop(T, L) -> syntax(L, "expected a full stop, found ~ts", [show(T)]).

%% A few characters of the input, quoted and escaped: an error stays one line.
show(T) ->
    case unicode:characters_to_list(binary:part(T, 0, min(12, byte_size(T)))) of
        S when is_list(S) -> io_lib:write_string(S);
        _ -> "bytes that are not UTF-8 text"
    end.

term(_, L, D) when D > ?MAX_DEPTH -> syntax(L, "terms nested deeper than ~b", [?MAX_DEPTH]);
term(<<>>, L, _) -> at_end(L, "the input ends inside a term");
term(<<${, R/binary>>, L, D) -> seq(R, L, D, $}, fun list_to_tuple/1);
term(<<$[, R/binary>>, L, D) -> list(R, L, D);
term(<<"#{", R/binary>>, L, D) -> map(R, L, D);
term(<<"<<", R/binary>>, L, D) -> bin(R, L, D);
term(<<$", _/binary>> = T, L, _) -> strings(T, L, []);
term(<<$', R/binary>>, L, _) ->
    {Cs, R1, L1} = quoted(R, $', L, []),
    {atom(Cs, L), R1, L1};
term(<<$$, R/binary>>, L, _) -> char(R, L);
term(<<S, R/binary>>, L, D) when S =:= $-; S =:= $+ ->
    {R1, L1} = skip_ws(R, L),
    case R1 of
        <<C, _/binary>> when C >= $0, C =< $9; C =:= $$ ->
            {N, R2, L2} = term(R1, L1, D),
            {case S of $- -> -N; $+ -> N end, R2, L2};
        <<>> -> at_end(L, "the input ends inside a term");
        _ -> syntax(L, "~c must be followed by a number", [S])
    end;
term(<<C, _/binary>> = T, L, _) when C >= $0, C =< $9 -> number(T, L);
term(<<C/utf8, _/binary>> = T, L, _) when C >= $a, C =< $z; C >= 16#df, C =< 16#ff, C =/= 16#f7 ->
    {Cs, R} = name(T, []),
    {atom(Cs, L), R, L};
term(<<C/utf8, _/binary>> = T, L, _) when C >= $A, C =< $Z; C =:= $_; C >= 16#c0, C =< 16#de, C =/= 16#d7 ->
    {Cs, _} = name(T, []),
    syntax(L, "~ts is a variable, not a term", [Cs]);
term(<<C/utf8, _/binary>>, L, _) -> syntax(L, "unexpected character ~ts", [io_lib:write_char(C)]);
term(_, L, _) -> syntax(L, "the text is not UTF-8").

%% Elements separated by commas up to Close.
seq(T, L, D, Close, Make) ->
    case skip_ws(T, L) of
        {<<Close, R/binary>>, L1} -> {Make([]), R, L1};
        {T1, L1} -> seq_more(T1, L1, D, Close, Make, [])
    end.

seq_more(T, L, D, Close, Make, Acc) ->
    {E, T1, L1} = term(T, L, D + 1),
    case skip_ws(T1, L1) of
        {<<$,, R/binary>>, L2} -> seq_more(skip(R, L2), line(R, L2), D, Close, Make, [E | Acc]);
        {<<Close, R/binary>>, L2} -> {Make(lists:reverse([E | Acc])), R, L2};
        {<<>>, L2} -> at_end(L2, "the input ends inside a term");
        {R, L2} -> syntax(L2, "expected , or ~c, found ~ts", [Close, show(R)])
    end.

skip(T, L) -> element(1, skip_ws(T, L)).
line(T, L) -> element(2, skip_ws(T, L)).

list(T, L, D) ->
    case skip_ws(T, L) of
        {<<$], R/binary>>, L1} -> {[], R, L1};
        {T1, L1} -> list_more(T1, L1, D, [])
    end.

list_more(T, L, D, Acc) ->
    {E, T1, L1} = term(T, L, D + 1),
    case skip_ws(T1, L1) of
        {<<$,, R/binary>>, L2} -> list_more(skip(R, L2), line(R, L2), D, [E | Acc]);
        {<<$], R/binary>>, L2} -> {lists:reverse([E | Acc]), R, L2};
        {<<$|, R/binary>>, L2} ->
            {Tail, T3, L3} = term(skip(R, L2), line(R, L2), D + 1),
            case skip_ws(T3, L3) of
                {<<$], R4/binary>>, L4} ->
                    {lists:foldl(fun(X, Tl) -> [X | Tl] end, Tail, [E | Acc]), R4, L4};
                {<<>>, L4} -> at_end(L4, "the input ends inside a list");
                {R4, L4} -> syntax(L4, "expected ], found ~ts", [show(R4)])
            end;
        {<<>>, L2} -> at_end(L2, "the input ends inside a list");
        {R, L2} -> syntax(L2, "expected , or ], found ~ts", [show(R)])
    end.

map(T, L, D) ->
    case skip_ws(T, L) of
        {<<$}, R/binary>>, L1} -> {#{}, R, L1};
        {T1, L1} -> map_more(T1, L1, D, [])
    end.

map_more(T, L, D, Acc) ->
    {K, T1, L1} = term(T, L, D + 1),
    case skip_ws(T1, L1) of
        {<<"=>", R/binary>>, L2} ->
            {V, T3, L3} = term(skip(R, L2), line(R, L2), D + 1),
            case skip_ws(T3, L3) of
                {<<$,, R4/binary>>, L4} -> map_more(skip(R4, L4), line(R4, L4), D, [{K, V} | Acc]);
                {<<$}, R4/binary>>, L4} -> {maps:from_list(lists:reverse([{K, V} | Acc])), R4, L4};
                {<<>>, L4} -> at_end(L4, "the input ends inside a map");
                {R4, L4} -> syntax(L4, "expected , or }, found ~ts", [show(R4)])
            end;
        {<<$=>>, L2} -> at_end(L2, "the input ends inside a map");
        {<<>>, L2} -> at_end(L2, "the input ends inside a map");
        {R, L2} -> syntax(L2, "expected =>, found ~ts", [show(R)])
    end.

%% Binaries: segments of integers or strings, an integer's size in bits after `:', and
%% `/utf8' for strings of any character.
bin(T, L, D) ->
    case skip_ws(T, L) of
        {<<">>", R/binary>>, L1} -> {<<>>, R, L1};
        {T1, L1} -> bin_more(T1, L1, D, <<>>)
    end.

bin_more(T, L, D, Acc) ->
    {V, T1, L1} = term(T, L, D + 1),
    (is_integer(V) orelse (is_list(V) andalso V =/= [] andalso lists:all(fun is_integer/1, V)))
        orelse syntax(L, "a binary segment must be an integer or a string"),
    {Size, T2, L2} = case skip_ws(T1, L1) of
                         {<<$:, R/binary>>, Lx} ->
                             {S, Ry, Ly} = term(skip(R, Lx), line(R, Lx), D + 1),
                             (is_integer(S) andalso S >= 0 andalso S =< ?MAX_BITS)
                                 orelse syntax(L, "a segment size must be 0 to ~b bits", [?MAX_BITS]),
                             {S, Ry, Ly};
                         Other -> {default, element(1, Other), element(2, Other)}
                     end,
    {Type, T3, L3} = case skip_ws(T2, L2) of
                         {<<$/, R2/binary>>, Lz} ->
                             {Cs, R3} = name(skip(R2, Lz), []),
                             {Cs, R3, line(R2, Lz)};
                         Other2 -> {"", element(1, Other2), element(2, Other2)}
                     end,
    Seg = segment(V, Size, Type, L),
    Acc1 = <<Acc/bitstring, Seg/bitstring>>,
    case skip_ws(T3, L3) of
        {<<$,, R5/binary>>, L5} -> bin_more(skip(R5, L5), line(R5, L5), D, Acc1);
        {<<">>", R5/binary>>, L5} -> {Acc1, R5, L5};
        {<<>>, L5} -> at_end(L5, "the input ends inside a binary");
        {<<$>>>, L5} -> at_end(L5, "the input ends inside a binary");
        {R5, L5} -> syntax(L5, "expected , or >>, found ~ts", [show(R5)])
    end.

segment(V, default, "", _) when is_integer(V) -> <<V>>;
segment(V, Size, "", _) when is_integer(V) -> <<V:Size>>;
segment(V, default, "", L) when is_list(V) ->
    lists:all(fun(C) -> C >= 0 andalso C =< 255 end, V)
        orelse syntax(L, "a string segment of characters over 255 needs /utf8"),
    list_to_binary(V);
segment(V, default, "utf8", L) when is_list(V) ->
    case unicode:characters_to_binary(V) of
        B when is_binary(B) -> B;
        _ -> syntax(L, "not a Unicode string")
    end;
segment(_, _, _, L) -> syntax(L, "unsupported binary segment").

%% One or more adjacent string literals, concatenated as the compiler does.
strings(<<$", R/binary>>, L, Acc) ->
    {Cs, R1, L1} = quoted(R, $", L, []),
    case skip_ws(R1, L1) of
        {<<$", _/binary>> = R2, L2} -> strings(R2, L2, [Cs | Acc]);
        {<<>>, _} -> at_end(L1, "the input ends after a string");
        _ -> {lists:append(lists:reverse([Cs | Acc])), R1, L1}
    end.

%% The characters of a quoted atom or string, up to the closing quote.
quoted(<<Q, R/binary>>, Q, L, Acc) -> {lists:reverse(Acc), R, L};
quoted(<<$\\, R/binary>>, Q, L, Acc) ->
    {C, R1} = escape(R, L),
    quoted(R1, Q, L, [C | Acc]);
quoted(<<$\n, R/binary>>, Q, L, Acc) -> quoted(R, Q, L + 1, [$\n | Acc]);
quoted(<<C/utf8, R/binary>>, Q, L, Acc) -> quoted(R, Q, L, [C | Acc]);
quoted(<<>>, _, L, _) -> at_end(L, "the input ends inside a quoted text");
quoted(_, _, L, _) -> syntax(L, "the text is not UTF-8").

escape(<<C, R/binary>>, _) when C >= $0, C =< $7 ->
    {Ds, R1} = take_while(fun(X) -> X >= $0 andalso X =< $7 end, <<C, R/binary>>, 3),
    {list_to_integer(Ds, 8), R1};
escape(<<"x{", R/binary>>, L) ->
    case binary:split(R, <<"}">>) of
        [Hex, R1] when byte_size(Hex) > 0, byte_size(Hex) =< 8 ->
            try {binary_to_integer(Hex, 16), R1}
            catch error:badarg -> syntax(L, "bad \\x{...} escape")
            end;
        [_] -> at_end(L, "the input ends inside an escape");
        _ -> syntax(L, "bad \\x{...} escape")
    end;
escape(<<$x, A, B, R/binary>>, L) ->
    try {binary_to_integer(<<A, B>>, 16), R}
    catch error:badarg -> syntax(L, "bad \\x escape")
    end;
escape(<<$^, C, R/binary>>, _) -> {C band 31, R};
escape(<<C/utf8, R/binary>>, _) ->
    {case C of
         $b -> $\b; $d -> $\d; $e -> $\e; $f -> $\f; $n -> $\n; $r -> $\r;
         $s -> $\s; $t -> $\t; $v -> $\v; _ -> C
     end, R};
escape(<<>>, L) -> at_end(L, "the input ends inside an escape");
escape(_, L) -> syntax(L, "the text is not UTF-8").

take_while(F, B, Max) -> take_while(F, B, Max, []).
take_while(F, <<C, R/binary>>, Max, Acc) when Max > 0 ->
    case F(C) of
        true -> take_while(F, R, Max - 1, [C | Acc]);
        false -> {lists:reverse(Acc), <<C, R/binary>>}
    end;
take_while(_, R, _, Acc) -> {lists:reverse(Acc), R}.

char(<<$\\, R/binary>>, L) ->
    {C, R1} = escape(R, L),
    {C, R1, L};
char(<<C/utf8, R/binary>>, L) -> {C, R, L};
char(<<>>, L) -> at_end(L, "the input ends after $");
char(_, L) -> syntax(L, "the text is not UTF-8").

%% The rest of a name: letters, digits, _ and @ (Latin-1 letters included).
name(<<C/utf8, R/binary>>, Acc) when C >= $a, C =< $z; C >= $A, C =< $Z; C >= $0, C =< $9;
                                     C =:= $_; C =:= $@;
                                     C >= 16#c0, C =< 16#ff, C =/= 16#d7, C =/= 16#f7 ->
    name(R, [C | Acc]);
name(<<>>, Acc) -> at_end_name(Acc);
name(R, Acc) -> {lists:reverse(Acc), R}.

%% A name that reaches the end of the input may go on in the next chunk.
at_end_name(Acc) ->
    case get(riarc_term_final) of
        true -> {lists:reverse(Acc), <<>>};
        _ -> throw(riarc_more)
    end.

atom(Cs, L) ->
    length(Cs) > 255 andalso syntax(L, "atom longer than 255 characters"),
    B = unicode:characters_to_binary(Cs),
    is_binary(B) orelse syntax(L, "an atom that is not Unicode text"),
    try binary_to_existing_atom(B, utf8)
    catch error:badarg ->
        put(riarc_term_unknown, get(riarc_term_unknown) + 1),
        {riarc_unknown_atom, B}
    end.

%% Integers (decimal with `_', Base#Digits) and floats.
number(T, L) ->
    {Ds, R} = digits(T, L, []),
    case R of
        <<$#, R1/binary>> ->
            Base = list_to_integer(Ds),
            (Base >= 2 andalso Base =< 36) orelse syntax(L, "base ~b is not 2 to 36", [Base]),
            {Xs, R2} = based(R1, L, []),
            Xs =:= [] andalso syntax(L, "no digits after ~b#", [Base]),
            {list_to_integer(Xs, Base), R2, L};
        <<$., C, _/binary>> when C >= $0, C =< $9 ->
            <<$., R1/binary>> = R,
            {Fs, R2} = digits(R1, L, []),
            {Exp, R3} = exponent(R2, L),
            try {list_to_float(Ds ++ "." ++ Fs ++ Exp), R3, L}
            catch error:badarg -> syntax(L, "~ts.~ts~ts is not a float", [Ds, Fs, Exp])
            end;
        <<$.>> -> at_end(L, "the input ends inside a number");
        _ -> {list_to_integer(Ds), R, L}
    end.

digits(<<C, R/binary>>, L, Acc) when C >= $0, C =< $9 -> digits(R, L, count([C | Acc], L));
digits(<<$_, C, R/binary>>, L, Acc) when C >= $0, C =< $9, Acc =/= [] -> digits(R, L, count([C | Acc], L));
digits(<<>>, L, Acc) -> at_end_digits(L, Acc);
digits(<<$_>>, L, _) -> at_end(L, "the input ends inside a number");
digits(R, _, Acc) -> {lists:reverse(Acc), R}.

at_end_digits(L, Acc) ->
    case get(riarc_term_final) of
        true -> {lists:reverse(Acc), <<>>};
        _ -> _ = L, throw(riarc_more)
    end.

count(Acc, L) when length(Acc) > ?MAX_DIGITS ->
    syntax(L, "a number of more than ~b digits", [?MAX_DIGITS]);
count(Acc, _) -> Acc.

based(<<C, R/binary>>, L, Acc) when C >= $0, C =< $9; C >= $a, C =< $z; C >= $A, C =< $Z ->
    based(R, L, count([C | Acc], L));
based(<<>>, L, Acc) -> at_end_digits(L, Acc);
based(R, _, Acc) -> {lists:reverse(Acc), R}.

exponent(<<E, S, R/binary>>, L) when (E =:= $e orelse E =:= $E), (S =:= $- orelse S =:= $+) ->
    {Ds, R1} = digits(R, L, []),
    {[$e, S | Ds], R1};
exponent(<<E, R/binary>>, L) when E =:= $e; E =:= $E ->
    {Ds, R1} = digits(R, L, []),
    {[$e | Ds], R1};
exponent(<<>>, L) -> at_end_digits(L, []);
exponent(R, _) -> {"", R}.
