%% @doc A gen_statem whose timeouts race with its clients' casts, for the record &amp;
%% replay tests: a switch that goes `on' on a cast `press', back `off' by a state timeout
%% of 1 ms, and counts idle event timeouts (1 ms without an event) while `off'. It logs
%% every event it handles; main/2 returns the log, whose order is the race.
%% ```
%% 1> riarc_replay_statem:main(2, 10).
%% [{off,cast,{press,1}},{on,state_timeout,off},...]
%% '''
-module(riarc_replay_statem).
-behaviour(gen_statem).

-export([main/2, client/3]).
-export([callback_mode/0, init/1, handle_event/4]).

%% @doc The root: the switch, Clients clients pressing Presses times each, the log.
-spec main(pos_integer(), pos_integer()) -> [tuple()].
main(Clients, Presses) ->
    {ok, Sw} = gen_statem:start_link(?MODULE, [], []),
    Self = self(),
    Pids = [spawn(?MODULE, client, [Self, Sw, {I, Presses}]) || I <- lists:seq(1, Clients)],
    [receive {done, P} -> ok end || P <- Pids],
    Log = gen_statem:call(Sw, log),
    ok = gen_statem:stop(Sw),
    Log.

%% @doc A client: Presses casts, a random amount of work before each.
-spec client(pid(), pid(), {pos_integer(), pos_integer()}) -> ok.
client(Root, Sw, {I, Presses}) ->
    lists:foreach(fun(_) -> spin(rand:uniform(4000000)), gen_statem:cast(Sw, {press, I}) end,
                  lists:seq(1, Presses)),
    Root ! {done, self()},
    ok.

spin(0) -> ok;
spin(K) -> spin(K - 1).

%% @private
-spec callback_mode() -> handle_event_function.
callback_mode() -> handle_event_function.

%% @private
-spec init([]) -> {ok, off, [tuple()], [{timeout, pos_integer(), idle}]}.
init([]) -> {ok, off, [], [{timeout, 1, idle}]}.

%% @private
-spec handle_event(term(), term(), atom(), [tuple()]) -> term().
handle_event({call, From}, log, _State, Log) ->
    {keep_state_and_data, [{reply, From, lists:reverse(Log)}]};
handle_event(cast, {press, I}, off, Log) ->
    {next_state, on, [{off, cast, {press, I}} | Log], [{state_timeout, 1, off}]};
handle_event(cast, {press, I}, on, Log) ->
    {keep_state, [{on, cast, {press, I}} | Log]};
handle_event(state_timeout, off, on, Log) ->
    {next_state, off, [{on, state_timeout, off} | Log], [{timeout, 1, idle}]};
handle_event(timeout, idle, off, Log) ->
    {keep_state, [{off, timeout, idle} | Log], [{timeout, 1, idle}]}.
