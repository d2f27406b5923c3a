%% @doc The monitored system's own log output, kept off standard output: standard output
%% is for the verdicts (and `--format json' lines must parse), but the system under
%% `run' runs in the command line's VM, whose logger prints a crashing process's
%% `=ERROR REPORT' to standard output. For the command's duration, what the VM's default
%% handler would print goes to standard error instead, or, with `--system-log FILE', is
%% appended to FILE; the default handler is silenced meanwhile and restored after.
%% ```
%% 1> riarc_cli_syslog:with(#{}, fun() -> 0 end).
%% 0
%% 2> riarc_cli_syslog:format_error({cannot_open, "/nonexistent/x.log", enoent}).
%% "cannot write the system log to /nonexistent/x.log: no such file or directory"
%% '''
-module(riarc_cli_syslog).

-export([flag/0, with/2, format_error/1]).
-export_type([error_reason/0]).

-type error_reason() :: {cannot_open, file:filename(), term()}.

-define(HANDLER, riarc_system_log).
-define(SETTLE_STEP_MS, 10).
-define(SETTLE_QUIET_MS, 50).
-define(SETTLE_MAX_MS, 1000).

%% @doc The flag `--system-log FILE'.
-spec flag() -> riarc_cli_args:flag().
flag() ->
    #{name => "--system-log", key => system_log, type => string, metavar => "FILE",
      help => "append the system's own log output (logger reports, crash reports) to FILE "
              "(default: standard error; never standard output)"}.

%% @doc Runs Fun (a command, returning its exit status) with the VM's log output on
%% standard error, or in the file of `system_log' in Opts; a file that cannot be opened
%% is status 2, said as the command's format says errors (riarc_cli_report:fail/3).
-spec with(#{system_log => file:filename(), atom() => term()}, fun(() -> Status)) -> Status | 2
          when Status :: non_neg_integer().
with(Opts, Fun) ->
    case redirect(maps:get(system_log, Opts, standard_error)) of
        {ok, Undo} ->
            try Fun() after Undo() end;
        {error, Reason} ->
            riarc_cli_report:fail(Opts, format_error(Reason), 2)
    end.

%% A handler of our own with the default handler's level, filters and formatter (so a
%% report reads as it would have), writing where asked; the default handler silenced.
redirect(Target) ->
    Default = case logger:get_handler_config(default) of
                  {ok, C} -> C;
                  {error, _} -> #{}
              end,
    Config = case Target of
                 standard_error -> #{type => standard_error};
                 File -> #{file => File}
             end,
    %% Every event the handler takes is counted, so that undo/1 can tell when it has
    %% been quiet (settle/3).
    Count = counters:new(1, []),
    Counted = {riarc_counted, {fun counted/2, Count}},
    Own = {riarc_closed_stdout, {fun closed_stdout/2, stdout_processes()}},
    Filters = [Counted, Own | maps:get(filters, Default, [])],
    Handler = (maps:with([level, filter_default, formatter], Default))#{config => Config,
                                                                        filters => Filters},
    case logger:add_handler(?HANDLER, logger_std_h, Handler) of
        ok ->
            _ = is_map_key(level, Default) andalso logger:set_handler_config(default, level, none),
            {ok, fun() -> undo(Default, Count) end};
        {error, Why} ->
            {error, {cannot_open, Target, Why}}
    end.

undo(Default, Count) ->
    settle(Count, 0, erlang:monotonic_time(millisecond) + ?SETTLE_MAX_MS),
    _ = logger:remove_handler(?HANDLER),
    _ = case Default of
            #{level := Level} -> logger:set_handler_config(default, level, Level);
            #{} -> ok
        end,
    ok.

%% The reader of standard output went away (`bin/riarc run ... | head -1'): this VM's own
%% `user' process ends (exit epipe, or an error badarg on its closed port: the emulator's
%% "Error in process" report); its supervisor (kernel_sup's child `user') and kernel_sup
%% report it.
%% Neither is the system's log, and riarc ends quietly then. Told apart by the process
%% that logged, not by the text: a system's report may mention anything.
closed_stdout(Event = #{meta := Meta, msg := Msg}, Own) ->
    case lists:member(maps:get(pid, Meta, undefined), Own) orelse reports_end_of(Msg, Own) of
        true -> stop;
        false -> Event
    end;
closed_stdout(Event, _Own) ->
    Event.

%% kernel_sup's report that its child `user' (user_sup) ended.
reports_end_of({report, #{label := {supervisor, _}, report := Report}}, Own) when is_list(Report) ->
    Offender = proplists:get_value(offender, Report, []),
    is_list(Offender) andalso lists:member(proplists:get_value(pid, Offender), Own);
reports_end_of(_Msg, _Own) ->
    false.

%% This VM's standard output process and its supervisor, as they are now.
stdout_processes() ->
    Sup = try supervisor:which_children(kernel_sup) of
              Children -> [P || {user, P, _, _} <- Children, is_pid(P)]
          catch exit:_ -> []
          end,
    [P || P <- [whereis(user) | Sup], is_pid(P)].

%% A filter that counts every event and decides nothing (`ignore': the default
%% handler's filters and filter_default decide, as they would have).
counted(_Event, Count) ->
    counters:add(Count, 1, 1),
    ignore.

%% Written before the VM halts: the VM's own report of a process that crashed reaches
%% logger_proxy some milliseconds after the process is gone (measured: up to tens of ms,
%% more on a loaded machine), and nothing says one is on its way. So what was queued is
%% passed on (a call to logger_proxy returns after it, filesync after the handler wrote
%% it), and this is repeated until the handler took no new event for ?SETTLE_QUIET_MS, or
%% ?SETTLE_MAX_MS passed: a report later than that may be lost at halt, as before.
settle(Count, Quiet, Deadline) ->
    Before = counters:get(Count, 1),
    _ = catch sys:get_state(logger_proxy, 5000),
    _ = catch logger_std_h:filesync(?HANDLER),
    Now = erlang:monotonic_time(millisecond),
    case {counters:get(Count, 1), Quiet >= ?SETTLE_QUIET_MS orelse Now >= Deadline} of
        {Before, true} -> ok;
        {Before, false} -> timer:sleep(?SETTLE_STEP_MS), settle(Count, Quiet + ?SETTLE_STEP_MS, Deadline);
        {_New, _} when Now >= Deadline -> ok;
        {_New, _} -> settle(Count, 0, Deadline)
    end.

%% @doc One sentence for an error of with/2.
-spec format_error(error_reason()) -> string().
format_error({cannot_open, File, Why}) ->
    lists:flatten(io_lib:format("cannot write the system log to ~ts: ~ts", [File, reason(Why)])).

reason({handler_not_added, Why}) -> reason(Why);
reason({open_failed, _File, Posix}) -> reason(Posix);
reason(Posix) when is_atom(Posix) -> file:format_error(Posix);
reason(Other) -> riarc_term_show:show(Other).
