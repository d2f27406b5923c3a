%% A gen_server for riarc_inline_tests without handle_info/2 (nor terminate/2): it is sent
%% a plain message, and its timeout fires, both of which gen_server only logs. Its client
%% learns that they were handled from the log (riarc_inline_tests' logger handler).
-module(riarc_inline_bare).
-behaviour(gen_server).

-export([client/0, init/1, handle_call/3, handle_cast/2]).

%% The client: starts the server, sends it `hello', has it ask for a timeout of 0 once
%% `go' has come (so that nothing else is in its mailbox), waits for both warnings and
%% stops it.
client() ->
    true = register(riarc_inline_bare_client, self()),
    {ok, S} = gen_server:start(?MODULE, x, []),
    S ! hello,
    ok = gen_server:cast(S, hold),
    S ! go,
    receive {no_handle_info, hello} -> ok end,
    receive {no_handle_info, timeout} -> ok end,
    Ref = monitor(process, S),
    ok = gen_server:cast(S, stop),
    receive {'DOWN', Ref, process, S, _} -> ok end.

init(x) -> {ok, #{}}.

handle_call(_, _From, S) -> {reply, ok, S}.

handle_cast(hold, S) ->
    receive go -> ok end,
    {noreply, S, 0};
handle_cast(stop, S) -> {stop, normal, S}.
