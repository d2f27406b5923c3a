%% @doc Tests of the property language: a table of traces and verdicts for every
%% construct (each checked on the compiled monitor and on riarc_shml_ref), error
%% messages, the file API and CLI, and the example property files.
%% ```
%% $ rebar3 eunit --module=riarc_shml_tests
%% '''
-module(riarc_shml_tests).

-include_lib("eunit/include/eunit.hrl").

-export([verdict/3, ref_verdict/3, late_main/0, late_worker/0, unnamed_main/0]).

-define(MFA, {m, f, []}).
-define(INIT, {init, c, p, {m, f, []}}).

%%% Helpers

%% @doc The verdict of the first matching clause of a property text on a trace, by the
%% compiled module; `undefined' when no clause matches MFA.
-spec verdict(string(), {module(), atom(), list()}, [riarc_event:event()]) ->
    accept | reject | none | undefined.
verdict(Src, MFA, Trace) ->
    Mod = riarc_shml_tests_prop,
    Self = self(),
    %% Loaded and run in a process of its own, so that nothing keeps the old code alive.
    {Pid, Ref} = spawn_monitor(fun() ->
        {ok, Mod} = riarc_shml:load_string(Src, Mod, "t.prop"),
        Self ! {self(), case Mod:spec(MFA) of
                            {ok, Mon} -> drive(Mon, Trace);
                            undefined -> undefined
                        end}
    end),
    receive
        {Pid, V} ->
            receive {'DOWN', Ref, process, Pid, _} -> ok end,
            _ = code:delete(Mod),
            _ = code:purge(Mod),
            V;
        {'DOWN', Ref, process, Pid, Why} -> error({verdict_crashed, Why})
    end.

drive(_Mon, []) -> none;
drive(Mon, [E | Es]) ->
    case riarc_monitor:analyse(Mon, E) of
        {verdict, V} -> V;
        {next, Next} -> drive(Next, Es)
    end.

ref(Src, MFA, Trace) ->
    {ok, Cs} = riarc_shml:parse_string(Src, "t.prop"),
    ref_verdict(Cs, MFA, Trace).

%% @doc The reference interpreter's verdict (riarc_shml_ref, which sees the trace as a
%% monitor does: riarc_shml_ref:project/2).
-spec ref_verdict([riarc_shml:clause()], {module(), atom(), list()}, [riarc_event:event()]) ->
    accept | reject | none | undefined.
ref_verdict(Clauses, MFA, Trace) -> riarc_shml_ref:verdict(Clauses, MFA, Trace).

with(Formula) -> "with m:f() monitor " ++ Formula ++ ".".

%%% The table: {Formula, Trace, Verdict}; the trace starts after the init event unless
%%% the formula's first action is about init.

table() ->
    [%% ff and tt: a verdict on the first event, none on an empty trace
     {"ff", [], none},
     {"ff", [?INIT], reject},
     {"tt", [?INIT], accept},
     {"tt", [], none},
     %% init: C <- P, M:F(Args)
     {"[C <- P, m:f()] ff", [?INIT], reject},
     {"[C <- p, m:f()] ff", [?INIT], reject},
     {"[C <- q, m:f()] ff", [?INIT], accept},
     {"[C <- _, m:g()] ff", [?INIT], accept},
     {"[C <- _, _:_()] ff", [?INIT], reject},
     {"[C <- _, m:f(_)] ff", [?INIT], accept},
     {"[C <- P, m:f()] [C ? x] ff", [?INIT, {recv, c, x}], reject},
     {"[C <- P, m:f()] [C ? x] ff", [?INIT, {recv, d, x}], accept},
     {"[C <- P, m:f()] [C ? x] ff", [?INIT], none},
     {"[C <- P, m:f() when C =:= P] ff", [?INIT], accept},
     %% spawn: P -> C, M:F(Args)
     {"[_ <- _, _:_()] [P -> C, m:g(X) when X > 1] [C:_ ! _] ff",
      [?INIT, {spawn, c, d, {m, g, [2]}}, {send, d, c, hi}], reject},
     {"[_ <- _, _:_()] [P -> C, m:g(X) when X > 1] [C:_ ! _] ff",
      [?INIT, {spawn, c, d, {m, g, [1]}}, {send, d, c, hi}], accept},
     {"[_ <- _, _:_()] [P -> C, m:g(X) when X > 1] [C:_ ! _] ff",
      [?INIT, {spawn, c, d, {m, g, [2]}}, {send, c, d, hi}], accept},
     {"[_ <- _, _:_()] [P -> C, m:g(_, _)] ff",
      [?INIT, {spawn, c, d, {m, g, [1]}}], accept},
     %% exit: P ** Reason
     {"[C <- _, _:_()] [C ** R when R =/= normal] ff", [?INIT, {exit, c, normal}], accept},
     {"[C <- _, _:_()] [C ** R when R =/= normal] ff", [?INIT, {exit, c, boom}], reject},
     {"[C <- _, _:_()] [C ** {shutdown, _}] ff", [?INIT, {exit, c, {shutdown, x}}], reject},
     %% send: S:R ! Msg
     {"[_ <- _, _:_()] [c:d ! {req, N} when N >= 10] ff", [?INIT, {send, c, d, {req, 10}}], reject},
     {"[_ <- _, _:_()] [c:d ! {req, N} when N >= 10] ff", [?INIT, {send, c, d, {req, 9}}], accept},
     {"[_ <- _, _:_()] [c:d ! {req, N} when N >= 10] ff", [?INIT, {send, c, e, {req, 10}}], accept},
     {"[_ <- _, _:_()] [S:R ! _ when S =:= R] ff", [?INIT, {send, c, c, x}], reject},
     %% recv: R ? Msg, guards with ',' and ';'
     {"[_ <- _, _:_()] [_ ? X when is_integer(X), X > 2; X =:= big] ff", [?INIT, {recv, c, 3}], reject},
     {"[_ <- _, _:_()] [_ ? X when is_integer(X), X > 2; X =:= big] ff", [?INIT, {recv, c, big}], reject},
     {"[_ <- _, _:_()] [_ ? X when is_integer(X), X > 2; X =:= big] ff", [?INIT, {recv, c, 2}], accept},
     {"[_ <- _, _:_()] [_ ? X when is_integer(X), X > 2; X =:= big] ff", [?INIT, {recv, c, small}], accept},
     %% timeout: P ?? timeout matches {timeout, P} (a receive ... after fired in P)
     {"[_ <- _, _:_()] [_ ?? timeout] ff", [?INIT, {timeout, c}], reject},
     {"[C <- _, _:_()] [C ?? timeout] ff", [?INIT, {timeout, c}], reject},
     {"[C <- _, _:_()] [C ?? timeout] ff", [?INIT, {timeout, d}], accept},
     {"[_ <- _, _:_()] [_ ?? timeout] ff", [?INIT], none},
     {"[_ <- _, _:_()] [P ?? timeout when P =/= c] ff", [?INIT, {timeout, c}], accept},
     {"[_ <- _, _:_()] [P ?? timeout when P =/= c] ff", [?INIT, {timeout, d}], reject},
     {"[_ <- _, _:_()] [_ ?? timeout] [_ ?? timeout] ff", [?INIT, {timeout, c}, {timeout, c}], reject},
     %% ... and not a received message timeout; R ? timeout is the message, not the timeout
     %% (a formula with no ? action does not see receives, and one with no ?? action
     %% does not see timeouts: the monitor goes on waiting)
     {"[_ <- _, _:_()] [_ ?? timeout] ff", [?INIT, {recv, c, timeout}], none},
     {"[_ <- _, _:_()] [_ ?? timeout] ff", [?INIT, {recv, c, timeout}, {timeout, c}], reject},
     {"[_ <- _, _:_()] [_ ? timeout] ff", [?INIT, {timeout, c}], none},
     {"[_ <- _, _:_()] [_ ? timeout] ff", [?INIT, {timeout, c}, {recv, c, x}], accept},
     {"[_ <- _, _:_()] [_ ? timeout] ff", [?INIT, {recv, c, timeout}], reject},
     {"[_ <- _, _:_()] [_ ? _] ff", [?INIT, {timeout, c}], none},
     {"[_ <- _, _:_()] [_ ? _] ff", [?INIT, {timeout, c}, {recv, c, x}], reject},
     %% a server never times out waiting
     {"[S <- _, _:_()] max(X. and([S ?? timeout] ff, [_ ? _] X))",
      [?INIT, {recv, c, a}, {recv, c, b}], none},
     {"[S <- _, _:_()] max(X. and([S ?? timeout] ff, [_ ? _] X))",
      [?INIT, {recv, c, a}, {recv, c, b}, {timeout, c}], reject},
     %% patterns: lists, strings, maps, chars, negative numbers, aliases, constraints
     {"[_ <- _, _:_()] [_ ? [H | T] = L when length(L) > 1, H =:= hd(T)] ff",
      [?INIT, {recv, c, [1, 1]}], reject},
     {"[_ <- _, _:_()] [_ ? \"ab\" ++ _] ff", [?INIT, {recv, c, "abc"}], reject},
     {"[_ <- _, _:_()] [_ ? #{k := V} when V < -1] ff", [?INIT, {recv, c, #{k => -2}}], reject},
     {"[_ <- _, _:_()] [_ ? #{k := V} when V < -1] ff", [?INIT, {recv, c, #{j => -2}}], accept},
     {"[_ <- _, _:_()] [_ ? {$a, -1, 2.5, 'Q', <<>>}] ff", [?INIT, {recv, c, x}], accept},
     {"[_ <- _, _:_()] [_ ? {X, X}] ff", [?INIT, {recv, c, {1, 1}}], reject},
     {"[_ <- _, _:_()] [_ ? {X, X}] ff", [?INIT, {recv, c, {1, 1.0}}], accept},
     %% and: reject as soon as one conjunct reaches ff, accept when all are discharged
     {"[_ <- _, _:_()] and([_ ? a] ff, [_ ? b] ff)", [?INIT, {recv, c, a}], reject},
     {"[_ <- _, _:_()] and([_ ? a] ff, [_ ? b] ff)", [?INIT, {recv, c, b}], reject},
     {"[_ <- _, _:_()] and([_ ? a] ff, [_ ? b] ff)", [?INIT, {recv, c, z}], accept},
     {"[_ <- _, _:_()] and([_ ? _] [_ ? a] ff, [_ ? b] tt)", [?INIT, {recv, c, b}], none},
     {"[_ <- _, _:_()] and([_ ? _] [_ ? a] ff, [_ ? b] tt)", [?INIT, {recv, c, b}, {recv, c, a}], reject},
     {"[_ <- _, _:_()] and([_ ? _] [_ ? a] ff, [_ ? b] tt)", [?INIT, {recv, c, b}, {recv, c, z}], accept},
     {"[_ <- _, _:_()] and([_ ? X] and([_ ? X] ff, [_ ? _] tt))", [?INIT, {recv, c, 1}, {recv, c, 1}], reject},
     {"and(tt, ff)", [?INIT], reject},
     {"and(tt, tt)", [?INIT], accept},
     %% max: recursion unfolds, variables bound inside are fresh on every unfolding
     {"max(X. and([_ ? ping] X, [_ ? stop] ff, [_ <- _, _:_()] X))",
      [?INIT, {recv, c, ping}, {recv, c, ping}], none},
     {"max(X. and([_ ? ping] X, [_ ? stop] ff, [_ <- _, _:_()] X))",
      [?INIT, {recv, c, ping}, {recv, c, stop}], reject},
     {"max(X. and([_ ? ping] X, [_ ? stop] ff, [_ <- _, _:_()] X))",
      [?INIT, {recv, c, ping}, {recv, c, other}, {recv, c, stop}], accept},
     {"[_ <- _, _:_()] max(X. [_ ? V] [_:_ ! W when W =/= V] ff)",
      [?INIT, {recv, c, 1}, {send, c, d, 1}], accept},
     {"[_ <- _, _:_()] max(X. [_ ? V] and([_:_ ! V] X, [_:_ ! W when W =/= V] ff))",
      [?INIT, {recv, c, 1}, {send, c, d, 1}, {recv, c, 2}, {send, c, d, 2},
       {recv, c, 3}, {send, c, d, 4}], reject},
     {"[_ <- _, _:_()] max(X. [_ ? V] and([_:_ ! V] X, [_:_ ! W when W =/= V] ff))",
      [?INIT, {recv, c, 1}, {send, c, d, 1}, {recv, c, 2}, {send, c, d, 2}], none},
     %% a variable bound before max keeps its value across unfoldings
     {"[C <- _, _:_()] max(X. and([C ? _] X, [D ? _ when D =/= C] ff))",
      [?INIT, {recv, c, 1}, {recv, c, 2}, {recv, d, 3}], reject},
     %% nested max, the outer variable used in the inner body
     {"max(X. [_ <- _, _:_()] max(Y. and([_ ? a] Y, [_ ? b] X, [_ ? c] ff)))",
      [?INIT, {recv, c, a}, {recv, c, b}, {recv, c, c}], accept},
     {"max(X. [_ <- _, _:_()] max(Y. and([_ ? a] Y, [_ ? b] X, [_ ? c] ff)))",
      [?INIT, {recv, c, a}, {recv, c, a}, {recv, c, c}], reject},
     {"max(X. [_ <- _, _:_()] max(Y. and([_ ? a] Y, [_ ? b] X, [_ ? c] ff)))",
      [?INIT, {recv, c, a}, {recv, c, b}, {init, c, p, {m, f, []}}, {recv, c, c}], reject},
     %% only the message kinds a formula mentions are seen: here sends are invisible
     {"[_ <- _, _:_()] [_ ? a] [_ ? b] ff", [?INIT, {recv, c, a}, {send, c, d, x}, {recv, c, b}], reject},
     %% ... and here they are seen, and discharge the necessity
     {"[_ <- _, _:_()] and([_ ? a] [_ ? b] ff, [_:_ ! zz] tt)",
      [?INIT, {recv, c, a}, {send, c, d, x}, {recv, c, b}], accept},
     %% timeouts are seen by a formula with a ?? action only, receives by one with a ?
     %% action only (issue 28: a timeout used to end a receive-only monitor with accept)
     {"[_ <- _, _:_()] [_:_ ! a] [_:_ ! b] ff", [?INIT, {send, c, d, a}, {timeout, c}, {send, c, d, b}], reject},
     {"[_ <- _, _:_()] [_ ? a] [_ ? b] ff", [?INIT, {recv, c, a}, {timeout, c}, {recv, c, b}], reject},
     {"[_ <- _, _:_()] [_ ?? timeout] [_ ?? timeout] ff", [?INIT, {timeout, c}, {recv, c, x}, {timeout, c}], reject},
     {"[_ <- _, _:_()] [_ ?? timeout] [_ ?? timeout] ff", [?INIT, {timeout, c}, {send, c, d, x}, {timeout, c}], reject},
     {"[_ <- _, _:_()] and([_ ? a] [_ ? b] ff, [_ ?? timeout] tt)",
      [?INIT, {recv, c, a}, {timeout, c}, {recv, c, b}], accept},
     %% the process's own exit is always seen; spawns, inits and other processes' exits
     %% only by a formula that names their kind
     {"[_ <- _, _:_()] [_ ? a] [_ ? b] ff", [?INIT, {recv, c, a}, {exit, c, normal}, {recv, c, b}], accept},
     {"[_ <- _, _:_()] [_ ? a] [_ ? b] ff", [?INIT, {recv, c, a}, {exit, d, normal}, {recv, c, b}], reject},
     {"[_ <- _, _:_()] [_ ? a] [_ ? b] ff",
      [?INIT, {recv, c, a}, {spawn, c, d, {m, g, []}}, {recv, c, b}], reject},
     {"[_ <- _, _:_()] and([_ ? a] [_ ? b] ff, [_ -> _, m:h()] tt)",
      [?INIT, {recv, c, a}, {spawn, c, d, {m, g, []}}, {recv, c, b}], accept},
     {"[_ <- _, _:_()] and([_ ? a] [_ ? b] ff, [_ ** crash] tt)",
      [?INIT, {recv, c, a}, {exit, d, normal}, {recv, c, b}], accept},
     %% a formula with no init action: the start leaves the first state as it is
     {"[_ ? a] ff", [?INIT, {recv, c, a}], reject},
     {"max(X. and([_ ? {error, _}] ff, [_ ? _] X))",
      [?INIT, {recv, c, ok}, {timeout, c}, {send, c, d, x}, {spawn, c, d, {m, g, []}},
       {init, d, c, {m, g, []}}, {exit, d, normal}, {recv, c, {error, late}}], reject},
     {"max(X. and([_ ? {error, _}] ff, [_ ? _] X))",
      [?INIT, {recv, c, ok}, {timeout, c}, {exit, c, normal}], accept},
     {"max(X. and([_ ? {error, _}] ff, [_ ? _] X))", [{attached, c, ?MFA}, {recv, c, {error, x}}], reject},
     %% a formula that can no longer reach ff is tt: accept at once
     {"[_ <- _, _:_()] [_ ? x] [_ ? y] tt", [?INIT, {recv, c, x}], accept},
     {"max(X. and([_ ? _] X, [_ <- _, _:_()] X))", [?INIT], accept},
     {"[_ <- _, _:_()] max(X. and([_ ? a] X, [_ ? b] max(Y. [_ ? c] Y)))", [?INIT], accept},
     {"[_ <- _, _:_()] max(X. and([_ ? a] X, [_ ? b] max(Y. [_ ? c] X), [_ ? d] ff))",
      [?INIT, {recv, c, b}, {recv, c, c}], none},
     {"[_ <- _, _:_()] and([_ ? a] tt, [_ ? _] [_ ? x] ff)", [?INIT, {recv, c, a}], none},
     {"[_ <- _, _:_()] and([_ ? a] tt, [_ ? b] [_ ? x] ff)", [?INIT, {recv, c, a}], accept},
     %% comments, parentheses
     {"% a comment\n([_ <- _, _:_()] % another\n ff)", [?INIT], reject}].

%% Each with a timeout that survives a cold start: the first compiles a property, which
%% loads the compiler; in rebar3's VM on a loaded machine that took over EUnit's default
%% 5 s (and a test timed out in a generator cancels the rest of the run).
table_test_() ->
    [{lists:flatten(io_lib:format("~ts on ~0tp", [F, T])),
      {timeout, 60,
       fun() ->
               Src = with(F),
               ?assertEqual(V, verdict(Src, ?MFA, T)),
               ?assertEqual(V, ref(Src, ?MFA, T))
       end}} || {F, T, V} <- table()].

%% A long trace where two branches keep matching: the state stays small (duplicates of
%% a pending necessity with the same values are merged). Measured in reductions, not
%% time: twice the events cost at most about twice the work (a state that grew with the
%% trace would make it four times).
no_blowup_test() ->
    Src = with("max(X. and([_ ? _] X, [_ ? _] X, [_ ? stop] ff, [_ <- _, _:_()] X))"),
    Mod = riarc_shml_tests_blowup,
    {ok, Mod} = riarc_shml:load_string(Src, Mod, "t.prop"),
    {ok, Mon} = Mod:spec(?MFA),
    Work = fun(K) ->
                   Trace = [?INIT | [{recv, c, N rem 3} || N <- lists:seq(1, K)]],
                   {reductions, R0} = process_info(self(), reductions),
                   none = drive(Mon, Trace),
                   {reductions, R1} = process_info(self(), reductions),
                   R1 - R0
           end,
    {W1, W2} = {Work(10000), Work(20000)},
    _ = code:delete(Mod),
    _ = code:purge(Mod),
    ?assert(W2 < 3 * W1, {W1, W2}).

%% The reference interpreter on the same formula: a conjunction holds each necessity
%% once, or the two branches back to X double what is pending at every event (2^K).
ref_no_blowup_test() ->
    {ok, Cs} = riarc_shml:parse_string(with("max(X. and([_ ? _] X, [_ ? _] X, [_ ? stop] ff, [_ <- _, _:_()] X))"),
                                       "t.prop"),
    Work = fun(K) ->
                   Trace = [?INIT | [{recv, c, N rem 3} || N <- lists:seq(1, K)]],
                   {reductions, R0} = process_info(self(), reductions),
                   none = riarc_shml_ref:verdict(Cs, ?MFA, Trace),
                   {reductions, R1} = process_info(self(), reductions),
                   R1 - R0
           end,
    {W1, W2} = {Work(100), Work(200)},
    ?assert(W2 < 3 * W1, {W1, W2}),
    ?assertEqual(reject, riarc_shml_ref:verdict(Cs, ?MFA, [?INIT, {recv, c, 1}, {recv, c, stop}])).

clauses_test_() ->
    Src = "with m:f(N) monitor [_ <- _, _:_(_)] [_ ? M when M > N] ff,\n"
          "with m:_(_) monitor tt.\n"
          "with _:g(A, A) monitor ff.",
    [?_assertEqual(reject, verdict(Src, {m, f, [1]}, [{init, c, p, {m, f, [1]}}, {recv, c, 2}])),
     ?_assertEqual(accept, verdict(Src, {m, f, [5]}, [{init, c, p, {m, f, [5]}}, {recv, c, 2}])),
     ?_assertEqual(accept, verdict(Src, {m, h, [1]}, [{init, c, p, {m, h, [1]}}])),
     ?_assertEqual(reject, verdict(Src, {x, g, [1, 1]}, [{init, c, p, {x, g, [1, 1]}}])),
     ?_assertEqual(undefined, verdict(Src, {x, g, [1, 2]}, [])),
     ?_assertEqual(undefined, ref(Src, {x, g, [1, 2]}, [])),
     ?_assertEqual(reject, ref(Src, {m, f, [1]}, [{init, c, p, {m, f, [1]}}, {recv, c, 2}]))].

trace_flags_test_() ->
    Flags = fun(Src) ->
                    {ok, Mod} = riarc_shml:load_string(Src, riarc_shml_tests_flags, "t.prop"),
                    Mod:trace_flags()
            end,
    [?_assertEqual([], Flags(with("[_ ** _] ff"))),
     ?_assertEqual([recv], Flags(with("max(X. [_ ? _] X)"))),
     ?_assertEqual([send], Flags(with("[_ <- _, _:_()] [_:_ ! _] ff"))),
     ?_assertEqual([recv, send],
                   Flags("with m:f() monitor [_ ? _] ff, with m:g() monitor [_:_ ! _] ff.")),
     %% receive timeouts are traced with receives
     ?_assertEqual([recv], Flags(with("[_ <- _, _:_()] [_ ?? timeout] ff"))),
     ?_assertEqual([recv, send], Flags(with("and([_:_ ! _] ff, [_ ?? timeout] ff)")))].

%%% Errors: FILE:LINE:COLUMN: message

err(Src) ->
    {error, R} = riarc_shml:load_string(Src, riarc_shml_tests_err, "t.prop"),
    riarc_shml:format_error(R).

errors_test_() ->
    [?_assertEqual("t.prop:2:1: illegal character(s) &", err("with m:f() monitor\n&")),
     ?_assertEqual("t.prop:2:5: illegal character(s) &", err("with m:f() monitor\n [_ & x] ff.")),
     ?_assertEqual("t.prop:1:25: unterminated string", err("with m:f() monitor [_ ? \"abc] ff.")),
     ?_assertEqual("t.prop:1:25: syntax error before: ff", err("with m:f() monitor [_ ? ff] ff.")),
     ?_assertEqual("t.prop:1:23: syntax error before: ']'", err("with m:f() monitor [_ ] ff.")),
     ?_assertEqual("t.prop:1:26: expected timeout after ?? (the action is P ?? timeout)",
                   err("with m:f() monitor [P ?? stop] ff.")),
     ?_assertEqual("t.prop:1:26: expected timeout after ?? (the action is P ?? timeout)",
                   err("with m:f() monitor [P ?? {timeout, 1}] ff.")),
     ?_assertEqual("t.prop:1:26: syntax error before: ']'", err("with m:f() monitor [P ?? ] ff.")),
     ?_assertEqual("t.prop:2:4: unexpected end of file (a property file ends with '.')",
                   err("with m:f() monitor\n ff")),
     ?_assertEqual("t.prop:2:1: the file has no clause", err("% nothing\n")),
     ?_assertEqual("t.prop:1:36: variable 'Y' is unbound",
                   err("with m:f() monitor [_ ? X when X > Y] ff.")),
     ?_assertEqual("t.prop:2:30: variable 'X' is unbound",
                   err("with m:f() monitor\n and([_ ? X] tt, [_ ? _ when X > 1] ff).")),
     ?_assertEqual("t.prop:1:32: illegal guard expression (only guard tests and guard BIFs "
                   "are allowed after when)",
                   err("with m:f() monitor [_ ? X when foo(X)] ff.")),
     ?_assertEqual("t.prop:1:32: illegal guard expression (only guard tests and guard BIFs "
                   "are allowed after when)",
                   err("with m:f() monitor [_ ? X when X = 1] ff.")),
     ?_assertEqual("t.prop:1:20: unknown construct or/2 (sHML, the safety fragment, has no "
                   "disjunction); a formula is ff, tt, X, max(X. F), and(F1, ..., Fk) or "
                   "[Action]F", err("with m:f() monitor or(ff, tt).")),
     ?_assertEqual("t.prop:1:20: unknown construct true (did you mean tt?); a formula is ff, "
                   "tt, X, max(X. F), and(F1, ..., Fk) or [Action]F",
                   err("with m:f() monitor true.")),
     ?_assertEqual("t.prop:1:20: unknown construct min/1; a formula is ff, tt, X, max(X. F), "
                   "and(F1, ..., Fk) or [Action]F", err("with m:f() monitor min(ff).")),
     ?_assertEqual("t.prop:2:6: the with pattern must be a call Module:Function(Patterns)",
                   err("% c\nwith foo monitor ff.")),
     ?_assertEqual("t.prop:1:6: the with pattern must be a call Module:Function(Patterns)",
                   err("with m:f monitor ff.")),
     ?_assertEqual("t.prop:1:6: a module or function name must be an atom or a variable",
                   err("with {m}:f() monitor ff.")),
     ?_assertEqual("t.prop:1:20: unbound recursion variable X", err("with m:f() monitor X.")),
     ?_assertEqual("t.prop:1:27: recursion variable X is not guarded: it must occur after a "
                   "necessity [Action] inside max(X. ...)",
                   err("with m:f() monitor max(X. X).")),
     ?_assertEqual("t.prop:1:35: recursion variable X is not guarded: it must occur after a "
                   "necessity [Action] inside max(X. ...)",
                   err("with m:f() monitor max(X. and(tt, X)).")),
     ?_assertEqual("t.prop:1:28: X is a data variable; only a variable bound by max(X. ...) "
                   "can stand for a formula", err("with m:f() monitor [_ ? X] X.")),
     ?_assertEqual("t.prop:1:25: illegal pattern", err("with m:f() monitor [_ ? X + 1] ff.")),
     ?_assertEqual("t.prop:1:27: a map pattern uses := (Key := Pattern), not =>",
                   err("with m:f() monitor [_ ? #{a => 1}] ff.")),
     ?_assertEqual("t.prop:1:29: expected the spawned call Module:Function(Patterns)",
                   err("with m:f() monitor [_ -> _, m:f] ff.")),
     ?_assertEqual("t.prop:1:27: variable 'K' is unbound",
                   err("with m:f() monitor [_ ? #{K := 1}] ff.")),
     ?_assertMatch("nofile.prop: no such file or directory",
                   riarc_shml:format_error(element(2, riarc_shml:load_file("nofile.prop"))))].

%%% Files and the CLI

%%% Online: a receive timeout no property names does not end a monitor (issue 28)

%% @private A worker whose receive times out once, then gets {error, late}.
-spec late_main() -> ok.
late_main() ->
    W = spawn(?MODULE, late_worker, []),
    Ref = monitor(process, W),
    timer:sleep(20),
    W ! {error, late},
    receive {'DOWN', Ref, process, W, _} -> ok end.

%% @private
-spec late_worker() -> term().
late_worker() ->
    receive after 5 -> ok end,
    receive M -> M end.

timeout_then_error_online_test_() ->
    {timeout, 60,
     fun() ->
             {ok, Mod} = riarc_shml:load_file("examples/props/no_error.prop"),
             {ok, R} = riarc:run({?MODULE, late_main, []}, Mod, #{timeout => 30000}),
             Vs = lists:sort([{F, V} || #{mfa := {_, F, _}, verdict := V} <- maps:get(verdicts, R)]),
             ?assertEqual([{late_main, accept}, {late_worker, reject}], Vs)
     end}.

%% A result holds an entry per monitored process, tens of thousands on a big system, and
%% a compiled property says the same few sentences in all of them: an accept's entry
%% stays small, its words a binary (as a string, the words alone were about 100 words of
%% heap an entry).
entry_size_test_() ->
    {timeout, 60,
     fun() ->
             {ok, Mod} = riarc_shml:load_file("examples/props/no_error.prop"),
             {ok, R} = riarc:run({?MODULE, late_main, []}, Mod, #{timeout => 30000}),
             [E] = [E || E = #{mfa := {_, late_main, _}} <- maps:get(verdicts, R)],
             ?assertMatch(#{verdict := accept,
                            why := #{words := <<"the process exited: nothing left that could fail">>}}, E),
             ?assert(erts_debug:flat_size(E) < 64, E)
     end}.

%% @private
-spec unnamed_main() -> ok.
unnamed_main() ->
    self() ! y,
    receive y -> ok end.

%% An accept on an event no necessity named holds vacuously: its words say so, and the
%% result warns of it (riarc_result:warnings/2 reads the words: a change of their form
%% would silence the warning).
vacuous_warning_test_() ->
    {timeout, 60,
     fun() ->
             {ok, Mod} = riarc_shml:load_string("with riarc_shml_tests:unnamed_main() monitor [_ ? x] ff.\n",
                                                riarc_shml_tests_vacuous, "vacuous.prop"),
             {ok, R} = riarc:run({?MODULE, unnamed_main, []}, Mod, #{timeout => 30000}),
             ?assertMatch([#{verdict := accept, why := #{words := <<"vacuous:", _/binary>>}}],
                          maps:get(verdicts, R)),
             ?assertEqual([{vacuous_accepts, 1}], maps:get(warnings, R))
     end}.
