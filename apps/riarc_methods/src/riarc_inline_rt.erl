%% @doc The run-time side of inline monitoring (000 fig. 1a): what the code woven by
%% {@link riarc_inline_transform} calls at a process's spawn, send, receive and exit
%% points. The monitor runs here, in the system's own process, in lock-step with it.
%%
%% Woven code behaves exactly like the original when no inline run is active (one
%% `persistent_term' read per spawn, one process-dictionary read per send or receive), so
%% a woven module can stay loaded between runs.
%%
%% Where the monitor lives: in the process dictionary of the process it monitors, under
%% the single key `{riarc_inline, monitor}'. The woven program's own data flow cannot carry
%% it without rewriting every function into continuation-passing style; the process
%% dictionary is the process's own memory, which is the point of inlining.
%% ```
%% 1> riarc_inline:instrument([riarc_demo_pqr]).
%% ok
%% 2> riarc_inline_rt:active().
%% false
%% '''
-module(riarc_inline_rt).

-export([send/2, recv/1, timeout/0, sleep/1, spawn/2, child/5, gen_init/2, gen_init_done/1, gen_exit/1,
         gen_start/2, gen_call/2, gen_cast/2, gen_reply/2, gen_handled/2, gen_returned/1,
         gen_info/1, gen_fired/1, gen_unhandled/3, gen_timer_tag/0, active/0, activate/1, deactivate/0,
         woven/1, woven_attribute/0]).

%% gen tags a call with an alias as `[alias | Ref]', an improper list on purpose; a
%% woven call shows its request in that shape.
-dialyzer({no_improper_lists, gen_call/2}).

-define(KEY, {riarc_inline, monitor}).
-define(RUN, {riarc_inline, run}).
%% While a gen_server callback's result asked for a timeout: the timer standing for it
%% (gen_timeout/1). From the timer's message until the handle_info(timeout, _) it leads
%% to starts: that this call is gen_server's own timeout firing (gen_fired/1).
-define(GEN_TIMEOUT, {riarc_inline, gen_timeout}).
-define(GEN_FIRED, {riarc_inline, gen_fired}).
%% The message of that timer: `{timeout, Ref, ?GEN_TIMER}' (erlang:start_timer/3).
-define(GEN_TIMER, '$riarc_inline_gen_timeout').

-type run() :: #{collector := pid(), lambda := riarc_lambda:t(), send := boolean(),
                 recv := boolean(), explain := non_neg_integer(),
                 max_payload := pos_integer() | infinity}.
%% The longest `after' the VM takes (timer:sleep/1 sleeps longer in several).
-define(MAX_AFTER, 4294967295).
-export_type([run/0]).

%% The per-process state: its monitor's analysis, as a partition's runs under riarc
%% (riarc_analysis_core: the same verdicts, reasons why, explanations and cut of a
%% message over max_payload), or `decided' once it gave its verdict.
-record(process_monitor, {analysis :: riarc_analysis_core:t() | decided,
            mfa :: riarc_event:mfa_args(),
            run :: run(),
            %% The first child Λ left in this process's partition, spawned while its
            %% monitor had no verdict: outline, that child's events reach this monitor;
            %% inline, nothing carries them here, so a verdict from then on is reached on
            %% part of the partition's trace (unmonitored_child/2).
            unseen = none :: none | #{child := pid() | undefined, mfa := riarc_event:mfa_args() | undefined}}).

%%% Runs ---------------------------------------------------------------------------------

%% @doc True while an inline run is active on this node.
-spec active() -> boolean().
active() -> persistent_term:get(?RUN, undefined) =/= undefined.

%% @doc Makes woven code report to Run (one inline run per node at a time).
-spec activate(run()) -> ok.
activate(Run) -> persistent_term:put(?RUN, Run).

-spec deactivate() -> ok.
deactivate() ->
    _ = persistent_term:erase(?RUN),
    ok.

run() -> persistent_term:get(?RUN, undefined).

%%% Send and receive ---------------------------------------------------------------------

%% @doc `To ! Msg', then the send event. Like `!', returns Msg (and fails as it does).
%% A send to a name nobody holds fails after the VM's tracing has shown it (OTP 25):
%% its event comes before the failure, as outline.
-spec send(term(), term()) -> term().
send(To, Msg) ->
    try To ! Msg
    catch
        error:badarg:Stack when is_atom(To); is_tuple(To), tuple_size(To) =:= 2 ->
            sent(To, Msg),
            erlang:raise(error, badarg, Stack)
    end,
    sent(To, Msg),
    Msg.

sent(To, Msg) ->
    case get(?KEY) of
        M = #process_monitor{run = #{send := true}} -> step({send, self(), To, Msg}, M);
        _ -> ok
    end.

%% @doc The receive event of a message a woven receive clause has just taken.
-spec recv(term()) -> ok.
recv(Msg) ->
    case get(?KEY) of
        M = #process_monitor{run = #{recv := true}} -> step({recv, self(), Msg}, M);
        _ -> ok
    end.

%% @doc The timeout event of a receive whose `after' fired, as riarc's tracing shows it
%% (`{timeout, Pid}', with the receive events).
-spec timeout() -> ok.
timeout() ->
    case get(?KEY) of
        M = #process_monitor{run = #{recv := true}} -> step({timeout, self()}, M);
        _ -> ok
    end.

%% @doc A woven `timer:sleep(T)': OTP 25's sleep, whose receives with only an `after'
%% riarc's tracing shows as timeouts, each with its timeout event (one, unless T is past
%% the longest `after' the VM takes). A T the receive refuses raises as it does, before
%% any event.
-spec sleep(timeout()) -> ok.
sleep(T) when is_integer(T), T > ?MAX_AFTER ->
    receive after ?MAX_AFTER -> timeout() end,
    sleep(T - ?MAX_AFTER);
sleep(T) ->
    receive after T -> timeout() end.

%%% Spawn and exit -----------------------------------------------------------------------

%% @doc A woven `erlang:Kind(Args...)' or `proc_lib:Kind(Args...)' (Kind as written, e.g.
%% `spawn_link'), for the local forms. Λ is asked in the parent, with the logical MFA
%% riarc would see; a selected child is registered with the run before the parent can
%% exit, then starts with its monitor and its init event.
-spec spawn({erlang | proc_lib, atom()}, list()) -> term().
spawn({Mod, Kind}, Args) ->
    case {run(), split(Args)} of
        {undefined, _} -> apply(Mod, Kind, Args);
        {_, remote} -> remote_spawn(Mod, Kind, Args);
        {Run, {Body, MFA, Opts}} -> spawn_child(Run, Mod, Kind, Body, MFA, Opts)
    end.

%% A start on another node, left alone: outline, riarc follows it or says its trace is
%% lost; inline, this process's monitor cannot see it (unseen/3).
remote_spawn(Mod, Kind, Args = [_Node | Rest]) ->
    Result = apply(Mod, Kind, Args),
    MFA = case Rest of
              [M, F, A | _] when is_atom(M), is_atom(F), is_list(A) -> {M, F, A};
              [Fun | _] when is_function(Fun, 0) -> fun_mfa(Fun);
              _ -> undefined
          end,
    case get(?KEY) of
        M1 = #process_monitor{} -> unseen(started(Result), MFA, M1);
        undefined -> ok
    end,
    Result.

%% The process a spawn started: a spawn_monitor or a spawn_opt with `monitor' answers
%% {Pid, Ref}.
started({Pid, _Ref}) when is_pid(Pid) -> Pid;
started(Pid) when is_pid(Pid) -> Pid.

%% {Body, LogicalMFA, ExtraArgs} of a local spawn's arguments; remote spawns (a node as the
%% first argument) are left alone.
split([Fun]) when is_function(Fun, 0) -> {Fun, fun_mfa(Fun), []};
split([Fun, Opts]) when is_function(Fun, 0), is_list(Opts) -> {Fun, fun_mfa(Fun), [Opts]};
split([M, F, A]) when is_atom(M), is_atom(F), is_list(A) ->
    {fun() -> apply(M, F, A) end, {M, F, A}, []};
split([M, F, A, Opts]) when is_atom(M), is_atom(F), is_list(A), is_list(Opts) ->
    {fun() -> apply(M, F, A) end, {M, F, A}, [Opts]};
split([Node | Rest]) when Node =:= node() -> split(Rest);
split(_) -> remote.

%% The MFA riarc's Λ sees for a spawned fun.
fun_mfa(Fun) -> riarc_lambda:logical_mfa({erlang, apply, [Fun, []]}).

spawn_child(Run = #{lambda := L, collector := C}, Mod, Kind, Body, MFA, Opts) ->
    Parent = self(),
    Mon = case riarc_lambda:lookup(L, MFA) of
              {ok, Mon0} -> Mon0;
              undefined -> undefined;
              {error, Reason} -> C ! {riarc_inline_error, {riarc_spec_error, MFA, Reason}}, undefined
          end,
    Wrapped = fun() -> ?MODULE:child(Run, Parent, MFA, Mon, Body) end,
    Result = apply(Mod, Kind, [Wrapped | Opts]),
    Child = started(Result),
    %% Registered, monitored or not, before anything else the parent does, so before the
    %% parent's own end (one sender's messages arrive in order): the run cannot see every
    %% process gone while this one is still to come.
    C ! {riarc_inline_up, Child, MFA, Mon =/= undefined},
    case get(?KEY) of
        M = #process_monitor{} ->
            step({spawn, Parent, Child, MFA}, M),
            _ = Mon =:= undefined andalso unseen(Child, MFA, get(?KEY)),
            ok;
        undefined -> ok
    end,
    Result.

%% The child joins this process's partition, whose monitor cannot see it (the record's
%% `unseen'). A verdict reached at the spawn or before was reached on the whole trace.
unseen(Child, MFA, M = #process_monitor{analysis = An, unseen = none}) when An =/= decided ->
    put(?KEY, M#process_monitor{unseen = #{child => Child, mfa => MFA}});
unseen(_Child, _MFA, _M) ->
    ok.

%% The one promise, inline: a partition with a child the monitor could not see gets no
%% accept (nor reject, nor none) on the part it saw: inconclusive, saying which child and
%% what the monitor would have said.
unmonitored_child(Entry, none) ->
    Entry;
unmonitored_child(Entry = #{verdict := V}, Unseen) when V =/= error ->
    (maps:remove(why, Entry))#{verdict => inconclusive,
                               reason => {unmonitored_child, Unseen#{verdict_on_partial_trace => V}}};
unmonitored_child(Entry, _Unseen) ->
    Entry.

%% @private The body of a spawned child: its monitor, its init event, its life, its exit.
%% The exit reason is the one the process would have had, and is raised again with the
%% same class, so that links, monitors and crash reports see the same thing.
-spec child(run(), pid(), riarc_event:mfa_args(), riarc_monitor:monitor() | undefined,
            fun(() -> term())) -> term().
child(_Run, _Parent, _MFA, undefined, Body) ->
    Body();
child(Run, Parent, MFA, Mon, Body) ->
    put(?KEY, process_monitor(Run, MFA, Mon)),
    step({init, self(), Parent, MFA}, get(?KEY)),
    try Body() of
        Value -> exited(normal), Value
    catch
        exit:Reason:Stack -> exited(Reason), erlang:raise(exit, Reason, Stack);
        error:Reason:Stack -> exited({Reason, Stack}), erlang:raise(error, Reason, Stack);
        throw:Term:Stack -> exited({{nocatch, Term}, Stack}), erlang:raise(throw, Term, Stack)
    end.

exited(Reason) ->
    case get(?KEY) of
        M = #process_monitor{} -> step({exit, self(), Reason}, M), done(get(?KEY));
        undefined -> ok
    end.

%% The exit point: a monitor still without a verdict ends with the partition (none, or
%% inconclusive after a truncated message), as riarc's does.
done(#process_monitor{run = #{collector := C}, mfa = MFA, analysis = An, unseen = Unseen}) ->
    erase(?KEY),
    Ended = case An of
                decided -> decided;
                _ -> unmonitored_child(riarc_analysis_core:entry(riarc_analysis_core:finish(An)), Unseen)
            end,
    C ! {riarc_inline_done, self(), MFA, Ended},
    ok.

process_monitor(Run = #{explain := K}, MFA, Mon) ->
    #process_monitor{analysis = riarc_analysis_core:new(self(), K, {self(), MFA}, Mon), mfa = MFA, run = Run}.

%%% gen_server callback modules ----------------------------------------------------------

%% @doc Woven at the top of a gen_server's init/1: the process was started by OTP code,
%% which is not woven, so it takes its own monitor for `{Module, init, [Arg]}' (the MFA
%% riarc's Λ sees for it) and registers itself, synchronously, before init can return.
-spec gen_init(module(), term()) -> ok.
gen_init(Module, Arg) ->
    case {run(), get(?KEY)} of
        {undefined, _} -> ok;
        {_, #process_monitor{}} -> ok;
        {Run = #{lambda := L, collector := C}, undefined} ->
            MFA = {Module, init, [Arg]},
            case riarc_lambda:lookup(L, MFA) of
                {ok, Mon} ->
                    Ref = erlang:monitor(process, C),
                    C ! {riarc_inline_up, self(), MFA, {self(), Ref}},
                    receive
                        {Ref, registered} -> erlang:demonitor(Ref, [flush]);
                        {'DOWN', Ref, process, C, _} -> ok
                    end,
                    put(?KEY, process_monitor(Run, MFA, Mon)),
                    step({init, self(), parent(), MFA}, get(?KEY));
                _ -> ok
            end
    end.

%% proc_lib keeps the parent in the process dictionary; it is the spawner riarc would name.
parent() ->
    case get('$ancestors') of
        [P | _] when is_pid(P) -> P;
        [Name | _] when is_atom(Name) -> whereis(Name);
        _ -> undefined
    end.

%% @doc Woven around a gen_server's init/1 body, with its result: the ack that proc_lib
%% sends the starter once init/1 returns (OTP's code, not woven), as riarc's tracing
%% shows it: `{ack, Self, {ok, Self}}', `{ack, Self, {error, Reason}}' for `{stop,
%% Reason}', `{ack, Self, ignore}' for `ignore'. Returns Result (a timeout it asks for
%% taken out, gen_timeout/1).
-spec gen_init_done(term()) -> term().
gen_init_done(Result) ->
    Ack = case Result of
              {ok, _} -> {ok, self()};
              {ok, _, _} -> {ok, self()};
              {stop, Reason} -> {error, Reason};
              ignore -> ignore;
              _ -> none
          end,
    case {Ack, get(?KEY)} of
        {none, _} -> ok;
        {_, M = #process_monitor{run = #{send := true}}} -> step({send, self(), parent(), {ack, self(), Ack}}, M);
        _ -> ok
    end,
    gen_timeout(Result).

%% @doc A woven `gen_server:start/3,4', `start_link/3,4' or `start_monitor/3,4': the start,
%% then what OTP's code did for this process, as riarc's tracing shows it: the spawn of
%% the server (`{Module, init, [Arg]}', the MFA Λ sees) and the receive of its ack. The
%% server runs its own monitor (gen_init/2) if Λ selects it; if not, outline it would be
%% in this process's partition, whose monitor cannot see it here (unseen/3). A start that
%% failed leaves no pid to name: this process's monitor did not see the server it started.
-spec gen_start(atom(), list()) -> term().
gen_start(F, Args) ->
    Result = apply(gen_server, F, Args),
    case get(?KEY) of
        undefined -> ok;
        M = #process_monitor{run = Run = #{lambda := L}} ->
            MFA = {gen_module(Args), init, [gen_arg(Args)]},
            case Result of
                {ok, Started} ->
                    Pid = started(Started),
                    step({spawn, self(), Pid, MFA}, M),
                    _ = maps:get(recv, Run) andalso step({recv, self(), {ack, Pid, {ok, Pid}}}, get(?KEY)),
                    case riarc_lambda:lookup(L, MFA) of
                        {ok, _} -> ok;
                        _ -> unseen(Pid, MFA, get(?KEY))
                    end;
                _ ->
                    unseen(undefined, MFA, M)
            end
    end,
    Result.

gen_module([Mod, _Arg, _Opts]) -> Mod;
gen_module([_Name, Mod, _Arg, _Opts]) -> Mod.

gen_arg([_Mod, Arg, _Opts]) -> Arg;
gen_arg([_Name, _Mod, Arg, _Opts]) -> Arg.

%% @doc Woven at the top of a gen_server's terminate/2: the exit event.
-spec gen_exit(term()) -> ok.
gen_exit(Reason) ->
    exited(Reason),
    ok.

%% @doc A woven gen_server:call/2,3: the request as sent and the reply as received, in
%% the shapes gen_server's own messages have ({'$gen_call', {self(), Tag}, Request} and
%% {Tag, Reply}); Tag is a fresh reference standing for gen's internal one.
-spec gen_call(atom(), list()) -> term().
gen_call(F, Args = [Server, Request | Rest]) ->
    case get(?KEY) of
        undefined -> apply(gen_server, F, Args);
        M = #process_monitor{run = Run} ->
            %% gen's own shapes (OTP 25): a name is looked up first (one nobody holds:
            %% the call exits, nothing is sent); a call to a local pid without a timeout
            %% tags the request with its monitor's reference, any other with an alias.
            %% A call to itself exits before anything is sent.
            To = where(Server),
            Ref = make_ref(),
            Tag = case Rest of
                      [infinity] when is_pid(To), node(To) =:= node() -> Ref;
                      _ -> [alias | Ref]
                  end,
            Sent = To =/= undefined andalso To =/= self(),
            _ = maps:get(send, Run) andalso Sent
                andalso step({send, self(), To, {'$gen_call', {self(), Tag}, Request}}, M),
            Start = erlang:monotonic_time(millisecond),
            try apply(gen_server, F, Args) of
                Reply ->
                    _ = maps:get(recv, Run) andalso recv_after_call(Tag, Reply),
                    Reply
            catch
                exit:{Why, {gen_server, F, _}} = Exit:Stack when Sent ->
                    _ = maps:get(recv, Run) andalso call_failed(Why, To, Ref, timeout_of(Rest), Start),
                    erlang:raise(exit, Exit, Stack)
            end
    end.

timeout_of([]) -> 5000;
timeout_of([T]) -> T.

%% What gen's receive took when a call that sent its request exits (OTP 25's
%% gen:do_call/4), as riarc's tracing shows it: its `after' fired, and then the `after 0'
%% that looks for a reply once more (two timeout events); or the server's 'DOWN', under
%% the reference the tag holds, `noconnection' for a node gone (the call exits with
%% {nodedown, Node}). A server that exits with reason `timeout' exits the call alike: a
%% call that ends with it before its time is up was ended by the 'DOWN'.
call_failed(Why, To, Ref, T, Start) ->
    Elapsed = erlang:monotonic_time(millisecond) - Start,
    case Why of
        timeout when is_integer(T), Elapsed >= T -> timeout(), timeout();
        {nodedown, _} when not is_pid(To); node(To) =/= node() -> recv({'DOWN', Ref, process, To, noconnection});
        _ -> recv({'DOWN', Ref, process, To, Why})
    end.

%% The process a call goes to, as gen:call/4 finds it.
where(Pid) when is_pid(Pid) -> Pid;
where(Name) when is_atom(Name) -> whereis(Name);
where({global, Name}) -> global:whereis_name(Name);
where({via, Mod, Name}) -> Mod:whereis_name(Name);
where({Name, Node}) when is_atom(Name), Node =:= node() -> whereis(Name);
where(Remote) -> Remote.

recv_after_call(Tag, Reply) ->
    case get(?KEY) of
        M = #process_monitor{} -> step({recv, self(), {Tag, Reply}}, M);
        undefined -> ok
    end.

%% @doc A woven gen_server:cast/2: the message as sent. A pid, a name or `{Name, Node}'
%% is sent to as it is (a name nobody holds too: the send is shown, then fails, and cast
%% ignores the failure); `{global, Name}' and `{via, Mod, Name}' to the process the
%% registry gives, and not at all when it gives none.
-spec gen_cast(term(), term()) -> ok.
gen_cast(Server, Msg) ->
    ok = gen_server:cast(Server, Msg),
    To = case Server of
             {global, _} -> where(Server);
             {via, _, _} -> where(Server);
             _ -> Server
         end,
    _ = To =/= undefined andalso sent(To, {'$gen_cast', Msg}),
    ok.

%% @doc A woven gen_server:reply/2: the reply as sent to the caller.
-spec gen_reply(term(), term()) -> ok.
gen_reply(From, Reply) ->
    ok = gen_server:reply(From, Reply),
    replied(From, Reply),
    ok.

%% @doc Woven around a gen_server's handle_call/3 body, with its result: the reply
%% gen_server sends for it (OTP's code, not woven), as gen_server:reply/2 sends it.
%% Returns Result (a timeout it asks for taken out, gen_timeout/1).
-spec gen_handled(term(), term()) -> term().
gen_handled(From, Result) ->
    case Result of
        {reply, Reply, _} -> replied(From, Reply);
        {reply, Reply, _, _} -> replied(From, Reply);
        {stop, _, Reply, _} -> replied(From, Reply);
        _ -> ok
    end,
    gen_timeout(Result).

%% @doc Woven around a gen_server's handle_cast/2, handle_info/2 and handle_continue/2
%% bodies, with their result. Returns Result, or, when it asks for a timeout, Result
%% without it and a timer standing for it (gen_timeout/1).
-spec gen_returned(term()) -> term().
gen_returned(Result) ->
    gen_timeout(Result).

%% @doc Woven at the top of a gen_server's handle_call/3, handle_cast/2 and
%% handle_info/2: the message gen_server took for the callback (`{'$gen_call', From,
%% Request}', `{'$gen_cast', Msg}' or the info), or the timeout event when this call of
%% handle_info(timeout, _) is gen_server's own timeout firing (gen_fired/1), as riarc's
%% tracing shows it (`{timeout, Self}': gen_server's receive took its `after').
%%
%% A message taken ends the timeout the last callback asked for, as in gen_server's
%% receive. The timer's message may already be on its way: it is then stale, and
%% gen_fired/1 tells it apart by its reference.
-spec gen_info(term()) -> ok.
gen_info(Info) ->
    case erase(?GEN_FIRED) of
        true when Info =:= timeout ->
            timeout();
        _ ->
            _ = case erase(?GEN_TIMEOUT) of
                    undefined -> ok;
                    Timer -> erlang:cancel_timer(Timer, [{async, true}, {info, false}])
                end,
            recv(Info)
    end.

%% @doc Woven as handle_info/2's first clause, for the message of the timer that stands
%% for gen_server's timeout (gen_timeout/1): true when Timer is the pending one, which
%% handle_info(timeout, _) then handles as gen_server would have; false for a stale one,
%% which the clause drops.
-spec gen_fired(reference()) -> boolean().
gen_fired(Timer) ->
    case get(?GEN_TIMEOUT) of
        Timer ->
            erase(?GEN_TIMEOUT),
            put(?GEN_FIRED, true),
            true;
        _ ->
            false
    end.

%% @doc The last element of the message of the timer that stands for gen_server's timeout
%% (`{timeout, Ref, Tag}'), for the woven clause that takes it.
-spec gen_timer_tag() -> atom().
gen_timer_tag() -> ?GEN_TIMER.

%% @doc The handle_info/2 woven into a gen_server module without one: the message's
%% event, then what gen_server does for a module without handle_info/2 (OTP 25): a
%% warning, and the state kept. Without it, inline would not see what such a server is
%% sent, nor its timeout firing, both of which riarc's tracing shows.
-spec gen_unhandled(module(), term(), term()) -> {noreply, term()}.
gen_unhandled(Module, Info, State) ->
    gen_info(Info),
    logger:warning(#{label => {gen_server, no_handle_info}, module => Module, message => Info},
                   #{domain => [otp], report_cb => fun gen_server:format_log/2,
                     error_logger => #{tag => warning_msg, report_cb => fun gen_server:format_log/1}}),
    {noreply, State}.

%% A callback's result that sets gen_server's timeout (an integer; infinity sets none),
%% in a process whose monitor still looks at receives: the timeout is taken out of the
%% result and a timer of the same length stands for it, whose message handle_info/2's
%% woven first clause turns into the callback gen_server would have made.
%%
%% Why: a receive `after' and a message `timeout' both call handle_info(timeout, _), and
%% no clock tells them apart (a message that came after the time was up can still be
%% taken first). riarc's tracing tells them apart by the sender; inline, the timer's
%% message is the only way to know which one it was. Gen_server's own timeout is kept
%% everywhere else, so woven code is the original outside a run.
gen_timeout(Result) ->
    case get(?KEY) of
        #process_monitor{analysis = An, run = #{recv := true}} when An =/= decided ->
            case Result of
                {ok, State, T} when is_integer(T) -> timer(T), {ok, State};
                {reply, Reply, State, T} when is_integer(T) -> timer(T), {reply, Reply, State};
                {noreply, State, T} when is_integer(T) -> timer(T), {noreply, State};
                _ -> Result
            end;
        _ ->
            Result
    end.

timer(T) ->
    put(?GEN_TIMEOUT, erlang:start_timer(T, self(), ?GEN_TIMER)).

%% The send event of a reply, as gen:reply/2 makes it (OTP 25): to the caller's alias
%% when the tag is one, else to the caller.
replied({To, Tag}, Reply) ->
    Dest = case Tag of
               [alias | Alias] when is_reference(Alias) -> Alias;
               [[alias | Alias] | _] when is_reference(Alias) -> Alias;
               _ -> To
           end,
    case get(?KEY) of
        M = #process_monitor{run = #{send := true}} -> step({send, self(), Dest, {Tag, Reply}}, M);
        _ -> ok
    end.

%%% Analysis -----------------------------------------------------------------------------

%% ANALYSEEVT (App. C.5.2), here in the process itself. A verdict is irrevocable: it is
%% reported at once and the monitor dropped; a crashing monitor gives `error' and never
%% disturbs the process (riarc_monitor:decide/2 catches everything).
step(_E, #process_monitor{analysis = decided}) ->
    ok;
step(E, M = #process_monitor{analysis = An, run = #{collector := C, max_payload := Max}}) ->
    case riarc_analysis_core:step(riarc_event:truncate(E, Max), An) of
        {next, An1, _} ->
            put(?KEY, M#process_monitor{analysis = An1});
        {done, _, Told} ->
            C ! {riarc_inline_verdict, self(), unmonitored_child(riarc_analysis_core:entry(Told), M#process_monitor.unseen)},
            put(?KEY, M#process_monitor{analysis = decided})
    end,
    ok.

%% @doc The attribute riarc_inline_transform gives a module it wove.
-spec woven_attribute() -> atom().
woven_attribute() -> riarc_inline_woven.

%% @doc Whether the code of module M that is loaded now was woven for inline monitoring.
-spec woven(module()) -> boolean().
woven(M) when is_atom(M) ->
    case code:is_loaded(M) of
        {file, _} ->
            try M:module_info(attributes) of
                Attrs -> lists:keymember(woven_attribute(), 1, Attrs)
            catch error:_ -> false
            end;
        false -> false
    end;
woven(_) -> false.
