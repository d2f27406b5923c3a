%% @doc Load shapes: how the creation of n workers is spread over a timeline of t units.
%%
%% Each shape draws n continuous creation instants on [0, t) from its distribution and
%% bins them into an Order queue of t counts (004 §3.1, 000 App. C.2). Binning n samples
%% is what makes every queue sum to exactly n, whatever the shape.
%%
%%  * steady: homogeneous Poisson process with rate lambda, t = ceil(n / lambda). Given
%%    that n arrivals happened in [0, t), Poisson arrival instants are i.i.d. uniform, so
%%    each unit's count is the Poisson(lambda)-like multinomial share of n.
%%  * pulse: Normal(mu = t/2, sigma = spread), truncated to [0, t).
%%  * burst: log-normal with mean m = t/2 and standard deviation p (the pinch):
%%    mu = ln(m^2 / sqrt(p^2 + m^2)), sigma = sqrt(ln(1 + p^2 / m^2)), truncated to [0, t).
%%
%% ```
%% 1> S0 = rand:seed_s(exsss, 42).
%% 2> {Q, _} = riarc_bench_shape:order(#{shape => pulse, n => 100, time => 10, spread => 2.0}, S0).
%% 3> {lists:sum(Q), length(Q)}.
%% {100,10}
%% 4> riarc_bench_shape:time_units(#{shape => steady, n => 1000, rate => 300.0}).
%% 4
%% '''
-module(riarc_bench_shape).

-export([order/2, instants/2, time_units/1, cdf/2, burst_params/2]).

-export_type([shape/0, spec/0]).

-type shape() :: steady | pulse | burst.
%% The subset of the model parameters a shape needs.
-type spec() :: #{shape := shape(), n := non_neg_integer(), time => pos_integer(),
                  rate => float(), spread => float(), pinch => float(), _ => _}.

%% The Order queue Q_O: t counts, one per logical time unit, summing to n.
-spec order(spec(), rand:state()) -> {[non_neg_integer()], rand:state()}.
order(Spec, Rand0) ->
    T = time_units(Spec),
    {Xs, Rand} = instants(Spec, Rand0),
    Counts = lists:foldl(fun(X, Acc) -> bump(min(T - 1, trunc(X)), Acc) end, #{}, Xs),
    {[maps:get(I, Counts, 0) || I <- lists:seq(0, T - 1)], Rand}.

bump(I, Acc) -> maps:update_with(I, fun(C) -> C + 1 end, 1, Acc).

%% Length t of the timeline: fixed by the rate for steady loads, given otherwise.
-spec time_units(spec()) -> pos_integer().
time_units(#{shape := steady, n := N, rate := L}) -> max(1, ceil(N / L));
time_units(#{time := T}) -> T.

%% n creation instants in [0, t), in generation order.
-spec instants(spec(), rand:state()) -> {[float()], rand:state()}.
instants(Spec = #{n := N}, Rand0) ->
    T = time_units(Spec),
    Draw = drawer(Spec, T),
    draw_n(N, Draw, T, Rand0, []).

draw_n(0, _Draw, _T, Rand, Acc) -> {lists:reverse(Acc), Rand};
draw_n(K, Draw, T, Rand0, Acc) ->
    {X, Rand} = Draw(Rand0),
    case X >= 0 andalso X < T of
        true -> draw_n(K - 1, Draw, T, Rand, [X | Acc]);
        %% Truncation by rejection: the tail beyond the timeline is redrawn, not piled
        %% onto the edge units, so the queue keeps the shape's form inside [0, t).
        false -> draw_n(K, Draw, T, Rand, Acc)
    end.

drawer(#{shape := steady}, T) ->
    fun(R0) -> {U, R} = rand:uniform_s(R0), {U * T, R} end;
drawer(#{shape := pulse, spread := S}, T) ->
    fun(R0) -> rand:normal_s(T / 2, S * S, R0) end;
drawer(#{shape := burst, pinch := P}, T) ->
    {Mu, Sigma} = burst_params(T, P),
    fun(R0) -> {Z, R} = rand:normal_s(R0), {math:exp(Mu + Sigma * Z), R} end.

%% 000 App. C.2: log-normal parameters with mean m = t/2 and standard deviation p.
-spec burst_params(pos_integer(), float()) -> {float(), float()}.
burst_params(T, P) ->
    M = T / 2,
    {math:log(M * M / math:sqrt(P * P + M * M)), math:sqrt(math:log(1 + P * P / (M * M)))}.

%% CDF of the (truncated) target distribution of the instants on [0, t); used by the
%% goodness-of-fit tests and the docs.
-spec cdf(spec(), float()) -> float().
cdf(Spec, X) ->
    T = time_units(Spec),
    F = raw_cdf(Spec, T),
    Lo = F(0.0),
    Hi = F(float(T)),
    (F(min(max(X, 0.0), float(T))) - Lo) / (Hi - Lo).

raw_cdf(#{shape := steady}, T) -> fun(X) -> X / T end;
raw_cdf(#{shape := pulse, spread := S}, T) ->
    fun(X) -> riarc_bench_stats:cdf({normal, T / 2, S}, X) end;
raw_cdf(#{shape := burst, pinch := P}, T) ->
    {Mu, Sigma} = burst_params(T, P),
    fun(X) -> riarc_bench_stats:cdf({lognormal, Mu, Sigma}, X) end.
