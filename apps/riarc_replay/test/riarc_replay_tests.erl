%% @doc EUnit tests of record &amp; replay: racy programs (riarc_replay_progs,
%% riarc_demo:tickets/2) are recorded once and replayed many times, with each strategy;
%% changed programs diverge; damaged recordings are errors (the fast tier runs one test of
%% each kind and one strategy a test; the full tier all). Every test is bounded by an
%% EUnit timeout; random choices use a seed that failures print.
%% ```
%% $ rebar3 eunit --app riarc_replay
%% '''
-module(riarc_replay_tests).

-include_lib("eunit/include/eunit.hrl").

%% A system with a module without debug_info, for riarc_replay_cli_tests too.
-export([nodi_modules/0]).

-define(P, riarc_replay_progs).
-define(OPTS, #{modules => [?P], stall => 300, timeout => 30000}).

file(Name) ->
    Dir = filename:join(["/tmp", "riarc_replay_tests_" ++ os:getpid()]),
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    filename:join(Dir, Name).

record(MFA, Name, Opts) ->
    File = file(Name),
    {ok, Info} = riarc_replay:record(MFA, File, maps:merge(?OPTS, Opts)),
    {File, Info}.

%% Replays N times (3 in the fast tier); every result must be the recorded one.
replays(File, Expected, N0, Opts) ->
    N = riarc_test_tier:count(min(3, N0), N0),
    [begin
         {ok, #{result := R}} = riarc_replay:replay(File, maps:merge(?OPTS, Opts)),
         ?assertEqual({replay, K, Expected}, {replay, K, R})
     end || K <- lists:seq(1, N)],
    ok.

%%% Message races -------------------------------------------------------------------------

race_test_() ->
    [{timeout, 120, {"race, " ++ atom_to_list(St), fun() -> race(St) end}} || St <- strategies(?LINE)].

race(Strategy) ->
    {File, #{result := Rec, events := Ev, bytes := Bytes}} =
        record({?P, race, [4, 25]}, "race_" ++ atom_to_list(Strategy), #{strategy => Strategy}),
    ?assertEqual(100, length(Rec)),
    ?assert(Ev >= 100),
    ?assert(Bytes > 9 * Ev),
    replays(File, Rec, 20, #{}).

%% The wrapping names each message by its sender and sequence number in one integer
%% (the RECV data as it is): the root's RECV events must be, in the order it took the
%% messages, sender I's index and J - 1 for its J-th message {msg, I, J} (each sender
%% sends only to the root); each sender's messages are taken in the order sent; and the
%% replays take the same order. A wrapping that mixed up senders or sequence numbers, or
%% a receive that took a wrapped message with the wrong clause, fails here.
wrapping_order_test_() ->
    {timeout, 120, fun() ->
        {File, #{result := Rec}} = record({?P, race, [4, 25]}, "order", #{strategy => receiver}),
        ?assertEqual(100, length(Rec)),
        [?assertEqual({I, lists:seq(1, 25)}, {I, [J || {I1, J} <- Rec, I1 =:= I]}) || I <- lists:seq(1, 4)],
        {ok, _, Ss} = riarc_replay_file:read(File),
        Idx = maps:from_list([{Lid, X} || {X, Lid, _, _} <- Ss]),
        [RootEvs] = [expand(Evs) || {_, [], Evs, _} <- Ss],
        Recvs = [{D bsr 40, D band (1 bsl 40 - 1)} || <<1, D:64>> <= RootEvs],
        ?assertEqual([{maps:get([I], Idx), J - 1} || {I, J} <- Rec], Recvs),
        replays(File, Rec, 5, #{}),
        {SFile, #{result := SRec}} = record({?P, race, [4, 25]}, "order_snd", #{strategy => sender}),
        [?assertEqual({I, lists:seq(1, 25)}, {I, [J || {I1, J} <- SRec, I1 =:= I]}) || I <- lists:seq(1, 4)],
        replays(SFile, SRec, 5, #{})
    end}.

%% Plain runs of the same program do not all take the same order (on this 2-core machine
%% 20 runs gave 20 different orders; the test asks only for two different ones).
race_plain_runs_differ_test_() ->
    {timeout, 60, fun() ->
                          Orders = [?P:race(4, 25) || _ <- lists:seq(1, 20)],
                          ?assert(length(lists:usort(Orders)) > 1)
                  end}.

%% Recordings of the same program also differ: what the replay reproduces is one run.
recordings_differ_test_() -> riarc_test_tier:slow(recordings_differ()).
recordings_differ() ->
    {timeout, 120, fun() ->
                           Rs = [maps:get(result, element(2, record({?P, race, [4, 25]}, "rd", #{})))
                                 || _ <- lists:seq(1, 10)],
                           ?assert(length(lists:usort(Rs)) > 1)
                   end}.

selective_test_() -> riarc_test_tier:slow(selective()).
selective() ->
    [{timeout, 60, fun() ->
                           {File, #{result := Rec}} = record({?P, selective, [30]}, "sel", #{strategy => St}),
                           replays(File, Rec, 5, #{})
                   end} || St <- strategies(?LINE)].

mixed_test_() -> riarc_test_tier:slow(mixed()).
mixed() ->
    [{timeout, 60, fun() ->
                           {File, #{result := Rec}} = record({?P, mixed, [6, 20000]}, "mixed", #{strategy => St}),
                           replays(File, Rec, 5, #{})
                   end} || St <- strategies(?LINE)].

%% A sender's sequence number counts its wrapped sends to every receiver: messages to
%% two receivers interleaved still name one message each.
fanout_test_() -> riarc_test_tier:slow(fanout()).
fanout() ->
    [{timeout, 120, fun() ->
                            {File, #{result := Rec}} = record({?P, fanout, [3, 30]}, "fan", #{strategy => St}),
                            ?assertMatch([{1, L1}, {2, L2}] when length(L1) =:= 90 andalso length(L2) =:= 90, Rec),
                            replays(File, Rec, 5, #{})
                    end} || St <- strategies(?LINE)].

%% A recorded process with a long mailbox moves it off the heap when it writes a chunk
%% (the plain run keeps it on the heap); the replay takes the same messages.
flood_test_() -> riarc_test_tier:slow(flood()).
flood() ->
    [{timeout, 60, fun() ->
                           {Sum, on_heap} = ?P:flood(5000),
                           {File, #{result := {Sum, Rec}}} = record({?P, flood, [5000]}, "flood", #{strategy => St}),
                           %% Sender side: a versioned receive writes no event, so no chunk.
                           _ = St =:= receiver andalso ?assertEqual(off_heap, Rec),
                           {ok, #{result := {Sum, _}}} = riarc_replay:replay(File, ?OPTS)
                   end} || St <- strategies(?LINE)].

%%% Timeouts, ETS, values, spawn trees ----------------------------------------------------

timeouts_test_() ->
    [{timeout, 120, fun() ->
                            {File, #{result := Rec}} = record({?P, timeouts, [20]}, "tmo", #{strategy => St}),
                            replays(File, Rec, 5, #{})
                    end} || St <- strategies(?LINE)].

ets_test_() ->
    [{timeout, 120, fun() ->
                            {File, #{result := Rec}} = record({?P, ets_race, [4, 20]}, "ets", #{strategy => St}),
                            replays(File, Rec, 5, #{})
                    end} || St <- strategies(?LINE)].

%% Lost updates happen in plain runs: the final count is below 4 * 20 in some run.
ets_race_is_real_test_() ->
    {timeout, 60, fun() ->
                          Finals = [element(1, ?P:ets_race(4, 20)) || _ <- lists:seq(1, 10)],
                          ?assert(lists:min(Finals) < 80)
                  end}.

values_test_() -> riarc_test_tier:slow(values()).
values() ->
    {timeout, 60, fun() ->
                          {File, #{result := Rec}} = record({?P, values, []}, "values", #{}),
                          %% A value wider than 8 bytes went to the side table.
                          ?assert(maps:get(big, Rec) >= 1),
                          replays(File, Rec, 3, #{}),
                          ?assertNotEqual(Rec, ?P:values())
                  end}.

tree_test_() -> riarc_test_tier:slow(tree()).
tree() ->
    [{timeout, 60, fun() ->
                           {File, #{result := Rec, processes := N}} = record({?P, tree, [4]}, "tree", #{strategy => St}),
                           ?assertEqual(31, N),
                           replays(File, Rec, 5, #{})
                   end} || St <- strategies(?LINE)].

%%% Compile-time weaving -----------------------------------------------------------------

parse_transform_test_() ->
    {timeout, 60, fun() ->
                          M = riarc_replay_pt_prog,
                          ?assert(lists:keymember(riarc_replay_woven, 1, M:module_info(attributes))),
                          File = file("pt"),
                          {ok, #{result := Rec}} = riarc_replay:record({M, pingpong, [50]}, File,
                                                                     #{modules => [M], stall => 300}),
                          [?assertMatch({ok, #{result := Rec}}, riarc_replay:replay(File, #{})) || _ <- lists:seq(1, riarc_test_tier:count(1, 3))]
                  end}.

%%% OTP behaviours (in a peer node) ------------------------------------------------------

gen_server_test_() -> riarc_test_tier:slow(gen_server()).
gen_server() ->
    {timeout, 120, fun() ->
                           Opts = #{modules => [riarc_demo, riarc_demo_tickets, riarc_demo_tickets_sup],
                                    otp => true, stall => 500},
                           File = file("tickets"),
                           {ok, #{result := Rec}} = riarc_replay:record({riarc_demo, tickets, [4, 5]}, File, Opts),
                           ?assertEqual(20, length(lists:append(Rec))),
                           [?assertMatch({ok, #{result := Rec}}, riarc_replay:replay(File, Opts)) || _ <- lists:seq(1, riarc_test_tier:count(1, 3))],
                           %% This VM's gen_server is untouched.
                           ?assertNot(lists:keymember(riarc_replay_woven, 1, gen_server:module_info(attributes)))
                   end}.

%%% Divergence -----------------------------------------------------------------------------

divergence_test_() ->
    {timeout, 120,
     fun() ->
             File = file("variant"),
             {ok, _} = riarc_replay:record({?P, variant, [3]}, File, ?OPTS),
             try
                 persistent_term:put(riarc_replay_variant, extra),
                 ?assertMatch({error, {diverged, [], end_of_recording, {'receive', _}}},
                              riarc_replay:replay(File, ?OPTS)),
                 persistent_term:put(riarc_replay_variant, spawn),
                 ?assertMatch({error, {diverged, [], no_such_process, {spawn, [4]}}},
                              riarc_replay:replay(File, ?OPTS))
             after
                 persistent_term:erase(riarc_replay_variant)
             end,
             %% Another program on the same recording.
             File2 = file("values2"),
             {ok, _} = riarc_replay:record({?P, values, []}, File2, ?OPTS),
             {ok, Bin} = file:read_file(File2),
             {ok, _} = riarc_replay:record({?P, race, [2, 2]}, File, ?OPTS),
             {ok, Race} = file:read_file(File),
             ok = file:write_file(File, swap_mfa(Bin, Race)),
             {error, {diverged, _, _, _} = D} = riarc_replay:replay(File, ?OPTS),
             ?assert(is_list(riarc_replay:format_error(D)))
     end}.

%% The race recording's streams under the values recording's header.
swap_mfa(ValuesBin, RaceBin) ->
    {ok, H, _} = parse(ValuesBin),
    {ok, _, Ss} = parse(RaceBin),
    F = file("swap"),
    {ok, _} = riarc_replay_file:write(F, H, Ss),
    {ok, B} = file:read_file(F),
    B.

parse(Bin) ->
    F = file("parse"),
    ok = file:write_file(F, Bin),
    riarc_replay_file:read(F).

%%% Damaged recordings -----------------------------------------------------------------------

corrupt_test_() ->
    {timeout, 120, fun corrupt/0}.

corrupt() ->
    Seed = {exsss, erlang:phash2(make_ref()), 7, 11},
    rand:seed(element(1, Seed), {element(2, Seed), element(3, Seed), element(4, Seed)}),
    {File, _} = record({?P, values, []}, "good", #{}),
    {ok, Good} = file:read_file(File),
    Bad = file("bad"),
    Check = fun(Bin, What) ->
                    ok = file:write_file(Bad, Bin),
                    case riarc_replay:replay(Bad, ?OPTS) of
                        {error, {riarc_replay, {corrupt, Bad, Off, _Why}}} when is_integer(Off) -> ok;
                        Other -> erlang:error({not_corrupt, What, {seed, Seed}, Other})
                    end
            end,
    %% Every truncation.
    [Check(binary:part(Good, 0, N), {truncated, N}) || N <- lists:seq(0, byte_size(Good) - 1)],
    %% Random byte flips, random garbage, an appended byte.
    [begin
         At = rand:uniform(byte_size(Good)) - 1,
         <<Pre:At/binary, B:8, Post/binary>> = Good,
         Check(<<Pre/binary, (B bxor (1 + rand:uniform(254))):8, Post/binary>>, {flip, At})
     end || _ <- lists:seq(1, 200)],
    [Check(crypto_free_bytes(rand:uniform(200)), garbage) || _ <- lists:seq(1, 50)],
    Check(<<Good/binary, 0>>, appended),
    ?assertMatch({error, {riarc_replay, {file, _, enoent}}}, riarc_replay:replay(file("none"), #{})),
    ?assert(is_list(riarc_replay:format_error({corrupt, "f", 3, truncated}))),
    %% A recording of another format version says so, not "corrupt".
    <<"RIARCRR", _:8, Rest/binary>> = Good,
    ok = file:write_file(Bad, <<"RIARCRR", 1:8, Rest/binary>>),
    {error, {riarc_replay, {corrupt, Bad, 7, {unknown_version, 1}}} = E} = riarc_replay:replay(Bad, ?OPTS),
    ?assertMatch({match, _}, re:run(riarc_replay:format_error(element(2, E)), "format version 1.*record the run again")).

%% The inline receive's copies of patterns and guards (riarc_replay_transform) take what
%% the plain receive takes: a recording and its replay give the plain run's result, with
%% each strategy.
shapes_test_() ->
    {timeout, 120, fun() ->
                           Plain = ?P:shapes(),
                           ?assertEqual([7, {same, 3}, {less, 1, 2}, a, <<"abc">>, 3, [1, 2], 5, timed_out, 41,
                                         {k, 6}, #{key => 6, v => b}], Plain),
                           [begin
                                {File, #{result := R}} = record({?P, shapes, []}, "shapes_" ++ atom_to_list(St),
                                                                #{strategy => St}),
                                ?assertEqual({St, Plain}, {St, R}),
                                replays(File, Plain, 1, #{})
                            end || St <- [receiver, sender]]
                   end}.

%% Format version 4 writes a run of RECV (or SEND) events as the first and REPEAT(N);
%% version 3, without REPEAT, is still read and replayed, and a REPEAT anywhere but
%% after a RECV or SEND, or in a version 3 file, is corrupt.
repeat_format_test_() ->
    {timeout, 120, fun repeat_format/0}.

repeat_format() ->
    Opts = #{modules => [riarc_replay_savina]},
    [begin
         {File, #{result := 200, events := Ev}} =
             record({riarc_replay_savina, pingpong, [200]}, "repeat_" ++ atom_to_list(St), Opts#{strategy => St}),
         %% 400 messages taken (receiver side) or sent (sender side) in far fewer events.
         ?assert(Ev < 100),
         {ok, H, Ss} = riarc_replay_file:read(File),
         ?assert(lists:any(fun({_, _, Evs, _}) -> has_repeat(Evs) end, Ss)),
         replays(File, 200, 1, #{}),
         %% The same recording without REPEAT, as version 3 wrote it, replays the same.
         V3 = file("v3_" ++ atom_to_list(St)),
         {ok, _} = riarc_replay_file:write(V3, H, [{I, L, expand(Evs), Sd} || {I, L, Evs, Sd} <- Ss]),
         ok = set_version(V3, 3),
         {ok, _, Ss3} = riarc_replay_file:read(V3),
         ?assertNot(lists:any(fun({_, _, Evs, _}) -> has_repeat(Evs) end, Ss3)),
         ?assertMatch({ok, #{result := 200}}, riarc_replay:replay(V3, ?OPTS)),
         %% A version 3 file with a REPEAT in it is corrupt.
         ok = set_version(File, 3),
         ?assertMatch({error, {riarc_replay_file, {corrupt, _, _, {unknown_event_type, 7}}}},
                      riarc_replay_file:read(File))
     end || St <- [receiver, sender]],
    Bad = file("repeat_bad"),
    Hd = #{mfa => {m, f, []}, modules => [m], strategy => receiver},
    [begin
         {ok, _} = riarc_replay_file:write(Bad, Hd, [{0, [], Evs, []}]),
         ?assertMatch({error, {riarc_replay_file, {corrupt, _, _, Why}}}, riarc_replay_file:read(Bad))
     end || {Evs, Why} <- [{<<7, 1:40, 1:24>>, {repeat_after, none}},
                           {<<2, 0:64, 7, 1:40, 1:24>>, {repeat_after, 2}},
                           {<<1, 0:64, 7, 1:40, 1:24, 7, 1:40, 1:24>>, {repeat_after, 7}},
                           {<<1, 0:64, 7, 0:40, 1:24>>, {repeat_count, 0}}]],
    {ok, _} = riarc_replay_file:write(Bad, Hd, [{0, [], <<1, 5:64, 7, 2:40, 3:24, 4, 1:64, 7, 1:40, 0:24>>, []}]),
    ?assertMatch({ok, _, [_]}, riarc_replay_file:read(Bad)),
    ok = set_version(Bad, 2),
    {error, {riarc_replay_file, {corrupt, _, 7, {unknown_version, 2}} = E}} = riarc_replay_file:read(Bad),
    ?assertMatch({match, _}, re:run(riarc_replay_file:format_error(E), "format version 2.*versions 3 to 4.*record the run again")).

has_repeat(<<7, _:64, _/binary>>) -> true;
has_repeat(<<_:72, Rest/binary>>) -> has_repeat(Rest);
has_repeat(<<>>) -> false.

%% REPEAT(N, Step) after (T, D) written out: (T, D + Step) ... (T, D + N * Step).
expand(Evs) ->
    expand(Evs, none, []).

expand(<<7, N:40, Step:24, Rest/binary>>, {T, D}, Acc) ->
    expand(Rest, {T, D + N * Step}, lists:reverse([<<T, (D + K * Step):64>> || K <- lists:seq(1, N)], Acc));
expand(<<T, D:64, Rest/binary>>, _, Acc) ->
    expand(Rest, {T, D}, [<<T, D:64>> | Acc]);
expand(<<>>, _, Acc) ->
    iolist_to_binary(lists:reverse(Acc)).

%% The file as that format version would have it: the version byte and the CRC.
set_version(File, V) ->
    {ok, <<"RIARCRR", _:8, Rest/binary>>} = file:read_file(File),
    Body = binary:part(<<"RIARCRR", V:8, Rest/binary>>, 0, 8 + byte_size(Rest) - 4),
    file:write_file(File, <<Body/binary, (erlang:crc32(Body)):32>>).

crypto_free_bytes(N) ->
    << <<(rand:uniform(256) - 1):8>> || _ <- lists:seq(1, N) >>.

%%% Errors ----------------------------------------------------------------------------------

%% Looking a module up on a long code path can take seconds on a loaded machine.
errors_test_() ->
    {timeout, 60, fun errors/0}.

errors() ->
    ?assertMatch({error, {riarc_replay, {bad_option, _}}}, riarc_replay:record({?P, race, [1, 1]}, file("x"), #{bogus => 1})),
    ?assertMatch({error, {riarc_weave, {not_loaded, _}}}, riarc_replay:instrument([no_such_module_here])),
    [?assert(is_list(M:format_error(R))) || {M, R} <- [{riarc_replay, {timeout, replay, [[]]}},
                                                        {riarc_replay, {deadlock, [[]]}},
                                                        {riarc_replay, {runtime_not_loaded, [{riarc_replay_rt, nofile}]}},
                                                        {riarc_replay_file, {file, "f", enoent}},
                                                        {riarc_replay_transform, {no_module_attribute, []}},
                                                        {riarc_replay_rt, {diverged, [1], a, b}}]].

%% The runtime outside a run is the plain operation.
outside_a_run_test() ->
    ?assertNot(riarc_replay_rt:active()),
    self() ! {'$riarc_rr', 3 bsl 40, wrapped},
    F = fun(rec, _, T) -> receive {'$riarc_rr', D, M} -> {1, D, M} after T -> '$riarc_rr_timeout' end end,
    ?assertEqual({1, wrapped}, riarc_replay_rt:recv(F, 0)),
    ?assertEqual('$riarc_rr_timeout', riarc_replay_rt:recv(F, 0)).

%%% Under riarc's monitoring (this VM: nothing of OTP woven) ------------------------------

%% The monitors see the plain system: the Spec is asked with the senders' own MFA, the
%% collector receives {msg, I, J} (not wrapped), the runtime's messages and its `timeout'
%% events are not shown. Sender 2 is rejected when it sends its third message; the rest
%% accept. The recording and each replay give the same verdicts, named as in the plain
%% system.
monitor_test_() ->
    [{timeout, 120, {"monitored, " ++ atom_to_list(St), fun() -> monitored(St) end}}
     || St <- strategies(?LINE)].

monitored(Strategy) ->
    Opts = #{monitor => fun monitor_spec/1, strategy => Strategy},
    {File, #{result := Rec, monitoring := M0}} = record({?P, race, [4, 5]}, "mon_" ++ atom_to_list(Strategy), Opts),
    Expected = [{{?P, race, [4, 5]}, accept}] ++ [{{?P, sender, [x, I, 5]}, case I of 2 -> reject; _ -> accept end}
                                                   || I <- lists:seq(1, 4)],
    ?assertEqual(Expected, verdicts(M0)),
    ?assert(riarc_replay_monitor:rejected(M0)),
    [begin
         {ok, #{result := R, monitoring := M}} = riarc_replay:replay(File, maps:merge(?OPTS, maps:remove(strategy, Opts))),
         ?assertEqual({K, Rec, Expected}, {K, R, verdicts(M)})
     end || K <- [1, 2, 3]],
    %% Unmonitored, the same file replays with no monitoring in Info.
    {ok, Info} = riarc_replay:replay(File, ?OPTS),
    ?assertNot(is_map_key(monitoring, Info)).

%% A timeout of code that is not woven (OTP's, without `otp => true': gen_server's own
%% loop, timer:sleep/1) is the same timeout event in a plain run, a recording and its
%% replay, with each strategy: a monitor rejecting on timeouts rejects the server and the
%% sleeping root in all five. The runtime's own waits show none (the monitors of
%% monitor_test_ reject on any). Before the runtime's waits stopped timing out, the
%% monitors of a recording or a replay were shown no VM timeout, and accepted both.
unwoven_timeouts_test_() ->
    {timeout, 120, fun unwoven_timeouts/0}.

unwoven_timeouts() ->
    MFA = {?P, idle, []},
    Expected = [{MFA, reject}, {{?P, init, [root]}, reject}],
    {ok, Plain} = riarc:run(MFA, fun timeout_spec/1, #{timeout => 30000}),
    ?assertEqual({run, Expected}, {run, timeout_verdicts(Plain)}),
    [begin
         Opts = #{monitor => fun timeout_spec/1, strategy => St},
         {File, #{result := {idle, _}, monitoring := Rec}} = record(MFA, "idle_" ++ atom_to_list(St), Opts),
         ?assertEqual({record, St, Expected}, {record, St, timeout_verdicts(Rec)}),
         {ok, #{result := {idle, _}, monitoring := Rep}} = riarc_replay:replay(File, maps:merge(?OPTS, #{monitor => fun timeout_spec/1})),
         ?assertEqual({replay, St, Expected}, {replay, St, timeout_verdicts(Rep)})
     end || St <- [receiver, sender]].

timeout_spec({?P, F, _}) when F =:= idle; F =:= init ->
    {ok, fun M({timeout, _}) -> reject;
             M({exit, _, _}) -> accept;
             M(_) -> M
         end};
timeout_spec(_) ->
    undefined.

timeout_verdicts(#{verdicts := Vs}) ->
    lists:sort([{case MFA of {?P, init, _} -> {?P, init, [root]}; _ -> MFA end, V}
                || #{mfa := MFA, verdict := V} <- Vs]).

%% A send to a registered name is shown to the name, as the VM's tracing shows the
%% plain program's, in a recording and its replay with each strategy (the woven send
%% went to the pid the name gave, and a monitor naming the receiver saw another send).
named_send_test_() ->
    {timeout, 120, fun named_send/0}.

named_send() ->
    MFA = {?P, named, []},
    Self = self(),
    Spec = fun(M = {?P, named, []}) -> {ok, fun F(E = {send, _, _, _}) -> Self ! {sent, M, E}, F; F(_) -> F end};
              (_) -> undefined
           end,
    Sent = fun() -> receive {sent, MFA, {send, _, To, Msg}} -> {To, Msg} after 10000 -> none end end,
    {ok, _} = riarc:run(MFA, Spec, #{timeout => 30000}),
    ?assertEqual({riarc_replay_named, hello}, Sent()),
    [begin
         {File, #{result := ok}} = record(MFA, "named_" ++ atom_to_list(St), #{monitor => Spec, strategy => St}),
         ?assertEqual({record, St, {riarc_replay_named, hello}}, {record, St, Sent()}),
         {ok, #{result := ok}} = riarc_replay:replay(File, maps:merge(?OPTS, #{monitor => Spec})),
         ?assertEqual({replay, St, {riarc_replay_named, hello}}, {replay, St, Sent()})
     end || St <- [receiver, sender]].

%% In a fresh VM (a peer), the run's processes find riarc's runtime loaded: a woven
%% process never asks code_server for it, a send its monitor would take for the
%% system's. The recording and its replay give every process the same accept.
fresh_vm_test_() ->
    {timeout, 120, fun() ->
                           Opts = #{monitor => fun no_code_server/1, vm => peer},
                           {File, #{monitoring := M0}} = record({?P, race, [2, 2]}, "fresh", Opts),
                           {ok, #{monitoring := M1}} = riarc_replay:replay(File, maps:merge(?OPTS, Opts)),
                           [?assertEqual([accept, accept, accept], [V || {_, V} <- verdicts(M)]) || M <- [M0, M1]]
                   end}.

no_code_server(_MFA) ->
    {ok, fun M({send, _, code_server, _}) -> reject;
             M({exit, _, normal}) -> accept;
             M(_) -> M
         end}.

verdicts(#{verdicts := Vs}) ->
    lists:sort([{case MFA of {?P, sender, [_, I, N]} -> {?P, sender, [x, I, N]}; _ -> MFA end, V}
                || #{mfa := MFA, verdict := V} <- Vs]).

monitor_spec({?P, race, [N, M]}) ->
    {ok, collector(N * M)};
monitor_spec({?P, sender, [_, I, _]}) ->
    {ok, sender(I)};
monitor_spec(_) ->
    undefined.

%% Accepts on a normal exit after exactly K messages {msg, _, _}; anything wrapped, a
%% runtime message or a timeout event is a reject.
collector(K) ->
    fun({recv, _, {msg, _, _}}) -> collector(K - 1);
       ({recv, _, _}) -> reject;
       ({timeout, _}) -> reject;
       ({exit, _, normal}) when K =:= 0 -> accept;
       ({exit, _, _}) -> reject;
       (_) -> collector(K)
    end.

sender(I) ->
    fun({send, _, _, {msg, 2, 3}}) when I =:= 2 -> reject;
       ({send, _, _, {msg, J, _}}) when J =:= I -> sender(I);
       ({send, _, _, _}) -> reject;
       ({exit, _, normal}) -> accept;
       ({exit, _, _}) -> reject;
       (_) -> sender(I)
    end.

%%% Timers --------------------------------------------------------------------------------

%% Timer messages (send_after, start_timer, timer:send_after, an absolute start_timer)
%% race with a sender's messages and with each other, and cancels come in time or not:
%% plain runs differ, replays reproduce the recording, with each strategy.
timers_test_() ->
    each_strategy("timers", fun timers/1).

timers(Strategy) ->
    {File, #{result := Rec}} = record({?P, timers, [30]}, "timers_" ++ atom_to_list(Strategy),
                                      #{strategy => Strategy}),
    {Order, _Cancels, _Read} = Rec,
    ?assertEqual(60 - length([K || {K, true} <- element(2, Rec)]), length(Order)),
    replays(File, Rec, 10, #{}).

%% Timers of one process to itself whose delays a replay does not reproduce: their
%% messages are still taken in the recorded order, with each strategy.
timer_race_test_() -> riarc_test_tier:slow(timer_race()).
timer_race() ->
    each_strategy("timer race", fun(St) -> replayed(timer_race, [20], 40, St) end).

timer_race_plain_runs_differ_test_() ->
    plain_runs_differ(timer_race, [20]).

%% Interval timers and timed applies (timer:send_interval, apply_after, apply_interval)
%% race with a sender: plain runs differ, replays reproduce the recording, each strategy.
ticks_test_() -> riarc_test_tier:slow(ticks()).
ticks() ->
    each_strategy("ticks", fun(St) ->
                                   Rec = replayed(ticks, [20], 42, St),
                                   ?assert(lists:member(tick, Rec)),
                                   ?assertEqual([{ended, true}, {ended, true}], lists:nthtail(40, Rec))
                           end).

ticks_plain_runs_differ_test_() ->
    plain_runs_differ(ticks, [20]).

%% A test of F(Strategy) for each strategy.
each_strategy(Name, F) ->
    [{timeout, 120, {Name ++ ", " ++ atom_to_list(St), fun() -> F(St) end}} || St <- strategies(Name)].

%% Both recording strategies in the full tier, one per test in the fast tier.
strategies(Key) -> riarc_test_tier:pick(Key, [receiver, sender]).

%% Records ?P:Fun(Args) with strategy St, checks the length of its result, and replays
%% it N times (10 unless given); returns the recorded result.
replayed(Fun, Args, Len, St) ->
    replayed(Fun, Args, Len, St, 10).

replayed(Fun, Args, Len, St, N) ->
    {File, #{result := Rec}} = record({?P, Fun, Args}, atom_to_list(Fun) ++ "_" ++ atom_to_list(St),
                                      #{strategy => St}),
    ?assertEqual(Len, length(Rec)),
    replays(File, Rec, N, #{}),
    Rec.

%% Ten plain runs of ?P:Fun(Args), each in a process of its own, do not all give the
%% same result.
plain_runs_differ(Fun, Args) ->
    {timeout, 60, fun() ->
                          Runs = [in_process(fun() -> apply(?P, Fun, Args) end) || _ <- lists:seq(1, 10)],
                          ?assert(length(lists:usort(Runs)) > 1)
                  end}.

timers_plain_runs_differ_test_() ->
    plain_runs_differ(timers, [30]).

%%% Plain messages of processes of the run -----------------------------------------------

%% 'EXIT' and 'DOWN' messages of racing processes are taken in the recorded order (their
%% sources are named in the recording), with each strategy; plain runs differ.
exits_test_() ->
    each_strategy("exits", fun exits/1).

exits(Strategy) ->
    Rec = replayed(exits, [6], 12, Strategy, 20),
    ?assertEqual(lists:sort([{T, I} || T <- [exit, down], I <- lists:seq(1, 6)]), lists:sort(Rec)).

exits_plain_runs_differ_test_() ->
    plain_runs_differ(exits, [6]).

%% The recording takes a plain message from outside the run before a worker's 'EXIT';
%% the replay's timing is set to deliver them the other way round (a plain run with it
%% shows that order): the first receive must not take the 'EXIT', which the recording
%% names for the second one, so it holds it until then.
held_test_() -> riarc_test_tier:slow(held()).
held() ->
    each_strategy("held", fun held/1).

held(Strategy) ->
    Key = {?P, outside_first},
    try
        persistent_term:put(Key, true),
        {File, #{result := Rec}} = record({?P, held, []}, "held_" ++ atom_to_list(Strategy),
                                          #{strategy => Strategy}),
        ?assertEqual([outside, worker_exit], Rec),
        persistent_term:put(Key, false),
        ?assertEqual([worker_exit, outside], in_process(fun ?P:held/0)),
        replays(File, Rec, 5, #{})
    after
        persistent_term:erase(Key)
    end.

%% Runs F in a process of its own (the programs trap exits) and returns its result.
in_process(F) ->
    {Pid, Ref} = spawn_monitor(fun() -> exit({result, F()}) end),
    receive
        {'DOWN', Ref, process, Pid, {result, R}} -> R;
        {'DOWN', Ref, process, Pid, Other} -> error({program_failed, Other})
    end.

%%% mnesia ---------------------------------------------------------------------------------

%% Transactions of 4 processes on one record: the commit order differs between plain runs
%% and is replayed, with each strategy. mnesia runs in this VM with a RAM schema for the
%% test and is stopped after it.
mnesia_test_() -> riarc_test_tier:slow(mnesia()).
mnesia() ->
    {setup,
     fun() ->
             ok = mnesia:start(),
             {atomic, ok} = mnesia:create_table(riarc_rr_log, [{attributes, [key, value]}]),
             ok
     end,
     fun(_) -> stopped = mnesia:stop() end,
     [{timeout, 120, fun mnesia_plain_runs_differ/0}, {timeout, 120, fun mnesia_dirty_plain_runs_differ/0}]
     ++ [{timeout, 120, {"mnesia, " ++ atom_to_list(St), fun() -> mnesia_race(St) end}} || St <- strategies(?LINE)]
     ++ [{timeout, 120, {"mnesia dirty, " ++ atom_to_list(St), fun() -> mnesia_dirty_race(St) end}}
         || St <- strategies(?LINE)]}.

mnesia_plain_runs_differ() ->
    Runs = [?P:mnesia_race(4, 10) || _ <- lists:seq(1, 10)],
    [?assertEqual(40, length(R)) || R <- Runs],
    ?assert(length(lists:usort(Runs)) > 1).

%% Dirty operations race like unrecorded ETS operations: which updates are lost differs
%% between plain runs, and is replayed.
mnesia_dirty_plain_runs_differ() ->
    Runs = [?P:mnesia_dirty_race(4, 10) || _ <- lists:seq(1, 10)],
    ?assert(length(lists:usort(Runs)) > 1).

mnesia_dirty_race(Strategy) ->
    {File, #{result := Rec}} = record({?P, mnesia_dirty_race, [4, 10]}, "mnesia_dirty_" ++ atom_to_list(Strategy),
                                      #{strategy => Strategy}),
    replays(File, Rec, 10, #{}).

mnesia_race(Strategy) ->
    {File, #{result := Rec}} = record({?P, mnesia_race, [4, 10]}, "mnesia_" ++ atom_to_list(Strategy),
                                      #{strategy => Strategy}),
    ?assertEqual(40, length(Rec)),
    replays(File, Rec, 10, #{}).

%%% A module without debug_info ------------------------------------------------------------

%% rrnodi_root (debug_info) calls rrnodi_helper (none) in a process it spawns and sends
%% to. The recording weaves the root's module, leaves the helper unwoven and says so; the
%% file's header names what was woven, and the replay weaves that and gives the result.
%% Before, the recording stopped with {no_abstract_code, rrnodi_helper, ...}.
no_debug_info_test_() ->
    {timeout, 60, fun no_debug_info/0}.

no_debug_info() ->
    Dir = nodi_modules(),
    true = code:add_patha(Dir),
    try
        ?assertEqual([rrnodi_root, rrnodi_helper], riarc_replay:default_modules(rrnodi_root)),
        File = filename:join(Dir, "nodi.rr"),
        Opts = #{stall => 300, timeout => 30000},
        {ok, Rec} = riarc_replay:record({rrnodi_root, main, [5]}, File, Opts),
        ?assertMatch(#{result := [2, 4, 6, 8, 10], unwoven := [rrnodi_helper], modules := [rrnodi_root]}, Rec),
        {ok, #{header := Header}} = read_header(File),
        ?assertEqual({[rrnodi_root], [rrnodi_helper]}, {maps:get(modules, Header), maps:get(unwoven, Header)}),
        {ok, Rep} = riarc_replay:replay(File, Opts),
        ?assertMatch(#{result := [2, 4, 6, 8, 10], unwoven := [rrnodi_helper], modules := [rrnodi_root]}, Rep),
        %% Nothing of the run is left woven in this VM.
        ?assertNot(lists:keymember(riarc_replay_woven, 1, rrnodi_root:module_info(attributes))),
        %% instrument/1 weaves what it is told to, or says why not.
        ?assertMatch({error, {riarc_weave, {no_abstract_code, rrnodi_helper, _}}},
                     riarc_replay:instrument([rrnodi_helper]))
    after
        code:del_path(Dir)
    end.

read_header(File) ->
    case riarc_replay_file:read(File) of
        {ok, H, _} -> {ok, #{header => H}};
        E -> E
    end.

%% @doc The two modules, compiled here, and the directory that holds them: the root with
%% debug_info, the helper without (erlc's default, which keeps a debug_info chunk with no
%% abstract code in it). rrnodi_root:main(N) returns [2, 4, ..., 2 * N].
-spec nodi_modules() -> file:filename().
nodi_modules() ->
    Dir = unwoven_dir("nodi"),
    Root = "-module(rrnodi_root).\n-export([main/1]).\n"
           "main(N) -> Self = self(),\n"
           "    P = spawn(fun() -> receive {go, L} -> Self ! {done, [rrnodi_helper:twice(X) || X <- L]} end end),\n"
           "    P ! {go, lists:seq(1, N)},\n"
           "    receive {done, R} -> R end.\n",
    Helper = "-module(rrnodi_helper).\n-export([twice/1]).\ntwice(X) -> 2 * X.\n",
    [begin
         Src = filename:join(Dir, atom_to_list(M) ++ ".erl"),
         ok = file:write_file(Src, Text),
         {ok, M} = compile:file(Src, [{outdir, Dir} | COpts]),
         code:purge(M),
         code:delete(M)
     end || {M, Text, COpts} <- [{rrnodi_root, Root, [debug_info]}, {rrnodi_helper, Helper, []}]],
    Dir.

%% A header's `unwoven' must be a proper list of atoms, as its `modules' (hostile input).
bad_unwoven_header_test() ->
    File = filename:join(unwoven_dir("hdr"), "h.rr"),
    [begin
         {ok, _} = riarc_replay_file:write(File, #{mfa => {m, f, []}, modules => [m], strategy => receiver,
                                                   unwoven => U}, [{0, [], <<3, 0:64>>, []}]),
         ?assertMatch({error, {riarc_replay_file, {corrupt, _, _, bad_header}}}, riarc_replay_file:read(File))
     end || U <- [[a | b], ["m"], x]],
    {ok, _} = riarc_replay_file:write(File, #{mfa => {m, f, []}, modules => [m], strategy => receiver,
                                              unwoven => [n]}, [{0, [], <<3, 0:64>>, []}]),
    ?assertMatch({ok, #{unwoven := [n]}, [_]}, riarc_replay_file:read(File)).

unwoven_dir(Name) ->
    Dir = filename:join(["/tmp", "riarc_replay_tests_" ++ os:getpid(), "unwoven_" ++ Name]),
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    Dir.
