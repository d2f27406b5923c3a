%% @doc The rules a trace's events keep, whatever its format: what a run of the VM can
%% give and a checked trace must. A trace that breaks one is malformed; the check
%% refuses it with the rule, the file and the position (line for text, byte offset for
%% binary and dbg, event number for a list), never a verdict on what it cannot be sure
%% the run was.
%% <ul>
%% <li>`after_exit': no event of a process after its exit (its exit is its last);</li>
%% <li>`exit_before_init': no init of a process after its exit;</li>
%% <li>`duplicate_init': one init per process;</li>
%% <li>`duplicate_spawn': one spawn per process (a process has one parent, once);</li>
%% <li>`self_spawn': no process spawns itself, nor is its own parent in its init;</li>
%% <li>`parent_mismatch': a process's init names the parent whose spawn created it;</li>
%% <li>`spawn_cycle': no process is its own ancestor (P spawns Q, Q spawns P). Every
%%     process of a cycle would be spawned, so none of them a root: nothing would check
%%     them.</li>
%% </ul>
%% Events of different processes may come in any order, and a child's events before its
%% parent's spawn of it (App. B.1): none of that breaks a rule. The state takes a few
%% words per process the trace names.
%% ```
%% 1> S0 = riarc_trace_rules:new("t.txt").
%% 2> {ok, S1} = riarc_trace_rules:step({exit, p, normal}, {line, 1}, S0).
%% 3> {error, R} = riarc_trace_rules:step({send, p, q, hi}, {line, 2}, S1).
%% 4> riarc_trace_rules:format_error(R).
%% "t.txt: line 2: an event of process p after its exit (line 1 of t.txt): {send,p,q,hi} (rule after_exit: a process's exit is its last event)"
%% '''
-module(riarc_trace_rules).

-export([new/1, step/3, finish/1, format_error/1]).
-export_type([state/0, pos/0, error_reason/0]).

-type sid() :: riarc_event:sid().
%% Where an event is: a line of a text trace, the byte offset of a record, or the
%% number of an event in a list.
-type pos() :: {line, pos_integer()} | {byte, non_neg_integer()} | {event, pos_integer()}.
-type at() :: {string(), pos()}.
-type error_reason() ::
        {after_exit, at(), sid(), riarc_event:traced(), at()}
      | {exit_before_init, at(), sid(), at()}
      | {duplicate_init, at(), sid(), at()}
      | {duplicate_spawn, at(), sid(), at()}
      | {self_spawn, at(), sid()}
      | {parent_mismatch, at(), sid(), Spawned :: sid(), Named :: sid(), at()}
      | {spawn_cycle, at(), [sid()]}.

-record(st, {file :: string(),
             exited = #{} :: #{sid() => at()},
             inits = #{} :: #{sid() => {sid(), at()}},            % child -> its parent, where
             spawns = #{} :: #{sid() => {sid(), at()}}}).         % child -> its parent, where
-opaque state() :: #st{}.

%% @doc A state for the events of File (the name errors give).
-spec new(string()) -> state().
new(File) -> #st{file = File}.

%% @doc Takes one event, at Pos of the file (or of File, for a trace read from several
%% files: a dbg wrap set).
-spec step(riarc_event:traced(), pos() | at(), state()) -> {ok, state()} | {error, error_reason()}.
step(Ev, {File, Pos}, St) when is_list(File) -> step(Ev, Pos, St#st{file = File});
%% The recorder's note that a look found the node's patterns changed is no event of the
%% process it names (the root, which may have exited): it is the whole recording's.
step({cut, _, {patterns_changed, _}}, _Pos, St) ->
    {ok, St};
step(Ev, Pos, St = #st{file = File}) ->
    At = {File, Pos},
    S = riarc_event:origin(Ev),
    case St#st.exited of
        #{S := Exit} when element(1, Ev) =:= init -> {error, {exit_before_init, At, S, Exit}};
        #{S := Exit} -> {error, {after_exit, At, S, Ev, Exit}};
        #{} -> kind(Ev, At, St)
    end.

kind({exit, S, _}, At, St = #st{exited = X}) ->
    {ok, St#st{exited = X#{S => At}}};
kind({spawn, P, P, _}, At, _St) ->
    {error, {self_spawn, At, P}};
kind({init, C, C, _}, At, _St) ->
    {error, {self_spawn, At, C}};
kind({spawn, P, C, _}, At, St = #st{spawns = Sp, inits = In}) ->
    case {Sp, In} of
        {#{C := {_, First}}, _} -> {error, {duplicate_spawn, At, C, First}};
        {_, #{C := {Named, InitAt}}} when Named =/= P ->
            {error, {parent_mismatch, At, C, P, Named, InitAt}};
        _ -> {ok, St#st{spawns = Sp#{C => {P, At}}}}
    end;
kind({init, C, P, _}, At, St = #st{spawns = Sp, inits = In}) ->
    case {In, Sp} of
        {#{C := {_, First}}, _} -> {error, {duplicate_init, At, C, First}};
        {_, #{C := {Parent, SpawnAt}}} when Parent =/= P ->
            {error, {parent_mismatch, At, C, Parent, P, SpawnAt}};
        _ -> {ok, St#st{inits = In#{C => {P, At}}}}
    end;
kind(_, _At, St) ->
    {ok, St}.

%% @doc The rules over the whole trace, once every event has been taken: no spawn
%% cycle. The error names the spawn that closed the cycle (the last one read of it).
-spec finish(state()) -> ok | {error, error_reason()}.
finish(#st{spawns = Sp}) ->
    case cycle(maps:keys(Sp), Sp, #{}) of
        none -> ok;
        Members ->
            Ats = [maps:get(C, Sp) || C <- Members],
            {_, Last} = lists:last(lists:sort(fun({_, A}, {_, B}) -> order(A) =< order(B) end, Ats)),
            {error, {spawn_cycle, Last, Members}}
    end.

order({File, {_, N}}) -> {File, N}.

%% The parent graph has at most one edge out of each process (its parent): a cycle is
%% found by walking up from each process not walked yet, at most once per process.
cycle([], _Sp, _Done) -> none;
cycle([C | Cs], Sp, Done) when is_map_key(C, Done) -> cycle(Cs, Sp, Done);
cycle([C | Cs], Sp, Done) ->
    case walk(C, Sp, Done, #{}, []) of
        {done, Done1} -> cycle(Cs, Sp, Done1);
        {cycle, Members} -> Members
    end.

walk(C, Sp, Done, OnPath, Path) ->
    case {is_map_key(C, OnPath), is_map_key(C, Done), Sp} of
        {true, _, _} -> {cycle, cycle_from(C, Path)};
        {_, true, _} -> {done, mark(Path, Done)};
        {_, _, #{C := {P, _}}} -> walk(P, Sp, Done, OnPath#{C => true}, [C | Path]);
        _ -> {done, mark([C | Path], Done)}
    end.

%% Back at C on this walk: the cycle is C and what was walked since (newest first),
%% which is the order of the spawns: C spawned the newest, and so on up to C's parent.
cycle_from(C, Path) ->
    {Since, _} = lists:splitwith(fun(X) -> X =/= C end, Path),
    [C | Since].

mark(Path, Done) -> lists:foldl(fun(X, D) -> D#{X => true} end, Done, Path).

%% @doc One sentence for a broken rule, naming the file, the position and the rule.
-spec format_error(error_reason()) -> string().
format_error({after_exit, At, S, Ev, Exit}) ->
    flat("~ts: an event of process ~0tp after its exit (~ts): ~0tP (rule after_exit: a "
         "process's exit is its last event)", [at(At), S, pos(Exit), Ev, 10]);
format_error({exit_before_init, At, S, Exit}) ->
    flat("~ts: the init of process ~0tp comes after its exit (~ts) (rule exit_before_init: "
         "a process starts before it ends)", [at(At), S, pos(Exit)]);
format_error({duplicate_init, At, S, First}) ->
    flat("~ts: a second init of process ~0tp, the first at ~ts (rule duplicate_init: a "
         "process starts once)", [at(At), S, pos(First)]);
format_error({duplicate_spawn, At, S, First}) ->
    flat("~ts: a second spawn of process ~0tp, the first at ~ts (rule duplicate_spawn: a "
         "process is spawned once)", [at(At), S, pos(First)]);
format_error({self_spawn, At, S}) ->
    flat("~ts: process ~0tp spawns itself (rule self_spawn: a process is not its own "
         "parent)", [at(At), S]);
format_error({parent_mismatch, At, S, Spawner, Named, Other}) ->
    flat("~ts: process ~0tp was spawned by ~0tp but its init names ~0tp as its parent "
         "(the other event at ~ts; rule parent_mismatch)", [at(At), S, Spawner, Named, pos(Other)]);
format_error({spawn_cycle, At, Members}) ->
    flat("~ts: this spawn closes a cycle: ~ts (rule spawn_cycle: no process is its own "
         "ancestor, so none of them would be a root and none would be checked)",
         [at(At), lists:join(" spawns ", [flat("~0tp", [M]) || M <- Members ++ [hd(Members)]])]).

at({File, Pos}) -> flat("~ts: ~ts", [File, pos1(Pos)]).

pos({File, Pos}) -> flat("~ts of ~ts", [pos1(Pos), File]).

pos1({line, L}) -> flat("line ~b", [L]);
pos1({byte, B}) -> flat("byte ~b", [B]);
pos1({event, N}) -> flat("event ~b", [N]).

flat(Fmt, Args) -> lists:flatten(io_lib:format(Fmt, Args)).
