%% The tests of the readers' limits (riarc_trace_reader), named after that module so
%% that `rebar3 eunit --app riarc_offline' runs them.
%% Hostile trace files: generated and mutated files of each format (bit flips, cuts,
%% length fields set huge, compressed bombs, deep nesting, atom floods) never crash a
%% reader or the check, never hang it, and stay within bounded memory and atoms; and
%% binary, text and dbg recordings of one run give the same verdicts.
%% The PropEr runs start from a fixed seed (riarc_test_tier): RIARC_PROP_SEED="A,B,C"
%% replays another; a failing run prints its seed.
-module(riarc_trace_reader_tests).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-define(M, riarc_demo_pqr).
%% The limits the fuzzed reads run under: small, so that the bombs meet them quickly.
-define(MAX_RECORD, 1024 * 1024).
%% A reader's heap may not pass this (words; 256 MiB), nor a read take longer than this.
-define(HEAP_WORDS, 32 * 1024 * 1024).
-define(READ_MS, 10000).
%% Growth of the whole VM's memory a case may leave behind, and new atoms.
-define(MEM_BYTES, 200 * 1024 * 1024).
-define(ATOMS, 200).

%%% ---------------------------------------------------------------------------
%%% Bombs, one at a time
%%% ---------------------------------------------------------------------------

header() -> riarc_trace_bin:encode_header(#{node => node(), start_us => 0, payloads => true}).

proc() -> <<7:32, 1, 0:32, 1, "p">>.

recv(Term) -> <<(1 + 4 + 4 + byte_size(Term)):32, 6, 0:32, (byte_size(Term)):32, Term/binary>>.

%% A compressed term announcing 2 GiB: refused before anything is inflated.
compressed_bomb_test() ->
    Bomb = <<131, 80, 16#7fffffff:32, (zlib:compress(binary:copy(<<0>>, 1024 * 1024)))/binary>>,
    F = tmp("bomb.rtrc"),
    ok = file:write_file(F, [header(), proc(), recv(Bomb)]),
    {Result, Mem} = measured(fun() -> riarc_trace_file:read_all(F) end),
    ?assertMatch({error, {riarc_trace_file, {compressed_too_big, _, {byte, _}, 16#7fffffff, _}}}, Result),
    ?assert(Mem < 50 * 1024 * 1024),
    {error, Why} = Result,
    ?assertMatch("/" ++ _, riarc_offline:format_error(Why)),
    ?assertNotEqual(nomatch, string:find(riarc_trace_file:format_error(Why), "would expand")).

%% A compressed term lying about its size (announcing 100 bytes, inflating to 64 MiB):
%% the VM refuses it, and the fallback decoder stops inflating past what it announced.
lying_bomb_test() ->
    Z = zlib:compress(term_to_binary(binary:copy(<<0>>, 64 * 1024 * 1024))),
    F = tmp("liar.rtrc"),
    ok = file:write_file(F, [header(), proc(), recv(<<131, 80, 100:32, Z/binary>>)]),
    {Result, Mem} = measured(fun() -> riarc_trace_file:read_all(F) end),
    ?assertMatch({ok, [{recv, p, {riarc_undecodable, _}}], #{undecodable := 1}}, Result),
    ?assert(Mem < 50 * 1024 * 1024).

%% A 50 MB term: refused by its length, before it is read.
huge_record_test() ->
    F = tmp("huge.rtrc"),
    Big = term_to_binary(binary:copy(<<1>>, 50 * 1000 * 1000)),
    ok = file:write_file(F, [header(), proc(), recv(Big)]),
    {Result, Mem} = measured(fun() -> riarc_trace_file:read_all(F) end),
    ?assertMatch({error, {riarc_trace_file, {too_big, _, {byte, _}, _, 16777216}}}, Result),
    ?assert(Mem < 50 * 1024 * 1024),
    %% Allowed by the option, it is read.
    ?assertMatch({ok, [{recv, p, _}], _},
                 riarc_trace_file:read_all(F, #{max_record_bytes => 64 * 1000 * 1000})).

%% 200 000 distinct names no atom table has (20 000 in the fast tier, a hundred times the
%% atoms allowed): none becomes an atom, each is counted, and the check's result warns
%% about them.
atom_flood_text_test_() ->
    {timeout, 60, fun() ->
        N = riarc_test_tier:count(20000, 200000),
        F = tmp("atoms.txt"),
        ok = file:write_file(F, [["{send, p, q, riarc_fuzz_", integer_to_list(I), "}.\n"]
                                 || I <- lists:seq(1, N)]),
        Atoms = erlang:system_info(atom_count),
        {ok, Es, #{unknown_atoms := N}} = riarc_trace_file:read_all(F),
        ?assertEqual({riarc_unknown_atom, <<"riarc_fuzz_7">>}, element(4, lists:nth(7, Es))),
        ?assert(erlang:system_info(atom_count) - Atoms < ?ATOMS),
        {ok, #{trace := #{warnings := Ws}}} =
            riarc_offline:check(F, fun(_) -> {ok, fun M(_) -> M end} end, #{}),
        [W] = [W || W = {unknown_atoms, _, _} <- Ws],
        ?assertEqual({unknown_atoms, F, N}, W),
        ?assertMatch("/" ++ _, riarc_offline:format_warning(W))
    end}.

%% The same in binary and dbg files: unknown atoms in payloads, MFAs, process names and
%% the node names of pids.
atom_flood_binary_and_dbg_test() ->
    Atom = fun(I) -> <<"riarc_fz_", (integer_to_binary(I))/binary>> end,
    Ext = fun(I) -> A = Atom(I), <<131, 119, (byte_size(A)), A/binary>> end,
    Atoms = erlang:system_info(atom_count),
    F = tmp("atoms.rtrc"),
    Mfa = <<1, 7:16, "riarc_q", 1:16, "f", 0, 2:32, 131, 106>>,
    ok = file:write_file(F, [header(), proc(), <<(1 + 4 + 1 + 8):32, 1, 1:32, 1, "riarc_pq">>,
                             <<(1 + 8 + byte_size(Mfa)):32, 2, 0:32, 1:32, Mfa/binary>>,
                             [recv(Ext(I)) || I <- lists:seq(1, 1000)]]),
    {ok, [{spawn, p, {riarc_unknown_atom, <<"riarc_pq">>}, {{riarc_unknown_atom, <<"riarc_q">>}, f, []}}
          | Recvs],
     #{unknown_atoms := 1002}} = riarc_trace_file:read_all(F),
    ?assertEqual({recv, p, {riarc_unknown_atom, Atom(5)}}, lists:nth(5, Recvs)),
    D = tmp("atoms.dbg"),
    Node = <<"riarc_fz@nowhere">>,
    Pid = <<131, 88, 119, (byte_size(Node)), Node/binary, 5:32, 0:32, 1:32>>,
    <<131, PidExt/binary>> = Pid,
    Msg = fun(I) -> A = Atom(I), <<131, 104, 4, 119, 5, "trace", PidExt/binary, 119, 7, "receive",
                                   119, (byte_size(A)), A/binary>> end,
    ok = file:write_file(D, [<<0, (byte_size(M)):32, M/binary>> || I <- lists:seq(1, 1000), M <- [Msg(I)]]),
    {ok, DEs, #{unknown_atoms := 2000}} = riarc_trace_file:read_all(D),
    ?assertEqual({recv, {riarc_pid, Node, 5, 0}, {riarc_unknown_atom, Atom(9)}}, lists:nth(9, DEs)),
    ?assert(erlang:system_info(atom_count) - Atoms < ?ATOMS).

%% Lines without end, terms nested too deep, integers too long: errors with their line.
text_limits_test() ->
    F = tmp("limits.txt"),
    ok = file:write_file(F, ["{exit, a, normal}.\n", binary:copy(<<"x">>, 3 * 1024 * 1024)]),
    ?assertMatch({error, {riarc_trace_file, {too_big, _, {line, 2}, _, ?MAX_RECORD}}},
                 riarc_trace_file:read_all(F, #{max_record_bytes => ?MAX_RECORD})),
    ok = file:write_file(F, ["{exit, a, ", lists:duplicate(200000, $[), "]}.\n"]),
    {error, {riarc_trace_file, {syntax, _, 1, Msg}}} = riarc_trace_file:read_all(F),
    ?assertNotEqual(nomatch, string:find(Msg, "nested")),
    ok = file:write_file(F, ["\n{exit, a, ", lists:duplicate(20000, $7), "}.\n"]),
    ?assertMatch({error, {riarc_trace_file, {syntax, _, 2, _}}}, riarc_trace_file:read_all(F)).

%% Random bytes: not a trace file, in one sentence naming the file.
random_bytes_test() ->
    F = tmp("random.bin"),
    rand:seed(exsss, {1, 2, 3}),
    [begin
         ok = file:write_file(F, <<16#ff, (rand:bytes(4096))/binary>>),
         {error, Why} = riarc_trace_file:read_all(F),
         ?assertMatch({riarc_trace_file, {not_a_trace_file, _, _}}, Why),
         Msg = riarc_offline:format_error(Why),
         ?assertEqual(F ++ ": not a trace file: ", lists:sublist(Msg, length(F) + 20))
     end || _ <- lists:seq(1, 20)],
    %% Valid at first, not UTF-8 further on: the line is named.
    ok = file:write_file(F, [lists:duplicate(1000, "{exit, a, normal}.\n"),
                             "{exit, b, \"", 16#ff, 16#fe, "\"}.\n"]),
    ?assertMatch({error, {riarc_trace_file, {syntax, _, 1001, "the text is not UTF-8"}}},
                 riarc_trace_file:read_all(F)).

%% A dbg file whose spawned child has no event: the check ends at once, the child's
%% verdict is an error.
dbg_silent_child_test() ->
    P = list_to_pid("<0.500.0>"),
    C = list_to_pid("<0.501.0>"),
    F = tmp("silent.dbg"),
    ok = file:write_file(F, [<<0, (byte_size(B)):32, B/binary>>
                             || M <- [{trace, P, spawn, C, {?M, q, []}}, {trace, P, send, req, C},
                                      {trace, P, exit, normal}],
                                B <- [term_to_binary(M)]]),
    %% The check's own timeout is left at infinity: a check that waited for the child's
    %% events would never end, and the test's timeout would say so.
    {ok, R} = riarc_offline:check(F, fun(_) -> {ok, fun M(_) -> M end} end, #{}),
    ?assertMatch([#{verdict := error, reason := {no_events, P}, mfa := {?M, q, []}}],
                 [V || V = #{pid := Pid} <- maps:get(verdicts, R), Pid =:= C]),
    ?assertMatch(#{warnings := [{no_events, F, [C]}]}, maps:get(trace, R)).

%% The reorder buffer is bounded: the process whose event overflows it gets an error
%% verdict, the others are checked as usual.
held_overflow_test() ->
    Events = [{init, a, x, {?M, p, []}}]
             ++ [{recv, late, I} || I <- lists:seq(1, 50)]
             ++ [{spawn, a, b, {?M, q, []}}, {recv, b, hi}, {exit, b, normal},
                 {spawn, a, late, {?M, r, []}}, {exit, a, normal}],
    Spec = fun(_) -> {ok, fun M({exit, _, normal}) -> accept; M(_) -> M end} end,
    {ok, R} = riarc_offline:check({events, Events}, Spec, #{max_held_events => 10}),
    Vs = lists:sort([{P, V} || #{pid := P, verdict := V} <- maps:get(verdicts, R)]),
    ?assertEqual([{a, accept}, {b, accept}, {late, error}], Vs),
    ?assertMatch([#{reason := {held_overflow, 50, 10}}], [V || V = #{pid := late} <- maps:get(verdicts, R)]),
    ?assertMatch(#{overflowed := #{late := 50}, warnings := [{held_overflow, _, [late]}]},
                 maps:get(trace, R)).

%%% ---------------------------------------------------------------------------
%%% The formats agree
%%% ---------------------------------------------------------------------------

%% P's monitor accepts when P sends to the pid of the child it spawned: a text format
%% that turned pids into anything else would reject.
pid_spec() ->
    fun(MFA) when MFA =:= {?M, p, []}; MFA =:= undefined ->
            {ok, fun M({spawn, _, C, _}) ->
                         fun N({send, _, To, _}) when is_pid(To), To =:= C -> accept;
                             N({send, _, _, _}) -> reject;
                             N(_) -> N
                         end;
                     M(_) -> M
                 end};
       (_) -> {ok, fun M({exit, Self, normal}) when is_pid(Self) -> accept; M(_) -> M end}
    end.

formats_agree_test_() ->
    {timeout, 60, fun() ->
        Bin = tmp("agree.rtrc"),
        Text = tmp("agree.txt"),
        Dbg = tmp("agree.dbg"),
        {ok, _} = riarc_offline:record({?M, p, []}, Bin, #{}),
        {ok, _} = riarc_offline:record({?M, p, []}, Text, #{format => text}),
        riarc_offline_tests:dbg_record({file, Dbg}),
        Verdicts = [begin
                        {ok, R} = riarc_offline:check(F, pid_spec(), #{timeout => 10000}),
                        lists:sort([{role(MFA), V} || #{mfa := MFA, verdict := V} <- maps:get(verdicts, R)])
                    end || F <- [Bin, Text, Dbg]],
        ?assertEqual([[{p, accept}, {q, accept}, {r, accept}]], lists:usort(Verdicts))
    end}.

role(undefined) -> p; % a dbg file starts after the root did: no init event
role({?M, F, _}) -> F.

%%% ---------------------------------------------------------------------------
%%% Fuzz: generated and mutated files of every format
%%% ---------------------------------------------------------------------------

fuzz_binary_test_() -> fuzz(binary).
fuzz_text_test_() -> fuzz(text).
fuzz_dbg_test_() -> fuzz(dbg).

fuzz(Format) ->
    {timeout, 120, ?_assert(riarc_test_tier:quickcheck(prop_fuzz(Format), {30, 300}))}.

prop_fuzz(Format) ->
    ?FORALL({Es, Muts, Check}, {list(event()), list(mutation()), frequency([{4, false}, {1, true}])},
            begin
                F = tmp("fuzz." ++ atom_to_list(Format)),
                ok = file:write_file(F, mutate(encode(Format, Es, F), Muts, Format)),
                Atoms = erlang:system_info(atom_count),
                {Read, Mem} = measured(fun() -> bounded(fun() -> riarc_trace_file:read_all(F, #{max_record_bytes => ?MAX_RECORD}) end) end),
                Checked = case Check of
                              true -> bounded(fun() -> riarc_offline:check(F, fun(_) -> {ok, fun M(_) -> M end} end,
                                                                            #{timeout => 5000, max_record_bytes => ?MAX_RECORD}) end);
                              false -> {ok, skipped}
                          end,
                New = erlang:system_info(atom_count) - Atoms,
                ?WHENFAIL(io:format(user, "~p: read ~P, check ~P, memory +~b, atoms +~b~n",
                                    [Format, Read, 12, Checked, 12, Mem, New]),
                          acceptable(Read, F) andalso acceptable(Checked, F)
                          andalso Mem < ?MEM_BYTES andalso New < ?ATOMS)
            end).

acceptable({ok, _, Info}, _F) -> is_map(Info);
acceptable({ok, _}, _F) -> true;
acceptable({error, {riarc_trace_file, _} = Why}, F) ->
    Msg = riarc_offline:format_error(Why),
    string:find(Msg, F) =/= nomatch andalso not lists:member($\n, Msg);
%% A generated trace may break a rule every run keeps (an event after an exit, a
%% self-spawn, ...): the check refuses it as it refuses an unreadable file, in one
%% sentence naming the file.
acceptable({error, {riarc_trace_rules, _} = Why}, F) ->
    Msg = riarc_offline:format_error(Why),
    string:find(Msg, F) =/= nomatch andalso not lists:member($\n, Msg);
acceptable({error, Other}, _F) -> {unexpected_error, Other} =:= ok;
acceptable(_, _) -> false.

%% Runs Fun in a process of bounded heap, with a time limit: a crash, a heap blown or a
%% hang is a result the property rejects.
bounded(Fun) ->
    {Pid, Mon} = spawn_monitor(fun() ->
                                   _ = process_flag(max_heap_size, #{size => ?HEAP_WORDS, kill => true,
                                                                     error_logger => false}),
                                   exit({riarc_done, Fun()})
                               end),
    receive
        {'DOWN', Mon, process, Pid, {riarc_done, R}} -> R;
        {'DOWN', Mon, process, Pid, Why} -> {crashed, Why}
    after ?READ_MS ->
        exit(Pid, kill),
        receive {'DOWN', Mon, process, Pid, _} -> hang end
    end.

%% Fun's result and how much the VM's memory grew meanwhile (peak not seen, growth left).
measured(Fun) ->
    erlang:garbage_collect(),
    Before = erlang:memory(total),
    R = Fun(),
    erlang:garbage_collect(),
    {R, max(0, erlang:memory(total) - Before)}.

encode(dbg, Es, _F) ->
    [<<0, (byte_size(B)):32, B/binary>> || E <- Es, B <- [term_to_binary(dbg_msg(E))]];
encode(Format, Es, F) ->
    ok = riarc_trace_file:write(F, Es, #{format => Format}),
    {ok, B} = file:read_file(F),
    B.

dbg_msg({init, C, P, MFA}) -> {trace, C, spawned, P, MFA};
dbg_msg({spawn, P, C, MFA}) -> {trace, P, spawn, C, MFA};
dbg_msg({exit, P, R}) -> {trace_ts, P, exit, R, os:timestamp()};
dbg_msg({send, F, T, M}) -> {trace, F, send, M, T};
dbg_msg({recv, P, M}) -> {trace, P, 'receive', M}.

mutate(IoData, Muts, Format) ->
    lists:foldl(fun(M, B) -> mutation(M, B, Format) end, iolist_to_binary(IoData), Muts).

mutation({flip, At, Bit}, <<>>, _) -> _ = {At, Bit}, <<>>;
mutation({flip, At, Bit}, B, _) ->
    P = At rem byte_size(B),
    <<Pre:P/binary, X, Post/binary>> = B,
    <<Pre/binary, (X bxor (1 bsl Bit)), Post/binary>>;
mutation({cut, At}, B, _) -> binary:part(B, 0, At rem (byte_size(B) + 1));
mutation({huge, At, Len}, B, _) when byte_size(B) >= 4 ->
    P = At rem (byte_size(B) - 3),
    <<Pre:P/binary, _:32, Post/binary>> = B,
    <<Pre/binary, Len:32, Post/binary>>;
mutation({huge, _, _}, B, _) -> B;
mutation({insert, At, What}, B, Format) ->
    P = At rem (byte_size(B) + 1),
    <<Pre:P/binary, Post/binary>> = B,
    <<Pre/binary, (special(What, Format))/binary, Post/binary>>.

%% Records (lines, for text) crafted to hurt, inserted anywhere, at a record boundary
%% or not.
special(What, text) ->
    iolist_to_binary(case What of
                         bomb -> "{recv, p, {'$ext', <<131,80,127,255,255,255,120,156,0>>}}.\n";
                         deep -> ["{recv, p, ", lists:duplicate(120000, $[), "]}.\n"];
                         atoms -> [["{send, p, q, riarc_fz_", integer_to_list(I), "}.\n"] || I <- lists:seq(1, 300)];
                         long -> ["{recv, p, \"", binary:copy(<<"a">>, 2 * ?MAX_RECORD), "\"}.\n"];
                         number -> ["{recv, p, ", lists:duplicate(50000, $9), "}.\n"]
                     end);
special(What, Format) ->
    Term = case What of
               bomb -> <<131, 80, 16#7fffffff:32, 120, 156, 0>>;
               deep -> term_to_binary(lists:foldl(fun(_, A) -> [A] end, [], lists:seq(1, 100000)));
               atoms -> <<131, 108, 300:32, (iolist_to_binary([<<119, 9, "riarc_", (integer_to_binary(100 + I))/binary>> || I <- lists:seq(1, 300)]))/binary, 106>>;
               long -> term_to_binary(binary:copy(<<"a">>, 2 * ?MAX_RECORD));
               number -> <<131, 111, 100000:32, 0, (binary:copy(<<255>>, 100000))/binary>>
           end,
    case Format of
        binary -> recv(Term);
        dbg -> <<0, (byte_size(Term)):32, Term/binary>>
    end.

mutation() ->
    oneof([{flip, non_neg_integer(), choose(0, 7)},
           {cut, non_neg_integer()},
           {huge, non_neg_integer(), oneof([16#7fffffff, 16#ffffffff, choose(?MAX_RECORD, 16#7fffffff)])},
           {insert, non_neg_integer(), elements([bomb, deep, atoms, long, number])}]).

sid() -> oneof([elements([p, q, r]), non_neg_integer(), exactly(self()), exactly(list_to_pid("<0.999.0>"))]).
mfa() -> oneof([undefined, {elements([?M, lists]), elements([p, q, r]), list(small())}]).
small() -> oneof([atom_ish(), int(), binary(), exactly(make_ref()), {atom_ish(), int()}]).
atom_ish() -> elements([a, b, req, normal, '$pid', 'ünï']).

event() ->
    oneof([{init, sid(), sid(), mfa()}, {spawn, sid(), sid(), mfa()}, {exit, sid(), small()},
           {send, sid(), sid(), small()}, {recv, sid(), small()}]).

tmp(Name) ->
    Dir = filename:join(["/tmp", "riarc_trace_reader_tests", os:getpid()]),
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    filename:join(Dir, Name).
