%% @doc Record &amp; replay of Erlang runs (after 003's concurrency-model-agnostic record &amp;
%% replay): record/3 runs {M, F, Args} with the given modules woven (see
%% {@link riarc_replay_transform}) and writes which message each receive took, which
%% receives timed out, the time and random values the program read and the turns of
%% its ETS operations, per process, to a file; replay/2 runs it again and makes it take
%% the same decisions, as often as wanted. A replay that cannot follow the recording
%% stops with `{error, {diverged, LogicalId, Expected, Got}}' instead of hanging.
%% ```
%% 1> {ok, #{result := R1}} = riarc_replay:record({riarc_replay_progs, race, [4, 5]}, "/tmp/race.rr", #{modules => [riarc_replay_progs]}).
%% 2> {ok, #{result := R2}} = riarc_replay:replay("/tmp/race.rr", #{}).
%% 3> R1 =:= R2.
%% true
%% '''
%% Processes are named by logical ids: the root is [], the k-th process spawned (by woven
%% code) by the process with id L is L ++ [k]. Runs happen in this VM (`vm => local',
%% the modules are woven for the run and restored after it) or in a fresh peer node
%% (`vm => peer', forced by `otp => true', which also weaves OTP's proc_lib, gen,
%% gen_server, gen_statem and supervisor there, so that their processes are recorded too
%% without touching this VM's OTP code). With `monitor => Spec' the run is also monitored
%% by riarc where it runs (riarc_replay_monitor) and Info has riarc's result under
%% `monitoring'.
-module(riarc_replay).

-export([record/3, replay/2, instrument/1, restore/1, default_modules/1, format_error/1]).
%% Called in the peer node.
-export([run_local/4]).
%% The root of a monitored run (riarc_replay_monitor).
-export([controller/5]).
-export_type([opts/0, info/0, error_reason/0]).

-define(OTP_MODULES, [proc_lib, gen, gen_server, gen_statem, supervisor]).
-define(DEFAULT_TIMEOUT, 60000).
-define(DEFAULT_STALL, 1000).
%% What woven code calls (riarc_replay_transform), loaded before a run starts.
-define(RUNTIME_MODULES, [riarc_replay_rt, riarc_replay_versions, riarc_replay_take,
                          riarc_replay_stream, riarc_replay_timers, riarc_replay_ets,
                          riarc_replay_monitor]).

-type opts() :: #{modules => [module()],
                  strategy => receiver | sender,
                  timeout => pos_integer(),
                  stall => pos_integer(),
                  vm => local | peer,
                  otp => boolean(),
                  max_bytes => pos_integer(),
                  monitor => riarc_lambda:spec(),
                  monitor_opts => riarc:opts()}.
-type info() :: #{result := term(), events := non_neg_integer(), bytes := non_neg_integer(),
                  processes := non_neg_integer(), strategy := receiver | sender,
                  file := file:filename_all(), mfa := mfa_args(), modules := [module()],
                  unwoven := [module()], wall_us := non_neg_integer(),
                  monitoring => riarc:result()}.
-type mfa_args() :: {module(), atom(), list()}.
-type error_reason() :: {bad_option, term()}
                      | {corrupt, file:filename_all(), non_neg_integer(), term()}
                      | {file, file:filename_all(), term()}
                      | {timeout, record | replay, [[pos_integer()]]}
                      | {runtime_not_loaded, [{module(), term()}]}
                      | {deadlock, [[pos_integer()]]}
                      | {peer, term()}
                      | {controller_crashed, term()}.

%%% API ----------------------------------------------------------------------------------

%% @doc Runs MFA as the root of a recorded run and writes the recording to File.
-spec record(mfa_args(), file:filename_all(), opts()) ->
    {ok, info()} | {error, {diverged, [pos_integer()], term(), term()} | {riarc_replay, error_reason()}}.
record(MFA = {M, F, A}, File, Opts) when is_atom(M), is_atom(F), is_list(A), is_map(Opts) ->
    case check_opts(Opts) of
        ok ->
            Mods = case Opts of
                       #{modules := Ms} -> Ms;
                       #{} -> default_modules(M)
                   end,
            Header = #{mfa => MFA, modules => Mods, strategy => maps:get(strategy, Opts, receiver)},
            case execute(record, Header, [], Opts) of
                {ok, Result, Streams, Wall, Mon, Unwoven} ->
                    %% The replay weaves what the recording wove, and no more: a module
                    %% woven in the replay only would take decisions nobody recorded.
                    Header1 = case Unwoven of
                                  [] -> Header;
                                  _ -> Header#{modules := Mods -- Unwoven, unwoven => Unwoven}
                              end,
                    case riarc_replay_file:write(File, Header1, Streams) of
                        {ok, Bytes} -> {ok, info(Header1, Result, Streams, Bytes, File, Wall, Mon)};
                        {error, {riarc_replay_file, R}} -> {error, {?MODULE, R}}
                    end;
                Error ->
                    Error
            end;
        Error ->
            Error
    end;
record(MFA, _File, _Opts) ->
    {error, {?MODULE, {bad_option, {mfa, MFA}}}}.

%% @doc Replays the recording in File. Opts: `timeout', `stall', `vm', `otp',
%% `max_bytes' (the modules and the strategy are the recording's).
-spec replay(file:filename_all(), opts()) ->
    {ok, info()} | {error, {diverged, [pos_integer()], term(), term()} | {riarc_replay, error_reason()}}.
replay(File, Opts) when is_map(Opts) ->
    case check_opts(Opts) of
        ok ->
            case riarc_replay_file:read(File, maps:get(max_bytes, Opts, 1 bsl 30)) of
                {ok, Header, Streams} ->
                    case execute(replay, Header, Streams, Opts) of
                        {ok, Result, _, Wall, Mon, _} ->
                            Bytes = filelib:file_size(File),
                            {ok, info(Header, Result, Streams, Bytes, File, Wall, Mon)};
                        Error ->
                            Error
                    end;
                {error, {riarc_replay_file, R}} ->
                    {error, {?MODULE, R}}
            end;
        Error ->
            Error
    end.

info(Header, Result, Streams, Bytes, File, Wall, none) ->
    info(Header, Result, Streams, Bytes, File, Wall);
info(Header, Result, Streams, Bytes, File, Wall, Mon) ->
    (info(Header, Result, Streams, Bytes, File, Wall))#{monitoring => Mon}.

info(H = #{mfa := MFA, modules := Mods, strategy := St}, Result, Streams, Bytes, File, Wall) ->
    #{result => Result, events => lists:sum([byte_size(E) div 9 || {_, _, E, _} <- Streams]),
      bytes => Bytes, processes => length(Streams), strategy => St, file => File, mfa => MFA,
      modules => Mods, unwoven => maps:get(unwoven, H, []), wall_us => Wall}.

check_opts(Opts) ->
    Bad = [{K, V} || {K, V} <- maps:to_list(Opts), not good_opt(K, V)],
    case Bad of
        [] -> ok;
        [B | _] -> {error, {?MODULE, {bad_option, B}}}
    end.

good_opt(modules, Ms) -> is_list(Ms) andalso lists:all(fun erlang:is_atom/1, Ms);
good_opt(strategy, S) -> S =:= receiver orelse S =:= sender;
good_opt(timeout, T) -> is_integer(T) andalso T > 0;
good_opt(stall, T) -> is_integer(T) andalso T > 0;
good_opt(vm, V) -> V =:= local orelse V =:= peer;
good_opt(otp, B) -> is_boolean(B);
good_opt(max_bytes, B) -> is_integer(B) andalso B > 0;
%% Checked where the run runs (riarc:run/3 there): a Spec module may be on the peer's
%% code path only.
good_opt(monitor, S) -> is_atom(S) orelse is_function(S, 1);
good_opt(monitor_opts, O) -> is_map(O) andalso not is_map_key(timeout, O);
good_opt(_, _) -> false.

%% @doc The modules record/3 weaves when Opts has no `modules': M and every module in the
%% same directory (riarc_replay's own modules excepted). Those without debug_info are
%% left unwoven by record/3, which says so (`unwoven' in its Info).
-spec default_modules(module()) -> [module()].
default_modules(M) ->
    case code:which(M) of
        Path when is_list(Path) ->
            Dir = filename:dirname(Path),
            Others = [list_to_atom(filename:basename(B, ".beam"))
                      || B <- filelib:wildcard(filename:join(Dir, "*.beam"))],
            [M | lists:usort([O || O <- Others, O =/= M, not is_own(O)])];
        _ ->
            [M]
    end.

is_own(M) ->
    lists:prefix("riarc_replay", atom_to_list(M)).

%% @doc A sentence for each error_reason() (and for a divergence).
-spec format_error({diverged, [pos_integer()], term(), term()} | error_reason()) -> string().
format_error({diverged, Lid, Expected, Got}) ->
    riarc_replay_rt:format_error({diverged, Lid, Expected, Got});
format_error({runtime_not_loaded, Bad}) ->
    lists:flatten(io_lib:format("riarc's replay runtime could not be loaded (~0tp): is riarc "
                                "installed whole on this node?", [Bad]));
format_error({bad_option, O}) ->
    lists:flatten(io_lib:format("the option ~0tp is not one riarc_replay knows", [O]));
format_error({corrupt, File, Offset, Why}) ->
    riarc_replay_file:format_error({corrupt, File, Offset, Why});
format_error({file, File, Why}) ->
    riarc_replay_file:format_error({file, File, Why});
format_error({timeout, Mode, Lids}) ->
    lists:flatten(io_lib:format("the ~s did not end in time; processes still running: ~0tp", [Mode, Lids]));
format_error({deadlock, Lids}) ->
    lists:flatten(io_lib:format("the replay stopped making progress with its root still running "
                                "(processes ~0tp wait outside recorded operations)", [Lids]));
format_error({peer, Why}) ->
    lists:flatten(io_lib:format("the peer node for the run failed: ~0tp", [Why]));
format_error({controller_crashed, Why}) ->
    lists:flatten(io_lib:format("the run's controller crashed: ~0tp", [Why])).

%%% Weaving ------------------------------------------------------------------------------

%% @doc Recompiles loaded modules from the abstract code in their beams (debug_info) with
%% the record &amp; replay weaver and loads the woven code in their place. Modules already
%% woven (by the parse transform or an earlier instrument/1) are left as they are.
-spec instrument([module()]) -> ok | {error, {riarc_replay, error_reason()} | {riarc_weave, riarc_weave:error_reason()}}.
instrument(Modules) ->
    case instrument_new(Modules) of
        {ok, _} -> ok;
        Error -> Error
    end.

%% The modules it wove now (the ones to restore afterwards).
instrument_new(Modules) ->
    case weave_all([M || M <- lists:usort(Modules), not is_woven(M)], strict, [], []) of
        {ok, Woven, []} -> {ok, Woven};
        Error -> Error
    end.

is_woven(M) ->
    _ = code:ensure_loaded(M),
    try lists:keymember(riarc_replay_woven, 1, M:module_info(attributes))
    catch error:_ -> false
    end.

%% Lenient (a recording): a module without abstract code is left unwoven and named,
%% since its code still runs, unrecorded, and the caller can say so; strict (instrument/1,
%% a replay, which must weave what its recording wove): it is an error.
weave_all([], _How, Acc, Unwoven) ->
    {ok, lists:reverse(Acc), lists:reverse(Unwoven)};
weave_all([M | Ms], How, Acc, Unwoven) ->
    case weave(M) of
        ok -> weave_all(Ms, How, [M | Acc], Unwoven);
        {error, {riarc_weave, {no_abstract_code, M, _}}} when How =:= lenient ->
            weave_all(Ms, How, Acc, [M | Unwoven]);
        {error, _} = Error -> _ = restore(Acc), Error
    end.

weave(M) ->
    case riarc_weave:compile(M, riarc_replay_transform) of
        {ok, File, Bin} -> riarc_weave:load(M, File, Bin);
        Error -> Error
    end.

%% @doc Puts the modules' own code back from their beams. Processes still running woven
%% code are killed when it is purged, as for any code reload.
-spec restore([module()]) -> ok | {error, {riarc_weave, riarc_weave:error_reason()}}.
restore(Modules) ->
    riarc_weave:restore(Modules).

%%% Runs ---------------------------------------------------------------------------------

execute(Mode, Header, Streams, Opts) ->
    case maps:get(otp, Opts, false) orelse maps:get(vm, Opts, local) =:= peer of
        true -> in_peer(Mode, Header, Streams, Opts);
        false -> run_local(Mode, Header, Streams, Opts#{vm => local})
    end.

%% @private The run in this VM: weave, run, restore (in a peer there is nothing to
%% restore: the node goes away).
%% Returns, last, the modules a recording could not weave (none for a replay: it weaves
%% what its recording wove, and leaves out what its recording left out).
-spec run_local(record | replay, riarc_replay_file:header(), [riarc_replay_file:stream()], opts()) ->
    {ok, term(), [riarc_replay_file:stream()], non_neg_integer(), none | riarc:result(), [module()]}
    | {error, term()}.
run_local(Mode, Header, Streams, Opts) ->
    %% Invariant: the run's processes never load riarc's runtime. A woven process that
    %% called a runtime module not loaded yet would ask code_server for it, a send of
    %% riarc's doing that its monitor would take for the system's (and decide on).
    case code:ensure_modules_loaded(?RUNTIME_MODULES) of
        ok -> run_loaded(Mode, Header, Streams, Opts);
        {error, Bad} -> {error, {?MODULE, {runtime_not_loaded, Bad}}}
    end.

run_loaded(Mode, Header, Streams, Opts) ->
    {How, Modules} = to_weave(Mode, Header, Opts),
    case weave_all([M || M <- Modules, not is_woven(M)], How, [], []) of
        {ok, Woven, Unwoven} ->
            try control(Mode, Header, Streams, Opts) of
                {ok, Result, Streams1, Wall, Mon} -> {ok, Result, Streams1, Wall, Mon, Unwoven};
                Error -> Error
            after
                restore_local(Woven, Opts)
            end;
        Error ->
            Error
    end.

%% What a run weaves, and how strictly.
to_weave(Mode, Header = #{modules := Mods}, Opts) ->
    {How, Skip} = case Mode of
                      record -> {lenient, []};
                      replay -> {strict, maps:get(unwoven, Header, [])}
                  end,
    Otp = case maps:get(otp, Opts, false) of
              true -> ?OTP_MODULES;
              false -> []
          end,
    {How, lists:usort(Otp ++ Mods) -- Skip}.

restore_local(Woven, #{vm := local}) -> _ = restore(Woven), ok;
restore_local(_Woven, _Opts) -> ok.

in_peer(Mode, Header, Streams, Opts) ->
    Root = code:root_dir(),
    Paths = [P || P <- code:get_path(), not lists:prefix(Root, P)],
    try peer:start_link(#{connection => standard_io, args => ["-nostick", "-pa" | Paths]}) of
        {ok, Peer, _Node} ->
            Limit = maps:get(timeout, Opts, ?DEFAULT_TIMEOUT) + 30000,
            try
                %% Woven here, where the weaves are kept for the next run, not in the
                %% fresh peer (OTP's behaviours take the compiler seconds).
                {_, Modules} = to_weave(Mode, Header, Opts),
                ok = peer:call(Peer, riarc_weave, keep, [riarc_weave:kept(Modules, riarc_replay_transform)], Limit),
                peer:call(Peer, ?MODULE, run_local, [Mode, Header, Streams, Opts#{vm => peer}], Limit)
            catch
                Class:Why -> {error, {?MODULE, {peer, {Class, Why}}}}
            after
                catch peer:stop(Peer)
            end;
        {error, Why} ->
            {error, {?MODULE, {peer, Why}}}
    catch
        Class:Why -> {error, {?MODULE, {peer, {Class, Why}}}}
    end.

%% Monitored (`monitor'): riarc runs the controller as the root of the system it
%% monitors, so that every process of the run is traced from its spawn on; the run's
%% processes, the controller's monitors and messages are the same as unmonitored.
control(Mode, #{mfa := MFA, strategy := St}, Streams, Opts = #{monitor := Spec}) ->
    MOpts = (maps:get(monitor_opts, Opts, #{}))#{timeout => maps:get(timeout, Opts, ?DEFAULT_TIMEOUT) + 30000},
    case riarc_replay_monitor:run({?MODULE, controller, [Mode, MFA, St, Streams, Opts]}, Spec, MOpts) of
        {ok, {ok, Result, Streams1, Wall}, Mon} -> {ok, Result, Streams1, Wall, Mon};
        {ok, Error, _Mon} -> Error;
        {error, _} = Error -> Error
    end;
%% The run's controller is a process of its own: stray messages of a run die with it.
control(Mode, #{mfa := MFA, strategy := St}, Streams, Opts) ->
    Caller = self(),
    {Pid, Ref} = spawn_monitor(fun() -> Caller ! {riarc_rr_result, self(), controller(Mode, MFA, St, Streams, Opts)} end),
    receive
        {riarc_rr_result, Pid, {ok, Result, Streams1, Wall}} ->
            erlang:demonitor(Ref, [flush]),
            {ok, Result, Streams1, Wall, none};
        {riarc_rr_result, Pid, Error} ->
            erlang:demonitor(Ref, [flush]),
            Error;
        {'DOWN', Ref, process, Pid, Other} ->
            {error, {?MODULE, {controller_crashed, Other}}}
    end.

-record(controller, {mode :: record | replay,
            tab :: ets:tid(),
            progress :: counters:counters_ref(),
            live = #{} :: #{pid() => non_neg_integer()},
            root = undefined :: undefined | {ok, term()} | {atom(), term(), list()},
            deadline :: integer(),
            stall :: pos_integer(),
            last = none :: none | {integer(), #{pid() => integer()}},
            t0 :: integer()}).

%% @private The run's controller: starts the root, follows the run's processes, the
%% watchdog; returns the root's value and (recording) the streams.
-spec controller(record | replay, mfa_args(), receiver | sender, [riarc_replay_file:stream()], opts()) ->
    {ok, term(), [riarc_replay_file:stream()], non_neg_integer()} | {error, term()}.
controller(Mode, MFA, St, Streams, Opts) ->
    Tab = ets:new(riarc_replay_run, [public, set, {write_concurrency, true}, {read_concurrency, true}]),
    true = ets:insert(Tab, [{'$next_idx', 0}, {{lid, 0}, []}]),
    _ = [ets:insert(Tab, [{{stream, Idx}, Events, list_to_tuple(Side)}, {{idx, Lid}, Idx}, {{lid, Idx}, Lid}])
         || {Idx, Lid, Events, Side} <- Streams],
    Progress = counters:new(1, [write_concurrency]),
    Stall = maps:get(stall, Opts, ?DEFAULT_STALL),
    T0 = erlang:monotonic_time(microsecond),
    Root = riarc_replay_rt:start_root({Mode, St, Tab, self(), Progress}, MFA),
    _ = erlang:monitor(process, Root),
    _ = erlang:send_after(Stall, self(), riarc_rr_tick),
    C = #controller{mode = Mode, tab = Tab, progress = Progress, live = #{Root => 0}, stall = Stall, t0 = T0,
           deadline = erlang:monotonic_time(millisecond) + maps:get(timeout, Opts, ?DEFAULT_TIMEOUT)},
    case loop(C) of
        {done, C1} -> done(C1);
        Error -> Error
    end.

loop(C = #controller{live = Live, root = Root}) when Root =/= undefined, map_size(Live) =:= 0 ->
    {done, C};
loop(C = #controller{live = Live}) ->
    receive
        {riarc_rr_spawned, Idx, Pid} ->
            _ = erlang:monitor(process, Pid),
            loop(C#controller{live = Live#{Pid => Idx}});
        {'DOWN', _, process, Pid, _} ->
            loop(C#controller{live = maps:remove(Pid, Live)});
        {riarc_rr_root, Result} ->
            loop(C#controller{root = Result});
        {riarc_rr_salvage, From, Ref, What} ->
            ok = riarc_replay_stream:salvage_for(What, C#controller.tab),
            From ! {riarc_rr_salvaged, Ref},
            loop(C);
        {riarc_rr_diverged, _Pid, Lid, Expected, Got} ->
            kill_all(C),
            {error, {diverged, Lid, Expected, Got}};
        riarc_rr_tick ->
            tick(C)
    after max(0, C#controller.deadline - erlang:monotonic_time(millisecond)) ->
        Lids = lids(C),
        kill_all(C),
        {error, {?MODULE, {timeout, C#controller.mode, Lids}}}
    end.

%% The watchdog: the run is stalled when no process could run (each waits in a receive or
%% for an ETS turn) and nothing ran since the last tick. A process waiting for a recorded
%% message or turn is then a divergence: what it waits for will never come. With no such
%% process, a finished root means the run is over (what still waits is killed, in the
%% recording as in the replay); a root still running means the program waits outside
%% anything recorded, which only a replay reports.
tick(C = #controller{live = Live, progress = Progress, last = Last, stall = Stall}) ->
    Infos = [{Pid, process_info(Pid, [status, reductions, dictionary])} || Pid <- maps:keys(Live)],
    Quiet = lists:all(fun({_, undefined}) -> true;
                         ({_, [{status, waiting}, _, _]}) -> true;
                         ({_, [_, _, {dictionary, D}]}) -> lists:keymember('$riarc_rr_wait', 1, D)
                      end, Infos),
    %% Asking a process for its info costs it a reduction or so: a process that did
    %% nothing else since the last tick gained at most 2.
    Sig = {counters:get(Progress, 1), maps:from_list([{P, R} || {P, [_, {reductions, R}, _]} <- Infos])},
    case Quiet andalso same(Sig, Last) of
        true ->
            Waits = lists:sort([{lid(Pid, C), wait_named(W, D, C)}
                                || {Pid, [_, _, {dictionary, D}]} <- Infos,
                                   {'$riarc_rr_wait', W} <- D]),
            %% Waiting where the recording ends is where the recorded process was when the
            %% run ended: fine once the root is done, a divergence while it is not.
            {Ends, Waiting} = lists:partition(fun({_, {end_of_recording, _}}) -> true;
                                                 (_) -> false
                                              end, Waits),
            case {Waiting, Ends, C#controller.root, C#controller.mode} of
                {[{Lid, W} | _], _, _, replay} ->
                    kill_all(C),
                    {error, {diverged, Lid, W, stalled}};
                {[], [{Lid, {end_of_recording, Got}} | _], undefined, replay} ->
                    kill_all(C),
                    {error, {diverged, Lid, end_of_recording, Got}};
                {_, _, undefined, replay} ->
                    Lids = lids(C),
                    kill_all(C),
                    {error, {?MODULE, {deadlock, Lids}}};
                {_, _, undefined, record} ->
                    next_tick(C, Sig, Stall);
                {_, _, _, _} ->
                    %% What still waits has not written its last events (riarc_replay_stream
                    %% writes when a process ends or is ended, not when it blocks).
                    _ = C#controller.mode =:= record andalso
                        [riarc_replay_stream:salvage(P) || P <- maps:keys(Live)],
                    kill_all(C),
                    {done, C#controller{live = #{}}}
            end;
        false ->
            next_tick(C, Sig, Stall)
    end.

same({P, Rs}, {P, Last}) ->
    maps:size(Rs) =:= maps:size(Last)
        andalso maps:fold(fun(Pid, R, Acc) -> Acc andalso R - maps:get(Pid, Last, -10) =< 2 end, true, Rs);
same(_, _) ->
    false.

next_tick(C, Sig, Stall) ->
    _ = erlang:send_after(Stall, self(), riarc_rr_tick),
    loop(C#controller{last = Sig}).

lid(Pid, #controller{live = Live, tab = Tab}) ->
    case ets:lookup(Tab, {lid, maps:get(Pid, Live, -1)}) of
        [{_, Lid}] -> Lid;
        [] -> unknown
    end.

%% What a waiting process waits for, in words: a process sets its wait for every
%% message it takes, so it leaves naming the sender or the version to the watchdog.
wait_named({receive_message, _} = W, _Dict, #controller{tab = Tab}) ->
    riarc_replay_take:wait_named(W, Tab);
wait_named(receive_versioned, Dict, _C) ->
    riarc_replay_versions:wait_named(Dict);
wait_named(W, _Dict, _C) ->
    W.

lids(C = #controller{live = Live}) ->
    lists:sort([lid(P, C) || P <- maps:keys(Live)]).

kill_all(#controller{live = Live}) ->
    _ = [exit(P, kill) || P <- maps:keys(Live)],
    wait_down(maps:size(Live), erlang:monotonic_time(millisecond) + 5000).

wait_down(0, _) -> ok;
wait_down(N, Deadline) ->
    receive
        {'DOWN', _, process, _, _} -> wait_down(N - 1, Deadline)
    after max(0, Deadline - erlang:monotonic_time(millisecond)) -> ok
    end.

done(#controller{mode = Mode, tab = Tab, root = Root, t0 = T0}) ->
    Wall = erlang:monotonic_time(microsecond) - T0,
    Result = case Root of
                 {ok, V} -> V;
                 {Class, Reason, _St} -> {raised, Class, Reason}
             end,
    Streams = case Mode of
                  record -> streams(Tab);
                  replay -> []
              end,
    {ok, Result, Streams, Wall}.

%% The recording's streams: every process's chunks in order, and a stream (maybe empty)
%% for every process, so that the replay knows every logical id.
streams(Tab) ->
    Chunks = lists:sort(ets:match(Tab, {{chunk, '$1', '$2'}, '$3', '$4'})),
    ByIdx = lists:foldr(fun([Idx, _, Ev, Side], Acc) ->
                                maps:update_with(Idx, fun({E, S}) -> {[Ev | E], Side ++ S} end,
                                                 {[Ev], Side}, Acc)
                        end, #{}, Chunks),
    Lids = lists:sort(ets:match(Tab, {{lid, '$1'}, '$2'})),
    [begin
         {Ev, Side} = maps:get(Idx, ByIdx, {[], []}),
         {Idx, Lid, iolist_to_binary(Ev), Side}
     end || [Idx, Lid] <- Lids].
