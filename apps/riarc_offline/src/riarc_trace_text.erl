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
%% names as written. `%' comments are allowed. The text format is meant for traces
%% people write (the scanner makes atoms of the names it reads): traces from elsewhere
%% belong in the binary format, whose reader never makes atoms.
%%
%% Written traces name pids as atoms (`'<0.84.0>'') and turn the pids, ports,
%% references and funs inside payloads into strings, so that what is written is read
%% back.
%% ```
%% 1> {ok, W} = riarc_trace_text:open_writer("t.txt", #{}).
%% 2> {ok, W1} = riarc_trace_text:write_event(W, {exit, self(), normal}).
%% 3> riarc_trace_text:close_writer(W1), file:consult("t.txt").
%% {ok,[{exit,'<0.84.0>',normal}]}
%% '''
-module(riarc_trace_text).
-behaviour(riarc_trace_reader).

-export([open/1, read/1, close/1, open_writer/2, write_event/2, close_writer/1]).
-export([readable/1]).

-record(r, {fd :: file:io_device(), file :: string(), line = 1 :: pos_integer(),
            events = 0 :: non_neg_integer()}).
-record(w, {fd :: file:io_device(), file :: string()}).

%% @doc Opens a text trace.
-spec open(file:filename_all()) -> {ok, #r{}} | {error, term()}.
open(File) ->
    Name = unicode:characters_to_list(File),
    case file:open(File, [read, read_ahead, {encoding, utf8}]) of
        {ok, Fd} -> {ok, #r{fd = Fd, file = Name}};
        {error, Why} -> {error, {open, Name, Why}}
    end.

%% @doc The next event, or the end.
-spec read(#r{}) -> {ok, riarc_event:event(), #r{}} | {eof, map()} | {error, term()}.
read(R = #r{fd = Fd, file = File, line = Line}) ->
    %% Scanned, then parsed, so that an error names the line the term starts on.
    case io:scan_erl_form(Fd, '', Line) of
        {ok, Tokens, End} -> term(Tokens, R#r{line = End});
        {eof, _} ->
            ok = close(R),
            {eof, #{format => text, file => File, events => R#r.events, truncated => false}};
        {error, {Loc, Mod, Desc}, _} -> syntax(File, Loc, Mod, Desc);
        {error, Why} -> {error, {read, File, {line, Line}, Why}}
    end.

term(Tokens = [First | _], R = #r{file = File}) ->
    case erl_parse:parse_term(Tokens) of
        {ok, Term} ->
            case valid(Term) of
                true -> {ok, Term, R#r{events = R#r.events + 1}};
                false -> {error, {not_an_event, File, {line, erl_scan:line(First)}, Term}}
            end;
        {error, {Loc, Mod, Desc}} -> syntax(File, Loc, Mod, Desc)
    end.

syntax(File, Loc, Mod, Desc) ->
    {error, {syntax, File, line_of(Loc), lists:flatten(Mod:format_error(Desc))}}.

line_of({L, _Col}) -> L;
line_of(L) -> L.

%% The whole event shape, MFA included: anything else is rejected with its line.
valid(Ev = {K, _, _, MFA}) when K =:= init; K =:= spawn -> riarc_event:is_event(Ev) andalso mfa(MFA);
valid(Ev) -> riarc_event:is_event(Ev).

mfa(undefined) -> true;
mfa({M, F, A}) -> is_atom(M) andalso is_atom(F) andalso is_list(A);
mfa(_) -> false.

%% @doc Closes the reader.
-spec close(#r{}) -> ok.
close(#r{fd = Fd}) -> _ = file:close(Fd), ok.

%% @doc Opens a text trace for writing.
-spec open_writer(file:filename_all(), map()) -> {ok, #w{}} | {error, term()}.
open_writer(File, _Opts) ->
    Name = unicode:characters_to_list(File),
    case file:open(File, [write, delayed_write, {encoding, utf8}]) of
        {ok, Fd} -> {ok, #w{fd = Fd, file = Name}};
        {error, Why} -> {error, {write, Name, Why}}
    end.

%% @doc Appends one event as a line.
-spec write_event(#w{}, riarc_event:event()) -> {ok, #w{}} | {error, term()}.
write_event(W = #w{fd = Fd, file = File}, Ev) ->
    %% io:put_chars reports a failing device by raising, not by returning.
    try io:put_chars(Fd, io_lib:format("~0tp.~n", [readable(Ev)])) of
        ok -> {ok, W}
    catch error:Why -> {error, {write, File, Why}}
    end.

%% @doc Closes the writer.
-spec close_writer(#w{}) -> ok | {error, term()}.
close_writer(#w{fd = Fd, file = File}) ->
    riarc_trace_reader:close_file(Fd, File).

%% @doc The term as it can be written and read back: pids become atoms, other
%% unreadable terms become strings.
-spec readable(term()) -> term().
readable(P) when is_pid(P) -> list_to_atom(pid_to_list(P));
readable(T) when is_port(T); is_reference(T); is_function(T) ->
    lists:flatten(io_lib:format("~p", [T]));
readable(L) when is_list(L) -> readable_list(L);
readable(T) when is_tuple(T) -> list_to_tuple([readable(E) || E <- tuple_to_list(T)]);
readable(M) when is_map(M) -> maps:from_list([{readable(K), readable(V)} || {K, V} <- maps:to_list(M)]);
readable(T) -> T.

%% Improper lists too.
readable_list([H | T]) -> [readable(H) | readable_list(T)];
readable_list([]) -> [];
readable_list(T) -> readable(T).
