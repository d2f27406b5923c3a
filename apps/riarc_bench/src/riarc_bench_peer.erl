%% @doc One benchmark run in a fresh VM: a peer node on this machine (connected over its
%% standard I/O, so no distribution is needed) that runs one call and is stopped
%% afterwards whatever happens. A watcher reads the VM's resident memory from /proc
%% every 100 ms and kills the VM once it passes the limit, so that a set-up that cannot
%% keep up (centralised monitoring, 000 §5.4.2) ends as a failed run instead of taking
%% the host's memory; a run past its time is killed too. The experiment driver and the
%% user-system driver both run this way, so that their runs are alike.
%% ```
%% 1> {ok, Pid, #{rss_peak_kb := Kb}} = riarc_bench_peer:call({os, getpid, []}, [], 30000, 1024).
%% 2> is_list(Pid) andalso Kb > 0.
%% true
%% 3> riarc_bench_peer:call({timer, sleep, [infinity]}, [], 200, 1024).
%% {error,{riarc_bench_peer,{timeout,200,...}}}
%% '''
-module(riarc_bench_peer).

-export([call/4, code_paths/0, format_error/1]).
-export_type([error_reason/0]).

-type error_reason() :: {timeout, TimeoutMs :: pos_integer(), PeakKb :: non_neg_integer()}
                      | {memory_limit, LimitMb :: pos_integer(), PeakKb :: non_neg_integer()}
                      | {peer, error | exit | throw, term()}
                      | {peer_start, term()}.

-define(MEMORY_POLL, 100).

%% @doc Runs {M, F, Args} in a fresh VM started with ExtraArgs (and this VM's own code
%% paths), within TimeoutMs and LimitMb of resident memory. The peak is the larger of
%% what the watcher saw and the VM's own high-water mark (VmHWM), which no polling misses.
-spec call({module(), atom(), list()}, [string()], pos_integer(), pos_integer()) ->
    {ok, term(), #{rss_peak_kb := non_neg_integer()}} | {error, {?MODULE, error_reason()}}.
call({M, F, A}, ExtraArgs, TimeoutMs, LimitMb) ->
    case peer:start(#{connection => standard_io, args => ExtraArgs ++ ["-pa" | code_paths()]}) of
        {ok, Peer, _Node} ->
            OsPid = peer:call(Peer, os, getpid, []),
            Watcher = start_watcher(OsPid, LimitMb * 1024),
            try peer:call(Peer, M, F, A, TimeoutMs) of
                Value ->
                    Hwm = status_kb(OsPid, "VmHWM"),
                    {ok, Value, #{rss_peak_kb => max(Hwm, peak(stop_watcher(Watcher)))}}
            catch
                exit:{timeout, _} ->
                    kill_os(OsPid),
                    {error, {?MODULE, {timeout, TimeoutMs, peak(stop_watcher(Watcher))}}};
                Class:Reason ->
                    case stop_watcher(Watcher) of
                        {killed, PeakKb} -> {error, {?MODULE, {memory_limit, LimitMb, PeakKb}}};
                        _ -> {error, {?MODULE, {peer, Class, Reason}}}
                    end
            after
                catch peer:stop(Peer)
            end;
        {error, Reason} -> {error, {?MODULE, {peer_start, Reason}}}
    end.

%% @doc Everything on this VM's code path that is not OTP's: riarc's apps and the user's.
-spec code_paths() -> [file:filename()].
code_paths() ->
    Lib = code:lib_dir(),
    [filename:absname(P) || P <- code:get_path(), not lists:prefix(Lib, P), P =/= "."].

%% @doc One sentence for an error of call/4.
-spec format_error(error_reason()) -> string().
format_error({timeout, T, _}) ->
    flat("the run did not end within ~b s and was killed", [T div 1000]);
format_error({memory_limit, Mb, _}) ->
    flat("the run passed the memory limit of ~b MB and was killed", [Mb]);
format_error({peer, Class, Reason}) ->
    flat("the run's VM failed: ~p:~0tP", [Class, Reason, 20]);
format_error({peer_start, Reason}) ->
    flat("the run's VM did not start: ~0tP", [Reason, 20]).

flat(F, A) -> lists:flatten(io_lib:format(F, A)).

peak({killed, Kb}) -> Kb;
peak(Kb) -> Kb.

start_watcher(OsPid, LimitKb) ->
    Owner = self(),
    spawn_link(fun() -> watch(Owner, OsPid, LimitKb, 0) end).

%% The watcher answers a stop with the peak it saw, or {killed, Peak} once it killed the VM.
watch(Owner, OsPid, LimitKb, Peak) ->
    receive
        {stop, Owner} ->
            %% One last reading, so that a run shorter than the poll interval has one too.
            Owner ! {watcher, self(), max(Peak, status_kb(OsPid, "VmRSS"))}
    after ?MEMORY_POLL ->
            case status_kb(OsPid, "VmRSS") of
                Kb when Kb > LimitKb ->
                    kill_os(OsPid),
                    receive {stop, Owner} -> Owner ! {watcher, self(), {killed, Kb}} end;
                Kb -> watch(Owner, OsPid, LimitKb, max(Peak, Kb))
            end
    end.

stop_watcher(Watcher) ->
    Watcher ! {stop, self()},
    receive {watcher, Watcher, Peak} -> unlink(Watcher), Peak end.

%% A field of /proc/PID/status in KiB; 0 where /proc has none (not Linux, VM gone).
status_kb(OsPid, Field) ->
    case file:read_file("/proc/" ++ OsPid ++ "/status") of
        {ok, Bin} ->
            case re:run(Bin, Field ++ ":\\s+([0-9]+) kB", [{capture, all_but_first, list}]) of
                {match, [Kb]} -> list_to_integer(Kb);
                nomatch -> 0
            end;
        {error, _} -> 0
    end.

kill_os(OsPid) ->
    _ = os:cmd("kill -9 " ++ OsPid),
    ok.
