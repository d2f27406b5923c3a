%% @doc Statistics that say what they know, for the reports: the median of a handful of
%% repetitions with a 95 % bootstrap-percentile confidence interval, the ratio of a
%% set-up to its baseline with its interval, a difference called significant only when
%% that interval excludes "no difference", outliers flagged by Tukey's fences, and "n too
%% small" instead of an interval when fewer than three repetitions were run.
%%
%% Why bootstrap percentile rather than t: the per-run values (response times above all)
%% are skewed and, on a shared machine, prone to one slow repetition; the median with a
%% resampling interval assumes no distribution, and the ratio of two medians gets its
%% interval the same way, with no delta-method approximation. The resampling uses a fixed
%% seed (`rand' with explicit state), so the same data always give the same interval and a
%% redrawn report does not change. With 3 to 5 repetitions the interval is close to the
%% range of the data and its coverage is below the nominal 95 %: a reader should take it as
%% "what these runs can tell apart", not as a guarantee (docs/bench.md says more).
%%
%% ```
%% 1> S = riarc_bench_ci:summary([10.0, 12.0, 11.0, 13.0, 40.0]).
%% 2> maps:with([n, median, lo, hi, outliers], S).
%% #{hi => 40.0,lo => 10.0,median => 12.0,n => 5,outliers => [40.0]}
%% 3> riarc_bench_ci:format(S).
%% "12.0 [10.0, 40.0]"
%% 4> riarc_bench_ci:format(riarc_bench_ci:summary([3.0, 4.0])).
%% "3.50 (n too small)"
%% 5> C = riarc_bench_ci:compare([20.0, 21.0, 22.0], [10.0, 10.5, 11.0]).
%% 6> maps:with([ratio, significant], C).
%% #{ratio => 2.0,significant => true}
%% 7> riarc_bench_ci:format_compare(C).
%% "+100 % [+81.8, +120]"
%% 8> riarc_bench_ci:format_ratio(C).
%% "2.00x (1.82 to 2.20)"
%% '''
-module(riarc_bench_ci).

-export([min_n/0, level/0, resamples/0]).
-export([median/1, quantile/2, tukey/1, summary/1, compare/2, overhead/1]).
-export([format/1, format/2, format_compare/1, format_ratio/1, num/1]).

-export_type([summary/0, comparison/0]).

%% What a column of per-run values says. `lo'/`hi' (the 95 % interval) and `outliers'
%% are present only with at least min_n() values; `mean'/`sd' are for the CSV files.
-type summary() :: #{n := non_neg_integer(), median => float(), lo => float(), hi => float(),
                     mean => float(), sd => float(), outliers => [float()],
                     enough := boolean()}.
%% A set-up against its baseline: the ratio of medians (set-up / baseline) and its
%% interval, and whether that interval excludes 1.
-type comparison() :: #{enough := boolean(), significant := boolean(),
                        ratio => float(), lo => float(), hi => float(),
                        diff => float(), diff_lo => float(), diff_hi => float(),
                        setup := summary(), base := summary()}.

%% Fewer repetitions than this have no interval: with two values a "95 %" interval is
%% the pair itself, and an sd of one value is a 0 that reads as certainty.
-define(MIN_N, 3).
-define(LEVEL, 0.95).
%% 2000 resamples put the Monte-Carlo error of a 2.5 % percentile well below the
%% rounding of the reports, and cost a few ms for the sample sizes of an experiment.
-define(B, 2000).
-define(SEED, {16#bea7, 16#c1, 2024}).

-spec min_n() -> pos_integer().
min_n() -> ?MIN_N.

-spec level() -> float().
level() -> ?LEVEL.

-spec resamples() -> pos_integer().
resamples() -> ?B.

%%% Order statistics -------------------------------------------------------------------

%% The median by linear interpolation between order statistics (the same rule as
%% quantile/2 with p = 0.5), so an even count gives the mean of the two middle values.
-spec median([number(), ...]) -> float().
median(Xs) -> quantile(Xs, 0.5).

%% Hyndman and Fan's type 7 (the default of R and numpy): h = (n - 1) p, interpolated.
-spec quantile([number(), ...], float()) -> float().
quantile([_ | _] = Xs, P) when P >= 0, P =< 1 ->
    sorted_quantile(list_to_tuple(lists:sort([float(X) || X <- Xs])), P).

sorted_quantile(T, P) ->
    H = (tuple_size(T) - 1) * P,
    Lo = floor(H),
    case Lo + 1 >= tuple_size(T) of
        true -> element(tuple_size(T), T);
        false ->
            A = element(Lo + 1, T),
            A + (H - Lo) * (element(Lo + 2, T) - A)
    end.

%% Tukey's fences: values below Q1 - 1.5 IQR or above Q3 + 1.5 IQR. With fewer than four
%% values the quartiles are the data themselves and nothing can stand out.
-spec tukey([number()]) -> [float()].
tukey(Xs) when length(Xs) < 4 -> [];
tukey(Xs) ->
    Q1 = quantile(Xs, 0.25),
    Q3 = quantile(Xs, 0.75),
    Iqr = Q3 - Q1,
    [float(X) || X <- Xs, X < Q1 - 1.5 * Iqr orelse X > Q3 + 1.5 * Iqr].

%%% One sample --------------------------------------------------------------------------

%% The median and its 95 % bootstrap-percentile interval. The interval is clamped to
%% contain the median, which the percentile method does not promise for tiny n.
-spec summary([number()]) -> summary().
summary([]) -> #{n => 0, enough => false};
summary(Xs0) ->
    Xs = [float(X) || X <- Xs0],
    N = length(Xs),
    M = median(Xs),
    {Mean, Sd} = riarc_bench_stats:mean_sd(Xs),
    Base = #{n => N, median => M, mean => Mean, sd => Sd},
    case N < ?MIN_N of
        true -> Base#{enough => false};
        false ->
            T = list_to_tuple(Xs),
            {Meds, _} = boot(fun(R) -> resample_median(T, R) end, seed(Xs)),
            {Lo, Hi} = percentile_interval(Meds),
            Base#{enough => true, lo => min(Lo, M), hi => max(Hi, M), outliers => tukey(Xs)}
    end.

%%% Two samples -------------------------------------------------------------------------

%% A set-up's runs against its baseline's: both are resampled independently (they are
%% separate runs), and each resample gives the ratio and the difference of the medians.
%% The comparison is significant when the ratio's interval excludes 1 (equivalently the
%% difference's excludes 0). With a baseline median of 0 there is no ratio, only the
%% difference.
-spec compare([number()], [number()]) -> comparison().
compare(Setup0, Base0) ->
    Setup = [float(X) || X <- Setup0],
    Base = [float(X) || X <- Base0],
    S = summary(Setup),
    B = summary(Base),
    case maps:get(enough, S) andalso maps:get(enough, B) of
        false ->
            maybe_ratio(#{enough => false, significant => false, setup => S, base => B});
        true ->
            Ts = list_to_tuple(Setup),
            Tb = list_to_tuple(Base),
            {Pairs, _} = boot(fun(R0) ->
                                      {Ms, R1} = resample_median(Ts, R0),
                                      {Mb, R2} = resample_median(Tb, R1),
                                      {{Ms, Mb}, R2}
                              end, seed(Setup ++ Base)),
            Diff = maps:get(median, S) - maps:get(median, B),
            {DLo, DHi} = percentile_interval([Ms - Mb || {Ms, Mb} <- Pairs]),
            C = #{enough => true, setup => S, base => B, diff => Diff,
                  diff_lo => min(DLo, Diff), diff_hi => max(DHi, Diff),
                  significant => DLo > 0 orelse DHi < 0},
            case lists:all(fun({_, Mb}) -> Mb > 0 end, Pairs) andalso maps:get(median, B) > 0 of
                false -> C;
                true ->
                    Ratio = maps:get(median, S) / maps:get(median, B),
                    {RLo, RHi} = percentile_interval([Ms / Mb || {Ms, Mb} <- Pairs]),
                    C#{ratio => Ratio, lo => min(RLo, Ratio), hi => max(RHi, Ratio)}
            end
    end.

%% Too few runs for an interval still have a point ratio, shown with "n too small".
maybe_ratio(C = #{setup := #{median := S}, base := #{median := B}}) when B > 0 ->
    C#{ratio => S / B, diff => S - B};
maybe_ratio(C) -> C.

%% The overhead (set-up - baseline) / baseline in per cent, with its interval when known:
%% {Pct, {Lo, Hi} | none}, or none without a ratio.
-spec overhead(comparison()) -> {float(), {float(), float()} | none} | none.
overhead(#{ratio := R, lo := Lo, hi := Hi}) -> {pct(R), {pct(Lo), pct(Hi)}};
overhead(#{ratio := R}) -> {pct(R), none};
overhead(_) -> none.

pct(R) -> 100 * (R - 1).

%%% Bootstrap ---------------------------------------------------------------------------

boot(Stat, Seed) ->
    lists:mapfoldl(fun(_, R) -> Stat(R) end, rand:seed_s(exsss, Seed), lists:seq(1, ?B)).

%% The seed mixes a fixed constant with the data, so two columns of identical data get
%% identical intervals and different columns do not share one sequence of draws.
seed(Xs) ->
    {A, B, C} = ?SEED,
    {A bxor erlang:phash2(Xs), B, C}.

resample_median(T, R0) ->
    N = tuple_size(T),
    {Draw, R} = lists:mapfoldl(fun(_, R1) ->
                                       {I, R2} = rand:uniform_s(N, R1),
                                       {element(I, T), R2}
                               end, R0, lists:seq(1, N)),
    {sorted_quantile(list_to_tuple(lists:sort(Draw)), 0.5), R}.

percentile_interval(Stats) ->
    T = list_to_tuple(lists:sort(Stats)),
    Tail = (1 - ?LEVEL) / 2,
    {sorted_quantile(T, Tail), sorted_quantile(T, 1 - Tail)}.

%%% Text --------------------------------------------------------------------------------

%% "12.0 [10.0, 40.0]", "3.50 (n too small)" or "n/a" for no runs at all.
-spec format(summary()) -> string().
format(S) -> format(S, 1).

%% The same, every value multiplied by Scale (e.g. 1.0e-6 for bytes to MB).
-spec format(summary(), number()) -> string().
format(#{n := 0}, _Scale) -> "n/a";
format(#{enough := false, median := M}, Scale) -> num(M * Scale) ++ " (n too small)";
format(#{median := M, lo := Lo, hi := Hi}, Scale) ->
    lists:flatten([num(M * Scale), " [", num(Lo * Scale), ", ", num(Hi * Scale), "]"]).

%% "+50 % [+31, +72]", "+3 % [-4, +9] (not significant)", "+12 % (n too small)".
-spec format_compare(comparison()) -> string().
format_compare(C) ->
    case {overhead(C), C} of
        {none, #{enough := true, diff := D, diff_lo := L, diff_hi := H}} ->
            lists:flatten(["difference ", signed(D), " [", signed(L), ", ", signed(H), "]",
                           not_sig(C)]);
        {none, _} -> "n/a";
        {{P, none}, _} -> signed(P) ++ " % (n too small)";
        {{P, {L, H}}, _} ->
            lists:flatten([signed(P), " % [", signed(L), ", ", signed(H), "]", not_sig(C)])
    end.

%% @doc A comparison as a ratio to the baseline, in plain words: "2.00x (1.82 to 2.20)";
%% "1.02x (0.95 to 1.10, no measurable difference)" when the interval includes 1; the
%% ratio alone with too few runs for an interval (the reader is told that once, not in
%% every cell); "n/a" without a ratio (a baseline of 0).
-spec format_ratio(comparison()) -> string().
format_ratio(#{ratio := R, lo := Lo, hi := Hi, significant := Sig}) ->
    lists:flatten([ratio_num(R), "x (", ratio_num(Lo), " to ", ratio_num(Hi),
                   case Sig of true -> ""; false -> ", no measurable difference" end, ")"]);
format_ratio(#{ratio := R}) -> ratio_num(R) ++ "x";
format_ratio(_) -> "n/a".

%% Two decimals below 10 (a ratio near 1 needs them), none above.
ratio_num(X) when X >= 10 -> float_to_list(float(X), [{decimals, 0}]);
ratio_num(X) -> float_to_list(float(X), [{decimals, 2}]).

not_sig(#{significant := true}) -> "";
not_sig(_) -> " (not significant)".

signed(X) when X >= 0 -> "+" ++ num(X);
signed(X) -> num(X).

%% Three significant figures, enough for what a handful of runs can say.
-spec num(number()) -> string().
num(X) when is_integer(X) -> integer_to_list(X);
num(X) when abs(X) >= 100 -> float_to_list(float(X), [{decimals, 0}]);
num(X) when abs(X) >= 10 -> float_to_list(float(X), [{decimals, 1}]);
num(X) when abs(X) >= 1 -> float_to_list(float(X), [{decimals, 2}]);
num(X) when X == 0 -> "0";
num(X) -> float_to_list(float(X), [{decimals, 3}]).
