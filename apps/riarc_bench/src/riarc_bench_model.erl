%% @doc The parameters of a master-worker model, their validation, and the seeded
%% generation of the model itself: the Order queue and every worker's batch size.
%%
%% Parameters follow 004 §3.1 and 000 App. C.2 (table 4): n workers, w requests per worker
%% (each batch ~ Normal(w, 0.02w), at least 1), the load shape over t time units, the
%% period pi in ms per unit, Pr(send) and Pr(recv), and a seed r. The same seed always
%% gives the same Order queue and batch sizes because each part of the model draws from
%% its own explicitly threaded random stream (no process dictionary, no shared state).
%%
%% ```
%% 1> {ok, P} = riarc_bench_model:new(#{shape => steady, workers => 10, requests => 5, rate => 4}).
%% 2> maps:with([time, rate, seed], P).
%% #{rate => 4.0,seed => 1,time => 3}
%% 3> #{order := Q, batches := B} = riarc_bench_model:build(P), {Q, B}.
%% {[3,1,6],[5,5,5,5,5,5,5,5,5,5]}
%% 4> riarc_bench_model:new(#{shape => steady, workers => -1, requests => 5}).
%% {error,{riarc_bench_model,{bad_param,workers,-1,"an integer >= 1"}}}
%% '''
-module(riarc_bench_model).

-export([instrumentations/0, defaults/0, new/1, build/1, stream/2, format_error/1]).

-export_type([params/0, model/0, error_reason/0]).

-type error_reason() :: {missing_param, atom()}
                      | {bad_param, atom(), term(), What :: string()}.

-type params() :: #{shape := riarc_bench_shape:shape(),
                    workers := pos_integer(),
                    requests := pos_integer(),
                    time := pos_integer(),
                    rate => float(),
                    spread => float(),
                    pinch => float(),
                    psend := float(),
                    precv := float(),
                    period := pos_integer(),
                    seed := integer(),
                    schedulers => pos_integer(),
                    instrumentation := atom(),
                    monitors := none | soundness,
                    cost_us := non_neg_integer(),
                    events := recv | all,
                    interval := pos_integer(),
                    sample := float(),
                    _ => _}.
-type model() :: #{order := [non_neg_integer()], batches := [pos_integer()]}.

%% Defaults: Pr(send) = Pr(recv) = 0.9 as 004 §4.1 recommends for web-like response
%% times; pi = 1000 ms; a fixed seed because a constant seed lowers the variability
%% between repetitions (004 App. A, 000 App. C.5.1); 500 ms sampling (004 §3.3) and
%% about 10 % of requests timed (004 §3.3); monitors, when a set-up has them, check trace
%% soundness at about 5 µs of analysis per event (000 App. C.5.2).
-spec defaults() -> map().
defaults() ->
    #{time => 10, psend => 0.9, precv => 0.9, period => 1000, seed => 1,
      instrumentation => baseline, monitors => soundness, cost_us => 5, events => recv,
      interval => 500,
      sample => 0.1}.

%% Fills in defaults, derives the shape parameters that depend on others, and checks
%% every value; the returned map is what the rest of the driver trusts.
-spec new(map()) -> {ok, params()} | {error, {?MODULE, error_reason()}}.
new(Given) when is_map(Given) ->
    P0 = maps:merge(defaults(), Given),
    case check_all(P0) of
        ok -> {ok, derive(P0)};
        Error -> Error
    end.

check_all(P) ->
    Checks = [{shape, required, fun(V) -> lists:member(V, [steady, pulse, burst]) end,
               "one of steady, pulse or burst"},
              {workers, required, fun(V) -> is_integer(V) andalso V >= 1 end, "an integer >= 1"},
              {requests, required, fun(V) -> is_integer(V) andalso V >= 1 end, "an integer >= 1"},
              {time, optional, fun(V) -> is_integer(V) andalso V >= 1 end, "an integer >= 1"},
              {rate, optional, fun positive/1, "a number > 0"},
              {spread, optional, fun positive/1, "a number > 0"},
              {pinch, optional, fun positive/1, "a number > 0"},
              %% Pr = 0 is a probability but would never send (or dequeue): the run could
              %% not end, so it is refused like a value outside [0, 1].
              {psend, optional, fun probability/1, "a probability in (0, 1]"},
              {precv, optional, fun probability/1, "a probability in (0, 1]"},
              {period, optional, fun(V) -> is_integer(V) andalso V >= 1 end, "an integer >= 1 (ms)"},
              {seed, optional, fun erlang:is_integer/1, "an integer"},
              {schedulers, optional, fun(V) -> is_integer(V) andalso V >= 1 end, "an integer >= 1"},
              {instrumentation, optional, fun(V) -> lists:member(V, instrumentations()) end,
               "one of " ++ lists:join(", ", [atom_to_list(S) || S <- instrumentations()])},
              {monitors, optional, fun(V) -> lists:member(V, [none, soundness]) end,
               "none or soundness"},
              {events, optional, fun(V) -> lists:member(V, [recv, all]) end, "recv or all"},
              {cost_us, optional, fun(V) -> is_integer(V) andalso V >= 0 andalso V =< 1000000 end,
               "an integer number of microseconds in 0..1000000"},
              {interval, optional, fun(V) -> is_integer(V) andalso V >= 10 end, "an integer >= 10 (ms)"},
              {sample, optional, fun probability/1, "a fraction in (0, 1]"}],
    first_error(P, Checks).

first_error(_P, []) -> ok;
first_error(P, [{Key, Need, Ok, What} | Rest]) ->
    case {maps:find(Key, P), Need} of
        {error, required} -> {error, {?MODULE, {missing_param, Key}}};
        {error, optional} -> first_error(P, Rest);
        {{ok, V}, _} ->
            case Ok(V) of
                true -> first_error(P, Rest);
                false -> {error, {?MODULE, {bad_param, Key, V, What}}}
            end
    end.

positive(V) -> is_number(V) andalso V > 0.
probability(V) -> is_number(V) andalso V > 0 andalso V =< 1.

derive(P = #{shape := steady, workers := N}) ->
    %% 004 §3.1: for steady loads t follows from the rate, t = ceil(n / lambda); without a
    %% rate the given (or default) t fixes lambda = n / t instead.
    Rate = float(maps:get(rate, P, N / maps:get(time, P))),
    floats(P#{rate => Rate, time => riarc_bench_shape:time_units(#{shape => steady, n => N, rate => Rate})});
derive(P = #{shape := pulse, time := T}) ->
    %% 000 App. C.2 uses spread 25 on t = 100: the same proportion is the default.
    floats(maps:merge(#{spread => T / 4}, P));
derive(P = #{shape := burst, time := T}) ->
    %% 000 App. C.2 uses pinch 100 on t = 100.
    floats(maps:merge(#{pinch => float(T)}, P)).

floats(P) ->
    maps:map(fun(K, V) when K =:= rate; K =:= spread; K =:= pinch; K =:= psend;
                            K =:= precv; K =:= sample -> float(V);
                (_, V) -> V
             end, P).

%% The model for validated parameters: Order queue and batch sizes, one stream each.
-spec build(params()) -> model().
build(P = #{workers := N, requests := W}) ->
    {Order, _} = riarc_bench_shape:order(P#{n => N}, stream(P, order)),
    {Batches, _} = batches(N, W, stream(P, batches), []),
    #{order => Order, batches => Batches}.

%% 004 §3.1: batch size ~ Normal(w, 0.02w), rounded, at least 1.
batches(0, _W, R, Acc) -> {lists:reverse(Acc), R};
batches(K, W, R0, Acc) ->
    {X, R} = rand:normal_s(W, (0.02 * W) * (0.02 * W), R0),
    batches(K - 1, W, R, [max(1, round(X)) | Acc]).

%% Independent, reproducible random streams derived from the seed, one per purpose, so
%% that e.g. changing Pr(send) does not change the Order queue.
-spec stream(params(), order | batches | master | collector) -> rand:state().
stream(#{seed := Seed}, Purpose) ->
    Tag = #{order => 1, batches => 2, master => 3, collector => 4},
    rand:seed_s(exsss, {Seed, maps:get(Purpose, Tag), 16#5EED}).

%% @doc One sentence for an error of new/1.
-spec format_error(error_reason()) -> string().
format_error({missing_param, Key}) ->
    lists:flatten(io_lib:format("the parameter ~s is required", [Key]));
format_error({bad_param, Key, V, What}) ->
    lists:flatten(io_lib:format("the parameter ~s must be ~s, not ~0tp", [Key, What, V])).

%% @doc The set-ups a benchmark can run under (see riarc_bench_run for what each is).
-spec instrumentations() -> [atom()].
instrumentations() -> [baseline, tracing, riarc, riarc_inline, riarc_evm, centralised, inline, mit].
