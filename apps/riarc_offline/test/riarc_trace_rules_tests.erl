%% Malformed traces (issue 29, item 3) are errors naming the file, the position and the
%% rule, never a verdict: one test per rule, in the text and binary formats and as a
%% list of events; and a PropEr property over hostile traces (generated runs, then
%% events duplicated, moved, renamed, spawn edges added) checking that the check never
%% crashes, never gives a verdict on a trace that breaks a rule (by an oracle of its
%% own, written here), and leaves no process behind.
%%
%% The property runs with a fixed seed (riarc_test_tier); RIARC_PROP_SEED="A,B,C" runs
%% another, and a failing run prints its seed.
-module(riarc_trace_rules_tests).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-define(M, riarc_demo_pqr).
-define(MFA, {?M, q, []}).
-define(NUMTESTS, 300).

accepting() -> fun(_) -> {ok, fun M({exit, _, _}) -> accept; M(_) -> M end} end.

%% Each malformation: its events, the rule, and the event (1-based) the error names.
cases() ->
    [{after_exit, [{init, p, x, ?MFA}, {exit, p, normal}, {send, p, q, hi}], 3},
     {after_exit, [{init, p, x, ?MFA}, {exit, p, normal}, {exit, p, normal}], 3},
     {exit_before_init, [{exit, p, normal}, {init, p, x, ?MFA}], 2},
     {self_spawn, [{init, p, x, ?MFA}, {spawn, p, p, ?MFA}, {exit, p, normal}], 2},
     {self_spawn, [{init, p, p, ?MFA}, {exit, p, normal}], 1},
     {spawn_cycle, [{spawn, a, b, ?MFA}, {spawn, b, c, ?MFA}, {send, a, b, hi},
                    {spawn, c, a, ?MFA}, {exit, a, normal}], 4},
     {spawn_cycle, [{spawn, b, a, ?MFA}, {spawn, a, b, ?MFA}], 2},
     {duplicate_init, [{init, p, x, ?MFA}, {send, p, q, hi}, {init, p, x, ?MFA}], 3},
     {duplicate_spawn, [{init, a, x, ?MFA}, {spawn, a, b, ?MFA}, {spawn, a, b, ?MFA}], 3},
     {duplicate_spawn, [{init, a, x, ?MFA}, {spawn, a, b, ?MFA}, {spawn, c, b, ?MFA}], 3},
     {parent_mismatch, [{spawn, a, b, ?MFA}, {init, b, c, ?MFA}], 2},
     {parent_mismatch, [{init, b, c, ?MFA}, {spawn, a, b, ?MFA}], 2}].

%% As a list of events: the event's number.
events_test() ->
    [begin
         {error, {riarc_trace_rules, Why}} = riarc_offline:check({events, Es}, accepting(), #{}),
         ?assertEqual({Rule, {"the events", {event, N}}}, {element(1, Why), element(2, Why)}),
         sentence(Why, "the events", Rule, "event " ++ integer_to_list(N))
     end || {Rule, Es, N} <- cases()].

%% As a hand-written text trace (a comment line first): the line.
text_test() ->
    F = tmp("rules.txt"),
    [begin
         ok = file:write_file(F, ["% a malformed trace\n" | [io_lib:format("~0tp.~n", [E]) || E <- Es]]),
         {error, {riarc_trace_rules, Why}} = riarc_offline:check(F, accepting(), #{}),
         ?assertEqual({Rule, {F, {line, N + 1}}}, {element(1, Why), element(2, Why)}),
         sentence(Why, F, Rule, "line " ++ integer_to_list(N + 1))
     end || {Rule, Es, N} <- cases()].

%% As a binary trace: the byte offset of the event's record (after the PROC records the
%% writer puts before it).
binary_test() ->
    F = tmp("rules.rtrc"),
    [begin
         ok = riarc_trace_file:write(F, Es, #{format => binary}),
         {ok, _, _} = riarc_trace_file:read_all(F),
         Offset = offset(F, N),
         {error, {riarc_trace_rules, Why}} = riarc_offline:check(F, accepting(), #{}),
         ?assertEqual({Rule, {F, {byte, Offset}}}, {element(1, Why), element(2, Why)}),
         sentence(Why, F, Rule, "byte " ++ integer_to_list(Offset))
     end || {Rule, Es, N} <- cases()].

%% The byte offset of the Nth event's record: walk the records, skipping PROC (type 1).
offset(F, N) ->
    {ok, <<"RIARCTRC", _V, _Flags, NLen:16, _:NLen/binary, _:64, Recs/binary>>} = file:read_file(F),
    offset(Recs, 12 + NLen + 8, N).

offset(<<Len:32, 1, _/binary>> = B, Pos, N) ->
    <<_:(4 + Len)/binary, Rest/binary>> = B,
    offset(Rest, Pos + 4 + Len, N);
offset(_B, Pos, 1) -> Pos;
offset(<<Len:32, _/binary>> = B, Pos, N) ->
    <<_:(4 + Len)/binary, Rest/binary>> = B,
    offset(Rest, Pos + 4 + Len, N - 1).

sentence(Why, File, Rule, Pos) ->
    Msg = riarc_offline:format_error({riarc_trace_rules, Why}),
    ?assertEqual(Msg, riarc:format_error({riarc_trace_rules, Why})),
    [?assertNotEqual({nomatch, X}, {string:find(Msg, X), X}) || X <- [File, Pos, atom_to_list(Rule)]],
    ?assertNot(lists:member($\n, Msg)).

%% What the trace once gave: the events after an exit were dropped, and the run
%% accepted with a warning that the VM had dropped them.
after_exit_was_accepted_test() ->
    Es = [{init, p, x, ?MFA}, {exit, p, normal}, {send, p, q, hi}, {recv, p, hi}],
    ?assertMatch({error, {riarc_trace_rules, {after_exit, _, p, {send, p, q, hi}, {_, {event, 2}}}}},
                 riarc_offline:check({events, Es}, accepting(), #{})).

%% A well-formed trace in which a child's events come before its spawn, and whose
%% processes are still running at its end, keeps every rule.
well_formed_test() ->
    Es = [{init, c, p, ?MFA}, {send, c, p, hi}, {init, p, x, ?MFA}, {spawn, p, c, ?MFA},
          {recv, p, hi}, {exit, c, normal}, {timeout, p}],
    {ok, R} = riarc_offline:check({events, Es}, accepting(), #{timeout => 5000}),
    ?assertEqual([{c, accept}, {p, none}],
                 lists:sort([{P, V} || #{pid := P, verdict := V} <- maps:get(verdicts, R)])).

%%% ---------------------------------------------------------------------------
%%% The property
%%% ---------------------------------------------------------------------------

hostile_traces_test_() ->
    {timeout, 600, fun() ->
        {ok, _} = application:ensure_all_started(riarc),
        ?assert(riarc_test_tier:quickcheck(prop_hostile(), {100, ?NUMTESTS},
                                           [{seed, {29, 3, 2026}}, {to_file, user}]))
    end}.

prop_hostile() ->
    ?FORALL({Es, Format}, {trace(), elements([events, text, binary])},
            begin
                Src = case Format of
                          events -> {events, Es};
                          _ ->
                              F = tmp("prop." ++ atom_to_list(Format)),
                              ok = riarc_trace_file:write(F, Es, #{format => Format}),
                              F
                      end,
                Before = erlang:processes(),
                Result = bounded(fun() -> riarc_offline:check(Src, accepting(), #{timeout => 5000}) end),
                Left = riarc_backend_log_tests:remains(Before, 5000),
                Oracle = oracle(Es),
                collect(element(1, {Oracle, x}) =:= ok,
                        ?WHENFAIL(io:format(user, "~p ~p: oracle ~p, check ~P, left ~p~n",
                                            [Format, Es, Oracle, Result, 20, Left]),
                                  Left =:= [] andalso agrees(Oracle, Result)))
            end).

agrees(ok, {ok, #{verdicts := _}}) -> true;
agrees({malformed, _}, {error, {riarc_trace_rules, Why}}) ->
    Msg = riarc_offline:format_error({riarc_trace_rules, Why}),
    is_list(Msg) andalso not lists:member($\n, Msg);
agrees(_, _) -> false.

%% Runs Fun in a process of its own, with a time limit: a crash or a hang is a result
%% the property rejects.
bounded(Fun) ->
    {Pid, Mon} = spawn_monitor(fun() -> exit({riarc_done, Fun()}) end),
    receive
        {'DOWN', Mon, process, Pid, {riarc_done, R}} -> R;
        {'DOWN', Mon, process, Pid, Why} -> {crashed, Why}
    after 20000 ->
        exit(Pid, kill),
        receive {'DOWN', Mon, process, Pid, _} -> hang end
    end.

%% The oracle: the rules, checked naively, independently of riarc_trace_rules.
oracle(Es) ->
    Idx = lists:zip(lists:seq(1, length(Es)), Es),
    Origin = fun riarc_event:origin/1,
    Bad = [I || {I, E} <- Idx,
                %% after an exit (init included)
                lists:any(fun({J, {exit, S, _}}) -> J < I andalso S =:= Origin(E); (_) -> false end, Idx)
                orelse self_spawn(E)
                orelse lists:any(fun({J, F}) -> J < I andalso clash(F, E) end, Idx)]
          ++ [cycle || cyclic(Es)],
    case Bad of
        [] -> ok;
        _ -> {malformed, Bad}
    end.

self_spawn({spawn, P, P, _}) -> true;
self_spawn({init, C, C, _}) -> true;
self_spawn(_) -> false.

%% An earlier event F that E contradicts.
clash({init, C, _, _}, {init, C, _, _}) -> true;
clash({spawn, _, C, _}, {spawn, _, C, _}) -> true;
clash({spawn, P, C, _}, {init, C, Q, _}) -> P =/= Q;
clash({init, C, Q, _}, {spawn, P, C, _}) -> P =/= Q;
clash(_, _) -> false.

%% A cycle of parents among the spawns (the first spawn of each child counts).
cyclic(Es) ->
    Parent = lists:foldl(fun({spawn, P, C, _}, M) when not is_map_key(C, M) -> M#{C => P};
                            (_, M) -> M
                         end, #{}, Es),
    lists:any(fun(C) -> up(maps:get(C, Parent), C, Parent, map_size(Parent)) end, maps:keys(Parent)).

up(C, C, _Parent, _N) -> true;
up(_X, _C, _Parent, 0) -> false;
up(X, C, Parent, N) ->
    case Parent of
        #{X := P} -> up(P, C, Parent, N - 1);
        #{} -> false
    end.

%% A generated run (a tree of processes, each with its own events in order, interleaved
%% at random), then made hostile: events duplicated, moved, renamed, and spawns added.
trace() ->
    ?LET({Run, Muts}, {run(), list(mutation())},
         lists:foldl(fun mutate/2, Run, Muts)).

run() ->
    ?LET(Procs, procs(),
         ?LET(Keys, vector(length(lists:append(Procs)), float(0.0, 1.0)),
              interleave(Procs, Keys))).

%% Up to 6 processes: the first a root; each other one spawned by an earlier one.
procs() ->
    ?LET(N, choose(1, 6),
         ?LET(Parents, vector(N - 1, choose(1, N)),
              ?LET(Bodies, vector(N, body()),
                   build(N, Parents, Bodies)))).

body() -> {list(oneof([send, recv, timeout])), boolean()}.

build(N, Parents, Bodies) ->
    %% Process I (2..N) is spawned by a process before it: min(parent, I - 1).
    Par = maps:from_list([{I, min(P, I - 1)} || {I, P} <- lists:zip(lists:seq(2, N), Parents)]),
    [begin
         {Acts, Exits} = lists:nth(I, Bodies),
         Init = case Par of
                    #{I := P} -> [{init, I, P, ?MFA}];
                    #{} -> [{init, I, x, ?MFA}]
                end,
         Spawns = [{spawn, I, C, ?MFA} || {C, P} <- lists:sort(maps:to_list(Par)), P =:= I],
         Init ++ Spawns ++ [act(A, I) || A <- Acts] ++ [{exit, I, normal} || Exits]
     end || I <- lists:seq(1, N)].

act(send, I) -> {send, I, 1, hi};
act(recv, I) -> {recv, I, hi};
act(timeout, I) -> {timeout, I}.

interleave(Procs, Keys) ->
    {Keyed, []} = lists:foldl(fun(Es, {Acc, Ks}) ->
                                      {Mine, Rest} = lists:split(length(Es), Ks),
                                      {Acc ++ lists:zip(lists:sort(Mine), Es), Rest}
                              end, {[], Keys}, Procs),
    [E || {_, E} <- lists:keysort(1, Keyed)].

mutation() ->
    oneof([{dup, non_neg_integer()},
           {move, non_neg_integer(), non_neg_integer()},
           {rename, non_neg_integer(), choose(1, 7)},
           {spawn, choose(1, 7), choose(1, 7), non_neg_integer()},
           {drop, non_neg_integer()}]).

mutate(_, []) -> [];
mutate({dup, I}, Es) -> insert(I, lists:nth(I rem length(Es) + 1, Es), Es);
mutate({move, I, J}, Es) ->
    K = I rem length(Es) + 1,
    E = lists:nth(K, Es),
    insert(J, E, lists:sublist(Es, K - 1) ++ lists:nthtail(K, Es));
mutate({rename, I, S}, Es) ->
    K = I rem length(Es) + 1,
    lists:sublist(Es, K - 1) ++ [setelement(2, lists:nth(K, Es), S)] ++ lists:nthtail(K, Es);
mutate({spawn, P, C, I}, Es) -> insert(I, {spawn, P, C, ?MFA}, Es);
mutate({drop, I}, Es) ->
    K = I rem length(Es) + 1,
    lists:sublist(Es, K - 1) ++ lists:nthtail(K, Es).

insert(I, E, Es) ->
    K = I rem (length(Es) + 1),
    lists:sublist(Es, K) ++ [E] ++ lists:nthtail(K, Es).

tmp(Name) ->
    Dir = filename:join(["/tmp", "riarc_trace_rules_tests", os:getpid()]),
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    filename:join(Dir, Name).
