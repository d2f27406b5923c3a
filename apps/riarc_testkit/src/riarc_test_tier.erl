%% @doc Test tiers: what `make test' runs (the fast tier) and what `make test-all' adds
%% (stress, soak, loaded, distributed and fault campaigns), chosen by RIARC_TIER in the
%% environment (`fast', the default, or `all'). Nothing that tests correctness is left
%% out of the suite: a slow test moves tier, and a property runs with fewer cases in the
%% fast tier and more in the full one, always from a seed it prints when it fails.
%% ```
%% 1> T = riarc_test_tier:tier().
%% 2> lists:member(T, [fast, all]).
%% true
%% 3> riarc_test_tier:count(10, 1000) =:= case T of fast -> 10; all -> 1000 end.
%% true
%% 4> length(riarc_test_tier:slow([a_test])) =:= length(riarc_test_tier:slow_groups([g])).
%% true
%% '''
-module(riarc_test_tier).

-export([tier/0, count/2, pick/2, slow/1, slow_groups/1, quickcheck/2, quickcheck/3, seed/0,
         seeded/1]).
-export_type([tier/0]).

-type tier() :: fast | all.

%% The seed every property starts from unless RIARC_PROP_SEED says otherwise: a fixed
%% one, so that a failure in CI happens again on a developer's machine.
-define(DEFAULT_SEED, {1237, 4271, 9011}).

%% @doc The tier this run is in.
-spec tier() -> tier().
tier() ->
    case os:getenv("RIARC_TIER") of
        "all" -> all;
        _ -> fast
    end.

%% @doc Fast in the fast tier, All in the full one: how many runs, processes or cases.
-spec count(non_neg_integer(), non_neg_integer()) -> non_neg_integer().
count(Fast, All) ->
    case tier() of
        fast -> Fast;
        all -> All
    end.

%% @doc Every variant (of a strategy, a backend, ...) in the full tier; in the fast tier
%% one, picked by Key (a test's name or line): spread over the tests, the fast tier still
%% covers every variant.
-spec pick(term(), [T, ...]) -> [T, ...].
pick(Key, Variants) ->
    case tier() of
        all -> Variants;
        fast -> [lists:nth(1 + erlang:phash2(Key, length(Variants)), Variants)]
    end.

%% @doc An EUnit test set that belongs to the full tier only: empty in the fast tier.
-spec slow(Tests) -> Tests | [] when Tests :: term().
slow(Tests) ->
    case tier() of
        fast -> [];
        all -> Tests
    end.

%% @doc Common Test groups (or cases) that belong to the full tier only: `all/0' of a
%% suite lists its fast cases and appends these.
-spec slow_groups([atom()]) -> [{group, atom()}].
slow_groups(Groups) ->
    case tier() of
        fast -> [];
        all -> [{group, G} || G <- Groups]
    end.

%% @doc The seed of this run's properties: RIARC_PROP_SEED ("A,B,C") or the fixed one.
-spec seed() -> {integer(), integer(), integer()}.
seed() ->
    case os:getenv("RIARC_PROP_SEED") of
        false -> ?DEFAULT_SEED;
        S ->
            case [list_to_integer(string:trim(X)) || X <- string:split(S, ",", all)] of
                [A, B, C] -> {A, B, C};
                _ -> erlang:error({bad_seed, S})
            end
    end.

%% @doc Runs Fun with this process's `rand' seeded from seed/0; prints the seed when Fun
%% fails, so that RIARC_PROP_SEED repeats the run.
-spec seeded(fun(() -> T)) -> T.
seeded(Fun) ->
    Seed = seed(),
    _ = rand:seed(exsss, Seed),
    try Fun()
    catch C:E:St ->
            io:format(user, "~nfailed from seed ~w (RIARC_PROP_SEED=~s to repeat)~n",
                      [Seed, seed_text(Seed)]),
            erlang:raise(C, E, St)
    end.

%% @doc quickcheck/3 with PropEr's output to the terminal.
-spec quickcheck(term(), {pos_integer(), pos_integer()}) -> boolean().
quickcheck(Prop, Counts) ->
    quickcheck(Prop, Counts, [{to_file, user}]).

%% @doc Checks Prop with Fast cases in the fast tier and All in the full one. The seed
%% is RIARC_PROP_SEED when set, else Opts' `{seed, S}', else the fixed one; the other
%% options go to PropEr. PropEr 1.2 takes no seed option, but it keeps the random state
%% of the calling process when there is one: seeding it first makes the run repeatable.
%% The seed is printed when the property fails.
-spec quickcheck(term(), {pos_integer(), pos_integer()}, list()) -> boolean().
quickcheck(Prop, {Fast, All}, Opts0) ->
    Seed = case {os:getenv("RIARC_PROP_SEED"), lists:keyfind(seed, 1, Opts0)} of
               {false, {seed, S}} -> S;
               _ -> seed()
           end,
    Opts = lists:keydelete(seed, 1, Opts0),
    proper:global_state_erase(),
    _ = rand:seed(exsplus, Seed),
    N = count(Fast, All),
    Ok = proper:quickcheck(Prop, [{numtests, N} | Opts]),
    Ok =:= true orelse
        io:format(user, "~nproperty failed: seed ~w, ~b cases (RIARC_PROP_SEED=~s to repeat)~n",
                  [Seed, N, seed_text(Seed)]),
    Ok =:= true.

seed_text({A, B, C}) -> lists:flatten(io_lib:format("~b,~b,~b", [A, B, C])).
