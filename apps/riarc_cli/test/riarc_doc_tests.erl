%% The documentation runs: every ```erlang block of README.md and docs/*.md is evaluated,
%% in the project's top directory. A block of shell prompts (`1> Expr.') is evaluated
%% prompt by prompt, with the bindings carried along, and where the lines after a prompt
%% show its value (and show no pid, reference, fun or `...'), the value must print the
%% same. Any other block is evaluated as one sequence of expressions and must not raise.
%% Fragments that are not meant to run (types, config files) use ```erl instead.
-module(riarc_doc_tests).

-include_lib("eunit/include/eunit.hrl").

root() ->
    Ebin = filename:dirname(code:which(riarc)),
    filename:join(lists:sublist(filename:split(Ebin), length(filename:split(Ebin)) - 5)).

docs_test_() ->
    Root = root(),
    Files = [filename:join(Root, "README.md") | filelib:wildcard(filename:join([Root, "docs", "*.md"]))],
    Blocks = lists:append([[{F, L, B} || {L, B} <- blocks(F)] || F <- Files]),
    {timeout, 300,
     [{lists:flatten(io_lib:format("~s:~b", [filename:basename(F), L])),
       fun() -> in_dir(Root, fun() -> run_block(F, L, B) end) end} || {F, L, B} <- Blocks]}.

%% At least the README's and the guides' examples are found (a parser that found none
%% would pass vacuously).
found_test() ->
    Root = root(),
    ?assert(length(blocks(filename:join(Root, "README.md"))) >= 1),
    ?assert(length(lists:append([blocks(F) || F <- filelib:wildcard(filename:join([Root, "docs", "*.md"]))])) >= 3).

%% {Line, Text} of each ```erlang block.
blocks(File) ->
    {ok, Bin} = file:read_file(File),
    Lines = string:split(unicode:characters_to_list(Bin), "\n", all),
    blocks(lists:zip(lists:seq(1, length(Lines)), Lines), none, []).

blocks([], _, Acc) -> lists:reverse(Acc);
blocks([{N, L} | Rest], none, Acc) ->
    case string:trim(L) of
        "```erlang" -> blocks(Rest, {N, []}, Acc);
        _ -> blocks(Rest, none, Acc)
    end;
blocks([{_, L} | Rest], {Start, Ls}, Acc) ->
    case string:trim(L) of
        "```" -> blocks(Rest, none, [{Start, lists:flatten(lists:join("\n", lists:reverse(Ls)))} | Acc]);
        _ -> blocks(Rest, {Start, [L | Ls]}, Acc)
    end.

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
                [Next | Rest1] -> continuation(Expr ++ "\n" ++ Next, Rest1);
                [] -> {Expr, [], []}
            end
    end.

complete(Expr) ->
    case erl_scan:string(Expr) of
        {ok, Tokens, _} -> Tokens =/= [] andalso element(1, lists:last(Tokens)) =:= dot;
        _ -> false
    end.

shell(_File, _Line, [], _B) -> ok;
shell(File, Line, [{Expr, Out} | Rest], B) ->
    {Value, B1} = eval(File, Line, Expr, B),
    case comparable(Out) of
        true ->
            ?assertEqual({File, Line, Expr, squash(lists:flatten(Out))},
                         {File, Line, Expr, squash(io_lib:format("~0tp", [Value]))});
        false -> ok
    end,
    shell(File, Line, Rest, B1).

comparable([]) -> false;
comparable(Out) ->
    Text = lists:flatten(Out),
    lists:all(fun(Pat) -> string:find(Text, Pat) =:= nomatch end,
              ["...", "<0.", "#Ref", "#Fun", "#Port", "Shell got"]).

squash(S) -> [C || C <- lists:flatten(S), C =/= $\s, C =/= $\n].

eval(File, Line, Text, B) ->
    {ok, Tokens, _} = erl_scan:string(Text),
    {ok, Exprs} = erl_parse:parse_exprs(Tokens),
    try erl_eval:exprs(Exprs, B) of
        {value, V, B1} -> {V, B1}
    catch
        C:R:St -> erlang:error({doc_example_failed, File, Line, Text, {C, R, St}})
    end.
