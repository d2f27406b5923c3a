%% @doc Outline monitoring of a recorded or replayed run: riarc (riarc:run/3) runs the
%% record &amp; replay controller as its root, so every process of the run is traced and
%% monitored as under `bin/riarc run', while the run takes its recorded decisions.
%%
%% The woven system looks slightly different to riarc than the plain one, and this module
%% hides the difference from the user's monitors: every process of a run starts in
%% `riarc_replay_rt:child/2', so the Spec is asked with the logical initial call the
%% plain system would have (the root's MFA, a proc_lib start's callback `{Mod, init,
%% [Args]}', the spawned MFA or fun), and the events the monitors see carry that MFA and
%% the messages as the program sent them (not wrapped in `{'$riarc_rr', ...}' or
%% `{'$riarc_rv', ...}'); the runtime's own messages (to and from the controller, of its
%% waits) are not shown, and a receive of the program that timed out is a `timeout' event
%% as in the plain run: in a recording the VM's own, in a replay, which waits for no recorded
%% timeout, the runtime's mark (riarc_replay_wait). The runtime's own waits never time
%% out, so every VM timeout is the program's, woven or not. The verdicts in the result
%% name processes the same way.
%% A property's trace patterns (riarc's `trace_patterns' option, which a compiled
%% property file sets) select plain messages; the run sends wrapped ones, so run/3 gives
%% riarc trace_patterns/1 of them, which select the messages wrapped or not.
%% ```
%% 1> {ok, #{result := R, monitoring := M}} = riarc_replay:record({riarc_demo, main, [8, 20]},
%%        "/tmp/t.rr", #{otp => true, monitor => riarc_demo_monitors}).
%% 2> riarc_replay_monitor:rejected(M).
%% true
%% 3> riarc_replay_monitor:logical_mfa({riarc_replay_rt, child, [run, {root, {m, f, []}}]}).
%% {m,f,[]}
%% 4> riarc_replay_monitor:trace_patterns(#{send => false, 'receive' => [{['_', '_', {store, '$1'}], [], []}]}).
%% #{'receive' => [{['_','_',{store,'$1'}],[],[]},
%%                 {['_','_',{'$riarc_rr','_',{store,'$1'}}],[],[]},
%%                 {['_','_',{'$riarc_rv','_',{store,'$1'}}],[],[]},
%%                 {['_','_','$riarc_rr_timed_out'],[],[]}],
%%   send => false}
%% '''
%% Where it runs: where the run runs (riarc_replay's `vm'). With `otp => true' that is the
%% peer node, which has riarc's code on its path; the Spec module must be on that path
%% too (a property file: compiled to a directory on the path, as `bin/riarc replay
%% --props' does).
%%
%% Race: riarc's `recv' events are arrival events (a message entering the mailbox), and a
%% replay fixes which message each receive takes, not the order in which messages arrive;
%% a monitor whose verdict depends on the arrival order of messages from different
%% senders can see a different order in each replay. Send, spawn and exit events, and
%% each process's own order of them, are the recorded program's.
-module(riarc_replay_monitor).

-behaviour(riarc_monitor).

-export([run/3, spec/1, logical_mfa/1, event/1, trace_patterns/1, result/1, rejected/1,
         format_error/1]).
%% The root riarc starts, and the monitor wrapper (riarc_monitor callbacks).
-export([root/3, analyse/2, explain/2]).
-export_type([error_reason/0]).

-type error_reason() :: {no_result, [map()]}.

%% The receive clause that traces the runtime's timeout marks.
-define(MARK_CLAUSE, {['_', '_', '$riarc_rr_timed_out'], [], []}).

%% @doc Runs {M, F, A} (riarc_replay's controller) as the root of a system monitored by
%% Spec with riarc Opts; returns the root's return value and riarc's result, with
%% verdicts named as by the plain system (result/1).
-spec run({module(), atom(), list()}, riarc_lambda:spec(), riarc:opts()) ->
    {ok, term(), riarc:result()} | {error, term()}.
run(MFA, Spec, Opts0) ->
    Ref = make_ref(),
    Opts1 = maps:merge(riarc_lambda:spec_defaults(Spec), Opts0),
    %% A property's trace patterns select plain messages; the woven run sends wrapped ones.
    Opts = case Opts1 of
               #{trace_patterns := P} -> Opts1#{trace_patterns := trace_patterns(P)};
               #{} -> Opts1
           end,
    case riarc:run({?MODULE, root, [self(), Ref, MFA]}, spec(Spec), Opts) of
        {ok, R} ->
            receive
                {?MODULE, Ref, Value} -> {ok, Value, result(R)}
            after 0 ->
                %% The root ended without a value: it crashed (riarc saw its exit).
                {error, {?MODULE, {no_result, maps:get(root_exits, R, [])}}}
            end;
        {error, _} = E ->
            E
    end.

%% @private The monitored system's root: runs the controller and hands its value over.
-spec root(pid(), reference(), {module(), atom(), list()}) -> ok.
root(Caller, Ref, {M, F, A}) ->
    Caller ! {?MODULE, Ref, apply(M, F, A)},
    ok.

%% @doc The Spec riarc is given: the root is nobody's business (it is the controller),
%% every process of the run is asked for by its logical initial call, and the monitor
%% Spec answers is wrapped so that it sees the events as the plain system makes them.
-spec spec(riarc_lambda:spec()) -> fun((riarc_event:mfa_args()) -> {ok, riarc_monitor:monitor()} | undefined).
spec(Spec) ->
    Lambda = riarc_lambda:new(Spec),
    fun({?MODULE, root, _}) ->
            undefined;
       (MFA) ->
            case riarc_lambda:lookup(Lambda, logical_mfa(MFA)) of
                {ok, Monitor} -> {ok, {?MODULE, Monitor}};
                undefined -> undefined;
                %% riarc reports a Spec that crashes or answers nonsense; let it.
                {error, {spec_crashed, _, {Class, Reason, Stack}}} -> erlang:raise(Class, Reason, Stack);
                {error, {bad_spec_result, _, Other}} -> Other
            end
    end.

%% @doc The initial call a process of a run would have in the plain system.
-spec logical_mfa(riarc_event:mfa_args()) -> riarc_event:mfa_args().
logical_mfa({riarc_replay_rt, child, [_Run, {root, MFA}]}) ->
    MFA;
logical_mfa({riarc_replay_rt, child, [_Run, {M, F, A}]}) ->
    riarc_lambda:logical_mfa({M, F, A});
logical_mfa({riarc_replay_rt, child, [_Run, Fun]}) when is_function(Fun) ->
    riarc_lambda:logical_mfa({erlang, apply, [Fun, []]});
logical_mfa(MFA) ->
    MFA.

%% @doc An event as the plain system makes it, or `skip' for the runtime's own messages
%% (a spawned process's registration, the root's value, a divergence, a request to write
%% the recordings an exit is about to end, all sent to the run's controller; the
%% controller's answer to that request; the messages of its waits).
-spec event(riarc_event:event()) -> riarc_event:event() | skip.
event({init, P, Parent, MFA}) -> {init, P, Parent, logical_mfa(MFA)};
event({spawn, P, Child, MFA}) -> {spawn, P, Child, logical_mfa(MFA)};
event({attached, P, MFA}) -> {attached, P, logical_mfa(MFA)};
event({send, From, To, Msg}) ->
    case runtime(Msg) of
        true -> skip;
        false -> {send, From, To, unwrap(Msg)}
    end;
event({recv, P, '$riarc_rr_timed_out'}) ->
    %% The runtime's mark of a receive of the program whose recorded timeout a replay
    %% took without waiting (riarc_replay_wait): the plain run's timeout event.
    {timeout, P};
event({recv, P, Msg}) ->
    case runtime(Msg) of
        true -> skip;
        false -> {recv, P, unwrap(Msg)}
    end;
%% The VM's `timeout' events are shown: the runtime's own waits never time out, so each
%% is a receive of the program that did, woven (in a recording) or not (gen_server's own
%% loop without `otp => true', a `receive after' without clauses), as in the plain run.
event(E) -> E.

runtime('$riarc_rr_timed_out') -> true;
runtime({riarc_rr_spawned, _, _}) -> true;
runtime({riarc_rr_root, _}) -> true;
runtime({riarc_rr_diverged, _, _, _, _}) -> true;
runtime({riarc_rr_salvage, _, _, _}) -> true;
runtime({riarc_rr_salvaged, _}) -> true;
runtime(Msg) -> riarc_replay_wait:own(Msg).

%% @doc The VM trace patterns (riarc's `trace_patterns' option) that select, in a woven
%% run, the message events the given patterns select in the plain system: each clause is
%% kept (for plain messages: exits, replies, messages of unwoven code) and is joined by
%% the same clause on the message wrapped as the receiver side and the sender side wrap
%% it. Sound because the clause's guard and body only name variables bound in its head,
%% and those are bound to the same parts of the message wrapped or not; so every event
%% whose unwrapped message the plain pattern keeps is traced. What it keeps besides
%% (a wrapped message whose envelope, not its message, matches a plain clause) is a
%% message no non-loop necessity matches, a stutter for the monitors
%% (docs/properties.md, "Trace patterns"). A clause this cannot read (a head that is not
%% a list of the kind's length, `'$_'' or `'$$'' in its guard or body) makes the kind
%% trace every message: more events, never fewer. The module's doc shows an example.
-spec trace_patterns(riarc_trace_pattern:patterns()) -> riarc_trace_pattern:patterns().
trace_patterns(Patterns) ->
    maps:map(fun(send, P) -> wrapped_pattern(2, P);
                ('receive', P) -> with_timeouts(wrapped_pattern(3, P));
                (_, P) -> P
             end, Patterns).

%% The runtime's timeout marks are traced whatever the property's receives are: they
%% stand for timeout events, which the VM traces whatever the pattern.
with_timeouts(true) -> true;
with_timeouts(false) -> [?MARK_CLAUSE];
with_timeouts(MS) -> MS ++ [?MARK_CLAUSE].

wrapped_pattern(_Len, P) when is_boolean(P) ->
    P;
wrapped_pattern(Len, MS) when is_list(MS) ->
    try lists:append([wrapped_clause(Len, C) || C <- MS])
    catch throw:unreadable -> true
    end;
wrapped_pattern(_Len, _) ->
    true.

wrapped_clause(Len, C = {Head, Guard, Body}) when is_list(Head), length(Head) =:= Len ->
    case whole_match(Guard) orelse whole_match(Body) of
        true -> throw(unreadable);
        false ->
            {Init, [Msg]} = lists:split(Len - 1, Head),
            [C, {Init ++ [{'$riarc_rr', '_', Msg}], Guard, Body},
             {Init ++ [{'$riarc_rv', '_', Msg}], Guard, Body}]
    end;
wrapped_clause(_Len, _) ->
    throw(unreadable).

%% Whether a guard or body names the whole matched input, which a wrapped message changes.
whole_match('$_') -> true;
whole_match('$$') -> true;
whole_match(T) when is_tuple(T) -> whole_match(tuple_to_list(T));
whole_match([H | T]) -> whole_match(H) orelse whole_match(T);
whole_match(_) -> false.

%% Receiver side {'$riarc_rr', SenderSeq, Msg}, sender side {'$riarc_rv', Version, Msg}.
unwrap({'$riarc_rr', _, Msg}) -> Msg;
unwrap({'$riarc_rv', _, Msg}) -> Msg;
unwrap(Msg) -> Msg.

%% @private The user's monitor, fed the plain system's events.
-spec analyse(riarc_event:event(), riarc_monitor:monitor()) -> {next, riarc_monitor:monitor()} | accept | reject.
analyse(Event, Monitor) ->
    case event(Event) of
        skip -> {next, Monitor};
        E ->
            case riarc_monitor:analyse(Monitor, E) of
                {next, M} -> {next, M};
                {verdict, V} -> V;
                %% The user's monitor failed: fail the same way, so that riarc gives the
                %% verdict error with the user's reason.
                {verdict, error, {Class, Reason, Stack}} -> erlang:raise(Class, Reason, Stack);
                {verdict, error, Other} -> error(Other)
            end
    end.

%% @private The user's monitor's own words on its verdict.
-spec explain(riarc_event:event(), riarc_monitor:monitor()) -> iodata().
explain(Event, Monitor) ->
    E = case event(Event) of
            skip -> Event;
            E0 -> E0
        end,
    case riarc_monitor:explain(Monitor, E) of
        #{words := W} -> W;
        %% No words of its own: riarc_monitor:explain/2 leaves out the words of an
        %% explain/2 that fails, and shows the state, which is the user's monitor.
        #{} -> exit(no_words)
    end.

%% @doc riarc's result with processes named and events shown as in the plain system.
-spec result(riarc:result()) -> riarc:result().
result(R = #{verdicts := Vs}) ->
    R#{verdicts := [verdict(V) || V <- Vs],
       root_exits => [X#{mfa := logical_mfa(M)} || X = #{mfa := M} <- maps:get(root_exits, R, [])]}.

verdict(V = #{mfa := MFA}) ->
    V1 = V#{mfa := logical_mfa(MFA)},
    case V1 of
        #{explanation := X = #{mfa := XM, last_events := Es, deciding_event := D}} ->
            V1#{explanation := X#{mfa := logical_mfa(XM),
                                  last_events := [E || E0 <- Es, E <- [event(E0)], E =/= skip],
                                  deciding_event := shown(D)}};
        #{} ->
            V1
    end.

shown(E) ->
    case event(E) of
        skip -> E;
        E1 -> E1
    end.

%% @doc Whether a monitored run's result has a reject verdict.
-spec rejected(riarc:result()) -> boolean().
rejected(#{verdicts := Vs}) ->
    lists:any(fun(#{verdict := V}) -> V =:= reject end, Vs).

%% @doc A sentence for each error_reason().
-spec format_error(error_reason()) -> string().
format_error({no_result, Exits}) ->
    lists:flatten(io_lib:format("the monitored run's controller ended without a result: ~0tp",
                                [[Why || #{reason := Why} <- Exits]])).
