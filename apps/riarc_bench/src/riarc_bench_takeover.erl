%% @doc `make bench-takeover': what the takeover costs, read from runs the script
%% scripts/bench-takeover made (the load driver's system, instrumentation alone, each run
%% in a fresh VM, set-ups interleaved within each repetition). Writes the table of median
%% mean response times with their 95 % intervals and the ratios asked of riarc: against
%% centralised monitoring and against the VM's tracing alone (the floor).
%% ```
%% 1> ok = file:write_file("/tmp/riarc_runs.csv", "rep,shape,n,setup,mrt_mean_ms\n"
%% ..    "1,burst,3000,centralised,2.0\n1,burst,3000,riarc,3.0\n2,burst,3000,centralised,2.2\n"
%% ..    "2,burst,3000,riarc,3.1\n").
%% 2> {ok, Md} = riarc_bench_takeover:summary("/tmp/riarc_runs.csv").
%% 3> io:put_chars(Md).
%% | shape | n | set-up | runs | MRT median (ms) [95 % CI] | ...
%% ...
%% 4> riarc_bench_takeover:summary("/tmp/no_such_runs.csv").
%% {error,{riarc_bench_takeover,{file,"/tmp/no_such_runs.csv",enoent}}}
%% '''
-module(riarc_bench_takeover).

-export([main/1, summary/1, format_error/1]).
-export_type([error_reason/0]).

-type error_reason() :: {file, file:filename(), file:posix() | atom()}
                      | {bad_row, file:filename(), pos_integer()}.

%% @doc Prints the summary of a runs.csv; exit status 0, or 2 when it cannot be read.
-spec main([string()]) -> no_return().
main([Runs]) ->
    case summary(Runs) of
        {ok, Md} -> io:put_chars(Md), halt(0);
        {error, {?MODULE, Reason}} -> io:format(standard_error, "riarc: ~ts~n", [format_error(Reason)]), halt(2)
    end.

%% @doc The Markdown summary of a runs.csv with columns rep, shape, n, setup, mrt_mean_ms.
-spec summary(file:filename()) -> {ok, binary()} | {error, {?MODULE, error_reason()}}.
summary(Runs) ->
    case file:read_file(Runs) of
        {ok, Bin} ->
            Lines = tl(string:split(unicode:characters_to_list(Bin), "\n", all)),
            Rows = [{I + 1, string:split(L, ",", all)}
                    || {I, L} <- lists:zip(lists:seq(1, length(Lines)), Lines), L =/= ""],
            try lists:foldl(fun row_mrt/2, #{}, Rows) of
                Mrt -> {ok, iolist_to_binary(table(Mrt))}
            catch throw:{bad_row, Line} -> {error, {?MODULE, {bad_row, Runs, Line}}}
            end;
        {error, Posix} -> {error, {?MODULE, {file, Runs, Posix}}}
    end.

%% @doc One sentence for an error of summary/1.
-spec format_error(error_reason()) -> string().
format_error({file, Runs, Posix}) ->
    lists:flatten(io_lib:format("~ts: ~ts", [Runs, file:format_error(Posix)]));
format_error({bad_row, Runs, Line}) ->
    lists:flatten(io_lib:format("~ts:~b: not a row of rep,shape,n,setup,mrt_mean_ms", [Runs, Line])).

%% A run without an MRT (crashed) has nothing to add.
row_mrt({_, [_Rep, _Shape, _N, _Setup, "" | _]}, Acc) -> Acc;
row_mrt({Line, [_Rep, Shape, N, Setup, M | _]}, Acc) ->
    X = try list_to_float(M) catch error:badarg -> throw({bad_row, Line}) end,
    maps:update_with({Shape, N, Setup}, fun(Xs) -> [X | Xs] end, [X], Acc);
row_mrt({Line, _}, _Acc) -> throw({bad_row, Line}).

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
