%% @doc Explicit-state model checking of the RIARC tracers ({@link riarc_tracer_core})
%% against a model of the VM with the routing-table backend ({@link riarc_backend_route}).
%%
%% A system is a spawn tree of processes, each with a fixed script of actions
%% (`{spawn, C}', `{send, To, Msg}', `{recv, Msg}' (a selective receive of exactly Msg),
%% `exit' last). The model of the VM:
%% <ul>
%% <li>a routing table gives each traced process its owner (a tracer) and how many of its
%%     events were sent to that owner since the entry was made or last switched; a child's
%%     entry is made at its spawn with its parent's owner (tracing inheritance);</li>
%% <li>each action of a process sends the owner the trace message the table would send
%%     (`{trace, P, spawn, C, MFA}', `{trace, P, send, Msg, To}', ...);</li>
%% <li>the effect `{detach, S, Disp}' of tracer T switches S's owner to T and makes the Cut
%%     (`{count, N}', or `exited'), then T sends `{riarc_dtc, T, S, Cut}' to Disp;</li>
%% <li>channels are FIFO per (sender, receiver) pair only: trace messages of process S to
%%     tracer T are one channel, messages of tracer T1 to tracer T2 another;</li>
%% <li>a tracer started by a `{started, T, S}' effect runs its `init_tracer' (hence its
%%     PREEMPT) as a separate, later step, as a freshly spawned tracer process would.</li>
%% </ul>
%% A transition is one process action, one tracer's start, or one tracer taking the head of
%% one of its incoming channels (any of them: the VM orders nothing across senders). Every
%% reachable state is explored, depth first, with a visited set keyed on an MD5 of a
%% canonical term of the state (the tracers' configurations, identical in every state, are
%% left out).
%%
%% <h3>Partial-order reduction (`por', on by default)</h3>
%% In each state only a persistent subset of the enabled transitions is explored: a set
%% such that no sequence of transitions outside it, from that state, contains one that
%% depends on a transition in it. The state graph is finite and acyclic (a process action
%% advances a program counter, a boot ends a tracer's boot, and a delivery dequeues a
%% message while whatever a tracer sends bumps a counter of its state), so persistent-set
%% search with a visited set reaches every terminal state of the full graph (Godefroid,
%% LNCS 1032, thm. 4.3): the terminal checks are unaffected. A failure reported by a step
%% is a function of the stepping tracer's state and message alone; moving transitions of
%% other actors ahead of it changes neither, so by induction on the height of the state
%% (the longest path below it) a failure reachable in the full graph is reached in the
%% reduced one too (perhaps another of them first). The sets are computed per state,
%% from the state only, so the visited set needs no sleep sets.
%%
%% Independence, from the model: transitions of different actors (a process; a tracer)
%% touch different data except where
%% <ul>
%% <li>a tracer switches a process's route (effect `detach'): that reads and writes the
%%     process's table entry, which each of its actions reads and writes;</li>
%% <li>one enqueues on a channel another dequeues from: the two commute when the channel
%%     is not empty, and only its sender fills it, so this never creates a dependency
%%     inside a persistent set; it can only enable a delivery (handled below);</li>
%% <li>a send enables a receive (mailboxes are multisets: they commute otherwise).</li>
%% </ul>
%% The verdicts the session gets are a sorted list: additions commute. The set is built
%% as a stubborn set over actors, from a seed actor, closing under: a process with an
%% enabled action needs the tracers that may still switch its route; a process blocked
%% on a receive needs the processes that still have that send; a process not spawned
%% needs its parent; a booting tracer needs the process it detaches; a running tracer
%% needs whoever may still fill one of its empty channels (the processes that have it or
%% may get it as owner, the tracers that route to it or will send it a detach request),
%% and the processes it may detach. (A sender whose channel to the tracer is not empty
%% could be left out: what it appends goes behind the head. Measured, that makes the
%% smallest set smaller and the search larger: 57 196 to 129 130 states for the 4-process
%% star with every process monitored, so it is not done.)
%% Every seed is tried and the smallest set is taken. Two kinds of transition are taken
%% alone, as a persistent set of one: a process action with nobody left to switch its
%% route, and a quiet delivery (below). Who may switch a route is read off the tracer
%% core's code (keep this in step with it):
%% <ul>
%% <li>only `init_tracer' (its own process) and INSTRUMENT in priority mode (the child of
%% the spawn event it handles, left in its parent's partition or adopted) emit `detach';
%% a tracer in direct mode never returns to priority mode; the one spawn event of a process is carried by one message or held
%% by one tracer at a time, so it is instrumented once: a process in some tracer's Γ is
%% never switched again, and until the holder of its spawn event steps, nobody else can
%% switch it or start its tracer;</li>
%% <li>a tracer sends only to its next-hops (Π values, which grow only by tracers it
%% starts), to the dispatcher named by its boot or by a routed spawn event, to the
%% requester of a held route (short routes: any tracer, as far as this reduction knows),
%% and to the session.</li>
%% </ul>
%%
%% A quiet delivery: tracer T, in direct mode, takes the trace message of a send or a
%% receive of a process S that is in its Γ and has no route in its Π. The core handles it
%% by ANALYSEEVT alone (HANDLCOMM∘, case Π(S) = ⊥): it changes T's monitor and counters
%% and has no effect but a failure. It is independent of every transition that can come
%% before it: other actors do not touch T's state, and only S appends to the channel
%% (S, T), whose head it takes; T's own other deliveries find T still in direct mode
%% (it never leaves it) and S still in Γ without a route (S's exit, which removes it,
%% is behind this message on the same channel; a route for S is made only when S's
%% spawn event is handled, which was before S entered Γ, and happens once); they do not
%% analyse events of S (S's trace messages reach T only on this channel, and a routed
%% event of S finds no route here: an I19 violation whatever the order); and the
%% model's monitors keep one expectation per process, so events of different processes
%% analysed in either order give the same monitor. The one other reader of the count of
%% analysed events is the `none' verdict at TRYGC, which needs S out of Γ.
%%
%% `#{por => false}' explores every interleaving; `#{failures => all}' goes on past each
%% failure (ending only its path) and returns the kinds met. The tests
%% (riarc_explore_SUITE) check that the reduced and the full search meet the same kinds
%% of failure and the same terminal states on every system of up to 3 processes under
%% every arrangement and on every system of 4 with the root's monitor alone (the star
%% and the chain also with the last process's), with the correct core and with
%% `bug => ignore_cut'.
%%
%% The reduction is strongest when few processes have monitors. With several tracers
%% their channels still interleave nearly freely: a tracer's deliveries from different
%% channels are dependent (the core's order of handling is the point of the algorithm),
%% so a set with one of them needs everyone who may still fill another, and that chains
%% every tracer in. Measured numbers are in docs/core.md. The arrangements of a sweep
%% are independent searches: sweep/2 runs them on several workers. main/1 runs the sweep
%% of `make verify'.
%%
%% Each system is checked under every arrangement of monitors: the root always has one,
%% and every subset of the other processes has a monitor of its own (the rest are in the
%% partition of their nearest ancestor with one). The monitor of a partition expects, per
%% process, exactly that process's local trace in order; it rejects at the first event that
%% is not the next one expected (an event out of order, of another partition, or one too
%% many). It never accepts, so the check is stronger than an accept verdict: a tracer ends
%% its partition with the verdict `none' and the number of events analysed, which must be
%% the number expected. Failures:
%% <ul>
%% <li>in any state: a `riarc_violation' (I1-I22, A4), a reject or error verdict, a Spec
%%     error, a `riarc_incomplete' report, a second tracer for one process;</li>
%% <li>in a terminal state (no transition enabled): a live tracer (deadlock), a message
%%     never delivered (sent to a stopped tracer), a process that did not finish, a
%%     partition without exactly one verdict `none' having analysed all its events.</li>
%% </ul>
%% One thing left undelivered is tolerated: the acknowledgement of a tracer's own detach
%% request reaching it after it ended. A tracer in priority mode whose process exited
%% before its detach was acknowledged gets the routed exit, finds Γ = Π = ∅ and ends
%% (TRYGC) without waiting for the acknowledgement, which carries no event: on the VM it
%% goes to a dead process and nothing is lost.
%%
%% A failure is reported with the sequence of transitions that led to it.
%% ```
%% 1> riarc_explore:check(riarc_explore:pqr(), #{monitored => [[], [r]]}).
%% {ok,#{arrangements => 2,states => 245,terminals => 3}}
%% 2> riarc_explore:check(riarc_explore:pqr(), #{monitored => [[], [r]], por => false}).
%% {ok,#{arrangements => 2,states => 1949,terminals => 3}}
%% 3> {error, {riarc_explore, E}} = riarc_explore:check(riarc_explore:pqr(), #{monitored => [[r]], bug => ignore_cut}).
%% {error,{riarc_explore,{violation,#{reason => {deadlock,live_tracers,[{t,r}]},...}}}}
%% 4> io:format("~s~n", [riarc_explore:format_error(E)]).
%% riarc_explore: {deadlock,live_tracers,[{t,r}]}
%%   with own monitors for [r], after:
%%   {proc,p,{spawn,q}}
%%   ...
%% '''
-module(riarc_explore).
-behaviour(riarc_monitor).

-export([check/2, systems/1, run/2, sweep/1, sweep/2, main/1, pqr/0, format_error/1]).
%% The monitor of a partition in the model (riarc_monitor callback).
-export([analyse/2]).
-export_type([system/0, action/0, opts/0, error_reason/0]).

%% A search's failure: an invariant or soundness violation with the transitions that led
%% to it, a search process that crashed, or a search larger than `max_states'.
-type error_reason() :: {violation, #{reason := term(), monitored := [atom()], trace := [term()],
                                      atom() => term()}}
                      | {crashed, term()} | {state_limit, pos_integer()}.

-type sid() :: term().
-type action() :: {spawn, sid()} | {send, sid(), term()} | {recv, term()} | exit.
-type system() :: #{root := sid(), scripts := #{sid() => [action()]}}.
%% monitored: the arrangements to check (lists of non-root processes with a monitor of
%% their own), all of them by default. adopt: how many partitions a tracer may adopt
%% (riarc_tracer_adopted; 0, the default: none). bug: a deliberate fault, to test the checker.
%% por: the partial-order reduction (on by default). failures: `first' stops at the
%% first failure and returns it; `all' explores the whole graph, ending only the failing
%% paths, and returns the kinds of failure it met (`failures' in the counts).
-type opts() :: #{monitored => all | [[sid()]],
                  adopt => non_neg_integer(),
                  bug => none | ignore_cut,
                  por => boolean(),
                  failures => first | all,
                  max_states => pos_integer()}.
%% A part of a sweep: every spawn tree of exactly N processes, under every arrangement
%% (`every') or those named: `none' (only the root has a monitor), `all' (every process
%% has one), `leaves' (the root and the leaves have one), `last' (the root and the last
%% process, in preorder a leaf, have one).
%% A row may ask for tracers that adopt partitions (riarc_tracer_adopted): `#{adopt => N}'.
-type plan() :: [{pos_integer(), every | [none | all | leaves | last]}
                 | {pos_integer(), every | [none | all | leaves | last], #{adopt => pos_integer()}}].
-type counts() :: #{states := non_neg_integer(), terminals := non_neg_integer(),
                    arrangements := non_neg_integer(), failures => [term()]}.

%%% ---------------------------------------------------------------------------
%%% Systems
%%% ---------------------------------------------------------------------------

%% @doc P/Q/R of the paper (fig. 2a): P spawns Q and sends it req; Q receives it and
%% spawns R.
-spec pqr() -> system().
pqr() ->
    #{root => p,
      scripts => #{p => [{spawn, q}, {send, q, req}, exit],
                   q => [{recv, req}, {spawn, r}, exit],
                   r => [exit]}}.

%% @doc Every ordered spawn tree of 1 to MaxProcs processes (numbered 0.. in preorder).
%% Each parent spawns each child and sends it one message right after, which the child
%% receives first: every non-root process has one message.
-spec systems(pos_integer()) -> [system()].
systems(MaxProcs) ->
    [tree_system(T) || N <- lists:seq(1, MaxProcs), T <- trees(N)].

%% An ordered tree is the list of its root's subtrees.
trees(N) -> forests(N - 1).

forests(0) -> [[]];
forests(K) ->
    [[T | F] || I <- lists:seq(1, K), T <- trees(I), F <- forests(K - I)].

tree_system(Tree) ->
    {Scripts, _} = number(Tree, 0, none),
    #{root => 0, scripts => Scripts}.

%% Numbers the tree in preorder and writes each process's script.
number(Subtrees, Id, Parent) ->
    {Children, Next, Scripts} =
        lists:foldl(fun(T, {Cs, I, Acc}) ->
                            {Sc, I1} = number(T, I, Id),
                            {[I | Cs], I1, maps:merge(Acc, Sc)}
                    end, {[], Id + 1, #{}}, Subtrees),
    Recv = case Parent of none -> []; _ -> [{recv, {req, Id}}] end,
    Own = Recv ++ lists:append([[{spawn, C}, {send, C, {req, C}}]
                                || C <- lists:reverse(Children)]) ++ [exit],
    {Scripts#{Id => Own}, Next}.

%%% ---------------------------------------------------------------------------
%%% Checking
%%% ---------------------------------------------------------------------------

%% @doc Explores every reachable state of the system under every arrangement of monitors
%% (or those of `monitored').
-spec check(system(), opts()) -> {ok, counts()} | {error, {?MODULE, error_reason()}}.
check(System, Opts) ->
    Arrs = case maps:get(monitored, Opts, all) of
               all -> arrangements(System);
               L -> L
           end,
    check_arrs(Arrs, System, Opts, #{states => 0, terminals => 0, arrangements => 0}).

check_arrs([], _System, _Opts, Acc) ->
    {ok, Acc};
check_arrs([Mon | Arrs], System, Opts, Acc = #{states := S, terminals := T, arrangements := A}) ->
    case check_one(System, Mon, Opts) of
        {ok, {S1, T1}} ->
            check_arrs(Arrs, System, Opts,
                       Acc#{states := S + S1, terminals := T + T1, arrangements := A + 1});
        {ok, {S1, T1, Fs}} ->
            check_arrs(Arrs, System, Opts,
                       Acc#{states := S + S1, terminals := T + T1, arrangements := A + 1,
                            failures => lists:umerge(maps:get(failures, Acc, []), Fs)});
        {error, _} = E -> E
    end.

%% @doc Checks every system of systems(MaxProcs), stopping at the first failure.
-spec run(pos_integer(), opts()) ->
    {ok, #{systems := non_neg_integer(), states := non_neg_integer(),
           terminals := non_neg_integer(), arrangements := non_neg_integer(),
           duration_ms := non_neg_integer()}} | {error, {?MODULE, error_reason()}}.
run(MaxProcs, Opts) ->
    T0 = erlang:monotonic_time(millisecond),
    Zero = #{systems => 0, states => 0, terminals => 0, arrangements => 0},
    R = lists:foldl(
          fun(_, {error, _} = E) -> E;
             (Sys, {ok, Acc}) ->
                  case check(Sys, Opts) of
                      {ok, C} ->
                          {ok, maps:map(fun(systems, V) -> V + 1;
                                           (K, V) -> V + maps:get(K, C) end, Acc)};
                      {error, _} = E -> E
                  end
          end, {ok, Zero}, systems(MaxProcs)),
    case R of
        {ok, Acc} -> {ok, Acc#{duration_ms => erlang:monotonic_time(millisecond) - T0}};
        E -> E
    end.

%% @doc `make verify': sweep/1, then halts with status 0 if every check passed, 1 if not.
-spec main(plan()) -> no_return().
main(Plan) ->
    Status = case sweep(Plan) of
                 ok -> 0;
                 error -> 1
             end,
    halt(Status).

%% @doc Checks the systems of Plan on every scheduler (see sweep/2).
-spec sweep(plan()) -> ok | error.
sweep(Plan) ->
    sweep(Plan, erlang:system_info(schedulers_online)).

%% @doc Checks the systems of Plan, Workers arrangements at a time (each one a depth-first
%% search of its own, in a process of its own: they share nothing), printing one line per
%% system (its tree as the parent of each non-root process, arrangements, states, terminal
%% states, the time its searches took), one per size and a total; stops at the first
%% failure, which it prints.
-spec sweep(plan(), pos_integer()) -> ok | error.
sweep(Plan, Workers) ->
    T0 = erlang:monotonic_time(millisecond),
    Units = [{N, maps:merge(Sys, Extra), Arr} || {N, Kinds, Extra} <- [row(Row) || Row <- Plan],
                                                 Sys = #{scripts := Sc} <- systems(N), map_size(Sc) =:= N,
                                                 Arr <- plan_arrangements(Kinds, Sys)],
    Left = lists:foldl(fun({_, Sys, _}, M) -> maps:update_with(Sys, fun(K) -> K + 1 end, 1, M) end,
                       #{}, Units),
    R = pool(Units, Workers, #{}, Left, #{}, #{}),
    Secs = (erlang:monotonic_time(millisecond) - T0) / 1000,
    case R of
        {ok, Sizes} ->
            Total = lists:foldl(fun add_counts/2, zero(), maps:values(Sizes)),
            [print_counts(size_name(N), C) || {N, C} <- lists:sort(maps:to_list(Sizes))],
            print_counts("total", Total),
            io:format("wall time ~.1f s on ~b workers: ok~n", [Secs, Workers]),
            ok;
        {error, {?MODULE, E}} ->
            io:format("~s~nfailed after ~.1f s~n", [format_error(E), Secs]),
            error
    end.

row({N, Kinds}) -> {N, Kinds, #{}};
row({N, Kinds, Extra}) -> {N, Kinds, maps:with([adopt], Extra)}.

%% Sizes are counted apart for each adoption a plan asks for.
size_of(N, Sys) -> {N, maps:get(adopt, Sys, 0)}.

size_name({N, 0}) -> io_lib:format("~b processes", [N]);
size_name({N, A}) -> io_lib:format("~b processes, adopting ~b", [N, A]).

zero() -> #{systems => 0, arrangements => 0, states => 0, terminals => 0, ms => 0}.

add_counts(A, B) -> maps:map(fun(K, V) -> V + maps:get(K, B) end, A).

print_counts(What, #{systems := NS, arrangements := NA, states := St, terminals := Te, ms := Ms}) ->
    io:format("~s: ~b systems, ~b arrangements, ~b states, ~b terminal, ~.1f s of search~n",
              [What, NS, NA, St, Te, Ms / 1000]).

%% The master of the sweep: at most Workers searches at a time. Running: monitor ref ->
%% unit; Left: arrangements still to do per system; Done: counts per system so far;
%% Sizes: counts per size of the systems finished.
pool([], _Workers, Running, _Left, _Done, Sizes) when map_size(Running) =:= 0 ->
    {ok, Sizes};
pool([Unit | Units], Workers, Running, Left, Done, Sizes) when map_size(Running) < Workers ->
    Master = self(),
    {Pid, Ref} = spawn_monitor(fun() -> Master ! {self(), search(Unit)} end),
    pool(Units, Workers, Running#{Ref => {Pid, Unit}}, Left, Done, Sizes);
pool(Units, Workers, Running, Left, Done, Sizes) ->
    receive
        {'DOWN', Ref, process, Pid, Why} when is_map_key(Ref, Running) ->
            {ok, Result} = case Why of
                               normal -> receive {Pid, Res} -> {ok, Res} end;
                               _ -> {ok, {error, {?MODULE, {crashed, Why}}}}
                           end,
            {Pid, Unit = {N, Sys, _}} = maps:get(Ref, Running),
            Running1 = maps:remove(Ref, Running),
            case Result of
                {ok, C} ->
                    D = add_counts(maps:get(Sys, Done, zero()), C),
                    case maps:get(Sys, Left) of
                        1 ->
                            print_system(Sys, D),
                            Size = size_of(N, Sys),
                            S = add_counts(maps:get(Size, Sizes, zero()), D#{systems := 1}),
                            pool(Units, Workers, Running1, maps:remove(Sys, Left),
                                 maps:remove(Sys, Done), Sizes#{Size => S});
                        K ->
                            pool(Units, Workers, Running1, Left#{Sys := K - 1}, Done#{Sys => D}, Sizes)
                    end;
                {error, _} = E ->
                    print_failed(Unit),
                    [begin demonitor(R, [flush]), exit(P, kill) end || {R, {P, _}} <- maps:to_list(Running1)],
                    E
            end
    end.

search({_N, Sys, Arr}) ->
    T0 = erlang:monotonic_time(millisecond),
    case check_one(Sys, Arr, maps:with([adopt], Sys)) of
        {ok, {St, Te}} ->
            {ok, (zero())#{arrangements := 1, states := St, terminals := Te,
                           ms := erlang:monotonic_time(millisecond) - T0}};
        {error, _} = E -> E
    end.

print_system(Sys, #{arrangements := NA, states := St, terminals := Te, ms := Ms}) ->
    io:format("~s, parents ~w: ~b arrangements, ~b states, ~b terminal, ~b ms~n",
              [size_name(size_of(map_size(maps:get(scripts, Sys)), Sys)), parents(Sys), NA, St, Te, Ms]).

print_failed({_N, Sys = #{root := Root, scripts := Scripts}, Arr}) ->
    io:format("~b processes, parents ~w (root ~w), own monitors for ~w: FAILED~n",
              [map_size(Scripts), parents(Sys), Root, Arr]).

parents(#{scripts := Scripts}) ->
    [P || {_, P} <- lists:sort([{C, P} || {P, Sc} <- maps:to_list(Scripts), {spawn, C} <- Sc])].

plan_arrangements(every, Sys) -> arrangements(Sys);
plan_arrangements(Kinds, Sys) -> lists:usort([named(K, Sys) || K <- Kinds]).

named(none, _Sys) -> [];
named(all, #{root := Root, scripts := Scripts}) -> lists:sort(maps:keys(Scripts)) -- [Root];
named(last, #{root := Root, scripts := Scripts}) ->
    lists:nthtail(max(0, map_size(Scripts) - 2), lists:sort(maps:keys(Scripts)) -- [Root]);
named(leaves, #{root := Root, scripts := Scripts}) ->
    lists:sort([S || {S, Sc} <- maps:to_list(Scripts), S =/= Root,
                     [C || {spawn, C} <- Sc] =:= []]).

%% @doc A sentence for an error of check/2 or run/2.
-spec format_error(error_reason()) -> string().
format_error({violation, #{reason := Why, monitored := Mon, trace := Trace}}) ->
    lists:flatten(
      [io_lib:format("riarc_explore: ~0tp~n  with own monitors for ~0tp, after:~n",
                     [Why, Mon]),
       [io_lib:format("  ~0tp~n", [Step]) || Step <- Trace]]);
format_error({crashed, Why}) ->
    lists:flatten(io_lib:format("riarc_explore: a search crashed: ~0tp", [Why]));
format_error({state_limit, N}) ->
    lists:flatten(io_lib:format("riarc_explore: more than ~b states", [N])).

%% Every subset of the non-root processes, as sorted lists.
arrangements(#{root := Root, scripts := Scripts}) ->
    NonRoot = lists:sort(maps:keys(Scripts)) -- [Root],
    lists:foldr(fun(S, Acc) -> Acc ++ [[S | A] || A <- Acc] end, [[]], NonRoot).

check_one(System, Mon, Opts) ->
    Env = env(System, Mon, Opts),
    Visited = ets:new(?MODULE, [set, private]),
    try
        St0 = initial(Env),
        {N, Terms} = dfs(St0, [], Env, Visited, {0, 0}),
        case Env of
            #{failures := all} ->
                {ok, {N, Terms, lists:sort(ets:select(Visited, [{{{failure, '$1'}}, [], ['$1']}]))}};
            #{} -> {ok, {N, Terms}}
        end
    catch
        throw:{?MODULE, limit} ->
            {error, {?MODULE, {state_limit, maps:get(max_states, Opts)}}};
        throw:{?MODULE, Why, Trace} ->
            {error, {?MODULE, {violation, #{reason => Why, monitored => Mon,
                                            trace => lists:reverse(Trace)}}}}
    after
        ets:delete(Visited)
    end.

%%% ---------------------------------------------------------------------------
%%% The static part: scripts, partitions, expected traces, tracer configurations
%%% ---------------------------------------------------------------------------

mfa(S) -> {?MODULE, process, [S]}.

env(#{root := Root, scripts := Scripts}, Monitored, Opts) ->
    Parent = maps:from_list([{C, P} || {P, Sc} <- maps:to_list(Scripts), {spawn, C} <- Sc]),
    Own = [Root | Monitored],
    Senders = lists:foldl(fun({X, Sc}, Acc) ->
                                  lists:foldl(fun({I, {send, To, M}}, A) ->
                                                      maps:update_with({To, M}, fun(L) -> [{X, I} | L] end,
                                                                       [{X, I}], A);
                                                 (_, A) -> A
                                              end, Acc, lists:zip(lists:seq(1, length(Sc)), Sc))
                          end, #{}, maps:to_list(Scripts)),
    Part = maps:from_list([{S, partition(S, Own, Parent)} || S <- maps:keys(Scripts)]),
    Local = maps:from_list([{S, local(S, maps:get(S, Parent, undefined), Sc)}
                            || {S, Sc} <- maps:to_list(Scripts)]),
    Expected = maps:from_list(
                 [{P, maps:with([S || {S, P1} <- maps:to_list(Part), P1 =:= P], Local)}
                  || P <- Own]),
    Spec = fun({?MODULE, process, [S]}) ->
                   case Expected of
                       #{S := Exp} -> {ok, {?MODULE, Exp}};
                       #{} -> undefined
                   end
           end,
    Base = #{lambda => riarc_lambda:new(Spec),
             %% Only event/2 is used, and it ignores the configuration.
             backend => riarc_backend:new(riarc_backend_route, #{table => undefined, flags => []}),
             session => session,
             checks => true,
             perturb => undefined,
             %% The model starts the tracer itself, as a later step: the core only names it.
             start_tracer => fun(Mon, C, MFA, Disp) ->
                                     T = {t, C},
                                     put({?MODULE, start, T}, {Mon, C, MFA, Disp}),
                                     T
                             end,
             init_from_spawn => true},
    Adopt = case maps:get(adopt, Opts, 0) of
                0 -> #{};
                Max -> #{adopt => fun(N) -> N < Max end}
            end,
    #{root => Root, scripts => Scripts, cfg => maps:merge(Base, Adopt), monitored => Own,
      expected => maps:map(fun(_, E) -> lists:sum([length(L) || L <- maps:values(E)]) end,
                           Expected),
      bug => maps:get(bug, Opts, none), max_states => maps:get(max_states, Opts, infinity),
      por => maps:get(por, Opts, true), failures => maps:get(failures, Opts, first),
      parent => Parent, senders => Senders,
      own => maps:from_list([{S, true} || S <- Own])}.

partition(S, Own, Parent) ->
    case lists:member(S, Own) of
        true -> S;
        false -> partition(maps:get(S, Parent), Own, Parent)
    end.

%% A process's local trace, as its monitor must see it.
local(S, Parent, Script) ->
    [{init, S, Parent, mfa(S)} |
     [case A of
          {spawn, C} -> {spawn, S, C, mfa(C)};
          {send, To, M} -> {send, S, To, M};
          {recv, M} -> {recv, S, M};
          exit -> {exit, S, normal}
      end || A <- Script]].

cfg(T, #{cfg := Base}) -> Base#{self => T}.

%% @private The partition's monitor: per process, the events still expected.
-spec analyse(riarc_event:event(), #{sid() => [riarc_event:event()]}) ->
    {next, #{sid() => [riarc_event:event()]}} | reject.
analyse(E, Exp) ->
    S = riarc_event:origin(E),
    case Exp of
        #{S := [E]} -> {next, maps:remove(S, Exp)};
        #{S := [E | Rest]} -> {next, Exp#{S := Rest}};
        #{} -> reject
    end.

%%% ---------------------------------------------------------------------------
%%% The dynamic part: states and transitions
%%% ---------------------------------------------------------------------------

%% procs: per spawned process, its program counter and its mailbox (a sorted multiset);
%% table: per traced process, {Owner, events sent to it since the entry | exited};
%% chans: per (sender, receiver), the messages in flight, oldest first;
%% tracers: {boot, Args} before its init_tracer, {run, Core}, or stopped;
%% verdicts: the `none' verdicts the session got, sorted.
initial(Env = #{root := Root}) ->
    T = {t, Root},
    St0 = #{procs => #{Root => {0, []}}, table => #{Root => {T, 0}}, chans => #{},
            tracers => #{}, verdicts => []},
    {Core, Fx} = riarc_tracer_core:init_root(cfg(T, Env), Root, mfa(Root),
                                             {init, Root, undefined, mfa(Root)}),
    effects(T, Fx, set_tracer(T, {run, Core}, St0), Env, [init]).

set_tracer(T, V, St = #{tracers := Ts}) -> St#{tracers := Ts#{T => V}}.

dfs(St, Trace, Env, Visited, {N, Terms}) ->
    case ets:insert_new(Visited, {key(St)}) of
        false -> {N, Terms};
        true ->
            case Env of
                #{max_states := Max} when is_integer(Max), N >= Max -> throw({?MODULE, limit});
                #{} -> ok
            end,
            case transitions(St, Env) of
                [] ->
                    _ = failing(fun() -> terminal(St, Env, Trace) end, Env, Visited),
                    {N + 1, Terms + 1};
                Trs0 ->
                    Trs = reduce(Trs0, St, Env),
                    lists:foldl(fun(Tr, Acc) ->
                                        Trace1 = [Tr | Trace],
                                        case failing(fun() -> step(Tr, St, Env, Trace1) end,
                                                     Env, Visited) of
                                            failed -> Acc;
                                            St1 -> dfs(St1, Trace1, Env, Visited, Acc)
                                        end
                                end, {N + 1, Terms}, Trs)
            end
    end.

%% With `failures => all', a failure ends its path only: its kind is noted and the
%% search goes on elsewhere.
failing(F, #{failures := all}, Visited) ->
    try F()
    catch throw:{?MODULE, Why, _Trace} ->
            ets:insert(Visited, {{failure, failure_kind(Why)}}),
            failed
    end;
failing(F, #{}, _Visited) ->
    F().

%% What kind of failure: the invariant for a violation, else the reason's tag.
failure_kind({riarc_violation, _T, Id, _Info, _State}) -> {riarc_violation, Id};
failure_kind(Why) when is_tuple(Why) -> element(1, Why);
failure_kind(Why) -> Why.

%% The tracers' configurations are the same in every state: leave them out of the key.
key(St = #{tracers := Ts}) ->
    Ts1 = maps:map(fun(_, {run, Core}) -> {run, strip(Core)}; (_, V) -> V end, Ts),
    erlang:md5(term_to_binary(St#{tracers := Ts1}, [deterministic])).

strip(Core) ->
    setelement(cfg_pos(Core), Core, cfg).

%% Where the core keeps its configuration (the map with start_tracer): found once per
%% process, since the core is opaque.
cfg_pos(Core) ->
    case get({?MODULE, cfg_pos}) of
        undefined ->
            [Pos | _] = [I || {I, X} <- lists:zip(lists:seq(1, tuple_size(Core)), tuple_to_list(Core)),
                              is_map(X), is_map_key(start_tracer, X)],
            put({?MODULE, cfg_pos}, Pos),
            Pos;
        Pos -> Pos
    end.

transitions(St = #{procs := Ps, tracers := Ts, chans := Cs}, #{scripts := Scripts}) ->
    [{proc, S, A} || {S, {Pc, Mbox}} <- lists:sort(maps:to_list(Ps)),
                     A <- [lists:nth(Pc + 1, maps:get(S, Scripts)) || Pc < length(maps:get(S, Scripts))],
                     enabled(A, Mbox)]
    ++ [{boot, T} || {T, {boot, _}} <- lists:sort(maps:to_list(Ts))]
    ++ [{deliver, From, To, M} || {{From, To}, [M | _]} <- lists:sort(maps:to_list(Cs)),
                                  running(To, St)].

enabled({recv, M}, Mbox) -> lists:member(M, Mbox);
enabled(_, _) -> true.

running(T, #{tracers := Ts}) ->
    case Ts of
        #{T := {run, _}} -> true;
        #{} -> false
    end.

step({proc, S, A}, St = #{procs := Ps}, Env, Trace) ->
    {Pc, Mbox} = maps:get(S, Ps),
    proc(S, A, St#{procs := Ps#{S := {Pc + 1, Mbox}}}, Env, Trace);
step({boot, T}, St = #{tracers := Ts}, Env, Trace) ->
    {boot, {Mon, S, MFA, Disp}} = maps:get(T, Ts),
    {Core, Fx} = riarc_tracer_core:init_tracer(cfg(T, Env), Mon, S, MFA, Disp),
    effects(T, Fx, set_tracer(T, {run, Core}, St), Env, Trace);
step({deliver, From, To, M}, St = #{chans := Cs, tracers := Ts}, Env, Trace) ->
    Cs1 = case maps:get({From, To}, Cs) of
              [M] -> maps:remove({From, To}, Cs);
              [M | Rest] -> Cs#{{From, To} := Rest}
          end,
    {run, Core} = maps:get(To, Ts),
    {Core1, Fx} = riarc_tracer_core:handle(M, Core),
    effects(To, Fx, set_tracer(To, {run, Core1}, St#{chans := Cs1}), Env, Trace).

%% One action of process S: what it does, and the trace message the table sends.
proc(S, {spawn, C}, St = #{procs := Ps, table := Tab}, _Env, _Trace) ->
    Tab1 = case Tab of
               %% Tracing inheritance: the child is routed where its parent is now.
               #{S := {Owner, _}} -> Tab#{C => {Owner, 0}};
               #{} -> Tab
           end,
    emit(S, {trace, S, spawn, C, mfa(C)}, St#{procs := Ps#{C => {0, []}}, table := Tab1});
proc(S, {send, To, M}, St = #{procs := Ps}, _Env, _Trace) ->
    {Pc, Mbox} = maps:get(To, Ps),
    emit(S, {trace, S, send, M, To}, St#{procs := Ps#{To := {Pc, lists:sort([M | Mbox])}}});
proc(S, {recv, M}, St = #{procs := Ps}, _Env, _Trace) ->
    {Pc, Mbox} = maps:get(S, Ps),
    emit(S, {trace, S, 'receive', M}, St#{procs := Ps#{S := {Pc, lists:delete(M, Mbox)}}});
proc(S, exit, St, _Env, _Trace) ->
    St1 = #{table := Tab} = emit(S, {trace, S, exit, normal}, St),
    case Tab of
        #{S := {Owner, _}} -> St1#{table := Tab#{S := {Owner, exited}}};
        #{} -> St1
    end.

emit(S, Msg, St = #{table := Tab}) ->
    case Tab of
        #{S := {Owner, N}} when is_integer(N) ->
            enqueue(S, Owner, Msg, St#{table := Tab#{S := {Owner, N + 1}}});
        #{} ->
            %% Untraced (cleared) processes send nothing.
            St
    end.

enqueue(From, To, Msg, St = #{chans := Cs}) ->
    St#{chans := Cs#{{From, To} => maps:get({From, To}, Cs, []) ++ [Msg]}}.

%% The effects of one step of tracer T, in order.
effects(_T, [], St, _Env, _Trace) ->
    St;
effects(T, [{send, session, R} | Fx], St, Env, Trace) ->
    effects(T, Fx, session(R, St, Trace), Env, Trace);
effects(T, [{send, To, M} | Fx], St, Env, Trace) ->
    effects(T, Fx, enqueue(T, To, M, St), Env, Trace);
effects(T, [{detach, S, Disp} | Fx], St = #{table := Tab}, Env, Trace) ->
    %% PREEMPT: a counted change of route, atomic with S's sending of events.
    {Cut, Tab1} = case Tab of
                      #{S := {_, exited}} -> {exited, Tab#{S := {T, exited}}};
                      #{S := {_, N}} -> {{count, N}, Tab#{S := {T, 0}}};
                      #{} -> {exited, Tab}
                  end,
    Cut1 = case Env of
               #{bug := ignore_cut} -> none;
               #{} -> Cut
           end,
    effects(T, Fx, enqueue(T, Disp, {riarc_dtc, T, S, Cut1}, St#{table := Tab1}), Env, Trace);
effects(T, [{clear, S} | Fx], St = #{table := Tab}, Env, Trace) ->
    effects(T, Fx, St#{table := maps:remove(S, Tab)}, Env, Trace);
effects(T, [{started, T2, _S} | Fx], St = #{tracers := Ts}, Env, Trace) ->
    Args = erase({?MODULE, start, T2}),
    is_map_key(T2, Ts) andalso throw({?MODULE, {second_tracer, T2}, Trace}),
    effects(T, Fx, set_tracer(T2, {boot, Args}, St), Env, Trace);
effects(T, [perturb | Fx], St, Env, Trace) ->
    effects(T, Fx, St, Env, Trace);
effects(T, [{stop, Told, Stats} | Fx], St, Env, Trace) ->
    St1 = lists:foldl(fun(R, A) -> session(R, A, Trace) end, St, Told ++ [{riarc_tracer_down, T, Stats}]),
    effects(T, Fx, set_tracer(T, stopped, St1), Env, Trace).

%% What the session is told. Only `none' verdicts are kept (for the terminal check);
%% anything that is itself a failure ends the exploration at once.
session({riarc_tracer_up, _, _, _, _}, St, _Trace) -> St;
session({riarc_adopted, _, _, _, _, _}, St, _Trace) -> St;
session({riarc_tracer_down, _, _}, St, _Trace) -> St;
session({riarc_explanation, _, _}, St, _Trace) -> St;
session({riarc_partition, _, _, _}, St, _Trace) -> St;
session({riarc_root_exit, _, _, _, _}, St, _Trace) -> St;
session({riarc_verdict, _T, S, _MFA, none, _Why, N}, St = #{verdicts := Vs}, _Trace) ->
    St#{verdicts := lists:sort([{S, N} | Vs])};
session(R, _St, Trace) ->
    throw({?MODULE, R, Trace}).

own_ack(To, {riarc_rtd, _, {dtc, To, _}}) -> true;
own_ack(_, _) -> false.

terminal(#{tracers := Ts, chans := Cs, procs := Ps, verdicts := Vs},
         #{scripts := Scripts, expected := Expected}, Trace) ->
    Live = [T || {T, V} <- maps:to_list(Ts), V =/= stopped],
    Live =:= [] orelse throw({?MODULE, {deadlock, live_tracers, Live}, Trace}),
    Lost = maps:filter(fun({_, To}, Ms) -> [M || M <- Ms, not own_ack(To, M)] =/= [] end, Cs),
    map_size(Lost) =:= 0 orelse throw({?MODULE, {undelivered, Lost}, Trace}),
    Stuck = [S || {S, Sc} <- maps:to_list(Scripts),
                  element(1, maps:get(S, Ps, {-1, []})) =/= length(Sc)],
    Stuck =:= [] orelse throw({?MODULE, {processes_not_finished, Stuck}, Trace}),
    Want = lists:sort(maps:to_list(Expected)),
    Want =:= Vs orelse throw({?MODULE, {verdicts, #{expected => Want, got => Vs}}, Trace}),
    ok.

%%% ---------------------------------------------------------------------------
%%% Partial-order reduction: persistent sets (see the module doc)
%%% ---------------------------------------------------------------------------

%% An actor is a process ({p, S}) or a tracer ({t, T}); every transition is one actor's.
actor({proc, S, _}) -> {p, S};
actor({boot, T}) -> {t, T};
actor({deliver, _, T, _}) -> {t, T}.

%% A persistent subset of the enabled transitions Trs (non-empty when Trs is).
reduce(Trs, _St, #{por := false}) -> Trs;
reduce([_] = Trs, _St, _Env) -> Trs;
reduce(Trs, St = #{tracers := Ts}, Env) ->
    %% Γ-owner: the tracer that has the process in its Γ (at most one, ever).
    Gamma = maps:from_list([{S, T} || {T, {run, Core}} <- maps:to_list(Ts),
                                      S <- riarc_tracer_core:gamma(Core)]),
    Ctx = ctx(St, Env, Gamma),
    case [Tr || Tr = {proc, S, _} <- Trs, detachers(S, Ctx) =:= []]
         ++ [Tr || Tr = {deliver, _, _, _} <- Trs, quiet(Tr, Ts)] of
        [Tr | _] ->
            %% A process whose route nobody can switch any more commutes with every
            %% other actor; so does a quiet delivery (see quiet/2).
            [Tr];
        [] ->
            Seeds = lists:usort([actor(Tr) || Tr <- Trs]),
            {_, Best} = lists:foldl(
                          fun(Seed, {Size, _} = Acc) ->
                                  Q = closure([Seed], #{}, Ctx),
                                  Sel = [Tr || Tr <- Trs, is_map_key(actor(Tr), Q)],
                                  case length(Sel) of
                                      L when L < Size -> {L, Sel};
                                      _ -> Acc
                                  end
                          end, {length(Trs) + 1, Trs}, Seeds),
            Best
    end.

%% A delivery is quiet when it only feeds the partition's monitor an event of a process
%% the tracer traces itself.
quiet({deliver, S, T, {trace, S, 'receive', _}}, Ts) ->
    quiet_for(S, maps:get(T, Ts));
quiet({deliver, S, T, {trace, S, send, _, _}}, Ts) ->
    quiet_for(S, maps:get(T, Ts));
quiet(_, _) -> false.

quiet_for(S, {run, Core}) ->
    riarc_tracer_core:mode(Core) =:= direct andalso
        lists:member(S, riarc_tracer_core:gamma(Core)) andalso
        not is_map_key(S, maps:get(pi, riarc_tracer_core:state_map(Core))).

ctx(St = #{tracers := Ts, chans := Cs}, Env, Gamma) ->
    Live = [T || {T, V} <- maps:to_list(Ts), V =/= stopped],
    %% A held route (short routes: the packets wait for the tracer that will ask for
    %% them) may go to any tracer: its requester is not known before its dtc arrives.
    Pi = maps:from_list([{T, [case R of {held, _} -> any; _ -> R end
                              || R <- maps:values(maps:get(pi, riarc_tracer_core:state_map(Core)))]}
                         || {T, {run, Core}} <- maps:to_list(Ts)]),
    %% Tracers that a routed spawn event in flight may make someone send a dtc to.
    Disps = lists:usort([D || Ms <- maps:values(Cs),
                              {riarc_rtd, D, {evt, {spawn, _, _, _}}} <- Ms]),
    erase({?MODULE, held}),
    #{st => St, env => Env, gamma => Gamma, live => Live, pi => Pi, disps => Disps}.

%% The actors whose future transitions a persistent set must take in with Seed's.
closure([], Q, _Ctx) -> Q;
closure([A | Rest], Q, Ctx) ->
    case Q of
        #{A := _} -> closure(Rest, Q, Ctx);
        #{} -> closure(deps(A, Ctx) ++ Rest, Q#{A => true}, Ctx)
    end.

%% deps(A): the actors that may, before any transition of A, take a transition dependent
%% on one of A's enabled ones, or enable one of A's disabled ones.
deps({p, S}, Ctx = #{st := #{procs := Ps}, env := #{scripts := Scripts, parent := Parent}}) ->
    Script = maps:get(S, Scripts),
    case Ps of
        #{S := {Pc, _}} when Pc >= length(Script) -> [];
        #{S := {Pc, Mbox}} ->
            A = lists:nth(Pc + 1, Script),
            case enabled(A, Mbox) of
                true -> [{t, T} || T <- detachers(S, Ctx)];
                false -> {recv, M} = A, senders(S, M, Ctx)
            end;
        #{} ->
            %% Not spawned yet: its parent must act first.
            [{p, maps:get(S, Parent)}]
    end;
deps({t, T}, Ctx = #{st := #{tracers := Ts}, live := Live, pi := Pi, disps := Disps}) ->
    case Ts of
        #{T := {boot, {_Mon, S, _MFA, _Disp}}} -> [{p, S}];
        #{T := {run, _}} ->
            %% Its enabled deliveries may detach a process it may be the detacher of;
            %% its other channels may be filled by the processes that may have it as
            %% owner and by the tracers that may send to it.
            Senders = case lists:member(T, Disps) of
                          true -> Live;
                          false -> [X || X <- Live,
                                         case Ts of
                                             #{X := {boot, {_, _, _, T}}} -> true;
                                             #{X := {run, _}} ->
                                                 Routes = maps:get(X, Pi),
                                                 lists:member(T, Routes) orelse lists:member(any, Routes);
                                             #{} -> false
                                         end]
                      end,
            [{p, X} || X <- may_own(T, Ctx)] ++ [{t, X} || X <- Senders, X =/= T];
        #{} -> []
    end.

%% The tracers that may yet switch S's route: none once S is in a Γ; its own tracer, if
%% S is monitored and that tracer exists; else the Γ-owner of its parent (the only one
%% that may handle its spawn event with no route for the parent, I21); any if unknown.
detachers(S, Ctx = #{st := #{tracers := Ts}, env := #{own := Own, parent := Parent},
                     gamma := Gamma}) ->
    case Gamma of
        #{S := _} -> [];
        #{} ->
            case {is_map_key(S, Own), Ts} of
                {true, #{{t, S} := {boot, _}}} -> [{t, S}];
                {true, #{{t, S} := _}} -> [];
                {Mon, _} -> holders(S, maps:get(S, Parent), Mon, Ctx)
            end
    end.

%% The tracers that may hold the spawn event of C by P: the receiver of the channel it is
%% in, or else every tracer whose state has the event or its trace message somewhere
%% (held back in priority mode or for reordering; a monitor's expectations may name it
%% too, which only makes the answer larger). Until one of them takes a step, nobody else
%% can handle that event, hence nobody else can switch C's route or start its tracer.
holders(C, P, Mon, #{st := #{chans := Cs, tracers := Ts}, live := Live, gamma := Gamma}) ->
    case [{To, M} || {{_, To}, Ms} <- maps:to_list(Cs), M <- Ms, carries_spawn(M, P, C)] of
        [{To, {trace, _, _, _, _}}] when not Mon, map_get(P, Gamma) =:= To ->
            %% A direct-mode tracer (it never leaves that mode) that traces P handles
            %% the event itself: it takes C into its Γ, switching nothing.
            case Ts of
                #{To := {run, Core}} ->
                    case riarc_tracer_core:mode(Core) of
                        direct -> [];
                        priority -> [To]
                    end;
                #{} -> [To]
            end;
        [{To, _} | _] -> [To];
        [] ->
            case [T || {T, Spawns} <- held(Ts), is_map_key({P, C}, Spawns)] of
                [] -> Live;
                Hs -> Hs
            end
    end.

carries_spawn({trace, P, spawn, C, _}, P, C) -> true;
carries_spawn({riarc_rtd, _, {evt, {spawn, P, C, _}}}, P, C) -> true;
carries_spawn(_, _, _) -> false.

%% Per running tracer, the spawn events (P, C) its state holds anywhere: found once per
%% state, when first asked for (ctx/3 forgets the last state's).
held(Ts) ->
    case get({?MODULE, held}) of
        undefined ->
            Held = [{T, spawns_in(strip(Core), #{})} || {T, {run, Core}} <- maps:to_list(Ts)],
            put({?MODULE, held}, Held),
            Held;
        Held -> Held
    end.

%% The spawn events anywhere in a term, as an event or as its trace message: {P, C} keys.
spawns_in({spawn, P, C, MFA}, Acc) when MFA =:= {?MODULE, process, [C]} ->
    Acc#{{P, C} => true};
spawns_in({trace, P, spawn, C, MFA}, Acc) when MFA =:= {?MODULE, process, [C]} ->
    Acc#{{P, C} => true};
spawns_in(T, Acc) when is_tuple(T) ->
    spawns_in(tuple_to_list(T), Acc);
spawns_in([H | T], Acc) ->
    spawns_in(T, spawns_in(H, Acc));
spawns_in(M, Acc) when is_map(M) ->
    spawns_in(maps:to_list(M), Acc);
spawns_in(F, Acc) when is_function(F) ->
    %% What a closure captured is in the state too.
    {env, Env} = erlang:fun_info(F, env),
    spawns_in(Env, Acc);
spawns_in(_, Acc) ->
    Acc.

senders(S, M, #{st := #{procs := Ps}, env := #{senders := Senders}}) ->
    [{p, X} || {X, I} <- maps:get({S, M}, Senders, []),
               case Ps of #{X := {Pc, _}} -> I > Pc; #{} -> true end].

%% Processes with actions left that may send trace messages to T.
may_own(T, Ctx = #{st := #{procs := Ps}, env := #{scripts := Scripts}}) ->
    [X || {X, Sc} <- maps:to_list(Scripts),
          case Ps of
              #{X := {Pc, _}} -> Pc < length(Sc);
              #{} -> true
          end,
          may_own1(T, X, Ctx)].

may_own1(T, X, Ctx = #{st := #{procs := Ps, table := Tab}, env := #{parent := Parent}}) ->
    case Tab of
        #{X := {T, _}} -> true;
        #{} ->
            lists:member(T, detachers(X, Ctx)) orelse
                (not is_map_key(X, Ps) andalso may_own1(T, maps:get(X, Parent), Ctx))
    end.
