%% @doc Monitors, and ANALYSEEVT (App. C.5.2): feeding one event to a monitor and turning
%% what it answers into the next monitor or a verdict.
%%
%% A monitor is either
%% <ul>
%% <li>a fun `fun((Event) -> Monitor | accept | reject)': the next monitor or a verdict;</li>
%% <li>`{Module, State}' where Module implements this behaviour:
%%     `analyse(Event, State) -> {next, State} | accept | reject'.</li>
%% </ul>
%% Verdicts are irrevocable: after accept or reject the monitor sees no more events. A
%% monitor that crashes, or answers anything else, gets the verdict `error' and no more
%% events. Online, each partition's monitor runs in a process of its own
%% ({@link riarc_analysis}), so its tracer goes on routing for everybody else whatever
%% the monitor does; a step over its budget (`monitor_budget') is an `error' too.
%% ```
%% 1> M = fun Mon({send, _, _, boom}) -> reject; Mon(_) -> Mon end.
%% 2> {next, M2} = riarc_monitor:analyse(M, {recv, p, hello}).
%% 3> riarc_monitor:analyse(M2, {send, p, q, boom}).
%% {verdict,reject}
%% 4> riarc_monitor:analyse(fun(_) -> 1/0 end, {recv, p, x}).
%% {verdict,error,{error,badarith,[...]}}
%% '''
-module(riarc_monitor).

-export([analyse/2, decide/2, is_monitor/1, explain/2]).
-export_type([monitor/0, verdict/0, result/0, where/0]).

-callback analyse(Event :: riarc_event:event(), State :: term()) ->
    {next, NewState :: term()} | accept | reject.
%% Optional: the monitor's own words on why Event, in State, led to its verdict.
-callback explain(Event :: riarc_event:event(), State :: term()) -> iodata().
-optional_callbacks([explain/2]).

-type monitor() :: fun((riarc_event:event()) -> term()) | {module(), term()}.
%% `inconclusive': the partition's trace was cut short by riarc itself (an overload
%% limit), so no verdict can be given; never a silent accept.
-type verdict() :: accept | reject | error | none | inconclusive.
-type result() :: {next, monitor()} | {verdict, accept | reject} | {verdict, error, term()}.
%% Where in a property a verdict was decided, when the monitor says.
-type where() :: #{clause => {string(), pos_integer()}}.

%% @doc ANALYSEEVT(ςM, e): one step of the monitor.
-spec analyse(monitor(), riarc_event:event()) -> result().
analyse(Monitor, Event) ->
    case decide(Monitor, Event) of
        {verdict, V, _Words, _Where} -> {verdict, V};
        Result -> Result
    end.

%% @doc analyse/2, with the monitor's own words on a verdict when it gave some (a
%% monitor may answer `{accept, Words}' or `{reject, Words}', Words text (a string or a
%% UTF-8 binary, given back as a binary), as a compiled property does: which necessity
%% reached ff, or that none named the event).
%% Words that start with `vacuous:' mark an accept on an event no necessity named: the
%% result warns of them (riarc_result:warnings/2). A monitor may also name the clause of
%% its property that decided, `{reject, Words, #{clause => {File, Line}}}' (a compiled
%% property does): Where, which the verdict's why map carries.
-spec decide(monitor(), riarc_event:event()) ->
    {next, monitor()} | {verdict, accept | reject, unicode:unicode_binary() | none, where()}
    | {verdict, error, term()}.
decide(Monitor, Event) ->
    try step(Monitor, Event) of
        Result -> Result
    catch
        Class:Reason:Stack -> {verdict, error, {Class, Reason, Stack}}
    end.

step(Fun, Event) when is_function(Fun, 1) ->
    case Fun(Event) of
        Next when is_function(Next, 1) -> {next, Next};
        %% The atoms accept and reject are verdicts, never a module's name.
        {Mod, _} = Next when is_atom(Mod), Mod =/= accept, Mod =/= reject -> {next, Next};
        Answer -> verdict(Answer)
    end;
step({Mod, State}, Event) when is_atom(Mod) ->
    case Mod:analyse(Event, State) of
        {next, State1} -> {next, {Mod, State1}};
        Answer -> verdict(Answer)
    end;
step(Other, _Event) ->
    {verdict, error, {not_a_monitor, Other}}.

%% A monitor's verdict, with its words or without.
verdict(V) when V =:= accept; V =:= reject -> {verdict, V, none, #{}};
verdict(Answer = {V, Words}) when V =:= accept; V =:= reject ->
    with_words(V, words(Words), #{}, Answer);
verdict(Answer = {V, Words, #{clause := {File, Line}}})
  when (V =:= accept orelse V =:= reject), is_list(File), is_integer(Line), Line > 0 ->
    with_words(V, words(Words), #{clause => {File, Line}}, Answer);
verdict(Other) -> {verdict, error, {bad_monitor_result, Other}}.

with_words(V, Words, Where, _Answer) when is_binary(Words) -> {verdict, V, Words, Where};
with_words(_V, _Words, _Where, Answer) -> {verdict, error, {bad_monitor_result, Answer}}.

%% A monitor's words as every entry keeps them: UTF-8 text in a binary. Tens of thousands
%% of entries repeat a compiled property's few sentences: as strings they were three
%% quarters of a result (2 words of heap a character; 135 words an entry on chains).
%% Anything that is not text is refused (the caller's bad_monitor_result).
words(Words) when is_binary(Words); is_list(Words) ->
    try unicode:characters_to_binary(Words) of
        Bin when is_binary(Bin) -> Bin;
        _ -> bad
    catch
        error:_ -> bad
    end;
words(_) ->
    bad.

%% @doc What a monitor can say about the event that decided its verdict: for a
%% `{Module, State}' monitor, the state it was in and, if the module exports explain/2,
%% its own words; a fun monitor has nothing to show.
-spec explain(monitor(), riarc_event:event()) -> #{state => term(), words => unicode:unicode_binary()}.
explain({Mod, State}, Event) when is_atom(Mod) ->
    Words = case erlang:function_exported(Mod, explain, 2) of
                true ->
                    try words(Mod:explain(Event, State)) of
                        W when is_binary(W) -> #{words => W};
                        bad -> #{}
                    catch _:_ -> #{}
                    end;
                false -> #{}
            end,
    Words#{state => State};
explain(_Fun, _Event) ->
    #{}.

%% @doc True when the term has the shape of a monitor.
-spec is_monitor(term()) -> boolean().
is_monitor(Fun) when is_function(Fun, 1) -> true;
is_monitor({Mod, _}) when is_atom(Mod) -> true;
is_monitor(_) -> false.
