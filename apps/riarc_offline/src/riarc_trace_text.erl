%% @doc The text trace format: one event per line, each an Erlang term ended by a full
%% stop, so the file reads with `file:consult/1' too:
%% ```
%% {init, p, undefined, {demo, p, []}}.
%% {spawn, p, q, {demo, q, []}}.
%% {init, q, p, {demo, q, []}}.
%% {send, p, q, req}.
%% {recv, q, req}.
%% {exit, q, normal}.
%% {exit, p, normal}.
%% '''
%% A process is named by any term, usually an atom or an integer; monitors receive the
%% names as written. `%' comments are allowed.
%%
%% A receive timeout is `{timeout, P}', as online. The writer opens the file with the line
%% `%% riarc trace, text format 2' ({@link riarc_trace_reader:text_version_line/0}); in a
%% file that has it, `{recv, P, timeout}' is the message `timeout'. In a file without it
%% (a recording made before timeouts had events of their own, or one written by hand)
%% `{recv, P, timeout}' may be a timeout the old recorder wrote: it is refused with its
%% line (`ambiguous_timeout'), never read as one or the other.
%%
%% Reading creates no atom: terms are parsed by {@link riarc_term_text}, where a name
%% that is not an atom on this node reads as `{riarc_unknown_atom, Name}' (counted as
%% `unknown_atoms'; an MFA naming one keeps it so, and a property's `_' still matches
%% it). The text of one term is bounded by `max_record_bytes' (16 MiB by default), so a
%% file without line breaks cannot make the reader hold it whole.
%%
%% Pids, references and ports are written tagged, and read back as the same kind of
%% term, so that a monitor comparing pids gives the same verdict on a text recording as
%% on a binary one:
%% <ul>
%% <li>`{'$pid', "<0.83.0>"}', `{'$ref', "#Ref<0.1.2.3>"}', `{'$port', "#Port<0.5>"}':
%%     a pid, reference or port of the recording node, read as the one of that text on
%%     the reading node (as the binary format reads its pids);</li>
%% <li>`{'$ext', Bytes}': a pid, reference or port of another node, or a fun, in the
%%     external term format; read as the term itself when the reading node knows its
%%     atoms, else as the stand-in {@link riarc_etf} gives (`{riarc_pid, Node, Id,
%%     Serial}', ...);</li>
%% <li>`{'$quote', T}': a tuple T of the run whose first element is one of these tags,
%%     read back as T.</li>
%% </ul>
%% ```
%% 1> {ok, W} = riarc_trace_text:open_writer("/tmp/t.txt", #{}).
%% 2> {ok, W1} = riarc_trace_text:write_event(W, {exit, self(), normal}).
%% 3> riarc_trace_text:close_writer(W1), file:read_file("/tmp/t.txt").
%% {ok,<<"%% riarc trace, text format 2\n{exit,{'$pid',\"<0.84.0>\"},normal}.\n">>}
%% 4> riarc_trace_file:read_all("/tmp/t.txt").
%% {ok,[{exit,<0.84.0>,normal}],#{format => text,...}}
%% '''
-module(riarc_trace_text).
-behaviour(riarc_trace_reader).

-export([open/2, read/1, close/1, position/1, open_writer/2, write_event/2, close_writer/1]).
-export([readable/1, unreadable/1, format_error/1]).
-export_type([error_reason/0]).

-type error_reason() :: riarc_trace_reader:error_reason().

-define(CHUNK, 65536).
-define(TAGS, ['$pid', '$ref', '$port', '$ext', '$quote']).

-record(reader, {fd :: file:fd(), file :: string(), line = 1 :: pos_integer(),
            buf = <<>> :: binary(), final = false :: boolean(), max :: pos_integer(),
            events = 0 :: non_neg_integer(), unknown = 0 :: non_neg_integer(),
            version = 1 :: 1 | 2, last = 1 :: pos_integer()}).
-record(writer, {fd :: file:io_device(), file :: string()}).

%% @doc Opens a text trace.
-spec open(file:filename_all(), riarc_trace_reader:opts()) -> {ok, #reader{}} | {error, error_reason()}.
open(File, Opts) ->
    Name = unicode:characters_to_list(File),
    %% Raw bytes, read in chunks: the reader decodes UTF-8 itself, so that a file that is
    %% not text gives an error naming its line rather than a crash in the I/O server.
    case file:open(File, [read, raw, binary]) of
        {ok, Fd} ->
            R = #reader{fd = Fd, file = Name, max = riarc_trace_reader:max_record_bytes(Opts)},
            Line = list_to_binary(riarc_trace_reader:text_version_line()),
            case file:read(Fd, byte_size(Line) + 1) of
                {ok, Head} -> {ok, R#reader{buf = Head, version = version(Head, Line)}};
                eof -> {ok, R#reader{final = true}};
                {error, Why} -> _ = file:close(Fd), {error, {read, Name, {line, 1}, Why}}
            end;
        {error, Why} -> {error, {open, Name, Why}}
    end.

version(Head, Line) ->
    case Head of
        <<Line:(byte_size(Line))/binary, C>> when C =:= $\n; C =:= $\r -> 2;
        _ -> 1
    end.

%% @doc The next event, or the end.
-spec read(#reader{}) -> {ok, riarc_event:traced(), #reader{}} | {eof, map()} | {error, error_reason()}.
read(R = #reader{buf = Buf, line = Line, final = Final, file = File}) ->
    case riarc_term_text:next(Buf, Line, Final) of
        {ok, Term, Rest, Start, End, N} ->
            R1 = R#reader{buf = Rest, line = End, unknown = R#reader.unknown + N},
            event(unreadable(Term), Start, R1);
        {eof, _} ->
            ok = close(R),
            {eof, #{format => text, file => File, events => R#reader.events, truncated => false,
                    unknown_atoms => R#reader.unknown}};
        more -> fill(R);
        {error, {L, Msg}} -> {error, {syntax, File, L, Msg}}
    end.

%% The term so far is cut by the end of the chunk: read on, at least doubling what is
%% held so that a long term is parsed a logarithmic number of times, up to the bound.
fill(R = #reader{fd = Fd, buf = Buf, max = Max, file = File, line = Line}) ->
    case byte_size(Buf) > Max of
        true -> {error, {too_big, File, {line, first_line(Buf, Line)}, Max, Max}};
        false ->
            case file:read(Fd, max(?CHUNK, byte_size(Buf))) of
                {ok, More} -> read(R#reader{buf = <<Buf/binary, More/binary>>});
                eof -> read(R#reader{final = true});
                {error, Why} -> {error, {read, File, {line, Line}, Why}}
            end
    end.

%% The line the held text's first term starts on (past blank lines and comments).
first_line(<<$\n, R/binary>>, L) -> first_line(R, L + 1);
first_line(<<C, R/binary>>, L) when C =:= $\s; C =:= $\t; C =:= $\r -> first_line(R, L);
first_line(<<$%, R/binary>>, L) ->
    case binary:match(R, <<"\n">>) of
        {At, 1} -> first_line(binary:part(R, At, byte_size(R) - At), L);
        nomatch -> L
    end;
first_line(_, L) -> L.

event({recv, _, timeout}, Start, #reader{file = File, version = 1}) ->
    {error, {ambiguous_timeout, File, {line, Start}}};
event(Term, Start, R = #reader{file = File}) ->
    case valid(Term) of
        {true, Ev, Unknown} ->
            {ok, Ev, R#reader{events = R#reader.events + 1, unknown = R#reader.unknown + Unknown,
                         last = Start}};
        false -> {error, {not_an_event, File, {line, Start}, Term}}
    end.

%% The whole event shape, MFA included: anything else is rejected with its line. An MFA
%% naming an atom unknown here keeps it as `{riarc_unknown_atom, Name}', as in the binary
%% format (its unknown atoms are counted already): a property's `_' still matches it.
valid({K, _C, _P, MFA} = Ev) when K =:= init; K =:= spawn ->
    case riarc_event:is_event(Ev) andalso mfa(MFA) of
        true -> {true, Ev, 0};
        false -> false
    end;
valid(Ev = {timer_timeout, _P, _Dest}) ->
    {true, Ev, 0};
valid(Ev = {cut, _P, Why}) ->
    riarc_event:is_cut(Why) andalso {true, Ev, 0};
valid(Ev) ->
    riarc_event:is_event(Ev) andalso {true, Ev, 0}.

mfa(undefined) -> true;
mfa({M, F, A}) when is_list(A) -> riarc_event:is_name(M) andalso riarc_event:is_name(F);
mfa(_) -> false.


%% @doc The file and the line the last event read starts on.
-spec position(#reader{}) -> {string(), {line, pos_integer()}}.
position(#reader{file = File, last = L}) -> {File, {line, L}}.

%% @doc Closes the reader.
-spec close(#reader{}) -> ok.
close(#reader{fd = Fd}) -> _ = file:close(Fd), ok.

%% @doc Opens a text trace for writing.
-spec open_writer(file:filename_all(), map()) -> {ok, #writer{}} | {error, error_reason()}.
open_writer(File, _Opts) ->
    Name = unicode:characters_to_list(File),
    case file:open(File, [write, delayed_write, {encoding, utf8}]) of
        {ok, Fd} ->
            try io:put_chars(Fd, [riarc_trace_reader:text_version_line(), $\n]) of
                ok -> {ok, #writer{fd = Fd, file = Name}}
            catch error:Why -> _ = file:close(Fd), {error, {write, Name, Why}}
            end;
        {error, Why} -> {error, {write, Name, Why}}
    end.

%% @doc Appends one event as a line.
-spec write_event(#writer{}, riarc_event:traced()) -> {ok, #writer{}} | {error, error_reason()}.
write_event(W = #writer{fd = Fd, file = File}, Ev) ->
    %% io:put_chars reports a failing device by raising, not by returning.
    try io:put_chars(Fd, io_lib:format("~0tp.~n", [readable(Ev)])) of
        ok -> {ok, W}
    catch error:Why -> {error, {write, File, Why}}
    end.

%% @doc Closes the writer.
-spec close_writer(#writer{}) -> ok | {error, error_reason()}.
close_writer(#writer{fd = Fd, file = File}) ->
    riarc_trace_reader:close_file(Fd, File).

%% @doc The term as it can be written as text and read back: pids, references and ports
%% tagged (see the module's doc), funs in the external format.
-spec readable(term()) -> term().
readable(P) when is_pid(P), node(P) =:= node() -> {'$pid', pid_to_list(P)};
readable(R) when is_reference(R), node(R) =:= node() -> {'$ref', ref_to_list(R)};
readable(P) when is_port(P), node(P) =:= node() -> {'$port', port_to_list(P)};
readable(T) when is_pid(T); is_reference(T); is_port(T); is_function(T) ->
    {'$ext', term_to_binary(T)};
readable(L) when is_list(L) -> readable_list(L);
readable(T) when is_tuple(T), tuple_size(T) > 0 ->
    Es = [readable(E) || E <- tuple_to_list(T)],
    case lists:member(element(1, T), ?TAGS) of
        true -> {'$quote', list_to_tuple([element(1, T) | tl(Es)])};
        false -> list_to_tuple(Es)
    end;
readable(M) when is_map(M) -> maps:from_list([{readable(K), readable(V)} || {K, V} <- maps:to_list(M)]);
readable(T) -> T.

%% Improper lists too.
readable_list([H | T]) -> [readable(H) | readable_list(T)];
readable_list([]) -> [];
readable_list(T) -> readable(T).

%% @doc The inverse of {@link readable/1}, for terms read from a text trace. A tagged
%% form whose text does not parse stays as it is.
-spec unreadable(term()) -> term().
unreadable({'$pid', S} = T) when is_list(S) -> from_text(fun erlang:list_to_pid/1, S, T);
unreadable({'$ref', S} = T) when is_list(S) -> from_text(fun erlang:list_to_ref/1, S, T);
unreadable({'$port', S} = T) when is_list(S) -> from_text(fun erlang:list_to_port/1, S, T);
unreadable({'$ext', B} = T) when is_binary(B) ->
    case riarc_etf:decode(B, byte_size(B)) of
        {ok, X, _} -> X;
        {error, _} -> T
    end;
unreadable({'$quote', Q}) when is_tuple(Q), tuple_size(Q) > 0 ->
    list_to_tuple([element(1, Q) | [unreadable(E) || E <- tl(tuple_to_list(Q))]]);
unreadable(T) when is_tuple(T) -> list_to_tuple([unreadable(E) || E <- tuple_to_list(T)]);
unreadable(L) when is_list(L) -> unreadable_list(L);
unreadable(M) when is_map(M) -> maps:from_list([{unreadable(K), unreadable(V)} || {K, V} <- maps:to_list(M)]);
unreadable(T) -> T.

unreadable_list([H | T]) -> [unreadable(H) | unreadable_list(T)];
unreadable_list([]) -> [];
unreadable_list(T) -> unreadable(T).

from_text(F, S, T) ->
    try F(S)
    catch error:badarg -> T
    end.

%% @doc A sentence for an error of this reader or writer.
-spec format_error(error_reason()) -> string().
format_error(Reason) -> riarc_trace_reader:format_error(Reason).
