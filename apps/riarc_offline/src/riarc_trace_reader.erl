%% @doc The behaviour of trace file formats: what {@link riarc_trace_file} asks of each
%% reader ({@link riarc_trace_bin}, {@link riarc_trace_text}, {@link riarc_trace_dbg})
%% and writer, and what they share: the reading limits (options and defaults), the
%% error reasons, and the sentence for each. A format module names it with
%% `-behaviour(riarc_trace_reader)'; riarc_trace_file picks the module by the file's
%% first bytes and only ever calls these callbacks. (The shared parts live here rather
%% than in riarc_trace_file because the readers must not call it back: no module cycle.)
%% ```
%% 1> riarc_trace_reader:max_record_bytes(#{}).
%% 16777216
%% 2> riarc_trace_reader:format_error({too_big, "t.rtrc", {byte, 27}, 99999999, 16777216}).
%% "t.rtrc: the record at byte 27 is 99999999 bytes long, over the limit of 16777216 (option max_record_bytes)"
%% '''
-module(riarc_trace_reader).

-export([close_file/2, max_record_bytes/1, text_version_line/0, format_error/1]).
-export_type([opts/0, error_reason/0, pos/0]).

%% Reading limits. A trace file may come from anywhere: every size it announces is
%% checked against these before anything is allocated.
-type opts() :: #{max_record_bytes => pos_integer()}.
-type pos() :: {byte, non_neg_integer()} | {line, pos_integer()}.
-type error_reason() ::
        {open, string(), file:posix() | badarg | system_limit}
      | {read, string(), pos(), term()}
      | {write, string(), term()}
      | {not_a_trace_file, string(), string()}
      | {syntax, string(), pos_integer(), string()}
      | {not_an_event, string(), pos(), term()}
      | {bad_header, string(), string()}
      | {bad_version, string(), byte()}
      | {bad_record, string(), non_neg_integer(), string()}
      | {bad_term, string(), non_neg_integer()}
      | {unknown_process, string(), non_neg_integer(), non_neg_integer()}
      | {too_big, string(), pos(), non_neg_integer(), pos_integer()}
      | {compressed_too_big, string(), pos(), non_neg_integer(), pos_integer()}
      | {no_wrap_files, string(), string()}
      | {ambiguous_timeout, string(), pos()}.

%% 16 MiB: far above any event a recorder writes (a payload is one message), and small
%% enough that the worst decoded size (about 16 heap bytes per external byte, a list of
%% empty lists) stays at a few hundred megabytes.
-define(MAX_RECORD_BYTES, 16 * 1024 * 1024).

%% Opens the file (or a wrap set) for streamed reading, within the limits of Opts.
-callback open(Source :: term(), Opts :: opts()) -> {ok, State :: term()} | {error, error_reason()}.
%% The next event, `eof' with what the reader learnt about the file, or an error naming
%% the file and the position.
-callback read(State :: term()) ->
    {ok, riarc_event:traced(), State :: term()} | {eof, map()} | {error, error_reason()}.
-callback close(State :: term()) -> ok.
%% Where the last event read starts: the file (a wrap set has several) and its line or
%% byte offset, for the errors of the rules a trace keeps (riarc_trace_rules).
-callback position(State :: term()) -> {string(), pos()}.
%% Writers: the formats riarc produces (binary, text).
-callback open_writer(File :: file:filename_all(), Opts :: map()) -> {ok, term()} | {error, error_reason()}.
-callback write_event(W :: term(), riarc_event:traced()) -> {ok, term()} | {error, error_reason()}.
-callback close_writer(W :: term()) -> ok | {error, error_reason()}.
-optional_callbacks([open_writer/2, write_event/2, close_writer/1]).

%% @doc The bound on one record (binary and dbg), one term's text (text) and the
%% uncompressed size of one compressed term: `max_record_bytes', 16 MiB by default.
-spec max_record_bytes(opts()) -> pos_integer().
max_record_bytes(#{max_record_bytes := N}) when is_integer(N), N > 0 -> N;
max_record_bytes(_) -> ?MAX_RECORD_BYTES.

%% @doc The first line of a text trace in which a receive timeout is `{timeout, P}' and
%% `{recv, P, timeout}' is the message `timeout' (riarc_trace_text writes it). A text
%% trace without it may be an older recording, where the recorder wrote timeouts as
%% `{recv, P, timeout}': there that event is refused as ambiguous.
-spec text_version_line() -> string().
text_version_line() -> "%% riarc trace, text format 2".

%% @doc Closes a file a writer wrote, turning a failure (a full disk shows up here, when
%% the last buffered bytes are written) into the writers' error shape.
-spec close_file(file:io_device(), string()) -> ok | {error, {write, string(), term()}}.
close_file(Fd, File) ->
    case file:close(Fd) of
        ok -> ok;
        {error, Why} -> {error, {write, File, Why}}
    end.

%% @doc One sentence for a reader's or writer's error, naming the file and, when there
%% is one, the byte offset or line.
-spec format_error(error_reason()) -> string().
format_error({open, File, Why}) ->
    flat("cannot open ~ts: ~ts", [File, file:format_error(Why)]);
format_error({write, File, Why}) ->
    flat("cannot write ~ts: ~ts", [File, posix(Why)]);
format_error({read, File, Pos, Why}) ->
    flat("~ts: read error at ~s: ~ts", [File, pos(Pos), posix(Why)]);
format_error({not_a_trace_file, File, Why}) ->
    flat("~ts: not a trace file: ~ts", [File, Why]);
format_error({syntax, File, Line, Msg}) ->
    flat("~ts:~b: not an Erlang term: ~ts", [File, Line, Msg]);
format_error({not_an_event, File, Pos, Term}) ->
    flat("~ts: ~s: ~0tP is not a riarc event ({init,C,P,MFA}, {spawn,P,C,MFA}, "
         "{exit,P,Reason}, {send,From,To,Msg}, {recv,P,Msg} or {timeout,P})",
         [File, pos(Pos), Term, 12]);
format_error({bad_header, File, Why}) ->
    flat("~ts: not a riarc binary trace: ~s", [File, Why]);
format_error({bad_version, File, V}) ->
    flat("~ts: binary trace version ~b is not supported (this riarc reads versions 1 and 2)",
         [File, V]);
format_error({bad_record, File, Pos, Why}) ->
    flat("~ts: malformed record at byte ~b: ~s", [File, Pos, Why]);
format_error({bad_term, File, Pos}) ->
    flat("~ts: malformed Erlang term at byte ~b", [File, Pos]);
format_error({unknown_process, File, Pos, Id}) ->
    flat("~ts: record at byte ~b names process #~b before its definition", [File, Pos, Id]);
format_error({too_big, File, {line, L}, Size, Max}) ->
    flat("~ts:~b: the term is more than ~b bytes long, over the limit of ~b (option max_record_bytes)",
         [File, L, Size, Max]);
format_error({too_big, File, Pos, Size, Max}) ->
    flat("~ts: the record at ~s is ~b bytes long, over the limit of ~b (option max_record_bytes)",
         [File, pos(Pos), Size, Max]);
format_error({compressed_too_big, File, Pos, Size, Max}) ->
    flat("~ts: the compressed term at ~s would expand to ~b bytes, over the limit of ~b "
         "(option max_record_bytes)", [File, pos(Pos), Size, Max]);
format_error({ambiguous_timeout, File, Pos}) ->
    flat("~ts: ~s: a receive of the message timeout (or of a message left out) in a trace "
         "that does not tell receive timeouts from messages (a binary trace of version 1, a "
         "text trace without the line \"~ts\", or a dbg trace): it may have been a receive "
         "timeout, which riarc now checks as {timeout, P}; record the run again (or, in a "
         "text trace, write {timeout, P} for a timeout and add that first line)",
         [File, pos(Pos), text_version_line()]);
format_error({no_wrap_files, Name, Tail}) ->
    flat("no dbg wrap files ~ts<N>~ts found", [Name, Tail]).

pos({line, L}) -> flat("line ~b", [L]);
pos({byte, B}) -> flat("byte ~b", [B]).

posix(Why) when is_atom(Why) -> file:format_error(Why);
posix(Why) -> flat("~0tp", [Why]).

flat(Fmt, Args) -> lists:flatten(io_lib:format(Fmt, Args)).
