%% @doc Offline monitoring (§4.1 of the RIARC paper): record a run to a trace file, and
%% check a trace file with the same tracers and monitors as a live run.
%%
%% `check/3' replays a file through the offline engine ({@link riarc_backend_log}); the
%% tracers are the online ones ({@link riarc_tracer}), unchanged. A process that no spawn
%% event in the file creates is a root: it gets a root tracer, and the Spec is asked for
%% it with the MFA of its init event, or with `undefined' when the file has none. The
%% result has the shape of {@link riarc:run/3}'s, plus `trace', what the reader and the
%% engine saw (format, events, truncation, dropped and held events), with `warnings'
%% ({@link format_warning/1}) for whatever may make the verdicts differ from a live run's:
%% atoms the file names that this node lacks, undecodable payloads, processes spawned
%% with no event in the file or whose events overflowed the reorder buffer (whose
%% verdict is `error'). Reading is bounded: options `max_record_bytes' (16 MiB) and
%% `max_held_events' (1 000 000), see docs/offline.md. The check runs under riarc's limits
%% (option `limits': max_tracers, max_events, max_queue), as a live run: past one, the
%% result is inconclusive where undecided, with `{riarc_offline, {limit, Name, Term}}'
%% among its errors, and nothing of the check is left running.
%%
%% `record/3' runs a system under VM tracing and streams its events to a file
%% ({@link riarc_recorder}), in bounded memory: when the recorder falls behind, it
%% suspends the system's processes until it has caught up, so its mailbox cannot grow
%% without limit.
%% ```
%% 1> riarc_offline:record({riarc_demo_pqr, p, []}, "/tmp/pqr.rtrc", #{}).
%% {ok,#{events => 10,file => "/tmp/pqr.rtrc",suspensions => 0,...}}
%% 2> Spec = fun(_) -> {ok, fun M({exit, _, normal}) -> accept; M(_) -> M end} end.
%% 3> {ok, R} = riarc_offline:check("/tmp/pqr.rtrc", Spec, #{}).
%% 4> [{P, V} || #{pid := P, verdict := V} <- maps:get(verdicts, R)].
%% [{<0.90.0>,accept},{<0.91.0>,accept},{<0.92.0>,accept}]
%% '''
-module(riarc_offline).

-export([check/3, record/3, format_error/1, format_warning/1, scan/1, scan/2]).
-export_type([check_opts/0, record_opts/0, source/0, result/0, error_reason/0, warning/0]).

-type source() :: riarc_trace_file:source() | {events, [riarc_event:traced()]}.
-type check_opts() :: #{timeout => timeout(), invariants => boolean(), log => boolean(),
                        perturb => undefined | pos_integer(), yield => boolean(),
                        max_record_bytes => pos_integer(), max_held_events => pos_integer(),
                        limits => map()}.
%% riarc:result() and `trace', what the reader and the engine saw.
-type result() :: #{verdicts := [riarc_result:verdict_entry()], trace := map(), atom() => term()}.
-type record_opts() :: #{payloads => boolean(), format => binary | text,
                         events => [send | recv], timeout => timeout(),
                         max_queue => pos_integer()}.
-type error_reason() :: riarc_trace_file:error()
                      | {riarc_trace_rules, riarc_trace_rules:error_reason()}
                      | {bad_spec, term()}
                      | {bad_option, limits, term()}
                      | {limit, max_tracers | max_events | max_queue | max_queue_bytes, term()}
                      | {record_timeout, file:filename_all(), [pid()]}
                      | {recorder_crashed, term()}
                      | {riarc_backend_log, riarc_backend_log:error_reason()}
                      | {undef, {module(), atom(), arity()}}
                      | {bad_mfa, term()}
                      | {riarc_session, term()}
                      | {truncated, file:filename_all(), non_neg_integer()}.
%% What the check warns about, in `trace => #{warnings => [...]}' of its result: each is
%% a way the offline verdicts may differ from the ones a live run would have given.
-type warning() :: {unknown_atoms, string(), pos_integer()}
                 | {undecodable, string(), pos_integer()}
                 | {truncated, string(), non_neg_integer()}
                 | {dropped, string(), pos_integer()}
                 | {held, string(), pos_integer()}
                 | {held_overflow, string(), [riarc_event:sid()]}
                 | {no_events, string(), [riarc_event:sid()]}.

%% max_held_events: the App. B reorder buffer of the engine (events of processes whose
%% spawn event has not been read yet). 1 000 000 events is far more than any real
%% recording holds at once (the VM's reordering is over a few messages), and bounds
%% the buffer to a few hundred megabytes of small events.
%% What a check shares with a run (invariants, log, perturb) defaults as riarc_opts says;
%% a check and a recording keep a timeout of their own, as the command line does.
-define(CHECK_DEFAULTS, (maps:with([invariants, log, perturb], riarc_opts:defaults()))#{
                          timeout => 60000, yield => true, max_held_events => 1000000}).
-define(RECORD_DEFAULTS, #{payloads => true, format => binary, events => [send, recv],
                           timeout => 60000, max_queue => 10000}).

%%% ---------------------------------------------------------------------------
%%% check
%%% ---------------------------------------------------------------------------

%% @doc Checks a recorded run: replays File through the offline engine under the
%% instrumentation Spec describes, and returns once every tracer is done.
-spec check(source(), riarc_lambda:spec(), check_opts()) -> {ok, result()} | {error, error_reason()}.
check(Source, Spec, Opts0) ->
    Opts = maps:merge(?CHECK_DEFAULTS, Opts0),
    case {riarc_lambda:valid_spec(Spec), riarc_opts:check(maps:with([limits], Opts))} of
        {false, _} -> {error, {bad_spec, Spec}};
        {true, {bad_option, limits, L}} -> {error, {bad_option, limits, L}};
        {true, ok} ->
            case scan(Source, maps:with([max_record_bytes], Opts)) of
                {ok, Scan} -> replay(Source, Scan, Spec, Opts#{limits => riarc_opts:limits(Opts)});
                Err -> Err
            end
    end.

%% @doc {@link scan/2} with the default limits.
-spec scan(source()) ->
    {ok, scan()} | {error, riarc_trace_file:error() | {riarc_trace_rules, riarc_trace_rules:error_reason()}}.
scan(Source) -> scan(Source, #{}).

-type scan() :: #{roots := [{riarc_event:sid(), riarc_event:mfa_args()}],
                  open := [riarc_event:sid()],
                  silent := [{riarc_event:sid(), riarc_event:sid(), riarc_event:mfa_args()}],
                  info := map(),
                  %% What the recorder's look found changed in the node's tracing, if
                  %% anything, and how many events it had written when its look before
                  %% found the tracing intact (riarc_recorder), if it said.
                  patterns_changed := none | term(),
                  intact_events := non_neg_integer() | unknown}.

%% @doc A first pass over a trace: its roots (processes no spawn event creates, in order
%% of appearance, with the MFA of their init event), the processes that never exit
%% (spawned children included: a child the file has no event of must not be waited
%% for), the silent children (spawned, with no event of their own: `{Child, Parent,
%% MFA}'), and what the reader learnt. Every malformed input is found here, before
%% anything runs: a file the reader cannot read, and a trace that breaks a rule every
%% run keeps ({@link riarc_trace_rules}: events after an exit, a process spawned twice or
%% by itself, a spawn cycle, ...), with the file, the position and the rule.
-spec scan(source(), riarc_trace_file:opts()) ->
    {ok, scan()} | {error, riarc_trace_file:error() | {riarc_trace_rules, riarc_trace_rules:error_reason()}}.
scan(Source, Opts) ->
    Acc0 = #{order => [], seen => #{}, children => #{}, exited => #{}, inits => #{},
             rules => riarc_trace_rules:new(source_name(Source))},
    case fold(fun scan_event/3, Acc0, Source, Opts) of
        {ok, Acc = #{rules := Rules}, Info} ->
            case riarc_trace_rules:finish(Rules) of
                ok -> {ok, scanned(Acc, Info)};
                {error, Why} -> {error, {riarc_trace_rules, Why}}
            end;
        Err -> Err
    end.

scanned(Acc, Info) ->
            #{order := Order, seen := Seen, children := Ch, exited := X, inits := Inits} = Acc,
            Procs = lists:reverse(Order),
            Roots = [{S, maps:get(S, Inits, undefined)} || S <- Procs, not is_map_key(S, Ch)],
            Silent = lists:sort([{C, P, MFA} || {C, {P, MFA}} <- maps:to_list(Ch),
                                                not is_map_key(C, Seen)]),
            Open = [S || S <- Procs, not is_map_key(S, X)] ++ [C || {C, _, _} <- Silent],
            #{roots => Roots, open => Open, silent => Silent, info => Info,
              patterns_changed => maps:get(patterns_changed, Acc, none),
              intact_events => maps:get(intact_events, Acc, unknown)}.

source_name({events, _}) -> "the events";
source_name({dbg_wrap, Name, Tail}) -> unicode:characters_to_list([Name, "*", Tail]);
source_name(File) -> unicode:characters_to_list(File).

fold(Fun, Acc, {events, Events}, _Opts) ->
    case fold_events(Fun, Acc, Events, 1) of
        {ok, Acc1} -> {ok, Acc1, #{format => events, events => length(Events), truncated => false}};
        Err -> Err
    end;
fold(Fun, Acc, Source, Opts) ->
    riarc_trace_file:fold_at(Fun, Acc, Source, maps:with([max_record_bytes], Opts)).

fold_events(_Fun, Acc, [], _N) -> {ok, Acc};
fold_events(Fun, Acc, [Ev | Es], N) ->
    case Fun(Ev, {event, N}, Acc) of
        {ok, Acc1} -> fold_events(Fun, Acc1, Es, N + 1);
        Err -> Err
    end.

scan_event(Ev, At, Acc = #{order := O, seen := Seen, rules := Rules}) ->
    case riarc_trace_rules:step(Ev, At, Rules) of
        {ok, Rules1} ->
            S = riarc_event:origin(Ev),
            Acc1 = case Seen of
                       #{S := _} -> Acc;
                       #{} -> Acc#{order := [S | O], seen := Seen#{S => true}}
                   end,
            {ok, scan_kind(Ev, Acc1#{rules := Rules1})};
        {error, Why} -> {error, {riarc_trace_rules, Why}}
    end.

scan_kind({spawn, P, C, MFA}, Acc = #{children := Ch}) -> Acc#{children := Ch#{C => {P, MFA}}};
scan_kind({exit, S, _}, Acc = #{exited := X}) -> Acc#{exited := X#{S => true}};
scan_kind({init, C, _, MFA}, Acc = #{inits := I}) -> Acc#{inits := I#{C => MFA}};
scan_kind({cut, _, {patterns_changed, Info}}, Acc) when not is_map_key(patterns_changed, Acc) ->
    %% Where the recorder last found the tracing intact is the check's to read, not part
    %% of the cut's reason, which reads as a live run's.
    case Info of
        #{intact_events := N} when is_integer(N), N >= 0 ->
            Acc#{patterns_changed => maps:remove(intact_events, Info), intact_events => N};
        _ ->
            Acc#{patterns_changed => Info}
    end;
scan_kind(_, Acc) -> Acc.

replay(_Source, #{roots := [], info := Info}, _Spec, _Opts) ->
    %% Nothing to monitor: an empty trace.
    {ok, riarc_result:make(#{trace => Info#{warnings => warnings(Info)}})};
replay(_Source, #{roots := Roots, info := Info}, _Spec, #{limits := #{max_tracers := Max}})
  when length(Roots) > Max ->
    %% Limit max_tracers: each root needs a tracer of its own from the start (and an
    %% analysis process), more than the limit allows. Nothing is started: the check is
    %% inconclusive for every root, as a live run past the limit is for what it had
    %% not decided, and the node is left as it was.
    Over = {tracers, length(Roots), Max},
    Vs = [riarc_result:entry(S, MFA, inconclusive, 0, {overload, Over}) || {S, MFA} <- Roots],
    {ok, riarc_result:make(#{verdicts => Vs, overload => Over, errors => limit_errors(Over),
                             trace => Info#{warnings => warnings(Info)}})};
replay(Source, Scan, Spec, Opts) ->
    case replay_all(Source, Scan, Spec, Opts) of
        {ok, Result} -> {ok, patch_verdicts(Result, Scan, intact_verdicts(Source, Scan, Spec, Opts))};
        Err -> Err
    end.

%% The recorder found the node's tracing changed at a look (its CUT record), and said how
%% many events it had written at its look before, which found it intact: those events
%% came before the change. What a check of that prefix decides (accept or reject, both
%% final) was decided on a view nothing had cut, as a live run's verdicts in at that look
%% were: by process, those verdicts. A recording that does not say (or a prefix that
%% could not be checked) keeps none: every verdict of the check is then an error.
intact_verdicts(Source, Scan = #{patterns_changed := Changed, intact_events := N, roots := Roots},
                Spec, Opts) when Changed =/= none, is_integer(N) ->
    %% The prefix ends before some processes do: the session settles and stops.
    Prefix = Scan#{open := [S || {S, _} <- Roots]},
    case replay_all(Source, Prefix, Spec, Opts#{max_events => N, log => false}) of
        {ok, #{verdicts := Vs}} ->
            maps:from_list([{P, V} || #{pid := P, verdict := V} <- Vs, V =:= accept orelse V =:= reject]);
        _ ->
            #{}
    end;
intact_verdicts(_Source, _Scan, _Spec, _Opts) ->
    #{}.

replay_all(Source, #{roots := Roots, open := Open}, Spec, Opts = #{timeout := Timeout}) ->
    Sids = [S || {S, _} <- Roots],
    {ok, Engine} = riarc_backend_log:start(#{source => engine_source(Source, Opts), roots => Sids,
                                             yield => maps:get(yield, Opts),
                                             max_held => maps:get(max_held_events, Opts),
                                             max_events => maps:get(max_events, Opts, infinity)}),
    SOpts = #{backend => riarc_backend_log:backend(Engine),
              invariants => maps:get(invariants, Opts), log => maps:get(log, Opts),
              perturb => maps:get(perturb, Opts), limits => maps:get(limits, Opts)},
    {ok, Session} = riarc_session:start(self(), [{S, MFA, none} || {S, MFA} <- Roots],
                                        Spec, SOpts),
    try
        run_session(Engine, Session, Open, Timeout)
    after riarc_backend_log:stop(Engine)
    end.

engine_source({events, Es}, _Opts) -> {events, Es};
engine_source(File, Opts) -> {file, File, maps:with([max_record_bytes], Opts)}.

run_session(Engine, Session, Open, Timeout) ->
    case riarc_backend_log:await(Engine, Timeout) of
        {ok, Summary} ->
            %% A timeout is among the result's errors, with the verdicts reached.
            {ok, Result} = finish_session(Session, Open, Timeout),
            Errors = maps:get(errors, Result, []) ++ limit_errors(maps:get(overload, Result, undefined)),
            {ok, Result#{trace => trace_info(Summary), errors => Errors}};
        {error, Reason} ->
            {ok, _} = riarc_session:stop(Session),
            {error, Reason}
    end.

%% A check riarc cut short at one of its limits says which among the result's errors,
%% so that the sentence names the option to raise.
limit_errors(undefined) -> [];
limit_errors(Over) ->
    case limit_of(Over) of
        undefined -> [];
        Name -> [{?MODULE, {limit, Name, Over}}]
    end.

limit_of({tracers, _, _}) -> max_tracers;
limit_of({max_events, _, _}) -> max_events;
limit_of({mailbox, _, _, _}) -> max_queue;
limit_of({analysis, _, _, _}) -> max_queue;
limit_of({mailbox_bytes, _, _, _}) -> max_queue_bytes;
limit_of(_) -> undefined.

%% Every process exited in the file: the tracers end by themselves (TRYGC).
finish_session(Session, [], Timeout) ->
    riarc_session:finish(Session, Timeout);
%% Some process was still running when the recording ended (or was spawned and never
%% seen): its tracer would wait for its exit for ever. Once settled, every tracer has
%% taken in the replayed events and handed on what it held for others (a takeover the
%% stop would cut makes that partition inconclusive); the partitions then end as they
%% stand. Not settled within the timeout: the stop says which partitions it cut.
finish_session(Session, _Open, Timeout) ->
    _ = riarc_session:settle(Session, Timeout),
    riarc_session:stop(Session).

trace_info(Summary = #{reader := Reader}) ->
    Base = case Reader of
               M when is_map(M) -> M;
               _ -> #{}
           end,
    %% `dropped' is the reader's (events the tracer lost while recording); the engine's
    %% (events after their process's exit, which the rules refuse before the replay)
    %% is `after_exit'.
    Info = maps:merge(Base, maps:with([read, delivered, held, held_procs,
                                       overflowed, max_held, closed], Summary)),
    Info#{after_exit => maps:get(dropped, Summary, 0), warnings => warnings(Info)}.

%% The verdicts of processes whose events the check could not see are errors, never
%% silently `none': a spawned child the file has no event of, and a process whose
%% events overflowed the engine's reorder buffer.
patch_verdicts(Result = #{verdicts := Vs, trace := Info}, #{silent := Silent, patterns_changed := Changed},
               Intact) ->
    Over = maps:get(overflowed, Info, #{}),
    Max = maps:get(max_held, Info, 0),
    Errors = [{C, MFA, {no_events, P}} || {C, P, MFA} <- Silent]
             ++ [{S, undefined, {held_overflow, Lost, Max}} || {S, Lost} <- lists:sort(maps:to_list(Over))],
    Vs1 = patterns_changed(Changed, Intact, cut_short(maps:get(truncated, Info, false), file_of(Info),
                    lists:foldl(fun({S, MFA, Why}, Acc) -> set_error(S, MFA, Why, Acc) end, Vs, Errors))),
    Result#{verdicts := Vs1, trace := Info#{warnings => maps:get(warnings, Info, []) ++
                                                silent_warnings(Info, Silent)}}.

%% The recorder found the node's tracing changed by someone it did not trace (its send or
%% receive patterns, or flags taken with erlang:trace/3: riarc_trace_pattern:look/1): the
%% change came at some time after its look before, so only what the events written by
%% then decide stands it (Intact, by process: intact_verdicts/4), the same verdict the
%% whole recording gives; every other verdict is an error, as a live run's not in at its
%% look before the change (riarc_session_verdicts:view_check/2). Errors stay as they are.
patterns_changed(none, _Intact, Vs) ->
    Vs;
patterns_changed(Info, Intact, Vs) ->
    Cut = #{process => undefined, call => {patterns_changed, Info}},
    [case maps:find(maps:get(pid, E), Intact) =:= {ok, maps:get(verdict, E)} of
         true -> E;
         false -> riarc_result:seen_cut(Cut, E)
     end || E <- Vs].

%% A file cut at byte B (a recording that did not end cleanly) holds no more of the
%% partitions that were still open there: a partition with no verdict by then would
%% have had the rest of its trace, so it is inconclusive, never a silent none.
cut_short(B, F, Vs) when is_integer(B) ->
    [case E of
         #{verdict := none} -> (maps:remove(why, E))#{verdict := inconclusive, reason => {?MODULE, {truncated, F, B}}};
         #{} -> E
     end || E <- Vs];
cut_short(_, _F, Vs) ->
    Vs.

set_error(S, MFA, Why, Vs) ->
    case lists:partition(fun(#{pid := P}) -> P =:= S end, Vs) of
        {[], _} -> Vs ++ [riarc_result:entry(S, MFA, error, 0, Why)];
        {Mine, Others} -> Others ++ [E#{verdict := error, reason => Why} || E <- Mine]
    end.

silent_warnings(_Info, []) -> [];
silent_warnings(Info, Silent) -> [{no_events, file_of(Info), [C || {C, _, _} <- Silent]}].

file_of(Info) ->
    case maps:get(file, Info, undefined) of
        F when is_list(F) -> F;
        _ -> "the events"
    end.

%% What may make these verdicts differ from a live run's, for the caller to report.
warnings(Info) ->
    F = file_of(Info),
    [{unknown_atoms, F, N} || N <- [maps:get(unknown_atoms, Info, 0)], N > 0]
        ++ [{undecodable, F, N} || N <- [maps:get(undecodable, Info, 0)], N > 0]
        ++ [{truncated, F, B} || B <- [maps:get(truncated, Info, false)], is_integer(B)]
        ++ [{dropped, F, N} || N <- [maps:get(dropped, Info, 0)], is_integer(N), N > 0,
                               maps:get(format, Info, events) =/= events]
        ++ [{held, F, N} || N <- [maps:get(held, Info, 0)], N > 0]
        ++ [{held_overflow, F, lists:sort(maps:keys(O))} || O <- [maps:get(overflowed, Info, #{})],
                                                            map_size(O) > 0].

%% @doc A sentence for a warning of check/3.
-spec format_warning(warning()) -> string().
format_warning({unknown_atoms, F, N}) ->
    flat("~ts: ~b atom(s) of the recording do not exist on this node: they read as "
         "{riarc_unknown_atom, Name} (in MFAs too), so a monitor matching "
         "on them may decide otherwise than it would online", [F, N]);
format_warning({undecodable, F, N}) ->
    flat("~ts: ~b payload(s) could not be decoded and read as {riarc_undecodable, Bytes}", [F, N]);
format_warning({truncated, F, B}) ->
    flat("~ts is truncated at byte ~b: checked the events before it", [F, B]);
format_warning({dropped, F, N}) ->
    flat("~ts: the tracer that wrote it lost ~b event(s) while recording (the VM dropped "
         "trace messages)", [F, N]);
format_warning({held, F, N}) ->
    flat("~ts: ~b event(s) of processes no traced process spawned were not checked", [F, N]);
format_warning({held_overflow, F, Ps}) ->
    flat("~ts: the reorder buffer overflowed (option max_held_events); the events of ~0tp "
         "were dropped and their verdict is error", [F, Ps]);
format_warning({no_events, F, Ps}) ->
    flat("~ts: spawned process(es) ~0tp have no event in the trace; their verdict is error",
         [F, Ps]).

%%% ---------------------------------------------------------------------------
%%% record
%%% ---------------------------------------------------------------------------

%% @doc Runs {M, F, Args} under VM tracing and writes every event to File, returning
%% once every process of the system has exited and the file is closed.
-spec record({module(), atom(), list()}, file:filename_all(), record_opts()) ->
    {ok, map()} | {error, term()}.
record({M, F, A} = MFA, File, Opts0) when is_atom(M), is_atom(F), is_list(A), is_map(Opts0) ->
    Opts = maps:merge(?RECORD_DEFAULTS, Opts0),
    _ = code:ensure_loaded(M),
    case erlang:function_exported(M, F, length(A)) of
        false -> {error, {undef, {M, F, length(A)}}};
        true ->
            Ref = make_ref(),
            Pid = spawn(riarc_recorder, recorder, [self(), Ref, MFA, Opts#{file => File}]),
            Mon = monitor(process, Pid),
            receive
                {Ref, Reply} -> demonitor(Mon, [flush]), Reply;
                {'DOWN', Mon, process, _, Why} -> {error, {recorder_crashed, Why}}
            end
    end;
record(MFA, _File, _Opts) ->
    {error, {bad_mfa, MFA}}.

%%% ---------------------------------------------------------------------------
%%% Errors
%%% ---------------------------------------------------------------------------

%% @doc A sentence for an error of check/3 or record/3 that is the offline engine's own;
%% riarc:format_error/1 covers the errors of entry points and Specs and ends here.
-spec format_error(error_reason()) -> string().
format_error({truncated, F, B}) ->
    flat("~ts is cut at byte ~b, before this partition's end: no verdict on the rest of its "
         "trace", [F, B]);
format_error({riarc_trace_file, Reason}) ->
    riarc_trace_file:format_error(Reason);
format_error({riarc_trace_rules, Reason}) ->
    riarc_trace_rules:format_error(Reason);
format_error({bad_option, limits, L}) ->
    flat("the option limits ~0tP is not a map of riarc's limits (docs/production.md)", [L, 8]);
format_error({limit, Name, Over}) ->
    flat("the check was cut short at limit ~ts (~0tP; option limits, docs/production.md): "
         "riarc stopped replaying, and the partitions that had not decided are inconclusive",
         [Name, Over, 8]);
format_error({bad_spec, Spec}) ->
    flat("the Spec ~0tP is neither a fun of arity 1 nor a module exporting spec/1", [Spec, 8]);
format_error({undef, {M, F, A}}) ->
    flat("~ts:~ts/~b is not exported (or its module cannot be loaded)", [M, F, A]);
format_error({bad_mfa, MFA}) ->
    flat("~0tP is not {Module, Function, Args}", [MFA, 8]);
format_error({riarc_session, Reason}) ->
    riarc_session:format_error(Reason);
format_error({riarc_backend_log, Reason}) ->
    riarc_backend_log:format_error(Reason);
format_error({record_timeout, File, Live}) ->
    flat("the recording to ~ts timed out with ~b process(es) still alive: ~0tp",
         [File, length(Live), Live]);
format_error({recorder_crashed, Why}) ->
    flat("the recorder crashed: ~0tp", [Why]).

flat(Fmt, Args) -> lists:flatten(io_lib:format(Fmt, Args)).
