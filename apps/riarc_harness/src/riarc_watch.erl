%% @doc A property watched while a test runs: what the Common Test hook (riarc_cth), the
%% EUnit fixture (riarc_eunit) and the ExUnit helper (priv/elixir/riarc_case.ex) share.
%% start/3 attaches riarc to the target (`self', the calling process and everything it
%% spawns from then on; a pid, a registered name, `{application, App}', `{supervisor,
%% Ref}', `new_processes', or a list of them) through a keeper process that owns the
%% sessions; stop/1 detaches and judges: a reject, an error, an inconclusive verdict, a
%% run error, an invariant violation or an overload is a `fail', with the explanation in
%% the outcome's report; accepts and partitions without a verdict (no violation seen)
%% `pass'. The keeper never leaves tracing on: it detaches at stop/1, and at once when its
%% guardian (by default the caller of start/3) ends, keeping the result for stop/1.
%% ```
%% 1> file:write_file("/tmp/riarc_watch_doc.prop", "with riarc_demo_pqr:q() never receive req.\n").
%% ok
%% 2> {ok, W} = riarc_watch:start("/tmp/riarc_watch_doc.prop", self, #{}).
%% 3> {Q, Ref} = spawn_monitor(riarc_demo_pqr, q, []), Q ! req, receive {'DOWN', Ref, _, _, R} -> R end.
%% normal
%% 4> {ok, O} = riarc_watch:stop(W), maps:get(status, O).
%% fail
%% 5> [V || #{verdict := V} <- maps:get(verdicts, O)].
%% [reject]
%% 6> {_, Flags} = erlang:trace_info(self(), flags), Flags.
%% []
%% 7> riarc_watch:start("/tmp/no_such.prop", self, #{}).
%% {error,{riarc_watch,{property,"/tmp/no_such.prop",{file,"/tmp/no_such.prop",enoent}}}}
%% '''
-module(riarc_watch).

%% How long a watch waits at its end for the tracers to settle (riarc:settle/2).
-define(SETTLE_MS, 5000).

-export([start/3, stop/1, with/4, spec/2, judge/2, format_error/1]).
-export_type([property/0, target/0, opts/0, watch/0, outcome/0, error_reason/0]).

%% A property file (sHML, riarc_shml) or a Spec (riarc_lambda).
-type property() :: file:filename_all() | riarc_lambda:spec().
%% What to watch: `self' is the process that calls start/3.
-type target() :: self | riarc:target() | [self | riarc:target()].
%% `strict': a run that monitored no process fails too (nothing was checked), as the
%% command line's --strict; `riarc': options for riarc:attach/3 (limits, ...); `dirs':
%% where a relative property file is looked for before the working directory;
%% `guardian': the process whose end makes the keeper detach (default the caller).
-type opts() :: #{strict => boolean(), riarc => riarc:opts(), dirs => [file:filename()],
                  guardian => pid()}.
-type error_reason() :: {property, file:filename_all(), riarc_shml:reason()}
                      | {bad_property, term()} | {bad_target, term()}
                      | {attach, term(), term()} | {keeper_down, term()}
                      | {stop_timeout, timeout()}.
%% The judgement of a watch: `fail' when any `failures'; the verdicts of every session
%% and a report for people (verdict lines, explanations, warnings).
-type outcome() :: #{status := pass | fail, failures := [string()],
                     verdicts := [riarc:verdict_entry()], results := [riarc:result()],
                     report := string()}.

%% The keeper that owns a watch's sessions, the tag of their exchanges, what was watched
%% (for the report) and how to judge.
-record(watch, {keeper :: pid(), tag :: reference(), property :: property(),
                targets :: [riarc:target()], strict :: boolean()}).
-opaque watch() :: #watch{}.

%% How long a keeper whose guardian ended keeps its result for stop/1 before it ends:
%% a Common Test case killed by its timetrap is judged by a process started after it.
-define(HOLD_MS, 120000).
%% How long stop/1 waits for the keeper: riarc:stop/1 takes up to 30 s per session.
-define(STOP_MS, 60000).

%% @doc Starts watching Target with Property; the events from now on are checked.
-spec start(property(), target(), opts()) -> {ok, watch()} | {error, {?MODULE, error_reason()}}.
start(Property, Target, Opts) ->
    case {spec(Property, maps:get(dirs, Opts, [])), targets(Target, self())} of
        {{error, _} = E, _} -> E;
        {_, {error, _} = E} -> E;
        {{ok, Spec}, {ok, Targets}} ->
            Tag = make_ref(),
            Guardian = maps:get(guardian, Opts, self()),
            Caller = self(),
            RiarcOpts = maps:get(riarc, Opts, #{}),
            {Keeper, MRef} = spawn_monitor(fun() -> keeper(Caller, Tag, Guardian, Spec, Targets, RiarcOpts) end),
            receive
                {Tag, ok} ->
                    demonitor(MRef, [flush]),
                    {ok, #watch{keeper = Keeper, tag = Tag, property = Property, targets = Targets,
                                strict = maps:get(strict, Opts, false)}};
                {Tag, {error, _} = E} ->
                    demonitor(MRef, [flush]),
                    E;
                {'DOWN', MRef, process, Keeper, Why} ->
                    {error, {?MODULE, {keeper_down, Why}}}
            end
    end.

%% @doc Stops watching: detaches riarc from everything it traced and judges the results.
-spec stop(watch()) -> {ok, outcome()} | {error, {?MODULE, error_reason()}}.
stop(#watch{keeper = Keeper, tag = Tag, strict = Strict}) ->
    MRef = monitor(process, Keeper),
    Keeper ! {Tag, stop, self()},
    receive
        {Tag, Results} ->
            demonitor(MRef, [flush]),
            {ok, judge(Results, #{strict => Strict})};
        {'DOWN', MRef, process, Keeper, Why} ->
            {error, {?MODULE, {keeper_down, Why}}}
    after ?STOP_MS ->
            demonitor(MRef, [flush]),
            exit(Keeper, kill),
            {error, {?MODULE, {stop_timeout, ?STOP_MS}}}
    end.

%% @doc Runs Fun in the calling process with Property watched on Target, then stops and
%% judges. Fun's exception is caught and returned beside the outcome: the caller decides
%% which of the two to tell first.
-spec with(property(), target(), fun(() -> T), opts()) ->
    {ok, {return, T} | {raised, atom(), term(), list()}, outcome()} | {error, {?MODULE, error_reason()}}.
with(Property, Target, Fun, Opts) ->
    case start(Property, Target, Opts) of
        {ok, Watch} ->
            Ran = try {return, Fun()}
                  catch C:R:St -> {raised, C, R, St}
                  end,
            case stop(Watch) of
                {ok, Outcome} -> {ok, Ran, Outcome};
                {error, _} = E -> E
            end;
        {error, _} = E -> E
    end.

%% @doc The Spec of a property: a file is compiled and loaded (riarc_shml:load_file/1),
%% looked for first in Dirs when relative; a Spec is itself.
-spec spec(property(), [file:filename()]) -> {ok, riarc_lambda:spec()} | {error, {?MODULE, error_reason()}}.
spec(File, Dirs) when is_list(File); is_binary(File) ->
    Name = unicode:characters_to_list(File),
    Found = case filename:pathtype(Name) of
                relative ->
                    case [P || D <- Dirs, P <- [filename:join(D, Name)], filelib:is_regular(P)] of
                        [P | _] -> P;
                        [] -> Name
                    end;
                _ -> Name
            end,
    case riarc_shml:load_file(Found) of
        {ok, Mod} -> {ok, Mod};
        {error, Reason} -> {error, {?MODULE, {property, File, Reason}}}
    end;
spec(Spec, _Dirs) ->
    case riarc_lambda:valid_spec(Spec) of
        true -> {ok, Spec};
        false -> {error, {?MODULE, {bad_property, Spec}}}
    end.

targets(Targets, Self) when is_list(Targets), Targets =/= [] ->
    Each = [targets(T, Self) || T <- Targets],
    case [E || {error, _} = E <- Each] of
        [E | _] -> E;
        [] -> {ok, lists:append([Ts || {ok, Ts} <- Each])}
    end;
targets(self, Self) -> {ok, [Self]};
targets(T, _Self) when is_pid(T); is_atom(T) -> {ok, [T]};
targets({Kind, _} = T, _Self) when Kind =:= application; Kind =:= supervisor -> {ok, [T]};
targets(T, _Self) -> {error, {?MODULE, {bad_target, T}}}.

%%% The keeper

%% Owns one session per target (riarc:stop/1 is the owner's), so that the sessions
%% outlive a test process that crashed or was killed, and ends them when told or when
%% its guardian ends.
keeper(Caller, Tag, Guardian, Spec, Targets, RiarcOpts) ->
    GRef = monitor(process, Guardian),
    case attach(Targets, Spec, RiarcOpts, []) of
        {ok, Sessions} ->
            Caller ! {Tag, ok},
            receive
                {Tag, stop, From} ->
                    From ! {Tag, detach(Sessions)};
                {'DOWN', GRef, process, Guardian, _} ->
                    Results = detach(Sessions),
                    receive {Tag, stop, From} -> From ! {Tag, Results}
                    after ?HOLD_MS -> ok
                    end
            end;
        {error, _} = E ->
            Caller ! {Tag, E}
    end.

attach([], _Spec, _Opts, Acc) ->
    {ok, lists:reverse(Acc)};
attach([T | Ts], Spec, Opts, Acc) ->
    case riarc:attach(T, Spec, Opts) of
        {ok, S} -> attach(Ts, Spec, Opts, [S | Acc]);
        {error, Reason} ->
            _ = detach(lists:reverse(Acc)),
            {error, {?MODULE, {attach, T, Reason}}}
    end.

%% Every trace message the VM produced so far is delivered to its tracer before the
%% stop, and every tracer has handed on what it held for the tracers of new processes,
%% so that the events of a test that has just ended are all analysed (or, past the
%% session's grace, counted inconclusive), never silently dropped. A stop in the middle
%% of a takeover would leave the new process's partition inconclusive (riarc_stopped_short):
%% a failed case for a test that did nothing wrong. Past SETTLE_MS (a system that keeps
%% starting processes), the stop goes ahead and says what it cut.
detach(Sessions) ->
    Ref = erlang:trace_delivered(all),
    receive {trace_delivered, all, Ref} -> ok end,
    [settle_session(S) || S <- Sessions],
    [stop_session(S) || S <- Sessions].

settle_session(S) ->
    try riarc:settle(S, ?SETTLE_MS) of
        _ -> ok
    catch exit:_ -> ok  % gone: stop_session/1 says so
    end.

stop_session(S) ->
    try riarc:stop(S) of
        {ok, Result} -> Result;
        {error, Reason} -> riarc_result:make(#{errors => [Reason]})
    catch exit:Why ->
            %% The session is gone (killed with riarc's supervisor, say): nothing it
            %% watched was checked to the end.
            riarc_result:make(#{errors => [{riarc_session, {down, Why}}]})
    end.

%%% Judging

%% @doc The outcome of the results of a watch. `strict' makes a run that monitored no
%% process a failure.
-spec judge([riarc:result()], #{strict => boolean()}) -> outcome().
judge(Results, Opts) ->
    Strict = maps:get(strict, Opts, false),
    Verdicts = lists:append([Vs || #{verdicts := Vs} <- Results]),
    Bad = [V || V = #{verdict := X} <- Verdicts, X =/= accept, X =/= none],
    %% The verdicts show in the report with their explanations; the other failures
    %% have a line of their own.
    Others = lists:append([run_failures(R) || R <- Results])
        ++ ["no process was monitored: the property matched none of the watched processes "
            "(strict)" || Strict, Verdicts =:= []],
    Failures = [riarc_result:format_verdict(V) ++ why(V) || V <- Bad] ++ Others,
    Warnings = lists:usort(lists:append([maps:get(warnings, R, []) || R <- Results])),
    #{status => case Failures of [] -> pass; _ -> fail end,
      failures => Failures, verdicts => Verdicts, results => Results,
      report => report(Verdicts, Others, Warnings)}.

why(V) ->
    case riarc_result:format_why(V) of
        "" -> "";
        W -> ": " ++ string:trim(W)
    end.

%% What failed in a run beside its verdicts: errors, invariant violations, an overload.
run_failures(R) ->
    [flat("riarc error: ~ts", [riarc:format_error(E)]) || E <- maps:get(errors, R, [])]
        ++ [flat("riarc: ~b invariant violation(s) in the tracers", [length(Vs)])
            || Vs <- [maps:get(violations, R, [])], Vs =/= []]
        ++ [flat("riarc overload (~0tP): the trace was cut, partitions without a verdict are "
                 "inconclusive", [O, 8]) || O <- [maps:get(overload, R, undefined)], O =/= undefined].

report(Verdicts, Others, Warnings) ->
    Lines = [[riarc_result:format_verdict(V), "\n",
              case riarc_result:format_why(V) of "" -> ""; W -> [W, "\n"] end,
              riarc_result:format_explanation(V)] || V <- Verdicts],
    lists:flatten([case Verdicts of
                       [] -> "riarc: no process was monitored\n";
                       _ -> Lines
                   end,
                   [["riarc: FAILED: ", F, "\n"] || F <- Others],
                   [["riarc: warning: ", riarc_result:format_warning(W), "\n"] || W <- Warnings]]).

%% @doc A sentence for an error of this module.
-spec format_error(error_reason() | {module(), term()}) -> string().
format_error({property, _File, Reason}) ->
    "property file: " ++ riarc_shml:format_error(Reason);
format_error({bad_property, P}) ->
    flat("~0tP is not a property: give a property file's name or a Spec (a fun of arity 1 "
         "or a module exporting spec/1)", [P, 8]);
format_error({bad_target, T}) ->
    flat("~0tP is not something to watch: give self, a pid, a registered name, "
         "{application, App}, {supervisor, Ref}, new_processes or a list of them", [T, 8]);
format_error({attach, T, Reason}) ->
    flat("could not attach to ~0tP: ~ts", [T, 8, riarc:format_error(Reason)]);
format_error({keeper_down, Why}) ->
    flat("the process that held the watch ended (~0tP): nothing was checked to the end", [Why, 8]);
format_error({stop_timeout, Ms}) ->
    flat("detaching took longer than ~b ms: nothing was checked to the end", [Ms]);
format_error({?MODULE, Reason}) ->
    format_error(Reason);
format_error(Other) ->
    riarc:format_error(Other).

flat(Fmt, Args) -> lists:flatten(io_lib:format(Fmt, Args)).
