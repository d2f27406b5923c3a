%% What every report page must be, shared by the tests: a reading guide, real HTML
%% tables, no Markdown pipes left in a <pre> block, and an existing file behind every
%% <img>. html/1 checks a page and returns its text for further assertions.
-module(riarc_bench_report_check).

-include_lib("eunit/include/eunit.hrl").

-export([html/1, tables/1]).

html(Path) ->
    {ok, Html} = file:read_file(Path),
    ?assertNotEqual(nomatch, binary:match(Html, <<"How to read this page">>)),
    ?assertNotEqual(nomatch, binary:match(Html, <<"<table">>)),
    Pres = [P || [P] <- match_all(Html, "(?s)<pre>(.*?)</pre>")],
    ?assertEqual([], [P || P <- Pres, re:run(P, "(?m)^\\|") =/= nomatch]),
    Srcs = [S || [S] <- match_all(Html, "<img src=\"([^\"]+)\"")],
    Dir = filename:dirname(Path),
    ?assertEqual([], [S || S <- Srcs, not filelib:is_regular(filename:join(Dir, S))]),
    %% No network: nothing is fetched from elsewhere.
    ?assertEqual(nomatch, binary:match(Html, [<<"http://">>, <<"https://">>])),
    Html.

match_all(Html, Re) ->
    case re:run(Html, Re, [global, {capture, all_but_first, binary}]) of
        {match, Ms} -> Ms;
        nomatch -> []
    end.

%% The page from its first table on: what the data say, without the reading guide.
tables(Html) ->
    {Pos, _} = binary:match(Html, <<"<table">>),
    binary:part(Html, Pos, byte_size(Html) - Pos).
