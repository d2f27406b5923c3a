%% @doc Running a monitoring session on another node: `riarc:attach(Target, Spec,
%% #{node => Node})', `riarc:start(MFA, Spec, #{node => Node})' and `riarc:run/3' with the
%% same option. Tracing is node-local, so the session and its tracers (and, for start and
%% run, the system) run on Node; this module is the caller's side of it.
%%
%% riarc connects to Node as an ordinary distributed-Erlang node (the cookie and node
%% names the user configured; nothing listens but distribution), loads onto it whatever
%% riarc needs that Node does not have (riarc's modules, the riarc application's spec,
%% the Spec's module and the module of a Spec fun: `code:get_object_code/1' here,
%% `code:load_binary/3' there), starts the riarc application there and attaches there.
%% The riarc_route NIF is found beside the modules' files (Node runs on this machine, or
%% the same path exists on it); when it cannot be loaded there, the process tracers'
%% backend is used, as on any node without it.
%%
%% The handle returned is a local proxy of the remote session, a gen_server speaking the
%% session's protocol: `riarc:verdicts/1', `riarc:alive/1' and `riarc:stop/1' work on it
%% as on a local session, and so does waiting for the end of a run (riarc:run/3 waits
%% for its proxy as for a local session, the timeout counted on the caller's node). It
%% keeps the caller's view of the run: the verdicts reached so far (the remote session
%% streams each as it learns it, riarc_session:subscribe/3; a request for the verdicts
%% also asks the session), and the partitions that have started
%% (each monitor the Spec gives is wrapped so that its partition's first event is
%% reported here). It is the remote session's owner: if the caller or the proxy dies, or
%% the link to Node breaks, the remote session stops tracing and leaves the node
%% untraced (sessions monitor their owner, tracers their session).
%%
%% If the remote session ends other than by stop/1 (Node went down, the link broke, the
%% session was killed), the view ends there: every partition with no verdict yet gets
%% `error' with reason `nodedown' (or `{session_down, Reason}'), never a silent accept;
%% verdicts reached before are kept. When the session ends, what riarc loaded onto Node
%% is stopped, unloaded and purged, unless another session still runs there; if the
%% proxy cannot do it (this VM ended at once, the link broke), a janitor riarc started on
%% Node does it once the session there has ended.
%%
%% `subscribe/1' streams the view: the subscriber gets `{riarc_verdict, Proxy, Entry}'
%% for each verdict as the proxy learns it, and `{riarc_remote_down, Proxy, Reason}' when
%% the remote session ends on its own.
%%
%% In use: `{ok, S} = riarc:attach(my_server, my_spec, #{node => 'app@host'})', then
%% `riarc:verdicts(S)' and `riarc:stop(S)' as for a local session (docs/production.md,
%% "Another node"). What it loads there, and a failure's sentence:
%% ```
%% 1> lists:member(riarc_tracer, riarc_remote:node_modules(riarc_demo_monitors)).
%% true
%% 2> riarc_remote:format_error({nodedown, 'app@host'}).
%% "cannot connect to node app@host (is it up, and is the cookie right?)"
%% '''
-module(riarc_remote).
-behaviour(gen_server).
-behaviour(riarc_monitor).

-export([attach/4, start/4, follower/4, subscribe/1, partitions/1, partitions/3, node_modules/1,
         format_error/1]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2, terminate/2]).
%% A monitor, wrapping the Spec's monitors on the remote node.
-export([analyse/2, explain/2]).
%% Spawned on the remote node.
-export([janitor/1]).
-export_type([error_reason/0]).

-type error_reason() :: not_distributed | {nodedown, node()} | {no_object_code, module()}
                      | {load_failed, node(), module(), term()} | {start_failed, node(), term()}
                      | {rpc, node(), term()} | {session_ended, nodedown | {session_down, term()}}.

%% What the remote node's riarc application environment says riarc loaded there.
-define(LOADED_KEY, riarc_remote_loaded).
-define(STARTED_KEY, riarc_remote_started).

-record(proxy, {
    owner :: pid(),
    node :: node(),
    remote :: pid() | undefined,
    tag :: reference() | undefined,          % the remote session's verdict stream's
    down = undefined :: undefined | term(),
    verdicts = #{} :: #{term() => map()},     % process -> verdict entry, as last seen
    order = [] :: [term()],                   % processes in the order their verdicts came
    parts = #{} :: #{term() => term()},       % process -> MFA, partitions started
    part_waiters = [] :: [{pos_integer(), gen_server:from()}], % callers of partitions/3
    subscribers = [] :: [{pid(), term()}],   % and the tag each one's messages carry
    result = undefined :: undefined | map(),
    await :: gen_server:request_id() | undefined, % the remote session's end, asked for
    waiters = [] :: [gen_server:from()],      % callers of await
    janitor :: pid() | undefined              % on the remote node, see janitor/1
}).

%%% API

%% @doc Attaches on Node (see riarc:attach/3) and returns the local proxy of the session.
-spec attach(node(), riarc:target(), riarc_lambda:spec(), riarc:opts()) ->
    {ok, pid()} | {error, term()}.
attach(Node, Target, Spec, Opts) ->
    proxy(Node, {attach_for, Target}, Spec, Opts).

%% @doc Starts a system under monitoring on Node (see riarc:start/3) and returns the
%% local proxy of the session.
-spec start(node(), {module(), atom(), list()}, riarc_lambda:spec(), riarc:opts()) ->
    {ok, pid()} | {error, term()}.
start(Node, MFA, Spec, Opts) ->
    proxy(Node, {start_for, MFA}, Spec, Opts).

%% @doc The session on Node that follows a system of Owner's there (riarc's option
%% `follow'): `attach(new_processes, ...)' on Node, its entries carrying their lineage
%% (riarc_follow), owned and streamed to Owner from the start: Owner gets
%% `{riarc_verdict, Tag, Entry}' and `{riarc_remote_down, Tag, Reason}'.
-spec follower(node(), riarc_lambda:spec(), riarc:opts(), pid()) ->
    {ok, {node(), pid(), reference()}} | {error, term()}.
follower(Node, Spec, Opts, Owner) ->
    Tag = make_ref(),
    case proxy(Owner, Node, {attach_for, new_processes}, Spec, Opts#{lineage => true}, [{Owner, Tag}]) of
        {ok, Proxy} -> {ok, {Node, Proxy, Tag}};
        {error, _} = E -> E
    end.

proxy(Node, How, Spec, Opts) ->
    proxy(self(), Node, How, Spec, Opts, []).

proxy(Owner, Node, How, Spec, Opts, Subscribers) ->
    case {node(), riarc_lambda:valid_spec(Spec)} of
        {nonode@nohost, _} -> {error, {?MODULE, not_distributed}};
        {_, false} -> {error, {riarc, {bad_spec, Spec}}};
        {_, true} ->
            case gen_server:start(?MODULE, {Owner, Node, How, Spec, Opts, Subscribers}, []) of
                {ok, Proxy} -> {ok, Proxy};
                {error, {shutdown, Reason}} -> {error, Reason};
                {error, Reason} -> {error, Reason}
            end
    end.

%% @doc Streams the proxy's view to the caller (see the module's doc); returns the
%% verdicts so far.
-spec subscribe(pid()) -> [map()].
subscribe(Proxy) -> gen_server:call(Proxy, {subscribe, self()}, 30000).

%% @doc The partitions the proxy knows have started: process and MFA.
-spec partitions(pid()) -> [{term(), term()}].
partitions(Proxy) -> gen_server:call(Proxy, partitions, 30000).

%% @doc The partitions the proxy knows have started, once there are at least N of them
%% (or the remote session is gone: those known then); exits with `timeout' if that takes
%% longer than Timeout (a partition is known from its first event, which reaches the
%% proxy over the link from the remote tracer).
-spec partitions(pid(), pos_integer(), timeout()) -> [{term(), term()}].
partitions(Proxy, N, Timeout) when is_integer(N), N > 0 -> gen_server:call(Proxy, {partitions, N}, Timeout).

%% @doc The modules riarc needs on a node to run a session with Spec there.
-spec node_modules(riarc_lambda:spec()) -> [module()].
node_modules(Spec) ->
    %% The core's and distribution's: the session there follows its system too.
    Mods = lists:append([begin
                             _ = application:load(App),
                             case application:get_key(App, modules) of
                                 {ok, Ms} -> Ms;
                                 undefined -> []
                             end
                         end || App <- [riarc, riarc_dist]]),
    Own = case Mods of [] -> [?MODULE]; _ -> Mods end,
    %% The routing table last: see load_binary/4.
    (lists:usort(Own ++ spec_modules(Spec)) -- [riarc_route]) ++ [riarc_route].

spec_modules(Spec) when is_atom(Spec) -> [Spec];
spec_modules(Spec) when is_function(Spec) ->
    {module, M} = erlang:fun_info(Spec, module),
    [M || M =/= erl_eval].

%% @doc A sentence for an error of this module.
-spec format_error(error_reason()) -> string().
format_error(not_distributed) ->
    "this node is not distributed: start it with -sname or -name (or net_kernel:start/1) "
    "to attach to another node";
format_error({nodedown, Node}) ->
    flat("cannot connect to node ~s (is it up, and is the cookie right?)", [Node]);
format_error({no_object_code, M}) ->
    flat("module ~s has no object code here to load onto the remote node", [M]);
format_error({load_failed, Node, M, Why}) ->
    flat("could not load module ~s onto ~s: ~0tp", [M, Node, Why]);
format_error({start_failed, Node, Why}) ->
    flat("could not start the riarc application on ~s: ~0tp", [Node, Why]);
format_error({rpc, Node, Why}) ->
    flat("a call to ~s failed: ~0tp", [Node, Why]);
format_error({session_ended, nodedown}) ->
    "the remote session's node went down or the link to it broke: its open partitions are errors";
format_error({session_ended, {session_down, Why}}) ->
    flat("the remote session ended (~0tp): its open partitions are errors", [Why]).

%%% The proxy

%% @private
init({Owner, Node, How, Spec, Opts, Subscribers}) ->
    case net_kernel:connect_node(Node) of
        true ->
            _ = monitor(process, Owner),
            case prepare(Node, Spec) of
                ok -> start_remote(Owner, Node, How, Spec, Opts, Subscribers);
                {error, E} -> {stop, {shutdown, E}}
            end;
        _ -> {stop, {shutdown, {?MODULE, {nodedown, Node}}}}
    end.

start_remote(Owner, Node, {Entry, What}, Spec, Opts, Subscribers) ->
    %% What a Spec module sets (the events and message patterns its monitors can need) is
    %% known here, not from the wrapped Spec, a fun.
    Defaults = riarc_lambda:spec_defaults(Spec),
    Wrapped = wrap_spec(self(), Spec),
    %% The janitor first: started by an erpc call, whose process a new_processes session
    %% started before it would see as a process of the system.
    J = case rpc(Node, ?MODULE, janitor, [self()]) of
            {ok, Pid} -> Pid;
            {error, _} -> undefined
        end,
    case rpc(Node, riarc, Entry, [self(), What, Wrapped, riarc_opts:with_spec(Defaults, Opts)]) of
        {ok, {ok, Remote}} ->
            _ = monitor(process, Remote),
            Tag = make_ref(),
            S = #proxy{owner = Owner, node = Node, remote = Remote, tag = Tag, janitor = J,
                   subscribers = Subscribers},
            Vs = try riarc_session:subscribe(Remote, self(), Tag)
                 catch exit:_ -> []  % Race: the session just ended; its DOWN says how.
                 end,
            {ok, learn(Vs, S)};
        {ok, {error, E}} -> finish(Node, J), {stop, {shutdown, E}};
        {error, Why} -> finish(Node, J), {stop, {shutdown, {?MODULE, {rpc, Node, Why}}}}
    end.

%% @private
handle_call(verdicts, _From, S) ->
    S1 = refresh(S),
    {reply, view(S1), S1};
handle_call({subscribe, Pid}, _From, S) ->
    S1 = refresh(S),
    {reply, view(S1), S1#proxy{subscribers = [{Pid, self()} | S1#proxy.subscribers]}};
%% The session's own stream (riarc_session:subscribe/3), for a view that takes either a
%% session or a proxy: `{riarc_verdict, Tag, Entry}' and `{riarc_remote_down, Tag, Why}'.
handle_call({subscribe, Pid, Tag}, _From, S) ->
    S1 = refresh(S),
    {reply, view(S1), S1#proxy{subscribers = [{Pid, Tag} | S1#proxy.subscribers]}};
handle_call(stats, _From, S = #proxy{down = undefined, remote = R}) ->
    {reply, try riarc_session:stats(R) catch exit:_ -> unavailable end, S};
handle_call(stats, _From, S) ->
    {reply, unavailable, S};
handle_call(alive, _From, S = #proxy{down = undefined, remote = R}) ->
    {reply, try riarc_session:alive(R) catch exit:_ -> #{tracers => [], processes => [], traced => #{}} end, S};
handle_call(alive, _From, S) ->
    {reply, #{tracers => [], processes => [], traced => #{}}, S};
handle_call(partitions, _From, S) ->
    {reply, lists:sort(maps:to_list(S#proxy.parts)), S};
handle_call({partitions, N}, From, S = #proxy{part_waiters = Ws}) ->
    {noreply, parts_known(S#proxy{part_waiters = [{N, From} | Ws]})};
handle_call(launched, _From, S) ->
    {reply, ok, S};
handle_call(await, From, S = #proxy{down = undefined, await = undefined, remote = R}) ->
    {noreply, S#proxy{await = gen_server:send_request(R, await), waiters = [From]}};
handle_call(await, From, S = #proxy{down = undefined}) ->
    {noreply, S#proxy{waiters = [From | S#proxy.waiters]}};
handle_call(await, _From, S) ->
    {reply, {ok, result(S)}, S};
handle_call({stop, Why}, _From, S = #proxy{down = undefined, remote = R}) ->
    %% A run cut short on the caller's side (run/3's timeout): the remote session says so
    %% in its result, as a local one would.
    S1 = try gen_server:call(R, {stop, Why}, 30000) of
             {ok, Result} -> ended(Result, S)
         catch exit:E -> went_down(E, S)
         end,
    _ = S1#proxy.down =:= nodedown orelse finish(S1),
    {stop, normal, {ok, result(S1)}, S1#proxy{waiters = reply_all({ok, result(S1)}, S1)}};
handle_call({stop, _Why}, From, S) ->
    handle_call(stop, From, S);
%% riarc_session:finish/2 releases a session whose result it has: for the proxy, a stop.
handle_call(release, From, S) ->
    handle_call(stop, From, S);
%% The proxy is the remote session's owner: it settles for its own caller.
handle_call({settle, Ms}, _From, S = #proxy{down = undefined, remote = R}) ->
    Reply = try riarc_session:settle(R, Ms)
            catch exit:_ -> ok  % gone: stop/1 says what that cost
            end,
    {reply, Reply, S};
handle_call({settle, _}, _From, S) ->
    {reply, ok, S};
handle_call(stop, _From, S = #proxy{down = undefined, remote = R}) ->
    S1 = try riarc_session:stop(R) of
             {ok, Result} -> ended(Result, S)
         catch exit:Why -> went_down(Why, S)
         end,
    _ = S1#proxy.down =:= nodedown orelse finish(S1),
    {stop, normal, {ok, result(S1)}, S1};
handle_call(stop, _From, S) ->
    {stop, normal, {ok, result(S)}, S}.

%% @private
handle_cast(_Msg, S) ->
    {noreply, S}.

%% @private
handle_info(Msg, S = #proxy{await = Req}) when Req =/= undefined ->
    case gen_server:check_response(Msg, Req) of
        no_reply -> info(Msg, S);
        {reply, {ok, Result}} ->
            %% The run is over there: the session stays until the caller stops it (as a
            %% local one does), so that the result is final.
            S1 = learn(maps:get(verdicts, Result), S#proxy{result = Result, await = undefined}),
            {noreply, S1#proxy{waiters = reply_all({ok, result(S1)}, S1)}};
        {error, _} ->
            %% The session is gone: its own 'DOWN' says how, and answers the waiters.
            {noreply, S#proxy{await = undefined}}
    end;
handle_info(Msg, S) ->
    info(Msg, S).

info({riarc_session_verdict, Tag, E}, S = #proxy{tag = Tag}) ->
    {noreply, learn([E], S)};
info({riarc_remote_part, P, MFA}, S) ->
    {noreply, parts_known(S#proxy{parts = (S#proxy.parts)#{P => MFA}})};
info({'DOWN', _, process, Owner, _}, S = #proxy{owner = Owner, down = undefined, remote = R}) ->
    %% Nobody waits for this view: the remote session stops (it would, seeing its
    %% owner, this proxy, go; stopping it first lets riarc's code be unloaded now).
    _ = (catch riarc_session:stop(R)),
    receive {'DOWN', _, process, R, _} -> ok after 5000 -> ok end,
    finish(S),
    {stop, normal, S};
info({'DOWN', _, process, Owner, _}, S = #proxy{owner = Owner}) ->
    {stop, normal, S};
info({'DOWN', _, process, R, Why}, S = #proxy{remote = R, down = undefined}) ->
    S1 = went_down(Why, S),
    _ = [Sub ! {riarc_remote_down, Tag, S1#proxy.down} || {Sub, Tag} <- S1#proxy.subscribers],
    _ = S1#proxy.down =:= nodedown orelse finish(S1),
    %% No partition is learnt from now on: partitions/3's callers get those known.
    _ = [gen_server:reply(From, lists:sort(maps:to_list(S1#proxy.parts))) || {_, From} <- S1#proxy.part_waiters],
    {noreply, S1#proxy{waiters = reply_all({ok, result(S1)}, S1), part_waiters = []}};
info(_Other, S) ->
    {noreply, S}.

%% @private
terminate(_Reason, _S) ->
    ok.

%% The verdicts so far, from the remote session.
refresh(S = #proxy{down = undefined, remote = R}) ->
    try riarc_session:verdicts(R) of
        Vs -> learn(Vs, S)
    catch exit:_ -> S  % Race: the session just ended; its DOWN says how.
    end;
refresh(S) ->
    S.

%% The result of a session that has ended there, kept; riarc's code on the node goes once
%% the session is gone (it replies, then ends).
ended(Result, S = #proxy{remote = R}) ->
    receive {'DOWN', _, process, R, _} -> ok after 5000 -> ok end,
    learn(maps:get(verdicts, Result), S#proxy{result = Result}).

reply_all(Reply, #proxy{waiters = Ws}) ->
    _ = [gen_server:reply(W, Reply) || W <- Ws],
    [].

%% New or changed verdict entries are kept and streamed.
learn(Vs, S) ->
    lists:foldl(fun(E = #{pid := P}, A = #proxy{verdicts = Known}) ->
                        case maps:find(P, Known) of
                            {ok, E} -> A;
                            {ok, _} -> notify(E, A#proxy{verdicts = Known#{P => E}});
                            error -> notify(E, A#proxy{verdicts = Known#{P => E},
                                                   order = A#proxy.order ++ [P]})
                        end
                end, S, Vs).

notify(E, S) ->
    _ = [Sub ! {riarc_verdict, Tag, E} || {Sub, Tag} <- S#proxy.subscribers],
    S.

%% The remote session ended on its own: every partition without a verdict gets error.
went_down(Why, S) ->
    Reason = case Why of
                 noconnection -> nodedown;
                 {nodedown, _} -> nodedown;
                 {{nodedown, _}, _} -> nodedown;
                 _ -> {session_down, Why}
             end,
    Missing = [{P, MFA} || {P, MFA} <- lists:sort(maps:to_list(S#proxy.parts)),
                           not is_map_key(P, S#proxy.verdicts)],
    S1 = lists:foldl(fun({P, MFA}, A) -> learn([riarc_result:entry(P, MFA, error, 0, Reason)], A) end,
                     S, Missing),
    S1#proxy{down = Reason}.

view(#proxy{verdicts = Vs, order = Order}) ->
    [maps:get(P, Vs) || P <- Order].

result(S = #proxy{result = undefined}) ->
    riarc_result:make(#{verdicts => view(S), errors => [{?MODULE, {session_ended, S#proxy.down}}]});
result(S = #proxy{result = R}) ->
    R#{verdicts => view(S)}.

%%% The wrapped Spec and its monitors

wrap_spec(Proxy, Spec) ->
    fun(MFA) ->
            Answer = case is_atom(Spec) of
                         true -> Spec:spec(MFA);
                         false -> Spec(MFA)
                     end,
            case Answer of
                {ok, Mon} -> {ok, {?MODULE, {first, Proxy, Mon}}};
                Other -> Other
            end
    end.

%% @private A partition's first event (its init or attached event) names its process:
%% the proxy learns of the partition, then the Spec's monitor analyses as it would.
-spec analyse(riarc_event:event(), term()) -> {next, term()} | accept | reject.
analyse(E, {first, Proxy, Mon}) ->
    Proxy ! {riarc_remote_part, riarc_event:origin(E), first_mfa(E)},
    analyse(E, {told, Mon});
analyse(E, {told, Mon}) ->
    case riarc_monitor:analyse(Mon, E) of
        {next, Mon1} -> {next, {told, Mon1}};
        {verdict, accept} -> accept;
        {verdict, reject} -> reject;
        {verdict, error, {Class, Reason, Stack}} -> erlang:raise(Class, Reason, Stack);
        {verdict, error, Why} -> error(Why)
    end.

first_mfa({init, _, _, MFA}) -> MFA;
first_mfa({attached, _, MFA}) -> MFA;
first_mfa(_) -> undefined.

%% @private The wrapped monitor's own words.
-spec explain(riarc_event:event(), term()) -> iodata().
explain(E, {first, _, Mon}) ->
    explain(E, {told, Mon});
explain(E, {told, Mon}) ->
    maps:get(words, riarc_monitor:explain(Mon, E), <<>>).

%%% Code on the remote node

%% The proxy removes what riarc loaded; its janitor on the node is told first that it
%% need not, and gone before (it runs this module's code).
finish(#proxy{node = Node, janitor = J}) ->
    finish(Node, J).

finish(Node, J) ->
    _ = is_pid(J) andalso begin
                              Ref = monitor(process, J),
                              J ! {riarc_remote_janitor, stop},
                              receive {'DOWN', Ref, process, J, _} -> true
                              after 5000 -> demonitor(Ref, [flush])
                              end
                          end,
    cleanup(Node).

%% @private Started on the remote node for a proxy: if the proxy goes without having
%% cleaned up (the caller's VM ended at once, the link broke), the remote session ends
%% (it monitors the proxy), and the janitor then removes what riarc loaded, as the proxy
%% would have.
-spec janitor(pid()) -> pid().
janitor(Proxy) ->
    spawn(fun() ->
                  Ref = monitor(process, Proxy),
                  receive
                      {riarc_remote_janitor, stop} -> ok;
                      {'DOWN', Ref, process, Proxy, _} -> sweep_up()
                  end
          end).

sweep_up() ->
    Sessions = try supervisor:which_children(riarc_session_sup) catch exit:_ -> [] end,
    Refs = [monitor(process, P) || {_, P, _, _} <- Sessions, is_pid(P)],
    _ = [receive {'DOWN', R, process, _, _} -> ok after 30000 -> ok end || R <- Refs],
    cleanup(node()).

%% riarc's modules and the Spec's, loaded where missing; the riarc application loaded
%% and started. What was loaded is remembered on the node, for cleanup/1.
prepare(Node, Spec) ->
    case load_modules(Node, node_modules(Spec), []) of
        {ok, Loaded} ->
            case load_app(Node, Loaded) of
                ok -> ok;
                {error, _} = E -> cleanup(Node), E
            end;
        {error, _} = E -> E
    end.

load_modules(_Node, [], Loaded) ->
    {ok, lists:reverse(Loaded)};
load_modules(Node, [M | Ms], Loaded) ->
    case rpc(Node, code, which, [M]) of
        {ok, non_existing} ->
            case code:get_object_code(M) of
                {M, Bin, File} ->
                    case load_binary(Node, M, File, Bin) of
                        {ok, {module, M}} -> load_modules(Node, Ms, [M | Loaded]);
                        {ok, Err} -> unload(Node, Loaded), {error, {?MODULE, {load_failed, Node, M, Err}}};
                        {error, Why} -> unload(Node, Loaded), {error, {?MODULE, {rpc, Node, Why}}}
                    end;
                error -> unload(Node, Loaded), {error, {?MODULE, {no_object_code, M}}}
            end;
        {ok, _Path} ->
            %% The node has its own copy (on its code path, or loaded already).
            load_modules(Node, Ms, Loaded);
        {error, Why} -> unload(Node, Loaded), {error, {?MODULE, {rpc, Node, Why}}}
    end.

%% The routing table's NIF is looked for in the riarc application's priv directory when
%% its module loads (its on_load): for that moment, riarc's ebin directory is on Node's
%% code path, if Node has it (a node on this machine does), so that the NIF found is the
%% one beside the module loaded. Without it the session uses the process tracers.
load_binary(Node, riarc_route, File, Bin) ->
    Ebin = filename:dirname(File),
    case rpc(Node, filelib, is_dir, [Ebin]) of
        {ok, true} ->
            _ = rpc(Node, code, add_patha, [Ebin]),
            try rpc(Node, code, load_binary, [riarc_route, File, Bin])
            after rpc(Node, code, del_path, [Ebin])
            end;
        _ -> rpc(Node, code, load_binary, [riarc_route, File, Bin])
    end;
load_binary(Node, M, File, Bin) ->
    rpc(Node, code, load_binary, [M, File, Bin]).

load_app(Node, Loaded) ->
    Loads = case rpc(Node, application, get_key, [riarc, vsn]) of
                {ok, undefined} ->
                    _ = application:load(riarc),
                    {ok, Keys} = application:get_all_key(riarc),
                    Spec = {application, riarc, [{K, V} || {K, V} <- Keys, K =/= env]
                            ++ [{env, [{?LOADED_KEY, Loaded}]}]},
                    rpc(Node, application, load, [Spec]);
                {ok, {ok, _}} ->
                    %% Loaded there already: add what this session loaded to what will be
                    %% removed when the last session there ends.
                    Before = env_list(Node, ?LOADED_KEY),
                    rpc(Node, application, set_env, [riarc, ?LOADED_KEY, lists:usort(Before ++ Loaded)]);
                Other -> Other
            end,
    case Loads of
        {ok, ok} ->
            case rpc(Node, application, ensure_all_started, [riarc]) of
                {ok, {ok, Started}} ->
                    %% The applications riarc started there (runtime_tools, say) stop
                    %% with it.
                    Others = env_list(Node, ?STARTED_KEY),
                    _ = rpc(Node, application, set_env,
                            [riarc, ?STARTED_KEY, lists:usort(Others ++ (Started -- [riarc]))]),
                    ok;
                {ok, Err} -> {error, {?MODULE, {start_failed, Node, Err}}};
                {error, Why} -> {error, {?MODULE, {rpc, Node, Why}}}
            end;
        {ok, Err} -> {error, {?MODULE, {start_failed, Node, Err}}};
        {error, Why} -> {error, {?MODULE, {rpc, Node, Why}}}
    end.

%% When no session runs on Node any more, what riarc loaded there goes: the application
%% (if riarc loaded it), then the modules (deleted and purged; a module some process
%% still runs is left as old code rather than killing that process).
cleanup(Node) ->
    case rpc(Node, application, get_env, [riarc, ?LOADED_KEY]) of
        {ok, {ok, Loaded}} ->
            case rpc(Node, supervisor, which_children, [riarc_session_sup]) of
                {ok, [_ | _]} -> ok;
                _ ->
                    %% The node's patterns first: the keeper puts back what the session
                    %% held before the code it runs goes.
                    _ = rpc(Node, riarc_trace_pattern, settle, [10000]),
                    Apps = env_list(Node, ?STARTED_KEY),
                    _ = rpc(Node, application, stop, [riarc]),
                    _ = [rpc(Node, application, stop, [A]) || A <- lists:reverse(Apps)],
                    _ = rpc(Node, application, unload, [riarc]),
                    unload(Node, Loaded)
            end;
        _ -> ok
    end.

env_list(Node, Key) ->
    case rpc(Node, application, get_env, [riarc, Key, []]) of
        {ok, L} when is_list(L) -> L;
        _ -> []
    end.

unload(Node, Mods) ->
    _ = [rpc(Node, code, delete, [M]) || M <- Mods],
    _ = [rpc(Node, code, soft_purge, [M]) || M <- Mods],
    ok.

rpc(Node, M, F, A) ->
    try {ok, erpc:call(Node, M, F, A, 30000)}
    catch Class:Why -> {error, {Class, Why}}
    end.

flat(F, A) -> lists:flatten(io_lib:format(F, A)).

%% Answers the callers of partitions/3 whose count is reached.
parts_known(S = #proxy{parts = Parts, part_waiters = Ws}) ->
    {Done, Waiting} = lists:partition(fun({N, _}) -> map_size(Parts) >= N end, Ws),
    _ = [gen_server:reply(From, lists:sort(maps:to_list(Parts))) || {_, From} <- Done],
    S#proxy{part_waiters = Waiting}.
