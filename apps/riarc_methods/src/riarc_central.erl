%% @doc Centralised outline monitoring (000 fig. 1b), to compare riarc against: ONE tracer
%% for the whole system receives the global trace and demultiplexes it into per-process
%% monitors by parametric trace slicing (000 App. C.5.2). A slice (a monitor with its
%% state) is created when its process first appears and dropped once its analysis ends.
%%
%% The partitions are riarc's, so that verdicts compare one to one: a process Λ selects
%% gets a slice of its own; a process Λ does not select belongs to its parent's slice.
%% What differs is where the work happens: every event of the system goes through one
%% mailbox and one process, with no routing and no takeovers. Under load that tracer falls
%% behind and its mailbox grows, which is what the comparison is about; nothing here slows
%% the system down to let it keep up.
%% ```
%% 1> Spec = fun(_) -> {ok, fun M({exit, _, normal}) -> accept; M(_) -> M end} end.
%% 2> {ok, R} = riarc_central:run({riarc_demo_pqr, p, []}, Spec, #{}).
%% 3> [{maps:get(mfa, V), maps:get(verdict, V)} || V <- maps:get(verdicts, R)].
%% [{{riarc_demo_pqr,p,[]},accept},{{riarc_demo_pqr,q,[]},accept},{{riarc_demo_pqr,r,[]},accept}]
%% 4> maps:with([tracers, events], R).
%% #{events => 9,tracers => #{peak => 1,spawned => 1}}
%% '''
%% A slice's monitor steps as a partition's does under riarc (riarc_analysis_core), so
%% each entry reads as riarc's would: the verdict, why it was reached, a reject's
%% explanation (riarc's option `explain'), and `inconclusive' for a verdict reached on a
%% message cut at `max_payload' (riarc's limit). The comparison then measures methods
%% that produce the same result, not one that says less.
%% A call of the system's that may take events away from the tracer (erlang:trace/3,
%% erlang:trace_pattern/3: a cut) makes the entries it may have changed errors, as riarc's,
%% and a process it took out of view does not keep the run waiting for its exit.
%% Options and result are those of {@link riarc:run/3}; `invariants' and `perturb' are
%% accepted and have nothing to act on. `trace_patterns' (by default a property module's,
%% as for riarc) are installed as riarc installs them ({@link riarc_trace_pattern}): the
%% VM traces only the messages they keep, for this method as for riarc.
-module(riarc_central).

-export([run/3, format_error/1]).
-export_type([error_reason/0]).

%% The run's own errors, and run/3's arguments refused by riarc:validate/3.
-type error_reason() :: {central_tracer_crashed, term()}
                      | {timeout, timeout(), Alive :: [pid()] | unknown}
                      | {riarc, riarc:error_reason()}.
%% Spawned entry point.
-export([tracer_init/5]).

%% A slice: its monitor's analysis (riarc_analysis_core), or its entry once decided.
-record(slice, {mfa :: riarc_event:mfa_args(),
                analysis :: riarc_analysis_core:t() | {decided, riarc_result:verdict_entry()},
                members = 1 :: non_neg_integer(),    % processes of the slice still alive
                cut = none :: none | map()}).         % what cut its view, as riarc's cut/4

%% How often the tracer looks at how the VM traces the system (riarc's tracers' rate).
-define(VIEW_LOOK_MS, 1000).

%% Cut detection: what took this tracer's view, and its looks at how the VM traces the
%% system (as riarc's tracers and session look).
-record(view, {
             %% Taken from this tracer's view (a call of the system's, or found by a
             %% look): no exit of theirs is waited for, and one that still comes is dropped.
             gone = #{} :: #{pid() => true},
             node_cut = none :: none | map(),       % the first cut of every slice's view
             look = false :: boolean(),             % one may have been taken: look when quiet
             %% Processes whose view is told cut already (their own call, or a look).
             judged = #{} :: #{pid() => true},
             timer :: reference() | undefined,      % the look every ?VIEW_LOOK_MS
             %% The processes still to look at in this round (riarc_backend:look_slice/2).
             look_queue = [] :: [pid()],
             patterns_changed = false :: boolean(),
             %% The slices (by key) whose verdict was in at the last look that found the
             %% node's tracing as riarc left it: only those stand a change found later.
             decided_at_look = #{} :: #{pid() => true},
             %% Where the looks are in the log of calls from outside that took flags.
             untrace_mark = {undefined, 0, 0} :: riarc_trace_pattern:untrace_mark()}).

-record(central, {owner :: pid(),
             ref :: reference(),
             config :: riarc_backend_evm:config(),
             lambda :: riarc_lambda:t(),
             log :: boolean(),
             explain :: non_neg_integer(),                        % riarc's option explain
             max_payload :: pos_integer() | infinity,
             slice_of = #{} :: #{pid() => pid() | unmonitored},  % process -> its slice's key
             slices = #{} :: #{pid() => #slice{}},                % open slices
             closed = [] :: [map()],                              % verdict entries, newest first
             live = #{} :: #{pid() => true},                      % traced, not yet exited
             view = #view{} :: #view{},                           % cut detection
             pending = riarc_reorder:new() :: riarc_reorder:t(),  % App. B reordering
             events = 0 :: non_neg_integer(),
             analysed = 0 :: non_neg_integer(),
             reordered = 0 :: non_neg_integer(),
             errors = [] :: [term()],
             started :: integer()}).

%% @doc Runs {M, F, Args} as the root of a system under centralised monitoring and returns
%% once every process of the system has exited and its events are analysed.
-spec run({module(), atom(), list()}, riarc_lambda:spec(), riarc:opts()) ->
    {ok, riarc_result:t()} | {error, {?MODULE, error_reason()}}.
run(MFA, Spec, Opts) ->
    case riarc:validate(MFA, Spec, Opts) of
        {ok, Valid = #{timeout := Timeout, events := Events, log := Log, trace_patterns := Patterns}} ->
            %% With the calls riarc holds patterns on, as its backends: a timer set to
            %% send the atom `timeout' is one (riarc_analysis_core reads that message).
            Config = riarc_backend_evm:calls(riarc_backend_evm:config(Events)),
            %% The messages the VM traces at all: the trace patterns riarc's session would
            %% hold (a property module's, else every message), installed the same way
            %% (riarc_trace_pattern), so that both methods see the same events and a
            %% comparison of the two compares methods, not filters. Held by this process
            %% for the run (the keeper lets go should it die).
            Key = make_ref(),
            ok = riarc_trace_pattern:hold(Key, self(), Patterns),
            try
                Root = riarc_backend_evm:spawn_paused(MFA),
                Ref = make_ref(),
                Tracer = spawn_opt(?MODULE, tracer_init,
                                   [self(), Ref, Config, {Root, MFA},
                                    #{spec => Spec, log => Log, explain => maps:get(explain, Valid),
                                      max_payload => maps:get(max_payload, riarc_opts:limits(Valid))}],
                                   %% The one tracer's mailbox holds the backlog of the whole
                                   %% system: off the heap, a garbage collection does not copy
                                   %% it. Its heap holds every process's monitor, as riarc's
                                   %% root tracer holds every partition it adopts: generational,
                                   %% as that one's (riarc_tracer's ROOT_OPTS), so that both
                                   %% methods collect alike.
                                   [{message_queue_data, off_heap}]),
                await(Tracer, Ref, Root, Timeout)
            after
                riarc_trace_pattern:release(Key)
            end;
        {error, {riarc, _} = Error} -> {error, {?MODULE, Error}}
    end.

await(Tracer, Ref, Root, Timeout) ->
    Mon = erlang:monitor(process, Tracer),
    receive
        {Ref, Result} ->
            erlang:demonitor(Mon, [flush]),
            {ok, Result};
        {'DOWN', Mon, process, Tracer, Reason} ->
            exit(Root, kill),
            {error, {?MODULE, {central_tracer_crashed, Reason}}}
    after Timeout ->
            Alive = alive(Tracer, Ref),
            erlang:demonitor(Mon, [flush]),
            exit(Tracer, kill),
            {error, {?MODULE, {timeout, Timeout, Alive}}}
    end.

alive(Tracer, Ref) ->
    Tracer ! {Ref, alive, self()},
    receive {Ref, alive, Pids} -> Pids
    after 1000 -> unknown
    end.

%%% The tracer ---------------------------------------------------------------------------

%% @private
-spec tracer_init(pid(), reference(), riarc_backend_evm:config(),
                  {pid(), riarc_event:mfa_args()}, map()) -> no_return().
tracer_init(Owner, Ref, Config, {Root, MFA}, #{spec := Spec, log := Log, explain := Explain,
                                               max_payload := Max}) ->
    St0 = #central{owner = Owner, ref = Ref, config = Config, lambda = riarc_lambda:new(Spec),
              log = Log, explain = Explain, max_payload = Max, live = #{Root => true},
              started = erlang:monotonic_time(microsecond)},
    %% The root's spawn is not traced (it happens before tracing starts): its slice is
    %% opened here, and it gets the init event riarc's root tracer gives it (Alg. 6 ROOT).
    St1 = open(Root, MFA, unmonitored, St0),
    St2 = analyse({init, Root, Owner, MFA}, St1),
    ok = riarc_backend_evm:launch(Config, Root, self()),
    loop(St2#central{view = #view{timer = erlang:start_timer(?VIEW_LOOK_MS, self(), riarc_central_look),
                                  untrace_mark = riarc_trace_pattern:untrace_mark()}}).

loop(St) ->
    receive
        Msg -> next(take(Msg, St))
    after wait_ms(St) ->
            next(look(St))
    end.

take({Ref, alive, From}, St = #central{ref = Ref}) ->
    From ! {Ref, alive, maps:keys(St#central.live)},
    St;
take({timeout, TRef, riarc_central_look}, St = #central{view = #view{timer = TRef}}) ->
    St1 = view_look(St),
    Timer = erlang:start_timer(?VIEW_LOOK_MS, self(), riarc_central_look),
    St1#central{view = (St1#central.view)#view{timer = Timer}};
take(Msg, St) ->
    case riarc_backend_evm:event(St#central.config, Msg) of
        {ok, Event} -> handle(Event, St#central{events = St#central.events + 1});
        _ -> St
    end.

%% After a cut that may have taken other processes from this tracer (another's flags, a
%% tracer set), or a look that found an ended process still live here, it looks, when its
%% mailbox is quiet, for the live ones it no longer traces: they will show no exit. Their
%% trace messages made so far are taken first.
-define(LOOK_MS, 100).

wait_ms(#central{view = #view{look = false}}) -> infinity;
wait_ms(_) -> ?LOOK_MS.

look(St = #central{live = Live}) ->
    {Untraced, St1} = riarc_backend_evm:untraced(maps:keys(Live), fun take/2, St),
    lists:foldl(fun lost/2, St1, Untraced).

%% P, no longer traced here, will show no exit: unless a call told why already, its
%% slice's view is cut, as a look finds it.
lost(P, St = #central{live = Live}) when not is_map_key(P, Live) ->
    St;
lost(P, St = #central{view = #view{judged = J}}) when is_map_key(P, J) ->
    gone(P, St);
lost(P, St = #central{config = Config}) ->
    gone(P, looked_cut(P, riarc_backend_evm:why_lost(P, Config), St)).

%% Cut detection by looking, as riarc's tracers and session look: a live process the VM
%% no longer traces as this tracer set it up, by someone it does not trace, has its
%% slice's view cut whatever its verdict (the change came at some time before the look);
%% one left with the flags a child inherits cuts every view (riarc_tracer_core's
%% view_lost/3); one left without its spawn and exit events leaves. The node's patterns
%% changed by someone else cut every view.
%% Race: a process whose flags were taken may end before the look, with no exit to
%% come: an ended process still live here makes the tracer look when quiet (lost/2).
%% Of many processes, some a look, in turn, as riarc's tracers look.
view_look(St = #central{config = Config, live = Live, view = #view{judged = J, look_queue = Queue}}) ->
    {Slice, Rest} = riarc_backend:look_slice(Queue, fun() -> maps:keys(Live) end),
    St1 = riarc_backend_evm:fold_looked([P || P <- Slice, is_map_key(P, Live), not is_map_key(P, J)], Config,
                                        fun looked_cut/3, fun gone/2, St),
    Ended = lists:any(fun(P) -> is_map_key(P, St1#central.live) andalso not is_process_alive(P) end, Slice),
    V = St1#central.view,
    patterns_look(St1#central{view = V#view{look = V#view.look orelse Ended, look_queue = Rest}}).

looked_cut(P, Why, St) ->
    St1 = judged(P, case maps:get(P, St#central.slice_of, unmonitored) of
                        unmonitored -> St;
                        Key ->
                            case St#central.slices of
                                #{Key := Sl} -> put_slice(Key, Sl#slice{cut = #{process => P, call => Why}}, St);
                                #{} -> St
                            end
                    end),
    case riarc_trace_pattern:lost_scope(Why) of
        inherited -> node_cut(P, {inherited, Why}, St1);
        own -> St1
    end.

%% A change found by looking was made at some time since the last look: only the verdicts
%% in by then stand, as in riarc's session (riarc_session_verdicts:view_check/2).
patterns_look(St = #central{view = #view{patterns_changed = true}}) ->
    St;
patterns_look(St = #central{view = V0}) ->
    {Look, Mark} = riarc_trace_pattern:look(V0#view.untrace_mark),
    V = V0#view{untrace_mark = Mark},
    case Look of
        ok -> St#central{view = V#view{decided_at_look = decided(St)}};
        {changed, Info} ->
            node_cut(undefined, {patterns_changed, Info}, V#view.decided_at_look,
                     St#central{view = V#view{patterns_changed = true}})
    end.

%% The keys of the slices whose verdict (accept or reject) is in.
decided(#central{slices = Slices, closed = Closed}) ->
    maps:from_list([{K, true} || {K, #slice{analysis = {decided, E}}} <- maps:to_list(Slices),
                                 decided_before(E)]
                   ++ [{P, true} || E = #{pid := P} <- Closed, decided_before(E)]).

judged(P, St = #central{view = V = #view{judged = J}}) ->
    St#central{view = V#view{judged = J#{P => true}}}.

%% P leaves as at an exit, but without one for its monitor to step (once: its exit may
%% have come meanwhile).
gone(P, St = #central{live = Live}) when not is_map_key(P, Live) ->
    St;
gone(P, St = #central{live = Live, view = V = #view{gone = Gone}}) ->
    leave(P, St#central{live = maps:remove(P, Live), view = V#view{gone = Gone#{P => true}}}).

%% The run is over when no traced process is alive. A child is added to `live' when its
%% parent's spawn is handled, which is before the parent's exit (one process's events
%% arrive in order), so `live' cannot empty while a process is still to come.
next(St = #central{live = Live}) when map_size(Live) =:= 0 -> finish(St);
next(St) -> loop(St).

%% App. B reordering: a process's own events arrive in order, but a child's may arrive
%% before its parent's spawn event (the VM does not keep A4). An event of a process not
%% yet known waits until that spawn is handled.
handle(E = {spawn, P, C, MFA}, St) ->
    case known(P, St) of
        false -> hold(P, E, St);
        true ->
            St1 = analyse(E, St),
            flush(C, open(C, MFA, maps:get(P, St1#central.slice_of), St1#central{live = (St1#central.live)#{C => true}}))
    end;
handle(E = {exit, S, _}, St) ->
    case known(S, St) of
        false -> hold(S, E, St);
        true -> leave(S, analyse(E, St#central{live = maps:remove(S, St#central.live)}))
    end;
%% A timer P set to send the atom `timeout', which the VM traces as a receive timeout:
%% read as riarc reads it (riarc_analysis_core:timer_reading/2).
handle(E = {timer_timeout, P, Dest}, St) ->
    Other = fun(S) -> S#central{errors = [{riarc_session, {ambiguous_timer, #{process => P, to => Dest}}}
                                          | S#central.errors]}
            end,
    case known(P, St) andalso riarc_analysis_core:timer_reading(P, Dest) of
        false -> hold(P, E, St);
        own -> analyse({timer_timeout, P, P}, St);
        both -> Other(analyse({timer_timeout, P, P}, St));
        other -> Other(St)
    end;
%% A call of P's that may take away what the tracer sees: the view is cut as riarc cuts
%% it (riarc_session_entries:cut/4). The monitor is not stepped: it is no event of the
%% property's.
handle(E = {cut, P, Why}, St) ->
    case known(P, St) of
        false -> hold(P, E, St);
        true -> cut(P, Why, St)
    end;
%% The other calls riarc holds patterns on (starts on other nodes): riarc's own
%% detection, which this method does not take part in.
handle(E, St) when element(1, E) =:= ignored; element(1, E) =:= remote_spawn ->
    St;
handle(E, St) ->
    S = riarc_event:origin(E),
    case known(S, St) of
        false -> hold(S, E, St);
        true -> analyse(E, St)
    end.

known(S, #central{slice_of = Of}) -> is_map_key(S, Of).

%% A process that left at a cut has nothing more to tell: its slice may be gone.
hold(S, _E, St = #central{view = #view{gone = Gone}}) when is_map_key(S, Gone) ->
    St;
hold(S, E, St = #central{pending = P}) ->
    St#central{pending = riarc_reorder:hold(S, E, P), reordered = St#central.reordered + 1}.

flush(C, St = #central{pending = P}) ->
    {Es, Rest} = riarc_reorder:release(C, P),
    lists:foldl(fun handle/2, St#central{pending = Rest}, Es).

%% P changed its own flags: its slice's view is cut, unless its verdict is in. Turning
%% them all off, P sends nothing more, not even its exit: it leaves here. Any other call
%% cuts every slice's view, and so does P's own when its later children inherit what is
%% left (riarc_trace_pattern:cut_scope/2); a call of erlang:trace/3 other than P's own
%% removal of all its flags may have taken other processes, which the tracer then looks
%% for.
cut(P, Why, St) ->
    case riarc_trace_pattern:cut_scope(P, Why) of
        own -> own_cut(P, Why, St);
        %% What P's later children inherit may cut any slice's view.
        inherited -> node_cut(P, Why, own_cut(P, Why, St));
        all -> node_cut(P, Why, St)
    end.

own_cut(P, Why = {trace, [P | Args]}, St) ->
    St1 = judged(P, case maps:get(P, St#central.slice_of) of
                        unmonitored -> St;
                        Key -> cut_slice(Key, #{process => P, call => Why}, St)
                    end),
    case Args of
        [false, Flags] when is_list(Flags) ->
            case lists:member(all, Flags) of
                true -> gone(P, St1);
                false -> look_after(Why, St1)
            end;
        _ -> look_after(Why, St1)
    end.

%% A slice whose own view was cut already keeps that cut (riarc's session reads a
%% partition's own cut first); an inherited cut is told by the call that made it.
node_cut(P, Why, St) ->
    node_cut(P, Why, now, St).

%% Stand: the slices whose verdict stands the cut, `now' for every one decided by now (a
%% call seen in order), or those decided at the last look (a change found by looking).
node_cut(P, Why, Stand, St = #central{view = #view{node_cut = none}}) ->
    Info = #{process => P, call => case Why of {inherited, Call} -> Call; _ -> Why end},
    Slices = maps:map(fun(_, Sl = #slice{cut = none}) -> slice_cut(Info, Stand, Sl);
                         (_, Sl) -> Sl
                      end, St#central.slices),
    Closed = [case decided_before(E) andalso stands(Stand, maps:get(pid, E)) of
                  true -> E;
                  false -> riarc_result:seen_cut(Info, E)
              end || E <- St#central.closed],
    St1 = St#central{view = (St#central.view)#view{node_cut = Info}, slices = Slices, closed = Closed},
    look_after(Why, St1);
node_cut(_P, Why, _Stand, St) ->
    look_after(Why, St).

%% Whether the verdict of the slice K, in by now, was in soon enough for Stand.
stands(now, _K) -> true;
stands(Decided, K) -> is_map_key(K, Decided).

look_after({trace, _}, St = #central{view = V}) -> St#central{view = V#view{look = true}};
look_after(_, St) -> St.

cut_slice(Key, Info, St = #central{slices = Slices}) ->
    case Slices of
        #{Key := Sl} -> put_slice(Key, slice_cut(Info, now, Sl), St);
        #{} -> St
    end.

%% Verdicts in before a cut stand (accept and reject are final), those in soon enough
%% for Stand (stands/2).
slice_cut(Info, Stand, Sl = #slice{analysis = An}) ->
    case An of
        {decided, E = #{pid := K}} ->
            case decided_before(E) andalso stands(Stand, K) of
                true -> Sl;
                false -> Sl#slice{cut = Info}
            end;
        _ -> Sl#slice{cut = Info}
    end.

decided_before(#{verdict := V}) -> V =:= accept orelse V =:= reject.

%% App. C.5.2 slicing: a process Λ selects opens a slice keyed by itself; any other joins
%% the slice of its parent (riarc's partitions, 000 §3). After a cut of every slice's
%% view, a new one's is cut from its start.
open(C, MFA, ParentSlice, St = #central{lambda = L, slice_of = Of, slices = Slices}) ->
    case riarc_lambda:lookup(L, MFA) of
        {ok, Mon} ->
            An = riarc_analysis_core:new(C, St#central.explain, {C, MFA}, Mon),
            Sl = #slice{mfa = MFA, analysis = An, cut = (St#central.view)#view.node_cut},
            St#central{slice_of = Of#{C => C}, slices = Slices#{C => Sl}};
        Other ->
            St1 = case Other of
                      {error, Reason} -> St#central{errors = [{riarc_spec_error, C, MFA, Reason} | St#central.errors]};
                      undefined -> St
                  end,
            join(C, ParentSlice, St1)
    end.

join(C, unmonitored, St) -> St#central{slice_of = (St#central.slice_of)#{C => unmonitored}};
join(C, Key, St = #central{slices = Slices}) ->
    St1 = St#central{slice_of = (St#central.slice_of)#{C => Key}},
    case Slices of
        #{Key := Sl} -> St1#central{slices = Slices#{Key := Sl#slice{members = Sl#slice.members + 1}}};
        #{} -> St1                                      % the slice already ended
    end.

%% ANALYSEEVT (App. C.5.2) on the slice the event's process belongs to.
analyse(E, St = #central{slice_of = Of, slices = Slices}) ->
    case maps:get(riarc_event:origin(E), Of) of
        unmonitored -> St;
        Key ->
            case Slices of
                #{Key := #slice{analysis = {decided, _}}} -> St;   % no more events
                #{Key := Sl = #slice{analysis = An}} ->
                    St1 = St#central{analysed = St#central.analysed + 1},
                    case riarc_analysis_core:step(riarc_event:truncate(E, St#central.max_payload), An) of
                        {next, An1, _} -> put_slice(Key, Sl#slice{analysis = An1}, St1);
                        {done, _, Told} -> decided(Key, Sl, Told, St1)
                    end;
                #{} -> St
            end
    end.

put_slice(Key, Sl, St) -> St#central{slices = (St#central.slices)#{Key := Sl}}.

%% Verdicts are irrevocable: the slice stays (its members still need counting) but its
%% monitor is gone, and the verdict is reported at once.
decided(Key, Sl, Told, St) ->
    Entry = riarc_analysis_core:entry(Told),
    log(Entry, St),
    put_slice(Key, Sl#slice{analysis = {decided, Entry}}, St).

%% A process of a slice exited; the slice is dropped with its last process.
leave(S, St = #central{slice_of = Of, slices = Slices}) ->
    St1 = St#central{slice_of = maps:remove(S, Of)},
    case maps:get(S, Of) of
        unmonitored -> St1;
        Key ->
            case Slices of
                #{Key := Sl = #slice{members = 1}} ->
                    close(Sl, St1#central{slices = maps:remove(Key, Slices)});
                #{Key := Sl = #slice{members = M}} ->
                    St1#central{slices = Slices#{Key := Sl#slice{members = M - 1}}};
                #{} -> St1
            end
    end.

%% Careful: a process is dropped from slice_of at its exit, but its children may still
%% spawn into the slice; join/3 keys on the slice, not on the parent, so that works.
close(#slice{analysis = {decided, Entry}, cut = Cut}, St) ->
    St#central{closed = [riarc_result:seen_cut(Cut, Entry) | St#central.closed]};
close(#slice{analysis = An, cut = Cut}, St) ->
    Entry = riarc_result:seen_cut(Cut, riarc_analysis_core:entry(riarc_analysis_core:finish(An))),
    log(Entry, St),
    St#central{closed = [Entry | St#central.closed]}.

log(Entry, #central{log = Log}) ->
    riarc_result:log_verdict(Log, " (centralised)", Entry).

%% Slices still open when the last process exited cannot happen (each closes with its last
%% member); events still pending belong to processes whose spawn never arrived, and are
%% reported rather than dropped.
-spec finish(#central{}) -> no_return().
finish(St0) ->
    %% The last look, as riarc's session makes one when it lets go of the node's patterns:
    %% a change since the last one cuts what was decided since.
    St = patterns_look(St0),
    #central{owner = Owner, ref = Ref, slices = Open, pending = Pending} = St,
    Left = [riarc_result:entry(K, MFA, error, analysed(Sl), slice_not_closed)
            || {K, Sl = #slice{mfa = MFA}} <- maps:to_list(Open)],
    Errors = [{riarc_incomplete, self(), riarc_reorder:to_map(Pending)}
              || not riarc_reorder:is_empty(Pending)] ++ lists:reverse(St#central.errors),
    Result = riarc_result:make(#{verdicts => lists:reverse(St#central.closed) ++ Left,
                                 tracers => #{spawned => 1, peak => 1},
                                 events => St#central.events, analysed => St#central.analysed,
                                 reordered => St#central.reordered, errors => Errors,
                                 duration_us => erlang:monotonic_time(microsecond) - St#central.started}),
    Owner ! {Ref, Result},
    exit(normal).

analysed(#slice{analysis = {decided, #{events := N}}}) -> N;
analysed(#slice{analysis = An}) -> riarc_analysis_core:analysed(An).

%% @doc A sentence for an error run/3 returned.
-spec format_error(error_reason()) -> string().
format_error({central_tracer_crashed, Reason}) ->
    flat("the central tracer crashed: ~0tP", [Reason, 20]);
format_error({timeout, T, Alive}) when is_list(Alive) ->
    flat("timed out after ~b ms with ~b traced process(es) still alive: ~0tp",
         [T, length(Alive), lists:sublist(Alive, 10)]);
format_error({timeout, T, unknown}) ->
    flat("timed out after ~b ms; the central tracer did not say what is alive", [T]);
format_error({riarc, Reason}) ->
    riarc:format_error(Reason).

flat(F, A) -> lists:flatten(io_lib:format(F, A)).
