%% @doc The record &amp; replay weaver: a parse transform that routes every source of
%% nondeterminism of a module through the runtime ({@link riarc_replay_rt}, {@link
%% riarc_replay_versions}, {@link riarc_replay_timers}, {@link riarc_replay_ets}), which
%% records it (in a recording run), reproduces it (in a replay) or does what the plain
%% code would do (outside any run).
%%
%% What it rewrites, in every function and fun of the module:
%% <ul>
%% <li>`To ! Msg', `erlang:send/2,3': {@link riarc_replay_rt:send/2}, `send/3' (the
%%     message is wrapped for the receiver when the receiver takes part in the run);</li>
%% <li>every `receive' with at least one clause: in a recording, an inline receive with
%%     copies of its patterns and guards (wrapped, versioned and plain; fresh variables
%%     renamed) whose bodies tell the runtime what was taken ({@link
%%     riarc_replay_rt:took/2} and the like); anywhere else {@link riarc_replay_rt:recv/2}
%%     is given one fun holding the patterns and guards in the shapes the runtime needs
%%     (take a wrapped or plain message, take a plain one only, take a plain or a
%%     versioned one, or test a message already taken); what either gives is matched
%%     against the original clauses, so the original bodies run with the original
%%     bindings: the message itself for a receive without `after' (the first clause that
%%     takes it is the one the receive chose), else `{K, Msg}' or a timeout, against the
%%     clauses tagged with their index K;</li>
%% <li>`spawn', `spawn_link', `spawn_monitor' (arity 1 and 3) and `spawn_opt' (2 and 4),
%%     local or `erlang:': {@link riarc_replay_rt:spawn/3}, which gives the child its
%%     logical id;</li>
%% <li>`erlang:monotonic_time/0,1', `system_time/0,1', `now/0', `unique_integer/0,1',
%%     `make_ref/0', `os:timestamp/0', `rand:uniform/0,1': the runtime function of the
%%     same name;</li>
%% <li>ETS operations on a table (reads and writes, see {@link riarc_replay_ets:ets/2}):
%%     {@link riarc_replay_ets:ets/2}, which takes the table's turn;</li>
%% <li>timers: `erlang:send_after/3,4', `start_timer/3,4', `cancel_timer/1,2',
%%     `read_timer/1,2', `timer:send_after/2,3', `send_interval/2,3', `apply_after/4',
%%     `apply_interval/4', `cancel/1': the {@link riarc_replay_timers} function of the
%%     same name (with `timer_' before it for timer's);</li>
%% <li>`exit/2' (local or `erlang:'): {@link riarc_replay_rt:exit_signal/2}, which writes
%%     the pending events of the process it ends;</li>
%% <li>`mnesia:transaction/1,2,3', `sync_transaction/1,2,3', the activities
%%     (`activity/2,4', `async_dirty/1,2', `sync_dirty/1,2', `ets/1,2') and the dirty
%%     operations (`dirty_read/1,2', `dirty_write/1,2', `dirty_update_counter/2,3', ...):
%%     {@link riarc_replay_ets:mnesia/2}, which takes the run's mnesia turn.</li>
%% </ul>
%% The woven module gets the attribute `-riarc_replay_woven(true)' and the option
%% `nowarn_unused_vars' (the copies of the patterns leave user variables unused). Use it at compile time with
%% `-compile({parse_transform, riarc_replay_transform}).', or on compiled modules with
%% {@link riarc_replay:instrument/1}.
%% ```
%% 1> {ok, Forms} = epp:parse_file("apps/riarc_replay/test/riarc_replay_progs.erl", []).
%% 2> Woven = riarc_replay_transform:parse_transform(Forms, []).
%% 3> {ok, riarc_replay_progs, _Bin} = compile:forms(Woven, [binary]).
%% '''
-module(riarc_replay_transform).

-export([parse_transform/2, format_error/1]).
-export_type([error_reason/0]).

-type error_reason() :: {no_module_attribute, [erl_parse:abstract_form()]}.

-define(RT, riarc_replay_rt).
%% The sender side's inline receive calls riarc_replay_versions directly: no call
%% through riarc_replay_rt per message.
-define(VERSIONS, riarc_replay_versions).
-define(TIMERS, riarc_replay_timers).
-define(ETS, riarc_replay_ets).
-define(SPAWNS, [{spawn, 1}, {spawn, 3}, {spawn_link, 1}, {spawn_link, 3},
                 {spawn_monitor, 1}, {spawn_monitor, 3}, {spawn_opt, 2}, {spawn_opt, 4}]).
-define(ERLANG_VALUES, [{monotonic_time, 0}, {monotonic_time, 1}, {system_time, 0},
                        {system_time, 1}, {now, 0}, {unique_integer, 0},
                        {unique_integer, 1}, {make_ref, 0}]).
%% Local calls that are auto-imported BIFs (unless the module defines them).
-define(AUTO_VALUES, [{now, 0}, {make_ref, 0}]).
%% mnesia: what takes the run's mnesia turn (riarc_replay_ets:mnesia/2), for a whole
%% transaction or activity, or for one dirty operation.
-define(MNESIA_OPS, [{transaction, 1}, {transaction, 2}, {transaction, 3},
                     {sync_transaction, 1}, {sync_transaction, 2}, {sync_transaction, 3},
                     {activity, 2}, {activity, 4}, {async_dirty, 1}, {async_dirty, 2},
                     {sync_dirty, 1}, {sync_dirty, 2}, {ets, 1}, {ets, 2},
                     {dirty_read, 1}, {dirty_read, 2}, {dirty_write, 1}, {dirty_write, 2},
                     {dirty_delete, 1}, {dirty_delete, 2}, {dirty_delete_object, 1},
                     {dirty_delete_object, 2}, {dirty_update_counter, 2},
                     {dirty_update_counter, 3}, {dirty_match_object, 1},
                     {dirty_match_object, 2}, {dirty_select, 2}, {dirty_index_read, 3},
                     {dirty_index_match_object, 2}, {dirty_index_match_object, 3},
                     {dirty_all_keys, 1}, {dirty_first, 1}, {dirty_next, 2},
                     {dirty_last, 1}, {dirty_prev, 2}, {dirty_slot, 2}]).

-define(ETS_OPS, [{insert, 2}, {insert_new, 2}, {delete, 2}, {delete_object, 2},
                  {delete_all_objects, 1}, {update_counter, 3}, {update_counter, 4},
                  {update_element, 3}, {take, 2}, {select_delete, 2},
                  {lookup, 2}, {lookup_element, 3}, {member, 2}, {select, 2},
                  {match, 2}, {match_object, 2}, {tab2list, 1}, {first, 1}, {next, 2},
                  {last, 1}, {prev, 2}, {select_count, 2}]).

%% @doc The parse transform. A module without `-module' is returned unchanged.
-spec parse_transform([erl_parse:abstract_form()], [compile:option()]) ->
    [erl_parse:abstract_form()].
parse_transform(Forms, _Options) ->
    case [M || {attribute, _, module, M} <- Forms] of
        [_] ->
            Local = [{N, A} || {function, _, N, A, _} <- Forms],
            Ctx = #{local => Local},
            add_attributes([form(F, Ctx) || F <- Forms]);
        _ ->
            Forms
    end.

%% @doc A sentence for each error_reason().
-spec format_error(error_reason()) -> string().
format_error({no_module_attribute, _}) ->
    "the forms have no -module attribute, so there is nothing to weave".

%% Right after -module: the mark that the module is woven, and the compile option the
%% pattern copies need.
add_attributes([F = {attribute, L, module, _} | Rest]) ->
    [F, {attribute, L, riarc_replay_woven, true},
     {attribute, L, compile, [nowarn_unused_vars]} | Rest];
add_attributes([F | Rest]) ->
    [F | add_attributes(Rest)];
add_attributes([]) ->
    [].

form(F = {function, L, Name, Arity, _}, Ctx) ->
    {function, _, _, _, Clauses} = mark_receives(F),
    {Clauses1, _} = walk(Clauses, 0, Ctx),
    {function, L, Name, Arity, Clauses1};
form(Other, _Ctx) ->
    Other.

%%% Bound variables -------------------------------------------------------------------

%% Each receive of the function, wrapped in a marker call that holds the variables bound
%% where it is (erl_syntax_lib:annotate_bindings/2): `'$riarc_rr_env'(Vars, Receive)'.
%% The inline receive (receive_expr/5) needs them: its copies of the patterns must bind
%% fresh names for the variables the patterns bind, and match the ones bound before.
%% A function the analysis cannot read keeps its receives unmarked, woven as calls of
%% riarc_replay_rt:recv/2 only.
mark_receives(F) ->
    try
        Marked = erl_syntax_lib:map(fun mark/1, erl_syntax_lib:annotate_bindings(F, ordsets:new())),
        {function, _, _, _, _} = erl_syntax:revert(Marked)
    catch
        _:_ -> F
    end.

mark(Node) ->
    case erl_syntax:type(Node) of
        receive_expr ->
            {env, Env} = lists:keyfind(env, 1, erl_syntax:get_ann(Node)),
            Pos = erl_syntax:get_pos(Node),
            Vars = erl_syntax:set_pos(erl_syntax:abstract(Env), Pos),
            erl_syntax:set_pos(erl_syntax:application(erl_syntax:set_pos(erl_syntax:atom('$riarc_rr_env'), Pos),
                                                      [Vars, Node]), Pos);
        _ ->
            Node
    end.

%% The copy of a pattern or guard for an inline receive: every variable not bound
%% before the receive gets a name of its own (the tag makes it unique in the function).
rename({var, L, V}, Env, Tag) when V =/= '_' ->
    case ordsets:is_element(V, Env) of
        true -> {var, L, V};
        false -> {var, L, list_to_atom("RiarcRr" ++ Tag ++ "_" ++ atom_to_list(V))}
    end;
rename(T, Env, Tag) when is_tuple(T) ->
    list_to_tuple(rename(tuple_to_list(T), Env, Tag));
rename([H | T], Env, Tag) ->
    [rename(H, Env, Tag) | rename(T, Env, Tag)];
rename(X, _Env, _Tag) ->
    X.

%%% The walk -----------------------------------------------------------------------------

%% A walk over the abstract code threading a counter for fresh variable names. Only
%% expression shapes are rewritten; patterns and guards cannot contain them.
walk({call, _, {atom, _, '$riarc_rr_env'}, [Vars, R]}, N0, Ctx) ->
    walk(R, N0, Ctx#{env => erl_parse:normalise(Vars)});
walk({op, L, '!', To, Msg}, N0, Ctx) ->
    {[To1, Msg1], N1} = walk([To, Msg], N0, Ctx),
    {rt(L, send, [To1, Msg1]), N1};
walk({call, L, {remote, _, {atom, _, Mod}, {atom, _, F}}, Args} = C, N0, Ctx) ->
    {Args1, N1} = walk(Args, N0, Ctx),
    case remote(Mod, F, length(Args)) of
        {rt, Name} -> {rt(L, Name, Args1), N1};
        {timers, Name} -> {call(L, ?TIMERS, Name, Args1), N1};
        {spawn, Kind} -> {spawn_call(L, Kind, Args1), N1};
        ets -> {call(L, ?ETS, ets, [{atom, L, F}, list(Args1, L)]), N1};
        mnesia -> {call(L, ?ETS, mnesia, [{atom, L, F}, list(Args1, L)]), N1};
        keep -> walk_parts(C, N0, Ctx)
    end;
walk({call, L, {atom, _, F}, Args} = C, N0, Ctx = #{local := Local}) ->
    Arity = length(Args),
    case lists:member({F, Arity}, Local) of
        true ->
            walk_parts(C, N0, Ctx);
        false ->
            {Args1, N1} = walk(Args, N0, Ctx),
            case {lists:member({F, Arity}, ?SPAWNS), lists:member({F, Arity}, ?AUTO_VALUES)} of
                _ when F =:= exit, Arity =:= 2 -> {rt(L, exit_signal, Args1), N1};
                {true, _} -> {spawn_call(L, F, Args1), N1};
                {_, true} -> {rt(L, F, Args1), N1};
                _ -> walk_parts(C, N0, Ctx)
            end
    end;
walk({'receive', _L, []} = R, N0, _Ctx) ->
    {R, N0};
walk({'receive', L, Clauses}, N0, Ctx) ->
    receive_expr(L, Clauses, none, N0, Ctx);
walk({'receive', L, [], Timeout, After}, N0, Ctx) ->
    %% A pure wait takes no message: nothing to record, the program is deterministic.
    {[Timeout1 | After1], N1} = walk([Timeout | After], N0, maps:remove(env, Ctx)),
    {{'receive', L, [], Timeout1, After1}, N1};
walk({'receive', L, Clauses, Timeout, After}, N0, Ctx) ->
    receive_expr(L, Clauses, {Timeout, After}, N0, Ctx);
walk(Node, N0, Ctx) ->
    walk_parts(Node, N0, maps:remove(env, Ctx)).

%% Anything else (a call left as it is among them): its parts are walked.
walk_parts(Node, N0, Ctx) ->
    riarc_weave:descend(fun(E, N) -> walk(E, N, Ctx) end, Node, N0).

remote(erlang, send, 2) -> {rt, send};
remote(erlang, send, 3) -> {rt, send};
remote(erlang, exit, 2) -> {rt, exit_signal};
remote(erlang, F, A) when F =:= send_after, A =:= 3 orelse A =:= 4;
                         F =:= start_timer, A =:= 3 orelse A =:= 4;
                         F =:= cancel_timer, A =:= 1 orelse A =:= 2;
                         F =:= read_timer, A =:= 1 orelse A =:= 2 ->
    {timers, F};
remote(erlang, F, A) ->
    case {lists:member({F, A}, ?SPAWNS), lists:member({F, A}, ?ERLANG_VALUES)} of
        {true, _} -> {spawn, F};
        {_, true} -> {rt, F};
        _ -> keep
    end;
remote(timer, send_after, A) when A =:= 2; A =:= 3 -> {timers, timer_send_after};
remote(timer, cancel, 1) -> {timers, timer_cancel};
remote(timer, send_interval, A) when A =:= 2; A =:= 3 -> {timers, timer_send_interval};
remote(timer, apply_after, 4) -> {timers, timer_apply_after};
remote(timer, apply_interval, 4) -> {timers, timer_apply_interval};
remote(mnesia, F, A) ->
    case lists:member({F, A}, ?MNESIA_OPS) of
        true -> mnesia;
        false -> keep
    end;
remote(os, timestamp, 0) -> {rt, timestamp};
remote(rand, uniform, A) when A =< 1 -> {rt, uniform};
remote(ets, F, A) ->
    case lists:member({F, A}, ?ETS_OPS) of
        true -> ets;
        false -> keep
    end;
remote(_, _, _) -> keep.

%% `spawn(F)' becomes `riarc_replay_rt:spawn(spawn, F, [])', `spawn_opt(M, F, A, O)'
%% becomes `riarc_replay_rt:spawn(spawn_opt, {M, F, A}, O)'.
spawn_call(L, Kind, Args) ->
    {What, Opts} = case Args of
                       [Fun] -> {Fun, {nil, L}};
                       [Fun, O] -> {Fun, O};
                       [M, F, A] -> {{tuple, L, [M, F, A]}, {nil, L}};
                       [M, F, A, O] -> {{tuple, L, [M, F, A]}, O}
                   end,
    rt(L, spawn, [{atom, L, Kind}, What, Opts]).

%%% Receive ------------------------------------------------------------------------------

%% receive P1 when G1 -> B1; ... after T -> A end
%% becomes
%% case riarc_replay_rt:recv(fun(Op, M, Tmo) -> ... end, T) of
%%     {1, P1} when G1 -> B1; ...
%%     '$riarc_rr_timeout' -> A
%% end
%% where the fun does, by Op:
%%   rec:   receive {'$riarc_rr', D, P1 = V} when G1 -> {1, D, V}; ...
%%                  P1 = V when G1, not wrapped(V) -> {1, ext, V}; ...
%%          after Tmo -> '$riarc_rr_timeout' end
%%   ext:   the plain clauses only;
%%   ver:   the wrapped and plain clauses (sender side: timer messages are wrapped as
%%          the receiver side's), and {'$riarc_rv', N, X} -> {ver, N, X};
%%   match: case M of P1 when G1 -> 1; ...; _ -> 0 end.
receive_expr(L, Clauses, TimeoutAfter, N0, Ctx0) ->
    Ctx = maps:remove(env, Ctx0),
    {Clauses1, N1} = walk(Clauses, N0, Ctx),
    {TimeoutAfter1, N2} = case TimeoutAfter of
                              none -> {none, N1};
                              {T, A} ->
                                  {[T1 | A1], Nx} = walk([T | A], N1, Ctx),
                                  {{T1, A1}, Nx}
                          end,
    Tag = integer_to_list(N2),
    V = var(L, "RiarcRrV" ++ Tag),
    D = var(L, "RiarcRrD" ++ Tag),
    Op = var(L, "RiarcRrOp" ++ Tag),
    M = var(L, "RiarcRrM" ++ Tag),
    Tmo = var(L, "RiarcRrT" ++ Tag),
    Indexed = lists:zip(lists:seq(1, length(Clauses1)), Clauses1),
    Wrapped = [{clause, CL, [{tuple, CL, [{atom, CL, '$riarc_rr'}, D, {match, CL, P, V}]}], G,
                [{tuple, CL, [{integer, CL, K}, D, V]}]}
               || {K, {clause, CL, [P], G, _}} <- Indexed],
    Plain = [{clause, CL, [{match, CL, P, V}], plain_guard(G, V, CL),
              [{tuple, CL, [{integer, CL, K}, {atom, CL, ext}, V]}]}
             || {K, {clause, CL, [P], G, _}} <- Indexed],
    N = var(L, "RiarcRrN" ++ Tag),
    X = var(L, "RiarcRrX" ++ Tag),
    Versioned = {clause, L, [{tuple, L, [{atom, L, '$riarc_rv'}, N, X]}], [],
                 [{tuple, L, [{atom, L, ver}, N, X]}]},
    Match = [{clause, CL, [P], G, [{integer, CL, K}]} || {K, {clause, CL, [P], G, _}} <- Indexed]
        ++ [{clause, L, [{var, L, '_'}], [], [{integer, L, 0}]}],
    Recv = fun(Cs) -> {'receive', L, Cs, Tmo, [{atom, L, '$riarc_rr_timeout'}]} end,
    Fun = {'fun', L, {clauses,
                      [{clause, L, [Op, M, Tmo], [],
                        [{'case', L, Op,
                          [{clause, L, [{atom, L, rec}], [], [Recv(Wrapped ++ Plain)]},
                           {clause, L, [{atom, L, ext}], [], [Recv(Plain)]},
                           {clause, L, [{atom, L, ver}], [], [Recv(Wrapped ++ Plain ++ [Versioned])]},
                           {clause, L, [{atom, L, match}], [], [{'case', L, M, Match}]}]}]}]}},
    Timeout = case TimeoutAfter1 of
                  none -> {atom, L, infinity};
                  {T2, _} -> T2
              end,
    Tagged = [{clause, CL, [{tuple, CL, [{integer, CL, K}, P]}], G, B}
              || {K, {clause, CL, [P], G, B}} <- Indexed],
    AfterClause = case TimeoutAfter1 of
                      none -> [];
                      {_, After} -> [{clause, L, [{atom, L, '$riarc_rr_timeout'}], [], After}]
                  end,
    Woven = case Ctx0 of
                #{env := Env} when TimeoutAfter1 =:= none ->
                    inline(L, Tag, Env, Indexed, false, Fun, Timeout, Clauses1);
                #{env := Env} ->
                    inline(L, Tag, Env, Indexed, true, Fun, Timeout, Tagged ++ AfterClause);
                #{} ->
                    {'case', L, rt(L, recv, [Fun, Timeout]), Tagged ++ AfterClause}
            end,
    {Woven, N2 + 1}.

%% The inline receive: in the modes a recording's processes are in (erlang:get of
%% '$riarc_rr_mode', see riarc_replay_rt.hrl), the receive itself, with copies of the
%% clauses' patterns and guards (fresh variables renamed, see rename/3), whose bodies
%% tell the runtime what was taken (riarc_replay_rt:took/2 and the like, on the sender
%% side riarc_replay_versions:took_ver/2 and took_timer/2) and give the
%% message; no fun is made or called. Anywhere else (a replay, outside a run, the
%% sender side with versions buffered) riarc_replay_rt:recv/2 with the fun. A receive
%% without `after' gives the message to the original clauses as they are: the first
%% that takes it is the clause whose copy took it, since a receive too tries its clauses
%% in order on each message. One with `after' gives {K, Msg} (recv/2's result) to the
%% clauses tagged as above, so that its timeout cannot be taken for a message. The
%% timeout is evaluated once:
%%   begin T = Timeout,
%%         case case erlang:get('$riarc_rr_mode') of
%%                  rr -> receive {'$riarc_rr', D, P1' = V} when G1' -> took(D, V); ...
%%                                P1' = V when G1', not wrapped(V) -> took_plain(V); ...
%%                        after T -> took_timeout() end;
%%                  rv -> receive {'$riarc_rv', N, P1' = V} when G1' ->
%%                                    case took_ver(N, V) of
%%                                        true -> V;
%%                                        false -> element(2, recv(Fun, T))
%%                                    end; ...
%%                                (timer messages: took_timer/2; the plain clauses)
%%                        after T -> took_timeout() end;
%%                  _ -> element(2, recv(Fun, T))
%%              end of
%%             P1 when G1 -> B1; ...
%%         end
%%   end
%% (with `after': {1, took(D, V)} etc., recv(Fun, T) itself, and the tagged clauses).
inline(L, Tag, Env, Indexed, HasAfter, Fun, Timeout, Clauses) ->
    Ren = fun(X) -> rename(X, Env, Tag) end,
    %% Names of their own: the fun of the fallback uses RiarcRrV etc. as fresh variables.
    V = var(L, "RiarcRrIV" ++ Tag),
    D = var(L, "RiarcRrID" ++ Tag),
    N = var(L, "RiarcRrIN" ++ Tag),
    {Bind, T} = case Timeout of
                    {atom, _, infinity} -> {[], Timeout};
                    {integer, _, _} -> {[], Timeout};
                    _ -> {[{match, L, var(L, "RiarcRrT" ++ Tag), Timeout}], var(L, "RiarcRrT" ++ Tag)}
                end,
    %% What a clause copy gives: the message, or {K, Msg} with an `after'.
    Give = fun(_K, _CL, E) when not HasAfter -> E;
              (K, CL, E) -> {tuple, CL, [{integer, CL, K}, E]}
           end,
    Generic = case HasAfter of
                  true -> rt(L, recv, [Fun, T]);
                  false -> {call, L, {atom, L, element}, [{integer, L, 2}, rt(L, recv, [Fun, T])]}
              end,
    Wrapped = fun(M, F) ->
                      [{clause, CL, [{tuple, CL, [{atom, CL, '$riarc_rr'}, D, {match, CL, Ren(P), V}]}], Ren(G),
                        [Give(K, CL, call(CL, M, F, [D, V]))]}
                       || {K, {clause, CL, [P], G, _}} <- Indexed]
              end,
    Plain = [{clause, CL, [{match, CL, Ren(P), V}], plain_guard(Ren(G), V, CL),
              [Give(K, CL, rt(CL, took_plain, [V]))]}
             || {K, {clause, CL, [P], G, _}} <- Indexed],
    %% Out of version order: buffered by took_ver/2, and the receive starts again.
    Versioned = [{clause, CL, [{tuple, CL, [{atom, CL, '$riarc_rv'}, N, {match, CL, Ren(P), V}]}], Ren(G),
                  [{'case', CL, call(CL, ?VERSIONS, took_ver, [N, V]),
                    [{clause, CL, [{atom, CL, true}], [], [Give(K, CL, V)]},
                     {clause, CL, [{atom, CL, false}], [], [Generic]}]}]}
                 || {K, {clause, CL, [P], G, _}} <- Indexed],
    Recv = fun(Cs) when HasAfter -> {'receive', L, Cs, T, [rt(L, took_timeout, [])]};
              (Cs) -> {'receive', L, Cs}
           end,
    Dispatch = {'case', L, {call, L, {remote, L, {atom, L, erlang}, {atom, L, get}}, [{atom, L, '$riarc_rr_mode'}]},
                [{clause, L, [{atom, L, rr}], [], [Recv(Wrapped(?RT, took) ++ Plain)]},
                 {clause, L, [{atom, L, rv}], [], [Recv(Versioned ++ Wrapped(?VERSIONS, took_timer) ++ Plain)]},
                 {clause, L, [{var, L, '_'}], [], [Generic]}]},
    {block, L, Bind ++ [{'case', L, Dispatch, Clauses}]}.

%% The guard of a plain-message clause: the original guard, and the message is not one
%% the runtime wrapped (a catch-all pattern would otherwise take a wrapped message raw).
plain_guard([], V, L) ->
    [[not_wrapped(V, L)]];
plain_guard(Guards, V, L) ->
    [Conj ++ [not_wrapped(V, L)] || Conj <- Guards].

not_wrapped(V, L) ->
    IsTuple = {call, L, {atom, L, is_tuple}, [V]},
    Size = {op, L, '=:=', {call, L, {atom, L, tuple_size}, [V]}, {integer, L, 3}},
    First = {call, L, {atom, L, element}, [{integer, L, 1}, V]},
    Tag = {op, L, 'orelse', {op, L, '=:=', First, {atom, L, '$riarc_rr'}},
           {op, L, '=:=', First, {atom, L, '$riarc_rv'}}},
    {op, L, 'not', {op, L, 'andalso', IsTuple, {op, L, 'andalso', Size, Tag}}}.

var(L, Name) ->
    {var, L, list_to_atom(Name)}.

rt(L, F, Args) ->
    call(L, ?RT, F, Args).

call(L, M, F, Args) ->
    {call, L, {remote, L, {atom, L, M}, {atom, L, F}}, Args}.

list([], L) -> {nil, L};
list([H | T], L) -> {cons, L, H, list(T, L)}.
