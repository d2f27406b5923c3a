%% The book of a system's children on followed nodes (riarc_follow): what is matched, what
%% is left out, and when the answer is final.
-module(riarc_follow_tests).
-include_lib("eunit/include/eunit.hrl").

-define(N, 'b@h').

p(I) -> c:pid(0, I, 0).

entry(Pid, MFA, V, Lineage) ->
    maps:merge(#{pid => Pid, mfa => MFA, verdict => V, events => 1}, Lineage).

%% Two children expected of the same parent with the same call are matched with two
%% partitions; a third of another parent (outside the system) is left out, and so is
%% what it started; what a matched child started there is the system's.
match_test() ->
    Parent = p(10), Outsider = p(11),
    W1 = p(20), W2 = p(21), W3 = p(22), H1 = p(30), H3 = p(31),
    Call = {w, go, [1]},
    F0 = riarc_follow:new(),
    F1 = riarc_follow:expect(#{parent => Parent, node => ?N, mfa => Call},
                             riarc_follow:expect(#{parent => Parent, node => ?N, mfa => {w, go, [2]}}, F0)),
    F2 = lists:foldl(fun(E, F) -> riarc_follow:learn(?N, E, F) end, F1,
                     [entry(W1, {w, go, ['$unknown']}, accept, #{parent => Parent, within => none}),
                      entry(W2, Call, reject, #{parent => Parent, within => none}),
                      entry(W3, Call, reject, #{parent => Outsider, within => none}),
                      entry(H1, {h, run, []}, accept, #{parent => W1, within => W1}),
                      entry(H3, {h, run, []}, reject, #{parent => W3, within => W3})]),
    ?assert(riarc_follow:settled(F2)),
    Pids = lists:sort([P || #{pid := P, node := ?N} <- riarc_follow:final(F2)]),
    ?assertEqual(lists:sort([W1, W2, H1]), Pids).

%% A different function, or arity, matches nothing: the child is an error once the run is
%% over, saying so.
no_match_test() ->
    Parent = p(10),
    F = riarc_follow:learn(?N, entry(p(20), {w, go, [1, 2]}, accept, #{parent => Parent, within => none}),
                           riarc_follow:expect(#{parent => Parent, node => ?N, mfa => {w, go, [1]}},
                                               riarc_follow:new())),
    ?assertNot(riarc_follow:settled(F)),
    ?assertEqual(starts, riarc_follow:waits_for(F)),
    ?assertMatch([#{pid := undefined, verdict := error, node := ?N,
                    reason := {riarc_follow, {not_followed, #{parent := Parent}}}}],
                 riarc_follow:final(F)),
    [#{reason := {riarc_follow, Why}}] = riarc_follow:final(F),
    ?assert(io_lib:char_list(riarc_follow:format_error(Why))).

%% An open partition, or one started from it that is open, is waited for; once the node is
%% down it is an error with the node's reason; a run over before it ended is inconclusive.
open_test() ->
    Parent = p(10), W = p(20), H = p(30),
    F0 = riarc_follow:expect(#{parent => Parent, node => ?N, mfa => {w, go, []}}, riarc_follow:new()),
    F1 = riarc_follow:learn(?N, entry(W, {w, go, []}, accept, #{parent => Parent, within => none}), F0),
    F2 = riarc_follow:learn(?N, entry(H, {h, run, []}, none, #{parent => W, within => W, open => true}), F1),
    ?assertNot(riarc_follow:settled(F2)),
    %% An open partition comes first: a child not seen yet is waited for only once none
    %% is open.
    F3 = riarc_follow:expect(#{parent => Parent, node => ?N, mfa => {x, go, []}}, F2),
    ?assertEqual(partitions, riarc_follow:waits_for(F3)),
    ?assertEqual(starts, riarc_follow:waits_for(riarc_follow:learn(?N, maps:remove(open, entry(H, {h, run, []}, accept, #{parent => W, within => W})), F3))),
    ?assertEqual(nothing, riarc_follow:waits_for(riarc_follow:down(?N, nodedown, F3))),
    ?assertMatch([#{pid := W, verdict := accept},
                  #{pid := H, verdict := inconclusive, reason := {riarc_follow, open}}],
                 lists:sort(riarc_follow:final(F2))),
    Down = riarc_follow:down(?N, nodedown, F2),
    ?assert(riarc_follow:settled(Down)),
    ?assertMatch([_, #{pid := H, verdict := error, reason := nodedown}], lists:sort(riarc_follow:final(Down))),
    %% The first reason given stands.
    ?assertEqual(riarc_follow:final(Down), riarc_follow:final(riarc_follow:down(?N, follower_lost, Down))).

%% A child Λ put in its parent's partition (relayed): its partition there is matched, so
%% what it started there is the system's, but it is not listed (its events are its
%% parent's partition's); while open it is waited for; one never seen is no entry (its
%% parent's partition is the error).
relayed_test() ->
    Parent = p(10),
    M = p(20), H = p(30),
    F0 = lists:foldl(fun riarc_follow:expect/2, riarc_follow:new(),
                     [#{parent => Parent, node => ?N, mfa => {m, run, [1]}, relayed => true},
                      #{parent => Parent, node => ?N, mfa => {m, lost, [1]}, relayed => true}]),
    F1 = lists:foldl(fun(E, F) -> riarc_follow:learn(?N, E, F) end, F0,
                     [entry(M, {m, run, [1]}, none, #{parent => Parent, within => none, open => true}),
                      entry(H, {h, run, []}, accept, #{parent => M, within => M})]),
    ?assertEqual(partitions, riarc_follow:waits_for(F1)),
    F2 = riarc_follow:learn(?N, entry(M, {m, run, [1]}, none, #{parent => Parent, within => none}), F1),
    ?assertEqual(nothing, riarc_follow:waits_for(F2)),
    ?assertEqual([H], [P || #{pid := P} <- riarc_follow:final(F2)]).
