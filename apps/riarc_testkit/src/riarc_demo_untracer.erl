%% @doc Test systems that take themselves, or a child, out of riarc's view with a call of
%% erlang:trace/3 or erlang:trace_pattern/3, then take the message `{error, late}', which
%% the tests' monitors forbid. riarc sees the call (its call patterns) and makes the view
%% cut: never an accept, in a live run and in a check of a recording alike.
%% ```
%% 1> riarc_demo_untracer:run(own_flags).
%% ok
%% 2> riarc_demo_untracer:run(child_flags).
%% ok
%% 3> riarc_demo_untracer:decided_first().
%% ok
%% 4> H = riarc_demo_outsider:start(), riarc_demo_untracer:outsider(H).
%% ok
%% '''
-module(riarc_demo_untracer).

-export([run/1, hows/0, decided_first/0, outsider/1, outsider_patterns/1, outsider_ends/1,
         outsider_put_back/1, outsider_after_look/2, quiet/0]).

-type how() :: own_flags | all_flags | own_procs | receive_pattern | child_flags | inherited | no_inherit
             | hidden_child.
-export_type([how/0]).

%% @doc Every way a system here takes something out of riarc's view.
-spec hows() -> [how()].
hows() -> [own_flags, all_flags, own_procs, receive_pattern, child_flags, inherited, no_inherit,
           hidden_child].

%% @doc Takes the view away as How says, then the forbidden message is taken: by the
%% process itself, or, with `child_flags', by a child whose flags it turned off, or,
%% with `inherited', by a child it spawns after turning off its own send and receive
%% flags (the child inherits what is left: its start and end are seen, nothing else).
%% With `own_procs' the process keeps some flags but not `procs', that of its spawn and
%% exit events: its exit will not be seen, and nothing else says it ended. With
%% `no_inherit' it turns off its own set_on_spawn: the child it spawns then is not traced
%% at all, only its spawn is seen (a takeover that set the child's flags anew traced it
%% from the takeover on, and its monitor accepted at its exit, the message missed).
%% With `hidden_child' it turns off its own send, receive and procs flags and then
%% spawns a child: the child inherits riarc's tracer and its `call' flag but is never
%% seen to start; its call turning its flags off is all riarc gets of it.
-spec run(how()) -> ok.
run(inherited) ->
    _ = erlang:trace(self(), false, [send, 'receive']),
    {C, Ref} = spawn_monitor(fun() -> receive {error, late} -> ok end end),
    C ! {error, late},
    receive {'DOWN', Ref, process, C, _} -> ok end;
run(hidden_child) ->
    _ = erlang:trace(self(), false, [send, 'receive', procs]),
    {C, Ref} = spawn_monitor(fun() ->
                                     _ = erlang:trace(self(), false, [all]),
                                     receive {error, late} -> ok end
                             end),
    C ! {error, late},
    receive {'DOWN', Ref, process, C, _} -> ok end;
run(no_inherit) ->
    _ = erlang:trace(self(), false, [set_on_spawn]),
    %% The child outlives its tracer's takeover (a tenth of a second, where a takeover
    %% takes a few ms): a takeover that set its flags anew traced the rest of its life.
    {C, Ref} = spawn_monitor(fun() -> receive {error, late} -> ok end, receive after 100 -> ok end end),
    C ! {error, late},
    receive {'DOWN', Ref, process, C, _} -> ok end;
run(child_flags) ->
    {C, Ref} = spawn_monitor(fun() -> receive {error, late} -> ok end end),
    _ = erlang:trace(C, false, [all]),
    C ! {error, late},
    receive {'DOWN', Ref, process, C, _} -> ok end;
run(How) ->
    _ = case How of
            own_flags -> erlang:trace(self(), false, [send, 'receive']);
            all_flags -> erlang:trace(self(), false, [all]);
            own_procs -> erlang:trace(self(), false, [send, 'receive', procs]);
            receive_pattern -> erlang:trace_pattern('receive', false, [])
        end,
    self() ! {error, late},
    receive {error, late} -> ok end.

%% @doc The forbidden message first, then its own flags off: a monitor that rejected on
%% the message did so on the whole trace up to then, before any cut, and its reject
%% stands in every mode and placement.
-spec decided_first() -> ok.
decided_first() ->
    self() ! {error, early},
    receive {error, early} -> ok end,
    _ = erlang:trace(self(), false, [send, 'receive']),
    ok.

%% @doc A process whose flags Helper, a process outside the system (riarc_demo_outsider),
%% turns all off: no call of the system's shows it, only a look at how the VM traces the
%% process, and no exit of its will come. Then the forbidden message is taken.
-spec outsider(pid()) -> ok.
outsider(Helper) ->
    forbidden_after(Helper, untrace).

%% @doc A process that has Helper turn off the node's receive pattern (no receive is
%% traced from then on), takes the forbidden message and ends, with its exit traced,
%% before any look at the node's patterns can have found the change (riarc's looks are a
%% second apart).
-spec outsider_patterns(pid()) -> ok.
outsider_patterns(Helper) ->
    forbidden_after(Helper, unpattern).

%% @doc A process whose send and receive flags Helper turns off: its exit is still traced.
%% It takes the forbidden message and ends before any look at it can have found its flags
%% gone (riarc's looks are a second apart).
-spec outsider_ends(pid()) -> ok.
outsider_ends(Helper) ->
    forbidden_after(Helper, untrace_comm).

%% @doc A process that has Helper turn off the node's receive pattern, takes the
%% forbidden message, and has Helper put the pattern back, all before any look: a look
%% finds the patterns as riarc left them, and only the calls that changed them say what
%% happened.
-spec outsider_put_back(pid()) -> ok.
outsider_put_back(Helper) ->
    ok = forbidden_after(Helper, unpattern),
    Helper ! {repattern, self()},
    receive {done, repattern, Helper} -> ok end.

%% @doc A child that does nothing its monitor forbids ends first; Helper waits until
%% riarc has looked at the node's tracing since (two looks), then does What
%% (`unpattern' or `untrace_comm', as outsider_patterns/1 and outsider_ends/1) for this
%% process, which takes the forbidden message and ends. The child's verdict was in
%% before the change (where riarc runs its monitors apart, as long as its verdict reached
%% the session within a look's second): it stands in every mode; this process's cannot.
-spec outsider_after_look(pid(), unpattern | untrace_comm) -> ok.
outsider_after_look(Helper, What) ->
    {C, Ref} = spawn_monitor(?MODULE, quiet, []),
    receive {'DOWN', Ref, process, C, _} -> ok end,
    forbidden_after(Helper, {after_looks, C, What}).

%% @doc A process that ends at once.
-spec quiet() -> ok.
quiet() ->
    ok.

%% Helper does What for this process; then the forbidden message is taken.
forbidden_after(Helper, What) ->
    Helper ! {What, self()},
    receive {done, What, Helper} -> ok end,
    self() ! {error, late},
    receive {error, late} -> ok end.
