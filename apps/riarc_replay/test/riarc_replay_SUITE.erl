% Record & replay of systems that need OTP's own modules woven (a peer node per run,
% about 1.5 s each): a gen_statem whose state and event timeouts race with its clients'
% casts replays its recorded log exactly, with each strategy, while plain runs differ.
-module(riarc_replay_SUITE).

-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, suite/0]).
-export([statem_plain_runs_differ/1, statem_receiver/1, statem_sender/1]).

-define(S, riarc_replay_statem).
-define(ARGS, [2, 15]).

-spec all() -> [atom() | {group, atom()}].
all() -> [] ++ riarc_test_tier:slow_groups([slow]).

%% The full tier's cases (make test-all): riarc_test_tier.
-spec groups() -> [{atom(), list(), [atom()]}].
groups() -> [{slow, [], [statem_plain_runs_differ, statem_receiver, statem_sender]}].

-spec suite() -> list().
suite() -> [{timetrap, {minutes, 5}}].

file(Name) ->
    Dir = filename:join(["/tmp", "riarc_replay_SUITE_" ++ os:getpid()]),
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    filename:join(Dir, Name).

%% The race is real: timeouts and casts interleave differently from run to run.
statem_plain_runs_differ(_Config) ->
    Logs = [apply(?S, main, ?ARGS) || _ <- lists:seq(1, 10)],
    ?assert(lists:any(fun(L) -> lists:member({on, state_timeout, off}, L) end, Logs)),
    ?assert(lists:any(fun(L) -> lists:member({off, timeout, idle}, L) end, Logs)),
    ?assert(length(lists:usort(Logs)) > 1).

statem_receiver(_Config) -> statem(receiver).
%% The sender side: gen_statem's timer messages are plain, and a cancel that came in time
%% in the recording may find the timer fired in the replay (its message is removed).
statem_sender(_Config) -> statem(sender).

%% gen_statem woven (otp => true): its timers are woven erlang:start_timer and
%% cancel_timer calls, its loop a woven receive.
statem(Strategy) ->
    File = file("statem_" ++ atom_to_list(Strategy) ++ ".rr"),
    Opts = #{modules => [?S], otp => true, timeout => 60000},
    {ok, #{result := Log}} = riarc_replay:record({?S, main, ?ARGS}, File, Opts#{strategy => Strategy}),
    ct:log("recorded log (~b events): ~p", [length(Log), Log]),
    ?assertEqual(30, length([x || {_, cast, _} <- Log])),
    [begin
         {ok, #{result := R}} = riarc_replay:replay(File, Opts),
         ?assertEqual({K, Log}, {K, R})
     end || K <- lists:seq(1, 3)].
