%% Offline, end to end, where the property language meets the trace readers (riarc_cli's
%% tests use both): an atom of the recording the checking node does not have is matched
%% by a compiled property as the atom it stands for (riarc_shml_unknown_atom_tests has
%% the compiler's side).
-module(riarc_unknown_atom_offline_tests).

-include_lib("eunit/include/eunit.hrl").

%% Offline, end to end: a text trace naming atoms this node does not have. The names are
%% only ever written in strings here, so that this module does not create them.
offline_check_test() ->
    Dir = riarc_test_tmp:dir("riarc_unknown_atom"),
    Trace = filename:join(Dir, "t.txt"),
    A1 = "riarc_zz_no_such_atom_" ++ integer_to_list(erlang:unique_integer([positive])),
    A2 = A1 ++ "_b",
    ok = file:write_file(Trace, ["{init, p, undefined, {riarc_demo_pqr, p, [", A1, "]}}.\n",
                                 "{recv, p, ", A1, "}.\n",
                                 "{recv, p, {", A2, ", 1}}.\n",
                                 "{recv, p, ", A2, "}.\n",
                                 "{exit, p, normal}.\n"]),
    %% A property over atoms: never a receive of an atom other than the argument.
    {ok, Mod} = riarc_shml:load_string(
                  "with riarc_demo_pqr:p(A) monitor "
                  "max(X. and([_ ? B when is_atom(B), B =/= A] ff, [_ ? _] X)).",
                  riarc_shml_unknown_atom_offline, "t.prop"),
    {ok, R} = riarc_offline:check(Trace, Mod, #{}),
    ?assertMatch([#{verdict := reject, events := 4}], maps:get(verdicts, R)).
