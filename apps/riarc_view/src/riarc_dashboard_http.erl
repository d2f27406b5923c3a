%% @doc The dashboard's requests, as an OTP httpd module (the only one in the dashboard's
%% httpd): `GET /' is the page ({@link riarc_dashboard_page}), `GET /events' the stream
%% of server-sent events, anything else 404. The stream is written by the request's own
%% process, straight to its socket (httpd hands a module the socket; the response is then
%% `already_sent'), one `data:' line per event, with a send timeout so that a browser
%% that stops reading is dropped rather than waited for.
%%
%% Listening on the loopback interface, it answers only requests addressed to it by a
%% loopback name (`Host: 127.0.0.1:8787', `localhost', `[::1]'): a web page elsewhere
%% that points a name of its own at 127.0.0.1 (DNS rebinding) gets 403, not the run.
%% ```
%% 1> riarc_dashboard_http:frame(<<"{\"type\":\"stats\"}">>).
%% [<<"data: ">>,<<"{\"type\":\"stats\"}">>,<<"\n\n">>]
%% 2> riarc_dashboard_http:path("/events?x=1").
%% "/events"
%% 3> [riarc_dashboard_http:loopback_host(H) || H <- ["localhost:8787", "127.0.0.1", "[::1]:80", "evil.example:8787"]].
%% [true,true,true,false]
%% '''
-module(riarc_dashboard_http).

-include_lib("inets/include/httpd.hrl").

-export([do/1, store/2, frame/1, path/1, loopback_host/1]).

%% A browser whose socket takes nothing for this long is gone.
-define(SEND_MS, 5000).
%% The kernel's buffer for a stream (autotuned, it grows to megabytes): what a browser
%% that stops reading can hold of this node's memory, beside its queue.
-define(SNDBUF, 32768).

%% @private httpd's configuration check: the dashboard's own entry (its process) and
%% everything else pass.
-spec store(tuple(), list()) -> {ok, tuple()}.
store(Entry, _Config) ->
    {ok, Entry}.

%% @private httpd's request callback.
-spec do(#mod{}) -> {proceed, list()}.
do(M = #mod{method = "GET", config_db = Db, parsed_header = Head}) ->
    Host = proplists:get_value("host", Head, ""),
    case is_loopback(httpd_util:lookup(Db, bind_address)) andalso not loopback_host(Host) of
        true -> forbidden(M);
        false -> route(M, Db)
    end;
do(M) ->
    not_found(M).

route(M = #mod{request_uri = Uri}, Db) ->
    case path(Uri) of
        "/" -> page(httpd_util:lookup(Db, riarc_dashboard));
        "/events" -> events(M, httpd_util:lookup(Db, riarc_dashboard));
        _ -> not_found(M)
    end.

is_loopback({127, _, _, _}) -> true;
is_loopback({0, 0, 0, 0, 0, 0, 0, 1}) -> true;
is_loopback(_) -> false.

%% @doc Whether a Host header names this machine's loopback interface.
-spec loopback_host(string()) -> boolean().
loopback_host("[" ++ Rest) ->
    lists:prefix("::1]", Rest);
loopback_host(Host) ->
    Name = string:lowercase(hd(string:split(Host, ":"))),
    case inet:parse_ipv4strict_address(Name) of
        {ok, IP} -> is_loopback(IP);
        {error, _} -> Name =:= "localhost"
    end.

forbidden(#mod{request_uri = Uri, data = Data}) ->
    {proceed, [{status, {403, Uri, "not a loopback host"}} | Data]}.

%% @doc An event's JSON as server-sent events frame it (riarc_json escapes newlines).
-spec frame(binary()) -> iolist().
frame(Json) ->
    [<<"data: ">>, Json, <<"\n\n">>].

%% @doc A request's path, without its query.
-spec path(string()) -> string().
path(Uri) ->
    hd(string:split(Uri, "?")).

page(Dashboard) ->
    Snapshot = try riarc_json:encode(riarc_dashboard:snapshot(Dashboard))
               catch exit:_ -> <<"null">>   % it has just ended
               end,
    Body = riarc_dashboard_page:html(Snapshot),
    {proceed, [{response, {response, [{code, 200}, {content_type, "text/html; charset=utf-8"},
                                      {content_length, integer_to_list(byte_size(Body))},
                                      {cache_control, "no-store"}], Body}}]}.

not_found(#mod{request_uri = Uri, data = Data}) ->
    {proceed, [{status, {404, Uri, "not found"}} | Data]}.

events(M = #mod{socket = Sock, data = Data}, Dashboard) when is_pid(Dashboard) ->
    case riarc_dashboard:join(Dashboard) of
        {ok, Hello} ->
            %% A browser that stops reading fills the socket's buffers; the send then
            %% fails after ?SEND_MS and the stream ends, instead of waiting for ever.
            _ = inet:setopts(Sock, [{send_timeout, ?SEND_MS}, {send_timeout_close, true},
                                    {sndbuf, ?SNDBUF}]),
            Head = <<"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     "Cache-Control: no-store\r\nConnection: close\r\n\r\n">>,
            Mon = monitor(process, Dashboard),
            Sent = stream(Sock, Dashboard, Mon, gen_tcp:send(Sock, [Head | frame(Hello)]),
                          byte_size(Hello)),
            demonitor(Mon, [flush]),
            _ = gen_tcp:close(Sock),
            {proceed, [{response, {already_sent, 200, Sent}} | Data]};
        {error, busy} ->
            {proceed, [{status, {503, M#mod.request_uri, "too many browsers"}} | Data]};
        {error, ended} ->
            not_found(M)
    end;
events(M, _) ->
    not_found(M).

%% Each event as it comes, acknowledged once written (the dashboard counts what each
%% browser has not written yet).
stream(Sock, Dashboard, Mon, ok, Bytes) ->
    receive
        {riarc_dashboard_event, Dashboard, Json} ->
            Res = gen_tcp:send(Sock, frame(Json)),
            Dashboard ! {riarc_dashboard_sent, self()},
            stream(Sock, Dashboard, Mon, Res, Bytes + byte_size(Json));
        {riarc_dashboard_end, Dashboard} ->
            Bytes;
        {'DOWN', Mon, process, _, _} ->
            Bytes
    end;
stream(_Sock, Dashboard, _Mon, {error, _}, Bytes) ->
    ok = riarc_dashboard:leave(Dashboard),
    Bytes.
