%% @doc Systems for the differential oracle (riarc_oracle_tests): processes that spawn,
%% send, receive, time out, call a gen_server and exit normally or not, built so that
%% every process's own trace is the same in every run, whatever the schedule.
%%
%% riarc's `recv' event is the arrival of a message in the mailbox, not the receive that
%% takes it. So a process's trace is fixed only if every message reaches it while it
%% waits for exactly that message, and after its previous event. The scripts keep that by
%% construction:
%% <ul>
%% <li>`{async, Child, Msgs}': spawn Child, send it Msgs; Child's script starts by taking
%%     them, before any event of its own, and never talks to its parent again;</li>
%% <li>`{sync, Child, Msgs, N}': the same, then wait for N replies from Child (the
%%     parent does nothing in between); Child replies with `{reply, N}' once it has
%%     taken Msgs, then may go on alone;</li>
%% <li>`{linked, Child, Msgs}', `{watched, Child, Msgs}': as `async', Child spawned
%%     linked (the parent traps exits meanwhile) or monitored; the parent then waits
%%     for its 'EXIT' or 'DOWN', which nothing else can come before;</li>
%% <li>`{named, Child, Msgs}': as `async', but Child is registered under a name of its
%%     own (the parent registers it, Child waits for Msgs, of which there is at least
%%     one) and Msgs go to the name;</li>
%% <li>`{timer, T, How}': a timer of T ms to the process itself, `send_after' or
%%     `start_timer', and the receive that takes its message;</li>
%% <li>`{timeout, T}': a `receive ... after T' that times out: nobody sends to a process
%%     that is not waiting for a message;</li>
%% <li>`{sleep, T, How}': a receive with `after T' and no clause, which times out
%%     whatever the mailbox holds: in OTP's code (`timer', timer:sleep/1) or written
%%     here (`bare');</li>
%% <li>`{gen, Id, Calls, Stop}': start a gen_server, call it with each of Calls (only this
%%     process talks to it), then stop it with a cast (a stopping call would race the
%%     server's 'DOWN' with the caller's demonitor). A call `idle' is a cast after which
%%     the server asks for a timeout of 0, which fires (its caller waits to hear so); a
%%     call `hold' the same, but the server first sends itself `timeout', which its
%%     receive finds first: a message `timeout', not the timeout.</li>
%% <li>`cut': turn off all of the process's own trace flags (erlang:trace/3), its last
%%     act: the modes that read the VM's trace see nothing of it from here, not even its
%%     exit, and say so (error, unless its monitor had decided); woven code still
%%     reports.</li>
%% <li>`{cut, Kind}': turn off some of the process's own trace flags and go on:
%%     `own_procs' takes send, 'receive' and procs (nothing more of the process is seen,
%%     its exit included, and the children it spawns from then on inherit the rest: they
%%     are not seen at all), `no_inherit' takes set_on_spawn (the process is seen whole,
%%     but the children it spawns from then on are not traced: only their spawn is seen).
%%     Logged as `{cut, Self, Kind}', where it happened; the oracle reads that mark and
%%     leaves it out of the process's trace.</li>
%% </ul>
%% Every process logs the events it exhibits and sends the log to the collector `Col'
%% (outside the system) just before it exits; the log is the ground truth the oracle
%% aligns each mode's monitors with. References (a call's alias) are logged as `'$ref''
%% and the root's parent, which riarc names differently in each mode, as `'$ext''.
%% ```
%% 1> Script = #{id => 0, acts => [{timeout, 0}], exit => normal}.
%% 2> riarc_oracle_sys:proc(0, Script, none, self()).
%% 3> receive {log, _, Log} -> [element(1, E) || E <- Log] end.
%% [init,timeout]
%% '''
-module(riarc_oracle_sys).

-behaviour(gen_server).

-export([proc/4, away/5, ended/2]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2]).

%% @doc A process of the system: Id is its logical id, the one every mode is matched by;
%% the root's Parent is `none'.
-spec proc(term(), map(), pid() | none, pid()) -> ok.
proc(Id, Script = #{acts := Acts}, Parent, Col) ->
    Self = self(),
    Init = {init, Self, ext(Parent), {?MODULE, proc, [Id, Script, Parent, Col]}},
    Log = lists:foldl(fun(A, L) -> act(A, L, Parent, Col) end, [Init], Acts),
    Col ! {log, Self, lists:reverse(Log)},
    case maps:get(exit, Script, normal) of
        normal -> ok;
        Reason -> exit(Reason)
    end.

%% @doc The system's root started on Node (spawn/4) by a process of this node, which
%% waits until the system's N processes have logged and ended (the collector Col says
%% who they are): riarc follows the system there (option follow). This process is no
%% process of the system: it logs nothing, and Λ gives it no monitor.
-spec away(node(), term(), map(), pid(), pos_integer()) -> ok.
away(Node, Id, Script, Col, N) ->
    _ = spawn(Node, ?MODULE, proc, [Id, Script, none, Col]),
    ended(Col, N).

%% @doc Once the system's N processes have logged (the collector Col says who they are,
%% wherever they run), each has ended.
-spec ended(pid(), pos_integer()) -> ok.
ended(Col, N) ->
    Ref = make_ref(),
    Col ! {logged, self(), Ref, N},
    Pids = receive {Ref, Ps} -> Ps end,
    _ = [receive {'DOWN', MRef, process, P, _} -> ok end || P <- Pids, MRef <- [monitor(process, P)]],
    ok.

ext(none) -> '$ext';
ext(P) -> P.

act({async, Child = #{id := Id}, Msgs}, Log, _Parent, Col) ->
    {C, L1} = spawn_child(Id, Child, Col, Log),
    send_all(C, Msgs, L1);
act({named, Child = #{id := Id}, Msgs}, Log, _Parent, Col) ->
    {C, L1} = spawn_child(Id, Child, Col, Log),
    Name = list_to_atom("riarc_oracle_sys_" ++ integer_to_list(Id)),
    true = register(Name, C),
    send_all(Name, Msgs, L1);
act({timer, T, send_after}, Log, _Parent, _Col) ->
    Self = self(),
    _ = erlang:send_after(T, Self, {tick, T}),
    receive {tick, T} = M -> [{recv, Self, M} | Log] end;
act({timer, T, start_timer}, Log, _Parent, _Col) ->
    Self = self(),
    Ref = erlang:start_timer(T, Self, tick),
    receive {timeout, Ref, tick} -> [{recv, Self, {timeout, '$ref', tick}} | Log] end;
act({linked, Child = #{id := Id}, Msgs}, Log, _Parent, Col) ->
    Self = self(),
    Trapping = process_flag(trap_exit, true),
    Args = [Id, Child, Self, Col],
    C = spawn_link(?MODULE, proc, Args),
    L1 = send_all(C, Msgs, [{spawn, Self, C, {?MODULE, proc, Args}} | Log]),
    Exit = receive {'EXIT', C, _} = E -> E end,
    process_flag(trap_exit, Trapping),
    [{recv, Self, Exit} | L1];
act({watched, Child = #{id := Id}, Msgs}, Log, _Parent, Col) ->
    Self = self(),
    Args = [Id, Child, Self, Col],
    {C, Ref} = spawn_monitor(?MODULE, proc, Args),
    L1 = send_all(C, Msgs, [{spawn, Self, C, {?MODULE, proc, Args}} | Log]),
    Reason = receive {'DOWN', Ref, process, C, R} -> R end,
    [{recv, Self, {'DOWN', '$ref', process, C, Reason}} | L1];
act({sync, Child = #{id := Id}, Msgs, N}, Log, _Parent, Col) ->
    {C, L1} = spawn_child(Id, Child, Col, Log),
    L2 = send_all(C, Msgs, L1),
    lists:foldl(fun(_, L) -> receive {r, C, _} = M -> [{recv, self(), M} | L] end end,
                L2, lists:seq(1, N));
act(cut, Log, _Parent, _Col) ->
    _ = erlang:trace(self(), false, [all]),
    Log;
act({cut, Kind}, Log, _Parent, _Col) ->
    _ = erlang:trace(self(), false, cut_flags(Kind)),
    [{cut, self(), Kind} | Log];
act(recv, Log, _Parent, _Col) ->
    receive {m, _} = M -> [{recv, self(), M} | Log] end;
act({reply, Vs}, Log, Parent, _Col) ->
    lists:foldl(fun(V, L) ->
                        M = {r, self(), V},
                        Parent ! M,
                        [{send, self(), Parent, M} | L]
                end, Log, Vs);
act({timeout, T}, Log, _Parent, _Col) ->
    %% A clause that no message of the system matches: the receive can only time out.
    receive {oracle_never} -> Log after T -> [{timeout, self()} | Log] end;
act({sleep, T, timer}, Log, _Parent, _Col) ->
    ok = timer:sleep(T),
    [{timeout, self()} | Log];
act({sleep, T, bare}, Log, _Parent, _Col) ->
    receive after T -> ok end,
    [{timeout, self()} | Log];
act({gen, Id, Calls, Stop}, Log, _Parent, Col) ->
    Self = self(),
    Arg = {srv, Id, Stop, Col},
    MFA = {?MODULE, init, [Arg]},
    {ok, S} = gen_server:start(?MODULE, Arg, []),
    L1 = [{recv, Self, {ack, S, {ok, S}}}, {spawn, Self, S, MFA} | Log],
    L2 = lists:foldl(fun(K, L) when K =:= idle; K =:= hold ->
                             ok = gen_server:cast(S, {K, Self}),
                             M = receive {idled, S} = Idled -> Idled end,
                             [{recv, Self, M}, {send, Self, S, {'$gen_cast', {K, Self}}} | L];
                        (V, L) ->
                             {a, V} = gen_server:call(S, {q, V}),
                             [{recv, Self, {[alias | '$ref'], {a, V}}},
                              {send, Self, S, {'$gen_call', {Self, [alias | '$ref']}, {q, V}}}
                              | L]
                     end, L1, Calls),
    ok = gen_server:cast(S, stop),
    [{send, Self, S, {'$gen_cast', stop}} | L2].

cut_flags(own_procs) -> [send, 'receive', procs];
cut_flags(no_inherit) -> [set_on_spawn].

spawn_child(Id, Child, Col, Log) ->
    Self = self(),
    Args = [Id, Child, Self, Col],
    C = spawn(?MODULE, proc, Args),
    {C, [{spawn, Self, C, {?MODULE, proc, Args}} | Log]}.

send_all(C, Msgs, Log) ->
    lists:foldl(fun(V, L) ->
                        M = {m, V},
                        C ! M,
                        [{send, self(), C, M} | L]
                end, Log, Msgs).

%%% The gen_server: its log is kept in its state, newest first.

%% @private
-spec init({srv, term(), term(), pid()}) -> {ok, map()}.
init(Arg = {srv, _, _, _}) ->
    Self = self(),
    %% The first ancestor: the starter's name if it has one (it is alive: it waits for
    %% this server's ack), as riarc names it, its pid.
    Starter = case get('$ancestors') of
                  [Name | _] when is_atom(Name) -> whereis(Name);
                  [Pid | _] -> Pid
              end,
    %% The ack is sent right after init/1 returns.
    Log = [{send, Self, Starter, {ack, Self, {ok, Self}}},
           {init, Self, Starter, {?MODULE, init, [Arg]}}],
    {ok, #{arg => Arg, log => Log}}.

%% @private
-spec handle_call({q, term()}, {pid(), term()}, map()) -> {reply, {a, term()}, map()}.
handle_call(Req = {q, V}, {From, _}, S = #{log := Log}) ->
    Self = self(),
    R = {[alias | '$ref'], {a, V}},
    {reply, {a, V}, S#{log := [{send, Self, '$ref', R},
                                {recv, Self, {'$gen_call', {From, [alias | '$ref']}, Req}} | Log]}}.

%% @private
-spec handle_cast(stop | {idle | hold, pid()}, map()) ->
          {stop, term(), map()} | {noreply, map(), 0}.
handle_cast(stop, S = #{arg := {srv, _, Stop, Col}, log := Log}) ->
    Col ! {log, self(), lists:reverse([{recv, self(), {'$gen_cast', stop}} | Log])},
    {stop, Stop, S};
handle_cast(Req = {idle, Client}, S = #{log := Log}) ->
    {noreply, S#{log := [{recv, self(), {'$gen_cast', Req}} | Log], idle => {Client, timeout}}, 0};
handle_cast(Req = {hold, Client}, S = #{log := Log}) ->
    Self = self(),
    Self ! timeout,
    {noreply, S#{log := [{send, Self, Self, timeout}, {recv, Self, {'$gen_cast', Req}} | Log],
                 idle => {Client, message}}, 0}.

%% @private The timeout asked for by `idle', or the message `timeout' of `hold'.
-spec handle_info(timeout, map()) -> {noreply, map()}.
handle_info(timeout, S = #{idle := {Client, What}, log := Log}) ->
    Self = self(),
    Event = case What of
                timeout -> {timeout, Self};
                message -> {recv, Self, timeout}
            end,
    Client ! {idled, Self},
    {noreply, maps:remove(idle, S#{log := [{send, Self, Client, {idled, Self}}, Event | Log]})}.
