%% @doc Reader for the files OTP's `dbg:trace_port(file, ...)' writes, single files and
%% wrap sets. Each record is `<<0, Size:32, TraceMsgExt:Size/binary>>' (a trace message
%% in the external term format) or `<<1, Count:32>>' (the port dropped Count messages).
%% Trace messages become riarc events as the online backend decodes them
%% ({@link riarc_backend_evm:event/2}); the ones riarc does not use (links, calls,
%% scheduling, ...) are skipped. Reading is bounded as for the binary format: a record
%% over `max_record_bytes' (16 MiB by default), or a compressed term announcing more, is
%% refused with its position before it is read or inflated; terms are decoded by
%% {@link riarc_etf:decode/2}, so that atoms this node does not know (a trace recorded
%% elsewhere) read as `{riarc_unknown_atom, Name}' and pids of unknown nodes as
%% `{riarc_pid, Node, Id, Serial}', counted as `unknown_atoms' in the info at the end.
%%
%% A wrap set `dbg:trace_port(file, {Name, wrap, Tail, Size, Count})' is read as
%% `{dbg_wrap, Name, Tail}': the files Name ++ N ++ Tail, oldest first (the ring is cut
%% at the gap in the sequence numbers, as dbg's own reader does).
%% ```
%% 1> {ok, _} = dbg:tracer(port, dbg:trace_port(file, "/tmp/riarc_pqr.dbg")).
%% 2> Pid = spawn(fun() -> receive go -> riarc_demo_pqr:p() end end).
%% 3> {ok, _} = dbg:p(Pid, [procs, send, 'receive', set_on_spawn]).
%% 4> Ref = monitor(process, Pid), Pid ! go, receive {'DOWN', Ref, _, _, _} -> ok end.
%% 5> dbg:stop().
%% 6> {ok, Events, Info} = riarc_trace_file:read_all("/tmp/riarc_pqr.dbg").
%% 7> [E || E = {spawn, _, _, _} <- Events].
%% [{spawn,<0.80.0>,<0.81.0>,{riarc_demo_pqr,q,[]}}, ...]
%% 8> maps:with([format, dropped], Info).
%% #{dropped => 0,format => dbg}
%% '''
-module(riarc_trace_dbg).
-behaviour(riarc_trace_reader).

-export([open/2, read/1, close/1, position/1, wrap_files/2, vm_event/2, format_error/1]).
-export_type([error_reason/0]).

-type error_reason() :: riarc_trace_reader:error_reason().

-record(reader, {fd :: file:fd() | undefined, file :: string(), pos = 0 :: non_neg_integer(),
            max :: pos_integer(), unknown = 0 :: non_neg_integer(),
            rest = [] :: [string()],            % wrap files still to read
            last = 0 :: non_neg_integer(),      % where the last event's record starts
            events = 0 :: non_neg_integer(), dropped = 0 :: non_neg_integer(),
            skipped = 0 :: non_neg_integer(), files = 1 :: pos_integer()}).

%% @doc Opens a dbg trace file or a wrap set.
-spec open(file:filename_all() | {dbg_wrap, file:filename_all(), string()},
           riarc_trace_reader:opts()) -> {ok, #reader{}} | {error, error_reason()}.
open({dbg_wrap, Name, Tail}, Opts) ->
    case wrap_files(Name, Tail) of
        [] -> {error, {no_wrap_files, unicode:characters_to_list(Name), Tail}};
        [F | Fs] ->
            case open(F, Opts) of
                {ok, R} -> {ok, R#reader{rest = Fs, files = 1 + length(Fs)}};
                Err -> Err
            end
    end;
open(File, Opts) ->
    Name = unicode:characters_to_list(File),
    case file:open(File, [read, raw, binary, {read_ahead, 65536}]) of
        {ok, Fd} -> {ok, #reader{fd = Fd, file = Name, max = riarc_trace_reader:max_record_bytes(Opts)}};
        {error, Why} -> {error, {open, Name, Why}}
    end.

%% @doc The files of a wrap set, oldest first.
-spec wrap_files(file:filename_all(), string()) -> [string()].
wrap_files(Name0, Tail) ->
    Name = unicode:characters_to_list(Name0),
    Dir = filename:dirname(Name),
    Base = filename:basename(Name),
    Found = case file:list_dir(Dir) of
                {ok, Fs} -> lists:sort([{N, filename:join(Dir, F)} || F <- Fs,
                                                                      N <- [seq(F, Base, Tail)],
                                                                      N =/= none]);
                {error, _} -> []
            end,
    [F || {_, F} <- ring_order(Found)].

seq(File, Base, Tail) ->
    case lists:prefix(Base, File) andalso lists:suffix(Tail, File) of
        true ->
            Mid = lists:sublist(File, length(Base) + 1,
                                length(File) - length(Base) - length(Tail)),
            case Mid =/= [] andalso lists:all(fun(C) -> C >= $0 andalso C =< $9 end, Mid) of
                true -> list_to_integer(Mid);
                false -> none
            end;
        false -> none
    end.

%% dbg writes files 0, 1, ... and, once it has Count of them, starts again at 0,
%% deleting the next one: the oldest file is the one just after the gap.
ring_order(Files) ->
    case gap(Files) of
        none -> Files;
        {Before, After} -> After ++ Before
    end.

gap([{A, _} = F, {B, _} = G | Rest]) when B =/= A + 1 -> {[F], [G | Rest]};
gap([F | Rest]) ->
    case gap(Rest) of
        none -> none;
        {Before, After} -> {[F | Before], After}
    end;
gap([]) -> none.

%% @doc The next event.
-spec read(#reader{}) -> {ok, riarc_event:traced(), #reader{}} | {eof, map()} | {error, error_reason()}.
read(R = #reader{fd = Fd, pos = Pos, file = File, max = Max}) ->
    case file:read(Fd, 5) of
        eof -> next_file(R);
        {ok, <<0, Size:32>>} when Size > Max ->
            {error, {too_big, File, {byte, Pos}, Size, Max}};
        {ok, <<0, Size:32>>} ->
            case file:read(Fd, Size) of
                {ok, Bin} when byte_size(Bin) =:= Size -> message(Bin, R#reader{pos = Pos + 5 + Size}, Pos);
                {ok, _} -> finish(R, Pos);
                eof -> finish(R, Pos);
                {error, Why} -> {error, {read, File, {byte, Pos}, Why}}
            end;
        {ok, <<1, N:32>>} -> read(R#reader{pos = Pos + 5, dropped = R#reader.dropped + N});
        {ok, <<Tag, _:32>>} ->
            {error, {bad_record, File, Pos, lists:flatten(io_lib:format("unknown tag ~b", [Tag]))}};
        {ok, _} -> finish(R, Pos);
        {error, Why} -> {error, {read, File, {byte, Pos}, Why}}
    end.

message(Bin, R, At) ->
    case riarc_etf:decode(Bin, R#reader.max) of
        {ok, Msg, N} ->
            R1 = R#reader{unknown = R#reader.unknown + N},
            case event(Msg) of
                {ok, Ev} -> {ok, Ev, R1#reader{events = R1#reader.events + 1, last = At}};
                skip -> read(R1#reader{skipped = R1#reader.skipped + 1});
                ambiguous_timeout -> {error, {ambiguous_timeout, R#reader.file, {byte, At}}};
                no -> {error, {bad_record, R#reader.file, At, "not a trace message"}}
            end;
        {error, {compressed_too_big, Size}} ->
            {error, {compressed_too_big, R#reader.file, {byte, At}, Size, R#reader.max}};
        {error, _} -> {error, {bad_term, R#reader.file, At}}
    end.

%% Trace messages with a timestamp carry it last: drop it, and decode as the online
%% backend does, so that offline and online runs see the same events.
event(Msg) when is_tuple(Msg), element(1, Msg) =:= trace_ts, tuple_size(Msg) >= 4 ->
    L = tuple_to_list(Msg),
    event(list_to_tuple([trace | lists:droplast(tl(L))]));
event(Msg) when is_tuple(Msg), element(1, Msg) =:= trace, tuple_size(Msg) >= 3 ->
    vm_event(Msg, false);
event(_) -> no.

%% @doc A VM trace message as the riarc event it stands for, as the online backend
%% decodes it, or `skip' for one riarc does not use. Marked: whether riarc's receive
%% pattern (riarc_route:receive_pattern/1) was set while tracing, as the recorder sets it.
%% With it, a receive timeout comes marked (`{trace, P, 'receive', timeout,
%% clock_service}', the event `{timeout, P}'), a timer's message too (a receive), and an
%% unmarked `timeout' is a message. Without it (a dbg trace), a receive timeout and the
%% message `timeout' are the same trace message: `ambiguous_timeout'.
%% Of the calls riarc holds patterns on, a timer set to send the atom `timeout' is kept
%% (riarc_event's timer_event(): its message reads as a timeout, riarc_analysis_core),
%% and so is a call that may take away what the trace shows (cut_event(): the check makes
%% the view cut, as a live run does); starts on other nodes are a live run's alone.
-spec vm_event(tuple(), boolean()) ->
    {ok, riarc_event:traced()} | skip | ambiguous_timeout.
vm_event({trace, _P, 'receive', timeout}, false) ->
    ambiguous_timeout;
vm_event(Msg, _Marked) ->
    case riarc_backend_evm:event(riarc_backend_evm:config([]), Msg) of
        {ok, Ev = {timer_timeout, _, _}} -> {ok, Ev};
        {ok, Ev = {cut, _, _}} -> {ok, Ev};
        {ok, Ev} when is_tuple(Ev) ->
            case riarc_event:is_event(Ev) of
                true -> {ok, Ev};
                false -> skip
            end;
        _ -> skip
    end.

next_file(R = #reader{rest = [F | Fs]}) ->
    ok = close(R),
    case open(F, #{max_record_bytes => R#reader.max}) of
        {ok, R1} -> read(R1#reader{rest = Fs, events = R#reader.events, dropped = R#reader.dropped,
                              skipped = R#reader.skipped, files = R#reader.files,
                              unknown = R#reader.unknown});
        Err -> Err
    end;
next_file(R) ->
    finish(R, false).

%% A node that dies while tracing leaves its last record cut short: the trace ends at
%% the last whole record, and where it was cut is reported.
finish(R, Truncated) ->
    ok = close(R),
    {eof, #{format => dbg, file => R#reader.file, events => R#reader.events, truncated => Truncated,
            dropped => R#reader.dropped, skipped => R#reader.skipped, files => R#reader.files,
            unknown_atoms => R#reader.unknown}}.


%% @doc The file (of a wrap set: the one being read) and the byte offset of the last
%% event's record.
-spec position(#reader{}) -> {string(), {byte, non_neg_integer()}}.
position(#reader{file = File, last = At}) -> {File, {byte, At}}.

%% @doc Closes the reader.
-spec close(#reader{}) -> ok.
close(#reader{fd = undefined}) -> ok;
close(#reader{fd = Fd}) -> _ = file:close(Fd), ok.

%% @doc A sentence for an error of this reader.
-spec format_error(error_reason()) -> string().
format_error(Reason) -> riarc_trace_reader:format_error(Reason).
