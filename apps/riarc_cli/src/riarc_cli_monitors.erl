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

-export([spec_of/1, flags/0, format_error/1]).
-export_type([error_reason/0]).

-type error_reason() :: {not_a_spec_module, atom()} | no_monitors.

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
%% A property file that does not compile is riarc_shml's error.
-spec spec_of(riarc_cli_args:opts()) ->
    {ok, module(), riarc:opts()} | {error, {?MODULE, error_reason()} | {riarc_shml, term()}}.
spec_of(#{monitors := M}) ->
    case riarc_lambda:valid_spec(M) of
        true -> {ok, M, #{}};
        false -> {error, {?MODULE, {not_a_spec_module, M}}}
    end;
spec_of(#{props := File}) ->
    case riarc_shml:load_file(File) of
        {ok, Mod} -> {ok, Mod, #{events => Mod:trace_flags()}};
        {error, Reason} -> {error, {riarc_shml, Reason}}
    end;
spec_of(_) ->
    {error, {?MODULE, no_monitors}}.

%% @doc One sentence for an error of spec_of/1.
-spec format_error(error_reason()) -> string().
format_error({not_a_spec_module, M}) ->
    lists:flatten(io_lib:format("~s is not a module exporting spec/1 on the code path", [M]));
format_error(no_monitors) ->
    "give the monitors with --monitors MODULE or --props FILE".
