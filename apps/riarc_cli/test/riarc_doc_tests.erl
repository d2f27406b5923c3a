%% The documentation runs: every ```erlang block of README.md and docs/*.md is evaluated,
%% in the project's top directory. A block of shell prompts (`1> Expr.') is evaluated
%% prompt by prompt, with the bindings carried along, and where the lines after a prompt
%% show its value (and show no pid, reference, fun or `...'), the value must print the
%% same. Any other block is evaluated as one sequence of expressions and must not raise.
%% Fragments that are not meant to run (types, config files) use ```erl instead.
%%
%% The shell sessions of the modules' own @doc (a ``` ... ''' block of `1> Expr.' prompts
%% in the comment that opens each module) run the same way; a ```erl block there is shown,
%% not run.
-module(riarc_doc_tests).

-import(riarc_test_cli, [root/0]).

-include_lib("eunit/include/eunit.hrl").
%% For running one module's session by hand while writing it.
-export([run_module_doc/2, module_sessions/1]).


docs_test_() ->
    Root = root(),
    Files = [filename:join(Root, "README.md") | filelib:wildcard(filename:join([Root, "docs", "*.md"]))],
    Blocks = lists:append([[{F, L, B} || {L, B} <- blocks(F)] || F <- Files]),
    {timeout, 300,
     [{lists:flatten(io_lib:format("~s:~b", [filename:basename(F), L])),
       fun() -> in_dir(scratch(Root), fun() -> run_block(F, L, B) end) end} || {F, L, B} <- Blocks]}.

%% Each module's @doc session, module by module, in a scratch copy of the top directory.
modules_test_() ->
    Root = root(),
    Files = lists:sort(filelib:wildcard(filename:join(Root, "apps/*/src/riarc*.erl"))),
    [{filename:basename(F, ".erl"),
      {timeout, 120, fun() -> in_dir(scratch(Root), fun() -> run_module_doc(F, B) end) end}}
     || F <- Files, B <- [module_sessions(F)], B =/= []].

%% Every module opens with a session; the finder is checked against that (a finder that
%% found none would pass vacuously).
modules_found_test() ->
    Files = filelib:wildcard(filename:join(root(), "apps/*/src/riarc*.erl")),
    Generated = ["riarc_shml_lexer", "riarc_shml_parser"],
    ?assertEqual([], [filename:basename(F) || F <- Files, module_sessions(F) =:= [],
                                              not lists:member(filename:basename(F, ".erl"), Generated)]).

%% Each module's session runs in a process of its own, as a fresh shell would: what an
%% earlier session left in the mailbox or linked cannot change it.
run_module_doc(File, Sessions) ->
    {Pid, Ref} = spawn_monitor(fun() ->
        _ = lists:foldl(fun({L, Text}, B) -> shell_bindings(File, L, prompts(string:split(Text, "\n", all)), B) end,
                        erl_eval:new_bindings(), Sessions),
        exit(done)
    end),
    receive
        {'DOWN', Ref, process, Pid, done} -> ok;
        {'DOWN', Ref, process, Pid, Why} -> erlang:error(Why)
    end.

%% The {Line, Text} of each ``` ... ''' block with prompts in the comment before `-module'.
module_sessions(File) ->
    {ok, Bin} = file:read_file(File),
    Lines = string:split(unicode:characters_to_list(Bin), "\n", all),
    Head = lists:takewhile(fun(L) -> not lists:prefix("-module", L) end, Lines),
    Doc = [{N, strip_comment(L)} || {N, L} <- lists:zip(lists:seq(1, length(Head)), Head)],
    [{N, T} || {N, T} <- fenced(Doc, {"```", "'''"}), re:run(T, "^\\s*1> ", [multiline, unicode]) =/= nomatch].

strip_comment(L) ->
    case re:run(L, "^%+ ?(.*)$", [{capture, all_but_first, list}, unicode]) of
        {match, [T]} -> T;
        nomatch -> ""
    end.

%% At least the README's and the guides' examples are found (a parser that found none
%% would pass vacuously).
found_test() ->
    Root = root(),
    ?assert(length(blocks(filename:join(Root, "README.md"))) >= 1),
    ?assert(length(lists:append([blocks(F) || F <- filelib:wildcard(filename:join([Root, "docs", "*.md"]))])) >= 3).

%% docs/core.md's paper-to-code table names real functions: each `name/N' of a row's
%% code column is defined in a module that row names (`mod:name/N' in that module), or
%% in riarc_tracer_core when the row names none. Local functions count: the table maps
%% the paper's steps, most of which are internal to the tracer's core.
paper_table_test() ->
    {ok, Bin} = file:read_file(filename:join([root(), "docs", "core.md"])),
    Lines = string:split(unicode:characters_to_list(Bin), "\n", all),
    Rows = lists:takewhile(fun(L) -> lists:prefix("|", L) end,
                           tl(lists:dropwhile(fun(L) -> L =/= "| paper | code |" end, Lines))),
    Named = lists:append([table_refs(Code) || Row <- tl(Rows), [_, _, Code | _] <- [string:split(Row, "|", all)]]),
    %% The table names at least the steps of Algs. 1 to 4.
    ?assert(length(Named) >= 15, Named),
    ?assertEqual([], [Ref || Ref <- Named, not defined(Ref)]).

table_refs(Code) ->
    Quoted = [Q || [Q] <- re_all("`([^`]+)`", Code)],
    Mods = [list_to_atom(M) || Q <- Quoted, [M] <- re_all("^(riarc_[a-z_]+)$", Q)],
    Home = case Mods of [] -> [riarc_tracer_core]; _ -> Mods end,
    [case string:split(F, ":") of
         [M, Fun] -> {[list_to_atom(M)], Fun, list_to_integer(A)};
         [Fun] -> {Home, Fun, list_to_integer(A)}
     end || Q <- Quoted, [F, A] <- re_all("^([a-z_:]+)/([0-9]+)$", Q)].

re_all(Re, S) ->
    case re:run(S, Re, [global, {capture, all_but_first, list}, unicode]) of
        {match, Ms} -> Ms;
        nomatch -> []
    end.

defined({Mods, Fun, Arity}) ->
    lists:any(fun(M) ->
                      {ok, {M, [{abstract_code, {raw_abstract_v1, Forms}}]}} =
                          beam_lib:chunks(code:which(M), [abstract_code]),
                      lists:any(fun({function, _, F, A, _}) -> atom_to_list(F) =:= Fun andalso A =:= Arity;
                                   (_) -> false end, Forms)
              end, Mods).

%% {Line, Text} of each ```erlang block.
blocks(File) ->
    {ok, Bin} = file:read_file(File),
    Lines = string:split(unicode:characters_to_list(Bin), "\n", all),
    fenced(lists:zip(lists:seq(1, length(Lines)), Lines), {"```erlang", "```"}).

%% {Line, Text} of each block between an Open and a Close fence line of Numbered lines.
fenced(Numbered, {Open, Close}) ->
    fenced(Numbered, Open, Close, none, []).

fenced([], _, _, _, Acc) -> lists:reverse(Acc);
fenced([{N, L} | Rest], Open, Close, none, Acc) ->
    case string:trim(L) =:= Open of
        true -> fenced(Rest, Open, Close, {N, []}, Acc);
        false -> fenced(Rest, Open, Close, none, Acc)
    end;
fenced([{_, L} | Rest], Open, Close, {Start, Ls}, Acc) ->
    case string:trim(L) =:= Close of
        true -> fenced(Rest, Open, Close, none,
                       [{Start, lists:flatten(lists:join("\n", lists:reverse(Ls)))} | Acc]);
        false -> fenced(Rest, Open, Close, {Start, [L | Ls]}, Acc)
    end.

%% The directory the examples run in: a scratch directory whose entries are links to the
%% project's top-level files and folders. An example reads the project's files by the
%% paths a user would type in the top directory, and what it writes there (trace files,
%% dbg's run.dbg) lands in the scratch directory, never in the clone.
scratch(Root) ->
    Dir = riarc_test_tmp:dir("doc"),
    {ok, Names} = file:list_dir(Root),
    [ok = file:make_symlink(filename:join(Root, N), Link)
     || N <- Names, Link <- [filename:join(Dir, N)], file:read_link_info(Link) =:= {error, enoent}],
    Dir.

in_dir(Dir, Fun) ->
    {ok, Old} = file:get_cwd(),
    ok = file:set_cwd(Dir),
    try Fun() after file:set_cwd(Old) end.

run_block(File, Line, Text) ->
    case re:run(Text, "^\\s*1> ", [multiline]) of
        {match, _} -> shell(File, Line, prompts(string:split(Text, "\n", all)), erl_eval:new_bindings());
        nomatch -> eval(File, Line, Text, erl_eval:new_bindings())
    end.

%% [{Expr, ExpectedOutputLines}] from a shell session.
prompts(Lines) -> prompts(Lines, []).
prompts([], Acc) -> lists:reverse(Acc);
prompts([L | Rest], Acc) ->
    case re:run(L, "^\\s*\\d+> (.*)$", [{capture, all_but_first, list}]) of
        {match, [Expr]} ->
            {More, Out, Rest1} = continuation(Expr, Rest),
            prompts(Rest1, [{More, Out} | Acc]);
        nomatch -> prompts(Rest, Acc)
    end.

%% An expression runs on over lines until it ends with a full stop; the lines up to the
%% next prompt are its printed value.
continuation(Expr, Rest) ->
    case complete(Expr) of
        true ->
            {Out, Rest1} = lists:splitwith(fun(L) -> re:run(L, "^\\s*\\d+> ") =:= nomatch end, Rest),
            {Expr, [string:trim(O) || O <- Out, string:trim(O) =/= ""], Rest1};
        false ->
            case Rest of
                %% The shell shows an expression's further lines after `..'.
                [Next | Rest1] -> continuation(Expr ++ "\n" ++ re:replace(Next, "^\\s*\\.\\.( |$)", "", [{return, list}, unicode]), Rest1);
                [] -> {Expr, [], []}
            end
    end.

complete(Expr) ->
    case erl_scan:string(Expr) of
        {ok, Tokens, _} -> Tokens =/= [] andalso element(1, lists:last(Tokens)) =:= dot;
        _ -> false
    end.

shell(File, Line, Prompts, B) ->
    _ = shell_bindings(File, Line, Prompts, B),
    ok.

%% Prompts run in order, with the bindings carried along and the values kept for v(N).
shell_bindings(File, Line, Prompts, B) ->
    put(riarc_doc_history, []),
    lists:foldl(fun({Expr, Out}, Bs) ->
                        {Value, Bs1} = prompt(File, Line, Expr, Out, Bs),
                        put(riarc_doc_history, get(riarc_doc_history) ++ [Value]),
                        Bs1
                end, B, Prompts).

%% The lines shown after a prompt, where they say what the value is: read as a term when
%% they are one (so a binary or map prints as it likes), else compared as text with what
%% the expression printed followed by its value.
prompt(File, Line, Expr, Out, B) ->
    Text = lists:flatten(lists:join(" ", Out)),
    case {comparable(Out), parse_term(Text)} of
        {false, _} -> eval(File, Line, Expr, B);
        {true, {ok, Term}} ->
            {Value, B1} = eval(File, Line, Expr, B),
            ?assertEqual({File, Line, Expr, Term}, {File, Line, Expr, Value}),
            {Value, B1};
        {true, error} ->
            {Printed, {Value, B1}} = riarc_capture:capture(fun() -> eval(File, Line, Expr, B) end),
            ?assertEqual({File, Line, Expr, squash(Text)},
                         {File, Line, Expr, squash([Printed, io_lib:format("~0tp", [Value])])}),
            {Value, B1}
    end.

parse_term(Text) ->
    case erl_scan:string(Text ++ ".") of
        {ok, Tokens, _} ->
            case erl_parse:parse_term(Tokens) of
                {ok, T} -> {ok, T};
                _ -> error
            end;
        _ -> error
    end.

comparable([]) -> false;
comparable(Out) ->
    Text = lists:flatten(Out),
    lists:all(fun(Pat) -> string:find(Text, Pat) =:= nomatch end,
              ["...", "<0.", "#Ref", "#Fun", "#Port", "Shell got"]).

squash(S) -> [C || C <- lists:flatten(S), C =/= $\s, C =/= $\n].

eval(File, Line, Text, B) ->
    {ok, Tokens, _} = erl_scan:string(Text),
    {ok, Exprs} = erl_parse:parse_exprs(Tokens),
    try erl_eval:exprs(Exprs, B, {value, fun shell_function/2}) of
        {value, V, B1} -> {V, B1}
    catch
        C:R:St -> erlang:error({doc_example_failed, File, Line, Text, {C, R, St}})
    end.

%% The shell's own functions that sessions use: flush() and v(N).
shell_function(flush, []) ->
    receive M -> io:format("Shell got ~tp~n", [M]), shell_function(flush, [])
    after 0 -> ok
    end;
shell_function(v, [N]) when is_integer(N), N > 0 ->
    lists:nth(N, get(riarc_doc_history));
shell_function(Name, Args) ->
    erlang:error({undef, {shell, Name, length(Args)}}).
