%% @doc Lexer of riarc's property language (sHML, detectEr's syntax). Tokens have the
%% shape erl_scan gives them ({Category, Line, Value} or {Symbol, Line}); white space and
%% comments come out as `white' tokens, and every token is paired with its text, so that
%% {@link riarc_shml} can compute the column of every token (leex itself only counts
%% lines) and then drop the white space.
%% ```
%% 1> riarc_shml_lexer:string("[P ? x]ff").
%% {ok,[{{'[',1},"["},{{var,1,'P'},"P"},{{white,1," "}," "},...],1}
%% '''

Definitions.

D = [0-9]
U = [A-Z_]
L = [a-z]
A = [A-Za-z0-9_@]
WS = [\s\t\r\n\f\v]

Rules.

{D}+\.{D}+((E|e)(\+|\-)?{D}+)? : {token, {{float, TokenLine, list_to_float(TokenChars)}, TokenChars}}.
{D}+#[0-9A-Za-z]+ : text(base(TokenLine, TokenChars), TokenChars).
{D}+ : {token, {{integer, TokenLine, list_to_integer(TokenChars)}, TokenChars}}.
{L}{A}* : text(word(TokenLine, TokenChars), TokenChars).
'(\\.|[^'\\])*' : text(quoted(atom, TokenLine, TokenChars), TokenChars).
{U}{A}* : {token, {{var, TokenLine, list_to_atom(TokenChars)}, TokenChars}}.
"(\\.|[^"\\])*" : text(quoted(string, TokenLine, TokenChars), TokenChars).
\$\\[0-7]{1,3} : text(char(TokenLine, TokenChars), TokenChars).
\$\\x[0-9A-Fa-f]+ : text(char(TokenLine, TokenChars), TokenChars).
\$\\[^0-7x] : text(char(TokenLine, TokenChars), TokenChars).
\$[^\\] : {token, {{char, TokenLine, lists:nth(2, TokenChars)}, TokenChars}}.
\%[^\n]* : {token, {{white, TokenLine, TokenChars}, TokenChars}}.
{WS}+ : {token, {{white, TokenLine, TokenChars}, TokenChars}}.
(->|<-|\*\*|\?\?|=:=|=/=|==|/=|=<|>=|\+\+|--|=>|:=|<<|>>|\|\|) : {token, {{list_to_atom(TokenChars), TokenLine}, TokenChars}}.
[\[\](){}.,:;!?|=<>+\-*/#] : {token, {{list_to_atom(TokenChars), TokenLine}, TokenChars}}.

Erlang code.

%% Every token comes with its text, from which riarc_shml computes columns.
text({token, Tok}, Chars) -> {token, {Tok, Chars}};
text(Error, _Chars) -> Error.

-define(KEYWORDS, [with, monitor, 'when', max, ff, tt, 'and', 'or', 'andalso', 'orelse',
                   'not', 'div', 'rem', 'band', 'bor', 'bxor', 'bsl', 'bsr', 'xor', 'bnot']).

word(Line, Chars) ->
    Atom = list_to_atom(Chars),
    case lists:member(Atom, ?KEYWORDS) of
        true -> {token, {Atom, Line}};
        false -> {token, {atom, Line, Atom}}
    end.

base(Line, Chars) ->
    {BaseS, [$# | Digits]} = lists:splitwith(fun(C) -> C =/= $# end, Chars),
    Base = list_to_integer(BaseS),
    try list_to_integer(Digits, Base) of
        N -> {token, {integer, Line, N}}
    catch error:badarg -> {error, "illegal based integer " ++ Chars}
    end.

quoted(Cat, Line, Chars) ->
    Body = lists:sublist(Chars, 2, length(Chars) - 2),
    case unescape(Body, []) of
        {ok, S} when Cat =:= atom -> {token, {atom, Line, list_to_atom(S)}};
        {ok, S} -> {token, {string, Line, S}};
        error -> {error, "illegal escape sequence in " ++ Chars}
    end.

char(Line, [$$ | Esc]) ->
    case unescape(Esc, []) of
        {ok, [C]} -> {token, {char, Line, C}};
        _ -> {error, "illegal character literal $" ++ Esc}
    end.

unescape([], Acc) -> {ok, lists:reverse(Acc)};
unescape([$\\, $x | Rest], Acc) ->
    {Hex, Rest1} = lists:splitwith(fun is_hex/1, Rest),
    case Hex of
        [] -> error;
        _ -> unescape(Rest1, [list_to_integer(Hex, 16) | Acc])
    end;
unescape([$\\, D | Rest], Acc) when D >= $0, D =< $7 ->
    {Oct, Rest1} = take_octal([D | Rest], [], 3),
    unescape(Rest1, [list_to_integer(Oct, 8) | Acc]);
unescape([$\\, C | Rest], Acc) -> unescape(Rest, [escape(C) | Acc]);
unescape([C | Rest], Acc) -> unescape(Rest, [C | Acc]).

take_octal([D | Rest], Acc, N) when N > 0, D >= $0, D =< $7 -> take_octal(Rest, [D | Acc], N - 1);
take_octal(Rest, Acc, _) -> {lists:reverse(Acc), Rest}.

is_hex(C) -> (C >= $0 andalso C =< $9) orelse (C >= $a andalso C =< $f)
                 orelse (C >= $A andalso C =< $F).

escape($n) -> $\n;
escape($t) -> $\t;
escape($r) -> $\r;
escape($s) -> $\s;
escape($e) -> $\e;
escape($b) -> $\b;
escape($f) -> $\f;
escape($v) -> $\v;
escape($d) -> $\d;
escape(C) -> C.
