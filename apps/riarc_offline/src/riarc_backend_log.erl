%% @doc The offline tracing backend: TRACE, CLEAR and PREEMPT (Alg. 5) over a replayed
%% event stream, so that the very same tracer code ({@link riarc_tracer}) that runs on
%% the live VM checks a recorded run (§4.1, App. B.1 of the RIARC paper).
%%
%% One engine process per replay reads the events in file order and deposits each in the
%% mailbox of the tracer that traces its originator, as `{riarc_offline_evt, Ref, Event}'.
%% It keeps the tracing assumptions the tracer relies on:
%% <ul>
%% <li>A1: a tracer traces a set of processes (its set S_T);</li>
%% <li>A2: when a spawn event is delivered to T, the child joins S_T (inheritance);</li>
%% <li>A3: a process has at most one tracer; PREEMPT moves it from one set to another;</li>
%% <li>A4: a recorded run need not list a child's events after its parent's spawn event
%%     (the VM delivers them in either order). Events of a process no set holds yet are
%%     held back (the buffer B of App. B.1) and released, in their own order, right after
%%     the spawn event that creates the process is delivered (Example 7); a consistent
%%     input is delivered unchanged (Example 9).</li>
%% </ul>
%% The engine serves TRACE/PREEMPT/CLEAR between any two events it delivers, so tracers
%% race with the replay as they race with a live system.
%%
%% The buffer B is bounded (`max_held', 1 000 000 events by default): a file whose
%% processes are never spawned must not grow it without limit. When an event would
%% overflow it, that event's process is given up: its held events are dropped, and so
%% are its later ones, and the summary names it in `overflowed' with how many of its
%% events were lost, so that the check gives it the verdict `error' (never a silent
%% drop).
%% ```
%% 1> {ok, E} = riarc_backend_log:start(#{source => {events, [{init, p, x, undefined},
%%                                     {exit, p, normal}]}, roots => [p]}).
%% 2> Backend = riarc_backend_log:backend(E).
%% 3> ok = riarc_backend:launch(Backend, p, self()).
%% 4> flush().
%% Shell got {riarc_offline_evt,#Ref<...>,{init,p,x,undefined}}
%% Shell got {riarc_offline_evt,#Ref<...>,{exit,p,normal}}
%% 5> riarc_backend_log:await(E, 1000).
%% {ok,#{delivered => 2,held => 0,read => 2,...}}
%% '''
-module(riarc_backend_log).
-behaviour(riarc_backend).

-export([start/1, backend/1, await/2, stop/1, replay/2, format_error/1]).
-export([launch/3, trace/3, preempt/3, clear/3, event/2, close/1]).
%% Spawned entry point.
-export([init/2]).
-export_type([engine/0, config/0, source/0, opts/0, summary/0, error_reason/0]).

%% The engine's own failures; a trace file it cannot read is riarc_trace_file's error.
-type error_reason() :: {timeout, timeout()} | {engine_down, term()}.

%% See the module's doc: far above what real recordings hold at once.
-define(MAX_HELD, 1000000).

-type sid() :: riarc_event:sid().
-type source() :: {events, [riarc_event:traced()]}
                | {file, riarc_trace_file:source()}
                | {file, riarc_trace_file:source(), riarc_trace_file:opts()}.
-type opts() :: #{source := source(),
                  roots := [sid()],
                  %% Let tracers run between two delivered events (default true): it
                  %% mixes tracer actions into the replay as a live run would.
                  yield => boolean(),
                  %% The bound on the reorder buffer B (events held at once).
                  max_held => pos_integer(),
                  %% Read no more than this many events of the source: a replay of its
                  %% prefix (a check keeps what a recording's intact part decides).
                  max_events => non_neg_integer() | infinity}.
-opaque engine() :: #{pid := pid(), ref := reference(), mon := reference()}.
-opaque config() :: #{pid := pid(), ref := reference()}.
-type summary() :: #{read := non_neg_integer(), delivered := non_neg_integer(),
                     dropped := non_neg_integer(), held := non_neg_integer(),
                     held_procs := [sid()], conflicts := non_neg_integer(),
                     overflowed := #{sid() => pos_integer()}, max_held := pos_integer(),
                     reader := term(), closed := boolean()}.

-record(engine, {
    ref :: reference(),
    owner_pid :: pid(),
    source :: {events, [riarc_event:event()]} | {reader, riarc_trace_file:reader()},
    yield :: boolean(),
    waiting :: #{sid() => true},                % roots not launched yet
    owner = #{} :: #{sid() => pid()},           % A3: process -> its one tracer
    sets = #{} :: #{pid() => #{sid() => true}}, % A1: tracer -> S_T
    held = riarc_reorder:new() :: riarc_reorder:t(), % App. B.1 buffer
    held_n = 0 :: non_neg_integer(),            % its size, kept (riarc_reorder:size/1 is O(n))
    max_held :: pos_integer(),
    max_events :: non_neg_integer() | infinity,
    overflowed = #{} :: #{sid() => pos_integer()}, % given up: events lost
    exited = #{} :: #{sid() => true},
    known = #{} :: #{sid() => true},            % every process a tracer ever took
    read = 0 :: non_neg_integer(),
    delivered = 0 :: non_neg_integer(),
    dropped = 0 :: non_neg_integer(),           % events of processes nobody traces
    conflicts = 0 :: non_neg_integer(),         % TRACE of a process traced elsewhere
    reader_info = #{} :: term(),
    closed = false :: boolean()                 % the session detached (close/1)
}).

%%% ---------------------------------------------------------------------------
%%% Engine API
%%% ---------------------------------------------------------------------------

%% @doc Starts an engine for the caller. It reads nothing until every root has been
%% launched, so no root's event can come before its tracer exists.
-spec start(opts()) -> {ok, engine()}.
start(Opts = #{source := _, roots := _}) ->
    Ref = make_ref(),
    Pid = spawn(?MODULE, init, [self(), Opts#{ref => Ref}]),
    {ok, #{pid => Pid, ref => Ref, mon => monitor(process, Pid)}}.

%% @doc The backend value tracers use to reach this engine.
-spec backend(engine()) -> riarc_backend:t().
backend(#{pid := Pid, ref := Ref}) ->
    riarc_backend:new(?MODULE, #{pid => Pid, ref => Ref}).

%% @doc Waits until the engine has replayed its whole source; the engine stays up to
%% serve CLEAR and PREEMPT until {@link stop/1}.
-spec await(engine(), timeout()) ->
    {ok, summary()} | {error, {?MODULE, error_reason()} | riarc_trace_file:error()}.
await(#{ref := Ref, mon := Mon}, Timeout) ->
    receive
        {riarc_offline_done, Ref, Summary} -> {ok, Summary};
        {riarc_offline_failed, Ref, Reason} -> {error, Reason};
        {'DOWN', Mon, process, _, Why} -> {error, {?MODULE, {engine_down, Why}}}
    after Timeout -> {error, {?MODULE, {timeout, Timeout}}}
    end.

%% @doc One sentence for an error of await/2.
-spec format_error(error_reason()) -> string().
format_error({timeout, T}) ->
    lists:flatten(io_lib:format("the replay of the trace did not end within ~p ms", [T]));
format_error({engine_down, Why}) ->
    lists:flatten(io_lib:format("the offline engine crashed: ~0tP", [Why, 20])).

%% @doc Stops the engine.
-spec stop(engine()) -> ok.
stop(#{pid := Pid, mon := Mon}) ->
    demonitor(Mon, [flush]),
    exit(Pid, kill),
    ok.

%% @doc Replays a list of events with the engine alone, as if one tracer per root
%% traced everything (no tracer code): the caller receives the events in the order the
%% engine delivers them. This is App. B.1 in isolation, used to test the reordering.
-spec replay([riarc_event:traced()], [sid()]) -> {[riarc_event:traced()], summary()}.
replay(Events, Roots) ->
    {ok, E} = start(#{source => {events, Events}, roots => Roots, yield => false}),
    B = backend(E),
    _ = [ok = riarc_backend:launch(B, R, self()) || R <- Roots],
    {ok, Summary} = await(E, infinity),
    ok = stop(E),
    {collect(B, []), Summary}.

collect(B, Acc) ->
    receive
        {riarc_offline_evt, _, _} = M ->
            {ok, Ev} = riarc_backend:event(B, M),
            collect(B, [Ev | Acc])
    after 0 -> lists:reverse(Acc)
    end.

%%% ---------------------------------------------------------------------------
%%% riarc_backend callbacks (run in the tracer; each is a call to the engine)
%%% ---------------------------------------------------------------------------

%% @doc Alg. 6 ROOT offline: the root is in T's set from the start.
-spec launch(config(), sid(), pid()) -> ok.
launch(C, Root, T) -> call(C, {launch, Root, T}).

%% @doc TRACE(S, T): S joins T's set (A1).
-spec trace(config(), sid(), pid()) -> ok.
trace(C, S, T) -> call(C, {trace, S, T}).

%% @doc PREEMPT(S, T): S moves to T's set. Every event delivered before is already in
%% the old tracer's mailbox, since the engine deposits events as it delivers them.
-spec preempt(config(), sid(), pid()) -> ok.
preempt(C, S, T) -> call(C, {preempt, S, T}).

%% @doc CLEAR(S, T): S leaves T's set; its later events are dropped.
-spec clear(config(), sid(), pid()) -> ok.
clear(C, S, T) -> call(C, {clear, S, T}).

%% @doc The session is over before the replay is (an overload limit: riarc detaches from
%% the system): the engine reads no further, and reports the replay done with
%% `closed => true' and what it had read, so that no event is delivered to tracers that
%% are gone and the file is let go at once.
-spec close(config()) -> ok.
close(C) -> call(C, close).

%% @doc Decodes an event deposited by this engine.
-spec event(config(), term()) -> {ok, riarc_event:traced()} | skip | no.
event(#{ref := Ref}, {riarc_offline_evt, Ref, Event}) -> {ok, Event};
event(_, _) -> no.

%% The engine may be gone (stopped after the replay): nothing is traced any more, so
%% every request is trivially met.
call(#{pid := Pid, ref := Ref}, Req) ->
    Mon = monitor(process, Pid),
    Pid ! {riarc_offline_req, Ref, self(), Mon, Req},
    receive
        {Mon, ok} -> demonitor(Mon, [flush]), ok;
        {'DOWN', Mon, process, _, _} -> ok
    end.

%%% ---------------------------------------------------------------------------
%%% The engine
%%% ---------------------------------------------------------------------------

%% @private
-spec init(pid(), map()) -> no_return().
init(Owner, Opts = #{ref := Ref, source := Source, roots := Roots}) ->
    _ = monitor(process, Owner),
    E = #engine{ref = Ref, owner_pid = Owner, source = {events, []},
           yield = maps:get(yield, Opts, true),
           max_held = maps:get(max_held, Opts, ?MAX_HELD),
           max_events = maps:get(max_events, Opts, infinity),
           waiting = maps:from_list([{R, true} || R <- Roots])},
    %% A raw file can only be read by the process that opened it: the engine opens it.
    case open_source(Source) of
        {ok, Src} -> launching(E#engine{source = Src});
        {error, Reason} ->
            Owner ! {riarc_offline_failed, Ref, Reason},
            serving(E)
    end.

open_source({events, Es}) -> {ok, {events, Es}};
open_source({file, File}) -> open_source({file, File, #{}});
open_source({file, File, Opts}) ->
    case riarc_trace_file:open(File, Opts) of
        {ok, R} -> {ok, {reader, R}};
        Err -> Err
    end.

%% Until every root is launched, only requests are served.
launching(E = #engine{waiting = W, closed = Closed}) when map_size(W) =:= 0; Closed ->
    replaying(E);
launching(E) ->
    launching(serve_one(E)).

replaying(E) ->
    E1 = serve_pending(E),
    case next_open(E1) of
        {ok, Ev, E2} ->
            E3 = read_event(Ev, E2#engine{read = E2#engine.read + 1}),
            _ = E3#engine.yield andalso erlang:yield(),
            replaying(E3);
        {eof, E2} ->
            E2#engine.owner_pid ! {riarc_offline_done, E2#engine.ref, summary(E2)},
            serving(E2);
        {error, Reason} ->
            E1#engine.owner_pid ! {riarc_offline_failed, E1#engine.ref, Reason},
            serving(E1)
    end.

%% After the replay: CLEAR and PREEMPT of tracers still finishing their work.
serving(E) ->
    serving(serve_one(E)).

%% One request; the engine ends with its owner.
serve_one(E = #engine{ref = Ref}) ->
    receive
        {riarc_offline_req, Ref, From, Tag, Req} -> request(From, Tag, Req, E);
        {'DOWN', _, process, Pid, _} when Pid =:= E#engine.owner_pid -> exit(normal)
    end.

serve_pending(E = #engine{ref = Ref}) ->
    receive
        {riarc_offline_req, Ref, From, Tag, Req} -> serve_pending(request(From, Tag, Req, E));
        {'DOWN', _, process, Pid, _} when Pid =:= E#engine.owner_pid -> exit(normal)
    after 0 -> E
    end.

%% A closed engine reads no further: the replay ends where the session detached.
%% A prefix read to its end (max_events) ends there too.
next_open(E = #engine{closed = true}) ->
    source_ended(E);
next_open(E = #engine{read = Read, max_events = Max}) when Read >= Max ->
    source_ended(E);
next_open(E) ->
    next(E).

source_ended(E = #engine{source = Src}) ->
    _ = case Src of
            {reader, R} -> riarc_trace_file:close(R);
            {events, _} -> ok
        end,
    {eof, E#engine{source = {events, []}}}.

next(E = #engine{source = {events, [Ev | Rest]}}) -> {ok, Ev, E#engine{source = {events, Rest}}};
next(E = #engine{source = {events, []}}) -> {eof, E};
next(E = #engine{source = {reader, R}}) ->
    case riarc_trace_file:read(R) of
        {ok, Ev, R1} -> {ok, Ev, E#engine{source = {reader, R1}}};
        {eof, Info} -> {eof, E#engine{source = {events, []}, reader_info = Info}};
        {error, _} = Err -> Err
    end.

request(From, Tag, Req, E) ->
    E1 = handle_req(Req, E),
    From ! {Tag, ok},
    E1.

%% Race: at the end of a whole run the session lets go as soon as its last tracer is
%% done, which may be before this engine has read the end of the file. With every
%% process it knows of ended, what is left can only be the end (the trace rules refuse
%% events after an exit, and every root was launched): it reads on to it, so that the
%% reader's own account of the file is kept. Otherwise the session detached from a live
%% system (an overload): it reads no further.
handle_req(close, E = #engine{waiting = W, known = K, exited = X}) ->
    Ended = map_size(W) =:= 0 andalso maps:size(maps:without(maps:keys(X), K)) =:= 0,
    E#engine{closed = not Ended};
handle_req({launch, Root, T}, E = #engine{waiting = W}) ->
    own(Root, T, E#engine{waiting = maps:remove(Root, W)});
handle_req({trace, S, T}, E = #engine{owner = O}) ->
    case O of
        #{S := T} -> E;
        #{S := _Other} -> E#engine{conflicts = E#engine.conflicts + 1}; % A3, as the VM refuses
        #{} -> own(S, T, E)
    end;
handle_req({preempt, S, _T}, E = #engine{exited = X}) when is_map_key(S, X) ->
    %% S has exited: every event of it went to the old tracer; nothing changes hands.
    E;
handle_req({preempt, S, T}, E) ->
    own(S, T, disown(S, E));
handle_req({clear, S, T}, E = #engine{owner = O}) ->
    case O of
        #{S := T} -> disown(S, E);
        #{} -> E
    end.

%% A process joins T's set S_T; any events of it held back so far follow at once.
own(S, T, E = #engine{owner = O, sets = Sets}) ->
    Set = maps:get(T, Sets, #{}),
    release(S, E#engine{owner = O#{S => T}, sets = Sets#{T => Set#{S => true}},
                   known = (E#engine.known)#{S => true}}).

disown(S, E = #engine{owner = O, sets = Sets}) ->
    case maps:take(S, O) of
        error -> E;
        {T, O1} ->
            Set = maps:remove(S, maps:get(T, Sets, #{})),
            Sets1 = case map_size(Set) of 0 -> maps:remove(T, Sets); _ -> Sets#{T => Set} end,
            E#engine{owner = O1, sets = Sets1}
    end.

%% App. B.1 Scan 1-2: an event whose originator is in no tracer's set is held back.
%% Scan 3: one whose originator is in S_T is delivered to T.
%% A process given up on overflow loses every later event too: its trace would have a
%% hole, and its verdict is error anyway.
%% The recorder's note that its look found the node's tracing changed (riarc_recorder)
%% is no event of the process it names: the check judges every verdict by it, with the
%% recording's intact part (riarc_offline's patterns_changed/3), not the tracers.
read_event({cut, _, {patterns_changed, _}}, E) ->
    E;
read_event(Ev, E = #engine{owner = O, held = H, overflowed = Over}) ->
    S = riarc_event:origin(Ev),
    case O of
        _ when is_map_key(S, Over) -> E#engine{overflowed = Over#{S := maps:get(S, Over) + 1}};
        #{S := T} -> deliver(T, Ev, E);
        #{} when is_map_key(S, E#engine.exited) -> E#engine{dropped = E#engine.dropped + 1};
        #{} when E#engine.held_n >= E#engine.max_held -> overflow(S, E);
        #{} -> E#engine{held = riarc_reorder:hold(S, Ev, H), held_n = E#engine.held_n + 1}
    end.

%% The buffer is full: S's held events and this one are dropped, which also makes room
%% for other processes' events.
overflow(S, E = #engine{held = H, overflowed = Over}) ->
    {Lost, H1} = riarc_reorder:release(S, H),
    E#engine{held = H1, held_n = E#engine.held_n - length(Lost),
        overflowed = Over#{S => length(Lost) + 1}}.

deliver(T, Ev, E = #engine{ref = Ref}) ->
    T ! {riarc_offline_evt, Ref, Ev},
    after_delivery(T, Ev, E#engine{delivered = E#engine.delivered + 1}).

%% A2: the child of a delivered spawn event joins the parent's tracer's set, which
%% (Scan 4) releases the child's held events right behind the spawn event.
after_delivery(T, {spawn, _P, C, _}, E = #engine{owner = O}) when not is_map_key(C, O) ->
    own(C, T, E);
after_delivery(_T, {exit, S, _}, E) ->
    disown(S, E#engine{exited = (E#engine.exited)#{S => true}});
after_delivery(_T, _Ev, E) ->
    E.

%% Scan 4: the held events of a process that has just joined a set, oldest first. Each
%% is delivered as read, so a held spawn event releases the grandchild's in turn.
release(S, E = #engine{held = H}) ->
    {Events, H1} = riarc_reorder:release(S, H),
    lists:foldl(fun read_event/2, E#engine{held = H1, held_n = E#engine.held_n - length(Events)}, Events).

summary(E = #engine{held = H}) ->
    #{read => E#engine.read, delivered => E#engine.delivered, dropped => E#engine.dropped,
      held => riarc_reorder:size(H),
      held_procs => lists:sort(maps:keys(riarc_reorder:counts(H))), conflicts => E#engine.conflicts,
      overflowed => E#engine.overflowed, max_held => E#engine.max_held,
      reader => E#engine.reader_info, closed => E#engine.closed}.
