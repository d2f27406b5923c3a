%% @doc A program woven at compile time by the parse transform: two processes play
%% ping-pong while a third keeps interrupting the ponger; the ponger returns what it saw.
%% ```
%% 1> riarc_replay_pt_prog:pingpong(3).
%% [ping,ping,noise,ping]
%% '''
-module(riarc_replay_pt_prog).
-compile({parse_transform, riarc_replay_transform}).

-export([pingpong/1]).

%% @doc N ping-pongs, with noise racing the pings.
-spec pingpong(pos_integer()) -> [ping | noise].
pingpong(N) ->
    Self = self(),
    Ponger = spawn(fun() -> ponger(Self, []) end),
    _ = spawn(fun() -> [Ponger ! noise || _ <- lists:seq(1, N)] end),
    ping(Ponger, N),
    Ponger ! {stop, Self},
    receive {seen, Seen} -> Seen end.

ping(_Ponger, 0) -> ok;
ping(Ponger, K) ->
    Ponger ! {ping, self()},
    receive pong -> ping(Ponger, K - 1) end.

ponger(Root, Seen) ->
    receive
        {ping, From} -> From ! pong, ponger(Root, [ping | Seen]);
        noise -> ponger(Root, [noise | Seen]);
        {stop, Root} -> Root ! {seen, lists:reverse(Seen)}
    end.
