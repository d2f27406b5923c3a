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

%% Far above a look's second: a look missing for this long is a failure of the test.
-define(LOOK_WAIT_MS, 30000).

%% @doc Starts the outsider, linked to nothing.
-spec start() -> pid().
start() ->
    spawn(?MODULE, loop, []).

%% @private Turns off all the flags of each process that asks `untrace', its send and
%% receive flags for one that asks `untrace_comm', or the node's receive pattern for one
%% that asks `unpattern' (`repattern' puts back what that found), and tells it so; for
%% ever. With `{after_looks, Ended, What}',
%% it does What once every trace message of the ended process Ended is delivered and
%% riarc's looks at the node's tracing have come twice since (a look is a second apart).
-spec loop() -> no_return().
loop() ->
    receive
        {What, P} when is_pid(P) ->
            ok = do(What, P),
            P ! {done, What, self()},
            loop()
    end.

%% Race: a look answered right after the wait began may have been asked before Ended's
%% last events reached riarc; the second is asked a second later, by then. Where the
%% monitor runs apart from the tracer that looks, its verdict must also have come within
%% that second.
do({after_looks, Ended, What}, P) ->
    Ref = erlang:trace_delivered(Ended),
    receive {trace_delivered, Ended, Ref} -> ok end,
    ok = looked(riarc_trace_pattern:next_look(?LOOK_WAIT_MS)),
    ok = looked(riarc_trace_pattern:next_look(?LOOK_WAIT_MS)),
    do(What, P);
do(untrace, P) ->
    _ = erlang:trace(P, false, [all]),
    ok;
do(untrace_comm, P) ->
    _ = erlang:trace(P, false, [send, 'receive']),
    ok;
do(unpattern, _P) ->
    #{'receive' := Receive} = riarc_trace_pattern:installed(),
    _ = put(receive_pattern, Receive),
    _ = apply(erlang, trace_pattern, ['receive', false, []]),
    ok;
do(repattern, _P) ->
    _ = apply(erlang, trace_pattern, ['receive', get(receive_pattern), []]),
    ok.

%% Nothing of riarc's looks on a node where it holds no patterns (inline monitoring).
looked(ok) -> ok;
looked(no_keeper) -> ok.
