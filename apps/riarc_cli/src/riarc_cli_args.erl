%% @doc The one argument parser of `bin/riarc'. Every command declares its flags and
%% positional arguments as data (a command() map); parse/2 checks the arguments against
%% that declaration, and usage/1 and usage_line/1 print help from the same declaration,
%% so what a command accepts and what its help says cannot drift apart.
%%
%% A flag has a name (`--monitors', or `-pa'), an optional short form (`-m'), a type
%% (boolean flags take no value), may be repeatable, required, or in conflict with other
%% flags, and has a help text. Unknown flags, missing values, values of the wrong type and
%% conflicting flags are errors; `--help' or `-h' anywhere asks for the command's help.
%%
%% This module uses only kernel and stdlib, so that any app can declare its commands.
%% ```
%% 1> Cmd = #{name => "greet", summary => "says hello",
%% ..        flags => [#{name => "--times", short => "-n", key => times, type => {int, 1},
%% ..                    default => 1, help => "how often"}],
%% ..        positionals => [#{key => who, metavar => "NAME", required => true}]}.
%% 2> riarc_cli_args:parse(Cmd, ["-n", "2", "world"]).
%% {ok,#{times => 2,who => "world"}}
%% 3> riarc_cli_args:parse(Cmd, ["--bogus"]).
%% {error,{unknown_flag,"--bogus"}}
%% 4> riarc_cli_args:parse(Cmd, ["world", "-h"]).
%% help
%% 5> io:format("~s~n", [riarc_cli_args:usage_line(Cmd)]).
%% usage: riarc greet [-n TIMES] NAME
%% ok
%% 6> riarc_cli_args:duration("1.5m", millisecond).   % every time on the command line
%% {ok,90000}
%% 7> riarc_cli_args:duration("500ms", second).
%% {error,"a whole number of seconds, such as 30, 90s or 2m"}
%% '''
-module(riarc_cli_args).

-export([parse/2, run/3, usage/1, usage_line/1, format_error/1, bad_input/2,
         code_flags/0, strict_flag/0, timeout_flag/1, add_code_paths/1, term_list/1,
         duration/2, format_duration/2]).

-export_type([command/0, flag/0, positional/0, type/0, opts/0, reason/0, duration_unit/0]).

-type type() :: string | atom | int | {int, integer()} | {int, integer(), integer()}
              | number | term_list
              | {enum, [atom()]} | boolean | {duration, duration_unit()}
              | {check, fun((string()) -> {ok, term()} | {error, string()})}.
%% `{int, Min}': a whole number >= Min; `{int, Min, Max}': and =< Max. `{check, Fun}': the command converts the value
%% itself; Fun's error is one sentence naming what the flag takes. `{duration, Unit}': a
%% duration (duration/2), as a whole number of Unit.

-type duration_unit() :: millisecond | second.

-type flag() :: #{name := string(),
                  short => string(),
                  key := atom(),
                  type := type(),
                  metavar => string(),
                  repeat => boolean(),
                  required => boolean(),
                  default => term(),
                  conflicts => [atom()],
                  help := string()}.
%% A repeatable flag's value is the list of its values in the order given.

-type positional() :: #{key := atom(),
                        metavar := string(),
                        type => type(),
                        repeat => boolean(),
                        required => boolean(),
                        help => string()}.

-type command() :: #{name := string(),
                     summary := string(),
                     description => string(),
                     flags := [flag()],
                     positionals => [positional()],
                     one_of => [[atom()]],
                     notes => string()}.
%% `summary': one line for the list of commands; `description': the help's longer text.
%% `one_of': groups of flag keys of which exactly one must be given.

-type opts() :: #{atom() => term()}.

-type reason() :: {unknown_flag, string()} | {missing_value, string()}
                | {bad_value, string(), string(), type()} | {bad_value, string(), string()}
                | {twice, string()} | {conflict, string(), string()} | {one_of, [string()]}
                | {missing_flag, string()} | {missing_arg, string()} | {unexpected, string()}
                | {no_value, string()}.

-define(WIDTH, 88).

%%% Parsing --------------------------------------------------------------------------------

%% @doc Checks Args against the command's declaration: the options by key, with the
%% declared defaults filled in, `help' when `--help' or `-h' is given, or the first error.
-spec parse(command(), [string()]) -> {ok, opts()} | help | {error, reason()}.
parse(Cmd, Args) ->
    Result = scan(Args, Cmd, maps:get(positionals, Cmd, []), #{}),
    %% Help wins over errors: `riarc run --bogus --help' is someone looking for help.
    case lists:any(fun is_help/1, Args) of
        true when element(1, Result) =:= error -> help;
        _ -> Result
    end.

is_help(A) -> A =:= "--help" orelse A =:= "-h".

scan([], Cmd, Pos, Acc) -> finish(Cmd, Pos, Acc);
scan([H | _], _Cmd, _Pos, _Acc) when H =:= "--help"; H =:= "-h" -> help;
scan(["--" | Rest], Cmd, Pos, Acc) -> positionals(Rest, Cmd, Pos, Acc);
scan([[$-, _ | _] = Tok | Rest], Cmd, Pos, Acc) ->
    %% `--name=value' for long flags; a short flag's value is always the next argument.
    {Name, Inline} = case Tok of
                         "--" ++ _ ->
                             case string:split(Tok, "=") of
                                 [N, Val] -> {N, {value, Val}};
                                 [N] -> {N, none}
                             end;
                         _ -> {Tok, none}
                     end,
    case find_flag(Name, maps:get(flags, Cmd)) of
        undefined -> {error, {unknown_flag, Name}};
        #{type := boolean} when Inline =/= none -> {error, {no_value, Name}};
        #{type := boolean} = F -> store(F, Name, true, Rest, Cmd, Pos, Acc);
        F ->
            case {Inline, Rest} of
                {{value, V}, _} -> convert(F, Name, V, Rest, Cmd, Pos, Acc);
                %% The next argument is the value even when it starts with `-':
                %% `--workers -3' is a bad number, not a missing one.
                {none, [V | Rest1]} -> convert(F, Name, V, Rest1, Cmd, Pos, Acc);
                {none, []} -> {error, {missing_value, Name}}
            end
    end;
scan([Tok | Rest], Cmd, Pos, Acc) ->
    case positional(Tok, Pos, Acc) of
        {ok, Pos1, Acc1} -> scan(Rest, Cmd, Pos1, Acc1);
        {error, _} = E -> E
    end.

%% After `--' everything is positional.
positionals([], Cmd, Pos, Acc) -> finish(Cmd, Pos, Acc);
positionals([Tok | Rest], Cmd, Pos, Acc) ->
    case positional(Tok, Pos, Acc) of
        {ok, Pos1, Acc1} -> positionals(Rest, Cmd, Pos1, Acc1);
        {error, _} = E -> E
    end.

%% A repeatable positional takes every remaining one; the others one each, in order.
positional(Tok, [], _Acc) -> {error, {unexpected, Tok}};
positional(Tok, [P = #{key := Key, metavar := M} | Ps] = Pos, Acc) ->
    Type = maps:get(type, P, string),
    case {value(Type, Tok), P} of
        {{ok, V}, #{repeat := true}} -> {ok, Pos, Acc#{Key => maps:get(Key, Acc, []) ++ [V]}};
        {{ok, V}, _} -> {ok, Ps, Acc#{Key => V}};
        {{error, Msg}, _} -> {error, {bad_value, M, Tok, Msg}};
        {error, _} -> {error, {bad_value, M, Tok, Type}}
    end.

convert(F = #{type := Type}, Name, Text, Rest, Cmd, Pos, Acc) ->
    case value(Type, Text) of
        {ok, V} -> store(F, Name, V, Rest, Cmd, Pos, Acc);
        {error, Msg} -> {error, {bad_value, Name, Text, Msg}};
        error -> {error, {bad_value, Name, Text, Type}}
    end.

store(F = #{key := Key}, Name, V, Rest, Cmd, Pos, Acc) ->
    case {maps:get(repeat, F, false), maps:find(Key, Acc)} of
        {true, {ok, Vs}} -> scan(Rest, Cmd, Pos, Acc#{Key => Vs ++ [V]});
        {true, error} -> scan(Rest, Cmd, Pos, Acc#{Key => [V]});
        %% Given twice is most likely a mistake in a script: say so rather than pick one.
        {false, {ok, _}} -> {error, {twice, Name}};
        {false, error} -> scan(Rest, Cmd, Pos, Acc#{Key => V})
    end.

find_flag(Name, Flags) ->
    case [F || F <- Flags, maps:get(name, F) =:= Name orelse maps:get(short, F, none) =:= Name] of
        [F | _] -> F;
        [] -> undefined
    end.

%% The checks that need every argument: conflicts, one-of groups, required flags and
%% positionals; then the defaults.
finish(Cmd = #{flags := Flags}, Pos, Acc) ->
    Given = fun(K) -> is_map_key(K, Acc) end,
    NameOf = fun(K) -> hd([maps:get(name, F) || F <- Flags, maps:get(key, F) =:= K]) end,
    Conflicts = [{maps:get(name, F), NameOf(K)} || F <- Flags, Given(maps:get(key, F)),
                                                   K <- maps:get(conflicts, F, []), Given(K)]
        ++ [{NameOf(A), NameOf(B)} || G <- maps:get(one_of, Cmd, []),
                                      [A, B | _] <- [[K || K <- G, Given(K)]]],
    Missing = [G || G <- maps:get(one_of, Cmd, []), not lists:any(Given, G)],
    Required = [maps:get(name, F) || F <- Flags, maps:get(required, F, false),
                                     not Given(maps:get(key, F))],
    Args = [maps:get(metavar, P) || P <- Pos, maps:get(required, P, false),
                                    not Given(maps:get(key, P))],
    case {Conflicts, Missing, Required, Args} of
        {[{A, B} | _], _, _, _} -> {error, {conflict, A, B}};
        {[], [G | _], _, _} -> {error, {one_of, [NameOf(K) || K <- G]}};
        {[], [], [N | _], _} -> {error, {missing_flag, N}};
        {[], [], [], [M | _]} -> {error, {missing_arg, M}};
        {[], [], [], []} ->
            Defaults = maps:from_list([{K, D} || #{key := K, default := D} <- Flags]),
            {ok, maps:merge(Defaults, Acc)}
    end.

value(string, V) -> {ok, V};
value(atom, V) -> {ok, list_to_atom(V)};
value(int, V) ->
    case string:to_integer(V) of
        {N, ""} -> {ok, N};
        _ -> error
    end;
value({int, Min}, V) ->
    case value(int, V) of
        {ok, N} when N >= Min -> {ok, N};
        _ -> error
    end;
value({int, Min, Max}, V) ->
    case value({int, Min}, V) of
        {ok, N} when N =< Max -> {ok, N};
        _ -> error
    end;
value(number, V) ->
    case value(int, V) of
        {ok, N} -> {ok, N};
        error ->
            case string:to_float(V) of
                {F, ""} -> {ok, F};
                _ -> error
            end
    end;
value(term_list, V) ->
    case term_list(V) of
        {ok, L} -> {ok, L};
        {error, _} -> error
    end;
value({enum, Allowed}, V) ->
    case [A || A <- Allowed, atom_to_list(A) =:= V] of
        [A] -> {ok, A};
        [] -> error
    end;
value({duration, Unit}, V) -> duration(V, Unit);
value({check, Fun}, V) -> Fun(V).

%% @doc The text of an Erlang list (`-a '[8, 20]'') as the list.
-spec term_list(string()) -> {ok, list()} | {error, string()}.
term_list(Text) ->
    Bad = {error, "an Erlang list, such as '[1, foo]'"},
    case erl_scan:string(Text ++ ".") of
        {ok, Tokens, _} ->
            case erl_parse:parse_term(Tokens) of
                {ok, L} when is_list(L) -> {ok, L};
                _ -> Bad
            end;
        _ -> Bad
    end.

%% @doc A duration on the command line, as a whole number of Unit: a bare number is
%% seconds (decimals allowed: `1.5'), or a number with a unit, `ms', `s' or `m' (`500ms',
%% `2m'). It must be more than 0 and at most what a receive can wait (2^32 - 1 ms, about
%% 49 days). A fraction of a millisecond is rounded up; in seconds, a fraction of a
%% second is an error rather than a silent change.
%% The arithmetic is exact (digits, not floats): `0.1' is 100 ms, not 101.
-spec duration(string(), duration_unit()) -> {ok, pos_integer()} | {error, string()}.
duration(Text, Unit) when length(Text) > 40 ->
    {error, duration_words(Unit)};
duration(Text, Unit) ->
    case re:run(Text, "^([0-9]+)(?:\\.([0-9]+))?(ms|s|m)?$", [{capture, all_but_first, list}]) of
        {match, Parts} ->
            [Int, Frac, Suffix] = case Parts of
                                      [I] -> [I, "", ""];
                                      [I, F] -> [I, F, ""];
                                      [_, _, _] -> Parts
                                  end,
            %% Text = Num / 10^Digits of the suffix's unit; in ms: Num * PerUnit / 10^Digits.
            Num = list_to_integer(Int ++ Frac),
            Den = pow10(length(Frac)),
            Ms = Num * unit_ms(Suffix),
            in_unit(Ms, Den, Unit);
        nomatch -> {error, duration_words(Unit)}
    end.

unit_ms("ms") -> 1;
unit_ms("m") -> 60000;
unit_ms(S) when S =:= "s"; S =:= "" -> 1000.

pow10(0) -> 1;
pow10(N) -> 10 * pow10(N - 1).

-define(MAX_MS, 16#ffffffff).

%% Ms / Den milliseconds, as a whole number of Unit.
in_unit(0, _Den, _Unit) -> {error, "a duration of more than 0, such as 30, 500ms or 2m"};
in_unit(Ms, Den, _Unit) when Ms > ?MAX_MS * Den ->
    {error, "a duration of at most 49 days (4294967295ms)"};
in_unit(Ms, Den, millisecond) -> {ok, (Ms + Den - 1) div Den};
in_unit(Ms, Den, second) when Ms rem (1000 * Den) =:= 0 -> {ok, Ms div (1000 * Den)};
in_unit(_Ms, _Den, second) -> {error, "a whole number of seconds, such as 30, 90s or 2m"}.

duration_words(millisecond) ->
    "a duration: seconds (such as 30 or 1.5), or a number with a unit ms, s or m "
    "(such as 500ms or 2m)";
duration_words(second) ->
    "a duration: seconds (such as 30), or a number with a unit s or m (such as 90s or 1.5m)".

%% @doc A duration for the help: `60s', `500ms', `2m'.
-spec format_duration(pos_integer(), duration_unit()) -> string().
format_duration(N, second) -> format_duration(N * 1000, millisecond);
format_duration(Ms, millisecond) when Ms rem 60000 =:= 0, Ms >= 120000 -> fmt("~bm", [Ms div 60000]);
format_duration(Ms, millisecond) when Ms rem 1000 =:= 0 -> fmt("~bs", [Ms div 1000]);
format_duration(Ms, millisecond) -> fmt("~bms", [Ms]).

%%% Running a command ------------------------------------------------------------------

%% @doc Parses Args for Cmd and calls Fun with the options; prints the help (status 0)
%% or the error and the usage line (status 2) instead when that is what they call for.
%% The code paths of `-pa' and `--lib' are added before Fun runs.
-spec run(command(), [string()], fun((opts()) -> Status)) -> Status | 0 | 2
          when Status :: non_neg_integer().
run(Cmd, Args, Fun) ->
    case parse(Cmd, Args) of
        help ->
            io:put_chars(usage(Cmd)),
            0;
        {error, Reason} -> bad_input(Cmd, format_error(Reason));
        {ok, Opts} ->
            add_code_paths(Opts),
            Fun(Opts)
    end.

%% @doc Reports bad input: one sentence and the command's usage line on standard error;
%% returns the exit status for bad input, 2.
-spec bad_input(command(), iodata()) -> 2.
bad_input(#{name := Name} = Cmd, Sentence) ->
    io:format(standard_error, "riarc ~s: ~ts~n~s~n", [Name, Sentence, usage_line(Cmd)]),
    2.

%% @doc One sentence for a parse error.
-spec format_error(reason()) -> string().
format_error({unknown_flag, N}) -> fmt("unknown option ~ts", [N]);
format_error({missing_value, N}) -> fmt("~ts needs a value", [N]);
format_error({no_value, N}) -> fmt("~ts takes no value", [N]);
format_error({bad_value, N, V, Msg}) when is_list(Msg) -> fmt("~ts takes ~ts, not ~ts", [N, Msg, V]);
format_error({bad_value, N, V, Type}) -> fmt("~ts takes ~ts, not ~ts", [N, describe(Type), V]);
format_error({twice, N}) -> fmt("~ts is given twice", [N]);
format_error({conflict, A, B}) -> fmt("~ts and ~ts cannot be given together", [A, B]);
format_error({one_of, Ns}) -> fmt("give one of ~ts", [lists:join(" or ", Ns)]);
format_error({missing_flag, N}) -> fmt("~ts is required", [N]);
format_error({missing_arg, M}) -> fmt("~ts is missing", [M]);
format_error({unexpected, A}) -> fmt("unexpected argument ~ts", [A]).

describe(int) -> "a whole number";
describe({int, 0}) -> "a number >= 0";
describe({int, Min}) -> fmt("a whole number >= ~b", [Min]);
describe({int, Min, Max}) -> fmt("a whole number from ~b to ~b", [Min, Max]);
describe(number) -> "a number";
describe({duration, Unit}) -> duration_words(Unit);
describe(term_list) -> "an Erlang list, such as '[1, foo]'";
describe({enum, As}) -> fmt("one of ~ts", [lists:join(", ", [atom_to_list(A) || A <- As])]);
describe(_) -> "a value".

%%% Help -----------------------------------------------------------------------------------

%% @doc The command's usage line, `usage: riarc NAME ...', wrapped at 88 columns.
-spec usage_line(command()) -> string().
usage_line(Cmd = #{name := Name, flags := Flags}) ->
    Groups = maps:get(one_of, Cmd, []),
    InGroup = lists:append(Groups),
    Words = [flag_word(F) || F <- Flags, not lists:member(maps:get(key, F), InGroup)]
        ++ [group_word(G, Flags) || G <- Groups]
        ++ [pos_word(P) || P <- maps:get(positionals, Cmd, [])],
    Head = "usage: riarc " ++ Name,
    wrap(Words, Head, length(Head) + 1).

wrap([], Line, _Indent) -> Line;
wrap([W | Ws], Line, Indent) ->
    case lists:last(string:split(Line, "\n", trailing)) of
        Last when length(Last) + 1 + length(W) > ?WIDTH ->
            wrap(Ws, Line ++ "\n" ++ lists:duplicate(Indent, $\s) ++ W, Indent);
        _ -> wrap(Ws, Line ++ " " ++ W, Indent)
    end.

flag_word(F) ->
    W = flag_syntax(F, short),
    R = case maps:get(repeat, F, false) of true -> "..."; false -> "" end,
    case maps:get(required, F, false) of
        true -> W ++ R;
        false -> "[" ++ W ++ "]" ++ R
    end.

group_word(Keys, Flags) ->
    Fs = [hd([F || F <- Flags, maps:get(key, F) =:= K]) || K <- Keys],
    %% Flat: wrap/3 measures words by length/1.
    lists:flatten(["(", lists:join(" | ", [flag_syntax(F, short) || F <- Fs]), ")"]).

pos_word(P = #{metavar := M}) ->
    W = case maps:get(repeat, P, false) of true -> M ++ "..."; false -> M end,
    case maps:get(required, P, false) of
        true -> W;
        false -> "[" ++ W ++ "]"
    end.

%% `-m MOD' in the usage line (the short form when there is one); `-m, --module MOD' in
%% the option list.
flag_syntax(F = #{name := Name}, Form) ->
    Names = case {Form, F} of
                {short, #{short := S}} -> S;
                {long, #{short := S}} -> S ++ ", " ++ Name;
                _ -> Name
            end,
    case F of
        #{type := boolean} -> Names;
        _ -> Names ++ " " ++ metavar(F)
    end.

metavar(#{metavar := M}) -> M;
metavar(#{type := {enum, As}}) -> lists:flatten(lists:join("|", [atom_to_list(A) || A <- As]));
metavar(#{name := Name}) -> string:uppercase(string:trim(Name, leading, "-")).

%% @doc The command's full help: usage line, summary, options and notes.
-spec usage(command()) -> string().
usage(Cmd = #{flags := Flags}) ->
    Summary = maps:get(description, Cmd, maps:get(summary, Cmd)),
    Items = [{pos_word(P), maps:get(help, P, "")} || P <- maps:get(positionals, Cmd, [])]
        ++ [{flag_syntax(F, long), flag_help(F)} || F <- Flags]
        ++ [{"-h, --help", "print this help and exit"}],
    Col = min(30, lists:max([length(L) || {L, _} <- Items]) + 4),
    Lines = [case length(L) + 2 >= Col of
                 true -> "  " ++ L ++ "\n" ++ lists:duplicate(Col, $\s) ++ H;
                 false -> "  " ++ string:pad(L, Col - 2) ++ H
             end || {L, H} <- Items],
    Notes = case Cmd of
                #{notes := N} -> "\n" ++ N ++ "\n";
                _ -> ""
            end,
    lists:flatten([usage_line(Cmd), "\n\n", Summary, "\n\n", lists:join("\n", Lines), "\n", Notes]).

flag_help(F = #{help := H}) ->
    Extra = [" (repeatable)" || maps:get(repeat, F, false)]
        ++ [" (required)" || maps:get(required, F, false)]
        ++ [fmt(" (default ~ts)", [show(D, maps:get(type, F))]) || #{default := D} <- [F], D =/= []],
    lists:flatten([H | Extra]).

show(D, {duration, Unit}) when is_integer(D) -> format_duration(D, Unit);
show(D, _Type) -> show(D).

show(D) when is_atom(D) -> atom_to_list(D);
show(D) when is_integer(D) -> integer_to_list(D);
show(D) -> fmt("~tp", [D]).

%%% Users' code ------------------------------------------------------------------------

%% @doc The flags of every command that runs users' code: `-pa DIR' puts a directory of
%% .beam files first on the code path, as `erl -pa' does; `--lib DIR' adds every
%% `DIR/*/ebin', as ERL_LIBS does for a directory of applications.
%% @doc `--strict': the commands that check a system against monitors (run, check) end
%% with status 2 when they warned that the monitors matched nothing.
-spec strict_flag() -> flag().
strict_flag() ->
    #{name => "--strict", key => strict, type => boolean, default => false,
      help => "exit with status 2 when a property clause or the Spec monitored no process"}.

%% @doc The one `--timeout TIME' of the commands that run or check a system, a duration
%% (duration/2) held in milliseconds: 60 s unless given (the API's own default is no
%% timeout), at most what a receive can wait (2^32 - 1 ms, about 49 days).
-spec timeout_flag(string()) -> flag().
timeout_flag(What) ->
    #{name => "--timeout", key => timeout, type => {duration, millisecond}, metavar => "TIME",
      default => 60000,
      help => "give up on the " ++ What ++ " after TIME (seconds, or 500ms, 2m)"}.

-spec code_flags() -> [flag()].
code_flags() ->
    [#{name => "-pa", key => pa, type => {check, fun dir/1}, metavar => "DIR", repeat => true,
       help => "add DIR (your .beam files) to the front of the code path"},
     #{name => "--lib", key => lib, type => {check, fun dir/1}, metavar => "DIR", repeat => true,
       help => "add DIR/*/ebin (a directory of your applications, like ERL_LIBS)"}].

dir(D) ->
    case filelib:is_dir(D) of
        true -> {ok, D};
        false -> {error, "an existing directory"}
    end.

%% @doc Adds the code paths of `-pa' and `--lib' in Opts (as parse/2 gives them).
-spec add_code_paths(opts()) -> ok.
add_code_paths(Opts) ->
    %% add_pathsa reverses its list: reversing first keeps the order the user gave.
    ok = code:add_pathsa(lists:reverse(maps:get(pa, Opts, []))),
    Ebins = [E || Lib <- maps:get(lib, Opts, []),
                  E <- lists:sort(filelib:wildcard(filename:join([Lib, "*", "ebin"]))),
                  filelib:is_dir(E)],
    ok = code:add_pathsa(lists:reverse(Ebins)).

fmt(F, A) -> lists:flatten(io_lib:format(F, A)).
