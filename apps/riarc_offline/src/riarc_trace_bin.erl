%% @doc riarc's binary trace format, version 2: a header, then length-prefixed records
%% whose first byte is the event type, processes named by small integers defined in
%% PROC records (the uniform encoding of §3.1 of the DTrace/LTTng paper). The complete
%% specification is docs/trace-format.md; this module is its reference reader and writer.
%% It writes version 2 and reads versions 1 and 2. Version 1 had no TIMEOUT record: the
%% recorder wrote a receive timeout as a RECV of the atom `timeout', which the message
%% `timeout' also gives. So a version-1 RECV whose message is `timeout', or was left out
%% (payloads off), is refused with its byte offset (`ambiguous_timeout'): no reading of
%% it is sure to be the run's. Any other version-1 file reads as before.
%%
%% Decoding is bounded and makes no atom (a trace may come from another node, or from
%% anyone): a record longer than `max_record_bytes' (16 MiB by default) is refused before
%% it is read, and so is a compressed term announcing more; terms are decoded by
%% {@link riarc_etf:decode/2}, which turns atoms this node does not have into
%% `{riarc_unknown_atom, Name}'. Names of modules, functions and processes become atoms
%% only when the atom exists already (otherwise the name reads as
%% `{riarc_unknown_atom, Name}', in an MFA too). Every such replacement is counted
%% (`unknown_atoms' in the info at the end), as is every undecodable payload, which
%% reads as `{riarc_undecodable, Bytes}' (`undecodable').
%% ```
%% 1> riarc_trace_bin:encode_header(#{node => a@h, start_us => 0, payloads => true}).
%% <<"RIARCTRC",2,1,0,3,97,64,104,0,0,0,0,0,0,0,0>>
%% 2> riarc_trace_file:read_all("/tmp/run.rtrc").
%% {ok,[{init,<0.90.0>,<0.89.0>,{riarc_demo_pqr,p,[]}}, ...],
%%     #{format => binary, node => nonode@nohost, truncated => false, unknown_atoms => 0, ...}}
%% '''
-module(riarc_trace_bin).
-behaviour(riarc_trace_reader).

-export([open/2, read/1, close/1, position/1, open_writer/2, write_event/2, close_writer/1]).
-export([encode_header/1, format_error/1]).
-export_type([error_reason/0]).

-type error_reason() :: riarc_trace_reader:error_reason().

-define(MAGIC, "RIARCTRC").
%% Version 2 added TIMEOUT; version 1 files are still read (see header/2).
-define(VERSION, 2).
-define(PROC, 1).
-define(SPAWN, 2).
-define(INIT, 3).
-define(EXIT, 4).
-define(SEND, 5).
-define(RECV, 6).
-define(DROPPED, 7).
-define(TIMEOUT, 8).
%% A timer set to send the atom `timeout' (riarc_event's timer_event()): to the process
%% itself (0), or to another (1, with its name as a term). Added to version 2 after its
%% release: a reader from before rejects type 9 as reserved, never misreads it.
-define(TIMER, 9).
%% A call that may take away what the trace shows (riarc_event's cut_event()), with the
%% call as a term: 1 when it names the caller first (its own flags: the reader puts the
%% caller's process name there, so that a check on another node reads it as its own),
%% else 0. Added to version 2 after its release, as TIMER.
-define(CUT, 10).
-define(OMITTED, riarc_omitted).

-record(reader, {fd :: file:fd(), file :: string(), pos :: non_neg_integer(),
            max :: pos_integer(),
            procs = #{} :: #{non_neg_integer() => term()},
            header :: map(), version :: 1 | 2, last = 0 :: non_neg_integer(),
            events = 0 :: non_neg_integer(), dropped = 0 :: non_neg_integer(),
            undecodable = 0 :: non_neg_integer(), unknown = 0 :: non_neg_integer()}).
-record(writer, {fd :: file:fd(), file :: string(), payloads :: boolean(),
            ids = #{} :: #{term() => non_neg_integer()}}).

%%% ---------------------------------------------------------------------------
%%% Reader
%%% ---------------------------------------------------------------------------

%% @doc Opens a binary trace and reads its header.
-spec open(file:filename_all(), riarc_trace_reader:opts()) -> {ok, #reader{}} | {error, error_reason()}.
open(File, Opts) ->
    Name = unicode:characters_to_list(File),
    case file:open(File, [read, raw, binary, {read_ahead, 65536}]) of
        {ok, Fd} ->
            case header(Fd, Name) of
                {ok, H = #{version := V}, Pos} ->
                    {ok, #reader{fd = Fd, file = Name, pos = Pos, header = H, version = V,
                                        max = riarc_trace_reader:max_record_bytes(Opts)}};
                Err -> _ = file:close(Fd), Err
            end;
        {error, Why} -> {error, {open, Name, Why}}
    end.

header(Fd, File) ->
    case file:read(Fd, 12) of
        {ok, <<?MAGIC, V, Flags, NLen:16>>} when V =:= 1; V =:= ?VERSION ->
            case file:read(Fd, NLen + 8) of
                {ok, <<NodeB:NLen/binary, Start:64/signed>>} ->
                    {ok, #{node => existing_atom(NodeB), start_us => Start, version => V,
                           payloads => Flags band 1 =:= 1}, 12 + NLen + 8};
                _ -> {error, {bad_header, File, "the header is cut short"}}
            end;
        {ok, <<?MAGIC, V, _, _:16>>} -> {error, {bad_version, File, V}};
        {ok, <<?MAGIC, _/binary>>} -> {error, {bad_header, File, "the header is cut short"}};
        _ -> {error, {bad_header, File, "no RIARCTRC magic"}}
    end.

%% @doc The next event. A record cut short by the end of the file ends the trace; its
%% byte position is reported as `truncated'.
-spec read(#reader{}) -> {ok, riarc_event:traced(), #reader{}} | {eof, map()} | {error, error_reason()}.
read(R = #reader{fd = Fd, pos = Pos, file = File, max = Max}) ->
    case file:read(Fd, 4) of
        eof -> finish(R, false);
        {ok, <<0:32>>} -> {error, {bad_record, File, Pos, "record of length 0"}};
        {ok, <<Len:32>>} when Len > Max ->
            %% Refused before reading: a corrupt length must not make the reader
            %% allocate gigabytes.
            {error, {too_big, File, {byte, Pos}, Len, Max}};
        {ok, <<Len:32>>} ->
            case file:read(Fd, Len) of
                {ok, Body} when byte_size(Body) =:= Len ->
                    record(Body, R#reader{pos = Pos + 4 + Len}, Pos);
                {ok, _} -> finish(R, Pos);
                eof -> finish(R, Pos);
                {error, Why} -> {error, {read, File, {byte, Pos}, Why}}
            end;
        {ok, _Short} -> finish(R, Pos);
        {error, Why} -> {error, {read, File, {byte, Pos}, Why}}
    end.

finish(R = #reader{header = H}, Truncated) ->
    ok = close(R),
    {eof, H#{format => binary, file => R#reader.file, events => R#reader.events,
             truncated => Truncated, dropped => R#reader.dropped,
             undecodable => R#reader.undecodable, unknown_atoms => R#reader.unknown}}.

%% One record: a process definition is taken in and the next record read; an event is
%% returned. Any failure to decode names the record's position.
record(Body = <<Type, _/binary>>, R, At) ->
    try decode(Type, Body, R, At) of
        {proc, R1} -> read(R1);
        {dropped, N, R1} -> read(R1#reader{dropped = R1#reader.dropped + N});
        {event, Ev, R1} -> {ok, Ev, R1#reader{events = R1#reader.events + 1, last = At}};
        {skip, R1} -> read(R1)
    catch
        throw:{riarc_bad, Why} -> {error, {bad_record, R#reader.file, At, Why}};
        throw:{riarc_unknown, Id} -> {error, {unknown_process, R#reader.file, At, Id}};
        throw:riarc_ambiguous_timeout -> {error, {ambiguous_timeout, R#reader.file, {byte, At}}};
        throw:{riarc_too_big, Size} ->
            {error, {compressed_too_big, R#reader.file, {byte, At}, Size, R#reader.max}};
        error:_ -> {error, {bad_record, R#reader.file, At, "fields do not match the record type"}}
    end.

decode(?PROC, <<_, Id:32, Kind, Name/binary>>, R = #reader{procs = Ps}, _At) ->
    is_map_key(Id, Ps) andalso bad("process id defined twice"),
    {PName, R1} = proc_name(Kind, Name, R),
    {proc, R1#reader{procs = Ps#{Id => PName}}};
decode(?SPAWN, <<_, P:32, C:32, Rest/binary>>, R, _) ->
    {MFA, <<>>, R1} = mfa(Rest, R),
    {event, {spawn, sid(P, R), sid(C, R), MFA}, R1};
decode(?INIT, <<_, C:32, P:32, Rest/binary>>, R, _) ->
    {MFA, <<>>, R1} = mfa(Rest, R),
    {event, {init, sid(C, R), sid(P, R), MFA}, R1};
decode(?EXIT, <<_, P:32, Rest/binary>>, R, _) ->
    {Reason, R1} = term(Rest, R),
    {event, {exit, sid(P, R), Reason}, R1};
decode(?SEND, <<_, F:32, T:32, Rest/binary>>, R, _) ->
    {Msg, R1} = term(Rest, R),
    {event, {send, sid(F, R), sid(T, R), Msg}, R1};
decode(?RECV, <<_, P:32, Rest/binary>>, R, _) ->
    {Msg, R1} = term(Rest, R),
    _ = R#reader.version =:= 1 andalso (Msg =:= timeout orelse Msg =:= ?OMITTED)
        andalso throw(riarc_ambiguous_timeout),
    {event, {recv, sid(P, R), Msg}, R1};
decode(?TIMEOUT, <<_, P:32>>, R = #reader{version = 2}, _) ->
    {event, {timeout, sid(P, R)}, R};
decode(?TIMER, <<_, P:32, 0>>, R = #reader{version = 2}, _) ->
    {event, {timer_timeout, sid(P, R), sid(P, R)}, R};
decode(?TIMER, <<_, P:32, 1, Rest/binary>>, R = #reader{version = 2}, _) ->
    {Dest, R1} = term(Rest, R),
    {event, {timer_timeout, sid(P, R), Dest}, R1};
decode(?CUT, <<_, P:32, Own, Rest/binary>>, R = #reader{version = 2}, _) when Own =< 1 ->
    {Why, R1} = term(Rest, R),
    {event, {cut, sid(P, R), cut_call(Own, sid(P, R), Why)}, R1};
decode(?DROPPED, <<_, N:32>>, R, _) ->
    {dropped, N, R};
decode(Type, _, R, _) when Type >= 128 ->
    %% Types 128-255 are extensions a reader may skip (docs/trace-format.md).
    {skip, R};
decode(Type, _, _, _) ->
    bad(lists:flatten(io_lib:format("unknown record type ~b", [Type]))).

%% The call a CUT record holds, with the caller's name where it named itself.
cut_call(1, S, {trace, [_ | Args]}) -> {trace, [S | Args]};
cut_call(0, _S, Why) ->
    case riarc_event:is_cut(Why) of
        true -> Why;
        false -> bad("a cut record's call is neither trace nor trace_pattern, nor a look's finding")
    end;
cut_call(_, _, _) -> bad("a cut record that names its process holds no erlang:trace/3 call").

-spec bad(string()) -> no_return().
bad(Why) -> throw({riarc_bad, Why}).

sid(Id, #reader{procs = Ps}) ->
    case Ps of
        #{Id := Name} -> Name;
        #{} -> throw({riarc_unknown, Id})
    end.

%% Process names: pids keep their text form as a pid only when it is a local pid
%% ("<0.N.M>"), atoms only when they exist; anything else stays a binary.
proc_name(0, Text, R) ->
    try list_to_pid(binary_to_list(Text)) of
        Pid when node(Pid) =:= node() -> {Pid, R};
        _ -> {Text, R}
    catch error:badarg -> {Text, R}
    end;
proc_name(1, Name, R) ->
    case existing_atom(Name) of
        A when is_atom(A) -> {A, R};
        B -> {{riarc_unknown_atom, B}, unknown(1, R)}
    end;
proc_name(2, Digits, R) -> {binary_to_integer(Digits), R};
proc_name(3, Ext, R) ->
    case riarc_etf:decode(Ext, R#reader.max) of
        {ok, T, N} -> {T, unknown(N, R)};
        {error, {compressed_too_big, Size}} -> throw({riarc_too_big, Size});
        {error, _} -> bad("undecodable process name")
    end;
proc_name(_, _, _) -> bad("unknown process name kind").

unknown(N, R) -> R#reader{unknown = R#reader.unknown + N}.

existing_atom(B) ->
    try binary_to_existing_atom(B, utf8)
    catch error:badarg -> B
    end.

mfa(<<0, Rest/binary>>, R) -> {undefined, Rest, R};
mfa(<<1, ML:16, M:ML/binary, FL:16, F:FL/binary, Arity, ALen:32, A:ALen/binary, Rest/binary>>, R) ->
    {Args, R1} = case ALen of
                     0 -> {lists:duplicate(Arity, ?OMITTED), R};
                     _ -> args(A, Arity, R)
                 end,
    case {existing_atom(M), existing_atom(F)} of
        {Ma, Fa} when is_atom(Ma), is_atom(Fa) -> {{Ma, Fa, Args}, Rest, R1};
        {Ma, Fa} ->
            %% A name no code on this node has: kept as {riarc_unknown_atom, Name}, which
            %% a property's `_' and variables still match; counted, so that the check
            %% warns about it.
            Name = fun(X) when is_atom(X) -> X; (X) -> {riarc_unknown_atom, X} end,
            {{Name(Ma), Name(Fa), Args}, Rest, unknown(length([X || X <- [Ma, Fa], not is_atom(X)]), R1)}
    end;
mfa(_, _) -> bad("malformed MFA field").

args(A, Arity, R) ->
    case riarc_etf:decode(A, R#reader.max) of
        {ok, L, N} when is_list(L), length(L) =:= Arity -> {L, unknown(N, R)};
        {ok, _, _} -> bad("MFA arguments do not match the arity");
        {error, {compressed_too_big, Size}} -> throw({riarc_too_big, Size});
        {error, _} ->
            {lists:duplicate(Arity, {riarc_undecodable, A}), R#reader{undecodable = R#reader.undecodable + 1}}
    end.

term(<<0:32>>, R) -> {?OMITTED, R};
term(<<Len:32, Ext:Len/binary>>, R) ->
    case riarc_etf:decode(Ext, R#reader.max) of
        {ok, T, N} -> {T, unknown(N, R)};
        {error, {compressed_too_big, Size}} -> throw({riarc_too_big, Size});
        {error, _} ->
            %% Corrupt bytes: the event stays, its payload is kept opaque and counted.
            {{riarc_undecodable, Ext}, R#reader{undecodable = R#reader.undecodable + 1}}
    end;
term(_, _) -> bad("term field length does not match the record").

%% @doc The file and the byte offset of the last event's record.
-spec position(#reader{}) -> {string(), {byte, non_neg_integer()}}.
position(#reader{file = File, last = At}) -> {File, {byte, At}}.

%% @doc Closes the reader.
-spec close(#reader{}) -> ok.
close(#reader{fd = Fd}) -> _ = file:close(Fd), ok.

%% @doc A sentence for an error of this reader or writer.
-spec format_error(error_reason()) -> string().
format_error(Reason) -> riarc_trace_reader:format_error(Reason).

%%% ---------------------------------------------------------------------------
%%% Writer
%%% ---------------------------------------------------------------------------

%% @doc The file header for these options.
-spec encode_header(#{node := node(), start_us := integer(), payloads := boolean()}) -> binary().
encode_header(#{node := Node, start_us := Start, payloads := Payloads}) ->
    NodeB = atom_to_binary(Node, utf8),
    Flags = case Payloads of true -> 1; false -> 0 end,
    <<?MAGIC, ?VERSION, Flags, (byte_size(NodeB)):16, NodeB/binary, Start:64/signed>>.

%% @doc Opens a binary trace for writing and writes its header.
-spec open_writer(file:filename_all(), map()) -> {ok, #writer{}} | {error, error_reason()}.
open_writer(File, Opts) ->
    Name = unicode:characters_to_list(File),
    Payloads = maps:get(payloads, Opts, true),
    Header = encode_header(#{node => maps:get(node, Opts, node()),
                             start_us => maps:get(start_us, Opts, erlang:system_time(microsecond)),
                             payloads => Payloads}),
    case file:open(File, [write, raw, binary, {delayed_write, 65536, 200}]) of
        {ok, Fd} ->
            W = #writer{fd = Fd, file = Name, payloads = Payloads},
            case file:write(Fd, Header) of
                ok -> {ok, W};
                {error, Why} -> _ = file:close(Fd), {error, {write, Name, Why}}
            end;
        {error, Why} -> {error, {write, Name, Why}}
    end.

%% @doc Appends one event, with the PROC records of processes not named before.
-spec write_event(#writer{}, riarc_event:traced()) -> {ok, #writer{}} | {error, error_reason()}.
write_event(W, Ev) ->
    {Bytes, W1} = encode(Ev, W),
    case file:write(W#writer.fd, Bytes) of
        ok -> {ok, W1};
        {error, Why} -> {error, {write, W#writer.file, Why}}
    end.

%% @doc Flushes and closes.
-spec close_writer(#writer{}) -> ok | {error, error_reason()}.
close_writer(#writer{fd = Fd, file = File}) ->
    riarc_trace_reader:close_file(Fd, File).

encode({spawn, P, C, MFA}, W) ->
    {[PI, CI], Defs, W1} = ids([P, C], W),
    {[Defs, rec(?SPAWN, [<<PI:32, CI:32>>, enc_mfa(MFA, W)])], W1};
encode({init, C, P, MFA}, W) ->
    {[CI, PI], Defs, W1} = ids([C, P], W),
    {[Defs, rec(?INIT, [<<CI:32, PI:32>>, enc_mfa(MFA, W)])], W1};
encode({exit, P, Reason}, W) ->
    {[PI], Defs, W1} = ids([P], W),
    {[Defs, rec(?EXIT, [<<PI:32>>, enc_term(Reason)])], W1};
encode({send, F, T, Msg}, W) ->
    {[FI, TI], Defs, W1} = ids([F, T], W),
    {[Defs, rec(?SEND, [<<FI:32, TI:32>>, payload(Msg, W)])], W1};
encode({recv, P, Msg}, W) ->
    {[PI], Defs, W1} = ids([P], W),
    {[Defs, rec(?RECV, [<<PI:32>>, payload(Msg, W)])], W1};
encode({timeout, P}, W) ->
    {[PI], Defs, W1} = ids([P], W),
    {[Defs, rec(?TIMEOUT, <<PI:32>>)], W1};
encode({timer_timeout, P, P}, W) ->
    {[PI], Defs, W1} = ids([P], W),
    {[Defs, rec(?TIMER, <<PI:32, 0>>)], W1};
encode({timer_timeout, P, Dest}, W) ->
    {[PI], Defs, W1} = ids([P], W),
    {[Defs, rec(?TIMER, [<<PI:32, 1>>, enc_term(Dest)])], W1};
encode({cut, P, Why}, W) ->
    {[PI], Defs, W1} = ids([P], W),
    Own = case Why of
              {trace, [P | _]} -> 1;
              _ -> 0
          end,
    {[Defs, rec(?CUT, [<<PI:32, Own>>, enc_term(Why)])], W1}.

rec(Type, Body) ->
    Len = 1 + iolist_size(Body),
    [<<Len:32, Type>> | Body].

%% Small integers for processes, in order of first appearance; each new one is defined
%% by a PROC record written just before the record that first uses it.
ids(Sids, W) ->
    {Is, Ds, W1} = lists:foldl(fun id/2, {[], [], W}, Sids),
    {lists:reverse(Is), lists:reverse(Ds), W1}.

id(S, {Is, Ds, W = #writer{ids = M}}) ->
    case M of
        #{S := I} -> {[I | Is], Ds, W};
        #{} ->
            I = map_size(M),
            {[I | Is], [proc_rec(I, S) | Ds], W#writer{ids = M#{S => I}}}
    end.

proc_rec(I, S) ->
    {Kind, Name} = case S of
                       _ when is_pid(S), node(S) =:= node() -> {0, list_to_binary(pid_to_list(S))};
                       _ when is_atom(S) -> {1, atom_to_binary(S, utf8)};
                       _ when is_integer(S) -> {2, integer_to_binary(S)};
                       _ -> {3, term_to_binary(S)}
                   end,
    rec(?PROC, [<<I:32, Kind>>, Name]).

enc_mfa(undefined, _W) -> <<0>>;
enc_mfa({M, F, A}, W) ->
    MB = atom_to_binary(M, utf8),
    FB = atom_to_binary(F, utf8),
    Args = case W#writer.payloads of true -> enc_term(A); false -> <<0:32>> end,
    [<<1, (byte_size(MB)):16, MB/binary, (byte_size(FB)):16, FB/binary, (length(A))>>, Args].

payload(Msg, #writer{payloads = true}) -> enc_term(Msg);
payload(_Msg, #writer{payloads = false}) -> <<0:32>>.

enc_term(T) ->
    B = term_to_binary(T),
    [<<(byte_size(B)):32>>, B].
