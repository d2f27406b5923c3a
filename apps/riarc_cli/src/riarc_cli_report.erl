%% @doc What the command line prints of a result, the same for `run', `check', `replay',
%% `attach' and the demo: one line per verdict, an indented explanation under each
%% reject or error, a line saying why under every verdict, and on standard error whatever
%% makes the result less than a clean accept (errors, invariant violations, an overload);
%% then the exit status, which never says more than was checked (riarc_result:status/1: 0
%% only when everything was accepted or had no verdict; 1 when nothing was monitored at
%% all), or 2 when the system's root itself crashed.
%%
%% With `format => json' (`--format json'), the same result as JSON Lines on standard
%% output: one object per verdict (riarc_result_json) and a final summary object
%% (`"summary": true', the verdict counts, the errors and warnings as sentences, the
%% exit status), and nothing on standard error; the exit status is the same.
%% ```
%% 1> riarc_cli_report:result(riarc_result:make(#{}), #{}).
%% 1
%% 2> riarc_cli_report:summary(#{format => json}, #{verdicts => #{accept => 2}}, 0).
%% {"errors":[],"exit_status":0,"summary":true,"verdicts":{"accept":2},"warnings":[]}
%% 0
%% '''
-module(riarc_cli_report).

-export([result/2, verdict_line/1, why_line/2]).
-export([format_flag/0, format/1, verdict/2, summary/3, fail/3, bad_input/3, notes/2]).
-export_type([opts/0, format/0]).

-type format() :: text | json.
%% `explain => false' leaves out the explanations, `indent => String' prefixes every
%% line, `spec => Spec' warns of monitors that matched nothing (and `strict => true' makes
%% that status 2); `format' (default text); `warnings': the caller's own, as sentences
%% (text: on standard error before the verdicts; json: in the summary); `summary': more
%% fields for the JSON summary object.
-type opts() :: #{explain => boolean(), indent => string(), spec => riarc_lambda:spec(),
                  strict => boolean(), format => format(), warnings => [string()],
                  summary => #{atom() => riarc_json:json()}}.

%% @doc The flag `--format text|json' of the commands that print verdicts.
-spec format_flag() -> riarc_cli_args:flag().
format_flag() ->
    #{name => "--format", key => format, type => {enum, [text, json]}, default => text,
      help => "text (a line per verdict) or json (JSON Lines: an object per verdict, then a "
              "summary object; docs/cli.md)"}.

%% @doc The format the options (as riarc_cli_args parses them, or a result's opts) ask for.
-spec format(#{atom() => term()}) -> format().
format(#{format := json}) -> json;
format(_) -> text.

%% @doc Prints a result; returns the exit status (the same in both formats).
-spec result(riarc_result:t(), opts()) -> 0 | 1 | 2.
result(R = #{verdicts := Vs}, Opts) ->
    Status = status(R, Opts),
    case format(Opts) of
        text ->
            _ = [warn("~ts", [W]) || W <- maps:get(warnings, Opts, [])],
            _ = [text_verdict(V, Opts) || V <- Vs],
            _ = [io:format(standard_error, "~ts~n", [Line]) || {_Kind, _Sentence, Line} <- problems(R, Opts)],
            Status;
        json ->
            _ = [json_line(riarc_result_json:entry(V)) || V <- Vs],
            Fields = maps:merge(maps:merge(#{verdicts => riarc_result_json:counts(Vs),
                                             events => maps:get(events, R, 0)},
                                           notes(R, Opts)),
                                maps:get(summary, Opts, #{})),
            summary(Opts, Fields, Status)
    end.

%% @doc The errors and warnings of a result (and the caller's own `warnings' in Opts) as
%% the JSON summary gives them: sentences, in the order text prints them.
-spec notes(riarc_result:t(), opts()) -> #{errors := [binary()], warnings := [binary()]}.
notes(R, Opts) ->
    Problems = problems(R, Opts),
    #{errors => [riarc_result_json:text(S) || {error, S, _} <- Problems],
      warnings => [riarc_result_json:text(S)
                   || S <- maps:get(warnings, Opts, []) ++ [W || {warning, W, _} <- Problems]]}.

%% The exit status, whatever the format: the result's own (riarc_result:status/1), 2 when
%% the system's root crashed, or with --strict when the monitors matched nothing; a run
%% or check in which no process got a monitor checked nothing: not a success (status 1).
status(R, Opts) ->
    Status = case maps:get(root_exits, R, []) of
                 [] -> riarc_result:status(R);
                 %% The system itself failed (a bad -a, a crash at start): bad input.
                 _ -> 2
             end,
    %% --strict is about monitors that matched nothing; an unsealed backend is said, not
    %% a reason to refuse the run.
    case {[W || W <- spec_warnings(R, Opts), W =/= {unsealed, evm}], Opts} of
        {[_ | _], #{strict := true}} -> 2;
        _ -> nothing_checked(R, Status)
    end.

nothing_checked(#{verdicts := []}, 0) -> 1;
nothing_checked(_Result, Status) -> Status.

%% What makes the result less than a clean accept, in the order text prints it: each as
%% {error | warning, Sentence, the line standard error gets in text}.
problems(R, Opts) ->
    Warning = fun(S) -> {error, S, "riarc: warning: " ++ S} end,
    [Warning(flat("~ts", [riarc:format_error(E)])) || E <- maps:get(errors, R, []), not is_atom(E)]
        ++ [Warning(flat("invariant ~p violated in tracer ~p", [Id, T]))
            || #{invariant := Id, tracer := T} <- maps:get(violations, R, [])]
        ++ [Warning(flat("overload (~0tp): riarc detached from the system; undecided "
                         "partitions are inconclusive", [Over]))
            || Over <- [maps:get(overload, R, undefined)], Over =/= undefined]
        %% The system itself failed: what the user must hear first, as bad input.
        ++ [{error, S, "riarc: " ++ S}
            || #{pid := P, mfa := MFA, reason := Why} <- maps:get(root_exits, R, []),
               S <- [flat("the system's root ~ts crashed: ~ts",
                          [riarc_result:format_process(P, MFA), riarc_term_show:show(Why)])]]
        ++ [{warning, riarc_result:format_warning(W), warning_line(W)} || W <- spec_warnings(R, Opts)].

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

text_verdict(V, Opts) ->
    In = maps:get(indent, Opts, ""),
    io:format("~ts~ts~n", [In, verdict_line(V)]),
    _ = maps:get(explain, Opts, true) andalso
        io:put_chars([[In, L, "\n"] || L <- string:lexemes(riarc_result:format_explanation(V), "\n")]),
    why_line(In, V).

%% @doc Prints one verdict as it is reached (attach): its line, the explanation under a
%% reject or an error and the why line in text; its object in json.
-spec verdict(riarc_result:verdict_entry(), format()) -> ok.
verdict(E, json) ->
    json_line(riarc_result_json:entry(E));
verdict(E = #{verdict := V}, text) ->
    io:format("~ts~n", [verdict_line(E)]),
    io:put_chars([["    ", L, "\n"] || V =:= reject orelse V =:= error,
                                      L <- string:lexemes(riarc_result:format_explanation(E), "\n")]),
    why_line("", E).

%% @doc The summary object of the json format, printed as the last line: Fields with
%% `"summary": true' and the exit status (and empty verdict counts, errors and warnings
%% unless Fields has them); nothing in text. Returns Status.
-spec summary(#{atom() => term()}, #{atom() => riarc_json:json()}, Status) -> Status
          when Status :: non_neg_integer().
summary(Opts, Fields, Status) ->
    _ = case format(Opts) of
            json ->
                Base = #{verdicts => #{}, errors => [], warnings => []},
                json_line(maps:merge(Base, Fields#{summary => true, exit_status => Status}));
            text -> ok
        end,
    Status.

%% @doc Bad input found after Cmd's options were read (a Spec that does not load, a
%% node that does not answer): in text the sentence and the usage line (status 2), in
%% json a summary object that says it.
-spec bad_input(riarc_cli_args:command(), #{atom() => term()}, unicode:chardata()) -> 2.
bad_input(Cmd, Opts, Sentence) ->
    case format(Opts) of
        json -> fail(Opts, Sentence, 2);
        text -> riarc_cli_args:bad_input(Cmd, Sentence)
    end.

%% @doc A command that failed with Sentence: `riarc: Sentence' on standard error in text,
%% a summary object with it as the error in json. Returns Status.
-spec fail(#{atom() => term()}, unicode:chardata(), Status) -> Status
          when Status :: non_neg_integer().
fail(Opts, Sentence, Status) ->
    case format(Opts) of
        json -> summary(Opts, #{errors => [riarc_result_json:text(Sentence)]}, Status);
        text -> io:format(standard_error, "riarc: ~ts~n", [Sentence]), Status
    end.

%% One JSON line. riarc_json gives UTF-8; a -noshell VM's standard output is a latin1
%% device, which writes each character below 256 as that byte, so the bytes are handed
%% over as characters there (a unicode device, such as a test's capture, takes the text).
json_line(Map) ->
    Bin = riarc_json:encode(Map),
    Out = case io:getopts() of
              Opts when is_list(Opts) ->
                  case proplists:get_value(encoding, Opts) of
                      latin1 -> binary_to_list(Bin);
                      _ -> Bin
                  end;
              _ -> Bin
          end,
    io:put_chars([Out, "\n"]).

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

flat(Fmt, Args) -> lists:flatten(io_lib:format(Fmt, Args)).
