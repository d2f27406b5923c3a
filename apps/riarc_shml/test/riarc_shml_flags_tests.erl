%% @doc Tracing only what the properties need (issue 4, item 5): a system with heavy
%% messaging (ping-pong pairs) run under riarc with `events' set to the compiled
%% module's trace_flags() and with the default `[send, recv]'. The verdicts must be the
%% same both ways; the events collected and the run times are printed (docs/properties.md
%% has a table of them).
%% ```
%% $ rebar3 eunit --module=riarc_shml_flags_tests
%% '''
-module(riarc_shml_flags_tests).

-include_lib("eunit/include/eunit.hrl").

-export([main/2, pinger/2, ponger/0, measure/3]).

%% The fast tier runs each set-up once on a smaller system: it checks the verdicts and
%% the counts; the full tier takes the medians of three on the whole one.
-define(PAIRS, riarc_test_tier:count(10, 50)).
-define(ROUNDS, riarc_test_tier:count(200, 1000)).
-define(REPS, riarc_test_tier:count(1, 3)).

%%% The system

%% @doc Root: Pairs pingers, each with its own ponger, Rounds round trips each.
-spec main(pos_integer(), pos_integer()) -> ok.
main(Pairs, Rounds) ->
    Self = self(),
    _ = [spawn(?MODULE, pinger, [Self, Rounds]) || _ <- lists:seq(1, Pairs)],
    _ = [receive done -> ok end || _ <- lists:seq(1, Pairs)],
    ok.

%% @doc A pinger.
-spec pinger(pid(), pos_integer()) -> done.
pinger(Root, Rounds) ->
    Ponger = spawn(?MODULE, ponger, []),
    _ = [begin Ponger ! {ping, self(), I}, receive {pong, I} -> ok end end
         || I <- lists:seq(1, Rounds)],
    Ponger ! stop,
    Root ! done.

%% @doc A ponger.
-spec ponger() -> ok.
ponger() ->
    receive
        {ping, From, I} -> From ! {pong, I}, ponger();
        stop -> ok
    end.

%%% The properties

%% Only exits and spawns: no message event is needed.
exits() ->
    "with riarc_shml_flags_tests:pinger(_, _) monitor\n"
    "  [P <- _, riarc_shml_flags_tests:pinger(_, _)]\n"
    "  max(X. and([P ** R when R =/= normal] ff, [P -> _, riarc_shml_flags_tests:ponger()] X)),\n"
    "with riarc_shml_flags_tests:ponger() monitor\n"
    "  [Q <- _, riarc_shml_flags_tests:ponger()] [Q ** R when R =/= normal] ff.".

%% Receives only: a pinger receives nothing but pongs.
receives() ->
    "with riarc_shml_flags_tests:pinger(_, _) monitor\n"
    "  [P <- _, riarc_shml_flags_tests:pinger(_, _)]\n"
    "  max(X. and([P ? M when element(1, M) =/= pong] ff, [P ? _] X,\n"
    "             [P -> _, riarc_shml_flags_tests:ponger()] X)),\n"
    "with riarc_shml_flags_tests:ponger() monitor\n"
    "  [Q <- _, riarc_shml_flags_tests:ponger()] [Q ** R when R =/= normal] ff.".

%% @doc Runs the system once under the property text with the given events option, and
%% every message of those kinds traced (no trace patterns: this measures the flags alone,
%% riarc_shml_patterns_tests the patterns); returns the verdicts (sorted), the events
%% collected and the run time in ms.
-spec measure(string(), [send | recv], {pos_integer(), pos_integer()}) ->
    {[atom()], non_neg_integer(), non_neg_integer()}.
measure(Src, Events, {Pairs, Rounds}) ->
    {ok, Mod} = riarc_shml:load_string(Src, riarc_shml_flags_props, "flags.prop"),
    T0 = erlang:monotonic_time(millisecond),
    {ok, R} = riarc:run({?MODULE, main, [Pairs, Rounds]}, Mod,
                        #{timeout => 120000, log => false, invariants => false,
                          events => Events, trace_patterns => #{}}),
    T = erlang:monotonic_time(millisecond) - T0,
    {lists:sort([V || #{verdict := V} <- maps:get(verdicts, R)]), maps:get(events, R), T}.

compare(Name, Src) ->
    {ok, Mod} = riarc_shml:load_string(Src, riarc_shml_flags_props, "flags.prop"),
    Needed = Mod:trace_flags(),
    Runs = [{Ev, median([measure(Src, Ev, {?PAIRS, ?ROUNDS}) || _ <- lists:seq(1, ?REPS)])}
            || Ev <- [[send, recv], Needed]],
    [{_, {VAll, EAll, TAll}}, {_, {VNeed, ENeed, TNeed}}] = Runs,
    Bare = lists:nth((?REPS + 1) div 2, lists:sort([element(1, timer:tc(?MODULE, main, [?PAIRS, ?ROUNDS]))
                                                    || _ <- lists:seq(1, ?REPS)])) div 1000,
    io:format(user, "~n~ts (~b pairs x ~b round trips; ~b ms unmonitored): "
              "events [send, recv]: ~b events, ~b ms; events ~0p: ~b events, ~b ms~n",
              [Name, ?PAIRS, ?ROUNDS, Bare, EAll, TAll, Needed, ENeed, TNeed]),
    ?assertEqual(VAll, VNeed),
    ?assert(ENeed < EAll).

%% The run of median time (of one or three).
median(Rs) ->
    {Vs, _, _} = hd(Rs),
    {E, T} = lists:nth((length(Rs) + 1) div 2, lists:sort(fun({_, T1}, {_, T2}) -> T1 =< T2 end,
                                                          [{E, T} || {_, E, T} <- Rs])),
    {Vs, E, T}.

%% Each test has its own timeout: a group's does not lift EUnit's 5 s per test, and on a
%% loaded machine a comparison (12 monitored runs) takes longer.
flags_test_() ->
    [{"exit-only property", {timeout, 600, fun() -> compare("exit-only property", exits()) end}},
     {"receive-only property",
      {timeout, 600, fun() -> compare("receive-only property", receives()) end}}].
