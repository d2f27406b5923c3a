%% @doc Inline monitoring (000 fig. 1a), to compare riarc against and for systems where
%% lock-step monitoring is wanted: each monitored process runs its own monitor, inside
%% itself, at its spawn, send, receive and exit points, woven in by
%% {@link riarc_inline_transform}. Specs, monitors, events and the result are those of
%% {@link riarc:run/3}: each monitor steps as a partition's does under riarc
%% (riarc_analysis_core), so an entry says what riarc's would (why, a reject's
%% explanation, `inconclusive' after a message cut at `max_payload').
%% ```
%% 1> ok = riarc_inline:instrument([riarc_demo_pqr]).
%% 2> Spec = fun(_) -> {ok, fun M({exit, _, normal}) -> accept; M(_) -> M end} end.
%% 3> {ok, R} = riarc_inline:run({riarc_demo_pqr, p, []}, Spec, #{}).
%% 4> [{maps:get(mfa, V), maps:get(verdict, V)} || V <- maps:get(verdicts, R)].
%% [{{riarc_demo_pqr,p,[]},accept},{{riarc_demo_pqr,q,[]},accept},{{riarc_demo_pqr,r,[]},accept}]
%% 5> riarc_inline:restore([riarc_demo_pqr]).
%% ok
%% '''
%% Only woven code reports: run/3 monitors what the woven modules do. What differs from
%% outline monitoring (see docs/inline.md): a process Λ does not select is not monitored
%% at all (outline, it joins its parent's partition: one monitor cannot be shared between
%% processes without messages), so its parent's partition, unless decided by then, is
%% `inconclusive', reason `{unmonitored_child, Info}'; an exit the process does not run
%% into (a kill from outside, a gen_server stopped without terminate/2) is not seen, and
%% its monitor keeps the verdict it had, or, with none, the partition is `inconclusive',
%% reason `{exit_not_seen, Reason}'. Neither ever reads as a pass.
-module(riarc_inline).

-export([run/3, instrument/1, restore/1, format_error/1]).
-export_type([error_reason/0]).

%% The run's own errors, run/3's arguments refused by riarc:validate/3, and weaving's.
-type error_reason() :: inline_run_active
                      | {timeout, timeout(), Alive :: [pid()]}
                      | {riarc, riarc:error_reason()}
                      | {riarc_weave, riarc_weave:error_reason()}.

-record(collector, {live = #{} :: #{pid() => reference()},
            entries = #{} :: #{pid() => map()},
            order = [] :: [pid()],
            errors = [] :: [term()],
            log :: boolean(),
            timeout = infinity :: timeout()}).

%%% Weaving ------------------------------------------------------------------------------

%% @doc Recompiles loaded modules from the abstract code in their beams (debug_info) with
%% the inline weaver, and loads the woven code in their place.
-spec instrument([module()]) -> ok | {error, {?MODULE, error_reason()}}.
instrument(Modules) ->
    case weave_all(Modules, []) of
        {ok, Woven} -> weave_result(load_all(Woven));
        Error -> weave_result(Error)
    end.

%% The VM keeps two versions of a module at most: a module whose old code is still
%% running (e.g. woven twice without restore) cannot be loaded again without killing
%% those processes, which is the user's call, not ours.
load_all([]) -> ok;
load_all([{M, File, Bin} | Rest]) ->
    case riarc_weave:load(M, File, Bin) of
        ok -> load_all(Rest);
        Error -> Error
    end.

weave_all([], Acc) -> {ok, lists:reverse(Acc)};
weave_all([M | Ms], Acc) ->
    case riarc_weave:compile(M, riarc_inline_transform) of
        {ok, File, Bin} -> weave_all(Ms, [{M, File, Bin} | Acc]);
        Error -> Error
    end.

%% @doc Puts the modules' own code back from their beams. Woven code must no longer be
%% running: processes still in it are killed when it is purged, as for any code reload.
-spec restore([module()]) -> ok | {error, {?MODULE, error_reason()}}.
restore(Modules) -> weave_result(riarc_weave:restore(Modules)).

weave_result(ok) -> ok;
weave_result({error, {riarc_weave, _} = Error}) -> {error, {?MODULE, Error}}.

%%% Runs ---------------------------------------------------------------------------------

%% @doc Runs {M, F, Args} as the root of a system whose woven modules monitor themselves,
%% and returns once every process it spawned through woven code has ended.
-spec run({module(), atom(), list()}, riarc_lambda:spec(), riarc:opts()) ->
    {ok, riarc_result:t()} | {error, {?MODULE, error_reason()}}.
run(MFA = {M, F, A}, Spec, Opts) ->
    case riarc:validate(MFA, Spec, Opts) of
        {ok, Valid = #{timeout := Timeout, events := Events, log := Log, explain := Explain}} ->
            case riarc_inline_rt:active() of
                true -> {error, {?MODULE, inline_run_active}};
                false ->
                    Run = #{collector => self(), lambda => riarc_lambda:new(Spec),
                            send => lists:member(send, Events), recv => lists:member(recv, Events),
                            explain => Explain,
                            max_payload => maps:get(max_payload, riarc_opts:limits(Valid))},
                    ok = riarc_inline_rt:activate(Run),
                    T0 = erlang:monotonic_time(microsecond),
                    try
                        %% Spawned as woven code spawns: registered with this collector,
                        %% with its monitor and its init event.
                        _Root = riarc_inline_rt:spawn({erlang, spawn}, [M, F, A]),
                        collect(#collector{log = Log, timeout = Timeout}, deadline(Timeout), T0)
                    after
                        riarc_inline_rt:deactivate()
                    end
            end;
        {error, {riarc, _} = Error} -> {error, {?MODULE, Error}}
    end.

deadline(infinity) -> infinity;
deadline(T) -> erlang:monotonic_time(millisecond) + T.

%% The run is over when every registered process is down. A process is registered by its
%% parent before the parent's own end, and a process's messages and its 'DOWN' reach us in
%% the order it sent them, so `live' cannot empty while a registration is on its way.
collect(C = #collector{live = Live}, _Deadline, T0) when map_size(Live) =:= 0, C#collector.order =/= [] ->
    {ok, result(C, T0)};
collect(C, Deadline, T0) ->
    receive
        {riarc_inline_up, Pid, MFA, {Pid, Ref}} ->
            Pid ! {Ref, registered},
            collect(up(Pid, MFA, true, C), Deadline, T0);
        {riarc_inline_up, Pid, MFA, Monitored} ->
            collect(up(Pid, MFA, Monitored, C), Deadline, T0);
        {riarc_inline_verdict, Pid, Entry = #{mfa := MFA}} ->
            collect(verdict(Pid, MFA, Entry, C), Deadline, T0);
        {riarc_inline_done, Pid, MFA, decided} ->
            collect(update(Pid, MFA, fun(E) -> E#{exit_seen => true} end, C), Deadline, T0);
        {riarc_inline_done, Pid, MFA, Entry} ->
            collect(verdict(Pid, MFA, Entry#{exit_seen => true}, C), Deadline, T0);
        {riarc_inline_error, E} ->
            collect(C#collector{errors = [E | C#collector.errors]}, Deadline, T0);
        {'DOWN', Ref, process, Pid, Reason} when is_map_key(Pid, C#collector.live) ->
            Ref = maps:get(Pid, C#collector.live),
            collect(down(Pid, Reason, C#collector{live = maps:remove(Pid, C#collector.live)}), Deadline, T0)
    after timeout(Deadline) ->
            {error, {?MODULE, {timeout, C#collector.timeout, maps:keys(C#collector.live)}}}
    end.

timeout(infinity) -> infinity;
timeout(D) -> max(0, D - erlang:monotonic_time(millisecond)).

up(Pid, MFA, Monitored, C = #collector{live = Live}) ->
    C1 = C#collector{live = Live#{Pid => erlang:monitor(process, Pid)}, order = [Pid | C#collector.order]},
    case Monitored of
        true -> update(Pid, MFA, fun(E) -> E end, C1);
        false -> C1
    end.

%% Entries are created by whichever message about a process comes first.
update(Pid, MFA, Fun, C = #collector{entries = Es}) ->
    E0 = maps:get(Pid, Es, #{pid => Pid, mfa => MFA, verdict => none, events => 0}),
    C#collector{entries = Es#{Pid => Fun(E0)}}.

%% The entry a process's analysis gave (riarc_analysis_core:entry/1).
verdict(Pid, MFA, Entry, C) ->
    C1 = update(Pid, MFA, fun(_) -> Entry end, C),
    log(maps:remove(exit_seen, Entry), C1),
    C1.

%% A monitored process that ended without running into its exit point: its monitor did
%% not see the exit, which might have decided (an abnormal exit rejected, say), and its
%% state went with the process. A verdict it had stands; without one, the partition
%% did not end under its monitor's eyes: inconclusive, saying why, never a silent none.
down(Pid, Reason, C = #collector{entries = Es}) ->
    case Es of
        #{Pid := E = #{exit_seen := true}} -> C#collector{entries = Es#{Pid := maps:remove(exit_seen, E)}};
        #{Pid := E = #{verdict := none}} ->
            C#collector{entries = Es#{Pid := E#{verdict => inconclusive, reason => {exit_not_seen, Reason}}}};
        #{} -> C
    end.

%% A monitored process that reported only its start and end, and whose module was not
%% woven (not instrumented, or put back), most likely ran code that reports nothing: its
%% monitor's accept at the end, or its want of a verdict, is on a trace that may lack
%% every event between. Inconclusive, saying which module. An accept at the start holds
%% on any trace, a reject on events the process did show; a process whose woven code
%% reported more (a wrapper calling woven code, say) is taken as seen.
unwoven(E = #{mfa := {M, _, _}, verdict := V, events := N}) when (V =:= accept orelse V =:= none),
                                                                 N =< 2 ->
    AtEnd = case E of
                #{why := #{event := {exit, _, _}}} -> true;
                #{} -> V =:= none
            end,
    case AtEnd andalso not riarc_inline_rt:woven(M) of
        true -> E#{verdict => inconclusive, reason => {not_woven, M}};
        false -> E
    end;
unwoven(E) ->
    E.

log(E, #collector{log = Log}) ->
    riarc_result:log_verdict(Log, " (inline)", E).

result(C = #collector{entries = Es}, T0) ->
    Verdicts = [unwoven(maps:remove(exit_seen, maps:get(P, Es)))
                || P <- lists:reverse(C#collector.order), is_map_key(P, Es)],
    %% Inline, every event a process reports is one its own monitor analysed.
    Analysed = lists:sum([maps:get(events, V) || V <- Verdicts]),
    riarc_result:make(#{verdicts => Verdicts,
                        events => Analysed,
                        analysed => Analysed,
                        errors => lists:reverse(C#collector.errors),
                        duration_us => erlang:monotonic_time(microsecond) - T0}).

%% @doc A sentence for an error this module returned.
-spec format_error(error_reason()) -> string().
format_error(inline_run_active) ->
    "an inline run is already active on this node; run one at a time";
format_error({timeout, T, Alive}) ->
    lists:flatten(io_lib:format("timed out after ~0tp ms with ~b woven process(es) still alive: ~0tp",
                                [T, length(Alive), lists:sublist(Alive, 10)]));
format_error({riarc, Reason}) ->
    riarc:format_error(Reason);
format_error({riarc_weave, Reason}) ->
    riarc_weave:format_error(Reason).
