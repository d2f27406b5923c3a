%% @doc The one-line forms (`never E', `after A never B'): each compiles to the same
%% monitor as the sHML it stands for. A PropEr test runs both on random traces and
%% compares the verdict and the event it came on; chosen cases check the verdicts, the
%% trace patterns and the error messages.
%% ```
%% $ rebar3 eunit --module=riarc_shml_oneline_tests
%% '''
-module(riarc_shml_oneline_tests).

-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-define(NUMTESTS, 300).
-define(SEED, {28, 2, 2026}).
-define(MFA, {m, f, [1]}).
-define(INIT, {init, c, p, {m, f, [1]}}).

%%% Equivalence with the expansion

oneline_equals_expansion_test_() ->
    {timeout, 300,
     fun() ->
             ?assert(riarc_test_tier:quickcheck(prop_oneline_equals_expansion(), {60, ?NUMTESTS},
                                                [{seed, ?SEED}, {to_file, user}]))
     end}.

prop_oneline_equals_expansion() ->
    ?FORALL({{OneLine, Expansion}, Traces}, {form(), vector(4, trace())},
            begin
                A = "with m:f(W) " ++ OneLine ++ ".",
                B = "with m:f(W) monitor " ++ Expansion ++ ".",
                %% (PropEr 1.2 cannot report a crashing property on OTP 25: catch here.)
                Got = try {run_all(A, Traces), run_all(B, Traces)}
                      catch C:R -> {crashed, C, R} end,
                ?WHENFAIL(io:format(user, "~ts~n~ts~n~p~n", [A, B, Got]),
                          case Got of
                              {Same, Same} -> true;
                              _ -> false
                          end)
            end).

%% Each trace's verdict and the number of events the monitor took to give it.
run_all(Src, Traces) ->
    Mod = riarc_shml_oneline_prop,
    {ok, Mod} = riarc_shml:load_string(Src, Mod, "t.prop"),
    {ok, Mon} = Mod:spec(?MFA),
    [drive(Mon, T, 0) || T <- Traces].

drive(_Mon, [], N) -> {none, N};
drive(Mon, [E | Es], N) ->
    case riarc_monitor:analyse(Mon, E) of
        {verdict, V} -> {V, N + 1};
        {next, Next} -> drive(Next, Es, N + 1)
    end.

trace() ->
    ?LET(Events, list(event()), [?INIT | Events]).

event() ->
    frequency([{4, {recv, pid(), msg()}},
               {2, {timeout, pid()}},
               {4, {send, pid(), pid(), msg()}},
               {2, {exit, pid(), oneof([normal, crash, shutdown, {shutdown, x}, {error, 1}])}},
               {1, {spawn, pid(), pid(), {m, g, [msg()]}}},
               {1, {init, pid(), pid(), {m, g, [msg()]}}}]).

pid() -> frequency([{3, c}, {1, d}]).

msg() -> oneof([0, 1, {error, 0}, {error, 1}, {lock, 0}, {lock, 1}, {ok, 1}]).

%%% Random one-line forms, with their expansion written out

%% {OneLine, Expansion}
form() ->
    oneof([?LET(E, ev("X"), {"never " ++ text(E), never(E, kinds([E]))}),
           ?LET({A, B}, {ev("X"), ev("Y")},
                begin
                    Ks = kinds([A, B]),
                    {"after " ++ text(A) ++ " never " ++ text(B),
                     "max(A. and([" ++ act(A) ++ "] " ++ never(B, Ks) ++ loops(Ks, "A") ++ "))"}
                end)]).

never(E, Ks) -> "max(N. and([" ++ act(E) ++ "] ff" ++ loops(Ks, "N") ++ "))".

loops(Ks, X) -> lists:append([", [" ++ loop(K) ++ "] " ++ X || K <- Ks]).

loop(recv) -> "_ ? _";
loop(send) -> "_:_ ! _";
loop(exit) -> "_ ** _".

kinds(Evs) -> lists:usort([K || {K, _, _} <- Evs]).

%% An event as {Kind, Pattern, Guard}; V is a variable the pattern may bind (an after
%% form's second event may use the first's X).
ev(V) ->
    ?LET(K, oneof([recv, send, exit]), ?LET({P, G}, pat(K, V), {K, P, G})).

pat(exit, V) ->
    oneof([{"abnormal", ""}, {"crash", ""}, {V, " when " ++ V ++ " =/= normal"},
           {"{shutdown, _}", ""}, {"_", ""}]);
pat(_, V) ->
    oneof([{"_", ""}, {"{error, _}", ""}, {"{lock, X}", ""}, {"{" ++ V ++ ", 1}", ""},
           {"{error, " ++ V ++ "}", " when " ++ V ++ " > 0"}, {"0", ""}]).

text({recv, P, G}) -> "receive " ++ P ++ G;
text({send, P, G}) -> "send " ++ P ++ G;
text({exit, P, G}) -> "exit " ++ P ++ G.

act({recv, P, G}) -> "_ ? " ++ P ++ G;
act({send, P, G}) -> "_:_ ! " ++ P ++ G;
act({exit, "abnormal", ""}) ->
    "_ ** R when R =/= normal, R =/= shutdown, not is_tuple(R) orelse tuple_size(R) =/= 2 "
        "orelse element(1, R) =/= shutdown";
act({exit, P, G}) -> "_ ** " ++ P ++ G.

%%% Chosen cases

verdict(Src, Trace) -> riarc_shml_tests:verdict("with m:f(_) " ++ Src ++ ".", ?MFA, Trace).

verdicts_test_() ->
    [?_assertEqual(reject, verdict("never receive {error, _}",
                                   [?INIT, {recv, c, ok}, {timeout, c}, {send, c, d, x},
                                    {exit, d, normal}, {recv, c, {error, late}}])),
     ?_assertEqual(accept, verdict("never receive {error, _}",
                                   [?INIT, {recv, c, ok}, {timeout, c}, {exit, c, normal}])),
     ?_assertEqual(reject, verdict("never send {_, {error, _}}",
                                   [?INIT, {send, c, d, {ok, 1}}, {send, c, d, {x, {error, 1}}}])),
     ?_assertEqual(none, verdict("never exit abnormal",
                                 [?INIT, {exit, d, normal}, {exit, d, shutdown},
                                  {exit, d, {shutdown, x}}])),
     ?_assertEqual(reject, verdict("never exit abnormal", [?INIT, {exit, d, normal}, {exit, c, boom}])),
     ?_assertEqual(reject, verdict("after receive {lock, L} never send {lock, L}",
                                   [?INIT, {send, c, d, {lock, 1}}, {recv, c, {lock, 1}},
                                    {send, c, d, {lock, 2}}, {send, c, d, {lock, 1}}])),
     ?_assertEqual(accept, verdict("after receive {lock, L} never send {lock, L}",
                                   [?INIT, {recv, c, {lock, 1}}, {send, c, d, {lock, 2}},
                                    {exit, c, normal}])),
     %% a guard at the end of a clause, then another clause
     ?_assertEqual(reject, riarc_shml_tests:verdict(
                             "with m:g() never receive X when X > 1, with m:f(_) never "
                             "receive {error, N} when N > 1.", ?MFA, [?INIT, {recv, c, {error, 2}}]))].

patterns(Src) ->
    {ok, Mod} = riarc_shml:load_string(Src, riarc_shml_oneline_patterns, "t.prop"),
    {Mod:trace_flags(), Mod:trace_patterns()}.

%% The one-line forms get the tightest patterns without any care from the writer.
patterns_test_() ->
    [?_assertEqual({[recv], #{'receive' => [{['_', '_', {error, '_'}], [], []}], send => false}},
                   patterns("with _:_(_) never receive {error, _}.")),
     ?_assertEqual({[send], #{'receive' => false, send => [{['_', {'_', {error, '_'}}], [], []}]}},
                   patterns("with _:_(_) never send {_, {error, _}}.")),
     ?_assertEqual({[], #{'receive' => false, send => false}},
                   patterns("with _:_(_) never exit abnormal.")),
     ?_assertEqual({[recv, send], #{'receive' => [{['_', '_', {lock, '$1'}], [], []}],
                                    send => [{['_', {lock, '_'}], [], []}]}},
                   patterns("with _:_(_) after receive {lock, L} never send {lock, L}."))].

errors_test_() ->
    Err = fun(Src) ->
                  {error, R} = riarc_shml:parse_string(Src, "t.prop"),
                  riarc_shml:format_error(R)
          end,
    [?_assertEqual("t.prop:1:12: expected monitor, never or after after the with pattern",
                   Err("with m:f() nevr receive x.")),
     ?_assertEqual("t.prop:1:18: expected receive, send or exit", Err("with m:f() never recv x.")),
     ?_assertEqual("t.prop:1:28: expected never (the form is after E never E)",
                   Err("with m:f() after receive x always send y.")),
     ?_assertEqual("t.prop:1:37: variable 'Y' is unbound",
                   Err("with m:f() never receive X when X > Y."))].
