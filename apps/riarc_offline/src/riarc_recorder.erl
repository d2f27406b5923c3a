%% @doc The recorder of riarc_offline:record/3: the system's one tracer, streaming each
%% event to a trace file as it comes, in bounded memory (the system's processes are
%% suspended while it catches up), and keeping in the file what a live run would have
%% seen of its own view being cut: a call of the system's that takes something away (a
%% CUT record, riarc_event's cut_event()), and what its look finds every second, as a
%% live tracer's does (flags taken or a tracer set by someone it does not trace, the
%% node's patterns changed, with how many events it had written when a look last found
%% them intact). A check of the file then reads the run as riarc:run/3 does.
%% Its replies are riarc_offline:record/3's.
%% ```
%% 1> Ref = make_ref(), spawn(riarc_recorder, recorder, [self(), Ref, {riarc_demo_pqr, p, []}, #{file => "/tmp/r.rtrc", format => binary, payloads => true, events => [send, recv], timeout => 10000, max_queue => 10000}]).
%% 2> receive {Ref, {ok, #{events := N}}} -> N > 0 end.
%% true
%% '''
-module(riarc_recorder).

%% Spawned entry point.
-export([recorder/4]).

%% How often the recorder looks at how the VM traces the system (a live tracer's rate).
-define(VIEW_LOOK_MS, 1000).

%% Cut detection: what took the recorder's view of which process, and its looks.
-record(view, {
              %% Taken from the recorder's tracing (a call of the system's, or found by a
              %% look): no exit of theirs will come.
              gone = #{} :: #{pid() => true},
              look = false :: boolean(),            % one may have been taken: look when quiet
              %% The processes whose view is already told cut (their own call, or a look).
              judged = #{} :: #{pid() => true},
              timer :: reference() | undefined,     % the look every ?VIEW_LOOK_MS
              patterns_changed = false :: boolean(),
              %% How many events were written when a look last found the node's tracing
              %% as riarc set it up (the init event, at the start): a check keeps the
              %% verdicts those events decide (riarc_offline), as a live run keeps those
              %% in at that look.
              intact_events = 1 :: pos_integer(),
              %% Where the looks are in the log of calls from outside that took flags.
              untrace_mark = {undefined, 0, 0} :: riarc_trace_pattern:untrace_mark()}).

-record(recorder, {caller :: pid(), ref :: reference(), w :: riarc_trace_file:writer(),
              patterns :: reference(),
              cfg :: riarc_backend_evm:config(), root :: pid(),
              live = #{} :: #{pid() => true},      % spawned, exit not seen yet
              early = #{} :: #{pid() => true},     % exit seen before the spawn
              events = 0 :: non_neg_integer(), max_queue :: pos_integer(),
              peak_queue = 0 :: non_neg_integer(), suspensions = 0 :: non_neg_integer(),
              deadline :: integer() | infinity, file :: file:filename_all(),
              started :: integer(), view = #view{} :: #view{}}).

%% @doc The recorder: the system's tracer, writing each event as it comes; it tells
%% Caller `{Ref, Reply}' once every process of the system has exited and the file is
%% closed (or at Opts' timeout).
-spec recorder(pid(), reference(), {module(), atom(), list()}, map()) -> ok.
recorder(Caller, Ref, MFA, Opts = #{file := File}) ->
    WOpts = maps:with([format, payloads], Opts),
    case riarc_trace_file:open_writer(File, WOpts) of
        {ok, W0} ->
            %% With the calls riarc holds patterns on: a timer set to send the atom
            %% `timeout' is written (its message reads as a timeout, riarc_analysis_core).
            Cfg = riarc_backend_evm:calls(riarc_backend_evm:config(maps:get(events, Opts))),
            %% riarc's receive pattern, as a live run holds it: the VM then marks a receive
            %% timeout, which is written as {timeout, P}, not as a receive of `timeout'.
            Patterns = make_ref(),
            ok = riarc_trace_pattern:hold(Patterns, self(), #{}),
            Root = riarc_backend_evm:spawn_paused(MFA),
            %% The root's init event, as riarc:run/3 gives it to the root's monitor.
            {ok, W} = riarc_trace_file:write_event(W0, {init, Root, Caller, MFA}),
            ok = riarc_backend_evm:launch(Cfg, Root, self()),
            Now = erlang:monotonic_time(millisecond),
            Deadline = case maps:get(timeout, Opts) of infinity -> infinity; T -> Now + T end,
            loop(#recorder{caller = Caller, ref = Ref, w = W, cfg = Cfg, root = Root, patterns = Patterns,
                      live = #{Root => true}, events = 1, max_queue = maps:get(max_queue, Opts),
                      deadline = Deadline, file = File,
                      started = erlang:monotonic_time(microsecond),
                      view = #view{timer = erlang:start_timer(?VIEW_LOOK_MS, self(), riarc_record_look),
                                   untrace_mark = riarc_trace_pattern:untrace_mark()}});
        Err ->
            Caller ! {Ref, Err},
            ok
    end.

loop(R = #recorder{live = L, early = X}) when map_size(L) =:= 0, map_size(X) =:= 0 ->
    %% Every process has exited, so every trace message has been produced; wait for the
    %% ones still travelling, then close.
    DRef = erlang:trace_delivered(all),
    drain(DRef, R);
loop(R) ->
    receive
        Msg -> loop(backpressure(take(Msg, R)))
    after wait_ms(R) ->
        case timeout_ms(R) of
            0 -> give_up(R);
            _ -> loop(look(R))
        end
    end.

give_up(R) ->
    untrace(R),
    ok = riarc_trace_pattern:release(R#recorder.patterns),
    _ = riarc_trace_file:close_writer(R#recorder.w),
    R#recorder.caller ! {R#recorder.ref, {error, {record_timeout, R#recorder.file, maps:keys(R#recorder.live)}}},
    ok.

%% After a cut that may have taken other processes from the recorder, or a look that
%% found an ended process still in the book, it looks, when the trace is quiet, for the
%% ones it no longer traces (riarc_backend_evm:untraced/3): they will show no exit, and
%% the file says their view was cut (lost/2).
-define(LOOK_MS, 100).

wait_ms(R = #recorder{view = #view{look = true}}) ->
    case timeout_ms(R) of
        infinity -> ?LOOK_MS;
        T -> min(T, ?LOOK_MS)
    end;
wait_ms(R) -> timeout_ms(R).

look(R = #recorder{live = L}) ->
    {Untraced, R1} = riarc_backend_evm:untraced(maps:keys(L), fun take/2, R),
    %% Every trace message made so far is in (untraced/3 waited for them): an end of a
    %% process whose spawn has still not come will never see it. Its parent had lost
    %% `procs' and kept `set_on_spawn' (riarc_trace_pattern:hides_children/1): a child
    %% traced, never seen to start, whose last call (all its flags off) read as its end.
    lists:foldl(fun lost/2, R1#recorder{early = #{}}, Untraced).

%% P, no longer traced by the recorder, will show no exit: unless a call of its own
%% told why already, its view is written cut, as a live look finds it.
lost(P, R = #recorder{live = L}) when not is_map_key(P, L) ->
    R;
lost(P, R = #recorder{view = #view{judged = J}}) when is_map_key(P, J) ->
    gone(P, R);
lost(P, R = #recorder{cfg = Cfg}) ->
    gone(P, judged(P, write({cut, P, riarc_backend_evm:why_lost(P, Cfg)}, R))).

judged(P, R = #recorder{view = V = #view{judged = J}}) -> R#recorder{view = V#view{judged = J#{P => true}}}.

looking(R = #recorder{view = V}) -> R#recorder{view = V#view{look = true}}.

%% P will show no exit (once: its exit may have come meanwhile).
gone(P, R = #recorder{live = L}) when not is_map_key(P, L) ->
    R;
gone(P, R = #recorder{live = L, view = V = #view{gone = G}}) ->
    R#recorder{live = maps:remove(P, L), view = V#view{gone = G#{P => true}}}.

drain(DRef, R) ->
    receive
        {trace_delivered, all, DRef} -> done(drain_now(R));
        Msg -> drain(DRef, take(Msg, R))
    end.

drain_now(R) ->
    receive
        Msg -> drain_now(take(Msg, R))
    after 0 -> R
    end.

done(R0) ->
    %% The last look, as riarc's session makes one when it lets go of the node's patterns.
    R = #recorder{w = W} = patterns_look(R0),
    ok = riarc_trace_pattern:release(R#recorder.patterns),
    Reply = case riarc_trace_file:close_writer(W) of
                ok -> {ok, #{file => R#recorder.file, events => R#recorder.events, root => R#recorder.root,
                             peak_queue => R#recorder.peak_queue, suspensions => R#recorder.suspensions,
                             duration_us => erlang:monotonic_time(microsecond) - R#recorder.started}};
                Err -> Err
            end,
    R#recorder.caller ! {R#recorder.ref, Reply},
    ok.

timeout_ms(#recorder{deadline = infinity}) -> infinity;
timeout_ms(#recorder{deadline = D}) -> max(0, D - erlang:monotonic_time(millisecond)).

take({timeout, TRef, riarc_record_look}, R = #recorder{view = #view{timer = TRef}}) ->
    R1 = view_look(R),
    Timer = erlang:start_timer(?VIEW_LOOK_MS, self(), riarc_record_look),
    R1#recorder{view = (R1#recorder.view)#view{timer = Timer}};
take(Msg, R) ->
    case recorded(Msg) of
        {ok, Ev} -> write(Ev, R);
        _ -> R
    end.

write(Ev, R = #recorder{w = W}) ->
    case riarc_trace_file:write_event(W, Ev) of
        {ok, W1} -> account(Ev, R#recorder{w = W1, events = R#recorder.events + 1});
        {error, Why} -> exit({write_failed, Why})
    end.

%% Cut detection by looking, as a live tracer's (riarc_tracer) and session's: a live
%% process the VM no longer traces as the recorder set it up, by someone it does not
%% trace (a traced process's own call is in the file already, as its call), is written
%% as a cut of its view, once; one that lost its spawn and exit events will show no exit.
%% The node's patterns changed by someone else: a cut of every view, written once, as
%% the root's (no process of the system made it).
%% Race: a process whose flags were taken may end before the look, with no exit to
%% come: an ended process still in the book makes the recorder probe it when quiet
%% (look/1, lost/2), after every trace message made so far is in.
view_look(R = #recorder{cfg = Cfg, live = L, view = #view{judged = J}}) ->
    R1 = riarc_backend_evm:fold_looked([P || P <- maps:keys(L), not is_map_key(P, J)], Cfg,
                                       fun(P, Why, Acc) -> judged(P, write({cut, P, Why}, Acc)) end,
                                       fun gone/2, R),
    Ended = lists:any(fun(P) -> not is_process_alive(P) end, maps:keys(R1#recorder.live)),
    patterns_look(case Ended of
                      true -> looking(R1);
                      false -> R1
                  end).

patterns_look(R = #recorder{view = #view{patterns_changed = true}}) ->
    R;
patterns_look(R0 = #recorder{root = Root, view = V}) ->
    {Look, Mark} = riarc_trace_pattern:look(V#view.untrace_mark),
    R = R0#recorder{view = V#view{untrace_mark = Mark}},
    case Look of
        ok -> R#recorder{view = (R#recorder.view)#view{intact_events = R#recorder.events}};
        {changed, Info} ->
            Intact = (R#recorder.view)#view.intact_events,
            R1 = write({cut, Root, {patterns_changed, Info#{intact_events => Intact}}}, R),
            R1#recorder{view = (R1#recorder.view)#view{patterns_changed = true}}
    end.

%% A trace message as the event a live run gives, under riarc's receive pattern (held by
%% the recorder): a marked timeout is {timeout, P}, anything else received a receive.
recorded(Msg) when is_tuple(Msg), tuple_size(Msg) >= 3, element(1, Msg) =:= trace ->
    riarc_trace_dbg:vm_event(Msg, true);
recorded(_) ->
    skip.

%% Who is still alive. The VM may deliver a child's exit before its parent's spawn
%% event, so an exit of a process not yet known is remembered until its spawn arrives.
account({spawn, _, C, _}, R = #recorder{live = L, early = X}) ->
    case maps:take(C, X) of
        {_, X1} -> R#recorder{early = X1};
        error -> R#recorder{live = L#{C => true}}
    end;
account({exit, P, _}, R = #recorder{view = #view{gone = G}}) when is_map_key(P, G) ->
    R;
account({exit, P, _}, R = #recorder{live = L, early = X}) ->
    case maps:take(P, L) of
        {_, L1} -> R#recorder{live = L1};
        error -> R#recorder{early = X#{P => true}}
    end;
%% A process that turns off all of its own flags sends nothing more, not even its exit
%% (as riarc_tracer_core reads the same call); any other cut may have taken others.
account({cut, P, {trace, [P, false, Flags]}}, R0) when is_list(Flags) ->
    %% Judged by its own call: a look that finds its flags gone adds nothing (as a live
    %% tracer's, riarc_tracer_parts:own_call_cut/2).
    R = judged(P, R0),
    case lists:member(all, Flags) of
        %% As at an exit: its spawn may not be known yet, or never be (look/1).
        true ->
            R1 = account({exit, P, cut}, R),
            V = R1#recorder.view,
            R2 = R1#recorder{view = V#view{gone = (V#view.gone)#{P => true}}},
            case is_map_key(P, R2#recorder.early) of
                true -> looking(R2);
                false -> R2
            end;
        false -> R
    end;
account({cut, P, {trace, [P | _]}}, R) ->
    looking(judged(P, R));
account({cut, _, {trace, _}}, R) ->
    looking(R);
account(_, R) -> R.

%% Bounded memory: above max_queue messages waiting, the live processes are suspended
%% while the recorder catches up to half of it. (A process spawned but not yet known
%% runs on; its parent, which is known, is stopped.)
backpressure(R = #recorder{max_queue = Max}) ->
    {message_queue_len, Q} = process_info(self(), message_queue_len),
    R1 = R#recorder{peak_queue = max(Q, R#recorder.peak_queue)},
    case Q > Max of
        false -> R1;
        true ->
            Suspended = [P || P <- maps:keys(R1#recorder.live), suspend(P)],
            R2 = catch_up(Max div 2, R1),
            _ = [catch erlang:resume_process(P) || P <- Suspended],
            R2#recorder{suspensions = R2#recorder.suspensions + 1}
    end.

suspend(P) ->
    P =/= self() andalso (catch erlang:suspend_process(P)) =:= true.

catch_up(Low, R) ->
    case process_info(self(), message_queue_len) of
        {message_queue_len, Q} when Q > Low ->
            receive Msg -> catch_up(Low, take(Msg, R)) end;
        _ -> R
    end.

untrace(#recorder{live = L}) ->
    _ = [catch riarc_untrace:untrace(P) || P <- maps:keys(L)],
    ok.

