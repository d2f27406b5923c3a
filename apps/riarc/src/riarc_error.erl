%% @doc Errors crossing modules, `{Module, Reason}': the sentence is the module's own
%% (its format_error/1), whichever module passes the error on. riarc:format_error/1 and
%% the session, on which riarc depends, both say an error of another module through it.
%% ```
%% 1> riarc_error:format({riarc_join, {scan_failed, 'app@host', noconnection}}).
%% "could not list the processes on node app@host that came from elsewhere: noconnection"
%% 2> riarc_error:format({no_such_module, oops}).
%% "{no_such_module,oops}"
%% '''
-module(riarc_error).

-export([format/1]).

%% @doc The sentence for `{Module, Reason}' (Module's format_error/1), or the term as it
%% prints when no module says.
-spec format(term()) -> string().
format({Module, Reason}) when is_atom(Module) ->
    %% Every riarc module that returns errors exports format_error/1 for its own reasons.
    case erlang:function_exported(Module, format_error, 1) orelse
         (code:ensure_loaded(Module) =:= {module, Module} andalso
          erlang:function_exported(Module, format_error, 1)) of
        true -> Module:format_error(Reason);
        false -> lists:flatten(io_lib:format("~0tp", [{Module, Reason}]))
    end;
format(Other) ->
    lists:flatten(io_lib:format("~0tp", [Other])).
