%% @doc A routing table as the VM's tracer: hands a traced process from one tracer
%% process (its owner) to another without ever changing the VM's tracer, and tells the
%% previous owner exactly how many of the process's events it was sent.
%%
%% Every process traced through a table has the same VM tracer, this module as an
%% `erl_tracer' with the table as its state. Its NIF callback looks the tracee up in the
%% table and sends the event to the tracee's owner, counting it. `switch/3' changes the
%% owner and returns that count, atomically with the sends (one lock), so the previous
%% owner waits until it has that many events of the process: no clock, no assumption on
%% the order of messages from different senders (on OTP 25 a change of VM tracer lets
%% earlier events reach the old tracer after `trace_delivered/1' answered, and messages
%% from different senders can overtake each other). A child spawned by a traced process
%% inherits the tracer (`set_on_spawn') and, in the table, the owner that receives the
%% parent's spawn event. An exit event is forwarded, then the entry is deleted.
%%
%% Events an owner receives, for a traced `P':
%% `{trace, P, spawn, Child, MFA}', `{trace, P, exit, Reason}',
%% `{trace, P, send, Msg, To}', `{trace, P, send_to_non_existing_process, Msg, To}',
%% `{trace, P, \'receive\', Msg}', `{trace, P, receive_timeout}' (an `after' fired),
%% other enabled events in the VM's shape `{trace, P, Tag, Term}' or
%% `{trace, P, Tag, Term, Extra}'. `spawned' events are not sent: they are produced in the
%% parent's context, so not ordered with the child's own events; a consumer derives the
%% child's start from the parent's spawn event. Timestamps are not supported.
%% ```
%% 1> {ok, T} = riarc_route:new(self()).
%% 2> P = spawn(fun() -> receive go -> ok end end).
%% 3> riarc_route:trace(T, P, self(), [procs, send, 'receive']).
%% ok
%% 4> P ! go, flush().
%% Shell got {trace,<0.88.0>,'receive',go}
%% Shell got {trace,<0.88.0>,exit,normal}
%% 5> riarc_route:stop(T).
%% ok
%% '''
%% If the NIF (priv/riarc_route_nif.so) cannot be loaded, the module still loads,
%% `available/0' is false and `new/1' returns `{error, nif_not_loaded}'.
-module(riarc_route).
%% An erl_tracer module (enabled/3 and trace/5 below). No -behaviour(erl_tracer): OTP 25's
%% erl_tracer declares no callbacks, so the attribute would only warn.

-export([available/0, new/1, new/2, install_receive_pattern/0, receive_pattern/1, trace/4, switch/3,
         clear/2, stop/1, stats/1, format_error/1]).
%% erl_tracer callbacks (NIFs).
-export([enabled/3, trace/5]).
-export_type([table/0, error_reason/0, stats/0]).

-on_load(init/0).

-nifs([nif_loaded/0, new_table/3, insert/3, switch/3, remove/2, stop/1, stats/1,
       enabled/3, trace/5]).

%% OTP 25's specs of erlang:trace_pattern/3 (no 'receive') and erlang:trace_info/2 (no
%% {tracer, {Module, State}}) disagree with the VM; the tests check what the VM does.
-dialyzer({nowarn_function, clear/2}).

-opaque table() :: reference().
-type error_reason() :: nif_not_loaded
                      | nomem
                      | {already_traced, pid(), Tracer :: term()}
                      | {noproc, pid()}
                      | gone.
-type stats() :: #{entries := non_neg_integer(),
                   events := non_neg_integer(),
                   orphans := non_neg_integer()}.

%% The receive pattern. The VM matches it against [Node, Sender, Msg]; a receive timeout
%% (and a timer's message) is [clock_service, undefined, timeout], a port's message
%% [Port, undefined, Msg], a process's [node(), Pid, Msg] (checked on OTP 25). So the
%% sender alone cannot tell a timeout from a port's message; the node can. Only clock
%% messages get a match_spec_result (clock_service); every other receive is traced with
%% none, which keeps the callback's Opts map small.
-define(CLOCK_CLAUSE, {['$1', '_', '_'], [{'=:=', '$1', clock_service}],
                       [{message, clock_service}]}).
-define(RECEIVE_PATTERN, [?CLOCK_CLAUSE, {'_', [], []}]).
%% A process spawned from another node (spawn/4, erpc) takes its call's arguments as its
%% first message, a list from that node ([Node, undefined, Args], checked on OTP 25):
%% always traced, whatever the sessions' patterns keep, so that a session adopting new
%% processes learns the call before Λ is asked (riarc_backend_new_processes). The VM
%% names no sender for any message from another node, so a list a process there sends
%% is kept too: a real event, which the sessions' patterns may have left out only because
%% every monitor state maps it to itself (riarc_shml_patterns); fed to a monitor, it
%% changes no verdict.
-define(ARGS_CLAUSE, {['$1', undefined, '$2'],
                      [{is_atom, '$1'}, {'=/=', '$1', {node}}, {'=/=', '$1', clock_service},
                       {is_list, '$2'}],
                      []}).

init() ->
    Dir = case code:priv_dir(riarc) of
              {error, bad_name} ->
                  %% Not run as an application (a bare code path): priv beside ebin.
                  filename:join(filename:dirname(filename:dirname(code:which(?MODULE))), "priv");
              D -> D
          end,
    %% A missing or broken NIF must not stop the module from loading: riarc then falls
    %% back to its process-tracer backend (available() is false).
    _ = erlang:load_nif(filename:join(Dir, "riarc_route_nif"), 0),
    ok.

%% @doc True if the NIF is loaded and tables can be made.
-spec available() -> boolean().
available() ->
    try nif_loaded() catch error:nif_not_loaded -> false end.

%% @doc A new routing table. Events of tracees without an entry go to `DefaultOwner'
%% (counted as orphans). Also installs the node-global receive pattern
%% (`install_receive_pattern/0'), which receive timeouts need to be recognised.
-spec new(pid()) -> {ok, table()} | {error, error_reason()}.
new(DefaultOwner) ->
    new(DefaultOwner, #{}).

%% @doc As `new/1'. Option `probe => true' (tests only) makes the callback send, for
%% every event including `spawned', `{riarc_probe, Seq, Self, Tag, Tracee, Term, Opts}'
%% with the raw callback arguments, `Seq' numbering the callbacks of the table in the
%% order they ran, and `Self' the `enif_self/2' of the callback's env (often `false').
%% Option `seal => Secret' (an integer, 1 to 2^56 - 1) wraps every event as
%% `{riarc_sealed, Secret, Event}': a message the monitored system forges (`Owner !
%% {trace, ...}') cannot carry a secret it never sees, so owners that accept only sealed
%% events cannot be fooled by it. Option `receive_pattern => false': the caller sets the
%% receive pattern itself (riarc_trace_pattern, which saves the node's pattern first and
%% puts it back at the end; installing it here first would make riarc's pattern the one
%% saved, left on the node after riarc is gone).
-spec new(pid(), #{probe => boolean(), seal => pos_integer(), receive_pattern => boolean()}) ->
    {ok, table()} | {error, error_reason()}.
new(DefaultOwner, Opts) when is_pid(DefaultOwner), is_map(Opts) ->
    case available() of
        false -> {error, nif_not_loaded};
        true ->
            ok = case maps:get(receive_pattern, Opts, true) of
                     true -> install_receive_pattern();
                     false -> ok
                 end,
            new_table(DefaultOwner, maps:get(probe, Opts, false), maps:get(seal, Opts, 0))
    end.

%% @doc Sets the `'receive'' trace pattern that passes each message's sender to the
%% tracer. Node-global: it replaces any receive pattern set before, for every tracer.
-spec install_receive_pattern() -> ok.
install_receive_pattern() ->
    %% Through apply/3: OTP 25's spec of trace_pattern/3 lacks 'receive' (see above).
    _ = apply(erlang, trace_pattern, ['receive', ?RECEIVE_PATTERN, []]),
    ok.

%% @doc The receive pattern for the messages a session keeps (riarc_trace_pattern): every
%% message (`true'), none (`false'), or those the given match specification clauses
%% match; receive timeouts always, marked as this module's callback needs them, and the
%% arguments a process spawned from another node receives.
-spec receive_pattern(true | false | [tuple()]) -> [tuple()].
receive_pattern(true) -> ?RECEIVE_PATTERN;
receive_pattern(false) -> [?CLOCK_CLAUSE, ?ARGS_CLAUSE];
receive_pattern(Clauses) when is_list(Clauses) -> [?CLOCK_CLAUSE, ?ARGS_CLAUSE | Clauses].

%% @doc Traces `Pid' with `Flags' (plus `set_on_spawn'), owned by `Owner'. Without `procs'
%% in `Flags' an exit does not remove the entry: call `clear/2'.
-spec trace(table(), pid(), pid(), [atom()]) -> ok | {error, error_reason()}.
trace(Table, Pid, Owner, Flags) when is_pid(Pid), is_pid(Owner), is_list(Flags) ->
    case erlang:trace_info(Pid, tracer) of
        undefined -> {error, {noproc, Pid}};
        {tracer, []} ->
            %% The entry exists before the first event can be produced.
            case insert(Table, Pid, Owner) of
                ok -> trace_on(Table, Pid, Flags);
                exists -> {error, {already_traced, Pid, {?MODULE, Table}}};
                {error, _} = E -> E
            end;
        {tracer, Other} -> {error, {already_traced, Pid, Other}}
    end.

trace_on(Table, Pid, Flags) ->
    try erlang:trace(Pid, true, [{tracer, ?MODULE, Table}, set_on_spawn | Flags]) of
        _ -> ok
    catch
        error:badarg:St ->
            %% Race: Pid exited, or another tracer got it, after trace_info/2 looked.
            _ = remove(Table, Pid),
            case erlang:trace_info(Pid, tracer) of
                undefined -> {error, {noproc, Pid}};
                {tracer, Other} when Other =/= [] -> {error, {already_traced, Pid, Other}};
                _ -> erlang:raise(error, badarg, St)
            end
    end.

%% @doc Makes `NewOwner' the owner of `Pid'; returns how many events of `Pid' were sent
%% to the previous owner since the entry was made or last switched: the previous owner
%% has all of them once it has received that many. `{error, gone}': `Pid' exited (its
%% events, exit last, all went to the previous owner) or was cleared.
-spec switch(table(), pid(), pid()) -> {ok, non_neg_integer()} | {error, gone}.
switch(_Table, _Pid, _NewOwner) ->
    erlang:nif_error(nif_not_loaded).

%% @doc Stops tracing `Pid' (if this table traces it) and removes its entry.
-spec clear(table(), pid()) -> ok.
clear(Table, Pid) when is_pid(Pid) ->
    case erlang:trace_info(Pid, tracer) of
        {tracer, {?MODULE, Table}} ->
            try riarc_untrace:untrace(Pid)
            catch error:badarg ->
                    %% Race: Pid exited after trace_info/2; nothing left to turn off.
                    false = is_process_alive(Pid)
            end;
        _ -> ok
    end,
    _ = remove(Table, Pid),
    ok.

%% @doc Marks the table dead: nothing more is sent once this returns, and the VM drops
%% the tracer from each tracee at its next event (enabled/3 answers `remove').
-spec stop(table()) -> ok.
stop(_Table) ->
    erlang:nif_error(nif_not_loaded).

%% @doc Live entries, events sent to owners, events sent to the default owner.
-spec stats(table()) -> stats().
stats(_Table) ->
    erlang:nif_error(nif_not_loaded).

%% @doc One sentence saying what went wrong.
-spec format_error(error_reason()) -> string().
format_error(nif_not_loaded) ->
    "the riarc_route NIF (priv/riarc_route_nif.so) is not loaded";
format_error(nomem) ->
    "the routing table could not allocate memory";
format_error({already_traced, Pid, Tracer}) ->
    lists:flatten(io_lib:format("process ~p is already traced by ~p: the VM allows one tracer per process", [Pid, Tracer]));
format_error({noproc, Pid}) ->
    lists:flatten(io_lib:format("process ~p is not alive", [Pid]));
format_error(gone) ->
    "the process has no entry in the table: it exited or was cleared".

%% @private erl_tracer callback (NIF).
-spec enabled(atom(), term(), pid() | port() | undefined) -> trace | discard | remove.
enabled(_TraceTag, _State, _Tracee) ->
    erlang:nif_error(nif_not_loaded).

%% @private erl_tracer callback (NIF).
-spec trace(atom(), term(), pid() | port() | undefined, term(), map()) -> ok.
trace(_TraceTag, _State, _Tracee, _Term, _Opts) ->
    erlang:nif_error(nif_not_loaded).

%% NIF stubs.
-spec nif_loaded() -> true.
nif_loaded() -> erlang:nif_error(nif_not_loaded).
-spec new_table(pid(), boolean(), non_neg_integer()) -> {ok, table()} | {error, nomem}.
new_table(_DefaultOwner, _Probe, _Seal) -> erlang:nif_error(nif_not_loaded).
-spec insert(table(), pid(), pid()) -> ok | exists | {error, nomem}.
insert(_Table, _Pid, _Owner) -> erlang:nif_error(nif_not_loaded).
-spec remove(table(), pid()) -> ok | not_found.
remove(_Table, _Pid) -> erlang:nif_error(nif_not_loaded).
