%% @doc The recording file: 003's uniform trace format, one stream of fixed 9-byte events
%% per process, behind a header. Reading is safe on hostile input: every length is
%% checked against what is left and against a bound, terms are decoded with `[safe]',
%% every event type must be known, and a CRC-32 trailer covers the whole file; any
%% failure is `{error, {riarc_replay_file, {corrupt, File, Offset, Why}}}'.
%%
%% Layout (big-endian):
%% ```
%% "RIARCRR" Version:8            magic and format version (4: REPEAT, a run of RECV or
%%                                SEND events in two; 3, still read, had no REPEAT; 2 had
%%                                no FROM and sent the sender side's timers plain; 1
%%                                counted a RECV's seq per receiver)
%% HLen:32 Header:HLen            term_to_binary(#{mfa, modules, strategy}), and
%%                                `unwoven' when the recording could not weave some
%% NStreams:32                    then, per process:
%%   Idx:32 LLen:16 Lid:LLen      index, term_to_binary(logical id)
%%   NEv:32 Events:(9*NEv)        Type:8 Data:64 each
%%   SLen:32 Side:SLen            term_to_binary([Value]) (SLen 0: no side values)
%% CRC:32                         erlang:crc32 of everything before it
%% '''
%% ```
%% 1> riarc_replay_file:write("/tmp/t.rr", #{mfa => {m, f, []}, modules => [m], strategy => receiver}, [{0, [], <<3, 0:64>>, []}]).
%% {ok,110}
%% 2> riarc_replay_file:read("/tmp/t.rr").
%% {ok,#{mfa => {m,f,[]},modules => [m],strategy => receiver},[{0,[],<<3,0,0,0,0,0,0,0,0>>,[]}]}
%% '''
-module(riarc_replay_file).

-export([write/3, read/1, read/2, format_error/1]).
-export_type([header/0, stream/0, error_reason/0]).

-define(MAGIC, "RIARCRR").
-define(VERSION, 4).
%% Version 3 is version 4 without REPEAT: read as it is.
-define(OLDEST, 3).
-define(EV_REPEAT, 7).
-define(MAX_HEADER, (1 bsl 20)).
-define(MAX_STREAMS, (1 bsl 24)).
-define(MAX_SIDE, (1 bsl 26)).
-define(MAX_FILE, (1 bsl 30)).
%% Event types a recording may hold (see riarc_replay_rt), with or without the side bit;
%% REPEAT (7, version 4: Count:40 Step:24) only right after a RECV (1) or SEND (4), with
%% a count of at least 1.
-define(TYPES, [1, 2, 3, 4, 5, 6, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25]).

%% `modules': what the recording wove (and the replay must weave); `unwoven': the
%% modules it was asked to weave and could not (no abstract code), left out of the
%% replay's weaving too.
-type header() :: #{mfa := {module(), atom(), list()}, modules := [module()],
                    strategy := receiver | sender, unwoven => [module()]}.
%% {Index, LogicalId, Events, SideValues}
-type stream() :: {non_neg_integer(), [pos_integer()], binary(), [term()]}.
-type error_reason() :: {corrupt, file:filename_all(), non_neg_integer(), atom() | tuple()}
                      | {file, file:filename_all(), file:posix() | badarg | terminated | system_limit}.

%% @doc Writes a recording; returns its size in bytes.
-spec write(file:filename_all(), header(), [stream()]) ->
    {ok, non_neg_integer()} | {error, {riarc_replay_file, error_reason()}}.
write(File, Header, Streams) ->
    H = term_to_binary(Header),
    Body = [<<?MAGIC, ?VERSION:8, (byte_size(H)):32>>, H, <<(length(Streams)):32>>
            | [stream_bin(S) || S <- Streams]],
    Bin = iolist_to_binary(Body),
    All = [Bin, <<(erlang:crc32(Bin)):32>>],
    case file:write_file(File, All) of
        ok -> {ok, byte_size(Bin) + 4};
        {error, Why} -> {error, {?MODULE, {file, File, Why}}}
    end.

stream_bin({Idx, Lid, Events, Side}) ->
    L = term_to_binary(Lid),
    S = case Side of
            [] -> <<>>;
            _ -> term_to_binary(Side)
        end,
    [<<Idx:32, (byte_size(L)):16>>, L, <<(byte_size(Events) div 9):32>>, Events,
     <<(byte_size(S)):32>>, S].

%% @doc Reads a recording (at most 1 GiB).
-spec read(file:filename_all()) ->
    {ok, header(), [stream()]} | {error, {riarc_replay_file, error_reason()}}.
read(File) ->
    read(File, ?MAX_FILE).

%% @doc Reads a recording of at most MaxBytes bytes.
-spec read(file:filename_all(), pos_integer()) ->
    {ok, header(), [stream()]} | {error, {riarc_replay_file, error_reason()}}.
read(File, MaxBytes) ->
    case filelib:file_size(File) of
        Size when Size > MaxBytes ->
            {error, {?MODULE, {corrupt, File, 0, {larger_than, MaxBytes}}}};
        _ ->
            case file:read_file(File) of
                {ok, Bin} ->
                    try parse(Bin) of
                        {ok, H, Ss} -> {ok, H, Ss}
                    catch
                        throw:{corrupt, Offset, Why} -> {error, {?MODULE, {corrupt, File, Offset, Why}}}
                    end;
                {error, Why} ->
                    {error, {?MODULE, {file, File, Why}}}
            end
    end.

%% @doc A sentence for each error_reason().
-spec format_error(error_reason()) -> string().
format_error({corrupt, File, _Offset, {unknown_version, V}}) ->
    lists:flatten(io_lib:format("~ts is a recording of format version ~b, and this riarc reads "
                                "versions ~b to ~b only: record the run again", [File, V, ?OLDEST, ?VERSION]));
format_error({corrupt, File, Offset, Why}) ->
    lists:flatten(io_lib:format("~ts is not a readable recording: at byte ~b, ~0tp", [File, Offset, Why]));
format_error({file, File, Why}) ->
    lists:flatten(io_lib:format("~ts cannot be read or written: ~ts", [File, file:format_error(Why)])).

%%% Parsing: every step checks what is left; `throw({corrupt, Offset, Why})' ends it.

parse(Bin) ->
    Version = case Bin of
                  <<?MAGIC, V0:8, _/binary>> when V0 >= ?OLDEST, V0 =< ?VERSION -> V0;
                  <<?MAGIC, V:8, _/binary>> -> throw({corrupt, 7, {unknown_version, V}});
                  _ when byte_size(Bin) < 8 -> throw({corrupt, byte_size(Bin), truncated});
                  _ -> throw({corrupt, 0, bad_magic})
              end,
    {HLen, O1} = u32(Bin, 8),
    HLen =< ?MAX_HEADER orelse throw({corrupt, 8, {header_too_large, HLen}}),
    Header = header(term(Bin, O1, HLen), O1),
    {N, O2} = u32(Bin, O1 + HLen),
    N =< ?MAX_STREAMS orelse throw({corrupt, O1 + HLen, {too_many_streams, N}}),
    {Streams, O3} = streams(Bin, O2, N, #{}, [], Version),
    case Bin of
        <<Body:O3/binary, CRC:32>> ->
            erlang:crc32(Body) =:= CRC orelse throw({corrupt, O3, checksum_mismatch}),
            lists:keymember(0, 1, Streams) orelse throw({corrupt, O2, no_root_stream}),
            {ok, Header, Streams};
        <<_:O3/binary, _/binary>> when byte_size(Bin) < O3 + 4 ->
            throw({corrupt, byte_size(Bin), truncated});
        _ ->
            throw({corrupt, O3 + 4, trailing_bytes})
    end.

streams(_Bin, O, 0, _Seen, Acc, _Version) ->
    {lists:reverse(Acc), O};
streams(Bin, O, N, Seen, Acc, Version) ->
    {Idx, O1} = u32(Bin, O),
    is_map_key(Idx, Seen) andalso throw({corrupt, O, {duplicate_stream, Idx}}),
    {LLen, O2} = u16(Bin, O1),
    Lid = term(Bin, O2, LLen),
    is_lid(Lid) orelse throw({corrupt, O2, bad_logical_id}),
    {NEv, O3} = u32(Bin, O2 + LLen),
    Events = bytes(Bin, O3, NEv * 9),
    check_events(Events, O3, Version),
    {SLen, O4} = u32(Bin, O3 + NEv * 9),
    SLen =< ?MAX_SIDE orelse throw({corrupt, O3 + NEv * 9, {side_table_too_large, SLen}}),
    Side = case SLen of
               0 -> [];
               _ -> term(Bin, O4, SLen)
           end,
    is_list(Side) orelse throw({corrupt, O4, bad_side_table}),
    streams(Bin, O4 + SLen, N - 1, Seen#{Idx => true}, [{Idx, Lid, Events, Side} | Acc], Version).

check_events(Events, O0, Version) ->
    Known = maps:from_list([{T, true} || T0 <- ?TYPES, T <- [T0, T0 bor 16#80]]),
    check_events(Events, O0, 0, Known, Version >= 4, none).

check_events(Events, O0, At, Known, Repeats, Prev) ->
    case Events of
        <<_:At/binary, ?EV_REPEAT:8, N:40, _:24, _/binary>> when Repeats ->
            (Prev =:= 1 orelse Prev =:= 4) orelse throw({corrupt, O0 + At, {repeat_after, Prev}}),
            N >= 1 orelse throw({corrupt, O0 + At, {repeat_count, N}}),
            check_events(Events, O0, At + 9, Known, Repeats, ?EV_REPEAT);
        <<_:At/binary, T:8, _:64, _/binary>> ->
            is_map_key(T, Known) orelse throw({corrupt, O0 + At, {unknown_event_type, T}}),
            check_events(Events, O0, At + 9, Known, Repeats, T);
        _ ->
            ok
    end.

header(H = #{mfa := {M, F, A}, modules := Ms, strategy := St}, O)
  when is_atom(M), is_atom(F), is_list(A), is_list(Ms), (St =:= receiver orelse St =:= sender) ->
    case atoms(Ms) andalso atoms(maps:get(unwoven, H, [])) of
        true -> maps:with([mfa, modules, strategy, unwoven], H);
        false -> throw({corrupt, O, bad_header})
    end;
header(_, O) ->
    throw({corrupt, O, bad_header}).

%% A proper list of atoms (a hostile header may hold an improper one).
atoms([]) -> true;
atoms([A | T]) when is_atom(A) -> atoms(T);
atoms(_) -> false.

is_lid(L) when is_list(L) -> lists:all(fun(K) -> is_integer(K) andalso K > 0 end, L);
is_lid(_) -> false.

u32(Bin, O) ->
    case Bin of
        <<_:O/binary, V:32, _/binary>> -> {V, O + 4};
        _ -> throw({corrupt, min(O, byte_size(Bin)), truncated})
    end.

u16(Bin, O) ->
    case Bin of
        <<_:O/binary, V:16, _/binary>> -> {V, O + 2};
        _ -> throw({corrupt, min(O, byte_size(Bin)), truncated})
    end.

bytes(Bin, O, Len) ->
    case Bin of
        <<_:O/binary, B:Len/binary, _/binary>> -> B;
        _ -> throw({corrupt, min(O, byte_size(Bin)), truncated})
    end.

term(Bin, O, Len) ->
    B = bytes(Bin, O, Len),
    try binary_to_term(B, [safe])
    catch error:_ -> throw({corrupt, O, bad_term})
    end.
