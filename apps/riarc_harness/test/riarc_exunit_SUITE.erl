%% The ExUnit helper (priv/elixir/riarc_case.ex) under Debian's Elixir: compiled with
%% `elixirc' into the case's priv_dir, then the example of docs/elixir.md
%% (priv/elixir/shop_test.exs) run with `elixir', as a user runs it. Of its four tests
%% the two whose systems violate the property fail, with riarc's explanation in ExUnit's
%% report, and the two others pass; the guide shows the example's text as it is. One
%% case in the slow group (it boots Elixir's VM twice); skipped, saying why, only where
%% `elixirc' or `elixir' is missing.
-module(riarc_exunit_SUITE).

-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, suite/0, exunit_example/1]).

-spec all() -> [atom() | {group, atom()}].
all() -> [] ++ riarc_test_tier:slow_groups([slow]).

%% The full tier's cases (make test-all): riarc_test_tier.
-spec groups() -> [{atom(), list(), [atom()]}].
groups() -> [{slow, [], [exunit_example]}].

-spec suite() -> list().
suite() -> [{timetrap, {minutes, 3}}].

exunit_example(Config) ->
    case {os:find_executable("elixirc"), os:find_executable("elixir")} of
        {false, _} -> {skip, "elixirc is not installed (Debian's package elixir; scripts/ensure-toolchain installs it)"};
        {_, false} -> {skip, "elixir is not installed (Debian's package elixir; scripts/ensure-toolchain installs it)"};
        {Elixirc, Elixir} -> run_example(Elixirc, Elixir, Config)
    end.

run_example(Elixirc, Elixir, Config) ->
    Priv = code:priv_dir(riarc_harness),
    Source = filename:join([Priv, "elixir", "riarc_case.ex"]),
    Example = filename:join([Priv, "elixir", "shop_test.exs"]),
    Out = filename:join(proplists:get_value(priv_dir, Config), "riarc_case"),
    ok = filelib:ensure_path(Out),
    Pa = lists:append([[" -pa ", filename:dirname(code:which(M))] || M <- [riarc, riarc_shml, riarc_watch]]),
    {CLines, CStatus} = sh([Elixirc, Pa, " -o ", Out, " ", Source]),
    ?assertEqual("status=0", CStatus, CLines),
    {Lines, Status} = sh([Elixir, Pa, " -pa ", Out, " ", Example]),
    Text = lists:flatten(lists:join("\n", Lines)),
    ct:log("~ts", [Text]),
    %% ExUnit's exit status is not 0 when a test failed.
    ?assertNotEqual("status=0", Status),
    ?assertNotEqual(nomatch, string:find(Text, "4 tests, 2 failures"), Text),
    Failed = [L || L <- Lines, re:run(L, "^\\s+\\d+\\) test ") =/= nomatch],
    ?assertEqual(2, length(Failed), Failed),
    ?assert(lists:all(fun(L) -> string:find(L, "(fails: the property is violated)") =/= nomatch end, Failed), Failed),
    %% Each failure carries the reject and its explanation: the deciding receive.
    ?assertEqual(2, count(Text, "riarc: the property failed")),
    ?assertEqual(2, count(Text, "Elixir.Shop.Worker:run/1 reject")),
    ?assertEqual(2, count(Text, "=> {recv,<")),
    ?assertNotEqual(nomatch, string:find(Text, "{error,out_of_stock}}")),
    ?assertNotEqual(nomatch, string:find(Text, "{error,late}}")),
    ?assertEqual(2, count(Text, "last events (=> decided)")),
    docs_show_example(Example).

%% docs/elixir.md quotes the example's modules as they are.
docs_show_example(Example) ->
    {ok, Ex} = file:read_file(Example),
    {ok, Doc} = file:read_file(filename:join([riarc_test_cli:root(), "docs", "elixir.md"])),
    [_, Modules] = string:split(Ex, "defmodule Shop.Worker do"),
    ?assertNotEqual(nomatch, string:find(Doc, ["defmodule Shop.Worker do", Modules])).

count(Text, Pat) -> length(string:split(Text, Pat, all)) - 1.

sh(Cmd) ->
    Out = os:cmd(lists:flatten([Cmd, " 2>&1; echo \"status=$?\""])),
    Lines = string:split(string:trim(Out), "\n", all),
    {lists:droplast(Lines), lists:last(Lines)}.
