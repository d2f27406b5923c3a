%% @doc `bin/riarc compile FILE [-o DIR]': compiles a property file to a .beam (default
%% DIR: the current directory). Errors are printed as `FILE:LINE:COLUMN: message' on
%% standard error with exit status 2; success exits 0.
%% ```
%% $ bin/riarc compile examples/props/pqr.prop -o /tmp
%% /tmp/riarc_props_pqr.beam: module riarc_props_pqr, traces send, recv
%% $ bin/riarc compile bad.prop
%% bad.prop:3:18: variable 'Y' is unbound
%% $ echo $?
%% 2
%% '''
%% From Erlang, run/1 does the same and returns the exit status instead of halting.
-module(riarc_shml_cli).

-export([main/1, run/1]).

-define(USAGE, "usage: riarc compile FILE [-o DIR]").

%% @doc Compiles as the arguments say, then halts with the status.
-spec main([string()]) -> no_return().
main(Args) ->
    erlang:halt(run(Args)).

%% @doc Compiles as the arguments say; returns the exit status (0 or 2).
-spec run([string()]) -> 0 | 2.
run(Args) ->
    case parse(Args, #{}) of
        {ok, #{file := File} = Opts} ->
            Dir = maps:get(out, Opts, "."),
            case riarc_shml:compile_file(File, Dir) of
                {ok, Path} ->
                    Mod = riarc_shml:module_name(File),
                    io:format("~ts: module ~ts, traces ~ts~n", [Path, Mod, flags(File)]),
                    0;
                {error, Reason} ->
                    io:format(standard_error, "~ts~n", [riarc_shml:format_error(Reason)]),
                    2
            end;
        {ok, _} -> usage("no property file given");
        {error, Msg} -> usage(Msg)
    end.

parse([], Opts) -> {ok, Opts};
parse(["-o", Dir | Rest], Opts) -> parse(Rest, Opts#{out => Dir});
parse(["-o"], _) -> {error, "-o needs a directory"};
parse([[$- | _] = Opt | _], _) -> {error, "unknown option " ++ Opt};
parse([File | Rest], Opts) when not is_map_key(file, Opts) -> parse(Rest, Opts#{file => File});
parse([Extra | _], _) -> {error, "unexpected argument " ++ Extra}.

usage(Msg) ->
    io:format(standard_error, "riarc compile: ~ts~n" ?USAGE "~n", [Msg]),
    2.

%% The trace flags the compiled module asks for (the file was just compiled: it parses).
flags(File) ->
    {ok, Clauses} = riarc_shml:parse_file(File),
    case lists:usort(lists:append([riarc_shml_compile:kinds(C) || C <- Clauses])) of
        [] -> "spawn and exit only";
        Flags -> lists:join(", ", [atom_to_list(F) || F <- Flags])
    end.
