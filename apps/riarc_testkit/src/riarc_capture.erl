%% @doc Test support: runs a function with its standard output captured by a minimal I/O
%% server (the process's group leader, for the call), so that tests of the command line
%% can read what a command printed and the status it returned.
%% ```
%% 1> riarc_capture:capture(fun() -> io:format("hi~n"), 0 end).
%% {"hi\n",0}
%% '''
-module(riarc_capture).

-export([capture/1, capture_all/1]).

%% @doc Fun's standard output, as text, and its result.
-spec capture(fun(() -> R)) -> {string(), R}.
capture(Fun) ->
    Capture = spawn_link(fun() -> loop([]) end),
    Old = group_leader(),
    group_leader(Capture, self()),
    Result = try Fun() after group_leader(Old, self()) end,
    {text(Capture), Result}.

%% @doc Fun's standard output and standard error (the process registered as
%% standard_error, which io:format(standard_error, ...) writes to), and its result. The
%% standard_error name is the node's: only one test may capture it at a time.
-spec capture_all(fun(() -> R)) -> {string(), string(), R}.
capture_all(Fun) ->
    Err = spawn_link(fun() -> loop([]) end),
    OldErr = whereis(standard_error),
    true = unregister(standard_error),
    true = register(standard_error, Err),
    {Out, Result} = try capture(Fun)
                    after
                        unregister(standard_error),
                        register(standard_error, OldErr)
                    end,
    {Out, text(Err), Result}.

text(Pid) ->
    Pid ! {text, self()},
    receive {Pid, Text} -> Text end.

loop(Acc) ->
    receive
        {io_request, From, Reply, Req} ->
            From ! {io_reply, Reply, ok},
            loop([Acc | chars(Req)]);
        {text, From} ->
            From ! {self(), unicode:characters_to_list(Acc)}
    end.

chars({put_chars, _Enc, Chars}) -> Chars;
chars({put_chars, _Enc, M, F, A}) -> apply(M, F, A);
chars({put_chars, Chars}) -> Chars;
chars(_) -> [].
