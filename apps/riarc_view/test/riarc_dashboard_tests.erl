%% The dashboard's event stream as a client reads it, over gen_tcp: every event is one
%% JSON object, a verdict reached after the browser connected arrives, the listener is
%% on the loopback interface unless told otherwise, and a browser that stops reading
%% holds up neither the session nor the dashboard (its events are dropped and counted).
-module(riarc_dashboard_tests).

-include_lib("eunit/include/eunit.hrl").

-export([system/2, worker/0]).

%%% A system the test steers: N workers that each wait for `ok' (exit normal) or
%%% `crash'; the root waits for them all.

system(Test, N) ->
    Ws = [spawn_link(?MODULE, worker, []) || _ <- lists:seq(1, N)],
    process_flag(trap_exit, true),
    Test ! {workers, self(), Ws},
    [receive {'EXIT', W, _} -> ok end || W <- Ws],
    ok.

worker() ->
    receive
        ok -> ok;
        crash -> exit(crashed)
    end.

spec() ->
    fun({?MODULE, worker, _}) ->
            {ok, fun M({exit, _, normal}) -> accept;
                     M({exit, _, _}) -> reject;
                     M(_) -> M
                 end};
       (_) -> undefined
    end.

%% A session of N workers, its dashboard on any port, and the workers.
start(N, DOpts) ->
    {ok, S} = riarc:start({?MODULE, system, [self(), N]}, spec(), #{log => false}),
    Ws = receive {workers, _, W} -> W after 10000 -> error(no_workers) end,
    {ok, D} = riarc_dashboard:start(S, DOpts#{port => 0}),
    {S, D, Ws}.

port(D) ->
    {match, [P]} = re:run(riarc_dashboard:url(D), ":([0-9]+)/$", [{capture, all_but_first, list}]),
    list_to_integer(P).

%% Opens /events and reads the response's head.
connect(D, SockOpts) ->
    {ok, Sock} = gen_tcp:connect({127, 0, 0, 1}, port(D), [binary, {active, false}, {packet, line}, {buffer, 1 bsl 20} | SockOpts], 5000),
    ok = gen_tcp:send(Sock, "GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n"),
    {ok, <<"HTTP/1.1 200", _/binary>>} = gen_tcp:recv(Sock, 0, 5000),
    Head = head(Sock, []),
    ?assert(lists:member(<<"content-type: text/event-stream">>, Head)),
    Sock.

head(Sock, Acc) ->
    case gen_tcp:recv(Sock, 0, 5000) of
        {ok, <<"\r\n">>} -> Acc;
        {ok, Line} -> head(Sock, [string:lowercase(string:trim(Line)) | Acc])
    end.

%% The next event: a `data:' line, decoded (a line that is not JSON fails the test).
next_event(Sock) ->
    case gen_tcp:recv(Sock, 0, 10000) of
        {ok, <<"data: ", Json/binary>>} ->
            {ok, Ev} = riarc_json:decode(string:trim(Json)),
            Ev;
        {ok, <<"\n">>} -> next_event(Sock);
        {error, closed} -> closed
    end.

%% Events until one satisfies Pred; every one seen is a JSON object with a type.
until(Sock, Pred) ->
    case next_event(Sock) of
        closed -> error(stream_closed);
        Ev = #{<<"type">> := T} when is_binary(T) ->
            case Pred(Ev) of
                true -> Ev;
                false -> until(Sock, Pred)
            end
    end.

pid_text(P) -> list_to_binary(pid_to_list(P)).

stream_test_() ->
    {timeout, 60, fun stream/0}.

stream() ->
    {S, D, [W1, W2, W3]} = start(3, #{}),
    Sock = connect(D, []),
    Hello = until(Sock, fun(_) -> true end),
    ?assertMatch(#{<<"type">> := <<"hello">>, <<"latest">> := []}, Hello),
    W1 ! crash,
    V = until(Sock, fun(E) -> maps:get(<<"type">>, E) =:= <<"verdict">> end),
    ?assertMatch(#{<<"entry">> := #{<<"verdict">> := <<"reject">>, <<"mfa">> := <<"riarc_dashboard_tests:worker/0">>}},
                 V),
    ?assertEqual(pid_text(W1), maps:get(<<"pid">>, maps:get(<<"entry">>, V))),
    ?assertEqual(#{<<"reject">> => 1}, maps:get(<<"counts">>, V)),
    %% The session's figures come every second, with this browser's drops (none).
    St = until(Sock, fun(E) -> maps:get(<<"type">>, E) =:= <<"stats">> end),
    ?assertMatch(#{<<"dropped">> := 0, <<"stats">> := #{<<"tracers">> := N, <<"memory">> := M}}
                   when is_integer(N) andalso N >= 1 andalso is_integer(M) andalso M > 0, St),
    W2 ! ok,
    W3 ! ok,
    {ok, #{verdicts := Vs}} = riarc_session:finish(S, 10000),
    ?assertEqual(3, length([V1 || V1 = #{mfa := {?MODULE, worker, _}} <- Vs])),
    %% The last event is the summary, with every verdict; then the stream ends.
    Sum = until(Sock, fun(E) -> maps:get(<<"type">>, E) =:= <<"summary">> end),
    ?assertEqual(#{<<"reject">> => 1, <<"accept">> => 2}, maps:get(<<"counts">>, Sum)),
    ?assertEqual(closed, next_event(Sock)),
    ?assertEqual(ok, riarc_dashboard:wait(D, 10000)).

%% The page is served, self-contained, with what is known so far.
page_test_() ->
    {timeout, 60, fun page/0}.

page() ->
    {S, D, [W1]} = start(1, #{}),
    {ok, Sub} = subscribe_and_crash(S, W1),
    {ok, Sock} = gen_tcp:connect({127, 0, 0, 1}, port(D), [binary, {active, false}], 5000),
    ok = gen_tcp:send(Sock, "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"),
    Page = recv_all(Sock, <<>>),
    ?assertMatch(<<"HTTP/1.1 200", _/binary>>, Page),
    %% (In the page's JSON, `<' and `>' are escaped.)
    ?assertNotEqual(nomatch, binary:match(Page, string:trim(pid_text(W1), both, "<>"))),
    ?assertNotEqual(nomatch, binary:match(Page, <<"\"reject\"">>)),
    ?assertEqual(nomatch, binary:match(Page, [<<"src=\"http">>, <<"href=\"http">>])),
    demonitor(Sub),
    {ok, _} = riarc_session:finish(S, 10000),
    ?assertEqual(ok, riarc_dashboard:wait(D, 10000)).

%% Crashes W and waits, as a subscriber of the session, for its verdict.
subscribe_and_crash(S, W) ->
    Tag = make_ref(),
    _ = riarc_session:subscribe(S, self(), Tag),
    W ! crash,
    receive {riarc_session_verdict, Tag, #{pid := W}} -> ok after 10000 -> error(no_verdict) end,
    {ok, monitor(process, S)}.

%% Listening on the loopback interface, requests that name another host are refused
%% (a page elsewhere that rebinds its name to 127.0.0.1).
rebinding_test_() ->
    {timeout, 60, fun rebinding/0}.

rebinding() ->
    {S, D, [W]} = start(1, #{}),
    Get = fun(Host) ->
                  {ok, Sock} = gen_tcp:connect({127, 0, 0, 1}, port(D), [binary, {active, false}], 5000),
                  ok = gen_tcp:send(Sock, ["GET / HTTP/1.1\r\nHost: ", Host, "\r\nConnection: close\r\n\r\n"]),
                  Reply = recv_all(Sock, <<>>),
                  {match, [Code]} = re:run(Reply, "^HTTP/1.1 ([0-9]+)", [{capture, all_but_first, list}]),
                  list_to_integer(Code)
          end,
    ?assertEqual(403, Get("evil.example:" ++ integer_to_list(port(D)))),
    ?assertEqual(200, Get("localhost:" ++ integer_to_list(port(D)))),
    ?assertEqual(200, Get("127.0.0.1:" ++ integer_to_list(port(D)))),
    W ! ok,
    {ok, _} = riarc_session:finish(S, 10000),
    ?assertEqual(ok, riarc_dashboard:wait(D, 10000)).

recv_all(Sock, Acc) ->
    case gen_tcp:recv(Sock, 0, 5000) of
        {ok, B} -> recv_all(Sock, <<Acc/binary, B/binary>>);
        {error, closed} -> Acc
    end.

%% Listening on 127.0.0.1 by default: the options say so, and the port cannot be reached
%% through another address of this machine.
loopback_test_() ->
    {timeout, 60, fun loopback/0}.

loopback() ->
    ?assertMatch({ok, #{bind := {127, 0, 0, 1}}}, riarc_dashboard:options(#{})),
    {S, D, [W]} = start(1, #{}),
    ?assertMatch("http://127.0.0.1:" ++ _, riarc_dashboard:url(D)),
    {ok, Ifs} = inet:getifaddrs(),
    Others = [A || {_, Props} <- Ifs, {addr, A = {_, _, _, _}} <- Props, element(1, A) =/= 127],
    _ = [?assertMatch({error, _}, gen_tcp:connect(A, port(D), [], 2000)) || A <- Others],
    W ! ok,
    {ok, _} = riarc_session:finish(S, 10000),
    ?assertEqual(ok, riarc_dashboard:wait(D, 10000)).

%% A browser that stops reading: its socket's buffers fill, its queue (4 events here)
%% fills, and the rest of its events are dropped and counted; the session ends on time
%% with every verdict, and a browser that reads still gets the summary. 3 000 verdicts:
%% the full tier.
slow_browser_test_() ->
    riarc_test_tier:slow([{timeout, 120, fun slow_browser/0}]).

slow_browser() ->
    N = 3000,
    {S, D, Ws} = start(N, #{client_queue => 4}),
    Stuck = connect(D, [{recbuf, 1024}]),
    Reader = connect(D, []),
    %% In batches, each waited for (as a subscriber of the session): the dashboard has
    %% time to hand each batch to the stuck browser's connection, whose buffers fill.
    Tag = make_ref(),
    _ = riarc_session:subscribe(S, self(), Tag),
    _ = [begin
             _ = [W ! crash || W <- Batch],
             [receive {riarc_session_verdict, Tag, #{pid := W}} -> ok after 10000 -> error(no_verdict) end
              || W <- Batch]
         end || Batch <- batches(Ws, 25)],
    {ok, #{verdicts := Vs}} = riarc_session:finish(S, 60000),
    ?assertEqual(N, length([V || V = #{mfa := {?MODULE, worker, _}} <- Vs])),
    Sum = until(Reader, fun(E) -> maps:get(<<"type">>, E) =:= <<"summary">> end),
    ?assertEqual(#{<<"reject">> => N}, maps:get(<<"counts">>, Sum)),
    %% Drops were counted, and not only the reader's.
    ?assert(maps:get(<<"dropped_all">>, Sum) > maps:get(<<"dropped">>, Sum)),
    %% The dashboard ends although the stuck browser never read its events.
    ?assertEqual(ok, riarc_dashboard:wait(D, 30000)),
    Got = drain(Stuck, []),
    ?assertNot(lists:member(<<"summary">>, Got)),
    _ = gen_tcp:close(Stuck),
    _ = gen_tcp:close(Reader).

batches([], _) -> [];
batches(L, N) when length(L) =< N -> [L];
batches(L, N) -> {B, Rest} = lists:split(N, L), [B | batches(Rest, N)].

drain(Sock, Acc) ->
    case next_event(Sock) of
        closed -> lists:reverse(Acc);
        Ev -> drain(Sock, [maps:get(<<"type">>, Ev) | Acc])
    end.

%% A session on another node, through riarc_remote's proxy (riarc attach --node): its
%% verdicts and its figures reach the page all the same. A peer node: the full tier.
remote_test_() ->
    riarc_test_tier:slow([{timeout, 120, fun remote/0}]).

remote() ->
    %% The VM is made distributed for the peer, and left as it was found: the doc
    %% sessions that run later in the same VM show a node that is not distributed.
    WasAlive = is_alive(),
    {Peer, Node} = riarc_test_peer:start(riarc_dashboard, []),
    try
        {ok, S} = riarc:attach(new_processes, spec(), #{node => Node, log => false}),
        {ok, D} = riarc_dashboard:start(S, #{port => 0}),
        Sock = connect(D, []),
        ?assertMatch(#{<<"type">> := <<"hello">>}, until(Sock, fun(_) -> true end)),
        W = erpc:call(Node, erlang, spawn, [?MODULE, worker, []]),
        W ! crash,
        V = until(Sock, fun(#{<<"type">> := T, <<"entry">> := #{<<"mfa">> := M}}) ->
                                T =:= <<"verdict">> andalso M =:= <<"riarc_dashboard_tests:worker/0">>;
                           (_) -> false
                        end),
        ?assertMatch(#{<<"entry">> := #{<<"verdict">> := <<"reject">>}}, V),
        ?assertEqual(pid_text(W), maps:get(<<"pid">>, maps:get(<<"entry">>, V))),
        St = until(Sock, fun(E) -> maps:get(<<"type">>, E) =:= <<"stats">> end),
        ?assertMatch(#{<<"stats">> := #{<<"tracers">> := N}} when is_integer(N), St),
        {ok, _} = riarc:stop(S),
        ?assertMatch(#{<<"type">> := <<"summary">>},
                     until(Sock, fun(E) -> maps:get(<<"type">>, E) =:= <<"summary">> end)),
        ?assertEqual(ok, riarc_dashboard:wait(D, 10000))
    after
        peer:stop(Peer),
        _ = WasAlive orelse net_kernel:stop()
    end.

%% Bad options are refused before anything listens.
options_test() ->
    ?assertEqual({error, {riarc_dashboard, {bad_option, port, 70000}}}, riarc_dashboard:options(#{port => 70000})),
    ?assertEqual({error, {riarc_dashboard, {bad_option, bind, "nowhere"}}}, riarc_dashboard:options(#{bind => "nowhere"})),
    ?assertMatch({ok, #{bind := {0, 0, 0, 0}}}, riarc_dashboard:options(#{bind => "0.0.0.0"})),
    ?assertMatch("bad dashboard option port" ++ _, riarc_dashboard:format_error({bad_option, port, 70000})).
