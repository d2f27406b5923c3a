%% @doc The session's process (riarc_session is its interface): a gen_server whose state
%% is the run's book of live tracers and analysis processes, and whose parts
%% (riarc_session_verdicts, _limits, _overload, _analyses, _tally, _trust, _follow,
%% _settle) answer with decisions it carries out. Its errors are riarc_session's
%% (`{riarc_session, Reason}'), as callers see them.
%% ```
%% 1> {ok, S} = riarc:start({riarc_demo_pqr, p, []}, fun(_) -> undefined end, #{}).
%% 2> {ok, _} = riarc:stop(S), ok.
%% ok
%% '''
-module(riarc_session_server).
-behaviour(gen_server).

-export([init/1, handle_call/3, handle_cast/2, handle_info/2, terminate/2]).

%% What a run's start is waiting for: the root tracers that have not said yet whether the
%% system launched, and the first launch error; callers of launched/1 wait for both.
-record(launch, {
    pending = [] :: [pid()],
    error = ok :: ok | {error, term()},
    waiters = [] :: [gen_server:from()]
}).

%% How often the session looks at the node's trace patterns (cut detection).
-define(VIEW_CHECK_MS, 1000).

-record(session, {
    owner :: pid(),
    spec :: riarc_lambda:spec(),                     % what the result's warnings are about
    opts :: riarc_session:opts(),
    backend :: riarc_backend:t(),
    %% Trust boundary: riarc's own processes tag what they send the session with this
    %% token (a reference the monitored system never sees), and control requests to
    %% the tracers carry it; messages in riarc's shape without it are forged.
    token = make_ref() :: reference(),
    launch = #launch{} :: #launch{},
    tracers = #{} :: #{pid() => true},               % the live tracers
    %% The live analysis processes (riarc_analysis); the watchdog's timer runs while
    %% there are any.
    analyses = riarc_session_analyses:new() :: riarc_session_analyses:t(),
    backend_closed = false :: boolean(),
    cut = undefined :: undefined | term(),            % why riarc cut the run short
    started :: integer(),
    finished :: undefined | integer(),
    waiters = [] :: [gen_server:from()],
    stopping = false :: boolean(),
    tally :: riarc_session_tally:t(),                 % what the result tallies
    verdicts :: riarc_session_verdicts:t(),          % the entries, and who hears of them
    limits :: riarc_session_limits:t(),              % overload, budgets, counts
    %% Following the system onto other nodes: the module of that part and its state.
    dist = undefined :: riarc_session_follow:t(),
    settling = undefined :: undefined | riarc_session_settle:t()   % settle/2's
}).

-ifdef(TEST).
-export([token/1]).
%% @private Tests only: the session's token, to play one of riarc's own processes.
-spec token(pid()) -> reference().
token(Session) -> (sys:get_state(Session))#session.token.
-endif.

%% @private
init({Owner, Roots, Spec, Opts = #{backend := Make}}) when is_function(Make, 1) ->
    case Make(self()) of
        {ok, Backend} -> init({Owner, Roots, Spec, Opts#{backend := Backend}});
        {error, Reason} -> {stop, Reason}
    end;
init({Owner, Roots, Spec, Opts = #{backend := Backend}}) ->
    Token = make_ref(),
    %% The analysis processes link to the session (so that none outlives it); their
    %% ends are handled through monitors.
    process_flag(trap_exit, true),
    Limits = riarc_opts:limits(Opts),
    Budget = riarc_opts:budget(Opts),
    %% Every limit but max_tracers (the session's own) is the tracers' to apply.
    Base = (maps:without([max_tracers], Limits))#{
            lambda => riarc_lambda:new(Spec), backend => Backend, session => self(),
            checks => maps:get(invariants, Opts), perturb => maps:get(perturb, Opts),
            explain => maps:get(explain, Opts, 8), analysis => maps:get(analysis, Opts, isolated),
            monitor_budget => Budget, token => Token},
    %% On a followed node: where a child from elsewhere that Λ puts in its parent's
    %% partition sends its events (riarc's option follow).
    Cfg0 = maps:merge(Base, maps:with([relay_to, tracer_priority, adopt], Opts)),
    _ = monitor(process, Owner),
    _ = erlang:send_after(?VIEW_CHECK_MS, self(), riarc_view_check),
    S0 = #session{owner = Owner, spec = Spec, opts = Opts, backend = Backend, token = Token,
                  started = erlang:monotonic_time(microsecond),
                  tally = riarc_session_tally:new(riarc_session_trust:unsealed(Backend)),
                  verdicts = riarc_session_verdicts:new(maps:get(lineage, Opts, false)),
                  limits = riarc_session_limits:new(Limits, Budget)},
    %% Following the system onto other nodes starts before the system does, so that no
    %% child it starts there is missed.
    case riarc_session_follow:init(Opts, Backend, Limits, Token, Spec) of
        {ok, Dist} ->
            Cfg = riarc_session_follow:tracer_cfg(Cfg0, Dist),
            %% Alg. 6 ROOT, once per root of the system; a root that cannot be traced
            %% is an error of start/4, at once.
            S1 = lists:foldl(fun({Root, MFA, Init}, S) ->
                                     tracer_up(riarc_tracer:start_root(Cfg, Root, MFA, Init), S)
                             end, S0#session{dist = Dist}, Roots),
            {ok, S1#session{launch = #launch{pending = maps:keys(S1#session.tracers)}}};
        {error, Reason} ->
            {stop, Reason}
    end.

%% @private
handle_call(launched, From, S = #session{launch = L = #launch{pending = [_ | _]}}) ->
    {noreply, S#session{launch = L#launch{waiters = [From | L#launch.waiters]}}};
handle_call(launched, _From, S) ->
    {reply, (S#session.launch)#launch.error, S};
handle_call(await, From, S = #session{finished = undefined}) ->
    {noreply, S#session{waiters = [From | S#session.waiters]}};
handle_call(await, _From, S) ->
    {reply, {ok, result(S)}, S};
handle_call(verdicts, _From, S) ->
    {reply, entry_list(S), S};
handle_call({subscribe, Pid, Tag}, _From, S) ->
    {reply, entry_list(S), verdicts(S, fun(_, V) -> riarc_session_verdicts:subscribe(Pid, Tag, V) end)};
handle_call(alive, _From, S) ->
    Waiting = riarc_session_follow:held(S#session.dist),
    {reply, riarc_session_stats:alive(S#session.tracers, S#session.token, Waiting), S};
handle_call(stats, _From, S) ->
    {reply, riarc_session_stats:stats(#{tracers => S#session.tracers, limits => S#session.limits,
                                        analysers => riarc_session_analyses:pids(S#session.analyses),
                                        finished => S#session.finished =/= undefined,
                                        backend => S#session.backend}), S};
%% Settling, like stopping, is the owner's.
handle_call({settle, _}, {Pid, _}, S = #session{owner = Owner}) when Pid =/= Owner ->
    {reply, {error, {riarc_session, not_owner}}, S};
handle_call({settle, Ms}, From, S = #session{tracers = T, token = Token}) ->
    S1 = unsettled(S),
    Ref = make_ref(),
    case maps:keys(T) of
        [] -> {reply, ok, S1};
        Tracers ->
            _ = [riarc_tracer:settle(Pid, Token, Ref) || Pid <- Tracers],
            _ = Ms =:= infinity orelse erlang:send_after(Ms, self(), {riarc_settle_over, Ref}),
            {noreply, S1#session{settling = riarc_session_settle:new(From, Ref, Tracers)}}
    end;
%% Trust boundary: stopping is the owner's (the process that started the session, or
%% riarc's proxy of it for a session on another node). A stop from anyone else, the
%% monitored system say, is refused, and counted among the run's errors as forged.
handle_call(Stop, {Pid, _}, S = #session{owner = Owner}) when (Stop =:= stop orelse Stop =:= release
                                                               orelse element(1, Stop) =:= stop),
                                                              Pid =/= Owner ->
    {reply, {error, {riarc_session, not_owner}}, forged(1, S)};
handle_call({stop, Why}, From, S) ->
    %% A run cut short by riarc (its timeout): partitions that end from here on were not
    %% seen to their end, and the result says why.
    handle_call(stop, From, tally(S#session{cut = Why},
                                  fun(T) -> riarc_session_tally:append_error({riarc_session, Why}, T) end));
%% The run is over and the caller has its result (riarc_session:finish/2, after await/2):
%% the session ends without building the result again (a few microseconds per partition,
%% tens of milliseconds for ten thousand). A run not over is stopped as by stop/1.
handle_call(release, From, S = #session{finished = Finished, tracers = T}) ->
    case Finished =/= undefined andalso map_size(T) =:= 0
        andalso not riarc_session_analyses:any(S#session.analyses) of
        true -> {stop, normal, ok, stop_followers(close(S))};
        false -> handle_call(stop, From, S)
    end;
handle_call(stop, From, S = #session{tracers = T}) ->
    case map_size(T) =:= 0 andalso not riarc_session_analyses:any(S#session.analyses) of
        true ->
            S1 = stop_followers(close(S)),
            S2 = case S1#session.finished of
                     undefined -> S1#session{finished = erlang:monotonic_time(microsecond)};
                     _ -> S1
                 end,
            gen_server:reply(From, {ok, result(S2)}),
            {stop, normal, S2};
        false ->
            _ = [riarc_tracer:stop(Pid, S#session.token) || Pid <- maps:keys(T)],
            maybe_done(S#session{stopping = true, waiters = [From | S#session.waiters]})
    end.

%% @private
handle_cast(_Msg, S) ->
    {noreply, S}.

%% @private
%% Trust boundary: riarc_session_trust:check/3 says who sent it.
handle_info(Msg, S = #session{token = Token, backend = Backend}) ->
    case riarc_session_trust:check(Msg, Token, Backend) of
        {trusted, Inner} -> trusted(Inner, S);
        %% The routing table's default owner: an event of a process no tracer owned. Its
        %% process's trace is incomplete; the run's result says how many such events came.
        orphan -> {noreply, tally(S, fun riarc_session_tally:orphan/1)};
        skip -> {noreply, S};
        forged -> {noreply, forged(1, S)};
        other -> routed_info(Msg, S)
    end.

routed_info(Msg, S) ->
    %% The distribution part's own messages: its followers' streams, relayed events,
    %% nodes joining, its timers.
    case riarc_session_follow:handle_info(Msg, ctx(S), S#session.dist) of
        unknown -> info(Msg, S);
        {Next, D1, Fx} -> next(Next, perform(Fx, S#session{dist = D1}))
    end.

info(riarc_view_check, S = #session{finished = undefined}) ->
    _ = erlang:send_after(?VIEW_CHECK_MS, self(), riarc_view_check),
    {noreply, view_check(S)};
info(riarc_view_check, S) ->
    {noreply, S};
info(riarc_watchdog, S = #session{limits = L, analyses = As}) ->
    {L1, Fx} = riarc_session_overload:watchdog_fired(L, As),
    {noreply, perform(Fx, S#session{limits = L1})};
info(Msg = {riarc_grace, Ref}, S = #session{limits = L, analyses = As}) ->
    case riarc_session_overload:grace_over(Ref, L, As) of
        {L1, Fx} -> {noreply, perform(Fx, S#session{limits = L1})};
        false -> other(Msg, S)
    end;
info({'DOWN', _, process, Pid, Reason}, S) ->
    down(Pid, Reason, settling(fun(W) -> riarc_session_settle:gone(Pid, W) end, S));
%% The wait of settle/2 is over; one that ended already leaves its timer behind.
info({riarc_settle_over, Ref}, S = #session{settling = W}) ->
    case W =/= undefined andalso riarc_session_settle:ref(W) =:= Ref of
        true -> {noreply, unsettled(S)};
        false -> {noreply, S}
    end;
info({'EXIT', An, Reason}, S) when Reason =/= normal ->
    {As, Fx} = riarc_session_analyses:exited(An, Reason, heap_words(S), S#session.analyses),
    {noreply, perform(Fx, S#session{analyses = As})};
info({'EXIT', _, _}, S) ->
    {noreply, S};
info(Msg, S) ->
    other(Msg, S).

%% Anything else in riarc's shape (one without the session's token, say) is forged.
other(Msg, S) ->
    case riarc_session_trust:unknown(Msg) of
        forged -> {noreply, forged(1, S)};
        ignore -> {noreply, S}
    end.

down(Pid, Reason, S) ->
    case riarc_session_analyses:down(Pid, Reason, heap_words(S), S#session.analyses) of
        {Tracer, As, Fx} ->
            S1 = perform(Fx, S#session{analyses = As}),
            Analysing = analysers_of(Tracer, S1) =/= [],
            maybe_done(verdicts(S1, fun(Over, V) ->
                                        riarc_session_verdicts:analysis_ended(Tracer, Analysing, Over, V)
                                    end));
        unknown -> down_other(Pid, Reason, S)
    end.

down_other(Owner, _, S = #session{owner = Owner}) ->
    %% Nobody waits for this run any more: stop tracing, leave the system alone.
    _ = [riarc_tracer:stop(Pid, S#session.token) || Pid <- maps:keys(S#session.tracers)],
    {stop, normal, S};
down_other(Pid, Reason, S0 = #session{verdicts = Vs, tracers = T}) ->
    case {riarc_session_verdicts:unsubscribe(Pid, Vs), is_map_key(Pid, T)} of
        {{true, Vs1}, _} -> {noreply, S0#session{verdicts = Vs1}};
        {false, true} ->
            S = case lists:member(Pid, (S0#session.launch)#launch.pending) of
                    true -> launch_result(Pid, {error, {riarc_session, {root_tracer_down, Reason}}}, S0);
                    false -> S0
                end,
            {Vs1, Crash} = riarc_session_verdicts:tracer_down(Pid, Reason, analysers_of(Pid, S) =/= [],
                                                              overload_of(S), S#session.verdicts),
            S1 = case Crash of
                     crashed -> violation(#{tracer => Pid, invariant => crash, info => Reason}, S);
                     ok -> S
                 end,
            maybe_done(S1#session{verdicts = Vs1, tracers = maps:remove(Pid, T),
                                  limits = riarc_session_limits:tracer_gone(Pid, S1#session.limits)});
        {false, false} -> {noreply, S0}
    end.

%% What riarc's own processes (tracers, analysis processes) tell the session, with its
%% token.
trusted({riarc_forged, _Tracer, _What}, S) ->
    {noreply, forged(1, S)};
trusted({riarc_settled, T, Ref}, S) ->
    {noreply, settling(fun(W) -> riarc_session_settle:settled(T, Ref, W) end, S)};
trusted({riarc_launched, T, Res}, S) ->
    {noreply, launch_result(T, Res, S)};
trusted({riarc_tracer_up, Pid, Proc, MFA, Lineage}, S) ->
    case {overload_of(S), S#session.stopping} of
        {Over, _} when Over =/= undefined ->
            %% Race: a tracer started by one the overload policy ended, announced after
            %% the detach: it has nothing to take over any more, and is ended the same way.
            exit(Pid, kill),
            {noreply, tracer_up(Pid, part(Pid, Proc, MFA, Lineage, S))};
        {_, true} ->
            %% Race: a tracer started by its parent tracer before that one took the stop
            %% of stop/1 announces itself after it: it is stopped as the others were, or
            %% the session would wait for it for ever.
            riarc_tracer:stop(Pid, S#session.token),
            {noreply, tracer_up(Pid, part(Pid, Proc, MFA, Lineage, S))};
        _ ->
            S1 = tracer_up(Pid, part(Pid, Proc, MFA, Lineage, S)),
            case riarc_session_limits:tracers(map_size(S1#session.tracers), S1#session.limits) of
                {overload, What} -> {noreply, overload(What, S1)};
                ok -> {noreply, S1}
            end
    end;
%% A partition a tracer adopted (riarc_tracer_adopted): known by its key from now on.
trusted({riarc_adopted, Tracer, Key, Proc, MFA, Lineage}, S) ->
    {noreply, verdicts(S, fun(Over, V) -> riarc_session_verdicts:adopted(Tracer, Key, {Proc, MFA}, Lineage, Over, V) end)};
%% A tracer's last words as it ends (riarc_tracer): what it told the session in the
%% step that ended it, its statistics, and its last counts, in one message; taken in
%% that order, as the messages they stand for would have been.
trusted({riarc_last_words, Tracer, Before, Stats, After}, S) when is_list(Before), is_list(After) ->
    S1 = lists:foldl(fun told/2, S, Before),
    {noreply, lists:foldl(fun told/2, S1, [{riarc_tracer_down, Tracer, Stats} | After])};
trusted({riarc_overload, _Tracer, What}, S) ->
    {noreply, overload(What, S)};
trusted({riarc_counts, Tracer, Events, Forged}, S) ->
    case riarc_session_limits:counted(Tracer, Events, Forged, S#session.limits) of
        {L, ok} -> {noreply, S#session{limits = L}};
        {L, {overload, What}} -> {noreply, overload(What, S#session{limits = L})}
    end;
trusted({riarc_analysis_up, Tracer, An, Clock}, S) ->
    {As, Fx} = riarc_session_overload:analysis_up(An, Tracer, Clock, S#session.limits, S#session.analyses),
    {noreply, perform(Fx, S#session{analyses = As})};
%% What only the tally learns (a tracer's statistics, a root's abnormal exit, an
%% invariant violated, the Spec failing).
trusted(Msg, S) when element(1, Msg) =:= riarc_tracer_down; element(1, Msg) =:= riarc_root_exit;
                     element(1, Msg) =:= riarc_violation; element(1, Msg) =:= riarc_spec_error ->
    {noreply, tally(S, fun(T) -> riarc_session_tally:learnt(Msg, T) end)};
trusted(Msg = {riarc_verdict, _Tracer, _Proc, _MFA, _V, _Why, N}, S = #session{cut = Cut}) ->
    Log = maps:get(log, S#session.opts),
    %% The count of the events the monitor took, wherever it ran: the one count of them.
    S1 = tally(S, fun(T) -> riarc_session_tally:analysed(N, T) end),
    {noreply, verdicts(S1, fun(Over, V) -> riarc_session_verdicts:monitor_verdict(Msg, Cut, Log, Over, V) end)};
%% A child on another node, in its own partition: riarc_session_verdicts:learnt/3.
%% Relayed into its parent's partition, or followed onto its node: the distribution part's.
trusted({riarc_remote_child, Tracer, Kind, Info}, S) when Kind =:= relayed; Kind =:= own ->
    case riarc_session_follow:remote_child(Tracer, Kind, Info, ctx(S), S#session.dist) of
        {D1, Fx} -> {noreply, perform(Fx, S#session{dist = D1})};
        %% Nothing follows the system onto other nodes: the user's word that a session
        %% there monitors what starts there, or an error.
        none when Kind =:= own ->
            case lists:member(maps:get(node, Info), maps:get(monitored_elsewhere, S#session.opts, [])) of
                true -> {noreply, S};
                false -> {noreply, add_error({riarc_session, {remote_child, Info}}, S)}
            end;
        none -> {noreply, S}
    end;
%% A timer set to send another process the atom `timeout' (riarc_tracer_core): that
%% process's trace cannot be read, in whatever partition it is: an error of the run.
trusted({riarc_ambiguous_timer, _Key, P, To}, S) ->
    {noreply, add_error({riarc_session, {ambiguous_timer, #{process => P, to => To}}}, S)};
%% What only the partitions' entries learn (a partition's event count, process,
%% explanation, cut, lost events, child on another node).
trusted(Msg, S) ->
    {noreply, verdicts(S, fun(Over, V) -> riarc_session_verdicts:learnt(Msg, Over, V) end)}.

told(Msg, S) ->
    {noreply, S1} = trusted(Msg, S),
    S1.

%% @private Whatever way the session ends, no analysis outlives it: nobody would watch its
%% budget or read its verdict.
terminate(_Reason, S = #session{analyses = As}) ->
    _ = [exit(An, kill) || An <- riarc_session_analyses:pids(As)],
    %% Whatever ended the session (its owner gone, say): the node's patterns are put
    %% back now, before anything unloads riarc's code (the keeper would do it too).
    _ = close(S),
    ok.

%%% Internals

%% The parts' state, updated.
tally(S = #session{tally = T}, F) -> S#session{tally = F(T)}.
%% The verdicts part is told why riarc detached, if it did (riarc_session_verdicts).
verdicts(S = #session{verdicts = V, limits = L}, F) ->
    S#session{verdicts = F(riarc_session_limits:overload(L), V)}.

add_error(E, S) -> tally(S, fun(T) -> riarc_session_tally:add_error(E, T) end).
violation(V, S) -> tally(S, fun(T) -> riarc_session_tally:violation(V, T) end).
forged(N, S = #session{limits = L}) -> S#session{limits = riarc_session_limits:add_forged(N, L)}.
overload_of(#session{limits = L}) -> riarc_session_limits:overload(L).

%% What the distribution part is told of the session.
ctx(#session{finished = F, stopping = Stopping, verdicts = V}) ->
    #{finished => F =/= undefined, stopping => Stopping, subscribed => riarc_session_verdicts:subscribed(V)}.

next(noreply, S) -> {noreply, S};
%% The run may be over now: every tracer here had ended, and the last followed child is
%% accounted for.
next(changed, S = #session{finished = undefined}) -> maybe_done(S);
next(changed, S) -> {noreply, S};
next(finish, S) -> done(stop_followers(close(S))).

%% The overload policy at What (riarc_session_overload:act/3).
overload(What, S = #session{limits = L, analyses = As}) ->
    {L1, Fx} = riarc_session_overload:act(What, L, As),
    perform(Fx, S#session{limits = L1}).

%% Cut detection, every ?VIEW_CHECK_MS and at close/1 (riarc_session_verdicts:view_check/2).
view_check(S) ->
    verdicts(S, fun(Over, V) -> riarc_session_verdicts:view_check(Over, V) end).

%% The effects of the analysis book, the overload part and the distribution part
%% (riarc_session_analyses, riarc_session_overload, riarc_distribution), in order.
perform(Fx, S) ->
    lists:foldl(fun effect/2, S, Fx).

effect({error, E}, S) ->
    add_error(E, S);
effect({forged, N}, S) ->
    forged(N, S);
effect({followed, Es}, S) ->
    verdicts(S, fun(_, V) -> riarc_session_verdicts:followed(Es, V) end);
effect({monitor, An}, S) ->
    _ = monitor(process, An),
    S;
effect({kill, An}, S) ->
    exit(An, kill),
    S;
effect({entry, Tracer, Steps, Verdict}, S) ->
    Log = maps:get(log, S#session.opts),
    verdicts(S, fun(Over, V) -> riarc_session_verdicts:set(Tracer, Steps, Verdict, Log, Over, V) end);
effect({warning, Format, Args}, S) ->
    logger:warning(Format, Args),
    S;
%% At once, not by a stop request (riarc_session_overload's detach/2 says why).
effect(detach, S = #session{backend = Backend}) ->
    ok = riarc_backend:close(Backend),
    _ = [exit(Pid, kill) || Pid <- maps:keys(S#session.tracers)],
    S;
effect({republish, Changed}, S) ->
    verdicts(S, fun(Over, V) -> riarc_session_verdicts:republish(Changed, Over, V) end);
effect({shed_count, Tracer}, S) ->
    verdicts(S, fun(Over, V) -> riarc_session_verdicts:shed_count(Tracer, Over, V) end);
effect(watchdog, S = #session{analyses = As, limits = L}) ->
    S#session{limits = riarc_session_limits:watchdog(riarc_session_analyses:any(As), L)}.

heap_words(#session{limits = L}) ->
    maps:get(heap_words, riarc_session_limits:budget(L), undefined).

close(S = #session{backend_closed = true}) -> S;
close(S0) ->
    %% The last look at the node's patterns, while this session still holds its own.
    S = #session{backend = Backend} = view_check(S0),
    riarc_backend:close(Backend),
    S#session{backend_closed = true}.

launch_result(T, Res, S = #session{launch = L = #launch{pending = P, error = E0}}) ->
    E = case E0 of ok -> Res; _ -> E0 end,
    case lists:delete(T, P) of
        [] ->
            _ = [gen_server:reply(W, E) || W <- L#launch.waiters],
            S#session{launch = #launch{pending = [], error = E, waiters = []}};
        P1 -> S#session{launch = L#launch{pending = P1, error = E}}
    end.

tracer_up(Pid, S0 = #session{tracers = T, token = Token}) ->
    _ = monitor(process, Pid),
    %% Race: a tracer started while the session settles is asked too; its starter
    %% announced it before it could answer.
    S = settling(fun(W) -> riarc_tracer:settle(Pid, Token, riarc_session_settle:ref(W)),
                           riarc_session_settle:up(Pid, W) end, S0),
    T1 = T#{Pid => true},
    verdicts(S#session{tracers = T1}, fun(_, V) -> riarc_session_verdicts:tracer_up(Pid, map_size(T1), V) end).

%% A step of settle/2's wait, if one is going on; its caller answered once nobody is left.
settling(_Step, S = #session{settling = undefined}) ->
    S;
settling(Step, S = #session{settling = W}) ->
    case Step(W) of
        {waiting, W1} -> S#session{settling = W1};
        {done, From} -> gen_server:reply(From, ok), S#session{settling = undefined}
    end.

%% A settle/2 still waiting is over: its caller is told how many tracers did not answer.
unsettled(S = #session{settling = undefined}) ->
    S;
unsettled(S = #session{settling = W}) ->
    gen_server:reply(riarc_session_settle:from(W), {error, {riarc_session, {unsettled, riarc_session_settle:left(W)}}}),
    S#session{settling = undefined}.

maybe_done(S = #session{tracers = T}) when map_size(T) > 0 ->
    {noreply, S};
maybe_done(S = #session{analyses = As}) ->
    case riarc_session_analyses:any(As) of
        %% Every process is untraced; the monitors are still at their partitions' events
        %% (each step within its budget). After stop/1, they get a grace period.
        true -> {noreply, grace(close(S))};
        false -> dist_done(S)
    end.

dist_done(S = #session{dist = Dist, stopping = Stopping}) ->
    %% Nodes being joined, children on followed nodes not accounted for yet
    %% (riarc_distribution's wait/2).
    case riarc_session_follow:wait(Stopping, Dist) of
        {wait, D1} -> {noreply, S#session{dist = D1}};
        {wait_closed, D1} -> {noreply, close(S#session{dist = D1})};
        done -> done(stop_followers(close(S)))
    end.

done(S = #session{waiters = Ws, stopping = Stopping}) ->
    S1 = S#session{finished = erlang:monotonic_time(microsecond), waiters = []},
    %% Made only for those who wait: one who asks later gets it made then (await), and
    %% listing tens of thousands of entries for nobody is the run's tail.
    _ = Ws =:= [] orelse begin
                             Result = {ok, result(S1)},
                             [gen_server:reply(W, Result) || W <- Ws]
                         end,
    case Stopping of
        true -> {stop, normal, S1};
        false -> {noreply, S1}
    end.

grace(S = #session{stopping = true, limits = L}) -> S#session{limits = riarc_session_limits:grace(L)};
grace(S) -> S.

stop_followers(S = #session{dist = D, cut = Cut}) ->
    S#session{dist = riarc_session_follow:stop_followers(Cut, D)}.

%% The partition a tracer started for, told.
part(Pid, Proc, MFA, Lineage, S) ->
    verdicts(S, fun(Over, V) -> riarc_session_verdicts:part(Pid, Proc, MFA, Lineage, Over, V) end).

analysers_of(Tracer, #session{analyses = As}) ->
    riarc_session_analyses:of_tracer(Tracer, As).

result(S = #session{limits = L}) ->
    End = case S#session.finished of undefined -> erlang:monotonic_time(microsecond); F -> F end,
    Entries = riarc_session_verdicts:entries(S#session.verdicts),
    riarc_session_tally:result(S#session.tally,
                               #{verdicts => entry_list(S), spec => S#session.spec,
                                 tracers => riarc_session_entries:counts(Entries),
                                 events => riarc_session_limits:events(L),
                                 forged => riarc_session_limits:forged(L),
                                 overload => riarc_session_limits:overload(L),
                                 duration_us => End - S#session.started}).

%% Every partition's entry, and the system's entries on followed nodes.
entry_list(S = #session{dist = Dist, finished = Finished}) ->
    riarc_session_verdicts:list(overload_of(S), S#session.verdicts)
        ++ riarc_session_follow:entries(Finished =/= undefined, Dist).
