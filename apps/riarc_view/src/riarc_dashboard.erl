%% @doc A live view of a monitoring session in a browser. A dashboard subscribes to the
%% session's verdicts (riarc_session:subscribe/3), asks it for its figures once a second
%% (riarc_session:stats/1: tracers alive, events, memory, overload) and serves, with
%% OTP's httpd ({@link riarc_dashboard_http}), a self-contained page at `/' fed by
%% server-sent events at `/events': one JSON object per event (riarc_json), of type
%% `hello' (the state so far, to a browser that connects), `verdict', `stats' (every
%% second) and `summary' (the last one, when the session ends).
%%
%% A slow or gone browser never holds the session back: the session only sends this
%% process messages, and this process sends each browser at most `client_queue' events
%% it has not written yet; beyond that it drops them and counts the drops (each browser's
%% count is in its stats events). It listens on 127.0.0.1 unless told otherwise
%% (`bind'), monitors the session, and when the session ends it sends the summary,
%% lets the browsers take it (at most 3 s) and stops.
%% ```
%% 1> Spec = fun(_) -> {ok, fun M({exit, _, normal}) -> accept; M(_) -> M end} end.
%% 2> {ok, S} = riarc:start({riarc_demo_pqr, p, []}, Spec, #{}).
%% 3> {ok, D} = riarc_dashboard:start(S, #{port => 0}).
%% 4> lists:prefix("http://127.0.0.1:", riarc_dashboard:url(D)).
%% true
%% 5> {ok, _} = riarc_session:finish(S, 10000).
%% 6> riarc_dashboard:wait(D, 10000).
%% ok
%% 7> riarc_dashboard:format_error({listen, {{127, 0, 0, 1}, 8787}, eaddrinuse}).
%% "cannot listen for the dashboard on 127.0.0.1:8787: eaddrinuse"
%% '''
-module(riarc_dashboard).
-behaviour(gen_server).

-export([start/2, start_link/2, url/1, stop/1, wait/2, join/1, leave/1, snapshot/1,
         entry_json/1, options/1, format_error/1]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2, terminate/2]).
-export_type([opts/0, error_reason/0]).

-type opts() :: #{port => 0..65535, bind => inet:ip_address() | string(),
                  client_queue => pos_integer(), max_clients => pos_integer(),
                  latest => pos_integer(), interval => pos_integer()}.
-type error_reason() :: {bad_option, atom(), term()}
                      | {listen, {inet:ip_address(), 0..65535}, term()}
                      | {session_down, term()} | {not_started, term()}.

%% Port 8787 on the loopback interface only: a dashboard shows pids, calls and terms of
%% the monitored system, which is nobody else's business unless the user says so.
-define(DEFAULTS, #{port => 8787, bind => {127, 0, 0, 1}, client_queue => 64,
                    max_clients => 16, latest => 20, interval => 1000}).
%% How long the end waits for the browsers to take the summary.
-define(END_MS, 3000).
%% A verdict's reason, as shown: one bounded line.
-define(WHY_CHARS, 300).

-record(client, {
    mref :: reference(),
    in_flight = 0 :: non_neg_integer(),    % events sent it and not yet written
    dropped = 0 :: non_neg_integer()       % events it did not get: it was too slow
}).

-record(dashboard, {
    session :: pid(),
    tag :: reference(),                    % of the session's stream to this process
    opts :: opts(),
    httpd :: pid(),
    url :: string(),
    counts = #{} :: #{atom() => non_neg_integer()},  % processes by their last verdict
    known = #{} :: #{term() => atom()},              % each process's last verdict
    latest = [] :: [map()],                          % newest first, `latest' at most
    stats = null :: null | map(),                    % the session's last figures
    last_events = undefined :: undefined | {integer(), routed | reported, non_neg_integer()},
    stats_req = undefined :: undefined | gen_server:request_id(),
    clients = #{} :: #{pid() => #client{}},
    ending = false :: boolean()
}).

%%% API

%% @doc Starts a dashboard of Session (a session of riarc:start/3 or riarc:attach/3, or
%% riarc_remote's proxy of one) under riarc_view's supervisor, listening at once.
-spec start(pid(), opts()) -> {ok, pid()} | {error, {?MODULE, error_reason()}}.
start(Session, Opts) ->
    case options(Opts) of
        {ok, Full} ->
            case application:ensure_all_started(riarc_view) of
                {ok, _} ->
                    case riarc_dashboard_sup:start_dashboard(Session, Full) of
                        {ok, Pid} -> {ok, Pid};
                        {error, {?MODULE, _} = E} -> {error, E};
                        {error, Other} -> {error, {?MODULE, {not_started, Other}}}
                    end;
                {error, Why} -> {error, {?MODULE, {not_started, Why}}}
            end;
        Error -> Error
    end.

%% @private The supervisor's start function.
-spec start_link(pid(), opts()) -> {ok, pid()} | {error, term()}.
start_link(Session, Opts) ->
    gen_server:start_link(?MODULE, {Session, Opts}, []).

%% @doc Opts with the defaults filled in, checked.
-spec options(opts()) -> {ok, opts()} | {error, {?MODULE, error_reason()}}.
options(Opts) when is_map(Opts) ->
    Full = maps:merge(?DEFAULTS, Opts),
    Bad = [{K, V} || {K, V} <- maps:to_list(Full), not valid(K, V)],
    case Bad of
        [] -> {ok, Full#{bind := address(maps:get(bind, Full))}};
        [{K, V} | _] -> {error, {?MODULE, {bad_option, K, V}}}
    end;
options(Other) ->
    {error, {?MODULE, {bad_option, opts, Other}}}.

valid(port, P) -> is_integer(P) andalso P >= 0 andalso P =< 65535;
valid(bind, A) -> address(A) =/= error;
valid(K, N) when K =:= client_queue; K =:= max_clients; K =:= latest; K =:= interval ->
    is_integer(N) andalso N > 0;
valid(_, _) -> false.

address(A) when is_tuple(A) ->
    case inet:is_ip_address(A) of true -> A; false -> error end;
address(A) when is_list(A) ->
    case inet:parse_address(A) of {ok, IP} -> IP; {error, _} -> error end;
address(_) -> error.

%% @doc The page's address, `http://127.0.0.1:PORT/' by default.
-spec url(pid()) -> string().
url(Dashboard) -> gen_server:call(Dashboard, url).

%% @doc Ends the dashboard now (the summary says it was stopped) and waits for it.
-spec stop(pid()) -> ok.
stop(Dashboard) ->
    Ref = monitor(process, Dashboard),
    Dashboard ! riarc_dashboard_stop,
    receive {'DOWN', Ref, process, _, _} -> ok end.

%% @doc Waits until the dashboard has ended (its session ended and the summary went
%% out): `ok', or `timeout'.
-spec wait(pid(), timeout()) -> ok | timeout.
wait(Dashboard, Timeout) ->
    Ref = monitor(process, Dashboard),
    receive {'DOWN', Ref, process, _, _} -> ok
    after Timeout -> demonitor(Ref, [flush]), timeout
    end.

%% @doc The calling process becomes one of the dashboard's browsers (riarc_dashboard_http):
%% it gets the `hello' event's JSON now, then `{riarc_dashboard_event, Dashboard, Json}'
%% for each event, each to be acknowledged with `{riarc_dashboard_sent, self()}' once
%% written, and `{riarc_dashboard_end, Dashboard}' at the end.
-spec join(pid()) -> {ok, binary()} | {error, busy | ended}.
join(Dashboard) ->
    try gen_server:call(Dashboard, {join, self()}, 5000)
    catch exit:_ -> {error, ended}
    end.

%% @doc The calling browser has gone (its connection failed).
-spec leave(pid()) -> ok.
leave(Dashboard) ->
    gen_server:cast(Dashboard, {leave, self()}).

%% @doc The state so far, as the `hello' event gives it.
-spec snapshot(pid()) -> map().
snapshot(Dashboard) -> gen_server:call(Dashboard, snapshot, 5000).

%% @doc A verdict entry as the page shows it: pid, MFA and reason as text; a reject's or
%% an error's sequence chart (riarc_chart's SVG, every term in it escaped) beside.
-spec entry_json(map()) -> riarc_json:json().
entry_json(E = #{verdict := V}) ->
    Proc = riarc_result:format_process(maps:get(pid, E, undefined), maps:get(mfa, E, undefined)),
    {Pid, MFA} = case string:split(Proc, " ") of
                     [P, M] -> {P, M};
                     [P] -> {P, ""}
                 end,
    Why = string:slice(string:trim(riarc_result:format_why(E)), 0, ?WHY_CHARS),
    J = #{pid => text(Pid), mfa => text(MFA), verdict => V, why => text(Why),
          events => maps:get(events, E, null)},
    J1 = case V of
             _ when V =:= reject; V =:= error -> J#{chart => text(riarc_chart:svg(E))};
             _ -> J
         end,
    case E of
        #{node := Node} when is_atom(Node) -> J1#{node => Node};
        #{} -> J1
    end.

text(Chars) ->
    case unicode:characters_to_binary(Chars) of
        B when is_binary(B) -> B;
        _ -> <<"?">>
    end.

%% @doc A sentence for a reason of this module.
-spec format_error(error_reason()) -> string().
format_error({bad_option, K, V}) ->
    lists:flatten(io_lib:format("bad dashboard option ~p: ~0tp", [K, V]));
format_error({listen, {IP, Port}, Why}) ->
    lists:flatten(io_lib:format("cannot listen for the dashboard on ~s:~b: ~0tp",
                                [inet:ntoa(IP), Port, Why]));
format_error({session_down, Why}) ->
    lists:flatten(io_lib:format("the session ended before the dashboard started: ~0tp", [Why]));
format_error({not_started, Why}) ->
    lists:flatten(io_lib:format("the dashboard did not start: ~0tp", [Why])).

%%% gen_server

%% @private
init({Session, Opts}) ->
    %% terminate/2 runs at the supervisor's shutdown too: the listener goes with us.
    process_flag(trap_exit, true),
    Tag = make_ref(),
    _ = monitor(process, Session),
    try riarc_session:subscribe(Session, self(), Tag) of
        Entries ->
            case listen(Opts) of
                {ok, Httpd, Url} ->
                    _ = erlang:send_after(maps:get(interval, Opts), self(), riarc_dashboard_tick),
                    S0 = #dashboard{session = Session, tag = Tag, opts = Opts, httpd = Httpd, url = Url},
                    {ok, first_stats(lists:foldl(fun learn/2, S0, Entries))};
                {error, Why} ->
                    {stop, {?MODULE, {listen, {maps:get(bind, Opts), maps:get(port, Opts)}, Why}}}
            end
    catch exit:Why -> {stop, {?MODULE, {session_down, Why}}}
    end.

%% @private
handle_call(url, _From, S) ->
    {reply, S#dashboard.url, S};
handle_call(snapshot, _From, S) ->
    {reply, snapshot(hello, S), S};
handle_call({join, _Pid}, _From, S = #dashboard{ending = true}) ->
    {reply, {error, ended}, S};
handle_call({join, Pid}, _From, S = #dashboard{clients = Cs, opts = #{max_clients := Max}}) ->
    case map_size(Cs) >= Max of
        true -> {reply, {error, busy}, S};
        false ->
            C = #client{mref = monitor(process, Pid)},
            {reply, {ok, riarc_json:encode(snapshot(hello, S))}, S#dashboard{clients = Cs#{Pid => C}}}
    end.

%% @private
handle_cast({leave, Pid}, S) ->
    gone(Pid, S);
handle_cast(_Msg, S) ->
    {noreply, S}.

%% @private
handle_info(Msg, S = #dashboard{stats_req = Req}) when Req =/= undefined ->
    case gen_server:check_response(Msg, Req) of
        no_reply -> info(Msg, S);
        {reply, Stats} when is_map(Stats) -> {noreply, stats(Stats, S#dashboard{stats_req = undefined})};
        _ -> {noreply, stats(unavailable, S#dashboard{stats_req = undefined})}
    end;
handle_info(Msg, S) ->
    info(Msg, S).

info({riarc_session_verdict, Tag, E}, S = #dashboard{tag = Tag}) ->
    {noreply, verdict(E, S)};
%% riarc_remote's proxy streams in its own words.
info({riarc_verdict, Tag, E}, S = #dashboard{tag = Tag}) ->
    {noreply, verdict(E, S)};
info({riarc_dashboard_sent, Pid}, S = #dashboard{clients = Cs}) ->
    case Cs of
        #{Pid := C = #client{in_flight = N}} ->
            {noreply, S#dashboard{clients = Cs#{Pid := C#client{in_flight = max(0, N - 1)}}}};
        #{} -> {noreply, S}
    end;
info(riarc_dashboard_tick, S = #dashboard{ending = false, opts = #{interval := I}}) ->
    _ = erlang:send_after(I, self(), riarc_dashboard_tick),
    case S#dashboard.stats_req of
        undefined -> {noreply, S#dashboard{stats_req = gen_server:send_request(S#dashboard.session, stats)}};
        _ -> {noreply, S}   % the session has not answered the last one yet
    end;
info({'DOWN', _, process, Session, _}, S = #dashboard{session = Session}) ->
    finish(<<"the session ended">>, S);
info({'DOWN', _, process, Pid, _}, S) ->
    gone(Pid, S);
info(riarc_dashboard_stop, S) ->
    finish(<<"the dashboard was stopped">>, S);
info(riarc_dashboard_end, S) ->
    {stop, normal, S};
info(_Other, S) ->
    {noreply, S}.

%% @private
terminate(_Reason, #dashboard{httpd = Httpd}) ->
    _ = inets:stop(httpd, Httpd),
    ok.

%%% Internals

listen(#{port := Port, bind := Bind, max_clients := Max}) ->
    %% httpd wants a document root; riarc_dashboard_http answers every request itself,
    %% so nothing is ever served from it.
    Root = case code:which(?MODULE) of
               File when is_list(File) -> filename:dirname(File);
               _ -> "."
           end,
    Config = [{port, Port}, {bind_address, Bind}, {ipfamily, family(Bind)},
              {server_name, "riarc-dashboard"}, {server_root, Root}, {document_root, Root},
              {modules, [riarc_dashboard_http]}, {server_tokens, none},
              %% Room for a page load or two beside the browsers' event streams.
              {max_clients, Max + 8},
              {riarc_dashboard, self()}],
    case inets:start(httpd, Config) of
        {ok, Httpd} ->
            [{port, P}] = httpd:info(Httpd, [port]),
            {ok, Httpd, lists:flatten(io_lib:format("http://~s:~b/", [host(Bind), P]))};
        {error, Why} -> {error, listen_error(Why)}
    end.

%% httpd's error nests the socket's reason in its supervisors' reports: that reason
%% (eaddrinuse, say) is what a person needs.
listen_error(Why) ->
    case find_listen(Why, 10) of
        {ok, R} -> R;
        error -> Why
    end.

find_listen({listen, R}, _) -> {ok, R};
find_listen(T, D) when is_tuple(T), D > 0 -> find_listen(tuple_to_list(T), D);
find_listen([H | T], D) when D > 0 ->
    case find_listen(H, D - 1) of
        {ok, _} = Found -> Found;
        error -> find_listen(T, D)
    end;
find_listen(_, _) -> error.

family(IP) when tuple_size(IP) =:= 8 -> inet6;
family(_) -> inet.

host({0, 0, 0, 0}) -> net_adm:localhost();
host({0, 0, 0, 0, 0, 0, 0, 0}) -> net_adm:localhost();
host(IP) when tuple_size(IP) =:= 8 -> "[" ++ inet:ntoa(IP) ++ "]";
host(IP) -> inet:ntoa(IP).

%% A verdict entry, new or changed: counted by each process's last verdict.
learn(E = #{verdict := V}, S = #dashboard{counts = Counts, known = Known, latest = L, opts = O}) ->
    Key = case E of
              #{pid := undefined} -> make_ref();   % a partition that never named its process
              #{pid := P} -> {maps:get(node, E, node()), P};
              #{} -> make_ref()
          end,
    Counts1 = case Known of
                  #{Key := Old} -> maps:update_with(Old, fun(N) -> N - 1 end, Counts);
                  #{} -> Counts
              end,
    S#dashboard{counts = maps:update_with(V, fun(N) -> N + 1 end, 1, Counts1),
                known = Known#{Key => V},
                latest = lists:sublist([entry_json(E) | L], maps:get(latest, O))};
learn(_NotAnEntry, S) ->
    S.

verdict(E, S) ->
    S1 = learn(E, S),
    case S1 of
        S -> S;
        _ -> broadcast(riarc_json:encode(#{type => verdict, entry => hd(S1#dashboard.latest),
                                           counts => S1#dashboard.counts}), S1)
    end.

%% The figures at the start, so that the first page has them and the first tick a rate.
first_stats(S = #dashboard{session = Session}) ->
    try riarc_session:stats(Session) of
        Stats when is_map(Stats) -> stats(Stats, S);
        _ -> S
    catch exit:_ -> S
    end.

%% The session's figures, and the events per second since the last ones: counted by the
%% routing table as it sends them when riarc uses one (live), else as the tracers report
%% them (as each ends).
%% The session did not answer (it has ended): the last figures stay.
stats(unavailable, S) ->
    S;
stats(Stats = #{events := Reported}, S) ->
    Now = erlang:monotonic_time(millisecond),
    {Source, Events} = case maps:get(routed, Stats, undefined) of
                           N when is_integer(N) -> {routed, N};
                           _ -> {reported, Reported}
                       end,
    Rate = case S#dashboard.last_events of
               {T0, Source, E0} when Now > T0 -> max(0, round((Events - E0) * 1000 / (Now - T0)));
               _ -> null
           end,
    Fig = #{tracers => maps:get(tracers, Stats), analysers => maps:get(analysers, Stats),
            events => Events, events_counted => Source, events_per_s => Rate,
            memory => maps:get(memory, Stats), forged => maps:get(forged, Stats),
            overload => case maps:get(overload, Stats) of
                            undefined -> null;
                            O -> text(io_lib:format("~0tP", [O, 8]))
                        end},
    S1 = S#dashboard{stats = Fig, last_events = {Now, Source, Events}},
    broadcast(fun(C) -> riarc_json:encode(stats_event(C, S1)) end, S1).

stats_event(#client{dropped = D}, S = #dashboard{stats = Fig}) ->
    #{type => stats, stats => Fig, counts => S#dashboard.counts, dropped => D,
      verdicts => lists:sum(maps:values(S#dashboard.counts)),
      browsers => map_size(S#dashboard.clients)}.

snapshot(Type, S = #dashboard{counts = Counts}) ->
    #{type => Type, counts => Counts, verdicts => lists:sum(maps:values(Counts)),
      latest => S#dashboard.latest, stats => S#dashboard.stats,
      session => text(pid_to_list(S#dashboard.session)), node => node()}.

%% An event's JSON to every browser that has room for it; the others' drops are counted.
%% Json is the same for all, or made per browser (its own drop count is in its stats).
broadcast(Json, S = #dashboard{clients = Cs, opts = #{client_queue := Max}}) ->
    Cs1 = maps:map(fun(Pid, C = #client{in_flight = N}) when N < Max ->
                           Ev = case is_binary(Json) of true -> Json; false -> Json(C) end,
                           Pid ! {riarc_dashboard_event, self(), Ev},
                           C#client{in_flight = N + 1};
                      (_Pid, C = #client{dropped = D}) ->
                           C#client{dropped = D + 1}
                   end, Cs),
    S#dashboard{clients = Cs1}.

%% The session ended (or the dashboard was stopped): the summary to every browser,
%% whatever its queue (it is the last event), then the end; the browsers have ?END_MS
%% to write it.
finish(_Why, S = #dashboard{ending = true}) ->
    {noreply, S};
finish(Why, S = #dashboard{clients = Cs}) ->
    %% Each browser's own drops, and everyone's: a page that kept up can tell that
    %% another did not.
    All = lists:sum([D || #client{dropped = D} <- maps:values(Cs)]),
    Sum = (snapshot(summary, S))#{why => Why, dropped_all => All},
    _ = [Pid ! {riarc_dashboard_event, self(), riarc_json:encode(Sum#{dropped => D})}
         || {Pid, #client{dropped = D}} <- maps:to_list(Cs)],
    _ = [Pid ! {riarc_dashboard_end, self()} || Pid <- maps:keys(Cs)],
    case map_size(Cs) of
        0 -> {stop, normal, S#dashboard{ending = true}};
        _ ->
            _ = erlang:send_after(?END_MS, self(), riarc_dashboard_end),
            {noreply, S#dashboard{ending = true}}
    end.

%% A browser went away: the end waits for it no longer.
gone(Pid, S = #dashboard{clients = Cs}) ->
    case maps:take(Pid, Cs) of
        {#client{mref = Ref}, Cs1} ->
            demonitor(Ref, [flush]),
            case {S#dashboard.ending, map_size(Cs1)} of
                {true, 0} -> {stop, normal, S#dashboard{clients = Cs1}};
                _ -> {noreply, S#dashboard{clients = Cs1}}
            end;
        error -> {noreply, S}
    end.
