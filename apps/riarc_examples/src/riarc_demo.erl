%% @doc The demo system: a supervised ticket dispenser ({@link riarc_demo_tickets}) and
%% Clients client processes taking Tickets tickets each, concurrently. main/2 is the
%% system's root: it starts the supervision tree, waits for the clients, then shuts the
%% tree down, so that the whole system ends.
%% tickets/2 runs the same system and returns the tickets each client got, so that a run
%% can be judged by its result alone, e.g. by record &amp; replay (`bin/riarc record
%% --replayable --until-result riarc_demo:has_duplicate', docs/replay.md), where no
%% monitor runs inside the replayed VM.
%% ```
%% 1> riarc:run({riarc_demo, main, [8, 20]}, riarc_demo_monitors, #{}).
%% 2> Ts = riarc_demo:tickets(8, 20).
%% [[0,1,2,3,...],[0,2,4,...],...]
%% 3> riarc_demo:has_duplicate(Ts).   % when the race struck, as in most runs
%% true
%% 4> riarc_demo:duplicates(Ts).
%% [0,2,...]
%% '''
-module(riarc_demo).

-export([main/2, main/3, client/2]).
-export([tickets/2, ticket_client/2, has_duplicate/1, duplicates/1]).

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

%% @doc The demo system (racy dispenser) whose root returns the tickets each client got,
%% one list per client in the order the clients were started, each in the order it got
%% them. The same processes as main/2 plus one message per client to the root.
-spec tickets(pos_integer(), pos_integer()) -> [[non_neg_integer()]].
tickets(Clients, Tickets) ->
    process_flag(trap_exit, true),
    {ok, Sup} = riarc_demo_tickets_sup:start_link(racy),
    Self = self(),
    Pids = [spawn_link(?MODULE, ticket_client, [Self, Tickets]) || _ <- lists:seq(1, Clients)],
    %% Selective receives, one client after the other: the result's order does not depend
    %% on which client finished first, only on what the dispenser handed out.
    Got = [receive {tickets, P, Ts} -> Ts end || P <- Pids],
    [receive {'EXIT', P, normal} -> ok end || P <- Pids],
    unlink(Sup),
    Ref = monitor(process, Sup),
    exit(Sup, shutdown),
    receive {'DOWN', Ref, process, Sup, _} -> ok end,
    Got.

%% @doc A client of tickets/2: takes Tickets tickets, then sends them to Root.
-spec ticket_client(pid(), pos_integer()) -> ok.
ticket_client(Root, Tickets) ->
    Ts = [riarc_demo_tickets:next() || _ <- lists:seq(1, Tickets)],
    Root ! {tickets, self(), Ts},
    ok.

%% @doc Whether some ticket was handed out twice in a result of tickets/2: the
%% property the dispenser breaks, as a predicate on the root's return value.
-spec has_duplicate(term()) -> boolean().
has_duplicate(Result) ->
    duplicates(Result) =/= [].

%% @doc The tickets handed out more than once in a result of tickets/2, ascending;
%% [] for anything that is not a list of lists of tickets.
-spec duplicates(term()) -> [non_neg_integer()].
duplicates(Result) when is_list(Result) ->
    case lists:all(fun erlang:is_list/1, Result) of
        true ->
            All = lists:append(Result),
            lists:usort(All -- lists:usort(All));
        false -> []
    end;
duplicates(_) ->
    [].
