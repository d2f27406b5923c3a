%% @doc `make bench-takeover': what the takeover costs, read from runs the script
%% scripts/bench-takeover made (the load driver's system, instrumentation alone, each run
%% in a fresh VM, set-ups interleaved within each repetition). Writes the table of median
%% mean response times with their 95 % intervals and the ratios asked of riarc: against
%% centralised monitoring and against the VM's tracing alone (the floor).
%% ```
%% 1> riarc_bench_takeover:summary("bench-results/takeover/runs.csv").
%% {ok, <<"| shape | n | set-up | MRT median (ms) [95 % CI] | ...">>}
%% '''
-module(riarc_bench_takeover).

-export([main/1, summary/1]).

%% @doc Prints the summary of a runs.csv; exit status 0, or 2 when it cannot be read.
-spec main([string()]) -> no_return().
main([Runs]) ->
    case summary(Runs) of
        {ok, Md} -> io:put_chars(Md), halt(0);
        {error, Why} -> io:format(standard_error, "riarc: ~ts: ~p~n", [Runs, Why]), halt(2)
    end.

%% @doc The Markdown summary of a runs.csv with columns rep, shape, n, setup, mrt_mean_ms.
-spec summary(file:filename()) -> {ok, binary()} | {error, term()}.
summary(Runs) ->
    case file:read_file(Runs) of
        {ok, Bin} ->
            [_Hdr | Lines] = string:lexemes(unicode:characters_to_list(Bin), "\n"),
            Rows = [string:split(L, ",", all) || L <- Lines],
            Mrt = lists:foldl(fun([_Rep, Shape, N, Setup, M | _], Acc) when M =/= "" ->
                                      maps:update_with({Shape, N, Setup},
                                                       fun(Xs) -> [list_to_float(M) | Xs] end,
                                                       [list_to_float(M)], Acc);
                                 (_, Acc) -> Acc
                              end, #{}, Rows),
            {ok, iolist_to_binary(table(Mrt))};
        {error, _} = E -> E
    end.

table(Mrt) ->
    Keys = lists:usort([{Shape, N} || {Shape, N, _} <- maps:keys(Mrt)]),
    Setups = ["baseline", "tracing", "riarc", "riarc-evm", "centralised"],
    ["| shape | n | set-up | runs | MRT median (ms) [95 % CI] | x centralised [95 % CI] | x tracing floor [95 % CI] |\n",
     "| --- | --- | --- | --- | --- | --- | --- |\n",
     [[row(Shape, N, S, Mrt) || S <- Setups, is_map_key({Shape, N, S}, Mrt)] || {Shape, N} <- Keys]].

row(Shape, N, S, Mrt) ->
    Xs = maps:get({Shape, N, S}, Mrt),
    Ratio = fun(Other) ->
                    case maps:find({Shape, N, Other}, Mrt) of
                        {ok, Ys} when S =/= Other -> ratio(riarc_bench_ci:compare(Xs, Ys));
                        _ -> "-"
                    end
            end,
    io_lib:format("| ~s | ~s | ~s | ~b | ~s | ~s | ~s |~n",
                  [Shape, N, S, length(Xs), riarc_bench_ci:format(riarc_bench_ci:summary(Xs)),
                   Ratio("centralised"), Ratio("tracing")]).

ratio(#{ratio := R, lo := Lo, hi := Hi}) -> io_lib:format("~.2f [~.2f, ~.2f]", [R, Lo, Hi]);
ratio(#{ratio := R}) -> io_lib:format("~.2f (n too small)", [R]);
ratio(_) -> "-".
