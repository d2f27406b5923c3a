%% @doc A CSV writer process, so that whoever produces rows never waits on the disk
%% (004 §3.3: samples are written asynchronously).
%%
%% Rows are lists of fields (numbers, atoms, strings); `row/2' is a plain send. `close/1'
%% is the only call that waits: it returns once every row before it is on disk.
%%
%% ```
%% 1> {ok, W} = riarc_bench_writer:start("/tmp/x.csv", [a, b]).
%% 2> riarc_bench_writer:row(W, [1, 2.5]).
%% 3> riarc_bench_writer:close(W).
%% ok
%% 4> file:read_file("/tmp/x.csv").
%% {ok,<<"a,b\n1,2.500000\n">>}
%% '''
-module(riarc_bench_writer).

-export([start/2, row/2, close/1, write_csv/3, line/1, field/1, format_error/1]).

-export_type([field/0, error_reason/0]).

-type field() :: number() | atom() | string() | binary().
-type error_reason() :: {open | write, file:filename(), file:posix() | badarg | terminated | system_limit}.

%% Opens Path, writes the header, and returns the writer's pid (linked to the caller:
%% a run that dies takes its writer with it).
-spec start(file:filename(), [field()]) -> {ok, pid()} | {error, {?MODULE, error_reason()}}.
start(Path, Header) ->
    Self = self(),
    Ref = make_ref(),
    Pid = spawn_link(fun() -> init(Self, Ref, Path, Header) end),
    receive
        {Ref, ok} -> {ok, Pid};
        {Ref, Error} -> Error
    end.

init(Parent, Ref, Path, Header) ->
    case file:open(Path, [write, raw, binary, {delayed_write, 64 * 1024, 500}]) of
        {ok, Fd} ->
            ok = file:write(Fd, line(Header)),
            Parent ! {Ref, ok},
            loop(Fd);
        {error, Reason} ->
            Parent ! {Ref, {error, {?MODULE, {open, Path, Reason}}}}
    end.

loop(Fd) ->
    receive
        {row, Fields} ->
            ok = file:write(Fd, line(Fields)),
            loop(Fd);
        {close, From, Ref} ->
            ok = file:close(Fd),
            From ! {Ref, ok}
    end.

-spec row(pid(), [field()]) -> ok.
row(Writer, Fields) ->
    Writer ! {row, Fields},
    ok.

-spec close(pid()) -> ok.
close(Writer) ->
    Ref = monitor(process, Writer),
    Writer ! {close, self(), Ref},
    receive
        {Ref, ok} -> demonitor(Ref, [flush]), ok;
        {'DOWN', Ref, process, _, Reason} -> error({writer_died, Reason})
    end.

%% Synchronous helper for small files (summaries, aggregates): header plus rows.
-spec write_csv(file:filename(), [field()], [[field()]]) -> ok | {error, {?MODULE, error_reason()}}.
write_csv(Path, Header, Rows) ->
    case file:write_file(Path, [line(Header) | [line(R) || R <- Rows]]) of
        ok -> ok;
        {error, Reason} -> {error, {?MODULE, {write, Path, Reason}}}
    end.

-spec line([field()]) -> iodata().
line(Fields) -> [lists:join($,, [field(F) || F <- Fields]), $\n].

-spec field(field()) -> iodata().
field(F) when is_integer(F) -> integer_to_binary(F);
field(F) when is_float(F) -> io_lib:format("~f", [F]);
field(F) when is_atom(F) -> atom_to_binary(F);
field(F) when is_binary(F) -> F;
field(F) when is_list(F) -> F.

%% @doc One sentence for an error of start/2 or write_csv/3.
-spec format_error(error_reason()) -> string().
format_error({open, Path, Reason}) ->
    lists:flatten(io_lib:format("cannot open ~ts for writing: ~ts", [Path, file:format_error(Reason)]));
format_error({write, Path, Reason}) ->
    lists:flatten(io_lib:format("cannot write ~ts: ~ts", [Path, file:format_error(Reason)])).
