%% @doc riarc's own removal of a process's trace flags. Every call that takes flags
%% (erlang:trace/3 with `false') is seen by the meta pattern that riarc_trace_pattern's
%% keeper holds while riarc runs, whoever makes it, so that a look can tell that someone
%% outside riarc took flags (riarc_trace_pattern:look/1); riarc's own calls use the flag
%% list flags/0, which that pattern leaves out. Turning off `timestamp' with `all' changes
%% nothing: riarc never sets it.
%% ```
%% 1> P = spawn(fun() -> receive stop -> ok end end).
%% 2> riarc_untrace:untrace(P).
%% 1
%% 3> riarc_untrace:flags().
%% [all,timestamp]
%% '''
-module(riarc_untrace).

-export([untrace/1, flags/0]).

%% @doc Takes every flag of PidSpec, as riarc's own call (the meta pattern leaves it out).
-spec untrace(pid() | port() | all | processes | existing | existing_processes | new
              | new_processes) -> integer().
untrace(PidSpec) ->
    erlang:trace(PidSpec, false, flags()).

%% @doc The flag list of riarc's own calls that take flags.
-spec flags() -> [all | timestamp, ...].
flags() ->
    [all, timestamp].
