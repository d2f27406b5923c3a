%% @doc A worker of the synthetic master-worker system (004 §3.1, 000 App. C.3).
%%
%% The master creates each worker with a real `spawn(riarc_bench_worker, init, [Master,
%% Id, NumReqs])', so that a monitoring specification can recognise workers by their
%% initial call. A worker echoes every work request at once (004 §3.2: no emulated delay;
%% reactiveness comes from the master's Pr(send)/Pr(recv)) and stops when told to.
%%
%% Every message is `{FromPid, {Tag, {Id, ReqNum, NumReqs}}, Stamp}':
%%   chunk (master to worker)  work request ReqNum of NumReqs,
%%   ack   (worker to master)  its response, echoing the master's Stamp,
%%   term  (master to worker)  all NumReqs responses were dequeued: terminate,
%%   end   (worker to master)  last message of the worker, just before it exits.
%% Stamp is `none' or the master's timestamp for response-time sampling (004 §3.3).
%%
%% ```
%% 1> W = spawn(riarc_bench_worker, init, [self(), 7, 1]).
%% 2> W ! {self(), {chunk, {7, 1, 1}}, none}, W ! {self(), {term, {7, 1, 1}}, none}.
%% 3> flush().
%% Shell got {<0.90.0>,{ack,{7,1,1}},none}
%% Shell got {<0.90.0>,{'end',{7,1,1}},none}
%% '''
-module(riarc_bench_worker).

-export([init/3]).

-export_type([triple/0, msg/0]).

-type triple() :: {Id :: pos_integer(), ReqNum :: non_neg_integer(), NumReqs :: pos_integer()}.
-type msg() :: {pid(), {chunk | ack | term | 'end', triple()}, none | integer()}.

-spec init(pid(), pos_integer(), pos_integer()) -> ok.
init(Master, _Id, _NumReqs) ->
    loop(Master).

%% Only the master's messages are taken: anything else stays in the mailbox, as a
%% worker in a real system would ignore foreign traffic.
loop(Master) ->
    receive
        {Master, {chunk, Triple}, Stamp} ->
            Master ! {self(), {ack, Triple}, Stamp},
            loop(Master);
        {Master, {term, Triple}, _} ->
            Master ! {self(), {'end', Triple}, none},
            ok
    end.
