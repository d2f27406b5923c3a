%% @doc The result of a monitored run, the same for every way of monitoring (riarc's
%% tracers online, the same tracers offline, centralised and inline monitoring): one
%% builder, one verdict entry, one verdict line and one verdict logger.
%% ```
%% 1> E = riarc_result:entry(list_to_pid("<0.90.0>"), {riarc_demo_pqr, p, []}, accept, 4, undefined).
%% #{events => 4,mfa => {riarc_demo_pqr,p,[]},pid => <0.90.0>,verdict => accept}
%% 2> riarc_result:format_verdict(E).
%% "<0.90.0> riarc_demo_pqr:p/0 accept"
%% 3> maps:get(routed, riarc_result:make(#{verdicts => [E]})).
%% 0
%% '''
-module(riarc_result).

-export([make/1, entry/5, monitor_entry/4, format_verdict/1, format_why/1, format_process/2, format_explanation/1,
         log_verdict/3, status/1, seen_cut/2]).
-export([warnings/2, format_warning/1]).
-export([format_sid/1, format_mfa/1]).
-export_type([t/0, verdict_entry/0, explanation/0, warning/0]).

%% What may make a run's verdicts say less than the user meant, though nothing failed:
%% no process was monitored at all; a Spec module's own warnings (a compiled property's,
%% `FILE:LINE:COLUMN: warning: ...'); a clause of a Spec module that matched no process; a
%% backend whose trace messages carry no seal (the process tracers' fallback), so that
%% riarc could not refuse trace events the monitored system forged.
-type warning() :: {no_process_monitored, module() | fun()} | {spec, string()}
                 | {unmatched_clause, Place :: string(), Text :: string()}
                 | {unsealed, evm} | {vacuous_accepts, pos_integer()}.

-type verdict_entry() :: #{pid := riarc_event:sid(), mfa := riarc_event:mfa_args(),
                           verdict := riarc_monitor:verdict(), events := non_neg_integer(),
                           reason => term(), explanation => explanation(),
                           %% An entry of a followed node's session: its node, the
                           %% process that started it, the partition it is within.
                           node => node(), parent => term(), within => term(),
                           why => #{event_no => pos_integer(), event => riarc_event:event(),
                                    words => unicode:unicode_binary(), ended_after => non_neg_integer(),
                                    clause => {string(), pos_integer()}}}.
%% Why a partition was rejected (or its monitor failed): its last events, the one that
%% decided, and what the monitor can say about its state then.
-type explanation() :: #{process := riarc_event:sid(), mfa := riarc_event:mfa_args(),
                         last_events := [riarc_event:event()],
                         deciding_event := riarc_event:event(),
                         monitor := #{state => term(), words => unicode:unicode_binary()}}.
-type t() :: #{verdicts := [verdict_entry()],
               tracers := #{spawned := non_neg_integer(), peak := non_neg_integer()},
               events := non_neg_integer(),
               analysed := non_neg_integer(),
               routed := non_neg_integer(),
               reordered := non_neg_integer(),
               violations := [map()],
               errors := [term()],
               duration_us := non_neg_integer(),
               overload := undefined | term(),
               %% Roots of the system that ended abnormally (crashed, failed to start).
               root_exits := [#{pid := riarc_event:sid(), mfa := riarc_event:mfa_args(),
                                reason := term()}],
               warnings := [warning()],
               atom() => term()}.

%% @doc A result from what a monitoring mode knows; what it does not have is zero or empty.
-spec make(map()) -> t().
make(Fields) ->
    maps:merge(#{verdicts => [], tracers => #{spawned => 0, peak => 0}, events => 0,
                 analysed => 0, routed => 0, reordered => 0, violations => [], errors => [],
                 duration_us => 0, overload => undefined, root_exits => [], warnings => []},
               Fields).

%% @doc The warnings of a run monitored by Spec that gave these verdicts. A Spec module
%% that exports `warnings/0' (its own, as strings), `clauses/0' ([{Index, Place, Text}])
%% and `clauses/1' (the indices of the clauses an MFA matches), as a compiled property
%% file does, is told which of its clauses matched no process.
-spec warnings(riarc_lambda:spec(), [verdict_entry()]) -> [warning()].
warnings(Spec, Verdicts) ->
    Static = [{spec, W} || exports(Spec, warnings, 0), W <- Spec:warnings()],
    Unmatched = case Verdicts =/= [] andalso exports(Spec, clauses, 0)
                     andalso exports(Spec, clauses, 1) of
                    true ->
                        Matched = lists:usort(lists:append([Spec:clauses(MFA)
                                                            || #{mfa := MFA} <- Verdicts])),
                        [{unmatched_clause, Place, Text} || {I, Place, Text} <- Spec:clauses(),
                                                            not lists:member(I, Matched)];
                    false -> []
                end,
    Vacuous = [P || #{pid := P, verdict := accept, why := #{words := <<"vacuous:", _/binary>>}} <- Verdicts],
    Static ++ Unmatched ++ [{no_process_monitored, Spec} || Verdicts =:= []]
        ++ [{vacuous_accepts, length(Vacuous)} || Vacuous =/= []].

exports(Spec, F, A) when is_atom(Spec) ->
    _ = code:ensure_loaded(Spec),
    erlang:function_exported(Spec, F, A);
exports(_Spec, _F, _A) ->
    false.

%% @doc One sentence for a warning.
-spec format_warning(warning()) -> string().
format_warning({no_process_monitored, Spec}) ->
    lists:flatten(io_lib:format("no process was monitored: ~ts gave none of the system's "
                                "processes a monitor",
                                [case is_atom(Spec) of true -> atom_to_list(Spec);
                                                       false -> "the Spec" end]));
format_warning({vacuous_accepts, N}) ->
    lists:flatten(io_lib:format("~b monitor(s) accepted vacuously: no necessity of the property "
                                "named the event that decided (their why lines say which); "
                                "check that the property names the events the system makes", [N]));
format_warning({spec, W}) ->
    W;
format_warning({unmatched_clause, Place, Text}) ->
    lists:flatten(io_lib:format("~ts: the clause `with ~ts' matched no process in this run",
                                [Place, Text]));
format_warning({unsealed, evm}) ->
    "the process tracers' backend (evm: the routing table's NIF did not load, or was not "
    "asked for) cannot tell the VM's trace messages from ones the monitored system forges: "
    "a forged trace event would have been believed".

%% @doc The exit status a result gives: 0 only when every monitored partition was
%% accepted or ended without a verdict and nothing went wrong (no error, no invariant
%% violation, no incomplete trace, no overload); 1 otherwise.
-spec status(t()) -> 0 | 1.
status(R = #{verdicts := Vs}) ->
    Clean = lists:all(fun(#{verdict := V}) -> V =:= accept orelse V =:= none end, Vs)
        andalso maps:get(errors, R, []) =:= [] andalso maps:get(violations, R, []) =:= []
        andalso maps:get(overload, R, undefined) =:= undefined,
    case Clean of true -> 0; false -> 1 end.

%% @doc A partition's entry once what riarc saw of it was cut (Cut: who and what call, as
%% a `cut' reason holds them; none: nothing cut it): an error saying what cut it and what
%% the monitor said on the partial trace, unless it was an error already.
-spec seen_cut(none | map(), verdict_entry()) -> verdict_entry().
seen_cut(none, E) -> E;
seen_cut(_Cut, E = #{verdict := error}) -> E;
seen_cut(Cut, E = #{verdict := V}) -> E#{verdict => error, reason => {cut, Cut#{verdict_on_partial_trace => V}}}.

%% @doc One monitored partition's verdict; `Reason' undefined when there is none to give.
-spec entry(riarc_event:sid(), riarc_event:mfa_args(), riarc_monitor:verdict(),
            non_neg_integer(), term()) -> verdict_entry().
entry(Pid, MFA, Verdict, Events, undefined) ->
    #{pid => Pid, mfa => MFA, verdict => Verdict, events => Events};
entry(Pid, MFA, Verdict, Events, Reason) ->
    (entry(Pid, MFA, Verdict, Events, undefined))#{reason => Reason}.

%% @doc The entry of a verdict a partition's monitor gave (riarc_analysis_core's
%% `riarc_verdict': V, Why, after N events), with its explanation, or none. Every mode
%% builds its entries here, so that the same behaviour reads the same in each: an accept,
%% a reject or a partition's end says why (format_why/1); an error or an inconclusive
%% verdict has its reason.
%% ```
%% 1> riarc_result:monitor_entry(p, {m, f, []}, {accept, {why, #{event_no => 2}}, 2}, none).
%% #{events => 2,mfa => {m,f,[]},pid => p,verdict => accept,why => #{event_no => 2}}
%% '''
-spec monitor_entry(riarc_event:sid(), riarc_event:mfa_args(),
                    {riarc_monitor:verdict() | none, term(), non_neg_integer()}, explanation() | none) ->
    verdict_entry().
monitor_entry(Pid, MFA, {V, Why, N}, Expl) ->
    Entry = case Why of
                {why, W} -> (entry(Pid, MFA, V, N, undefined))#{why => W};
                _ -> entry(Pid, MFA, V, N, Why)
            end,
    case Expl of
        none -> Entry;
        _ -> Entry#{explanation => Expl}
    end.

%% @doc One line for a verdict: `<pid> <mfa> <verdict>'.
-spec format_verdict(verdict_entry()) -> string().
format_verdict(#{pid := Pid, mfa := MFA, verdict := V}) ->
    flat("~s ~s", [format_process(Pid, MFA), V]).

%% @doc A process as verdict lines name it: `<pid> M:F/Arity'.
-spec format_process(riarc_event:sid(), riarc_event:mfa_args()) -> string().
format_process(Pid, MFA) ->
    flat("~s ~s", [format_sid(Pid), format_mfa(MFA)]).

%% @doc Logs a verdict through OTP logger when `Log' is true: a reject as a warning, an
%% error as an error, the others at info level. `Mode' names the monitoring method.
-spec log_verdict(boolean(), string(), verdict_entry()) -> ok.
log_verdict(false, _Mode, _Entry) -> ok;
log_verdict(true, Mode, Entry = #{verdict := V}) ->
    Level = case V of reject -> warning; error -> error; _ -> info end,
    Why = case Entry of #{reason := R} -> io_lib:format(" (~0tp)", [R]); #{} -> "" end,
    logger:log(Level, "riarc~s: ~s~s", [Mode, format_verdict(Entry), Why]).

%% @doc Why a verdict was reached, in one line (empty for an entry that does not say):
%% the event that decided an accept or a reject, with the monitor's own words (a compiled
%% property names the clause, or says no clause named the event); that a partition ended
%% with no verdict; an error's or inconclusive verdict's reason. Terms are bounded.
-spec format_why(verdict_entry()) -> string().
format_why(#{why := #{event_no := N, event := E} = W}) ->
    Words = case W of #{words := Ws} -> [": ", Ws]; #{} -> [] end,
    flat("    decided at event ~b, ~ts~ts", [N, bounded(E), Words]);
format_why(#{why := #{ended_after := N}}) ->
    flat("    no verdict: the partition's trace ended after ~b events", [N]);
format_why(#{reason := R}) ->
    flat("    reason: ~ts", [bounded(R)]);
format_why(_) ->
    "".

%% A term as a line shows it: bounded (riarc_term_show), on one line.
bounded(T) -> riarc_term_show:show(T).

%% @doc The explanation of a verdict as indented lines (empty when there is none): the
%% monitor's words, its last events with the deciding one marked, its state. Events and
%% state are bounded (riarc_term_show): a big message or state is cut, not printed whole.
-spec format_explanation(verdict_entry()) -> string().
format_explanation(#{explanation := #{last_events := Es, deciding_event := D, monitor := M}}) ->
    Words = case M of #{words := W} -> ["    why: ", W, "\n"]; #{} -> [] end,
    Events = [io_lib:format("    ~s ~ts~n", [case E of D -> "=>"; _ -> "  " end, bounded(E)]) || E <- Es],
    State = case M of
                #{state := St} -> io_lib:format("    monitor state: ~ts~n", [bounded(St)]);
                #{} -> []
            end,
    lists:flatten([Words, "    last events (=> decided):\n", Events, State]);
format_explanation(_) ->
    "".

%% @doc A process as verdict lines name it: its pid, or what a trace named it by.
-spec format_sid(riarc_event:sid()) -> string().
format_sid(Pid) when is_pid(Pid) -> pid_to_list(Pid);
format_sid({riarc_unknown_atom, B}) when is_binary(B) -> unicode:characters_to_list(B);
format_sid(Other) -> flat("~0tp", [Other]).

%% @doc An initial call as verdict lines name it: `M:F/Arity'.
-spec format_mfa(riarc_event:mfa_args()) -> string().
format_mfa({M, F, A}) when is_list(A) -> flat("~ts:~ts/~b", [name(M), name(F), length(A)]);
format_mfa(Other) -> flat("~0tp", [Other]).

%% A module's or function's name; offline, one the checking node lacks
%% ({riarc_unknown_atom, Utf8}) as written.
name(A) when is_atom(A) -> atom_to_list(A);
name({riarc_unknown_atom, B}) when is_binary(B) -> unicode:characters_to_list(B);
name(Other) -> flat("~0tp", [Other]).

flat(Fmt, Args) -> lists:flatten(io_lib:format(Fmt, Args)).
