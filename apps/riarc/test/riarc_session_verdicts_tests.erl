%% The session's verdicts part (riarc_session_verdicts): what the subscribers are told
%% and when, that a verdict the session gives never overrides the monitor's, and what a
%% tracer's end makes of its partition's entry.
-module(riarc_session_verdicts_tests).

-include_lib("eunit/include/eunit.hrl").

-define(MFA, {m, f, []}).

%% A book with one partition, Tracer's, of process Proc; Sub subscribed with Tag.
book(Tracer, Proc, Sub, Tag) ->
    V0 = riarc_session_verdicts:tracer_up(Tracer, 1, riarc_session_verdicts:new(false)),
    V1 = riarc_session_verdicts:part(Tracer, Proc, ?MFA, {none, none}, undefined, V0),
    riarc_session_verdicts:subscribe(Sub, Tag, V1).

%% Everything told to Tag so far (sends to oneself are in the mailbox at once).
told(Tag) ->
    receive {riarc_session_verdict, Tag, E} -> [E | told(Tag)] after 0 -> [] end.

put_told_test() ->
    Tag = make_ref(),
    V = book(tracer, proc, self(), Tag),
    ?assertEqual([], told(Tag)),
    V1 = riarc_session_verdicts:put(tracer, riarc_result:entry(proc, ?MFA, accept, 3, undefined), undefined, V),
    ?assertMatch([#{pid := proc, verdict := accept}], told(Tag)),
    ?assertMatch([#{pid := proc, verdict := accept}], riarc_session_verdicts:list(undefined, V1)),
    %% The subscriber gone: nobody is told.
    {true, V2} = riarc_session_verdicts:unsubscribe(self(), V1),
    ?assertEqual(false, riarc_session_verdicts:unsubscribe(self(), V2)),
    ?assertNot(riarc_session_verdicts:subscribed(V2)),
    _ = riarc_session_verdicts:put(tracer, riarc_result:entry(proc, ?MFA, reject, 4, undefined), undefined, V2),
    ?assertEqual([], told(Tag)).

set_keeps_monitor_verdict_test() ->
    Tag = make_ref(),
    V = book(tracer, proc, self(), Tag),
    V1 = riarc_session_verdicts:put(tracer, riarc_result:entry(proc, ?MFA, accept, 3, undefined), undefined, V),
    _ = told(Tag),
    %% The session's own verdict (its analysis ended) only where the monitor gave none.
    V2 = riarc_session_verdicts:set(tracer, 9, {error, killed}, false, undefined, V1),
    ?assertEqual([], told(Tag)),
    ?assertMatch([#{verdict := accept}], riarc_session_verdicts:list(undefined, V2)),
    V3 = riarc_session_verdicts:set(tracer, 9, {error, killed}, false, undefined, V),
    ?assertMatch([#{verdict := error, events := 8}], told(Tag)),
    ?assertMatch([#{verdict := error}], riarc_session_verdicts:list(undefined, V3)).

overload_told_test() ->
    %% Detached with no verdict yet: the partition reads inconclusive, and republish
    %% tells it so.
    Tag = make_ref(),
    V = book(tracer, proc, self(), Tag),
    V1 = riarc_session_verdicts:put(tracer, riarc_result:entry(proc, ?MFA, none, 0, undefined), undefined, V),
    _ = told(Tag),
    Over = {tracers, 11, 10},
    _ = riarc_session_verdicts:republish(fun(#{verdict := N}) -> N =:= none end, Over, V1),
    ?assertMatch([#{verdict := inconclusive, reason := {overload, Over}}], told(Tag)).

tracer_down_test() ->
    Tag = make_ref(),
    V = book(tracer, proc, self(), Tag),
    %% Its own end (TRYGC), or ended before it was watched: no crash, nothing told.
    ?assertMatch({_, ok}, riarc_session_verdicts:tracer_down(tracer, normal, false, undefined, V)),
    ?assertMatch({_, ok}, riarc_session_verdicts:tracer_down(tracer, noproc, false, undefined, V)),
    ?assertEqual([], told(Tag)),
    %% Any other end is a crash of riarc's: the partition's verdict is error.
    {V1, crashed} = riarc_session_verdicts:tracer_down(tracer, boom, false, undefined, V),
    ?assertMatch([#{verdict := error, reason := {tracer_crashed, boom}}], told(Tag)),
    ?assertMatch([#{verdict := error}], riarc_session_verdicts:list(undefined, V1)),
    %% Killed by the overload policy: cut short, inconclusive, not a crash.
    Over = {tracers, 11, 10},
    ?assertMatch({_, ok}, riarc_session_verdicts:tracer_down(tracer, killed, false, Over, V)),
    ?assertMatch([#{verdict := inconclusive, reason := {overload, Over}}], told(Tag)).

%% The partitions a tracer adopted end with it: listed after it, in the order adopted; a
%% crash of the tracer makes each of them an error (as its own), an overload kill those
%% without a verdict inconclusive, and a verdict their monitors gave before stands.
adopted_tracer_down_test() ->
    Tag = make_ref(),
    V0 = book(tracer, proc, self(), Tag),
    Adopt = fun(P, V) -> riarc_session_verdicts:adopted(tracer, {tracer, P}, {P, ?MFA}, {proc, proc}, undefined, V) end,
    V = Adopt(c2, Adopt(c1, V0)),
    V1 = riarc_session_verdicts:put({tracer, c2}, riarc_result:entry(c2, ?MFA, reject, 3, undefined), undefined, V),
    _ = told(Tag),
    {V2, crashed} = riarc_session_verdicts:tracer_down(tracer, boom, false, undefined, V1),
    ?assertMatch([#{pid := proc, verdict := error}, #{pid := c1, verdict := error, reason := {tracer_crashed, boom}},
                  #{pid := c2, verdict := error}], riarc_session_verdicts:list(undefined, V2)),
    Over = {tracers, 11, 10},
    {V3, ok} = riarc_session_verdicts:tracer_down(tracer, killed, false, Over, V1),
    ?assertMatch([#{pid := proc, verdict := inconclusive}, #{pid := c1, verdict := inconclusive, reason := {overload, Over}},
                  #{pid := c2, verdict := reject}], riarc_session_verdicts:list(Over, V3)),
    %% Ended once: a second DOWN of the same tracer finds nothing adopted left.
    {V4, crashed} = riarc_session_verdicts:tracer_down(tracer, boom, false, undefined, V3),
    ?assertMatch([_, #{pid := c1, verdict := inconclusive}, _], riarc_session_verdicts:list(Over, V4)).

learnt_incomplete_test() ->
    Tag = make_ref(),
    V = book(tracer, proc, self(), Tag),
    V1 = riarc_session_verdicts:put(tracer, riarc_result:entry(proc, ?MFA, accept, 3, undefined), undefined, V),
    _ = told(Tag),
    %% Lost events of the partition's process: its accept no longer stands.
    V2 = riarc_session_verdicts:learnt({riarc_incomplete, tracer, #{proc => [e1, e2]}}, undefined, V1),
    ?assertMatch([#{verdict := error, reason := {incomplete_trace, #{lost_events := 2}}}], told(Tag)),
    ?assertMatch([#{verdict := error}], riarc_session_verdicts:list(undefined, V2)).

monitor_verdict_test() ->
    Tag = make_ref(),
    V = book(tracer, proc, self(), Tag),
    _ = riarc_session_verdicts:monitor_verdict({riarc_verdict, tracer, proc, ?MFA, accept, undefined, 3},
                                               undefined, false, undefined, V),
    ?assertMatch([#{pid := proc, verdict := accept, events := 3}], told(Tag)),
    %% No verdict, and riarc's timeout cut the run short: inconclusive, saying so.
    _ = riarc_session_verdicts:monitor_verdict({riarc_verdict, tracer, proc, ?MFA, none, undefined, 2},
                                               {timeout, 50, #{}}, false, undefined, V),
    ?assertMatch([#{verdict := inconclusive, reason := {timeout, 50}}], told(Tag)).

%% A relayed child's trace lost after its partition's accept: the accept may rest on what
%% was lost, so it reads error, and the subscribers are told; a reject stands, and so
%% does an accept when a child is started elsewhere after it (no `lost').
relayed_child_lost_test() ->
    Tag = make_ref(),
    Lost = #{parent => proc, node => 'n@h', lost => nodedown},
    Learn = fun(Info, V) -> riarc_session_verdicts:learnt({riarc_remote_child, tracer, partition, Info},
                                                         undefined, V) end,
    Accepted = riarc_session_verdicts:put(tracer, riarc_result:entry(proc, ?MFA, accept, 3, undefined), undefined,
                                          book(tracer, proc, self(), Tag)),
    _ = told(Tag),
    V1 = Learn(Lost, Accepted),
    ?assertMatch([#{verdict := error, reason := {remote_child, #{lost := nodedown,
                                                                 verdict_on_partial_trace := accept}}}],
                 told(Tag)),
    ?assertMatch([#{verdict := error}], riarc_session_verdicts:list(undefined, V1)),
    V2 = Learn(maps:remove(lost, Lost), Accepted),
    ?assertEqual([], told(Tag)),
    ?assertMatch([#{verdict := accept}], riarc_session_verdicts:list(undefined, V2)),
    Rejected = riarc_session_verdicts:put(tracer, riarc_result:entry(proc, ?MFA, reject, 3, undefined), undefined,
                                          book(tracer, proc, self(), Tag)),
    _ = told(Tag),
    V3 = Learn(Lost, Rejected),
    ?assertEqual([], told(Tag)),
    ?assertMatch([#{verdict := reject}], riarc_session_verdicts:list(undefined, V3)).

%% A stop that found events still on their way to a partition's monitor: that partition,
%% without a verdict, reads inconclusive (its trace did not end there); a verdict reached
%% before stands. By the partition's tracer (its own trace) or by its process (events
%% another tracer held for it).
stopped_short_test() ->
    Tag = make_ref(),
    Learn = fun(Info, V) -> riarc_session_verdicts:learnt({riarc_stopped_short, tracer, Info}, undefined, V) end,
    Open = book(tracer, proc, self(), Tag),
    None = riarc_session_verdicts:put(tracer, riarc_result:entry(proc, ?MFA, none, 3, undefined), undefined, Open),
    _ = told(Tag),
    Own = #{own => true, lost => #{}},
    V1 = Learn(Own, None),
    ?assertMatch([#{verdict := inconclusive, reason := {stopped_short, #{held_events := 0, unsettled := true}}}],
                 told(Tag)),
    ?assertMatch([#{verdict := inconclusive}], riarc_session_verdicts:list(undefined, V1)),
    %% Told before the verdict came: the verdict none reads inconclusive once in.
    V2 = riarc_session_verdicts:put(tracer, riarc_result:entry(proc, ?MFA, none, 0, undefined), undefined,
                                    Learn(Own, Open)),
    ?assertMatch([#{verdict := inconclusive}], riarc_session_verdicts:list(undefined, V2)),
    %% Another tracer held two of proc's events.
    V3 = riarc_session_verdicts:learnt({riarc_stopped_short, other, #{own => false, lost => #{proc => 2}}},
                                       undefined, None),
    [#{verdict := inconclusive, reason := {stopped_short, Held}}] = riarc_session_verdicts:list(undefined, V3),
    ?assertEqual(#{held_events => 2}, Held),
    %% Nothing of this partition's held, nor its own trace short: none stands.
    V4 = riarc_session_verdicts:learnt({riarc_stopped_short, other, #{own => true, lost => #{elsewhere => 1}}},
                                       undefined, None),
    ?assertMatch([#{verdict := none}], riarc_session_verdicts:list(undefined, V4)),
    _ = told(Tag),
    [begin
         Decided = riarc_session_verdicts:put(tracer, riarc_result:entry(proc, ?MFA, V, 3, undefined), undefined,
                                              book(tracer, proc, self(), Tag)),
         _ = told(Tag),
         ?assertMatch([#{verdict := V}], riarc_session_verdicts:list(undefined, Learn(Own, Decided)))
     end || V <- [accept, reject]].

%% A cut by someone else makes the partition an error, before an overload and after:
%% the session does not second-guess it (the backend does not report riarc's own
%% untracing at a detach as one).
cut_after_overload_test() ->
    Open = riarc_session_verdicts:put(tracer, riarc_result:entry(proc, ?MFA, none, 3, undefined), undefined,
                                      book(tracer, proc, self(), make_ref())),
    Cut = {riarc_cut, tracer, proc, {flags_removed, []}},
    Over = {tracers, 11, 10},
    %% A cut is a cut after an overload too: riarc's own untracing is not reported as one
    %% (riarc_trust_tests:own_detach_is_no_cut_test).
    ?assertMatch([#{verdict := error, reason := {cut, #{call := {flags_removed, []}}}}],
                 riarc_session_verdicts:list(Over, riarc_session_verdicts:learnt(Cut, Over, Open))),
    ?assertMatch([#{verdict := error, reason := {cut, #{call := {flags_removed, []}}}}],
                 riarc_session_verdicts:list(undefined, riarc_session_verdicts:learnt(Cut, undefined, Open))).

%% Every entry read out of the book (the list, what subscribers are told, through the
%% fast path and the slow one) is the entry as it was put, its words as the monitor gave
%% them.
words_kept_test() ->
    Tag = make_ref(),
    V = book(tracer, proc, self(), Tag),
    Words = <<"the process exited: nothing left that could fail">>,
    Entry = (riarc_result:entry(proc, ?MFA, accept, 3, undefined))#{why => #{event_no => 3, words => Words}},
    V1 = riarc_session_verdicts:put(tracer, Entry, undefined, V),
    ?assertEqual([Entry], told(Tag)),
    ?assertEqual([Entry], riarc_session_verdicts:list(undefined, V1)),
    %% Read through the slow path too (the run was detached).
    ?assertEqual([Entry], riarc_session_verdicts:list({tracers, 11, 10}, V1)).

%% A cut of the whole node's view found by looking: the verdicts that were in (accept or
%% reject) when the view was last seen whole stand; one in since is an error. The book as
%% it was then is what says which were in, though entries were set since.
view_cut_test() ->
    Entry = fun(P, V) -> riarc_result:entry(P, ?MFA, V, 2, undefined) end,
    B0 = lists:foldl(fun(K, B) -> element(1, riarc_session_entries:part(K, K, ?MFA, {none, none},
                                                                        riarc_session_entries:tracer_up(K, 1, B)))
                     end, riarc_session_entries:new(false), [a, b, c]),
    B1 = riarc_session_entries:put(b, Entry(b, reject), riarc_session_entries:put(a, Entry(a, accept), B0)),
    Seen = riarc_session_entries:decided(B1),
    B2 = riarc_session_entries:put(c, Entry(c, accept), B1),
    B3 = riarc_session_entries:view_cut(#{process => undefined, call => {patterns_changed, x}}, Seen, B2),
    ?assertMatch([#{pid := a, verdict := accept}, #{pid := b, verdict := reject},
                  #{pid := c, verdict := error, reason := {cut, #{verdict_on_partial_trace := accept}}}],
                 riarc_session_entries:list(undefined, B3)).

%% A process's own call whose rest its later children inherit: its own partition is
%% judged by the call itself (in order with its events), every other as by a cut of the
%% node's view: in before it, a verdict stands; otherwise, and for partitions started
%% after it, an error.
inherited_cut_test() ->
    Entry = fun(P, V) -> riarc_result:entry(P, ?MFA, V, 2, undefined) end,
    Up = fun(K, B) -> element(1, riarc_session_entries:part(K, K, ?MFA, {none, none},
                                                            riarc_session_entries:tracer_up(K, 1, B)))
         end,
    B0 = lists:foldl(Up, riarc_session_entries:new(false), [a, b, c]),
    B1 = riarc_session_entries:put(b, Entry(b, reject), B0),
    Call = {trace, [a, false, [send, 'receive']]},
    {B2, all} = riarc_session_entries:cut(a, a, {inherited, Call}, B1),
    B3 = riarc_session_entries:put(d, Entry(d, accept), Up(d, riarc_session_entries:put(a, Entry(a, accept),
                                                                                       riarc_session_entries:put(c, Entry(c, accept), B2)))),
    ?assertMatch([#{pid := a, verdict := accept}, #{pid := b, verdict := reject},
                  #{pid := c, verdict := error, reason := {cut, #{process := a, call := Call}}},
                  #{pid := d, verdict := error, reason := {cut, #{process := a}}}],
                 riarc_session_entries:list(undefined, B3)),
    %% The call itself, told in order, cuts a's own partition unless decided.
    {B4, own} = riarc_session_entries:cut(a, a, Call, B2),
    ?assertMatch([#{pid := a, verdict := error, reason := {cut, #{process := a, call := Call}}} | _],
                 riarc_session_entries:list(undefined, riarc_session_entries:put(a, Entry(a, accept), B4))).

%% The result lists partitions in the order they started, each once, whatever order their
%% verdicts came in; one set though never announced comes first.
list_order_test() ->
    Entry = fun(P) -> riarc_result:entry(P, ?MFA, accept, 1, undefined) end,
    Up = fun(K, B) -> riarc_session_entries:tracer_up(K, 1, B) end,
    B0 = lists:foldl(Up, riarc_session_entries:new(false), [a, b, c]),
    B1 = lists:foldl(fun(K, B) -> riarc_session_entries:put(K, Entry(K), B) end, B0, [c, a, b]),
    Pids = fun(B) -> [P || #{pid := P} <- riarc_session_entries:list(undefined, B)] end,
    ?assertEqual([a, b, c], Pids(B1)),
    ?assertEqual([z, a, b, c], Pids(riarc_session_entries:put(z, Entry(z), B1))),
    %% A partition announced twice is still listed once, where it first started.
    ?assertEqual([z, a, b, c], Pids(riarc_session_entries:put(z, Entry(z), Up(a, B1)))).
