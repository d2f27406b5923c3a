%% @doc The three-process system of fig. 2a of the RIARC paper: P spawns Q and sends it a
%% request; Q receives it, spawns R and exits; R exits; P exits. Each process's local
%% trace is fixed, whatever the interleaving:
%% ```
%% P: init, spawn(Q), send(Q, req), exit
%% Q: init, recv(req), spawn(R), exit
%% R: init, exit
%% '''
%% ```
%% 1> riarc:run({riarc_demo_pqr, p, []}, fun(_) -> {ok, fun M(_) -> M end} end, #{}).
%% {ok, #{tracers => #{spawned => 3, peak => 3}, ...}}
%% '''
-module(riarc_demo_pqr).

-export([p/0, q/0, r/0, local_traces/1]).

%% @doc Process P.
-spec p() -> ok.
p() ->
    Q = spawn(?MODULE, q, []),
    Q ! req,
    ok.

%% @doc Process Q.
-spec q() -> ok.
q() ->
    receive req -> _ = spawn(?MODULE, r, []), ok end.

%% @doc Process R.
-spec r() -> ok.
r() -> ok.

%% @doc The expected local traces as kinds, by process role.
-spec local_traces(p | q | r) -> [atom()].
local_traces(p) -> [init, spawn, send, exit];
local_traces(q) -> [init, recv, spawn, exit];
local_traces(r) -> [init, exit].
