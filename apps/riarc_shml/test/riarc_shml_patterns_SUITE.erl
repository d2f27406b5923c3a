% The projection onto trace patterns changes no verdict, the slow tier: 800 random pairs
% of clauses and traces (seeded), each filtered trace checked by the reference interpreter
% and by the compiled monitor against the full trace (riarc_shml_patterns_prop_tests:check/2;
% its EUnit test runs 400 cases with the reference interpreter only).
-module(riarc_shml_patterns_SUITE).

-export([all/0, groups/0, suite/0]).
-export([projection_with_compiled_monitor/1]).

-spec all() -> [atom() | {group, atom()}].
all() -> [] ++ riarc_test_tier:slow_groups([slow]).

%% The full tier's cases (make test-all): riarc_test_tier.
-spec groups() -> [{atom(), list(), [atom()]}].
groups() -> [{slow, [], [projection_with_compiled_monitor]}].

-spec suite() -> list().
suite() -> [{timetrap, {minutes, 10}}].

projection_with_compiled_monitor(_Config) ->
    ok = riarc_shml_patterns_prop_tests:check(800, true).
