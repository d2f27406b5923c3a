%% @doc One monitored run: launches the system paused with its root tracer (Alg. 6 START),
%% keeps the book of live tracers and analysis processes, collects verdicts, invariant
%% violations and tracer statistics, watches every monitor step's budget, applies the
%% overload policy, and knows when the run is over: every tracer gone, which (since every
%% system process is in some tracer's Γ until it exits) means every system process gone,
%% and every analysis done. What riarc's own processes tell it carries its token.
%%
%% Users reach it through {@link riarc}; the session is the handle `riarc:start/3' returns.
%%
%% This module is the session's interface (its calls, its errors' sentences); the
%% process itself, its state and how it handles what it is told, is
%% {@link riarc_session_server}.
%% ```
%% 1> Spec = fun(_) -> {ok, fun M({exit, _, normal}) -> accept; M(_) -> M end} end.
%% 2> {ok, S} = riarc:start({riarc_demo_pqr, p, []}, Spec, #{}).
%% 3> riarc:verdicts(S).
%% [#{pid => <0.90.0>, mfa => {riarc_demo_pqr,p,[]}, verdict => accept, events => 4}, ...]
%% 4> riarc:stop(S).
%% {ok, #{verdicts => [...], tracers => #{spawned => 3, peak => 2}, ...}}
%% '''
-module(riarc_session).

-export([start/4, start_link/1, launched/1, await/2, finish/2, verdicts/1, subscribe/3, alive/1, stats/1,
         settle/2, stop/1, format_error/1]).
-export_type([root/0, opts/0, error_reason/0]).

-type error_reason() :: {timeout, timeout(), #{tracers := [pid()], processes := [term()]}}
                      | {forged_messages, pos_integer()}
                      | not_owner | {down, term()}
                      | {remote_child, #{parent := pid(), node := node(),
                                         mfa := riarc_event:mfa_args()}}
                      | {root_tracer_down, term()}
                      | {ambiguous_timer, #{process := riarc_event:sid(), to := term()}}
                      | {unsettled, non_neg_integer()}.

%% A root of the system: its name, logical MFA, and the init event its monitor opens
%% with when the backend does not deliver one itself.
-type root() :: {riarc_event:sid(), riarc_event:mfa_args(), riarc_event:event() | none}.
%% The backend, or how to make one once the session exists (a routing table sends the
%% events of processes it does not know to the session, which reports them).
-type opts() :: #{backend := riarc_backend:t()
                             | fun((pid()) -> {ok, riarc_backend:t()} | {error, term()}),
                  invariants := boolean(),
                  perturb := undefined | pos_integer() | {gate, pid()},
                  log := boolean(),
                  %% Option follow (riarc:session_opts/2): how to start the sessions that
                  %% follow the system onto nodes, the nodes to follow from the start,
                  %% and whether nodes that join are followed too.
                  followers => fun((pid(), {pid(), reference()}, [node()]) ->
                                          {ok, [{node(), pid(), reference()}]} | {error, term()}),
                  follow_nodes => [node()],
                  follow_joining => boolean(),
                  atom() => term()}.

-ifdef(TEST).
-export([token/1]).
%% @private Tests only: the session's token, to play one of riarc's own processes.
-spec token(pid()) -> reference().
token(Session) -> riarc_session_server:token(Session).
-endif.

%% Every tracer's reports, verdicts and end come to the session: when a system starts
%% processes faster than the session takes their reports in, its mailbox holds thousands
%% of them. Kept on the heap, each of its garbage collections would copy them all again.
-define(START_OPTS, [{spawn_opt, [{message_queue_data, off_heap}]}]).

%%% API

%% @doc Starts a session for Owner: one root tracer per root, over the backend in Opts.
-spec start(pid(), [root()], riarc_lambda:spec(), opts()) ->
    {ok, pid()} | {error, {module(), term()}}.
start(Owner, Roots, Spec, Opts) ->
    case application:ensure_all_started(riarc) of
        {ok, _} -> riarc_sup:start_session({Owner, Roots, Spec, Opts});
        {error, _} ->
            %% Not run as an application (a bare code path with no riarc.app): a session
            %% of its own, monitored by its owner all the same.
            gen_server:start(riarc_session_server, {Owner, Roots, Spec, Opts}, ?START_OPTS)
    end.

%% @private The supervisor's start function (riarc_sup).
-spec start_link({pid(), [root()], riarc_lambda:spec(), opts()}) -> {ok, pid()} | {error, term()}.
start_link(Args) ->
    gen_server:start_link(riarc_session_server, Args, ?START_OPTS).

%% @doc Waits until every root tracer has launched its part of the system: `ok', or the
%% first error (a root another tool traces already, say). After an error the caller
%% stops the session.
-spec launched(pid()) -> ok | {error, {module(), term()}}.
launched(Session) ->
    try gen_server:call(Session, launched, infinity)
    catch exit:{Why, {gen_server, call, _}} -> {error, {?MODULE, {down, Why}}}
    end.

%% @doc Waits for the end of the run and returns its result.
-spec await(pid(), timeout()) -> {ok, map()} | {error, timeout} | {error, {?MODULE, {down, term()}}}.
await(Session, Timeout) ->
    try gen_server:call(Session, await, Timeout)
    catch
        exit:{timeout, _} -> {error, timeout};
        %% The session ended before its result (killed, say): the run has no result, and
        %% the caller gets an error that says so rather than an exception.
        exit:{Why, {gen_server, call, _}} -> {error, {?MODULE, {down, Why}}}
    end.

%% @doc Waits for the end of the run, then stops the session. On timeout it names what
%% is still alive, stops tracing and returns the result so far: the verdicts already
%% reached, `inconclusive' for the partitions the timeout cut short, and the timeout
%% among the result's errors (so the exit status is 1, never a clean accept).
-spec finish(pid(), timeout()) -> {ok, map()} | {error, {?MODULE, {down, term()}}}.
finish(Session, Timeout) ->
    try
        case await(Session, Timeout) of
            {ok, Result} ->
                _ = gen_server:call(Session, release, 30000),
                {ok, Result};
            {error, timeout} ->
                Alive = alive(Session),
                gen_server:call(Session, {stop, {timeout, Timeout, Alive}}, 30000);
            {error, _} = Down ->
                Down
        end
    catch
        exit:{Why, {gen_server, call, _}} -> {error, {?MODULE, {down, Why}}}
    end.

%% @doc The verdicts reached so far.
-spec verdicts(pid()) -> [map()].
verdicts(Session) -> gen_server:call(Session, verdicts).

%% @doc Streams the verdicts to Pid: returns those reached so far; from then on Pid gets
%% `{riarc_session_verdict, Tag, Entry}' for every verdict the session learns and every
%% change to one (an entry later found to rest on an incomplete trace, a partition cut
%% short by an overload), in the order the session learns them. The last entry Pid got
%% for a process is the one the session's result lists. Tag is the caller's (a reference
%% the monitored system never sees, so that it cannot pass for the session). The stream
%% ends when Pid or the session does.
-spec subscribe(pid(), pid(), reference()) -> [map()].
subscribe(Session, Pid, Tag) -> gen_server:call(Session, {subscribe, Pid, Tag}, 30000).

%% @doc The live tracers and the system processes they still trace; the events relayed
%% from followed nodes that no tracer here has claimed yet.
-spec alive(pid()) -> riarc_session_stats:alive().
alive(Session) -> gen_server:call(Session, alive, 10000).

%% @doc What a live view shows of the run, cheaply (no tracer is asked): live tracers
%% and analysis processes, the events the tracers reported taking so far (each reports
%% as it ends, and every 1024 messages under an event budget), the events the routing
%% table has sent the tracers so far (live; `undefined' under another backend), forged
%% messages refused,
%% the overload that detached riarc (or `undefined'), and the memory in bytes of the
%% session, its tracers and its analysis processes on the session's node. riarc_remote's
%% proxy of a session on another node answers for it, `unavailable' once it has ended.
-spec stats(pid()) -> riarc_session_stats:stats() | unavailable.
stats(Session) -> gen_server:call(Session, stats, 10000).

%% @doc Waits, up to Timeout ms, until every live tracer has handed on what it held for
%% others (its takeovers acknowledged, no event waiting for a spawn event or for its
%% process's tracer), so that a stop/1 after it cuts no partition short of what the
%% system did before (riarc_watch settles before it stops). What the system does
%% meanwhile may start more takeovers; a tracer started meanwhile is waited for too.
-spec settle(pid(), timeout()) -> ok | {error, {?MODULE, not_owner | {unsettled, non_neg_integer()}}}.
settle(Session, infinity) -> gen_server:call(Session, {settle, infinity}, infinity);
settle(Session, Timeout) -> gen_server:call(Session, {settle, Timeout}, Timeout + 30000).

%% @doc Stops tracing (the system runs on untraced) and returns the result so far.
-spec stop(pid()) -> {ok, map()} | {error, {?MODULE, not_owner}}.
stop(Session) -> gen_server:call(Session, stop, 30000).

%% @doc A sentence for an error of a session.
-spec format_error(error_reason()) -> string().
format_error({timeout, T, #{tracers := Ts, processes := Ps}}) ->
    lists:flatten(io_lib:format(
        "the run did not end within ~p ms: ~b tracer(s) still alive, tracing ~b system "
        "process(es): ~0tp", [T, length(Ts), length(Ps), Ps]));
format_error({down, Why}) ->
    lists:flatten(io_lib:format("the session ended before its result (~0tp): nothing was checked "
                                "to the end", [Why]));
format_error(not_owner) ->
    "only the process that started the session may stop it";
format_error({forged_messages, N}) ->
    lists:flatten(io_lib:format("~b message(s) in riarc's shape reached its session or tracers "
                                "without the session's token (forged by the monitored system?) "
                                "and were refused", [N]));
format_error({remote_child, #{parent := P, node := Node, mfa := MFA}}) ->
    lists:flatten(io_lib:format("~p started ~0tp on node ~p, where this session cannot follow "
                                "it: the Spec gives it a monitor, which never ran (monitor it "
                                "with a session on that node, riarc:attach(new_processes, ...))",
                                [P, MFA, Node]));
format_error({ambiguous_timer, #{process := P, to := To}}) ->
    lists:flatten(io_lib:format("~0tp set a timer to send ~0tp the atom timeout, which the VM "
                                "traces exactly as a receive timeout of ~0tp's: its trace cannot "
                                "be read either way from then on", [P, To, To]));
format_error({unsettled, N}) ->
    lists:flatten(io_lib:format("~b tracer(s) still held events for others when the wait to "
                                "settle was over", [N]));
format_error({root_tracer_down, Why}) ->
    lists:flatten(io_lib:format("the root tracer ended before it launched the system: ~0tp", [Why])).

