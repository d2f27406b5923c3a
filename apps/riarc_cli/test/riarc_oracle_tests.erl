%% @doc The differential oracle (issue 28, item 6): riarc's one promise is that an accept
%% means the property held on the whole trace, so the same behaviour must get the same
%% verdict in every mode. On random systems whose every process has a fixed local trace
%% (riarc_oracle_sys) and random sHML properties over their messages, each case is
%% checked
%% <ul>
%% <li>online, riarc:run/3 with each backend (route, evm) and analysis placement
%%     (isolated, inline), and with monitors in their tracers but a tracer for every
%%     partition, as in the paper (`paper': option adopt 0, no partition adopted);</li>
%% <li>attached (riarc:attach/3, `new_processes') before the system starts: every
%%     process from its first event, through the default trace settings for new
%%     processes and their own backend, detached once each has ended;</li>
%% <li>followed onto another node (option `follow'): the root is spawned on a peer node
%%     (one per case, with this node's code path) by a process of this node that Λ does
%%     not monitor, and riarc's session there, attached to every new process, monitors
%%     the system; the case's property is loaded there too (`{follow, remote}');</li>
%% <li>attached to the running root (riarc:attach/3 with its pid): the root is held
%%     (busy, no event) until riarc has attached, so its trace from the attach point is
%%     its whole trace but its init, which the `attached' event stands for;</li>
%% <li>recorded (riarc_offline:record/3) and checked offline (check/3), binary and
%%     text; and recorded as a user records with dbg (a trace port to a file, the root
%%     held until `dbg:p/2' traces it) and that file checked (`{offline, dbg}');</li>
%% <li>recorded for replay under the monitors, and replayed under them
%%     (riarc_replay, `monitor'), each strategy (receiver, sender); OTP is not woven
%%     (`otp => true' runs in a peer node), so the gen_servers' own loops and their
%%     timeouts are the VM's, as in the plain run;</li>
%% <li>by the comparison methods (`method'): centralised monitoring (riarc_central)
%%     and inline monitoring (riarc_inline, the system's module woven for the run and
%%     restored after it), whose monitors step as riarc's partitions do;</li>
%% <li>by the reference interpreter riarc_shml_ref on each process's ground truth (the
%%     trace the process logged itself).</li>
%% </ul>
%% Processes are matched across modes by their logical id (an argument of their initial
%% call), never by pid. A mode's answer for a process is its verdict and the position,
%% in that process's whole local trace, of the event it was given on. Modes see
%% different numbers of events by design (trace patterns leave out messages that cannot
%% change a monitor's state, a monitor drops the message kinds its formula never
%% names), so riarc's raw event counts are not comparable; the deciding event's place
%% in the whole trace is. A `none' has no deciding event: its position is `all'. A
%% monitor fed an event that is not its process's next one (a timeout as a received
%% atom, an exit with another reason) answers `{unaligned, Event}' for the position.
%% A process may end by turning off its own trace flags (`cut', riarc_oracle_sys): every
%% mode but inline monitoring reads the VM's trace and must then answer error, unless
%% the reference decided before the cut (expected/5); inline must answer as the
%% reference, its woven code reporting all. A process may also turn off some of its
%% flags and go on (`{cut, Kind}'): its own verdict is then an error unless decided
%% before, and that of a child it spawns after it that is not traced is an error; the
%% processes those modes cannot see at all are not listed by them, or listed as errors
%% (mid_cuts/2).
%%
%% The count of cases: riarc_test_tier's (15 in the fast tier, 150 in the full one), or
%% RIARC_ORACLE_CASES when set, in either tier: `make verdicts-soak' runs 1500. The full
%% tier runs the first 100 (or RIARC_ORACLE_CASES) again with both schedulers kept busy
%% (riarc_test_load), where races between the system, the tracers and the VM's trace
%% delivery show. A case takes
%% about a second (the four replay runs weave the system each time: most of it); a
%% failing case is shrunk for at most 40 steps. From a shell (`rebar3 as test shell'):
%% ```
%% 1> riarc_oracle_tests:run(20).            % 20 cases, the tier's seed; true if all agree
%% 2> riarc_oracle_tests:run(20, [{offline, binary}]).   % one mode against the reference
%% 3> Out = riarc_oracle_tests:check_case(Script, PropertySource).   % one case, as printed
%% 4> riarc_oracle_tests:print(Script, PropertySource, Out).
%% '''
-module(riarc_oracle_tests).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-export([run/1, run/2, check_case/2, check_case/3, print/3, modes/0, prop_oracle/0, prop_oracle/1,
         script/0, property/0]).
%% The Spec every mode is given: the case's compiled property, with each monitor
%% reporting the events it is fed.
-export([spec/1, trace_flags/0, trace_patterns/0, analysis/0]).

-define(KEY, {?MODULE, current}).
-define(PROP_MOD, riarc_oracle_prop).
-define(RUN_MS, 20000).
-define(PEER_KEY, {?MODULE, peer}).

%%% EUnit

oracle_test_() ->
    {timeout, 7200,
     fun() -> ?assert(riarc_test_tier:quickcheck(prop_oracle(), counts(), quickcheck_opts())) end}.

%% The same cases again, loaded (the full tier only).
oracle_loaded_test_() ->
    riarc_test_tier:slow(
      {timeout, 7200,
       fun() ->
               ?assert(riarc_test_load:loaded(
                         fun() -> riarc_test_tier:quickcheck(prop_oracle(), counts({1, 100}), quickcheck_opts()) end))
       end}).

counts() ->
    counts({15, 150}).

counts(Tiers) ->
    case os:getenv("RIARC_ORACLE_CASES") of
        false -> Tiers;
        N -> {list_to_integer(N), list_to_integer(N)}
    end.

%% Shrinking reruns every mode for each step: bounded so that a failing fast tier ends.
quickcheck_opts() ->
    [{to_file, user}, {max_shrinks, 40}].

%% @doc Runs the oracle on N cases from the tier's seed (RIARC_PROP_SEED to change it);
%% true when every mode agreed on every case.
-spec run(pos_integer()) -> boolean().
run(N) ->
    run(N, modes()).

%% @doc The same, comparing only Modes (a sublist of modes/0) with the reference: to
%% look past a known disagreement, or to check one mode's fix.
-spec run(pos_integer(), [tuple()]) -> boolean().
run(N, Modes) ->
    riarc_test_tier:quickcheck(prop_oracle(Modes), {N, N}, quickcheck_opts()).

%% @doc The modes, in the order they run and are printed.
-spec modes() -> [tuple()].
modes() ->
    [{online, route, isolated}, {online, route, inline}, {online, route, paper}, {online, evm, isolated},
     {online, evm, inline}, {offline, binary}, {offline, text}, {offline, dbg},
     {replay_record, receiver}, {replay, receiver}, {replay_record, sender},
     {replay, sender}, {method, centralised}, {method, inline},
     {attach, new_processes}, {attach, running}, {follow, remote}].

%% @doc The property: every mode agrees with the reference interpreter on every case.
-spec prop_oracle() -> proper:outer_test().
prop_oracle() ->
    prop_oracle(modes()).

%% @doc The same for Modes only.
-spec prop_oracle([tuple()]) -> proper:outer_test().
prop_oracle(Modes) ->
    ?FORALL({Script, Src}, {script(), property()},
            begin
                Outcome = check_case(Script, Src, Modes),
                ?WHENFAIL(print(Script, Src, Outcome), element(1, Outcome) =:= ok)
            end).

%%% One case

%% @doc Checks one (system, property) case in every mode: `{ok, Answers}' when all agree,
%% else `{disagree, Answers}' or `{nondeterministic, ...}' (the system's own traces
%% differed between runs: an oracle bug, not riarc's) or `{bad_property, Why}'.
-spec check_case(map(), unicode:chardata()) -> {ok | disagree, map()} | {atom(), term()}.
check_case(Script, Src) ->
    check_case(Script, Src, modes()).

%% @doc The same in Modes only.
-spec check_case(map(), unicode:chardata(), [tuple()]) -> {ok | disagree, map()} | {atom(), term()}.
check_case(Script, Src0, Modes) ->
    Src = unicode:characters_to_list(Src0),
    case riarc_shml:parse_string(Src, "oracle.prop") of
        {ok, Clauses} ->
            _ = code:purge(?PROP_MOD),
            case riarc_shml:load_string(Src, ?PROP_MOD, "oracle.prop") of
                {ok, Mod} -> check_case(Script, Clauses, Mod, Modes);
                Error -> {bad_property, Error}
            end;
        Error ->
            {bad_property, Error}
    end.

check_case(Script, Clauses, Mod, Modes) ->
    %% A process's first call of a module not loaded yet asks code_server for it: a
    %% message its own log cannot name. Only `timer' is called from the system's code.
    {module, timer} = code:ensure_loaded(timer),
    Col = spawn(fun() -> collector([], []) end),
    Dir = riarc_test_tmp:dir("riarc_oracle"),
    MFA = {riarc_oracle_sys, proc, [maps:get(id, Script), Script, none, Col]},
    N = count(Script),
    try
        ok = remote_property(Clauses, Modes),
        %% A replay runs with its recording (run_mode/6 of replay_record).
        Runs = lists:append([guarded(M, fun() -> run_mode(M, MFA, Mod, Col, N, Dir) end)
                             || M <- modes(), element(1, M) =/= replay,
                                wanted(M, Modes)]),
        judge(Clauses, [R || {M, _} = R <- Runs, lists:member(M, Modes)], cut_ids(Script))
    after
        stop_peer(),
        persistent_term:erase(?KEY),
        exit(Col, kill)
    end.

%% A run of the system: the mode's verdicts, the run's ground truth (each process's
%% logged trace) and what each monitor was fed. A replay mode comes with its recording.
run_mode({online, Backend, paper} = M, MFA, Mod, Col, N, _Dir) ->
    set(Mod, Col, M),
    [collect(M, Col, N, riarc:run(MFA, ?MODULE, #{backend => Backend, analysis => inline, adopt => 0,
                                                timeout => ?RUN_MS}))];
run_mode({online, Backend, Analysis} = M, MFA, Mod, Col, N, _Dir) ->
    set(Mod, Col, M),
    [collect(M, Col, N, riarc:run(MFA, ?MODULE, #{backend => Backend, analysis => Analysis,
                                                timeout => ?RUN_MS}))];
run_mode({offline, dbg} = M, MFA, Mod, Col, N, Dir) ->
    File = filename:join(Dir, "case.dbg"),
    set(Mod, Col, M),
    Got = case dbg_recorded(MFA, File, Col, N) of
              ok -> riarc_offline:check(File, ?MODULE, #{timeout => ?RUN_MS});
              Error -> Error
          end,
    [collect(M, Col, N, Got)];
run_mode({offline, Format} = M, MFA, Mod, Col, N, Dir) ->
    File = filename:join(Dir, "case." ++ atom_to_list(Format)),
    set(Mod, Col, M),
    Rec = riarc_offline:record(MFA, File, #{format => Format, timeout => ?RUN_MS}),
    Got = case Rec of
              {ok, _} -> riarc_offline:check(File, ?MODULE, #{timeout => ?RUN_MS});
              Error -> Error
          end,
    [collect(M, Col, N, Got)];
run_mode({replay_record, Strategy} = M, MFA, Mod, Col, N, Dir) ->
    File = filename:join(Dir, "case." ++ atom_to_list(Strategy) ++ ".rr"),
    set(Mod, Col, M),
    Rec = riarc_replay:record(MFA, File, #{strategy => Strategy, modules => [riarc_oracle_sys],
                                           monitor => ?MODULE, timeout => ?RUN_MS}),
    R1 = collect(M, Col, N, monitoring(Rec)),
    M2 = {replay, Strategy},
    set(Mod, Col, M2),
    R2 = case Rec of
             {ok, _} ->
                 collect(M2, Col, N, monitoring(riarc_replay:replay(File, #{monitor => ?MODULE,
                                                                           timeout => ?RUN_MS})));
             _ ->
                 collect(M2, Col, N, {error, no_recording})
         end,
    [R1, R2];
run_mode({attach, new_processes} = M, {SysMod, F, A}, Mod, Col, N, _Dir) ->
    set(Mod, Col, M),
    [collect(M, Col, N, attached(SysMod, F, A, Col, N))];
run_mode({attach, running} = M, {SysMod, F, A}, Mod, Col, N, _Dir) ->
    set(Mod, Col, M),
    [collect(M, Col, N, attached_running(SysMod, F, A, Col, N))];
run_mode({follow, remote} = M, {SysMod, proc, [Id, Script, none, Col]}, Mod, Col, N, _Dir) ->
    set(Mod, Col, M),
    Node = peer_node(),
    ok = erpc:call(Node, persistent_term, put, [?KEY, persistent_term:get(?KEY)]),
    Got = riarc:run({SysMod, away, [Node, Id, Script, Col, N]}, ?MODULE,
                    #{follow => [Node], timeout => ?RUN_MS}),
    [collect(M, Col, N, Got)];
run_mode({method, centralised} = M, MFA, Mod, Col, N, _Dir) ->
    set(Mod, Col, M),
    [collect(M, Col, N, riarc_central:run(MFA, ?MODULE, #{timeout => ?RUN_MS}))];
run_mode({method, inline} = M, MFA, Mod, Col, N, _Dir) ->
    set(Mod, Col, M),
    [collect(M, Col, N, inline(MFA))].

%% A mode's run that raised is that mode's error, as a run that returned one: the case is
%% judged and printed (shrinking reruns it) instead of ending the property.
guarded(M, Run) ->
    try Run()
    catch Class:Why:Stack ->
            Error = {error, {crashed, Class, Why, Stack}},
            [{M, Error} | [{{replay, S}, Error} || {replay_record, S} <- [M]]]
    end.

%% Mode `{follow, remote}': the node the system runs on, started with this node's code
%% path for each case and stopped after it: what riarc leaves there as a run ends (its
%% session's end, the unloading of its modules) then never meets the next case's run.
peer_node() ->
    case persistent_term:get(?PEER_KEY, undefined) of
        {Peer, Node} when is_pid(Peer) ->
            case is_process_alive(Peer) of
                true -> Node;
                false -> new_peer()
            end;
        undefined ->
            new_peer()
    end.

new_peer() ->
    Paths = [filename:absname(D) || D <- code:get_path(), string:find(D, "_build/") =/= nomatch],
    {Peer, Node} = riarc_test_peer:start(riarc_oracle, lists:append([["-pa", D] || D <- Paths])),
    persistent_term:put(?PEER_KEY, {Peer, Node}),
    Node.

stop_peer() ->
    case persistent_term:get(?PEER_KEY, undefined) of
        {Peer, _Node} ->
            persistent_term:erase(?PEER_KEY),
            catch peer:stop(Peer),
            ok;
        undefined ->
            ok
    end.

%% The case's property, loaded on that node too, as ?PROP_MOD: Λ there is this module's
%% spec/1, which the follower asks.
remote_property(Clauses, Modes) ->
    case lists:member({follow, remote}, Modes) of
        true ->
            {ok, Bin} = riarc_shml_compile:binary(Clauses, ?PROP_MOD, "oracle.prop"),
            Node = peer_node(),
            _ = erpc:call(Node, code, purge, [?PROP_MOD]),
            {module, ?PROP_MOD} = erpc:call(Node, code, load_binary, [?PROP_MOD, "oracle.prop", Bin]),
            %% As here (check_case/4): no call to code_server in a process's trace.
            _ = [{module, M} = erpc:call(Node, code, ensure_loaded, [M]) || M <- [riarc_oracle_sys, timer]],
            ok;
        false ->
            ok
    end.

%% riarc attached to every process started from now on (riarc:attach/3, new_processes),
%% then the system started: its N processes are monitored from their first event, as
%% under run/3. Once each has logged and ended, riarc detaches.
attached(SysMod, F, A, Col, N) ->
    case riarc:attach(new_processes, ?MODULE, #{}) of
        {ok, Session} ->
            %% As run/3 does for its root: no call to code_server in the process's trace.
            {module, SysMod} = code:ensure_loaded(SysMod),
            _ = spawn(SysMod, F, A),
            ok = riarc_oracle_sys:ended(Col, N),
            riarc:stop(Session);
        Error ->
            Error
    end.

%% riarc attached to the system's root while it runs (riarc:attach/3 with its pid). The
%% root is spawned held: it spins on an atomic, which shows no event, until riarc has
%% attached, then runs its script. riarc asks Λ with the root's initial call as it reads
%% a running process's (proc_lib's `$initial_call', the arguments unknown); the oracle's
%% Λ knows them (spec/1), and the root's entry is named by them here. Once each process
%% has logged and ended, riarc detaches.
attached_running(SysMod, F, A, Col, N) ->
    {module, SysMod} = code:ensure_loaded(SysMod),
    Gate = atomics:new(1, []),
    Root = spawn(fun() ->
                         _ = put('$initial_call', {SysMod, F, length(A)}),
                         held(Gate),
                         apply(SysMod, F, A)
                 end),
    persistent_term:put(?KEY, (persistent_term:get(?KEY))#{attached => {Root, {SysMod, F, A}}}),
    case riarc:attach(Root, ?MODULE, #{}) of
        {ok, Session} ->
            ok = atomics:put(Gate, 1, 1),
            ok = riarc_oracle_sys:ended(Col, N),
            case riarc:stop(Session) of
                {ok, R = #{verdicts := Vs}} ->
                    {ok, R#{verdicts := [case E of
                                             #{pid := Root} -> E#{mfa := {SysMod, F, A}};
                                             _ -> E
                                         end || E <- Vs]}};
                Error ->
                    Error
            end;
        Error ->
            exit(Root, kill),
            Error
    end.

%% The system traced by dbg into a file (dbg:trace_port/2), as a user records one: the
%% root held until dbg traces it (send, receive, procs, set_on_spawn), then let go; the
%% port flushed once each process has logged and ended. dbg holds no call patterns, and
%% traces the root from the middle of its life: its spawn and init are not in the file.
dbg_recorded({SysMod, F, A}, File, Col, N) ->
    {module, SysMod} = code:ensure_loaded(SysMod),
    _ = file:delete(File),
    Gate = atomics:new(1, []),
    Root = spawn(fun() -> held(Gate), apply(SysMod, F, A) end),
    {ok, _} = dbg:tracer(port, dbg:trace_port(file, File)),
    try
        {ok, [{matched, _, 1}]} = dbg:p(Root, [send, 'receive', procs, set_on_spawn]),
        ok = atomics:put(Gate, 1, 1),
        ok = riarc_oracle_sys:ended(Col, N),
        Delivered = erlang:trace_delivered(all),
        receive {trace_delivered, all, Delivered} -> ok end,
        ok = dbg:flush_trace_port()
    after
        dbg:stop()
    end.

held(Gate) ->
    case atomics:get(Gate, 1) of
        0 -> erlang:yield(), held(Gate);
        _ -> ok
    end.

%% The system woven for the run and restored after it, whatever the run did: the next
%% mode must run the module's own code. A restore that fails fails the case.
inline(MFA) ->
    Woven = [riarc_oracle_sys],
    case riarc_inline:instrument(Woven) of
        ok ->
            try riarc_inline:run(MFA, ?MODULE, #{timeout => ?RUN_MS})
            after ok = riarc_inline:restore(Woven)
            end;
        Error -> Error
    end.

wanted({replay_record, S} = M, Modes) ->
    lists:member(M, Modes) orelse lists:member({replay, S}, Modes);
wanted(M, Modes) ->
    lists:member(M, Modes).

monitoring({ok, #{monitoring := R}}) -> {ok, R};
monitoring({ok, Info}) -> {error, {no_monitoring, Info}};
monitoring(Error) -> Error.

set(Mod, Col, Tag) ->
    persistent_term:put(?KEY, #{mod => Mod, sink => Col, tag => Tag}).

%% The mode's run is over: its processes have logged (each logs before it exits) and its
%% monitors have been fed; take what the collector has for it.
collect(Mode, Col, N, {ok, #{verdicts := Vs}}) ->
    {Logs, Fed} = dump(Col, N),
    {Mode, {ok, Vs, Logs, [{Id, E} || {T, Id, E} <- Fed, T =:= Mode]}};
collect(Mode, Col, _N, Other) ->
    _ = dump(Col, 0),
    {Mode, {error, Other}}.

%% What the collector has, once it holds N process logs (each process logs before it
%% exits; a send to a local process is in its queue when the send returns, but an
%% exited process's log may still be behind the dump request in the collector's queue),
%% or after 5 s, when a process that never logged shows as a missing log.
dump(Col, N) ->
    Ref = make_ref(),
    Col ! {dump, self(), Ref, N},
    receive {Ref, Logs, Fed} -> {maps:from_list(Logs), Fed} end.

collector(Logs, Fed) ->
    receive
        {log, P, L} -> collector([{P, L} | Logs], Fed);
        {logged, From, Ref, N} -> logged(Logs, Fed, {From, Ref, N});
        {fed, Tag, Id, E} -> collector(Logs, [{Tag, Id, E} | Fed]);
        {dump, From, Ref, N} ->
            Timer = erlang:send_after(5000, self(), {dump_due, Ref}),
            collector(Logs, Fed, {From, Ref, N, Timer})
    end.

%% Who has logged, once N have (or, one missing, after a run's time), the logs kept for
%% the dump.
logged(Logs, Fed, {From, Ref, N}) when length(Logs) >= N ->
    From ! {Ref, [P || {P, _} <- Logs]},
    collector(Logs, Fed);
logged(Logs, Fed, Wait = {From, Ref, _N}) ->
    receive
        {log, P, L} -> logged([{P, L} | Logs], Fed, Wait);
        {fed, Tag, Id, E} -> logged(Logs, [{Tag, Id, E} | Fed], Wait)
    after ?RUN_MS ->
        From ! {Ref, [P || {P, _} <- Logs]},
        collector(Logs, Fed)
    end.

collector(Logs, Fed, {From, Ref, N, Timer}) when length(Logs) >= N ->
    _ = erlang:cancel_timer(Timer),
    receive {dump_due, Ref} -> ok after 0 -> ok end,
    From ! {Ref, lists:reverse(Logs), lists:reverse(Fed)},
    collector([], []);
collector(Logs, Fed, Dump = {From, Ref, _N, _Timer}) ->
    receive
        {log, P, L} -> collector([{P, L} | Logs], Fed, Dump);
        {fed, Tag, Id, E} -> collector(Logs, [{Tag, Id, E} | Fed], Dump);
        {dump_due, Ref} ->
            From ! {Ref, lists:reverse(Logs), lists:reverse(Fed)},
            collector([], [])
    end.

%% Processes in the system: each script's, and one gen_server per `gen' act.
count(#{acts := Acts}) ->
    1 + lists:sum([case A of
                       {async, C, _} -> count(C);
                       {linked, C, _} -> count(C);
                       {named, C, _} -> count(C);
                       {watched, C, _} -> count(C);
                       {sync, C, _, _} -> count(C);
                       {gen, _, _, _} -> 1;
                       _ -> 0
                   end || A <- Acts]).

%%% Judging

%% The logical ids of the processes whose last act is `cut'.
cut_ids(#{id := Id, acts := Acts}) ->
    [Id || lists:last([none | Acts]) =:= cut]
        ++ lists:append([cut_ids(C) || A <- Acts, C <- children(A)]).

children({Kind, C, _}) when Kind =:= async; Kind =:= linked; Kind =:= named; Kind =:= watched -> [C];
children({sync, C, _, _}) -> [C];
children(_) -> [].

%% What a mode should answer. Woven code reports whatever the process does (inline
%% monitoring): the reference's answer. The modes that read the VM's trace (record and
%% replay's monitors watch the plain system: riarc_replay_monitor) lose a
%% process at its `cut', which comes before its last two events (its log sent to the
%% collector, its exit: truths/1): a verdict the reference reached before them stands,
%% anything else is an error, whatever event its monitor was fed last.
%% A process that cut only some of its flags and went on (Mid: mid_cuts/2) keeps a
%% verdict reached on the events it logged before its cut. A child it spawned after a
%% `no_inherit' cut is found untraced by a look, which cannot tell when its flags went:
%% error, whatever its verdict. A process those modes never see is not expected of them.
expected({offline, dbg}, _Ref, _CutIds, #{ambiguous := true}, _Truth) ->
    ambiguous_timeout;
expected(M, Ref, CutIds, Mid, Truth) ->
    case M =/= {method, inline} of
        false -> Ref;
        true ->
            #{cutters := Cutters, untraced := Untraced, unseen := Unseen} = Mid,
            maps:map(fun(Id, {V, Pos}) ->
                             %% Untraced from its start: whatever it did later, its own cut
                             %% included.
                             Upto = case {lists:member(Id, Untraced), lists:member(Id, CutIds), Cutters} of
                                        {true, _, _} -> 0;
                                        {_, true, _} -> length(element(2, maps:get(Id, Truth))) - 2;
                                        {_, _, #{Id := K}} -> K;
                                        _ -> all
                                    end,
                             case Upto =:= all orelse ((V =:= accept orelse V =:= reject)
                                                       andalso is_integer(Pos) andalso Pos =< Upto) of
                                 true -> {V, Pos};
                                 false -> {error, cut}
                             end
                     end, maps:without(Unseen, Ref))
    end.

%% A mode's error for a process that cut its flags (or a child it left untraced) is
%% compared by its verdict alone; one for a process the mode cannot see is not compared
%% (a check of a recording lists a process never seen to start whose call is in the
%% file, with no MFA: `{other, undefined}').
cut_answer({offline, dbg}, {error, Why}, _CutIds, #{ambiguous := true}) ->
    case lists:member(ambiguous_timeout, flat(Why)) of
        true -> {ok, ambiguous_timeout};
        false -> {error, Why}
    end;
cut_answer(M = {offline, dbg}, {ok, As}, CutIds, Mid = #{cutters := Cutters, untraced := Untraced}) ->
    %% A process whose own cut a dbg file does not show stops showing events, its exit
    %% with them: the check ends its trace with the file, undecided (none).
    Judged = CutIds ++ maps:keys(Cutters) ++ Untraced,
    judged_answer(M, maps:map(fun(Id, {none, _} = A) ->
                                      case lists:member(Id, Judged) of
                                          true -> {error, none};
                                          false -> A
                                      end;
                                 (_, A) -> A
                              end, As), CutIds, Mid);
cut_answer(M, {ok, As}, CutIds, Mid) ->
    judged_answer(M, As, CutIds, Mid);
cut_answer(_M, Other, _CutIds, _Mid) ->
    Other.

judged_answer(M, As, CutIds, #{cutters := Cutters, untraced := Untraced, unseen := Unseen}) ->
    Judged = CutIds ++ maps:keys(Cutters) ++ Untraced,
    {ok, maps:filtermap(fun(Id, {error, _}) ->
                                case {M =/= {method, inline} andalso (lists:member(Id, Unseen)
                                                                       orelse Id =:= {other, undefined}),
                                      lists:member(Id, Judged)} of
                                    {true, _} -> false;
                                    {false, true} -> {true, {error, cut}};
                                    {false, false} -> true
                                end;
                           (_, _) -> true
                        end, As)}.

flat(T) when is_tuple(T) -> flat(tuple_to_list(T));
flat(L) when is_list(L) -> lists:append([flat(E) || E <- L]);
flat(T) -> [T].

%% Attached to every new process, whether a process those modes cannot see is seen
%% depends on the flags its parent had when it spawned it: a process that cut its own
%% `procs' (and its send and receive) before its takeover kept the defaults for new
%% processes, without `set_on_spawn', and its children are then traced from their birth
%% by those defaults. Such a process, listed, must answer as the reference (it was seen
%% whole); one that answers otherwise stays in the answer, and disagrees. Likewise a
%% child of a `no_inherit' cutter: spawned while the tracer of new processes still traced
%% its parent, it is seen whole; after its parent's takeover, its parent's tracer counts
%% it as its own and finds it untraced, as the other modes do (an error).
seen_whole(M, Ref, #{unseen := Unseen, untraced := Untraced}, {ok, As}) ->
    case new_processes_traced(M) of
        true ->
            {ok, maps:filtermap(fun(Id, A) ->
                                        Whole = maps:find(Id, Ref) =:= {ok, A},
                                        case {lists:member(Id, Unseen), lists:member(Id, Untraced)} of
                                            {true, _} when Whole -> false;
                                            {_, true} when Whole -> {true, {error, cut}};
                                            _ -> true
                                        end
                                end, As)};
        false ->
            {ok, As}
    end;
seen_whole(_M, _Ref, _Mid, Answer) ->
    Answer.

%% The modes where the VM's defaults for new processes trace every process from its
%% birth: attached to every new process, and followed onto another node (riarc's session
%% there is attached to every new process).
new_processes_traced(M) ->
    M =:= {attach, new_processes} orelse M =:= {follow, remote}.

%% What the cuts that are not a process's last act (`{cut, Kind}', riarc_oracle_sys) do
%% to the modes that read the VM's trace, from a run's logs (the same, by logical id, in
%% every run): `cutters', each cutting process with the number of events it logged
%% before its cut; `untraced', the children a `no_inherit' cutter spawned after its cut
%% (their spawn is seen, nothing of them); `unseen', the processes those modes cannot
%% see at all (what an `own_procs' cutter spawned after its cut, and the descendants of
%% an untraced child), with every descendant of theirs. Attached to every new process
%% (Modes `{attach, new_processes}' and `{follow, remote}'), a process is traced from its
%% birth by the VM's defaults for new processes when its parent passes on no flags: what
%% those modes may see whole is told apart by seen_whole/4.
mid_cuts(Mode, Logs) ->
    Ids = maps:from_list([{P, logical_id(MFA)} || {P, [{init, _, _, MFA} | _]} <- maps:to_list(Logs)]),
    Children = lists:foldl(fun({P, [{init, _, Parent, _} | _]}, Acc) ->
                                   maps:update_with(Parent, fun(Cs) -> [P | Cs] end, [P], Acc)
                           end, #{}, maps:to_list(Logs)),
    Cuts = [{P, Kind, K, After} || {P, Log} <- maps:to_list(Logs), {K, Kind, After} <- cut_of(P, Log)],
    Untraced = [C || {_, no_inherit, _, After} <- Cuts, C <- After],
    Unseen = [C || {_, own_procs, _, After} <- Cuts, C <- After]
        ++ lists:append([maps:get(C, Children, []) || C <- Untraced]),
    %% A dbg file (Mode `{offline, dbg}') shows no call: a cut that leaves the process
    %% traced whole (no_inherit) is no cut there; and the root, traced from the middle of
    %% its life, has no init: Λ is asked for it with `undefined', and it is not listed.
    Dbg = Mode =:= {offline, dbg},
    Roots = [P || Dbg, {P, [{init, _, '$ext', _} | _]} <- maps:to_list(Logs)],
    #{cutters => maps:from_list([{maps:get(P, Ids), K} || {P, Kind, K, _} <- Cuts,
                                                          not (Dbg andalso Kind =:= no_inherit)]),
      untraced => [maps:get(C, Ids) || C <- Untraced],
      unseen => [maps:get(P, Ids) || P <- descendants(Unseen, Children) ++ Roots],
      %% A receive timeout and the message `timeout' are one trace message in a dbg
      %% file: its check is an error (ambiguous_timeout), when the file shows one (not
      %% of a process after its own_procs cut, nor of one it hides or leaves untraced).
      ambiguous => Dbg andalso lists:any(fun({timeout, _}) -> true;
                                            ({recv, _, timeout}) -> true;
                                            (_) -> false
                                         end, visible(Logs, Untraced ++ descendants(Unseen, Children)))}.

%% The events of Logs a dbg file shows: none of the Hidden processes, and of each other
%% process those before its own_procs cut.
visible(Logs, Hidden) ->
    lists:append([lists:takewhile(fun(E) -> element(1, E) =/= cut orelse element(3, E) =/= own_procs end, Log)
                  || {P, Log} <- maps:to_list(Logs), not lists:member(P, Hidden)]).

%% A process's cut: the events it logged before it, its kind, the children it spawned
%% after it.
cut_of(Self, Log) ->
    case lists:splitwith(fun(E) -> element(1, E) =/= cut end, Log) of
        {_, []} -> [];
        {Before, [{cut, Self, Kind} | After]} ->
            [{length(Before), Kind, [C || {spawn, P, C, _} <- After, P =:= Self]}]
    end.

descendants(Ps, Children) ->
    lists:append([[P | descendants(maps:get(P, Children, []), Children)] || P <- Ps]).

judge(Clauses, Runs, CutIds) ->
    case [{M, Logs} || {M, {ok, _, Logs, _}} <- Runs] of
        [] ->
            {disagree, maps:from_list([{M, R} || {M, R} <- Runs])};
        [{RefMode, RefLogs} | _] = AllLogs ->
            Truth = truths(RefLogs),
            Canon = canonical(RefLogs),
            Odd = [{M, Id} || {M, Logs} <- AllLogs, {Id, T} <- maps:to_list(canonical(Logs)),
                              maps:get(Id, Canon, missing) =/= T]
                ++ [{M, missing} || {M, Logs} <- AllLogs, map_size(Logs) =/= map_size(RefLogs)],
            Ref = reference(Clauses, Truth),
            Expected = maps:from_list([{M, expected(M, Ref, CutIds, mid_cuts(M, RefLogs), Truth)}
                                       || {M, _} <- Runs]),
            Answers = maps:from_list([{reference, {ok, Ref}}, {expected, Expected}
                                      | [{M, seen_whole(M, Ref, mid_cuts(M, RefLogs),
                                                        cut_answer(M, answers(R), CutIds, mid_cuts(M, RefLogs)))}
                                         || {M, R} <- Runs]]),
            Disagree = [M || {M, _} <- Runs, maps:get(M, Answers) =/= {ok, maps:get(M, Expected)}],
            if
                Odd =/= [] -> {nondeterministic, #{reference_run => RefMode, differ => Odd,
                                                   answers => Answers}};
                Disagree =:= [] -> {ok, Answers};
                true -> {disagree, Answers}
            end
    end.

%% Each mode's answer: per logical id, the verdict and the deciding event's position.
answers({ok, Vs, Logs, Fed}) ->
    Truth = truths(Logs),
    Sys = sys_pids(Logs),
    {ok, maps:from_list(
           [begin
                Id = logical_id(MFA),
                Mine = [E || {I, E} <- Fed, I =:= Id],
                {Id, {V, position(V, Mine, maps:get(Id, Truth, {none, []}), Sys)}}
            end || #{mfa := MFA, verdict := V} <- Vs])};
answers({error, Why}) ->
    {error, Why}.

position(none, Fed, {_, Trace}, Sys) ->
    case align(Fed, Trace, Sys) of
        {ok, _} -> all;
        Unaligned -> Unaligned
    end;
position(_, [], _, _) ->
    no_event;
position(_, Fed, {_, Trace}, Sys) ->
    case align(Fed, Trace, Sys) of
        {ok, Pos} -> Pos;
        Unaligned -> Unaligned
    end.

%% The events a monitor was fed are a subsequence of its process's trace: the position
%% of the last one, or the first one that is not in the trace where it should be.
align(Fed, Trace, Sys) ->
    align([norm(E, Sys) || E <- Fed], [norm(E, Sys) || E <- Trace], 0, 0).

align([], _, Last, _) -> {ok, Last};
align([E | _], [], _, _) -> {unaligned, E};
align([E | Fed], [E | Trace], _, I) -> align(Fed, Trace, I + 1, I + 1);
align(Fed, [_ | Trace], Last, I) -> align(Fed, Trace, Last, I + 1).

%% Pids outside the system (the collector, the root's parent, which riarc names
%% differently in each mode) and references (a call's alias, new in every run) say
%% nothing about the behaviour.
norm(T, Sys) when is_pid(T) ->
    case maps:is_key(T, Sys) of
        true -> T;
        false -> '$ext'
    end;
norm(T, _) when is_reference(T) -> '$ref';
norm({'$ref', _}, _) -> '$ref';
norm(T, Sys) when is_tuple(T) -> list_to_tuple(norm(tuple_to_list(T), Sys));
norm([H | T], Sys) -> [norm(H, Sys) | norm(T, Sys)];
norm(T, Sys) when is_map(T) -> maps:from_list(norm(maps:to_list(T), Sys));
norm(T, _) -> T.

sys_pids(Logs) -> maps:from_list([{P, true} || P <- maps:keys(Logs)]).

%% The ground truth: per logical id, the process's MFA and whole trace (its log, the
%% log's own send and its exit).
%% A cut's mark (riarc_oracle_sys's `{cut, Kind}') is no event: left out.
truths(Logs) ->
    maps:from_list([{logical_id(MFA), {MFA, [E || E <- Log, element(1, E) =/= cut]
                                           ++ [{send, P, col(MFA), {log, P, Log}},
                                               {exit, P, exit_reason(MFA)}]}}
                    || {P, [{init, _, _, MFA} | _] = Log} <- maps:to_list(Logs)]).

col({riarc_oracle_sys, proc, [_, _, _, Col]}) -> Col;
col({riarc_oracle_sys, init, [{srv, _, _, Col}]}) -> Col.

exit_reason({riarc_oracle_sys, proc, [_, Script, _, _]}) -> maps:get(exit, Script, normal);
exit_reason({riarc_oracle_sys, init, [{srv, _, Stop, _}]}) -> Stop.

%% A run's traces with pids named by logical id: the same in every run of a case.
canonical(Logs) ->
    Names = maps:from_list([{P, {pid, logical_id(MFA)}}
                            || {P, [{init, _, _, MFA} | _]} <- maps:to_list(Logs)]),
    maps:from_list([{Id, rename(T, Names)} || {Id, {_, T}} <- maps:to_list(truths(Logs))]).

rename(T, Names) when is_pid(T) -> maps:get(T, Names, '$ext');
rename(T, Names) when is_tuple(T) -> list_to_tuple(rename(tuple_to_list(T), Names));
rename([H | T], Names) -> [rename(H, Names) | rename(T, Names)];
rename(T, Names) when is_map(T) -> maps:from_list(rename(maps:to_list(T), Names));
rename(T, _) -> T.

logical_id({riarc_oracle_sys, proc, [Id | _]}) -> Id;
logical_id({riarc_oracle_sys, init, [{srv, N, _, _}]}) -> {srv, N};
logical_id(MFA) -> {other, MFA}.

%% The reference interpreter on each process's trace, and the first prefix on which it
%% has a verdict. Each call's alias is a reference of its own: numbered per process.
reference(Clauses, Truth) ->
    maps:from_list(
      [{Id, {V, ref_position(V, Clauses, MFA, Trace)}}
       || {Id, {MFA, Trace0}} <- maps:to_list(Truth),
          Trace <- [number_refs(Trace0)],
          V <- [riarc_shml_ref:verdict(Clauses, MFA, Trace)], V =/= undefined]).

ref_position(none, _, _, _) -> all;
ref_position(_, Clauses, MFA, Trace) ->
    hd([K || K <- lists:seq(1, length(Trace)),
             riarc_shml_ref:verdict(Clauses, MFA, lists:sublist(Trace, K)) =/= none]).

number_refs(Trace) ->
    {T, _} = lists:mapfoldl(fun(E, K) ->
                                    K1 = case is_call(E) of true -> K + 1; false -> K end,
                                    {subst_ref(E, {'$ref', K1}), K1}
                            end, 0, Trace),
    T.

is_call({send, _, _, {'$gen_call', _, _}}) -> true;
is_call({recv, _, {'$gen_call', _, _}}) -> true;
is_call(_) -> false.

subst_ref('$ref', R) -> R;
subst_ref(T, R) when is_tuple(T) -> list_to_tuple(subst_ref(tuple_to_list(T), R));
subst_ref([H | T], R) -> [subst_ref(H, R) | subst_ref(T, R)];
subst_ref(T, _) -> T.

%%% Printing a failing case

%% @doc Prints a case and what check_case/2 made of it: the script, the property and,
%% per process, each mode's answer beside the reference's.
-spec print(map(), unicode:chardata(), tuple()) -> ok.
print(Script, Src, Outcome) ->
    io:format(user, "~n=== riarc oracle: ~p ===~nsystem script:~n~p~nproperty:~n~ts~n",
              [element(1, Outcome), Script, Src]),
    case Outcome of
        {Kind, Answers} when Kind =:= ok; Kind =:= disagree ->
            print_answers(Answers);
        {nondeterministic, #{answers := Answers} = Why} ->
            io:format(user, "traces differing from the first run's: ~p~n", [maps:get(differ, Why)]),
            print_answers(Answers);
        Other ->
            io:format(user, "~p~n", [Other])
    end.

print_answers(Answers) ->
    {ok, Ref} = maps:get(reference, Answers),
    %% The reference's answer, or, in a mode that reads the VM's trace, an error for a
    %% process that cut its flags before its verdict (expected/5).
    Expected = maps:get(expected, Answers, #{}),
    Modes = [M || M <- [reference | modes()], is_map_key(M, Answers)],
    Ids = lists:usort(maps:keys(Ref) ++ lists:append([maps:keys(A) || {ok, A} <- maps:values(Answers), is_map(A)])),
    io:format(user, "verdicts as {Verdict, position of the deciding event in the process's trace}:~n", []),
    [begin
         io:format(user, "  process ~p:~n", [Id]),
         [io:format(user, "    ~-26s ~0p~s~n",
                    [mode_name(M), A, case A =:= maps:get(Id, maps:get(M, Expected, Ref), not_monitored) of
                                          true -> "";
                                          false -> "   <== differs from what is expected"
                                      end])
          || M <- Modes, {ok, As} <- [maps:get(M, Answers, {ok, #{}})], is_map(As),
             is_map(maps:get(M, Expected, Ref)),
             A <- [maps:get(Id, As, not_monitored)]]
     end || Id <- Ids],
    %% A mode's answer for the whole run (a dbg file's check: ambiguous_timeout).
    [io:format(user, "  ~s: ~0p, expected ~0p~n", [mode_name(M), A, maps:get(M, Expected, Ref)])
     || M <- Modes, {ok, A} <- [maps:get(M, Answers, {ok, #{}})],
        not (is_map(A) andalso is_map(maps:get(M, Expected, Ref)))],
    [io:format(user, "  ~s failed: ~P~n", [mode_name(M), Why, 30])
     || M <- Modes, {error, Why} <- [maps:get(M, Answers, {ok, #{}})]],
    ok.

mode_name(M) when is_atom(M) -> atom_to_list(M);
mode_name(M) -> string:join([atom_to_list(X) || X <- tuple_to_list(M)], "/").

%%% The Spec

%% @doc Λ: the case's compiled property's monitor, reporting each event it is fed to the
%% case's collector, tagged with the mode and the process's logical id. The root riarc
%% attached to while it ran (mode `{attach, running}') is asked for with its initial
%% call as riarc reads it, the arguments unknown: Λ answers for the root's own call, and
%% its monitor's first event, `attached', names that call (its logical id is bound
%% there) and stands for the root's init in its trace.
-spec spec(riarc_event:mfa_args()) -> {ok, riarc_monitor:monitor()} | undefined.
spec({riarc_oracle_sys, away, _}) ->
    undefined;
spec(MFA0) ->
    #{mod := Mod, sink := Sink, tag := Tag} = Current = persistent_term:get(?KEY),
    {MFA, Start} = case {MFA0, Current} of
                       {{M, F, Args}, #{attached := {_, MFA1 = {M, F, _}}}} when Args =/= [] ->
                           case lists:usort(Args) of
                               ['$unknown'] -> {MFA1, fun({attached, P, _}) -> {{attached, P, MFA1},
                                                                                {init, P, '$ext', MFA1}};
                                                         (E) -> {E, E}
                                                      end};
                               _ -> {MFA0, none}
                           end;
                       _ -> {MFA0, none}
                   end,
    case Mod:spec(MFA) of
        {ok, Mon} -> {ok, fed(Sink, Tag, logical_id(MFA), Mon, Start)};
        undefined -> undefined
    end.

%% Start: how the first event is given and logged (the attached root's), or none.
fed(Sink, Tag, Id, Mon, Start) ->
    fun(E0) ->
            {E, Logged} = case Start of
                              none -> {E0, E0};
                              _ -> Start(E0)
                          end,
            Sink ! {fed, Tag, Id, Logged},
            case riarc_monitor:analyse(Mon, E) of
                {next, M} -> fed(Sink, Tag, Id, M, none);
                {verdict, V} -> V;
                {verdict, error, Why} -> error({monitor_failed, Why})
            end
    end.

%% @doc The case's property's message events: what riarc would take from it as Spec.
-spec trace_flags() -> [send | recv].
trace_flags() -> (current()):trace_flags().

%% @doc The case's property's trace patterns.
-spec trace_patterns() -> riarc_trace_pattern:patterns().
trace_patterns() -> (current()):trace_patterns().

%% @doc Where the case's property's monitors run by default.
-spec analysis() -> isolated | inline.
analysis() -> (current()):analysis().

current() ->
    #{mod := Mod} = persistent_term:get(?KEY),
    Mod.

%%% Systems

%% @doc PropEr generator of riarc_oracle_sys scripts: a spawn tree of depth 2 at most,
%% with messages, timeouts, sleeps, gen_server calls, abnormal exits and children whose
%% end their parent is told of (a link's 'EXIT', a monitor's 'DOWN').
-spec script() -> proper_types:type().
script() ->
    ?LET(Raw, raw(2), finalize(Raw)).

raw(D) -> {exit_kind(), resize(3, list(raw_act(D))), frequency([{7, whole}, {1, cut}])}.

exit_kind() -> frequency([{3, normal}, {1, crash}]).

val() -> choose(0, 2).

vals() -> resize(2, list(val())).

%% A gen_server's calls: values, and now and then its own timeout firing (idle) or a
%% message `timeout' it takes where its timeout was due (hold).
calls() -> resize(2, list(frequency([{4, val()}, {1, idle}, {1, hold}]))).

%% A sleep is a receive with `after' only, in OTP's code (timer:sleep/1) or the system's.
sleep() -> {sleep, choose(0, 1), oneof([timer, bare])}.

timer() -> {timer, choose(0, 1), oneof([send_after, start_timer])}.

raw_act(0) ->
    frequency([{3, {timeout, choose(0, 1)}},
               {1, {cut, oneof([own_procs, no_inherit])}},
               {1, sleep()},
               {1, timer()},
               {1, {gen, calls(), oneof([normal, shutdown])}}]);
raw_act(D) ->
    frequency([{2, {timeout, choose(0, 1)}},
               {1, {cut, oneof([own_procs, no_inherit])}},
               {1, sleep()},
               {1, timer()},
               {1, {gen, calls(), oneof([normal, shutdown])}},
               {3, {async, ?LAZY(raw(D - 1)), vals()}},
               {1, {linked, ?LAZY(raw(D - 1)), vals()}},
               {1, {named, ?LAZY(raw(D - 1)), resize(2, non_empty(list(val())))}},
               {1, {watched, ?LAZY(raw(D - 1)), vals()}},
               {3, {sync, ?LAZY(raw(D - 1)), vals(), resize(2, non_empty(list(val()))),
                    choose(0, 3)}}]).

finalize(Raw) ->
    {S, _} = fin(Raw, 0, none, 0),
    S.

%% A child starts by taking the messages its parent sends it right after the spawn; a
%% synchronous child sends its replies at some point of its own acts.
fin({Exit, Acts, Cut}, NIn, Reply, Id) ->
    {Body, Next} = lists:foldl(fun(A, {Acc, N}) ->
                                       {A1, N1} = fin_act(A, N),
                                       {Acc ++ [A1], N1}
                               end, {[], Id + 1}, Acts),
    Body1 = case Reply of
                none -> Body;
                {Vs, Pos} ->
                    {B1, B2} = lists:split(min(Pos, length(Body)), Body),
                    B1 ++ [{reply, Vs}] ++ B2
            end,
    Reason = case Exit of normal -> normal; crash -> {crash, Id} end,
    %% One cut a process at most: the first that goes on, else the last act's.
    {Rev, Mid} = lists:foldl(fun(A = {cut, _}, {Acc, false}) -> {[A | Acc], true};
                                ({cut, _}, {Acc, true}) -> {Acc, true};
                                (A, {Acc, M}) -> {[A | Acc], M}
                             end, {[], false}, Body1),
    Body2 = lists:reverse(Rev),
    Last = [cut || Cut =:= cut, not Mid],
    {#{id => Id, acts => lists:duplicate(NIn, recv) ++ Body2 ++ Last, exit => Reason}, Next}.

fin_act({timeout, T}, N) -> {{timeout, T}, N};
fin_act({cut, _} = Cut, N) -> {Cut, N};
fin_act({sleep, _, _} = Sleep, N) -> {Sleep, N};
fin_act({gen, Calls, normal}, N) -> {{gen, N, Calls, normal}, N + 1};
fin_act({gen, Calls, shutdown}, N) -> {{gen, N, Calls, {shutdown, N}}, N + 1};
fin_act({timer, _, _} = Timer, N) -> {Timer, N};
fin_act({Kind, C, Msgs}, N) when Kind =:= linked; Kind =:= watched; Kind =:= named ->
    {CS, N1} = fin(C, length(Msgs), none, N),
    {{Kind, CS, Msgs}, N1};
fin_act({async, C, Msgs}, N) ->
    {CS, N1} = fin(C, length(Msgs), none, N),
    {{async, CS, Msgs}, N1};
fin_act({sync, C, Msgs, Replies, Pos}, N) ->
    {CS, N1} = fin(C, length(Msgs), {Replies, Pos}, N),
    {{sync, CS, Msgs, length(Replies)}, N1}.

%%% Properties, as source text over the systems' alphabet

%% @doc PropEr generator of property sources, as binaries (PropEr prints them as text):
%% a clause for the system's processes (or one for a given id and one for the others) and
%% one for its gen_servers, so that every process has a monitor of its own and no
%% partition mixes the traces of two processes (whose interleaving no run fixes). W is
%% bound to the process's logical id.
-spec property() -> proper_types:type().
property() ->
    ?LET({Split, F1, F2, F3}, {frequency([{3, none}, {1, choose(0, 3)}]),
                               formula(proc), formula(proc), formula(srv)},
         unicode:characters_to_binary(
           case Split of
               none ->
                   ["with riarc_oracle_sys:proc(W, _, _, _) monitor\n  ", F1, ",\n"];
               K ->
                   ["with riarc_oracle_sys:proc(W = ", integer_to_list(K), ", _, _, _) monitor\n  ",
                    F1, ",\n",
                    "with riarc_oracle_sys:proc(W, _, _, _) monitor\n  ", F2, ",\n"]
           end
           ++ ["with riarc_oracle_sys:init({srv, W, _, _}) monitor\n  ", F3, ".\n"])).

%% A formula after the process's own init action (binding S to the process): the first
%% event of every trace is its init, and a first necessity that does not match it would
%% accept at once. Its body is random, with `always' (loops on every kind of event:
%% the shape whose trace patterns filter messages) favoured, so that verdicts come late
%% in the trace.
formula(Who) ->
    Init = case Who of
               proc -> "[S <- _, riarc_oracle_sys:proc(W, _, _, _)] ";
               srv -> "[S <- _, riarc_oracle_sys:init({srv, W, _, _})] "
           end,
    ?SIZED(Size, begin
                     D = min(Size div 8 + 3, 6),
                     Scope = ["S", "W"],
                     ?LET(K, frequency([{4, [recv, send]}, {1, [recv]}, {1, [send]}]),
                          ?LET(Body, frequency([{3, always_formula(D, Scope, [], 2, false, K)},
                                                {2, formula(D, Scope, [], 2, false, K)}]),
                               [Init, Body]))
                 end).

%% formula(Depth, Scope, Recs, Loops, Under, Kinds): Scope the data variables bound so far,
%% Recs the recursion variables with whether a necessity separates them from their max,
%% Under whether a necessity is above (ff, tt and a recursion variable are never at the
%% top of the body: they would decide on the init event, or loop on nothing), Kinds
%% the message kinds it may name (a formula that never names one does not see its
%% events: those must neither end nor decide its monitor, in any mode).
formula(D, Scope, Recs, L, false, K) when D =< 1 ->
    necessity(1, Scope, Recs, L, K);
formula(0, _Scope, Recs, _L, true, _K) ->
    frequency([{4, "ff"}, {1, "tt"} | [{1, R} || {R, true} <- Recs]]);
formula(D, Scope, Recs, L, Under, K) ->
    Guarded = [R || {R, true} <- Recs],
    frequency([{4, "ff"} || Under, D =< 3] ++ [{1, "tt"} || Under, D =< 2]
              ++ [{2, oneof(Guarded)} || Guarded =/= [], Under]
              ++ [{2, ?LAZY(max_formula(D, Scope, Recs, L, Under, K))} || length(Recs) < 3]
              ++ [{L, ?LAZY(loop_formula(D, Scope, Recs, L, Under, K))} || L > 0, length(Recs) < 3]
              ++ [{L, ?LAZY(always_formula(D, Scope, Recs, L, Under, K))} || L > 0, length(Recs) < 3]
              ++ [{2, ?LAZY(and_formula(D, Scope, Recs, L, Under, K))},
                  {6, ?LAZY(necessity(D, Scope, Recs, L, K))}]).

%% Always F: F, and again after every event.
always_formula(D, Scope, Recs, L, Under, K) ->
    X = "X" ++ integer_to_list(length(Recs)),
    ?LET(Body, formula(D - 1, Scope, [{X, false} | Recs], L, Under, K),
         ["max(", X, ". and(", Body, [[", ", Loop, " ", X] || Loop <- every_kind(K)], "))"]).

%% A loop for every kind of event the formula may name.
every_kind(K) ->
    [L || {Kind, L} <- [{recv, "[_ ? _]"}, {send, "[_:_ ! _]"}, {recv, "[_ ?? timeout]"},
                        {other, "[_ ** _]"}, {other, "[_ -> _, _:_(_, _, _, _)]"},
                        {other, "[_ -> _, _:_(_)]"}],
          Kind =:= other orelse lists:member(Kind, K)].

max_formula(D, Scope, Recs, L, Under, K) ->
    X = "X" ++ integer_to_list(length(Recs)),
    ?LET(Body, formula(D - 1, Scope, [{X, false} | Recs], L, Under, K),
         ["max(", X, ". ", Body, ")"]).

loop_formula(D, Scope, Recs, L, Under, K) ->
    X = "X" ++ integer_to_list(length(Recs)),
    Loops = [["[_ ? _] "] || lists:member(recv, K)] ++ [["[_:_ ! _] "] || lists:member(send, K)]
        ++ [["[_ ? _] ", "[_:_ ! _] "] || K =:= [recv, send]],
    ?LET({Body, Kinds}, {formula(D - 1, Scope, [{X, false} | Recs], L, Under, K), oneof(Loops)},
         ["max(", X, ". and(", Body, [[", ", Kd, X] || Kd <- Kinds], "))"]).

and_formula(D, Scope, Recs, L, Under, K) ->
    ?LET(Fs, vector(2, formula(D - 1, Scope, Recs, L, Under, K)),
         ["and(", lists:join(", ", Fs), ")"]).

necessity(D, Scope, Recs, L, K) ->
    ?LET({Act, Bound}, action(Scope, K),
         ?LET(Body, formula(D - 1, lists:usort(Scope ++ Bound), [{R, true} || {R, _} <- Recs],
                            L, true, K),
              ["[", Act, "] ", Body])).

%% An action as {Text, Variables it binds}, over the systems' events: the messages
%% {m, V}, {r, Pid, V}, a gen_server's start, calls and stop cast, the logs to the
%% collector, a child's 'EXIT' and 'DOWN'; exits normal, {crash, Id} and {shutdown, Id}.
action(Scope, K) ->
    N = integer_to_list(length(Scope)),
    Recv = lists:member(recv, K),
    Send = lists:member(send, K),
    ?LET({Kind, P1, P2, M, G},
         {frequency([{3, recv} || Recv] ++ [{3, send} || Send] ++ [{2, timeout} || Recv]
                    ++ [{1, exit}, {1, spawn}, {1, init}]),
          proc(Scope, "P" ++ N), proc(Scope, "Q" ++ N), msg_pat(Scope, "M" ++ N),
          frequency([{3, none}, {1, guard}])},
         ?LET({Text, Pats}, action_text(Kind, P1, P2, M, Scope, N),
              begin
                  Vars = lists:usort(lists:append([vars_in(P) || P <- Pats])),
                  ?LET(Guard, guard(G, Vars, Scope), {[Text, Guard], Vars})
              end)).

action_text(recv, P1, _, M, _, _) -> {[P1, " ? ", M], [P1, M]};
action_text(timeout, P1, _, _, _, _) -> {[P1, " ?? timeout"], [P1]};
action_text(send, P1, P2, M, _, _) -> {[P1, ":", P2, " ! ", M], [P1, P2, M]};
action_text(exit, P1, _, _, Scope, N) ->
    ?LET(R, exit_pat(Scope, "R" ++ N), {[P1, " ** ", R], [P1, R]});
action_text(spawn, P1, P2, _, Scope, N) ->
    ?LET(C, call_pat(Scope, "I" ++ N), {[P1, " -> ", P2, ", ", C], [P1, P2, C]});
action_text(init, P1, P2, _, Scope, N) ->
    ?LET(C, call_pat(Scope, "I" ++ N), {[P1, " <- ", P2, ", ", C], [P1, P2, C]}).

%% A process pattern: _, a variable in scope, or a fresh one.
proc(Scope, Fresh) ->
    frequency([{4, "_"}, {2, Fresh} | [{1, V} || V <- Scope]]).

msg_pat(Scope, Fresh) ->
    frequency([{4, "_"}, {2, Fresh}, {2, "{m, 0}"}, {2, "{m, 1}"}, {1, "{m, 2}"},
               {2, "{m, " ++ Fresh ++ "}"}, {1, "{r, _, 1}"}, {1, "{r, _, " ++ Fresh ++ "}"},
               {1, "{ack, _, _}"}, {1, "{'$gen_call', _, {q, " ++ Fresh ++ "}}"},
               {1, "{_, {a, 0}}"}, {1, "{'$gen_cast', stop}"}, {1, "{log, _, _}"},
               {1, "timeout"}, {1, "{'$gen_cast', {hold, _}}"}, {1, "{idled, _}"},
               {1, "{'EXIT', _, " ++ Fresh ++ "}"}, {1, "{'EXIT', _, normal}"},
               {1, "{'DOWN', _, process, _, {crash, _}}"}, {1, "{tick, _}"},
               {1, "{timeout, _, tick}"}
               | [{1, V} || V <- Scope]]).

exit_pat(Scope, Fresh) ->
    frequency([{2, "normal"}, {2, "{crash, _}"}, {1, "{shutdown, _}"}, {2, Fresh}, {1, "_"}
               | [{1, "{crash, " ++ V ++ "}"} || V <- Scope]]).

call_pat(Scope, Fresh) ->
    ?LET(Id, frequency([{3, "_"}, {1, Fresh}, {1, "0"}, {1, "1"}, {1, "2"} | [{1, V} || V <- Scope]]),
         oneof(["riarc_oracle_sys:proc(" ++ Id ++ ", _, _, _)",
                "riarc_oracle_sys:init({srv, " ++ Id ++ ", _, _})",
                "_:_(_, _, _, _)", "_:_(_)"])).

vars_in(Pat) ->
    [W || W <- string:lexemes(Pat, "{}(),: "), is_var(W)].

is_var([C | _]) -> C >= $A andalso C =< $Z.

%% Guards compare with =:= and =/= only: the order of two pids is the order of their
%% spawns, which the schedule decides.
guard(none, _, _) -> "";
guard(guard, Vars, Scope) ->
    case lists:usort(Vars ++ Scope) of
        [] -> "";
        All -> oneof([?LET({V1, V2, Op}, {oneof(All), oneof(All), oneof(["=:=", "=/="])},
                           [" when ", V1, " ", Op, " ", V2]),
                      ?LET(V, oneof(All), [" when is_integer(", V, "), ", V, " > 0"])])
    end.
