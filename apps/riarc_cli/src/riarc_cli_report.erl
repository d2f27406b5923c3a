%% @doc What the command line prints of a result, the same for `run', `check' and the
%% demo: one line per verdict, an indented explanation under each reject or error, a
%% line saying why under every verdict, and on standard error whatever makes the result
%% less than a clean accept (errors, invariant violations, an overload); then the exit
%% status, which never says more than was checked (riarc_result:status/1: 0 only when
%% everything was accepted or had no verdict; 1 when nothing was monitored at all), or 2
%% when the system's root itself crashed.
%% ```
%% 1> riarc_cli_report:result(riarc_result:make(#{}), #{}).
%% 1
%% '''
-module(riarc_cli_report).

-export([result/2, verdict_line/1, why_line/2]).

%% @doc Prints a result; returns the exit status. Opts: `explain => false' leaves out
%% the explanations, `indent => String' prefixes every line, `spec => Spec' warns of
%% monitors that matched nothing (and `strict => true' makes that status 2).
-spec result(riarc_result:t(), #{explain => boolean(), indent => string(),
                                 spec => riarc_lambda:spec(), strict => boolean()}) -> 0 | 1 | 2.
result(R, Opts) ->
    Status = result1(R, Opts),
    Ws = spec_warnings(R, Opts),
    _ = [io:format(standard_error, "~ts~n", [warning_line(W)]) || W <- Ws],
    %% --strict is about monitors that matched nothing; an unsealed backend is said, not
    %% a reason to refuse the run.
    case {[W || W <- Ws, W =/= {unsealed, evm}], Opts} of
        {[_ | _], #{strict := true}} -> 2;
        _ -> nothing_checked(R, Status)
    end.

%% A run or check in which no process got a monitor checked nothing: not a success
%% (status 1; 2 with --strict, above). The warning is already printed.
nothing_checked(#{verdicts := []}, 0) -> 1;
nothing_checked(_Result, Status) -> Status.

%% What standard error warns of (monitors that matched nothing, an unsealed backend): the
%% result's warnings (riarc_result:warnings/2), or, for a result made without them, those
%% of the Spec the command was given.
spec_warnings(#{warnings := [_ | _] = Ws}, _Opts) ->
    Ws;
spec_warnings(#{verdicts := Vs}, #{spec := Spec}) ->
    riarc_result:warnings(Spec, Vs);
spec_warnings(_, _) ->
    [].

warning_line({spec, W}) -> W;
warning_line(W) -> "riarc: warning: " ++ riarc_result:format_warning(W).

result1(R = #{verdicts := Vs}, Opts) ->
    In = maps:get(indent, Opts, ""),
    _ = [begin
             io:format("~ts~ts~n", [In, verdict_line(V)]),
             maps:get(explain, Opts, true) andalso
                 io:put_chars([[In, L, "\n"] || L <- string:lexemes(riarc_result:format_explanation(V), "\n")]),
             why_line(In, V)
         end || V <- Vs],
    _ = [warn("~ts", [riarc:format_error(E)]) || E <- maps:get(errors, R, []), not is_atom(E)],
    _ = [warn("invariant ~p violated in tracer ~p", [Id, T])
         || #{invariant := Id, tracer := T} <- maps:get(violations, R, [])],
    _ = case maps:get(overload, R, undefined) of
            undefined -> ok;
            Over -> warn("overload (~0tp): riarc detached from the system; undecided partitions "
                         "are inconclusive", [Over])
        end,
    case maps:get(root_exits, R, []) of
        [] -> riarc_result:status(R);
        Exits ->
            %% The system itself failed (a bad -a, a crash at start): that is what the
            %% user must hear first, as bad input.
            _ = [io:format(standard_error, "riarc: the system's root ~ts crashed: ~0tp~n",
                           [riarc_result:format_process(P, MFA), Why])
                 || #{pid := P, mfa := MFA, reason := Why} <- Exits],
            2
    end.

%% @doc The line `run' prints for a verdict, with the process named as the trace named
%% it: the binary trace format gives pids as text, which would print as <<"...">>.
-spec verdict_line(riarc_result:verdict_entry()) -> iodata().
verdict_line(V = #{pid := P}) when is_binary(P) ->
    [_, Rest] = string:split(riarc_result:format_verdict(V#{pid := x}), " "),
    [P, " ", Rest];
verdict_line(V) -> riarc_result:format_verdict(V).

warn(Fmt, Args) -> io:format(standard_error, "riarc: warning: " ++ Fmt ++ "~n", Args).

%% @doc Under every verdict, one line saying why it was reached (riarc_result:format_why/1).
-spec why_line(iodata(), riarc_result:verdict_entry()) -> ok.
why_line(In, V) ->
    case riarc_result:format_why(V) of
        "" -> ok;
        Line -> io:format("~ts~ts~n", [In, Line])
    end.
