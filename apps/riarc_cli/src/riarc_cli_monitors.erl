%% @doc The monitors a command names: a Spec module on the code path (`--monitors') or a
%% property file (`--props'), as riarc_cli_args gives them, with the run options they
%% imply. A compiled property file knows which message events its properties can ever
%% need, and only those are traced.
%% ```
%% 1> riarc_cli_monitors:spec_of(#{monitors => riarc_demo_monitors}).
%% {ok,riarc_demo_monitors,#{}}
%% 2> riarc_cli_monitors:spec_of(#{props => "examples/props/pqr.prop"}).
%% {ok,riarc_props_pqr,#{events => [recv,send]}}
%% '''
-module(riarc_cli_monitors).

-export([spec_of/1, flags/0]).

%% @doc The two flags that name the monitors; a command declares them together with
%% `one_of => [[monitors, props]]', so exactly one is given.
-spec flags() -> [riarc_cli_args:flag()].
flags() ->
    [#{name => "--monitors", key => monitors, type => atom, metavar => "MODULE",
       conflicts => [props],
       help => "the monitors: a module exporting spec/1 (on the code path, see -pa)"},
     #{name => "--props", key => props, type => string, metavar => "FILE", conflicts => [monitors],
       help => "the monitors: a property file (docs/properties.md)"}].

%% @doc The Spec module and run options of the monitors in Opts.
-spec spec_of(riarc_cli_args:opts()) -> {ok, module(), riarc:opts()} | {error, string()}.
spec_of(#{monitors := M}) ->
    case riarc_lambda:valid_spec(M) of
        true -> {ok, M, #{}};
        false -> {error, flat("~s is not a module exporting spec/1 on the code path", [M])}
    end;
spec_of(#{props := File}) ->
    case riarc_shml:load_file(File) of
        {ok, Mod} -> {ok, Mod, #{events => Mod:trace_flags()}};
        {error, Reason} -> {error, flat("~ts", [riarc_shml:format_error(Reason)])}
    end;
spec_of(_) ->
    {error, "give the monitors with --monitors MODULE or --props FILE"}.

flat(F, A) -> lists:flatten(io_lib:format(F, A)).
