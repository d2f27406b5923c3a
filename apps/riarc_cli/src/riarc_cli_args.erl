%% @doc The command line's arguments: flags and their values, the monitors a command
%% names (a Spec module or a property file) and Erlang terms given as text. Every
%% command of `bin/riarc' reads its arguments through this module.
%% ```
%% 1> riarc_cli_args:parse_args(["-m", "riarc_demo", "-f", "main"]).
%% {ok,#{"-f" => "main","-m" => "riarc_demo"}}
%% 2> riarc_cli_args:term_list("[8, 20]").
%% {ok,[8,20]}
%% '''
-module(riarc_cli_args).

-export([parse_args/1, spec_of/1, term_list/1]).

%% @doc The monitors of a command: a Spec module on the code path (`--monitors') or a
%% property file (`--props'), with the run options it implies: a compiled property file
%% knows which message events its properties can ever need, and only those are traced.
-spec spec_of(#{string() => string()}) -> {ok, module(), riarc:opts()} | {error, iolist()}.
spec_of(#{"--monitors" := Mod}) ->
    M = list_to_atom(Mod),
    case riarc_lambda:valid_spec(M) of
        true -> {ok, M, #{}};
        false -> {error, io_lib:format("~s is not a module exporting spec/1 on the code path", [Mod])}
    end;
spec_of(#{"--props" := File}) ->
    case riarc_shml:load_file(File) of
        {ok, Mod} -> {ok, Mod, #{events => Mod:trace_flags()}};
        {error, Reason} -> {error, riarc_shml:format_error(Reason)}
    end;
spec_of(_) ->
    {error, "give the monitors with --monitors MODULE or --props FILE"}.

%% @doc Parses `-x VALUE' and `--name VALUE' pairs into a map.
-spec parse_args([string()]) -> {ok, #{string() => string()}} | {error, string()}.
parse_args(Args) -> parse_args(Args, #{}).

parse_args([], Acc) -> {ok, Acc};
parse_args([[$- | _] = Flag, Value | Rest], Acc) when hd(Value) =/= $- orelse Value =:= "-" ->
    parse_args(Rest, Acc#{Flag => Value});
parse_args([[$- | _] = Flag | _], _Acc) -> {error, io_lib:format("~s needs a value", [Flag])};
parse_args([Other | _], _Acc) -> {error, io_lib:format("unexpected argument ~s", [Other])}.

%% @doc Parses the text of an Erlang list given on the command line (`-a').
-spec term_list(string()) -> {ok, list()} | {error, iolist()}.
term_list(Text) ->
    case erl_scan:string(Text ++ ".") of
        {ok, Tokens, _} ->
            case erl_parse:parse_term(Tokens) of
                {ok, L} when is_list(L) -> {ok, L};
                _ -> {error, io_lib:format("-a takes an Erlang list, such as '[1, foo]', not ~s", [Text])}
            end;
        _ -> {error, io_lib:format("-a takes an Erlang list, such as '[1, foo]', not ~s", [Text])}
    end.
