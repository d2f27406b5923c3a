%% Inline monitoring (riarc_inline): woven code behaves as the original, the same
%% monitors give the same verdicts as outline monitoring, and monitor or process failures
%% stay contained. Every test weaves the modules it needs and puts the originals back.
-module(riarc_inline_tests).

-include_lib("eunit/include/eunit.hrl").

-export([log/2]).

-define(SYS, riarc_inline_sys).
-define(OWN, [riarc_inline_sys]).

%% Weaves Modules around Fun, restoring them whatever happens.
woven(Modules, Fun) ->
    ok = riarc_inline:instrument(Modules),
    try Fun() after riarc_inline:restore(Modules) end.

woven_test_(Name, Modules, Fun) ->
    {Name, {timeout, 120, fun() -> woven(Modules, Fun) end}}.

pqr_spec() ->
    fun({riarc_demo_pqr, Role, []}) -> {ok, trace_monitor(riarc_demo_pqr:local_traces(Role))};
       (_) -> undefined
    end.

trace_monitor(Expected) -> trace_monitor(Expected, []).

trace_monitor(Expected, Seen) ->
    fun(E = {exit, _, _}) ->
            case lists:reverse([element(1, E) | Seen]) of
                Expected -> accept;
                _ -> reject
            end;
       (E) -> trace_monitor(Expected, [element(1, E) | Seen])
    end.

%% {MFA with arity, verdict}, sorted: runs differ in pids only.
verdicts(#{verdicts := Vs}) ->
    lists:sort([{mfa(maps:get(mfa, V)), maps:get(verdict, V)} || V <- Vs]).

mfa({M, F, A}) when is_list(A), A =/= [] -> {M, F, length(A)};
mfa(MFA) -> MFA.

inline_test_() ->
    [woven_test_("P/Q/R: each process sees its own local trace, as outline", [riarc_demo_pqr],
                 fun pqr/0),
     woven_test_("the demo service: behaviour preserved, racy and safe",
                 [riarc_demo, riarc_demo_tickets], fun demo/0),
     woven_test_("receive with guards and after, ! as a value, funs", ?OWN, fun constructs/0),
     woven_test_("compiled properties (sHML) give the same verdicts inline as outline",
                 [riarc_demo_pqr], fun properties/0),
     woven_test_("a crashing monitor gives error and leaves the system alone", [riarc_demo_pqr],
                 fun crashing_monitor/0),
     woven_test_("a process killed from outside: the run ends, saying so", ?OWN, fun killed/0),
     woven_test_("a crashing process: its exit is seen with the real reason", ?OWN, fun crash/0),
     woven_test_("the same entries as outline and centralised monitoring", ?OWN, fun same_entries/0),
     woven_test_("sends to names nobody holds: the same events inline as outline", ?OWN,
                 fun unregistered/0),
     woven_test_("a gen_server and its client: the same events inline as outline", [riarc_inline_gen],
                 fun gen_events/0),
     woven_test_("calls that time out or find their server gone: the same events inline",
                 [riarc_inline_gen], fun failing_calls/0),
     woven_test_("a message `timeout' taken when the timeout was due is a message inline too",
                 [riarc_inline_gen], fun late_timeout/0),
     woven_test_("a gen_server without handle_info/2: its messages and timeout seen inline too",
                 [riarc_inline_bare], fun bare_server/0),
     woven_test_("sleeps: a timeout each inline as outline", ?OWN, fun sleeps/0),
     woven_test_("a timer's message is a receive in every method and backend", ?OWN, fun timers/0),
     woven_test_("a start on another node: the partition cannot be seen whole", ?OWN, fun remote/0),
     woven_test_("a process that cuts riarc's tracing still reports its woven events",
                 [riarc_demo_untracer], fun untracer/0)].

%% Inline reports from woven code, not the VM's trace: a process that turns off its
%% flags or the node's patterns still shows the receive its monitor forbids (where the
%% modes that read the trace give error for the cut view, riarc_trust_tests).
untracer() ->
    Mon = fun M({recv, _, {error, _}}) -> reject; M({exit, _, normal}) -> accept; M(_) -> M end,
    Before = riarc_trace_pattern:installed(),
    [begin
         %% Inline monitoring does not trace, so nothing of riarc's puts back the node's
         %% patterns the system turns off (receive_pattern): the test holds them for the
         %% run, as a riarc session would, and lets go after, or every later test of
         %% this VM would trace no receive.
         Key = {?MODULE, untracer},
         ok = riarc_trace_pattern:hold(Key, self(), #{}),
         {ok, R} = try riarc_inline:run({riarc_demo_untracer, run, [How]}, fun(_) -> {ok, Mon} end,
                                        #{log => false})
                   after riarc_trace_pattern:release(Key)
                   end,
         ?assertEqual(Before, riarc_trace_pattern:installed()),
         %% The process that took the message: the root, or its child.
         Took = [V || V = #{why := #{event := {recv, _, {error, late}}}} <- maps:get(verdicts, R)],
         ?assertMatch({How, [#{verdict := reject}]}, {How, Took})
     end || How <- riarc_demo_untracer:hows()].

%% A module nobody wove reports only its process's start and end: a monitor that accepts
%% there did not see the rest. Inconclusive, naming the module (before: accept); woven,
%% the same run accepts.
not_woven_test() ->
    Mon = fun M({exit, _, normal}) -> accept; M(_) -> M end,
    Spec = fun({?SYS, sleeper, _}) -> {ok, Mon}; (_) -> undefined end,
    {ok, R} = riarc_inline:run({?SYS, sleeper, []}, Spec, #{log => false}),
    ?assertMatch([#{verdict := inconclusive, reason := {not_woven, ?SYS}}], maps:get(verdicts, R)),
    ?assertEqual(1, riarc_result:status(R)),
    woven(?OWN, fun() ->
                        {ok, R2} = riarc_inline:run({?SYS, sleeper, []}, Spec, #{log => false}),
                        ?assertMatch([#{verdict := accept}], maps:get(verdicts, R2))
                end).

%% The clock service delivers a timer's message; riarc's receive pattern marks what it
%% delivers (a receive timeout is marked so). A marked message that is not `timeout' is a
%% receive like any: the process tracers' backend, and with it centralised monitoring,
%% skipped it, and a monitor rejecting on it accepted there (found by the oracle).
timers() ->
    Self = self(),
    Events = fun(MFA = {?SYS, timers, _}) -> {ok, fun M(E) -> Self ! {event, MFA, E}, M end};
                (_) -> undefined
             end,
    Runs = [fun(M, S, O) -> riarc:run(M, S, O#{backend => route}) end,
            fun(M, S, O) -> riarc:run(M, S, O#{backend => evm}) end,
            fun riarc_central:run/3, fun riarc_inline:run/3],
    [Outline | Others] = [begin
                              {ok, _} = Run({?SYS, timers, []}, Events, #{log => false}),
                              gen_events(?SYS, timers)
                          end || Run <- Runs],
    ?assertMatch([{init, pid, pid, _}, {recv, pid, {tick, 1}}, {recv, pid, {timeout, ref, tick}},
                  {exit, pid, normal}], Outline),
    [?assertEqual(Outline, Other) || Other <- Others],
    NoTick = fun({?SYS, timers, _}) -> {ok, fun M({recv, _, {tick, _}}) -> reject; M(_) -> M end};
                (_) -> undefined
             end,
    [begin
         {ok, Res} = Run({?SYS, timers, []}, NoTick, #{log => false}),
         ?assertEqual([reject], [V || #{verdict := V} <- maps:get(verdicts, Res)])
     end || Run <- Runs].

%% timer:sleep/1 is OTP's receive with only an `after': riarc's tracing shows its
%% timeout, and so does inline monitoring, as for the system's own such receive. A
%% monitor rejecting on a timeout rejects in every method (inline accepted at the
%% exit before timer:sleep/1 was woven).
sleeps() ->
    Self = self(),
    Events = fun(MFA = {?SYS, sleeper, _}) -> {ok, fun M(E) -> Self ! {event, MFA, E}, M end};
                (_) -> undefined
             end,
    Seen = fun(Run) ->
                   {ok, _} = Run({?SYS, sleeper, []}, Events, #{log => false}),
                   gen_events(?SYS, sleeper)
           end,
    Outline = Seen(fun riarc:run/3),
    ?assertMatch([{init, pid, pid, _}, {timeout, pid}, {timeout, pid}, {timeout, pid},
                  {exit, pid, normal}], Outline),
    ?assertEqual(Outline, Seen(fun riarc_inline:run/3)),
    NoTimeout = fun({?SYS, sleeper, _}) -> {ok, fun M({timeout, _}) -> reject; M(_) -> M end};
                   (_) -> undefined
                end,
    [begin
         {ok, Res} = Run({?SYS, sleeper, []}, NoTimeout, #{log => false}),
         ?assertEqual([reject], [V || #{verdict := V} <- maps:get(verdicts, Res)])
     end || Run <- [fun riarc:run/3, fun riarc_central:run/3, fun riarc_inline:run/3]].

%% Outline, a child on another node is followed or its partition says its trace was
%% lost; inline, nothing sees it: the starter's partition is inconclusive, naming it. On
%% this node the same start is a start as any.
remote() ->
    %% The child has a monitor of its own: on this node, not in the starter's partition.
    Spec = fun({?SYS, remote, _}) -> {ok, fun M(_) -> M end};
              ({timer, sleep, _}) -> {ok, fun M(_) -> M end};
              (_) -> undefined
           end,
    {ok, Here} = riarc_inline:run({?SYS, remote, [node()]}, Spec, #{log => false}),
    %% The child runs timer's code, which is not woven: its sleep is not seen.
    ?assertMatch([#{verdict := none}, #{verdict := inconclusive, reason := {not_woven, timer},
                                        mfa := {timer, sleep, [0]}}], maps:get(verdicts, Here)),
    %% The peer makes this node distributed; it is left as it was found, for the tests
    %% after this one (a doc example expects a node that is not).
    WasDistributed = node() =/= nonode@nohost,
    {Peer, Node} = riarc_test_peer:start(riarc_inline, []),
    try
        {ok, There} = riarc_inline:run({?SYS, remote, [Node]}, Spec, #{log => false}),
        ?assertMatch([#{verdict := inconclusive,
                        reason := {unmonitored_child, #{mfa := {timer, sleep, [0]},
                                                        verdict_on_partial_trace := none}}}],
                     maps:get(verdicts, There)),
        ?assertEqual(1, riarc_result:status(There))
    after
        peer:stop(Peer),
        _ = WasDistributed orelse net_kernel:stop()
    end.

%% What OTP's code does for a woven client and a woven server (the start, the ack, the
%% calls' tags and replies, the exit of a server with no terminate/2 of its own) reaches
%% their monitors as riarc's tracing shows it: event for event, pids and references
%% aside.
gen_events() ->
    Self = self(),
    Spec = fun(MFA = {riarc_inline_gen, F, _}) when F =:= client; F =:= init ->
                   {ok, fun M(E) -> Self ! {event, MFA, E}, M end};
              (_) -> undefined
           end,
    Run = fun(R) ->
                  {ok, Res} = R({riarc_inline_gen, client, []}, Spec, #{log => false}),
                  ?assertEqual(0, riarc_result:status(Res)),
                  {gen_events(client), gen_events(init)}
          end,
    Outline = Run(fun riarc:run/3),
    ?assertMatch({[{init, pid, pid, _}, {spawn, pid, pid, {riarc_inline_gen, init, [x]}},
                   {recv, pid, {ack, pid, {ok, pid}}} | _], _}, Outline),
    ?assertEqual(Outline, Run(fun riarc_inline:run/3)).

%% A call's request sent and no reply taken: what gen's receive took instead (its
%% `after', twice; the server's 'DOWN') reaches the caller's monitor inline as outline.
%% A call to itself sends nothing, in both.
failing_calls() ->
    Self = self(),
    Spec = fun(MFA = {riarc_inline_gen, failing, _}) -> {ok, fun M(E) -> Self ! {event, MFA, E}, M end};
              ({riarc_inline_gen, init, _}) -> {ok, fun M(_) -> M end};
              (_) -> undefined
           end,
    Run = fun(R) ->
                  {ok, _} = R({riarc_inline_gen, failing, []}, Spec, #{log => false}),
                  gen_events(failing)
          end,
    Outline = Run(fun riarc:run/3),
    ?assertMatch([_, _, _, {send, pid, pid, {'$gen_call', _, hang}}, {timeout, pid}, {timeout, pid},
                  {send, pid, pid, {'$gen_cast', stop}}, {recv, pid, {'DOWN', ref, process, pid, normal}},
                  {send, pid, pid, {'$gen_call', {pid, [alias | ref]}, {q, 1}}},
                  {recv, pid, {'DOWN', ref, process, pid, noproc}}, {exit, pid, normal}], Outline),
    ?assertEqual(Outline, Run(fun riarc_inline:run/3)).

%% The events one of gen_events/0's monitors was fed, up to its process's exit.
gen_events(F) -> gen_events(riarc_inline_gen, F).

gen_events(Mod, F) ->
    receive
        {event, {Mod, F, _}, E = {exit, _, _}} -> [unref(E)];
        {event, {Mod, F, _}, E} -> [unref(E) | gen_events(Mod, F)]
    end.

%% The one promise, inline: a message `timeout' that gen_server takes where its own
%% timeout was due reads as the message riarc's tracing shows, never as the timeout. A
%% monitor that rejects on receiving it rejects in every method (reading it as the
%% timeout gave inline an accept here).
late_timeout() ->
    Self = self(),
    Events = fun(MFA = {riarc_inline_gen, init, _}) -> {ok, fun M(E) -> Self ! {event, MFA, E}, M end};
                (_) -> undefined
             end,
    Root = {riarc_inline_gen, late, []},
    Seen = fun(Run) ->
                   {ok, _} = Run(Root, Events, #{log => false}),
                   gen_events(init)
           end,
    Outline = Seen(fun riarc:run/3),
    ?assertMatch([_, _, {recv, pid, {'$gen_cast', {hold, pid}}}, {send, pid, pid, timeout},
                  {recv, pid, timeout} | _], Outline),
    ?assertEqual([], [E || E = {timeout, _} <- Outline]),
    ?assertEqual(Outline, Seen(fun riarc_inline:run/3)),
    NoTimeoutMessage = fun({riarc_inline_gen, init, _}) ->
                               {ok, fun M({recv, _, timeout}) -> reject; M(_) -> M end};
                          (_) -> undefined
                       end,
    [begin
         {ok, Res} = Run(Root, NoTimeoutMessage, #{log => false}),
         ?assertMatch([reject], [V || #{mfa := {riarc_inline_gen, init, _}, verdict := V} <- maps:get(verdicts, Res)])
     end || Run <- [fun riarc:run/3, fun riarc_central:run/3, fun riarc_inline:run/3]],
    %% Race: a message taken ends the timer, whose message may be on its way already;
    %% that stale message is dropped by the woven first clause, the state kept.
    Stale = {timeout, make_ref(), riarc_inline_rt:gen_timer_tag()},
    ?assertEqual({noreply, #{kept => true}}, riarc_inline_gen:handle_info(Stale, #{kept => true})),
    %% ... and a callback's own receive, woven, never takes it, even one that takes any
    %% message: it stays for gen_server's loop.
    ok = riarc_inline:instrument([?SYS]),
    try
        {P, Ref} = spawn_monitor(fun() ->
                                          self() ! Stale,
                                          First = ?SYS:take_any(),
                                          self() ! hello,
                                          Second = ?SYS:take_any(),
                                          exit({First, Second, element(2, process_info(self(), messages))})
                                  end),
        receive {'DOWN', Ref, process, P, Took} ->
                ?assertEqual({none, {took, hello}, [Stale]}, Took)
        end
    after riarc_inline:restore([?SYS])
    end.

%% A gen_server module without handle_info/2 gets one inline: what it is sent and its
%% timeout reach its monitor as outline, and gen_server's warning for each is logged as
%% OTP logs it (the client waits for both warnings).
bare_server() ->
    Self = self(),
    %% The handler's messages are the test's, sent from the server's process: outline
    %% sees them, inline does not (the handler is not woven). They are left out.
    Spec = fun(MFA = {riarc_inline_bare, F, _}) when F =:= client; F =:= init ->
                   {ok, fun M({send, _, _, {no_handle_info, _}}) -> M;
                            M(E) -> Self ! {event, MFA, E}, M
                        end};
              (_) -> undefined
           end,
    %% The warnings must be logged (whatever level the run set) and not printed.
    #{level := Primary} = logger:get_primary_config(),
    {ok, #{level := Level}} = logger:get_handler_config(default),
    ok = logger:set_primary_config(level, notice),
    ok = logger:update_handler_config(default, level, none),
    ok = logger:add_handler(?MODULE, ?MODULE, #{}),
    try
        Run = fun(R) ->
                      {ok, Res} = R({riarc_inline_bare, client, []}, Spec, #{log => false}),
                      ?assertEqual(0, riarc_result:status(Res)),
                      gen_events(riarc_inline_bare, init)
              end,
        Outline = Run(fun riarc:run/3),
        ?assertMatch([_, _, {recv, pid, hello}, {recv, pid, {'$gen_cast', hold}}, {recv, pid, go},
                      {timeout, pid}, {recv, pid, {'$gen_cast', stop}}, {exit, pid, normal}], Outline),
        ?assertEqual(Outline, Run(fun riarc_inline:run/3))
    after
        ok = logger:remove_handler(?MODULE),
        ok = logger:update_handler_config(default, level, Level),
        ok = logger:set_primary_config(level, Primary)
    end.

%% @private A logger handler: gen_server's warning for a message its module has no
%% handle_info/2 for goes to the bare server's client.
log(#{msg := {report, #{label := {gen_server, no_handle_info}, module := riarc_inline_bare,
                        message := Msg}}}, _Config) ->
    case whereis(riarc_inline_bare_client) of
        undefined -> ok;
        Client -> Client ! {no_handle_info, Msg}
    end;
log(_Event, _Config) ->
    ok.

unref(R) when is_reference(R) -> ref;
unref(P) when is_pid(P) -> pid;
unref([H | T]) -> [unref(H) | unref(T)];
unref(T) when is_tuple(T) -> list_to_tuple(unref(tuple_to_list(T)));
unref(M) when is_map(M) -> maps:from_list(unref(maps:to_list(M)));
unref(X) -> X.

%% Entry for entry, in all three methods: the verdict, the events, why it was reached (the
%% deciding event and its number), a reject's explanation, a truncated message's
%% inconclusive verdict. Pids differ between runs: each reads `pid'.
same_entries() ->
    Opts = #{log => false, limits => #{max_payload => 1024}},
    Root = {?SYS, three, []},
    Entries = fun({ok, #{verdicts := Vs}}) -> lists:sort(unpid(Vs)) end,
    Outline = Entries(riarc:run(Root, ?SYS:three_spec(), Opts)),
    ?assertMatch([#{verdict := accept, events := 4, why := #{event_no := 4}},
                  #{verdict := inconclusive, reason := {payload_truncated, #{event_no := 2}}},
                  #{verdict := reject, why := #{event_no := 3}, explanation := #{last_events := [_, _, _]}}],
                 lists:sort(fun(A, B) -> maps:get(verdict, A) =< maps:get(verdict, B) end, Outline)),
    ?assertEqual(Outline, Entries(riarc_central:run(Root, ?SYS:three_spec(), Opts))),
    %% Inline, the root (not monitored) starts through woven code and is listed too.
    Inline = Entries(riarc_inline:run(Root, ?SYS:three_spec(), Opts)),
    ?assertEqual(Outline, [E || E = #{mfa := {?SYS, three_child, _}} <- Inline]).

unpid(P) when is_pid(P) -> pid;
unpid(L) when is_list(L) -> [unpid(X) || X <- L];
unpid(T) when is_tuple(T) -> list_to_tuple(unpid(tuple_to_list(T)));
unpid(M) when is_map(M) -> maps:from_list(unpid(maps:to_list(M)));
unpid(X) -> X.

pqr() ->
    Expected = lists:sort([{{riarc_demo_pqr, R, []}, accept} || R <- [p, q, r]]),
    [begin
         {ok, In} = riarc_inline:run({riarc_demo_pqr, p, []}, pqr_spec(), #{log => false}),
         ?assertEqual(Expected, verdicts(In))
     end || _ <- lists:seq(1, 100)],
    {ok, Out} = riarc:run({riarc_demo_pqr, p, []}, pqr_spec(), #{log => false}),
    ?assertEqual(Expected, verdicts(Out)).

%% examples/props/pqr.prop, compiled to a Spec module: the same verdict for P, Q and R.
properties() ->
    %% _build/test/lib/riarc/ebin -> the project's top directory (lexically: lib/riarc may
    %% be a symbolic link)
    Ebin = filename:split(filename:dirname(code:which(riarc))),
    Top = filename:join(lists:sublist(Ebin, length(Ebin) - 5)),
    {ok, Mod} = riarc_shml:load_file(filename:join([Top, "examples", "props", "pqr.prop"])),
    {ok, In} = riarc_inline:run({riarc_demo_pqr, p, []}, Mod, #{log => false}),
    {ok, Out} = riarc:run({riarc_demo_pqr, p, []}, Mod, #{log => false}),
    ?assertEqual(verdicts(Out), verdicts(In)),
    ?assertEqual(3, length(verdicts(In))).

%% The demo's clients all get their tickets woven as unwoven; the monitors run in the
%% clients and the dispenser. The dispenser's helpers are processes Λ does not select:
%% inline they are not monitored, so the dispenser's monitor cannot see their replies and
%% the race is not caught there (outline it is): the difference docs/inline.md states.
%% Never a pass for it: the dispenser is stopped without its terminate/2, so its
%% monitor never sees its end, and its partition reads inconclusive.
demo() ->
    [begin
         {ok, Res} = riarc_inline:run({riarc_demo, main, [6, 20, Mode]}, riarc_demo_monitors,
                                      #{log => false}),
         Vs = verdicts(Res),
         Clients = [V || {{riarc_demo, client, 2}, V} <- Vs],
         ?assertEqual(6, length(Clients)),
         %% A racy dispenser may hand one client the same ticket twice, which that client's
         %% own monitor does see; a safe one never does.
         case Mode of
             safe -> ?assertEqual([accept], lists:usort(Clients));
             racy -> ?assertEqual([], lists:usort(Clients) -- [accept, reject])
         end,
         ?assertMatch([{{riarc_demo_tickets, init, 1}, inconclusive}],
                      [X || X = {{riarc_demo_tickets, _, _}, _} <- Vs]),
         ?assertEqual(1, riarc_result:status(Res)),
         ?assertEqual(ok, riarc_demo:main(3, 5, Mode))
     end || Mode <- [safe, racy]].

%%% Constructs ---------------------------------------------------------------------------

constructs() ->
    Self = self(),
    Spec = fun({?SYS, F, _}) when F =:= guarded; F =:= bang_value; F =:= funs; F =:= receiver ->
                   {ok, recorder(F, Self)};
              (_) -> undefined
           end,
    %% guarded/1: a message no clause takes is no event; the one taken is, once.
    Runner = spawn_link(fun() -> Self ! {result, riarc_inline:run({?SYS, guarded, [Self]}, Spec,
                                                                  #{log => false})} end),
    G = receive {event, guarded, {init, P, _, _}} -> P end,
    G ! {other, x},
    G ! {n, 3},
    receive {got, Got} -> ?assertEqual({small, 3}, Got) end,
    %% Its last receive times out (after 0): the timeout event, as riarc's tracing shows it.
    ?assertMatch([{recv, G, {n, 3}}, {send, G, Self, {got, {small, 3}}}, {timeout, G}, {exit, G, normal}],
                 events(guarded)),
    receive {result, {ok, _}} -> unlink(Runner) end,
    %% bang_value/1: `!' inside a fun, its value used.
    {ok, _} = riarc_inline:run({?SYS, bang_value, [Self]}, Spec, #{log => false}),
    receive {echo, 1} -> ok end,
    ?assertMatch([{init, _, _, _}, {send, _, Self, {echo, 1}}, {exit, _, normal}], events(bang_value)),
    %% funs/1: a spawned fun (not selected: no monitor of its own) and a spawn/3.
    {ok, R} = riarc_inline:run({?SYS, funs, [Self]}, Spec, #{log => false}),
    receive gone -> ok end,
    ?assertMatch([{init, _, _, _}, {spawn, _, _, {?SYS, '-funs/1-fun-0-', []}}, {send, _, _, go},
                  {spawn, _, _, {?SYS, receiver, []}}, {send, _, _, stop}, {exit, _, normal}],
                 events(funs)),
    ?assertMatch([{init, _, _, _}, {recv, _, stop}, {exit, _, normal}], events(receiver)),
    %% The fun's events never reach funs/1's monitor, as outline they would: funs/1's
    %% partition is inconclusive, saying which child it could not see.
    ?assertEqual([{{?SYS, funs, 1}, inconclusive}, {{?SYS, receiver, []}, none}], verdicts(R)),
    ?assertMatch([#{reason := {unmonitored_child, #{mfa := {?SYS, '-funs/1-fun-0-', []},
                                                    verdict_on_partial_trace := none}}}],
                 [E || E = #{mfa := {?SYS, funs, _}} <- maps:get(verdicts, R)]).

%% The VM's tracing shows a send to a name nobody holds, then `!' fails (a cast ignores
%% the failure); a cast to a global name nobody holds sends nothing. Inline, the same.
unregistered() ->
    Self = self(),
    Spec = fun({?SYS, unregistered, []}) -> {ok, recorder(unregistered, Self)};
              (_) -> undefined
           end,
    Seen = fun(Run) ->
                   {ok, _} = Run({?SYS, unregistered, []}, Spec, #{log => false}),
                   unpid(events(unregistered))
           end,
    Outline = Seen(fun riarc:run/3),
    ?assertEqual([{init, pid, pid, {?SYS, unregistered, []}}, {send, pid, riarc_inline_nobody, x},
                  {send, pid, riarc_inline_nobody, {'$gen_cast', y}}, {exit, pid, normal}], Outline),
    ?assertEqual(Outline, Seen(fun riarc_inline:run/3)).

%% The events a recorder monitor reported, up to its process's exit.
events(Name) ->
    receive
        {event, Name, E = {exit, _, _}} -> [E];
        {event, Name, E} -> [E | events(Name)]
    end.

recorder(Name, Test) ->
    fun(E) -> Test ! {event, Name, E}, recorder(Name, Test) end.

crashing_monitor() ->
    Spec = fun({riarc_demo_pqr, q, []}) -> {ok, fun(E) -> element(99, E) end};
              (MFA) -> (pqr_spec())(MFA)
           end,
    {ok, Res} = riarc_inline:run({riarc_demo_pqr, p, []}, Spec, #{log => false}),
    ?assertEqual([{{riarc_demo_pqr, p, []}, accept}, {{riarc_demo_pqr, q, []}, error},
                  {{riarc_demo_pqr, r, []}, accept}], verdicts(Res)).

killed() ->
    Self = self(),
    Spec = fun({?SYS, dies, []}) -> {ok, fun M({init, P, _, _}) -> Self ! {started, P}, M; M(_) -> M end};
              (_) -> undefined
           end,
    Runner = spawn_link(fun() -> Self ! {result, riarc_inline:run({?SYS, dies, []}, Spec, #{log => false})} end),
    Pid = receive {started, P} -> P end,
    exit(Pid, kill),
    {ok, Res} = receive {result, R} -> R end,
    unlink(Runner),
    %% Its monitor never saw the end: no silent none, and the run's status says so.
    ?assertMatch([#{verdict := inconclusive, reason := {exit_not_seen, killed}}], maps:get(verdicts, Res)),
    ?assertEqual(1, riarc_result:status(Res)).

crash() ->
    Self = self(),
    Spec = fun({?SYS, crash_child, []}) ->
                   {ok, fun M({exit, _, Reason}) -> Self ! {exit_seen, Reason}, reject; M(_) -> M end};
              (_) -> undefined
           end,
    {ok, Res} = riarc_inline:run({?SYS, crash_child, []}, Spec, #{log => false}),
    ?assertMatch([#{verdict := reject}], maps:get(verdicts, Res)),
    receive {exit_seen, Reason} -> ?assertMatch({deliberate, [_ | _]}, Reason) end.

%%% Errors and the parse transform -------------------------------------------------------

errors_test_() ->
    [?_assertMatch({error, {riarc_inline, {riarc_weave, {not_loaded, _}}}},
                   riarc_inline:instrument([no_such_module_here])),
     ?_assertEqual("module x is not loaded and not in the code path",
                   riarc:format_error({riarc_weave, {not_loaded, x}})),
     ?_assertEqual("module x is not loaded and not in the code path",
                   riarc_inline:format_error({riarc_weave, {not_loaded, x}})),
     ?_assertMatch({error, {riarc_inline, {riarc, {bad_spec, 42}}}}, riarc_inline:run({riarc_demo_pqr, p, []}, 42, #{}))].

%% The transform as a compile option, on source: the woven module compiles and runs as
%% the original when no run is active.
parse_transform_test() ->
    Src = filename:join(code:lib_dir(riarc_testkit), "src/riarc_demo_pqr.erl"),
    {ok, Forms} = epp:parse_file(Src, []),
    {ok, riarc_demo_pqr, Bin} = compile:forms(Forms, [binary, {parse_transform, riarc_inline_transform}]),
    Calls = [Call || {call, _, {remote, _, {atom, _, riarc_inline_rt}, {atom, _, Call}}, _}
                         <- flatten(riarc_inline_transform:parse_transform(Forms, []))],
    ?assertEqual([recv, send, spawn, spawn], lists:sort(Calls)),
    ?assert(is_binary(Bin)),
    ?assertNot(riarc_inline_rt:active()).

flatten(T) when is_tuple(T) -> [T | flatten(tuple_to_list(T))];
flatten(L) when is_list(L) -> lists:append([flatten(E) || E <- L]);
flatten(_) -> [].
