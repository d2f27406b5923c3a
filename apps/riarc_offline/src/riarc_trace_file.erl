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
%%
%% Reading is bounded whatever the file holds (see riarc_trace_reader and
%% docs/offline.md): a record, a term's text and a compressed term's expansion are each
%% at most `max_record_bytes' (16 MiB by default), and no reader creates atoms. Errors
%% are `{error, {riarc_trace_file, Reason}}'.
%% ```
%% 1> file:write_file("/tmp/t.txt", "{init, p, x, {m, f, []}}.\n{exit, p, normal}.\n").
%% 2> riarc_trace_file:read_all("/tmp/t.txt").
%% {ok,[{init,p,x,{m,f,[]}},{exit,p,normal}],#{format => text,...}}
%% 3> riarc_trace_file:write("/tmp/t.bin", element(2, v(2)), #{format => binary}).
%% ok
%% 4> riarc_trace_file:read_all("/tmp/t.bin").
%% {ok,[{init,p,x,{m,f,[]}},{exit,p,normal}],#{format => binary,truncated => false,...}}
%% '''
-module(riarc_trace_file).

-export([open/1, open/2, read/1, close/1, position/1, read_all/1, read_all/2, fold/3, fold/4,
         fold_at/4]).
-export([open_writer/2, write_event/2, close_writer/1, write/3]).
-export([format_error/1]).
-export_type([reader/0, writer/0, source/0, info/0, writer_opts/0, opts/0, error/0,
              error_reason/0]).

-type source() :: file:filename_all() | {dbg_wrap, file:filename_all(), string()}.
-type format() :: binary | text | dbg.
-opaque reader() :: #{mod := module(), st := term(), format := format()}.
-opaque writer() :: #{mod := module(), st := term()}.
%% What a reader learnt about the file by the time it reached its end.
-type info() :: #{format := format(), file := string(), events := non_neg_integer(),
                  atom() => term()}.
-type writer_opts() :: #{format => binary | text, payloads => boolean(),
                         node => node(), start_us => integer()}.
%% The reading limits (riarc_trace_reader): `max_record_bytes'.
-type opts() :: riarc_trace_reader:opts().
-type error_reason() :: riarc_trace_reader:error_reason().
%% Every error of this module: the reason tagged with the module that formats it.
-type error() :: {riarc_trace_file, error_reason()}.

%% How much of the start of a file decides that it is text.
-define(SNIFF, 4096).

%%% ---------------------------------------------------------------------------
%%% Reading
%%% ---------------------------------------------------------------------------

%% @doc Opens a trace file for reading with the default limits.
-spec open(source()) -> {ok, reader()} | {error, error()}.
open(Src) -> open(Src, #{}).

%% @doc Opens a trace file for reading, recognising its format.
-spec open(source(), opts()) -> {ok, reader()} | {error, error()}.
open(Src = {dbg_wrap, _, _}, Opts) ->
    wrap(dbg, riarc_trace_dbg:open(Src, Opts));
open(File, Opts) ->
    %% A record of riarc's own (a cut's look finding: `flags_removed', ...) names atoms of
    %% riarc_event's, which the readers decode only if they exist (binary_to_term's
    %% safe): a VM that never loaded riarc_event read such a file as bad.
    {module, riarc_event} = code:ensure_loaded(riarc_event),
    case file:open(File, [read, raw, binary]) of
        {ok, Fd} ->
            Head = file:pread(Fd, 0, ?SNIFF),
            ok = file:close(Fd),
            case detect(Head) of
                unknown ->
                    {error, {?MODULE, {not_a_trace_file, name(File),
                                       "its first bytes are neither a riarc binary header "
                                       "(RIARCTRC), a dbg trace record nor UTF-8 text"}}};
                Format -> open_as(Format, File, Opts)
            end;
        {error, Why} -> {error, {?MODULE, {open, name(File), Why}}}
    end.

detect({ok, <<"RIARCTRC", _/binary>>}) -> binary;
detect({ok, <<"RIARCTRC"/utf8>>}) -> binary;
detect({ok, <<0, _:32, 131, _/binary>>}) -> dbg;
%% A dbg file may open with a drop record, then a trace message or its end.
detect({ok, <<1, _:32>>}) -> dbg;
detect({ok, <<1, _:32, 0, _:32, 131, _/binary>>}) -> dbg;
detect({ok, <<1, _:32, 1, _:32, _/binary>>}) -> dbg;
detect({ok, Head}) ->
    case text(Head) of
        true -> text;
        false -> unknown
    end;
detect(eof) -> text;
detect(_) -> unknown.

%% UTF-8 (a character cut by the end of the sample allowed) without control characters
%% other than white space: random bytes are not taken for a text trace.
text(Head) ->
    case unicode:characters_to_list(Head, utf8) of
        L when is_list(L) -> no_controls(L);
        {incomplete, L, _} -> no_controls(L);
        {error, _, _} -> false
    end.

no_controls(L) ->
    lists:all(fun(C) -> C >= 32 orelse C =:= $\t orelse C =:= $\n orelse C =:= $\r
                            orelse C =:= $\f orelse C =:= $\v end, L).

open_as(binary, File, Opts) -> wrap(binary, riarc_trace_bin:open(File, Opts));
open_as(dbg, File, Opts) -> wrap(dbg, riarc_trace_dbg:open(File, Opts));
open_as(text, File, Opts) -> wrap(text, riarc_trace_text:open(File, Opts)).

wrap(Format, {ok, St}) -> {ok, #{mod => mod(Format), st => St, format => Format}};
wrap(_, {error, Reason}) -> {error, {?MODULE, Reason}}.

mod(binary) -> riarc_trace_bin;
mod(text) -> riarc_trace_text;
mod(dbg) -> riarc_trace_dbg.

%% @doc The next event; at the end, what the reader learnt about the file (it is closed
%% then). A truncated binary file ends at its last whole record with `truncated => Pos'.
-spec read(reader()) -> {ok, riarc_event:traced(), reader()} | {eof, info()} | {error, error()}.
read(R = #{mod := Mod, st := St}) ->
    case Mod:read(St) of
        {ok, Ev, St1} -> {ok, Ev, R#{st := St1}};
        {eof, Info} -> {eof, Info};
        {error, Reason} -> _ = Mod:close(St), {error, {?MODULE, Reason}}
    end.

%% @doc Where the last event read starts: its file and its line (text) or byte offset
%% (binary, dbg).
-spec position(reader()) -> {string(), riarc_trace_reader:pos()}.
position(#{mod := Mod, st := St}) -> Mod:position(St).

%% @doc Closes a reader before its end.
-spec close(reader()) -> ok.
close(#{mod := Mod, st := St}) -> Mod:close(St).

%% @doc Folds over every event of a file, in file order, with the default limits.
-spec fold(fun((riarc_event:traced(), Acc) -> Acc), Acc, source()) ->
    {ok, Acc, info()} | {error, error()}.
fold(Fun, Acc0, Src) -> fold(Fun, Acc0, Src, #{}).

%% @doc Folds over every event of a file, in file order.
-spec fold(fun((riarc_event:traced(), Acc) -> Acc), Acc, source(), opts()) ->
    {ok, Acc, info()} | {error, error()}.
fold(Fun, Acc0, Src, Opts) ->
    fold_at(fun(Ev, _At, Acc) -> {ok, Fun(Ev, Acc)} end, Acc0, Src, Opts).

%% @doc Folds over every event of a file with its position ({@link position/1}), in file
%% order, until Fun says `{error, E}': the reader is closed and that is the result.
-spec fold_at(fun((riarc_event:traced(), {string(), riarc_trace_reader:pos()}, Acc) ->
                      {ok, Acc} | {error, E}), Acc, source(), opts()) ->
    {ok, Acc, info()} | {error, error() | E}.
fold_at(Fun, Acc0, Src, Opts) ->
    case open(Src, Opts) of
        {ok, R} -> fold_at_loop(Fun, Acc0, R);
        Err -> Err
    end.

fold_at_loop(Fun, Acc, R) ->
    case read(R) of
        {ok, Ev, R1} ->
            case Fun(Ev, position(R1), Acc) of
                {ok, Acc1} -> fold_at_loop(Fun, Acc1, R1);
                {error, _} = Err -> ok = close(R1), Err
            end;
        {eof, Info} -> {ok, Acc, Info};
        {error, _} = Err -> Err
    end.

%% @doc Every event of a file, in file order, with the default limits.
-spec read_all(source()) -> {ok, [riarc_event:traced()], info()} | {error, error()}.
read_all(Src) -> read_all(Src, #{}).

%% @doc Every event of a file, in file order.
-spec read_all(source(), opts()) -> {ok, [riarc_event:traced()], info()} | {error, error()}.
read_all(Src, Opts) ->
    case fold(fun(E, A) -> [E | A] end, [], Src, Opts) of
        {ok, Rev, Info} -> {ok, lists:reverse(Rev), Info};
        Err -> Err
    end.

%%% ---------------------------------------------------------------------------
%%% Writing
%%% ---------------------------------------------------------------------------

%% @doc Opens File for writing events, in the binary format (default) or as text.
%% `payloads => false' leaves message contents out (binary format only).
-spec open_writer(file:filename_all(), writer_opts()) -> {ok, writer()} | {error, error()}.
open_writer(File, Opts) ->
    Mod = case maps:get(format, Opts, binary) of
              binary -> riarc_trace_bin;
              text -> riarc_trace_text
          end,
    case Mod:open_writer(File, Opts) of
        {ok, St} -> {ok, #{mod => Mod, st => St}};
        {error, Reason} -> {error, {?MODULE, Reason}}
    end.

%% @doc Appends one event.
-spec write_event(writer(), riarc_event:traced()) -> {ok, writer()} | {error, error()}.
write_event(W = #{mod := Mod, st := St}, Ev) ->
    case Mod:write_event(St, Ev) of
        {ok, St1} -> {ok, W#{st := St1}};
        {error, Reason} -> {error, {?MODULE, Reason}}
    end.

%% @doc Flushes and closes.
-spec close_writer(writer()) -> ok | {error, error()}.
close_writer(#{mod := Mod, st := St}) ->
    case Mod:close_writer(St) of
        ok -> ok;
        {error, Reason} -> {error, {?MODULE, Reason}}
    end.

%% @doc Writes a whole list of events to File.
-spec write(file:filename_all(), [riarc_event:traced()], writer_opts()) -> ok | {error, error()}.
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

%%% ---------------------------------------------------------------------------
%%% Errors
%%% ---------------------------------------------------------------------------

%% @doc A sentence for a reader's or writer's error, tagged or not.
-spec format_error(error() | error_reason()) -> string().
format_error({?MODULE, Reason}) -> riarc_trace_reader:format_error(Reason);
format_error(Reason) -> riarc_trace_reader:format_error(Reason).

name(File) -> unicode:characters_to_list(File).
