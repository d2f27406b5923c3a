%% @doc The record &amp; replay benchmark (not a test): the Savina-style programs of
%% {@link riarc_replay_savina}, each run unrecorded (plain code), recorded with each
%% strategy and replayed, median of `Reps' runs; writes a Markdown table with run times,
%% overheads, events, bytes per event and the geometric means.
%% ```
%% $ erl -noshell -pa _build/default/lib/*/ebin -eval 'riarc_replay_bench:main(["bench-results/replay.md"]), halt().'
%% 1> [Name || {Name, _, _} <- riarc_replay_bench:programs()].   % the Savina-style set
%% ["ping-pong","counting","fork-join","thread ring","chameneos","big","bank","ETS dictionary"]
%% '''
%% A whole run of the set, five times each way, as `make bench-replay' does (minutes):
%% ```erl
%% riarc_replay_bench:run("bench-results/replay.md", 5).
%% '''
%% Times are the run's wall time from the root's spawn to the end of its last process,
%% as the controller measures it (weaving and writing the file are not included); the
%% unrecorded run is timed the same way around a plain spawn. Set-ups are interleaved
%% round by round (run/2).
-module(riarc_replay_bench).

-export([main/1, run/2, programs/0, samples/1]).

-define(PROGS, riarc_replay_savina).

%% @doc Entry point for `erl -eval': [OutFile] or [OutFile, Reps].
-spec main([string()]) -> ok.
main([Out]) -> run(Out, 5);
main([Out, Reps]) -> run(Out, list_to_integer(Reps)).

%% @doc The programs and their arguments.
-spec programs() -> [{string(), atom(), list()}].
programs() ->
    [{"ping-pong", pingpong, [100000]},
     {"counting", counting, [500000]},
     {"fork-join", forkjoin, [16, 10000]},
     {"thread ring", ring, [100, 100000]},
     {"chameneos", chameneos, [20, 50000]},
     {"big", big, [50, 2000]},
     {"bank", bank, [50, 50000]},
     {"ETS dictionary", ets_dict, [8, 25000]}].

%% @doc Runs every program and writes the table to Out. Set-ups are interleaved: each
%% of the Reps rounds of a program runs it unrecorded, then recorded and replayed with
%% each strategy (the replay of that round's recording), so that load that comes and
%% goes on the machine falls on every column alike.
-spec run(file:filename_all(), pos_integer()) -> ok.
run(Out, Reps) ->
    Dir = filename:join(filename:dirname(Out), "replay-bench-files"),
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    Rows = [row(Name, F, A, Reps, Dir) || {Name, F, A} <- programs()],
    ok = filelib:ensure_dir(Out),
    ok = file:write_file(Out, table(Rows, Reps)),
    io:format("~ts", [table(Rows, Reps)]).

row(Name, F, A, Reps, Dir) ->
    Rounds = [round(F, A, Dir) || _ <- lists:seq(1, Reps)],
    Per = [begin
               Mine = [R || {_, Rs} <- Rounds, R = {St1, _, _, _, _} <- Rs, St1 =:= St],
               %% Events and bytes of the last round's recording.
               {_, _, _, Ev, Bytes} = lists:last(Mine),
               Replays = [Rp || {_, _, Rp, _, _} <- Mine],
               {St, median([Rc || {_, Rc, _, _, _} <- Mine]),
                median([W || {ok, #{wall_us := W}} <- Replays]), Ev, Bytes,
                length([ok || {ok, _} <- Replays]) =:= Reps}
           end || St <- [receiver, sender]],
    {Name, median([P || {P, _} <- Rounds]), Per}.

%% One round: unrecorded (the module as compiled), then woven, recorded and replayed
%% with each strategy.
round(F, A, Dir) ->
    P = plain({?PROGS, F, A}),
    Opts = #{modules => [?PROGS], timeout => 300000},
    ok = riarc_replay:instrument([?PROGS]),
    try
        {P, [begin
                 File = filename:join(Dir, atom_to_list(F) ++ "_" ++ atom_to_list(St) ++ ".rr"),
                 {ok, #{wall_us := Rc, events := Ev, bytes := Bytes}} =
                     riarc_replay:record({?PROGS, F, A}, File, Opts#{strategy => St}),
                 {St, Rc, riarc_replay:replay(File, Opts), Ev, Bytes}
             end || St <- [receiver, sender]]}
    after
        ok = riarc_replay:restore([?PROGS])
    end.

plain({M, F, A}) ->
    Self = self(),
    {Pid, Ref} = spawn_monitor(fun() ->
                                       T0 = erlang:monotonic_time(microsecond),
                                       _ = apply(M, F, A),
                                       Self ! {plain_time, self(), erlang:monotonic_time(microsecond) - T0}
                               end),
    receive
        {plain_time, Pid, T} -> erlang:demonitor(Ref, [flush]), T;
        {'DOWN', Ref, process, Pid, Why} -> error({plain_run_failed, F, Why})
    end.

median(L) ->
    lists:nth((length(L) + 1) div 2, lists:sort(L)).

table(Rows, Reps) ->
    Head = ["| program | unrecorded ms | rec. receiver ms (overhead) | rec. sender ms (overhead) "
            "| replay receiver ms (factor) | replay sender ms (factor) | events rcv / snd "
            "| bytes/event rcv / snd | replays ok |\n",
            "|---|---:|---:|---:|---:|---:|---:|---:|:-:|\n"],
    Lines = [line(R) || R <- Rows],
    G = fun(Pick) -> geo([Pick(R) || R <- Rows]) end,
    RecR = G(fun({_, P, [{_, Rc, _, _, _, _}, _]}) -> Rc / P end),
    RecS = G(fun({_, P, [_, {_, Rc, _, _, _, _}]}) -> Rc / P end),
    RepR = G(fun({_, P, [{_, _, Rp, _, _, _}, _]}) -> Rp / P end),
    RepS = G(fun({_, P, [_, {_, _, Rp, _, _, _}]}) -> Rp / P end),
    Foot = io_lib:format("| **geometric mean** | | ~s | ~s | ~s | ~s | | | |\n\n"
                         "Median of ~b runs each; 2 cores, OTP ~s.\n",
                         [pct(RecR), pct(RecS), fac(RepR), fac(RepS), Reps, erlang:system_info(otp_release)]),
    iolist_to_binary([Head, Lines, Foot]).

line({Name, P, [{_, RcR, RpR, EvR, BR, OkR}, {_, RcS, RpS, EvS, BS, OkS}]}) ->
    io_lib:format("| ~s | ~.1f | ~.1f (~s) | ~.1f (~s) | ~.1f (~s) | ~.1f (~s) | ~b / ~b | ~.2f / ~.2f | ~s |\n",
                  [Name, P / 1000, RcR / 1000, pct(RcR / P), RcS / 1000, pct(RcS / P),
                   RpR / 1000, fac(RpR / P), RpS / 1000, fac(RpS / P), EvR, EvS,
                   per(BR, EvR), per(BS, EvS), yes(OkR andalso OkS)]).

per(_B, 0) -> 0.0;
per(B, E) -> B / E.

yes(true) -> "yes";
yes(false) -> "NO".

pct(F) ->
    S = (F - 1) * 100,
    io_lib:format("~s~.1f %", [case S >= 0 of true -> "+"; false -> "" end, S]).
fac(F) -> io_lib:format("~.2fx", [F]).

geo(L) -> math:exp(lists:sum([math:log(max(X, 1.0e-9)) || X <- L]) / length(L)).

%% @doc One round of raw samples for comparing two builds side by side (docs/replay.md,
%% "Before and after"): each program once unrecorded and once recorded with each
%% strategy, N times, printed as `Program PlainUs ReceiverUs SenderUs PlainCpuMs
%% ReceiverCpuMs SenderCpuMs' lines: the run's wall time, and the VM's CPU time
%% (statistics(runtime)) around it, which other load on the machine disturbs less (for a
%% recording it includes writing the file).
-spec samples(pos_integer()) -> ok.
samples(N) ->
    Opts = #{modules => [?PROGS], timeout => 300000},
    File = "/tmp/riarc_replay_samples.rr",
    _ = [begin
             {P, Pc} = cpu(fun() -> plain({?PROGS, F, A}) end),
             ok = riarc_replay:instrument([?PROGS]),
             {{ok, #{wall_us := Rr}}, Rc} =
                 cpu(fun() -> riarc_replay:record({?PROGS, F, A}, File, Opts#{strategy => receiver}) end),
             {{ok, #{wall_us := Rs}}, Sc} =
                 cpu(fun() -> riarc_replay:record({?PROGS, F, A}, File, Opts#{strategy => sender}) end),
             ok = riarc_replay:restore([?PROGS]),
             io:format("~s ~b ~b ~b ~b ~b ~b~n", [F, P, Rr, Rs, Pc, Rc, Sc])
         end || {_Name, F, A} <- programs(), _ <- lists:seq(1, N)],
    ok.

cpu(Fun) ->
    {T0, _} = statistics(runtime),
    V = Fun(),
    {T1, _} = statistics(runtime),
    {V, T1 - T0}.
