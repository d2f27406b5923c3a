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
%% left out). The model is {@link riarc_explore_model}, the reduction below
%% {@link riarc_explore_por}; this module makes the systems and runs the searches.
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

-import(riarc_explore_model, [env/3, initial/1, transitions/2, step/4, terminal/3, key/1]).
-import(riarc_explore_por, [reduce/3]).

%% A search's failure: an invariant or soundness violation with the transitions that led
%% to it, a search process that crashed, or a search larger than `max_states'.
-type error_reason() :: {violation, #{reason := term(), monitored := [atom()], trace := [term()],
                                      atom() => term()}}
                      | {crashed, term()} | {state_limit, pos_integer()}.

%% A system is a root and each process's script: the model's ({@link riarc_explore_model}).
-type sid() :: riarc_explore_model:sid().
-type action() :: riarc_explore_model:action().
-type system() :: riarc_explore_model:system().
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

%% @private The partition's monitor of the model. The model's Λ names
%% riarc_explore_model's own; this one stays for callers that named this module.
-spec analyse(riarc_event:event(), #{sid() => [riarc_event:event()]}) ->
    {next, #{sid() => [riarc_event:event()]}} | reject.
analyse(E, Exp) ->
    riarc_explore_model:analyse(E, Exp).

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
        throw:{riarc_explore_model, Why, Trace} ->
            {error, {?MODULE, {violation, #{reason => Why, monitored => Mon,
                                            trace => lists:reverse(Trace)}}}}
    after
        ets:delete(Visited)
    end.

%%% ---------------------------------------------------------------------------
%%% The search: riarc_explore_model's states, depth first, reduced by riarc_explore_por
%%% ---------------------------------------------------------------------------

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
    catch throw:{riarc_explore_model, Why, _Trace} ->
            ets:insert(Visited, {{failure, failure_kind(Why)}}),
            failed
    end;
failing(F, #{}, _Visited) ->
    F().

%% What kind of failure: the invariant for a violation, else the reason's tag.
failure_kind({riarc_violation, _T, Id, _Info, _State}) -> {riarc_violation, Id};
failure_kind(Why) when is_tuple(Why) -> element(1, Why);
failure_kind(Why) -> Why.
