%% @doc The demo system: a supervised ticket dispenser ({@link riarc_demo_tickets}) and
%% Clients client processes taking Tickets tickets each, concurrently. main/2 is the
%% system's root: it starts the supervision tree, waits for the clients, then shuts the
%% tree down, so that the whole system ends.
%% ```
%% 1> riarc:run({riarc_demo, main, [8, 20]}, riarc_demo_monitors, #{}).
%% '''
-module(riarc_demo).

-export([main/2, main/3, client/2]).

%% @doc The root of the demo system, with the racy dispenser.
-spec main(pos_integer(), pos_integer()) -> ok.
main(Clients, Tickets) ->
    main(Clients, Tickets, racy).

%% @doc The root of the demo system, with the racy or the safe dispenser.
-spec main(pos_integer(), pos_integer(), racy | safe) -> ok.
main(Clients, Tickets, Mode) ->
    process_flag(trap_exit, true),
    {ok, Sup} = riarc_demo_tickets_sup:start_link(Mode),
    Pids = [spawn_link(?MODULE, client, [self(), Tickets]) || _ <- lists:seq(1, Clients)],
    [receive {'EXIT', P, normal} -> ok end || P <- Pids],
    unlink(Sup),
    Ref = monitor(process, Sup),
    exit(Sup, shutdown),
    receive {'DOWN', Ref, process, Sup, _} -> ok end.

%% @doc A client: takes Tickets tickets, one after the other.
-spec client(pid(), pos_integer()) -> ok.
client(_Root, Tickets) ->
    _ = [riarc_demo_tickets:next() || _ <- lists:seq(1, Tickets)],
    ok.
