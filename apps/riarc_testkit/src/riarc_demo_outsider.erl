%% @doc A process outside the monitored system that changes how the VM traces it, on
%% request: the systems of riarc_demo_untracer ask it. Started before a run, it is traced
%% by no mode; a module of its own, so that weaving riarc_demo_untracer for a recording
%% or for inline monitoring (loading its code anew) does not end it.
%% ```
%% 1> H = riarc_demo_outsider:start().
%% 2> H ! {untrace, self()}, receive {done, untrace, H} -> ok end.
%% ok
%% '''
-module(riarc_demo_outsider).

-export([start/0, loop/0]).

%% @doc Starts the outsider, linked to nothing.
-spec start() -> pid().
start() ->
    spawn(?MODULE, loop, []).

%% @private Turns off all the flags of each process that asks `untrace', its send and
%% receive flags for one that asks `untrace_comm', or the node's receive pattern for one
%% that asks `unpattern', and tells it so; for ever.
-spec loop() -> no_return().
loop() ->
    receive
        {What, P} when is_pid(P) ->
            _ = case What of
                    untrace -> erlang:trace(P, false, [all]);
                    untrace_comm -> erlang:trace(P, false, [send, 'receive']);
                    unpattern -> apply(erlang, trace_pattern, ['receive', false, []])
                end,
            P ! {done, What, self()},
            loop()
    end.
