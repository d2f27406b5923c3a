%% @doc `bin/riarc compile FILE [-o DIR] [--module NAME]': compiles a property file to a
%% .beam (default DIR: the current directory; default NAME: riarc_props_ and the file's
%% base name). Errors are printed as `FILE:LINE:COLUMN: message' on
%% standard error with exit status 2; success exits 0.
%% ```
%% $ bin/riarc compile examples/props/pqr.prop -o /tmp
%% /tmp/riarc_props_pqr.beam: module riarc_props_pqr, traces recv, send
%% $ bin/riarc compile bad.prop
%% bad.prop:3:18: variable 'Y' is unbound
%% $ echo $?
%% 2
%% '''
%% From Erlang, run/1 does the same and returns the exit status instead of halting:
%% ```
%% 1> riarc_shml_cli:run(["examples/props/pqr.prop", "-o", "/tmp"]).
%% /tmp/riarc_props_pqr.beam: module riarc_props_pqr, traces recv, send
%% 0
%% '''
-module(riarc_shml_cli).

-export([run/1, commands/0]).

%% @doc The declaration of `compile' (riarc_cli_args parses it).
-spec commands() -> [riarc_cli_args:command()].
commands() ->
    [#{name => "compile",
       summary => "compile a property file to a .beam",
       description => "Compiles a property file to a .beam named riarc_props_NAME.beam (or "
                  "--module's NAME.beam),\nwhich `--monitors MODULE' (with -pa DIR) then uses "
                  "like any Spec module.",
       flags => [#{name => "--out", short => "-o", key => out, type => string, metavar => "DIR",
                   default => ".", help => "where to write the .beam"},
                 #{name => "--module", key => module, type => {check, fun module_name/1},
                   metavar => "NAME",
                   help => "the compiled module's name (default: riarc_props_ and the file's base name)"}],
       positionals => [#{key => file, metavar => "FILE", required => true,
                         help => "the property file (docs/properties.md)"}]}].

%% @doc Compiles as the arguments (those after `compile') say; returns the exit status.
-spec run([string()]) -> 0 | 2.
run(Args) ->
    [Cmd] = commands(),
    riarc_cli_args:run(Cmd, Args, fun(Opts = #{file := File, out := Dir}) ->
        case riarc_shml:compile_file(File, Dir, maps:with([module], Opts)) of
            {ok, Path} ->
                Mod = filename:basename(Path, ".beam"),
                io:format("~ts: module ~ts, traces ~ts~n", [Path, Mod, flags(File)]),
                {ok, Warnings} = riarc_shml:warnings(File),
                _ = [io:format(standard_error, "~ts~n", [W]) || W <- Warnings],
                0;
            {error, Reason} ->
                io:format(standard_error, "~ts~n", [riarc_shml:format_error(Reason)]),
                2
        end
    end).

%% A module name: an atom that can also be a file name (letters, digits, `_', `.', `@',
%% starting with a letter), as `-pa DIR' and `--monitors NAME' find it.
module_name([C | _] = Name) when (C >= $a andalso C =< $z) orelse (C >= $A andalso C =< $Z) ->
    Ok = lists:all(fun(Ch) -> (Ch >= $a andalso Ch =< $z) orelse (Ch >= $A andalso Ch =< $Z)
                                  orelse (Ch >= $0 andalso Ch =< $9) orelse lists:member(Ch, "_.@")
                   end, Name),
    case Ok andalso length(Name) =< 255 of
        true -> {ok, list_to_atom(Name)};
        false -> module_name_error()
    end;
module_name(_) ->
    module_name_error().

module_name_error() ->
    {error, "a module name: a letter, then letters, digits, _, . or @"}.

%% The trace flags the compiled module asks for (the file was just compiled: it parses).
flags(File) ->
    {ok, Clauses} = riarc_shml:parse_file(File),
    case lists:usort(lists:append([riarc_shml_compile:kinds(C) || C <- Clauses])) of
        [] -> "spawn and exit only";
        Flags -> lists:join(", ", [atom_to_list(F) || F <- Flags])
    end.
