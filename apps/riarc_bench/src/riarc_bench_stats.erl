%% @doc Online and offline statistics for the load driver.
%%
%% Welford's online mean/variance (004 §3.3 uses it for the mean response time), a
%% log-linear histogram for percentiles, reservoir sampling to keep a bounded sample of
%% response times, and maximum-likelihood fits of normal, log-normal and gamma
%% distributions with each fit's Kolmogorov-Smirnov statistic (004 §4.1, realism check).
%%
%% ```
%% 1> W = lists:foldl(fun riarc_bench_stats:welford_add/2, riarc_bench_stats:welford_new(), [1,2,3,4]).
%% 2> {riarc_bench_stats:mean(W), riarc_bench_stats:variance(W)}.
%% {2.5,1.6666666666666667}
%% 3> H = lists:foldl(fun riarc_bench_stats:hist_add/2, riarc_bench_stats:hist_new(), lists:seq(1, 1000)).
%% 4> riarc_bench_stats:percentile(H, 0.9).
%% 899
%% 5> riarc_bench_stats:fits([1.0, 2.0, 2.5, 3.0, 7.0]).
%% #{gamma => #{ks => ..., shape => ..., scale => ...}, lognormal => ..., normal => ...}
%% '''
-module(riarc_bench_stats).

-export([welford_new/0, welford_add/2, welford_merge/2, count/1, mean/1, variance/1, sd/1]).
-export([hist_new/0, hist_add/2, hist_count/1, percentile/2, hist_max/1]).
-export([reservoir_new/2, reservoir_add/2, reservoir_list/1]).
-export([fits/1, ks/2, cdf/2, pdf/2, cv/1, mean_sd/1]).

-export_type([welford/0, hist/0, reservoir/0, dist/0]).

-record(welford, {n = 0 :: non_neg_integer(), mean = 0.0 :: float(), m2 = 0.0 :: float()}).
-opaque welford() :: #welford{}.

%% Histogram of non-negative integers: bucket key {E, M} covers [M bsl E, (M+1) bsl E).
%% 64-128 sub-buckets per power of two keep the relative error of a percentile below ~1 %.
-record(hist, {n = 0 :: non_neg_integer(), max = 0 :: non_neg_integer(),
               buckets = #{} :: #{{non_neg_integer(), non_neg_integer()} => pos_integer()}}).
-opaque hist() :: #hist{}.

-record(reservoir, {cap :: pos_integer(), seen = 0 :: non_neg_integer(),
                    items = #{} :: #{non_neg_integer() => number()}, rand :: rand:state()}).
-opaque reservoir() :: #reservoir{}.

-type dist() :: {normal, Mu :: float(), Sigma :: float()}
              | {lognormal, Mu :: float(), Sigma :: float()}
              | {gamma, Shape :: float(), Scale :: float()}.

-define(SUB_BITS, 7).

%%% Welford ---------------------------------------------------------------------------

-spec welford_new() -> welford().
welford_new() -> #welford{}.

%% Welford (1962): update the running mean and the sum of squared deviations in one pass,
%% which stays accurate where sum/sum-of-squares would cancel catastrophically.
-spec welford_add(number(), welford()) -> welford().
welford_add(X, #welford{n = N0, mean = M0, m2 = S0}) ->
    N = N0 + 1,
    D = X - M0,
    M = M0 + D / N,
    #welford{n = N, mean = M, m2 = S0 + D * (X - M)}.

%% Chan et al. parallel combination, so per-interval accumulators can be merged.
-spec welford_merge(welford(), welford()) -> welford().
welford_merge(#welford{n = 0}, B) -> B;
welford_merge(A, #welford{n = 0}) -> A;
welford_merge(#welford{n = Na, mean = Ma, m2 = Sa}, #welford{n = Nb, mean = Mb, m2 = Sb}) ->
    N = Na + Nb,
    D = Mb - Ma,
    #welford{n = N, mean = Ma + D * Nb / N, m2 = Sa + Sb + D * D * Na * Nb / N}.

-spec count(welford()) -> non_neg_integer().
count(#welford{n = N}) -> N.

-spec mean(welford()) -> float().
mean(#welford{mean = M}) -> M.

%% Sample (n-1) variance; 0.0 when fewer than two observations.
-spec variance(welford()) -> float().
variance(#welford{n = N}) when N < 2 -> 0.0;
variance(#welford{n = N, m2 = S}) -> S / (N - 1).

-spec sd(welford()) -> float().
sd(W) -> math:sqrt(variance(W)).

%%% Histogram -------------------------------------------------------------------------

-spec hist_new() -> hist().
hist_new() -> #hist{}.

-spec hist_add(non_neg_integer(), hist()) -> hist().
hist_add(V, #hist{n = N, max = Max, buckets = B}) when is_integer(V), V >= 0 ->
    K = bucket(V),
    #hist{n = N + 1, max = max(Max, V), buckets = maps:update_with(K, fun(C) -> C + 1 end, 1, B)}.

-spec hist_count(hist()) -> non_neg_integer().
hist_count(#hist{n = N}) -> N.

-spec hist_max(hist()) -> non_neg_integer().
hist_max(#hist{max = M}) -> M.

%% The value below which a fraction Q of the observations fall, reported as the middle of
%% the bucket holding the ceil(Q*n)-th observation (capped by the exact maximum).
-spec percentile(hist(), float()) -> non_neg_integer().
percentile(#hist{n = 0}, _Q) -> 0;
percentile(#hist{n = N, max = Max, buckets = B}, Q) when Q >= 0, Q =< 1 ->
    Rank = max(1, ceil(Q * N)),
    Sorted = lists:sort(fun(K1, K2) -> lower(K1) =< lower(K2) end, maps:keys(B)),
    min(Max, walk(Sorted, B, Rank, 0)).

walk([K], _B, _Rank, _Acc) -> mid(K);
walk([K | Ks], B, Rank, Acc) ->
    case Acc + maps:get(K, B) of
        A when A >= Rank -> mid(K);
        A -> walk(Ks, B, Rank, A)
    end.

bucket(V) ->
    E = max(0, bit_length(V) - ?SUB_BITS),
    {E, V bsr E}.

lower({E, M}) -> M bsl E.
mid({E, M}) -> (M bsl E) + ((1 bsl E) - 1) div 2.

bit_length(0) -> 0;
bit_length(V) -> bit_length(V bsr 1) + 1.

%%% Reservoir -------------------------------------------------------------------------

%% Keeps a uniform sample of at most Cap items from a stream (Vitter's Algorithm R), so the
%% distribution fits see every part of a run without storing millions of response times.
-spec reservoir_new(pos_integer(), integer()) -> reservoir().
reservoir_new(Cap, Seed) ->
    #reservoir{cap = Cap, rand = rand:seed_s(exsss, Seed)}.

-spec reservoir_add(number(), reservoir()) -> reservoir().
reservoir_add(X, R = #reservoir{cap = Cap, seen = S, items = I}) when S < Cap ->
    R#reservoir{seen = S + 1, items = I#{S => X}};
reservoir_add(X, R = #reservoir{cap = Cap, seen = S, items = I, rand = Rs0}) ->
    {J, Rs} = rand:uniform_s(S + 1, Rs0),
    case J =< Cap of
        true -> R#reservoir{seen = S + 1, items = I#{J - 1 => X}, rand = Rs};
        false -> R#reservoir{seen = S + 1, rand = Rs}
    end.

-spec reservoir_list(reservoir()) -> [number()].
reservoir_list(#reservoir{items = I}) -> maps:values(I).

%%% Distribution fits -----------------------------------------------------------------

%% 004 §4.1: estimate each candidate by maximum likelihood, then judge it by the
%% Kolmogorov-Smirnov statistic D (smaller is a better fit).
-spec fits([number()]) -> #{normal | lognormal | gamma => #{dist := dist(), ks := float()}}
                          | #{}.
fits(Xs) when length(Xs) < 3 -> #{};
fits(Xs0) ->
    Xs = [float(X) || X <- Xs0],
    Pos = [X || X <- Xs, X > 0],
    Cands = [{normal, fit_normal(Xs)}]
        ++ [{lognormal, fit_lognormal(Pos)} || length(Pos) >= 3]
        ++ [{gamma, fit_gamma(Pos)} || length(Pos) >= 3],
    maps:from_list([{Name, #{dist => D, ks => ks(Xs, D)}} || {Name, D} <- Cands, D =/= undefined]).

fit_normal(Xs) ->
    {M, S} = mle_normal(Xs),
    case S > 0 of true -> {normal, M, S}; false -> undefined end.

fit_lognormal(Xs) ->
    {M, S} = mle_normal([math:log(X) || X <- Xs]),
    case S > 0 of true -> {lognormal, M, S}; false -> undefined end.

%% Gamma MLE: the shape k solves ln k - psi(k) = s with s = ln(mean) - mean(ln x).
%% Start from Minka's closed-form approximation and polish with Newton steps.
fit_gamma(Xs) ->
    N = length(Xs),
    Mean = lists:sum(Xs) / N,
    S = math:log(Mean) - lists:sum([math:log(X) || X <- Xs]) / N,
    case S > 0 of
        false -> undefined;
        true ->
            K0 = (3 - S + math:sqrt((S - 3) * (S - 3) + 24 * S)) / (12 * S),
            K = newton_gamma(K0, S, 20),
            {gamma, K, Mean / K}
    end.

newton_gamma(K, _S, 0) -> K;
newton_gamma(K, S, I) ->
    F = math:log(K) - digamma(K) - S,
    DF = 1 / K - trigamma(K),
    K1 = max(K - F / DF, K / 10),
    case abs(K1 - K) < 1.0e-10 * K of
        true -> K1;
        false -> newton_gamma(K1, S, I - 1)
    end.

%% Population (MLE) mean and standard deviation.
mle_normal(Xs) ->
    N = length(Xs),
    M = lists:sum(Xs) / N,
    {M, math:sqrt(lists:sum([(X - M) * (X - M) || X <- Xs]) / N)}.

%% One-sample Kolmogorov-Smirnov statistic D = sup |F_n(x) - F(x)|.
-spec ks([number()], dist() | fun((float()) -> float())) -> float().
ks(Xs, Dist) when is_tuple(Dist) -> ks(Xs, fun(X) -> cdf(Dist, X) end);
ks(Xs, F) ->
    Sorted = lists:sort([float(X) || X <- Xs]),
    N = length(Sorted),
    {D, _} = lists:foldl(
               fun(X, {D0, I}) ->
                       C = F(X),
                       {max(D0, max(I / N - C, C - (I - 1) / N)), I + 1}
               end, {0.0, 1}, Sorted),
    D.

-spec cdf(dist(), float()) -> float().
cdf({normal, M, S}, X) -> 0.5 * (1 + math:erf((X - M) / (S * math:sqrt(2))));
cdf({lognormal, _, _}, X) when X =< 0 -> 0.0;
cdf({lognormal, M, S}, X) -> cdf({normal, M, S}, math:log(X));
cdf({gamma, _, _}, X) when X =< 0 -> 0.0;
cdf({gamma, K, Theta}, X) -> gammp(K, X / Theta).

%% Densities, for drawing the fitted distributions over the data.
-spec pdf(dist(), float()) -> float().
pdf({normal, M, S}, X) -> math:exp(-(X - M) * (X - M) / (2 * S * S)) / (S * math:sqrt(2 * math:pi()));
pdf({lognormal, _, _}, X) when X =< 0 -> 0.0;
pdf({lognormal, M, S}, X) -> pdf({normal, M, S}, math:log(X)) / X;
pdf({gamma, _, _}, X) when X =< 0 -> 0.0;
pdf({gamma, K, Theta}, X) ->
    math:exp((K - 1) * math:log(X) - X / Theta - lgamma(K) - K * math:log(Theta)).

%% Regularised lower incomplete gamma P(a, x): series for x < a + 1, continued fraction
%% (modified Lentz) otherwise, the usual split for fast convergence.
gammp(A, X) when X < A + 1 -> gser(A, X, A, 1 / A, 1 / A, 0);
gammp(A, X) -> 1 - gcf(A, X).

gser(A, X, _Ap, _Del, Sum, 500) -> Sum * math:exp(-X + A * math:log(X) - lgamma(A));
gser(A, X, Ap0, Del0, Sum0, I) ->
    Ap = Ap0 + 1,
    Del = Del0 * X / Ap,
    Sum = Sum0 + Del,
    case abs(Del) < abs(Sum) * 1.0e-14 of
        true -> Sum * math:exp(-X + A * math:log(X) - lgamma(A));
        false -> gser(A, X, Ap, Del, Sum, I + 1)
    end.

gcf(A, X) ->
    B = X + 1 - A,
    Tiny = 1.0e-300,
    H = gcf_loop(A, B, 1 / Tiny, 1 / B, 1 / B, 1),
    math:exp(-X + A * math:log(X) - lgamma(A)) * H.

gcf_loop(_A, _B, _C, _D, H, 500) -> H;
gcf_loop(A, B0, C0, D0, H0, I) ->
    An = -I * (I - A),
    B = B0 + 2,
    D = nz(An * D0 + B),
    C = nz(B + An / C0),
    D1 = 1 / D,
    Del = D1 * C,
    H = H0 * Del,
    case abs(Del - 1) < 1.0e-14 of
        true -> H;
        false -> gcf_loop(A, B, C, D1, H, I + 1)
    end.

nz(V) when abs(V) < 1.0e-300 -> 1.0e-300;
nz(V) -> V.

%% Lanczos approximation (g = 7, 9 terms) of ln Gamma(x) for x > 0.
lgamma(X) when X < 0.5 -> math:log(math:pi() / abs(math:sin(math:pi() * X))) - lgamma(1 - X);
lgamma(X0) ->
    Cs = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
          -176.61502916214059, 12.507343278686905, -0.13857109526572012,
          9.9843695780195716e-6, 1.5056327351493116e-7],
    X = X0 - 1,
    [C0 | Rest] = Cs,
    {A, _} = lists:foldl(fun(C, {Acc, I}) -> {Acc + C / (X + I), I + 1} end, {C0, 1}, Rest),
    T = X + 7.5,
    0.5 * math:log(2 * math:pi()) + (X + 0.5) * math:log(T) - T + math:log(A).

%% Digamma and trigamma by recurrence up to x >= 6, then their asymptotic series.
digamma(X) when X < 6 -> digamma(X + 1) - 1 / X;
digamma(X) ->
    F = 1 / (X * X),
    math:log(X) - 0.5 / X - F * (1 / 12 - F * (1 / 120 - F * (1 / 252 - F * (1 / 240 - F / 132)))).

trigamma(X) when X < 6 -> trigamma(X + 1) + 1 / (X * X);
trigamma(X) ->
    F = 1 / (X * X),
    1 / X + F / 2 + F / X * (1 / 6 - F * (1 / 30 - F * (1 / 42 - F / 30))).

%%% Repetition statistics --------------------------------------------------------------

%% Coefficient of variation sd/mean (App. C.5.1); 0.0 for a constant or zero-mean series.
-spec cv([number()]) -> float().
cv(Xs) ->
    case mean_sd(Xs) of
        {M, S} when M /= 0 -> S / abs(M);
        _ -> 0.0
    end.

-spec mean_sd([number()]) -> {float(), float()}.
mean_sd(Xs) ->
    W = lists:foldl(fun welford_add/2, welford_new(), Xs),
    {mean(W), sd(W)}.
