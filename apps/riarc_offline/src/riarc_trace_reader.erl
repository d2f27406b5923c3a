%% @doc The behaviour of trace file formats: what {@link riarc_trace_file} asks of each
%% reader ({@link riarc_trace_bin}, {@link riarc_trace_text}, {@link riarc_trace_dbg})
%% and writer, and the one helper they share. A format module names it with
%% `-behaviour(riarc_trace_reader)'; riarc_trace_file picks the module by the file's
%% first bytes and only ever calls these callbacks.
%% ```
%% 1> riarc_trace_reader:behaviour_info(callbacks).
%% [{open,1},{read,1},{close,1}]
%% 2> riarc_trace_reader:close_file(element(2, file:open("/tmp/x", [write])), "/tmp/x").
%% ok
%% '''
-module(riarc_trace_reader).

-export([close_file/2]).

%% Opens the file (or a wrap set) for streamed reading.
-callback open(Source :: term()) -> {ok, State :: term()} | {error, term()}.
%% The next event, `eof' with what the reader learnt about the file, or an error naming
%% the file and the position.
-callback read(State :: term()) ->
    {ok, riarc_event:event(), State :: term()} | {eof, map()} | {error, term()}.
-callback close(State :: term()) -> ok.
%% Writers: the formats riarc produces (binary, text).
-callback open_writer(File :: file:filename_all(), Opts :: map()) -> {ok, term()} | {error, term()}.
-callback write_event(W :: term(), riarc_event:event()) -> {ok, term()} | {error, term()}.
-callback close_writer(W :: term()) -> ok | {error, term()}.
-optional_callbacks([open_writer/2, write_event/2, close_writer/1]).

%% @doc Closes a file a writer wrote, turning a failure (a full disk shows up here, when
%% the last buffered bytes are written) into the writers' error shape.
-spec close_file(file:io_device(), string()) -> ok | {error, {write, string(), term()}}.
close_file(Fd, File) ->
    case file:close(Fd) of
        ok -> ok;
        {error, Why} -> {error, {write, File, Why}}
    end.
