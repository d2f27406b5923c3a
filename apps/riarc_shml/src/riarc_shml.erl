%% @doc Property files for riarc: sHML in detectEr's syntax, parsed, checked and compiled
%% to a Spec module (see docs/properties.md for the language and its exact semantics).
%%
%% A file holds clauses `with M:F(Pats) monitor Formula' (or the one-line forms `with
%% M:F(Pats) never E' and `with M:F(Pats) after A never B', parsed into the sHML they stand
%% for), separated by `,' (or `.') and ended by `.'. Compiling it gives a module exporting `spec/1' (a riarc Spec),
%% `trace_flags/0' (the message events the properties can ever need: the default of the
%% `events' option of {@link riarc:run/3}) and `trace_patterns/0' (of those, the messages
%% that can change a monitor's state, see {@link riarc_shml_patterns}: the default of the
%% `trace_patterns' option).
%% ```
%% 1> {ok, Mod} = riarc_shml:load_file("examples/props/pqr.prop").
%% {ok,riarc_props_pqr}
%% 2> riarc:run({riarc_demo_pqr, p, []}, Mod, #{events => Mod:trace_flags()}).
%% 3> file:write_file("/tmp/bad.prop", "%% Y is never bound\nwith riarc_demo_pqr:p() monitor\n"
%% ..                                    "  [P ? X when X > Y] ff.\n").
%% ok
%% 4> riarc_shml:load_file("/tmp/bad.prop").
%% {error,{semantic,"/tmp/bad.prop",{3,19},"variable 'Y' is unbound"}}
%% 5> riarc_shml:format_error(element(2, v(4))).
%% "/tmp/bad.prop:3:19: variable 'Y' is unbound"
%% '''
-module(riarc_shml).

-export([tokens/2, parse_string/2, parse_file/1, load_file/1, load_string/3,
         compile_file/2, compile_file/3, module_name/1, format_error/1, warnings/1,
         unmatched/2]).
-export_type([reason/0, clause/0, loc/0]).

-type loc() :: {pos_integer(), pos_integer()}.
-type clause() :: tuple().
-type reason() :: {lexical | syntax | semantic, file:filename(), loc(), string()}
                | {file, file:filename(), term()}
                | {write, file:filename(), term()}
                | {load, module(), term()}
                | {module_exists, module(), file:filename() | atom()}.

%% @doc The tokens of a property text, each annotated with {Line, Column}; white space and
%% comments dropped; ended by `{'$end', Loc}'.
-spec tokens(string(), file:filename()) -> {ok, [tuple()]} | {error, reason()}.
tokens(String, File) ->
    tokens(String, {1, 1}, File, []).

tokens(Chars, {Line, _Col} = Loc, File, Acc) ->
    case riarc_shml_lexer:token([], Chars, Line) of
        {more, Cont} -> finish(riarc_shml_lexer:token(Cont, eof, Line), Loc, File, Acc);
        Done -> finish(Done, Loc, File, Acc)
    end.

finish({done, {ok, {Tok, Text}, _EndLine}, Rest}, Loc, File, Acc) ->
    Next = advance(Text, Loc),
    case Tok of
        {white, _, _} -> tokens(Rest, Next, File, Acc);
        {Cat, _, Value} -> tokens(Rest, Next, File, [{Cat, Loc, Value} | Acc]);
        {Sym, _} -> tokens(Rest, Next, File, [{Sym, Loc} | Acc])
    end;
finish({done, {eof, _}, _}, Loc, _File, Acc) ->
    {ok, lists:reverse([{'$end', Loc} | Acc])};
finish({done, {error, {_, _, Desc}, _}, _}, Loc, File, _Acc) ->
    {error, {lexical, File, Loc, lex_message(Desc)}}.

advance(Text, {Line, Col}) ->
    lists:foldl(fun($\n, {L, _}) -> {L + 1, 1};
                   (_, {L, C}) -> {L, C + 1} end, {Line, Col}, lists:flatten(Text)).

lex_message({illegal, [Q | _]}) when Q =:= $"; Q =:= $' ->
    "unterminated " ++ case Q of $" -> "string"; $' -> "quoted atom" end;
lex_message({illegal, Chars}) -> flat("illegal character(s) ~ts", [Chars]);
lex_message({user, Msg}) -> Msg;
lex_message(Other) -> flat("~tp", [Other]).

%% @doc Parses and checks a property text; File is only used in error messages.
-spec parse_string(string(), file:filename()) -> {ok, [clause()]} | {error, reason()}.
parse_string(String, File) ->
    case tokens(String, File) of
        {ok, [{'$end', Loc}]} -> {error, {syntax, File, Loc, "the file has no clause"}};
        {ok, Tokens} ->
            case riarc_shml_parser:parse(separators(Tokens)) of
                {ok, Clauses} ->
                    case riarc_shml_compile:check(Clauses) of
                        ok -> {ok, Clauses};
                        {error, Loc, Msg} -> {error, {semantic, File, Loc, Msg}}
                    end;
                {error, {Loc, _, Desc}} -> {error, {syntax, File, Loc, syntax_message(Desc)}}
            end;
        {error, _} = E -> E
    end.

%% A `,' before `with' separates clauses. Told apart here, it leaves the parser no doubt
%% where a guard at the end of a one-line clause ends.
separators([{',', Loc}, {with, _} = W | Rest]) -> [{clause_sep, Loc}, W | separators(Rest)];
separators([T | Rest]) -> [T | separators(Rest)];
separators([]) -> [].

syntax_message(["syntax error before: ", []]) ->
    "unexpected end of file (a property file ends with '.')";
syntax_message(Desc) -> lists:flatten(riarc_shml_parser:format_error(Desc)).

%% @doc Reads, parses and checks a property file.
-spec parse_file(file:filename()) -> {ok, [clause()]} | {error, reason()}.
parse_file(File) ->
    case file:read_file(File) of
        {ok, Bin} ->
            case unicode:characters_to_list(Bin) of
                S when is_list(S) -> parse_string(S, File);
                _ -> {error, {file, File, not_utf8}}
            end;
        {error, Posix} -> {error, {file, File, Posix}}
    end.

%% @doc Compiles a property file and loads it in memory as module {@link module_name/1}.
-spec load_file(file:filename()) -> {ok, module()} | {error, reason()}.
load_file(File) when is_binary(File) ->
    %% Elixir passes its strings as binaries.
    load_file(unicode:characters_to_list(File));
load_file(File) ->
    Mod = module_name(File),
    with_clauses(parse_file(File), fun(Clauses) -> load(Clauses, Mod, File) end).

%% @doc Compiles a property text and loads it as module Mod.
-spec load_string(string(), module(), file:filename()) -> {ok, module()} | {error, reason()}.
load_string(String, Mod, File) ->
    with_clauses(parse_string(String, File), fun(Clauses) -> load(Clauses, Mod, File) end).

%% @doc Compiles a property file to OutDir/Module.beam (Module is {@link module_name/1}).
-spec compile_file(file:filename(), file:filename()) -> {ok, file:filename()} | {error, reason()}.
compile_file(File, OutDir) ->
    compile_file(File, OutDir, #{}).

%% @doc As compile_file/2; option `module' names the compiled module instead of
%% {@link module_name/1}. The name of a module that exists already and is not a compiled
%% property file is an error: the .beam would shadow it, or be shadowed by it.
-spec compile_file(file:filename(), file:filename(), #{module => module()}) ->
    {ok, file:filename()} | {error, reason()}.
compile_file(File, OutDir, Opts) when is_binary(File) ->
    compile_file(unicode:characters_to_list(File), OutDir, Opts);
compile_file(File, OutDir, Opts) ->
    Mod = maps:get(module, Opts, module_name(File)),
    Path = filename:join(OutDir, atom_to_list(Mod) ++ ".beam"),
    case code:which(Mod) of
        non_existing -> compile_to(File, Mod, Path);
        Where ->
            case code:ensure_loaded(Mod) =:= {module, Mod}
                 andalso erlang:function_exported(Mod, spec, 1)
                 andalso erlang:function_exported(Mod, trace_flags, 0) of
                true -> compile_to(File, Mod, Path);
                false -> {error, {module_exists, Mod, Where}}
            end
    end.

compile_to(File, Mod, Path) ->
    with_clauses(parse_file(File), fun(Clauses) ->
        case riarc_shml_compile:binary(Clauses, Mod, File) of
            {ok, Bin} ->
                case file:write_file(Path, Bin) of
                    ok -> {ok, Path};
                    {error, Posix} -> {error, {write, Path, Posix}}
                end;
            {error, Loc, Msg} -> {error, {semantic, File, Loc, Msg}}
        end
    end).

with_clauses({ok, Clauses}, Fun) -> Fun(Clauses);
with_clauses({error, _} = E, _Fun) -> E.

load(Clauses, Mod, File) ->
    case riarc_shml_compile:binary(Clauses, Mod, File) of
        {ok, Bin} ->
            %% An older version still in use (monitors of a running session) is not
            %% killed: loading fails instead.
            _ = code:soft_purge(Mod),
            case code:load_binary(Mod, File, Bin) of
                {module, Mod} -> {ok, Mod};
                {error, Why} -> {error, {load, Mod, Why}}
            end;
        {error, Loc, Msg} -> {error, {semantic, File, Loc, Msg}}
    end.

%% @doc The warnings of a property file's clauses, each a sentence
%% `FILE:LINE:COLUMN: warning: ...' (see riarc_shml_compile:warnings/1); a compiled
%% module gives the same from `warnings/0'.
-spec warnings(file:filename()) -> {ok, [string()]} | {error, reason()}.
warnings(File) ->
    with_clauses(parse_file(File), fun(Clauses) ->
        {ok, [riarc_shml_compile:format_warning(File, W)
              || W <- riarc_shml_compile:warnings(Clauses)]}
    end).

%% @doc The `with' clauses of a compiled property module that matched none of the
%% processes that got a verdict in a result: each as `{Place, PatternText}'. A clause
%% that matches only processes an earlier clause took first counts as matched.
%% ```
%% 1> {ok, Mod} = riarc_shml:load_file("examples/props/pqr.prop").
%% 2> {ok, R} = riarc:run({riarc_demo_pqr, p, []}, Mod, #{}).
%% 3> riarc_shml:unmatched(Mod, R).
%% []
%% '''
-spec unmatched(module(), #{verdicts := [map()], _ => _}) -> [{string(), string()}].
unmatched(Mod, #{verdicts := Vs}) ->
    [{Place, Text} || {unmatched_clause, Place, Text} <- riarc_result:warnings(Mod, Vs)].

%% @doc The module a property file compiles to: `riarc_props_' and the file's base name,
%% with characters other than letters, digits and `_' replaced by `_'.
%% ```
%% 1> riarc_shml:module_name("examples/props/demo.prop").
%% riarc_props_demo
%% '''
-spec module_name(file:filename()) -> module().
module_name(File) ->
    Base = filename:rootname(filename:basename(File)),
    Safe = [case is_word_char(C) of true -> C; false -> $_ end || C <- Base],
    list_to_atom("riarc_props_" ++ Safe).

is_word_char(C) ->
    (C >= $a andalso C =< $z) orelse (C >= $A andalso C =< $Z)
        orelse (C >= $0 andalso C =< $9) orelse C =:= $_.

%% @doc The sentence for an error: `FILE:LINE:COLUMN: message' for errors in a file.
-spec format_error(reason()) -> string().
format_error({Kind, File, {Line, Col}, Msg}) when Kind =:= lexical; Kind =:= syntax;
                                                  Kind =:= semantic ->
    flat("~ts:~b:~b: ~ts", [File, Line, Col, Msg]);
format_error({file, File, not_utf8}) ->
    flat("~ts: the file is not UTF-8 text", [File]);
format_error({file, File, Posix}) ->
    flat("~ts: ~ts", [File, file:format_error(Posix)]);
format_error({write, Path, Posix}) ->
    flat("~ts: cannot write: ~ts", [Path, file:format_error(Posix)]);
format_error({load, Mod, not_purged}) ->
    flat("cannot load ~ts: an older version of it is still in use", [Mod]);
format_error({module_exists, Mod, Where}) ->
    flat("a module named ~ts exists already (~ts): choose another name", [Mod, Where]);
format_error({load, Mod, Why}) ->
    flat("cannot load ~ts: ~tp", [Mod, Why]);
format_error(Other) ->
    flat("~tp", [Other]).

flat(Fmt, Args) -> lists:flatten(io_lib:format(Fmt, Args)).
