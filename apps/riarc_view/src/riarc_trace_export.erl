%% @doc A recording exported for people and their tools: to the Chrome trace-event JSON
%% format (opens in Perfetto, ui.perfetto.dev, and chrome://tracing), or to the message
%% sequence chart of riarc_chart as one HTML page. The trace is read with riarc_offline's
%% reader (riarc's binary or text format, or a dbg file) and bounded: at most `max_events'
%% events (100 000 by default) are exported, and a trace with more is cut there, with a
%% sentence in the output saying so (and `cut => true' in the result).
%%
%% In the Chrome format the recording is one process; each traced process is a thread
%% (named by its pid and initial call), each event a slice of its thread, and each send
%% joined to its receive (riarc_chart:joins/1) a flow arrow between them. Recordings keep
%% the order of events, not their times: an event's timestamp is its position in the
%% file, 10 microseconds apart.
%% ```
%% 1> file:write_file("/tmp/riarc-export-doc.txt",
%%                    "{init, p, q, {m, f, []}}.\n{send, p, q, hi}.\n{recv, q, hi}.\n").
%% ok
%% 2> riarc_trace_export:export("/tmp/riarc-export-doc.txt", "/tmp/riarc-export-doc.json", #{format => chrome}).
%% {ok,#{cut => false,events => 3}}
%% 3> {ok, Json} = file:read_file("/tmp/riarc-export-doc.json").
%% 4> {ok, #{<<"traceEvents">> := Evs}} = riarc_json:decode(Json), length(Evs).
%% 8
%% 5> riarc_trace_export:export("/tmp/riarc-export-doc.txt", "/tmp/riarc-export-doc.json", #{format => chrome, max_events => 2}).
%% {ok,#{cut => true,events => 2}}
%% 6> riarc_trace_export:cut_sentence(2).
%% "the trace has more than 2 events: only the first 2 are exported"
%% '''
-module(riarc_trace_export).

-export([export/3, read/2, chrome/2, cut_sentence/1, truncated_sentence/1, default_max_events/0,
         format_error/1]).
-export_type([opts/0, error_reason/0]).

-type opts() :: #{format := chrome | html, max_events => pos_integer(), title => string()}.
-type error_reason() :: {write, string(), file:posix() | badarg | terminated | system_limit}.
%% What was read: how many events, whether the trace had more, and what the reader said
%% about the file at its end (riarc_trace_file:info(), empty when cut).
-type read_info() :: #{events := non_neg_integer(), cut := boolean(), file := map()}.

-define(MAX_EVENTS, 100000).
%% Messages larger than this (external size) are kept as {riarc_truncated, Size}.
-define(MAX_PAYLOAD, 65536).
%% Microseconds between two events' timestamps.
-define(STEP, 10).

%% @doc The bound on exported events when none is given: 100 000.
-spec default_max_events() -> pos_integer().
default_max_events() -> ?MAX_EVENTS.

%% @doc Exports the trace file Source to Out in the format asked for. `cut' says the
%% trace had more than `max_events' events, `truncated' that the file ended in a torn
%% record at that byte (the events before it are exported); the output says so too.
-spec export(riarc_trace_file:source(), file:filename(), opts()) ->
    {ok, #{events := non_neg_integer(), cut := boolean(), truncated => non_neg_integer()}}
    | {error, riarc_trace_file:error() | {?MODULE, error_reason()}}.
export(Source, Out, Opts = #{format := Format}) ->
    Max = maps:get(max_events, Opts, ?MAX_EVENTS),
    case read(Source, Max) of
        {ok, Events, #{events := N, cut := Cut, file := FileInfo}} ->
            Title = maps:get(title, Opts, "riarc trace " ++ name(Source)),
            Torn = case FileInfo of
                       #{truncated := B} when is_integer(B) -> #{truncated => B};
                       #{} -> #{}
                   end,
            Notes = [cut_sentence(Max) || Cut] ++ [truncated_sentence(B) || #{truncated := B} <- [Torn]],
            Note = case Notes of
                       [] -> #{};
                       _ -> #{note => lists:flatten(lists:join("; ", Notes))}
                   end,
            Data = case Format of
                       chrome -> chrome(Events, Note#{title => Title});
                       html -> riarc_chart:trace_html(Events, Note#{title => Title})
                   end,
            case file:write_file(Out, Data) of
                ok -> {ok, Torn#{events => N, cut => Cut}};
                {error, Why} -> {error, {?MODULE, {write, name(Out), Why}}}
            end;
        {error, _} = Error ->
            Error
    end.

%% @doc At most Max events of a trace file, in file order; `cut' when it has more. A
%% message over 64 KiB is kept as `{riarc_truncated, Size}' (riarc_event:truncate/2).
-spec read(riarc_trace_file:source(), pos_integer()) ->
    {ok, [riarc_event:traced()], read_info()} | {error, riarc_trace_file:error()}.
read(Source, Max) ->
    case riarc_trace_file:open(Source) of
        {ok, R} -> read(R, Max, []);
        {error, _} = Error -> Error
    end.

read(R, Left, Acc) ->
    case riarc_trace_file:read(R) of
        {ok, _E, R1} when Left =:= 0 ->
            ok = riarc_trace_file:close(R1),
            {ok, lists:reverse(Acc), #{events => length(Acc), cut => true, file => #{}}};
        %% Only a bounded label of a message is shown: a large one is not kept whole.
        {ok, E, R1} -> read(R1, Left - 1, [riarc_event:truncate(E, ?MAX_PAYLOAD) | Acc]);
        {eof, Info} -> {ok, lists:reverse(Acc), #{events => length(Acc), cut => false, file => Info}};
        {error, _} = Error -> Error
    end.

%% @doc The sentence a cut export carries.
-spec cut_sentence(pos_integer()) -> string().
cut_sentence(Max) ->
    flat("the trace has more than ~b events: only the first ~b are exported", [Max, Max]).

%% @doc The sentence of a file that ends in a torn record.
-spec truncated_sentence(non_neg_integer()) -> string().
truncated_sentence(Byte) ->
    flat("the file is truncated at byte ~b: only the events before it are exported", [Byte]).

%% @doc Events in the Chrome trace-event format (JSON, an object with `traceEvents'):
%% one thread per process, one slice per event, a flow per send joined to its receive;
%% with `note', a global instant event and `otherData.note' saying it. Each trace event
%% is encoded on its own (riarc_json:encode/1), as it is made: a large trace is never one
%% term in memory.
-spec chrome([riarc_event:traced()], #{title => string(), note => string()}) -> iodata().
chrome(Events, Opts) ->
    Tids = tids(Events),
    Names = names(Events),
    ByPos = list_to_tuple(Events),
    Pairs = lists:sort([{S, R} || {{send, S}, R} <- maps:to_list(riarc_chart:joins(Events))]),
    Meta = [#{name => <<"process_name">>, ph => <<"M">>, pid => 1, tid => 0,
              args => #{name => bin(maps:get(title, Opts, "riarc trace"))}}
            | [#{name => <<"thread_name">>, ph => <<"M">>, pid => 1, tid => T,
                 args => #{name => bin(thread_name(S, maps:get(S, Names, undefined)))}}
               || {S, T} <- lists:keysort(2, maps:to_list(Tids))]],
    {Cut, Other} = case Opts of
                       #{note := Note} ->
                           {[#{name => bin(Note), ph => <<"i">>, s => <<"g">>, pid => 1, tid => 0,
                               ts => length(Events) * ?STEP}],
                            #{note => bin(Note)}};
                       #{} -> {[], #{}}
                   end,
    Encoded = [riarc_json:encode(M) || M <- Meta]
        ++ [riarc_json:encode(slice(K, E, Tids)) || {K, E} <- lists:zip(lists:seq(0, length(Events) - 1), Events)]
        ++ [riarc_json:encode(F) || {S, R} <- Pairs, F <- flow(S, R, ByPos, Tids)]
        ++ [riarc_json:encode(C) || C <- Cut],
    %% The keys in riarc_json's order (sorted), as encode/1 of the whole would give them.
    ["{\"otherData\":",
     riarc_json:encode(Other#{source => <<"riarc">>, events => length(Events),
                              timestamps => <<"event positions, 10 us apart">>}),
     ",\"traceEvents\":[", lists:join(",", Encoded), "]}"].

slice(K, E, Tids) ->
    Kind = atom_to_list(riarc_event:kind(E)),
    #{name => bin(what(E)), cat => bin(Kind), ph => <<"X">>,
      ts => K * ?STEP, dur => ?STEP - 2, pid => 1, tid => maps:get(riarc_event:origin(E), Tids),
      args => #{event => bin(riarc_chart:label(E, 240)), position => K + 1}}.

%% A slice's name: the event in a few words, bounded.
what({send, _, To, Msg}) -> ["send ", riarc_chart:label(Msg, 40), " to ", riarc_chart:process_label(To)];
what({recv, _, Msg}) -> ["recv ", riarc_chart:label(Msg, 40)];
what({spawn, _, Child, MFA}) ->
    ["spawn ", riarc_chart:mfa_label(MFA), " as ", riarc_chart:process_label(Child)];
what({init, _, _, MFA}) -> ["init ", riarc_chart:mfa_label(MFA)];
what({exit, _, Reason}) -> ["exit ", riarc_chart:label(Reason, 40)];
what({attached, _, MFA}) -> ["attached ", riarc_chart:mfa_label(MFA)];
what({timeout, _}) -> "timeout";
%% riarc's own: a timer set to send the atom `timeout' (riarc_event's timer_event()).
what({timer_timeout, _, Dest}) -> ["timer: timeout to ", riarc_chart:process_label(Dest)];
%% riarc's own: a call that may take away what the trace shows (riarc_event's cut_event()).
what({cut, _, Why}) -> riarc_chart:cut_label(Why).

%% A flow from the send's slice to its receive's: the id is the send's position.
flow(S, R, ByPos, Tids) ->
    {send, From, _, _} = element(S + 1, ByPos),
    {recv, To, _} = element(R + 1, ByPos),
    [#{name => <<"message">>, cat => <<"message">>, ph => <<"s">>, id => S, pid => 1,
       tid => maps:get(From, Tids), ts => S * ?STEP},
     #{name => <<"message">>, cat => <<"message">>, ph => <<"f">>, bp => <<"e">>, id => S, pid => 1,
       tid => maps:get(To, Tids), ts => R * ?STEP}].

%% Thread ids from 1, in the order the trace first names each process.
tids(Events) ->
    lists:foldl(fun(S, M) when is_map_key(S, M) -> M;
                   (S, M) -> M#{S => map_size(M) + 1}
                end, #{}, lists:append([[riarc_event:origin(E) | peers(E)] || E <- Events])).

peers({send, _, To, _}) -> [To];
peers({spawn, _, Child, _}) -> [Child];
peers(_) -> [].

%% Each process's initial call, as its init, attached or spawn event gives it.
names(Events) ->
    lists:foldl(fun({init, C, _, MFA}, M) -> M#{C => MFA};
                   ({attached, P, MFA}, M) -> M#{P => MFA};
                   ({spawn, _, C, MFA}, M) -> maps:merge(#{C => MFA}, M);
                   (_, M) -> M
                end, #{}, Events).

thread_name(S, undefined) -> riarc_chart:process_label(S);
thread_name(S, MFA) -> [riarc_chart:process_label(S), " ", riarc_chart:mfa_label(MFA)].

bin(Chars) ->
    case unicode:characters_to_binary(Chars) of
        B when is_binary(B) -> B;
        _ -> unicode:characters_to_binary(flat("~0tp", [Chars]))
    end.

name(Source) when is_list(Source) -> Source;
name(Source) when is_binary(Source) -> unicode:characters_to_list(Source);
name({dbg_wrap, Prefix, Tail}) -> name(Prefix) ++ "*" ++ Tail;
name(Other) -> flat("~0tp", [Other]).

%% @doc One sentence for an error of this module.
-spec format_error(error_reason()) -> string().
format_error({write, File, Why}) ->
    flat("cannot write ~ts: ~ts", [File, file:format_error(Why)]).

flat(Fmt, Args) -> lists:flatten(io_lib:format(Fmt, Args)).
