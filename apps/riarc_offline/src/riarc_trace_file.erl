%% @doc Trace files: one reader for the three formats riarc checks offline, and writers
%% for the two it produces.
%% <ul>
%% <li>binary, riarc's own compact format ({@link riarc_trace_bin}, specified in
%%     docs/trace-format.md);</li>
%% <li>text, one event per line as an Erlang term ({@link riarc_trace_text}), for traces
%%     written by hand;</li>
%% <li>files of OTP's `dbg:trace_port(file, ...)', wrap sets included
%%     ({@link riarc_trace_dbg}).</li>
%% </ul>
%% The format is recognised from the first bytes. Reading is streamed, one event at a
%% time, so a file of any size is read in bounded memory. Every malformed input gives
%% `{error, Reason}' naming the file and the position; {@link format_error/1} makes a
%% sentence of it.
%% ```
%% 1> file:write_file("t.txt", "{init, p, x, {m, f, []}}.\n{exit, p, normal}.\n").
%% 2> riarc_trace_file:read_all("t.txt").
%% {ok,[{init,p,x,{m,f,[]}},{exit,p,normal}],#{format => text,...}}
%% 3> riarc_trace_file:write("t.bin", element(2, v(2)), #{format => binary}).
%% ok
%% 4> riarc_trace_file:read_all("t.bin").
%% {ok,[{init,p,x,{m,f,[]}},{exit,p,normal}],#{format => binary,truncated => false,...}}
%% '''
-module(riarc_trace_file).

-export([open/1, read/1, close/1, read_all/1, fold/3]).
-export([open_writer/2, write_event/2, close_writer/1, write/3]).
-export([format_error/1]).
-export_type([reader/0, writer/0, source/0, info/0, writer_opts/0]).

-type source() :: file:filename_all() | {dbg_wrap, file:filename_all(), string()}.
-type format() :: binary | text | dbg.
-opaque reader() :: #{mod := module(), st := term(), format := format()}.
-opaque writer() :: #{mod := module(), st := term()}.
%% What a reader learnt about the file by the time it reached its end.
-type info() :: #{format := format(), file := string(), events := non_neg_integer(),
                  atom() => term()}.
-type writer_opts() :: #{format => binary | text, payloads => boolean(),
                         node => node(), start_us => integer()}.

%%% ---------------------------------------------------------------------------
%%% Reading
%%% ---------------------------------------------------------------------------

%% @doc Opens a trace file for reading, recognising its format.
-spec open(source()) -> {ok, reader()} | {error, term()}.
open(Src = {dbg_wrap, _, _}) ->
    wrap(dbg, riarc_trace_dbg:open(Src));
open(File) ->
    case file:open(File, [read, raw, binary]) of
        {ok, Fd} ->
            Head = file:pread(Fd, 0, 8),
            ok = file:close(Fd),
            open_as(detect(Head), File);
        {error, Why} -> {error, {open, name(File), Why}}
    end.

detect({ok, <<"RIARCTRC">>}) -> binary;
detect({ok, <<0, _:32, 131, _/binary>>}) -> dbg;
detect({ok, <<1, _:32, _/binary>>}) -> dbg;
detect(_) -> text.

open_as(binary, File) -> wrap(binary, riarc_trace_bin:open(File));
open_as(dbg, File) -> wrap(dbg, riarc_trace_dbg:open(File));
open_as(text, File) -> wrap(text, riarc_trace_text:open(File)).

wrap(Format, {ok, St}) -> {ok, #{mod => mod(Format), st => St, format => Format}};
wrap(_, Error) -> Error.

mod(binary) -> riarc_trace_bin;
mod(text) -> riarc_trace_text;
mod(dbg) -> riarc_trace_dbg.

%% @doc The next event; at the end, what the reader learnt about the file (it is closed
%% then). A truncated binary file ends at its last whole record with `truncated => Pos'.
-spec read(reader()) -> {ok, riarc_event:event(), reader()} | {eof, info()} | {error, term()}.
read(R = #{mod := Mod, st := St}) ->
    case Mod:read(St) of
        {ok, Ev, St1} -> {ok, Ev, R#{st := St1}};
        {eof, Info} -> {eof, Info};
        {error, _} = Err -> _ = Mod:close(St), Err
    end.

%% @doc Closes a reader before its end.
-spec close(reader()) -> ok.
close(#{mod := Mod, st := St}) -> Mod:close(St).

%% @doc Folds over every event of a file, in file order.
-spec fold(fun((riarc_event:event(), Acc) -> Acc), Acc, source()) ->
    {ok, Acc, info()} | {error, term()}.
fold(Fun, Acc0, Src) ->
    case open(Src) of
        {ok, R} -> fold_loop(Fun, Acc0, R);
        Err -> Err
    end.

fold_loop(Fun, Acc, R) ->
    case read(R) of
        {ok, Ev, R1} -> fold_loop(Fun, Fun(Ev, Acc), R1);
        {eof, Info} -> {ok, Acc, Info};
        {error, _} = Err -> Err
    end.

%% @doc Every event of a file, in file order.
-spec read_all(source()) -> {ok, [riarc_event:event()], info()} | {error, term()}.
read_all(Src) ->
    case fold(fun(E, A) -> [E | A] end, [], Src) of
        {ok, Rev, Info} -> {ok, lists:reverse(Rev), Info};
        Err -> Err
    end.

%%% ---------------------------------------------------------------------------
%%% Writing
%%% ---------------------------------------------------------------------------

%% @doc Opens File for writing events, in the binary format (default) or as text.
%% `payloads => false' leaves message contents out (binary format only).
-spec open_writer(file:filename_all(), writer_opts()) -> {ok, writer()} | {error, term()}.
open_writer(File, Opts) ->
    Mod = case maps:get(format, Opts, binary) of
              binary -> riarc_trace_bin;
              text -> riarc_trace_text
          end,
    case Mod:open_writer(File, Opts) of
        {ok, St} -> {ok, #{mod => Mod, st => St}};
        Err -> Err
    end.

%% @doc Appends one event.
-spec write_event(writer(), riarc_event:event()) -> {ok, writer()} | {error, term()}.
write_event(W = #{mod := Mod, st := St}, Ev) ->
    case Mod:write_event(St, Ev) of
        {ok, St1} -> {ok, W#{st := St1}};
        Err -> Err
    end.

%% @doc Flushes and closes.
-spec close_writer(writer()) -> ok | {error, term()}.
close_writer(#{mod := Mod, st := St}) -> Mod:close_writer(St).

%% @doc Writes a whole list of events to File.
-spec write(file:filename_all(), [riarc_event:event()], writer_opts()) -> ok | {error, term()}.
write(File, Events, Opts) ->
    case open_writer(File, Opts) of
        {ok, W} -> write_all(Events, W);
        Err -> Err
    end.

write_all([], W) -> close_writer(W);
write_all([E | Es], W) ->
    case write_event(W, E) of
        {ok, W1} -> write_all(Es, W1);
        Err -> _ = close_writer(W), Err
    end.

%% @doc Closes a file being written; a delayed write error shows up here.
%%% ---------------------------------------------------------------------------
%%% Errors
%%% ---------------------------------------------------------------------------

%% @doc A sentence for a reader's or writer's error.
-spec format_error(term()) -> string().
format_error({open, File, Why}) ->
    flat("cannot open ~ts: ~ts", [File, file:format_error(Why)]);
format_error({write, File, Why}) ->
    flat("cannot write ~ts: ~ts", [File, file:format_error(Why)]);
format_error({read, File, Pos, Why}) ->
    flat("~ts: read error at ~s: ~ts", [File, pos(Pos), file:format_error(Why)]);
format_error({syntax, File, Line, Msg}) ->
    flat("~ts:~b: not an Erlang term: ~ts", [File, Line, Msg]);
format_error({not_an_event, File, Pos, Term}) ->
    flat("~ts: ~s: ~0tP is not a riarc event ({init,C,P,MFA}, {spawn,P,C,MFA}, "
         "{exit,P,Reason}, {send,From,To,Msg} or {recv,P,Msg})", [File, pos(Pos), Term, 12]);
format_error({bad_header, File, Why}) ->
    flat("~ts: not a riarc binary trace: ~s", [File, Why]);
format_error({bad_version, File, V}) ->
    flat("~ts: binary trace version ~b is not supported (this riarc reads version 1)",
         [File, V]);
format_error({bad_record, File, Pos, Why}) ->
    flat("~ts: malformed record at byte ~b: ~s", [File, Pos, Why]);
format_error({bad_term, File, Pos}) ->
    flat("~ts: malformed Erlang term at byte ~b", [File, Pos]);
format_error({unknown_process, File, Pos, Id}) ->
    flat("~ts: record at byte ~b names process #~b before its definition", [File, Pos, Id]);
format_error({no_wrap_files, Name, Tail}) ->
    flat("no dbg wrap files ~ts<N>~ts found", [Name, Tail]);
format_error(Other) ->
    flat("~0tp", [Other]).

pos({line, L}) -> flat("line ~b", [L]);
pos({byte, B}) -> flat("byte ~b", [B]);
pos(Other) -> flat("~0tp", [Other]).

name(File) -> unicode:characters_to_list(File).

flat(Fmt, Args) -> lists:flatten(io_lib:format(Fmt, Args)).
