%% @doc The VM's send and receive trace patterns (`erlang:trace_pattern/3'), shared by
%% the sessions of a node: which sent and received messages the VM traces at all.
%%
%% A compiled property module says which messages its monitors can see
%% (`trace_patterns/0', see riarc_shml_patterns); a session monitoring with it need not
%% have the others traced. But the patterns are **node-global**: one send pattern and one
%% receive pattern for every traced process of the node, whoever traces it. So every
%% session holds the patterns it needs while it runs (a session with no such module holds
%% `true': every message) and the VM gets their union: no session misses a message that
%% another session's patterns leave out. When the last holder lets go, the patterns that
%% were there before the first one came are put back. A holder whose owner process is
%% dead (a session that ended without closing its backend) is dropped at the next change.
%% Tracing done on the node outside riarc while a session filters sees only the messages
%% the union keeps.
%%
%% Clean after any end: a keeper process of this node (registered `riarc_pattern_keeper',
%% started with the first holder) monitors every holder's owner and lets go of its
%% patterns the moment the owner ends, however it ends: killed, its supervisor killed
%% (the keeper is linked to nothing, so it outlives riarc's supervision tree), or, for a
%% session serving another node, ended because that node went down. The keeper ends
%% when nothing is held. What it cannot survive is being killed itself; the next change
%% of any session then still drops the holders whose owners are gone.
%%
%% Receive timeouts are always traced, and the arguments a process spawned from another
%% node takes as its first message: the receive pattern is
%% `riarc_route:receive_pattern/1' of the union, which marks the timeouts for the routing
%% table.
%%
%% While anything is held, one call pattern is held too: a local pattern on
%% `erts_internal:dist_spawn_request/4', through which every start of a process on
%% another node goes (spawn/4, spawn_link/4, erpc, rpc). A process riarc traces with the
%% `call' flag then shows such a start as a call event, in its own order (spawn_call/2
%% decodes it); no other process is affected (the flag is per process), and the pattern
%% of before is put back with the others.
%%
%% Cut detection: call patterns on the BIFs that change tracing, erlang:trace/3 and
%% erlang:trace_pattern/2,3, are held the same way (local ones: on a BIF a global pattern
%% and a meta pattern exclude each other). A process riarc traces that calls one of them
%% to take away what riarc sees (its own or others' flags, the tracer, the node's send or
%% receive patterns) shows the call as an event in its own order, before the call takes
%% effect (call_event/2 decodes it as `{cut, P, Why}'): its partition's verdict cannot be
%% trusted from there on, and riarc says so. A process riarc does not trace shows no
%% event; but the keeper holds a meta pattern on erlang:trace/3, which sends it every
%% call, whoever makes it, that turns off the flags of another process than the caller
%% (riarc's own calls, riarc_untrace, left out), and meta patterns on
%% erlang:trace_pattern/2,3, which send it every call that sets the send or receive
%% pattern or one of the call patterns above (riarc's own calls, made from this module
%% and riarc_route, left out): a pattern turned off and put back between two looks is
%% no change a look could find. The looks of riarc's session, central tracer and
%% recorder read those calls with the node's patterns (look/1): such a call cuts every
%% view not decided before the look before it, even of a process that has ended since.
%%
%% Timers: global call patterns on erlang:send_after/3,4, for the message `timeout' only,
%% are held the same way. The clock service delivers a timer's message, and the VM traces
%% the message `timeout' from it exactly as a receive timeout; a traced process's call
%% (call_event/2: `{timer_timeout, P, Dest}') tells riarc that Dest's timeouts may be that
%% message from then on (riarc_analysis_core reads them both ways).
%% ```
%% 1> K = make_ref().
%% 2> riarc_trace_pattern:hold(K, self(), #{send => false, 'receive' => [{['_', '_', {error, '_'}], [], []}]}).
%% ok
%% 3> maps:with([send, spawn_call], riarc_trace_pattern:installed()).
%% #{send => false,spawn_call => {local,[]}}
%% 4> #{'receive' := [Clock, Args, Held]} = riarc_trace_pattern:installed(), {Clock, Held}.
%% {{['$1','_','_'],[{'=:=','$1',clock_service}],[{message,clock_service}]},
%%  {['_','_',{error,'_'}],[],[]}}
%% 5> riarc_trace_pattern:release(K).
%% ok
%% 6> riarc_trace_pattern:call_event(list_to_pid("<0.1.0>"), {erts_internal, dist_spawn_request, [n@h, {erpc, execute_call, [make_ref(), m, f, [1]]}, [], spawn_request]}).
%% {remote_spawn,<0.1.0>,n@h,{m,f,[1]}}
%% 7> riarc_trace_pattern:call_event(list_to_pid("<0.1.0>"), {erlang, trace, [list_to_pid("<0.1.0>"), false, [send, 'receive']]}).
%% {cut,<0.1.0>,{trace,[<0.1.0>,false,[send,'receive']]}}
%% 8> riarc_trace_pattern:call_event(list_to_pid("<0.1.0>"), {erlang, send_after, [100, list_to_pid("<0.1.0>"), timeout]}).
%% {timer_timeout,<0.1.0>,<0.1.0>}
%% '''
-module(riarc_trace_pattern).

-export([hold/3, release/1, installed/0, intact/0, settle/1, valid/1, union/1, call_event/2,
         cut_scope/2, lost_scope/1, exit_to_come/1, hides_children/1]).
%% Calls from outside that take flags (the keeper's meta pattern).
-export([untrace_mark/0, look/1, next_look/1]).
%% Spawned entry point.
-export([keeper/0]).
-export_type([pattern/0, patterns/0, call_pattern/0, untrace_mark/0]).

%% Every message of the kind (`true'), none (`false'), or those a match specification
%% matches (`[Receiver, Msg]' for send, `[Node, Sender, Msg]' for 'receive').
-type pattern() :: true | false | [{list() | '_', list(), list()}].
-type patterns() :: #{send => pattern(), 'receive' => pattern()}.

%% A function's call pattern, as erlang:trace_info/2 shows it: how it is traced (not,
%% locally or globally) and with which match specification.
-type call_pattern() :: {false | local | global, false | list()}.
%% Where a looker is in the keeper's log of calls that took flags (look/1): the keeper's
%% pid (a keeper started anew has a log of its own), the last call seen, and the last
%% change of the patterns found when the holders changed (change_locked/1).
-type untrace_mark() :: {pid() | undefined, non_neg_integer(), non_neg_integer()}.

-define(KEY, {?MODULE, state}).
-define(KEEPER, riarc_pattern_keeper).
%% The function every start of a process on another node goes through (OTP 25; checked
%% by riarc_remote_SUITE's remote_spawns_are_calls).
-define(SPAWN_CALL, {erts_internal, dist_spawn_request, 4}).
%% The BIFs through which a process can take away what riarc sees.
-define(UNTRACE_CALLS, [{erlang, trace, 3}, {erlang, trace_pattern, 2}, {erlang, trace_pattern, 3}]).
%% The keeper's meta pattern on erlang:trace/3: a call that turns flags off, of another
%% process than the caller's own (a traced process's own call is an event of its own, in
%% order), other than riarc's. The keeper keeps the last ?UNTRACE_LOG of them.
-define(META_MS, [{['$1', false, '$2'],
                   [{'=/=', '$1', {self}}, {'=/=', '$2', {const, riarc_untrace:flags()}}],
                   []}]).
%% The keeper's meta pattern on erlang:trace_pattern/2,3: every call, with the function
%% it was called from (riarc's own calls are told apart by their module).
-define(PATTERN_META_MS, [{'_', [], [{message, {caller}}]}]).
%% The modules riarc sets the send and receive patterns from.
-define(OWN_PATTERN_CALLERS, [?MODULE, riarc_route]).
-define(UNTRACE_LOG, 64).
%% The changes of the patterns found when the holders changed, kept for looks: the last
%% ?OVERWRITTEN_LOG of them (a look that missed more still counts them).
-define(OVERWRITTEN_LOG, 8).
%% The timers whose message can be the atom `timeout', which the clock service delivers
%% and the VM traces exactly as a receive timeout; held only for that message.
-define(TIMER_CALLS, [{{erlang, send_after, 3}, [{['_', '_', timeout], [], []}]},
                      {{erlang, send_after, 4}, [{['_', '_', timeout, '_'], [], []}]}]).

%% OTP 25's specs of erlang:trace_pattern/3 and erlang:trace_info/2 leave out send and
%% 'receive' (see riarc_route): those calls go through apply/3.

%% @doc Holds Patterns (a kind left out: every message) under Key for as long as Owner
%% lives or until release/1; the VM's patterns become the union of every holder's.
-spec hold(term(), pid() | undefined, patterns()) -> ok.
hold(Key, Owner, Patterns) when is_map(Patterns) ->
    locked(fun() ->
                   %% The keeper first: its meta pattern is installed with the others.
                   _ = is_pid(Owner) andalso watch(Key, Owner),
                   change_locked(fun(Hs) -> Hs#{Key => {Owner, Patterns}} end)
           end).

%% @doc Lets go of Key's patterns (nothing if it holds none).
-spec release(term()) -> ok.
release(Key) ->
    locked(fun() ->
                   ok = change_locked(fun(Hs) -> maps:remove(Key, Hs) end),
                   %% Nothing held: the keeper has nothing left to watch for.
                   _ = held_keys() =:= [] andalso is_pid(whereis(?KEEPER))
                       andalso (?KEEPER ! idle),
                   ok
           end).

%% @doc The send and receive patterns the VM has now, the call pattern of the function
%% remote starts go through, those of the BIFs that change tracing, and those of the
%% timers whose message can be the atom `timeout'.
-spec installed() -> #{send := pattern(), 'receive' := pattern(), spawn_call := call_pattern(),
                       untrace_calls := [call_pattern()], timer_calls := [call_pattern()],
                       untrace_meta := [{term(), false | list()}]}.
installed() ->
    {match_spec, S} = erlang:trace_info(send, match_spec),
    {match_spec, R} = apply(erlang, trace_info, ['receive', match_spec]),
    #{send => S, 'receive' => R, spawn_call => call_pattern(?SPAWN_CALL),
      untrace_calls => [call_pattern(F) || F <- ?UNTRACE_CALLS],
      timer_calls => [call_pattern(F) || {F, _} <- ?TIMER_CALLS],
      untrace_meta => [meta_pattern(F) || F <- ?UNTRACE_CALLS]}.

%% The meta tracer of F (a pid or port, or a tracer module and its state) and its match
%% specification; {false, false} when none.
meta_pattern(F) ->
    case {erlang:trace_info(F, meta), erlang:trace_info(F, meta_match_spec)} of
        {{meta, T}, {meta_match_spec, MS}} when T =/= false, T =/= [] -> {T, MS};
        _ -> {false, false}
    end.

call_pattern(F) ->
    {traced, How} = erlang:trace_info(F, traced),
    {match_spec, MS} = erlang:trace_info(F, match_spec),
    {How, MS}.

%% @doc Waits, at most Timeout ms, for the keeper to have let go of every holder whose
%% owner ended and to have ended itself: what riarc changed on the node is back before
%% its code is unloaded (riarc_remote's cleanup).
-spec settle(timeout()) -> ok | timeout.
settle(Timeout) ->
    case whereis(?KEEPER) of
        undefined -> ok;
        K ->
            Ref = monitor(process, K),
            receive {'DOWN', Ref, process, K, _} -> ok
            after Timeout -> demonitor(Ref, [flush]), timeout
            end
    end.

%% @doc Whether the VM still has the patterns riarc's holders need (nothing held: ok).
%% A change from outside riarc (another tool, a process riarc does not trace) is seen
%% here; a traced process's change is seen sooner, as its call (call_event/2).
-spec intact() -> ok | {changed, #{expected := map(), installed := map()}}.
intact() ->
    %% What the last change installed: the holders as it left them.
    locked(fun() -> #{holders := Hs} = state(), differs(Hs) end).

differs(Hs) when map_size(Hs) =:= 0 ->
    ok;
differs(Hs) ->
    Expected = held(Hs),
    case installed() of
        Expected -> ok;
        Installed -> {changed, #{expected => Expected, installed => Installed}}
    end.

%% @doc A call event of a traced process P (the `call' flag): the start of a process on
%% another node, `{remote_spawn, P, Node, MFA}' with MFA as Λ is asked for such a child
%% (riarc_lambda:logical_mfa/1: an erpc or rpc process as the call it runs); a call that
%% may take away what riarc sees, `{cut, P, {trace | trace_pattern, Args}}'; a timer set
%% to send Dest the atom `timeout', `{timer_timeout, P, Dest}' (riarc_analysis_core: Dest's
%% receive timeouts can be that message from then on); the call of
%% any other function (another tool's pattern, a call pattern elsewhere), `{ignored, P}':
%% one of P's events that no monitor sees.
-spec call_event(pid(), term()) -> {remote_spawn, pid(), node(), riarc_event:mfa_args()}
                                       | {cut, pid(), {trace | trace_pattern, list()}}
                                       | {timer_timeout, pid(), term()}
                                       | {ignored, pid()}.
call_event(P, {erts_internal, dist_spawn_request, [Node, {M, F, A}, _Opts, _Kind]})
  when is_atom(Node), is_atom(M), is_atom(F), is_list(A) ->
    {remote_spawn, P, Node, riarc_lambda:logical_mfa({M, F, A})};
call_event(P, {erlang, send_after, [_Time, Dest, timeout | _]}) ->
    %% A name P holds is P (a server's timer to its own name): its own trace is the one
    %% that can show the message as a timeout.
    {timer_timeout, P, case is_atom(Dest) andalso whereis(Dest) =:= P of
                           true -> P;
                           false -> Dest
                       end};
call_event(P, {erlang, trace, Args}) ->
    %% Flags turned off, or on with another tracer (the caller, by default), take a
    %% process from riarc; which processes is not known here, so every such call counts.
    {cut, P, {trace, Args}};
call_event(P, {erlang, trace_pattern, Args = [What | _]}) ->
    case What =:= send orelse What =:= 'receive' orelse watched(What) of
        true -> {cut, P, {trace_pattern, Args}};
        false -> {ignored, P}
    end;
call_event(P, _) ->
    {ignored, P}.

%% @doc Whose view a cut `{cut, P, Why}' may have taken (call_event/2): P's alone (`own':
%% P changed its own flags, leaving its later children no less than before: it turned
%% them all off, or the ones children inherit or are seen by, or moved them to another
%% tracer); P's, and, through the flags P's later children inherit from it, any other's
%% (`inherited': P turned off its send, receive or call flag and kept `procs' and
%% `set_on_spawn', so a child it spawns is seen to start and end but not all it does);
%% or any partition's (`all': other processes' flags, the node's patterns).
-spec cut_scope(riarc_event:sid(), term()) -> own | inherited | all.
cut_scope(P, {trace, [P, false, Flags]}) when is_list(Flags) ->
    Off = fun(Fs) -> lists:any(fun(F) -> lists:member(F, Flags) end, Fs) end,
    case Off([all, procs, set_on_spawn]) orelse not Off([send, 'receive', call]) of
        true -> own;
        false -> inherited
    end;
cut_scope(P, {trace, [P | _]}) ->
    own;
cut_scope(_P, _Why) ->
    all.

%% @doc What a look's finding (riarc_backend:compare_view/3: someone riarc does not
%% trace changed P's tracing) cuts, as cut_scope/2 for a call: P's view (`own'), and any
%% other's when P kept `procs' and `set_on_spawn' but lost what a child is seen by
%% (`inherited').
-spec lost_scope({flags_removed | tracer_replaced, term()}) -> own | inherited.
lost_scope({flags_removed, Kept}) when is_list(Kept) ->
    case lists:member(procs, Kept) andalso lists:member(set_on_spawn, Kept) of
        true -> inherited;
        false -> own
    end;
lost_scope(_Why) ->
    own.

%% @doc Whether a process a look found so (lost_scope/1) will still show its exit: not
%% once it lost `procs', the flag of its spawn and exit events.
-spec exit_to_come({flags_removed | tracer_replaced, term()}) -> boolean().
exit_to_come({flags_removed, Kept}) when is_list(Kept) -> lists:member(procs, Kept);
exit_to_come(_Why) -> true.

%% @doc Whether a cut (a process's call of erlang:trace/3 on itself, or a look's finding)
%% leaves the process's later children traced but never seen to start: it lost `procs'
%% (its spawn events) and kept `set_on_spawn', so a child inherits riarc's tracer and
%% what flags are left, and any event of the child's reaches riarc from a process it
%% never saw start.
-spec hides_children(term()) -> boolean().
hides_children({trace, [_, false, Flags]}) when is_list(Flags) ->
    lists:member(procs, Flags) andalso not lists:member(set_on_spawn, Flags)
        andalso not lists:member(all, Flags);
hides_children({flags_removed, Kept}) when is_list(Kept) ->
    lists:member(set_on_spawn, Kept) andalso not lists:member(procs, Kept);
hides_children(_Why) ->
    false.

%% A call pattern's target that covers one of the functions riarc's detection relies on.
watched({M, F, A}) ->
    lists:any(fun({M1, F1, A1}) -> (M =:= '_' orelse M =:= M1) andalso (F =:= '_' orelse F =:= F1)
                                       andalso (A =:= '_' orelse A =:= A1)
              end, [?SPAWN_CALL | ?UNTRACE_CALLS] ++ [Call || {Call, _} <- ?TIMER_CALLS]);
watched(_) -> false.

%% @doc Whether a term is a patterns() map the VM accepts.
-spec valid(term()) -> boolean().
valid(Ps) when is_map(Ps) ->
    lists:all(fun({send, P}) -> valid(P, [a, b]);
                 ({'receive', P}) -> valid(P, [a, b, c]);
                 (_) -> false
              end, maps:to_list(Ps));
valid(_) -> false.

valid(P, _) when is_boolean(P) -> true;
valid(P, Input) when is_list(P) ->
    try erlang:match_spec_test(Input, P, trace) of
        {ok, _, _, _} -> true;
        {error, _} -> false
    catch error:_ -> false
    end;
valid(_, _) -> false.

%% The keeper watches Owner for Key. Called under the lock, as the keeper's decision to
%% end is: a keeper never ends with a holder it has not been told of.
watch(Key, Owner) ->
    Keeper = case whereis(?KEEPER) of
                 undefined ->
                     Pid = proc_lib:spawn(?MODULE, keeper, []),
                     %% Not one of riarc's application processes, which its master
                     %% kills when the application goes down: the keeper must outlive
                     %% that, so it takes init's group leader, not its spawner's.
                     {group_leader, GL} = erlang:process_info(whereis(init), group_leader),
                     true = group_leader(GL, Pid),
                     Ref = monitor(process, Pid),
                     Pid ! {register, self(), Ref},
                     receive
                         {Ref, registered} -> demonitor(Ref, [flush]), Pid;
                         {'DOWN', Ref, process, Pid, _} -> whereis(?KEEPER)
                     end;
                 Pid ->
                     Pid
             end,
    Keeper ! {watch, Key, Owner},
    true.

%% @private The keeper: lets go of a holder's patterns when its owner ends; ends itself
%% when nothing is held.
-spec keeper() -> ok.
keeper() ->
    receive
        {register, From, Ref} ->
            try register(?KEEPER, self()) of
                true -> From ! {Ref, registered}, keeper(#{}, {0, []}, [])
            catch error:badarg -> ok
            end
    end.

%% Log: the number of calls that took flags seen so far, and the last ?UNTRACE_LOG of
%% them, newest first. Waiting: the aliases of those who wait for the next look answered
%% (next_look/1).
keeper(Watched, Log, Waiting) ->
    receive
        {watch, Key, Owner} ->
            keeper(Watched#{monitor(process, Owner) => Key}, Log, Waiting);
        {'DOWN', Ref, process, _, _} when is_map_key(Ref, Watched) ->
            ok = release(maps:get(Ref, Watched)),
            keeper(maps:remove(Ref, Watched), Log, Waiting);
        %% The meta pattern's message: a call that turned flags off, made before the call
        %% took effect. Trust boundary: anyone may send one; it can only cut views.
        {trace_ts, Caller, call, {erlang, trace, Args}, _When} when is_pid(Caller), is_list(Args) ->
            keeper(Watched, logged(#{caller => Caller, call => {trace, Args}}, Log), Waiting);
        %% A call of erlang:trace_pattern/2,3, with the function it was made from.
        {trace_ts, Caller, call, {erlang, trace_pattern, Args}, From, _When}
          when is_pid(Caller), is_list(Args) ->
            case pattern_call(Args, From) of
                true ->
                    keeper(Watched, logged(#{caller => Caller, call => {trace_pattern, Args}}, Log), Waiting);
                false -> keeper(Watched, Log, Waiting)
            end;
        {untraces, From, Ref, Since} when is_pid(From) ->
            {N, Calls} = Log,
            From ! {Ref, N, [C || {K, C} <- lists:reverse(Calls), K > Since]},
            _ = [Alias ! {Alias, looked} || Alias <- Waiting],
            keeper(Watched, Log, []);
        {next_look, Alias} when is_reference(Alias) ->
            keeper(Watched, Log, [Alias | Waiting]);
        idle ->
            %% Owners whose patterns were let go of need no watching: the keeper ends
            %% when nothing is held, whoever still lives.
            case locked(fun() -> held_keys() =:= [] andalso unregister(?KEEPER) end) of
                true -> ok;
                false -> keeper(Watched, Log, Waiting)
            end;
        _ ->
            keeper(Watched, Log, Waiting)
    end.

logged(Call, {N, Calls}) ->
    {N + 1, lists:sublist([{N + 1, Call} | Calls], ?UNTRACE_LOG)}.

%% Whether a call of erlang:trace_pattern/2,3 (Args), made from From, may take from
%% riarc's view: one on the send or receive pattern, or one that sets the local, global
%% or meta pattern of a function riarc relies on (a profiler's call counts or times leave
%% those as they are), made elsewhere than where riarc sets them (a call made in tail
%% position names no function: not riarc's).
pattern_call(Args, From) ->
    relevant(Args)
        andalso not (is_tuple(From) andalso tuple_size(From) =:= 3
                     andalso lists:member(element(1, From), ?OWN_PATTERN_CALLERS)).

relevant([What | _]) when What =:= send; What =:= 'receive' -> true;
relevant([What, _]) -> watched(What);
relevant([What, _, Flags]) when is_list(Flags) ->
    watched(What) andalso (Flags =:= [] orelse lists:any(fun(F) -> lists:member(kind(F), [local, global, meta]) end,
                                                         Flags));
relevant(_) -> false.

kind(F) when is_tuple(F), tuple_size(F) > 0 -> element(1, F);
kind(F) -> F.

%% @doc Where the keeper's log of calls that took flags is now: a looker's first mark,
%% taken once riarc holds its patterns (look/1 then reads what came after).
-spec untrace_mark() -> untrace_mark().
untrace_mark() ->
    {{Keeper, N}, _} = untraces({undefined, 0}),
    #{overwritten := {O, _}} = state(),
    {Keeper, N, O}.

%% @doc Cut detection by looking: whether riarc's view of the node is as its holders left
%% it since Mark. `changed' when the node's patterns are not the holders' (intact/0), or
%% when a process riarc does not trace turned off another process's flags with
%% erlang:trace/3 since Mark (the keeper's meta pattern sees the call as it is made,
%% whoever makes it): which process that took from riarc is not known here, and the
%% process may have ended since. Info has `untraced', a list of the calls (caller and
%% call), with the patterns' `expected' and `installed' when they changed, and
%% `overwritten' (the same two, as found) when a session's start or end installed the
%% holders' patterns over a change made since Mark.
%% Race: the keeper answers after taking every message before the question, so a call
%% made before the look is in its answer (its meta message is sent as the call is made).
-spec look(untrace_mark()) -> {ok | {changed, map()}, untrace_mark()}.
look({Keeper0, Since, Overwritten0}) ->
    {{Keeper, N}, Calls} = untraces({Keeper0, Since}),
    %% Race: a session may start or end between two looks and install its patterns over
    %% a change; the comparison and the log of what changes found are read under the
    %% lock those changes take, so a look sees the change either way.
    {Now, {Overwritten, Found}} =
        locked(fun() ->
                       #{holders := Hs, overwritten := {O, Log}} = state(),
                       {differs(Hs), {O, [I || {K, I} <- lists:reverse(Log), K > Overwritten0]}}
               end),
    Info0 = case Now of
                ok -> #{};
                {changed, I} -> I
            end,
    Info = maps:merge(Info0, maps:from_list([{untraced, Calls} || Calls =/= []]
                                            ++ [{overwritten, Found}
                                                || Overwritten > Overwritten0])),
    Changed = case map_size(Info) of
                  0 -> ok;
                  _ -> {changed, Info}
              end,
    {Changed, {Keeper, N, Overwritten}}.

%% @doc Waits until the keeper has answered a look (look/1, untrace_mark/0) asked after
%% this call, at most Timeout ms. A session, central tracer or recorder looks every
%% second: where one of them runs on the node, the second of two such waits ends with a
%% look it began after the first (a verdict in before that look stands a later change of
%% the node's tracing). `no_keeper' when riarc holds no patterns on this node (nobody
%% looks).
-spec next_look(timeout()) -> ok | timeout | no_keeper.
next_look(Timeout) ->
    case whereis(?KEEPER) of
        undefined -> no_keeper;
        Keeper ->
            %% The answer goes to an alias, which a wait that timed out drops: no late
            %% answer is left in the caller's mailbox.
            Ref = monitor(process, Keeper, [{alias, demonitor}]),
            Keeper ! {next_look, Ref},
            receive
                {Ref, looked} -> demonitor(Ref, [flush]), ok;
                {'DOWN', Ref, process, Keeper, _} -> no_keeper
            after Timeout ->
                demonitor(Ref, [flush]),
                timeout
            end
    end.

%% The keeper's calls since Mark (all of them when Mark is another keeper's).
untraces({Keeper0, Since}) ->
    case whereis(?KEEPER) of
        undefined ->
            {{undefined, 0}, []};
        Keeper ->
            Ref = monitor(process, Keeper),
            Keeper ! {untraces, self(), Ref, case Keeper of Keeper0 -> Since; _ -> 0 end},
            receive
                {Ref, N, Calls} -> demonitor(Ref, [flush]), {{Keeper, N}, Calls};
                {'DOWN', Ref, process, Keeper, _} -> {{undefined, 0}, []}
            end
    end.

held_keys() ->
    #{holders := Hs} = state(),
    maps:keys(Hs).

%% The holders, the patterns of before the first, and the log of changes found when the
%% holders changed (how many so far, the last ?OVERWRITTEN_LOG of them, newest first).
state() ->
    maps:merge(#{holders => #{}, saved => none, overwritten => {0, []}},
               persistent_term:get(?KEY, #{})).

%% Race: two sessions starting or ending at once would each install a union that lacks
%% the other's patterns; changes are made one at a time, under a lock of this node
%% (change_locked/1 is called only inside locked/1).
locked(Fun) ->
    global:trans({?MODULE, self()}, Fun, [node()]).

change_locked(Fun) ->
    Old = #{holders := Hs0, saved := Saved0, overwritten := Overwritten0} = state(),
    Hs = maps:filter(fun(_, {Owner, _}) -> alive(Owner) end, Fun(Hs0)),
    {Saved, Overwritten} =
        case {map_size(Hs), Saved0} of
            {0, none} -> {none, Overwritten0};
            {0, _} -> install(Saved0), {none, Overwritten0};
            {_, none} -> S = installed(), install(held(Hs)), {S, Overwritten0};
            %% Race: a keeper's late release of a holder already let go of changes
            %% nothing held; installing again would put back what someone else
            %% changed since the last look (a receive pattern turned off), which that
            %% look would then never find.
            {_, _} when Hs =:= Hs0 -> {Saved0, Overwritten0};
            %% Invariant: what riarc installs over a change someone else made since the
            %% last look (another session starting or ending) is logged first, so the
            %% next look of every session still finds the change.
            {_, _} ->
                Found = differs(Hs0),
                install(held(Hs)),
                {Saved0, overwrite(Found, Overwritten0)}
        end,
    case Old#{holders := Hs, saved := Saved, overwritten := Overwritten} of
        Old -> ok;
        New -> persistent_term:put(?KEY, New)
    end,
    ok.

overwrite(ok, Log) ->
    Log;
overwrite({changed, Info}, {N, Log}) ->
    {N + 1, lists:sublist([{N + 1, Info} | Log], ?OVERWRITTEN_LOG)}.

alive(undefined) -> true;
alive(Pid) when is_pid(Pid) -> is_process_alive(Pid).

%% What the VM gets: the union of every holder's patterns, and the call pattern.
held(Hs) ->
    Held = [P || {_, P} <- maps:values(Hs)],
    #{send => union([maps:get(send, P, true) || P <- Held]),
      'receive' => riarc_route:receive_pattern(union([maps:get('receive', P, true) || P <- Held])),
      spawn_call => {local, []},
      %% Local, not global: a global pattern on a BIF and a meta pattern exclude each
      %% other (OTP 25), a local one does not.
      untrace_calls => [{local, []} || _ <- ?UNTRACE_CALLS],
      timer_calls => [{global, MS} || {_, MS} <- ?TIMER_CALLS],
      untrace_meta => case whereis(?KEEPER) of
                          undefined -> [{false, false} || _ <- ?UNTRACE_CALLS];
                          Keeper ->
                              [{Keeper, ?META_MS} | [{Keeper, ?PATTERN_META_MS} || _ <- tl(?UNTRACE_CALLS)]]
                      end}.

%% @doc The pattern that keeps what any of Ps keeps.
-spec union([pattern()]) -> pattern().
union(Ps) ->
    case lists:member(true, Ps) of
        true -> true;
        false ->
            case lists:usort(lists:append([P || P <- Ps, is_list(P)])) of
                [] -> false;
                Clauses -> Clauses
            end
    end.

install(#{send := S, 'receive' := R, spawn_call := C, untrace_calls := Us, timer_calls := Ts,
          untrace_meta := Meta}) ->
    _ = apply(erlang, trace_pattern, [send, S, []]),
    _ = apply(erlang, trace_pattern, ['receive', R, []]),
    %% The meta pattern before the call patterns: setting it clears a global one.
    _ = [install_meta(F, M) || {F, M} <- lists:zip(?UNTRACE_CALLS, Meta)],
    [install_call(F, P) || {F, P} <- [{?SPAWN_CALL, C} | lists:zip(?UNTRACE_CALLS, Us)]
                                     ++ lists:zip([F || {F, _} <- ?TIMER_CALLS], Ts)],
    ok.

%% None of these calls in tail position: the keeper's meta pattern tells riarc's own
%% calls apart by the function they are made from, which a tail call does not name.
install_meta(F, {false, _}) -> _ = erlang:trace_pattern(F, false, [meta]), ok;
install_meta(F, {{M, S}, MS}) when is_atom(M) -> _ = erlang:trace_pattern(F, MS, [{meta, M, S}]), ok;
install_meta(F, {T, MS}) -> _ = erlang:trace_pattern(F, MS, [{meta, T}]), ok.

install_call(F, {false, _}) ->
    _ = erlang:trace_pattern(F, false, [local]),
    _ = erlang:trace_pattern(F, false, [global]),
    ok;
install_call(F, {How, MS}) ->
    _ = erlang:trace_pattern(F, MS, [How]),
    ok.
