%% @doc A partition's analysis process: its monitor runs here, off the routing path. The
%% partition's tracer hands it events ({@link events/3}) without waiting and ends it with
%% {@link finish/2}; it analyses them in order ({@link riarc_analysis_core}) and tells the
%% session the verdict, keyed by the tracer, as the tracer itself would. A monitor that is
%% slow or loops therefore stalls nobody's routing but its own partition's analysis.
%%
%% Trust boundary: both messages carry the key start/4 made, which only the tracer holds.
%% Anything else in this process's mailbox is forged (the monitored system can find the
%% process): it changes nothing and is reported to the session, which counts it among
%% the run's errors.
%%
%% Every step has a budget (`monitor_budget': wall time, reductions, heap). A step that
%% ends over it gives the verdict `error' with reason `{monitor_budget, What}' here; a
%% step that does not end is found by the session's watchdog ({@link overdue/3}, reading
%% the step clock this process keeps in an atomics array) and the process killed, with
%% the same verdict; a heap over the limit is killed by the VM (max_heap_size). Either
%% way the partition's monitor is detached: its tracer stops handing it events and goes
%% on routing for everybody else.
%% ```
%% 1> Mon = fun M({exit, _, _}) -> accept; M(_) -> M end.
%% 2> {A, Key, Clock} = riarc_analysis:start(#{session => self(), explain => 8}, self(), {p, {m, f, []}}, Mon).
%% 3> A ! {riarc_evts, [{exit, p, normal}]}, riarc_analysis:overdue(Clock, A, riarc_opts:budget(#{})).
%% ok
%% 4> riarc_analysis:events(A, Key, [{exit, p, normal}]), receive {riarc_s, _, {riarc_forged, A, _}} -> forged end.
%% forged
%% 5> receive {riarc_s, _, {riarc_verdict, _, p, _, V, _, N}} -> {V, N} end.
%% {accept,1}
%% '''
-module(riarc_analysis).

-export([start/4, events/3, finish/2, overdue/3, steps/1, in_step/1]).
%% Spawned entry point.
-export([init/4]).
-export_type([clock/0, cfg/0, key/0]).

%% The step clock: [steps begun, in a step (1) or not (0), the step's start (ms), the
%% process's reductions at its start].
-opaque clock() :: atomics:atomics_ref().
%% What the tracer's messages carry: a reference only it and this process hold.
-opaque key() :: reference().
-type cfg() :: #{session := pid(), explain := non_neg_integer(),
                 monitor_budget => map(), token => reference(),
                 tracer_priority => low | normal, atom() => term()}.

-define(STEPS, 1).
-define(BUSY, 2).
-define(T0, 3).
-define(R0, 4).

%% A slow partition's events wait here: off the heap, a garbage collection of the
%% monitor's state does not copy them again.
-define(OPTS(Heap), [{message_queue_data, off_heap},
                     {max_heap_size, #{size => Heap, kill => true, error_logger => false}}]).

-record(analysis_loop, {analysis :: riarc_analysis_core:t(),
            session :: pid(),
            token :: reference() | undefined,            % the session's (trust boundary)
            key :: key(),                                 % the tracer's (trust boundary)
            tracer :: pid(),
            tref :: reference(),
            clock :: clock(),
            budget :: riarc_opts:budget()}).


%% @doc Starts the analysis of Tracer's partition Part by monitor Mon; returns its pid, the
%% key the tracer's messages to it carry, and the step clock the session watches it by.
-spec start(cfg(), pid(), {riarc_event:sid(), riarc_event:mfa_args()}, riarc_monitor:monitor()) ->
    {pid(), key(), clock()}.
start(Cfg, Tracer, Part, Mon) ->
    Clock = atomics:new(4, [{signed, true}]),
    Key = make_ref(),
    #{heap_words := Heap} = riarc_opts:budget(Cfg),
    Pid = proc_lib:spawn_opt(?MODULE, init, [Cfg#{key => Key}, Tracer, Part, {Mon, Clock}],
                             [{priority, riarc_opts:priority(Cfg)} | ?OPTS(Heap)]),
    {Pid, Key, Clock}.

%% @doc Hands the analysis the partition's next events, in order; never waits.
-spec events(pid(), key(), [riarc_event:event()]) -> ok.
events(Pid, Key, Es) ->
    Pid ! {riarc_evts, Key, Es},
    ok.

%% @doc Ends the analysis after the events handed so far: a monitor with no verdict yet
%% gets `none'.
-spec finish(pid(), key()) -> ok.
finish(Pid, Key) ->
    Pid ! {riarc_end, Key},
    ok.

%% @doc Whether the analysis is in a monitor step (or was, when it ended).
-spec in_step(clock()) -> boolean().
in_step(Clock) -> atomics:get(Clock, ?BUSY) =:= 1.

%% @doc How many steps the analysis has begun.
-spec steps(clock()) -> non_neg_integer().
steps(Clock) -> atomics:get(Clock, ?STEPS).

%% @doc The watchdog's look at an analysis process: `{over, What}' when the step it is in
%% has run past its budget (it is to be killed; What says by how much), else ok.
-spec overdue(clock(), pid(), riarc_opts:budget()) -> ok | {over, map()}.
overdue(Clock, Pid, #{time_ms := MaxT, reductions := MaxR}) ->
    case atomics:get(Clock, ?BUSY) of
        0 -> ok;
        1 ->
            %% Race: the step may end between the reads; T0 is written before BUSY is
            %% set, so what is read is this step's start or a later one's (never too old).
            Dt = erlang:monotonic_time(millisecond) - atomics:get(Clock, ?T0),
            case Dt > MaxT of
                true -> {over, #{time_ms => Dt, max_time_ms => MaxT, step => steps(Clock)}};
                false when MaxR =:= infinity -> ok;
                false ->
                    case erlang:process_info(Pid, reductions) of
                        {reductions, R} ->
                            Used = R - atomics:get(Clock, ?R0),
                            case Used > MaxR of
                                true -> {over, #{reductions => Used, max_reductions => MaxR,
                                                 step => steps(Clock)}};
                                false -> ok
                            end;
                        undefined -> ok
                    end
            end
    end.

%% @private
-spec init(cfg(), pid(), {riarc_event:sid(), riarc_event:mfa_args()},
           {riarc_monitor:monitor(), clock()}) -> no_return().
init(Cfg = #{session := Session}, Tracer, Part, {Mon, Clock}) ->
    %% Linked to the session, its watchdog: should the session be killed outright, no
    %% analysis outlives it (a looping monitor would loop unwatched for ever). The
    %% session traps exits; it ends analyses itself when it stops normally.
    link(Session),
    TRef = monitor(process, Tracer),
    An = riarc_analysis_core:new(Tracer, maps:get(explain, Cfg, 0), Part, Mon),
    loop(#analysis_loop{analysis = An, session = Session, token = maps:get(token, Cfg, undefined),
                   key = maps:get(key, Cfg), tracer = Tracer, tref = TRef, clock = Clock,
                   budget = riarc_opts:budget(Cfg)}).

loop(L = #analysis_loop{tref = TRef, key = Key, session = Session, token = Token}) ->
    receive
        {riarc_evts, Key, Es} -> steps(Es, L);
        {riarc_end, Key} ->
            done(riarc_analysis_core:finish(L#analysis_loop.analysis), L);
        {'DOWN', TRef, process, _, _} ->
            %% The tracer ended without ending the partition (killed, say): the session
            %% gives the partition its verdict from what it knows.
            exit(normal);
        _Forged ->
            %% Trust boundary: not the tracer's; refused, and the session counts it.
            Session ! {riarc_s, Token, {riarc_forged, self(), analysis}},
            loop(L)
    end.

steps([], L) -> loop(L);
steps([E | Es], L) -> steps(Es, step(E, L)).

%% A cut of a process's own view, in order with the partition's events
%% (riarc_tracer_core): the monitor has no verdict yet (with one, this process would have
%% ended), so the session makes the partition's an error. The monitor is not stepped.
step({cut, S, Why}, L = #analysis_loop{session = Session, token = Token, tracer = Tracer}) ->
    Session ! {riarc_s, Token, {riarc_cut, Tracer, S, Why}},
    L;
step(E, L = #analysis_loop{analysis = An, clock = Clock, budget = #{time_ms := MaxT, reductions := MaxR}}) ->
    N = atomics:add_get(Clock, ?STEPS, 1),
    {reductions, R0} = erlang:process_info(self(), reductions),
    T0 = erlang:monotonic_time(millisecond),
    atomics:put(Clock, ?T0, T0),
    atomics:put(Clock, ?R0, R0),
    atomics:put(Clock, ?BUSY, 1),
    Res = riarc_analysis_core:step(E, An),
    atomics:put(Clock, ?BUSY, 0),
    Dt = erlang:monotonic_time(millisecond) - T0,
    {reductions, R1} = erlang:process_info(self(), reductions),
    case Res of
        {done, _, Reports} -> done(Reports, L);
        {next, _, _} when Dt > MaxT ->
            Why = {monitor_budget, #{time_ms => Dt, max_time_ms => MaxT, step => N}},
            done(riarc_analysis_core:fail(Why, E, element(2, Res)), L);
        {next, _, _} when MaxR =/= infinity, R1 - R0 > MaxR ->
            Why = {monitor_budget, #{reductions => R1 - R0, max_reductions => MaxR, step => N}},
            done(riarc_analysis_core:fail(Why, E, element(2, Res)), L);
        {next, An1, []} ->
            L#analysis_loop{analysis = An1}
    end.

-spec done([term()], #analysis_loop{}) -> no_return().
done(Reports, #analysis_loop{session = Session, token = Token}) ->
    _ = [Session ! {riarc_s, Token, R} || R <- Reports],
    exit(normal).
