%% @doc The demo's properties, written as Erlang monitors (a riarc Spec module).
%% <ul>
%% <li>The ticket dispenser's partition (the gen_server and the helpers it spawns, which
%%     Λ leaves in their parent's partition) never hands out the same ticket twice. A
%%     ticket reaches a client as a gen_server reply `{Tag, N}' sent by a helper; the
%%     server's own `{Tag, N}' replies answer the helpers' reads and are not tickets, so
%%     the monitor learns the server's pid from its init event and watches replies sent
%%     by anyone else, rejecting on the first repeated N.</li>
%% <li>Each client gets strictly new tickets, and exits normally.</li>
%% </ul>
%% ```
%% 1> riarc_demo_monitors:spec({riarc_demo_tickets, init, [racy]}).
%% {ok,{riarc_demo_monitors,{tickets,undefined,#{}}}}
%% '''
-module(riarc_demo_monitors).
-behaviour(riarc_monitor).

-export([spec/1, analyse/2]).

%% @doc Λ: monitors for the dispenser and for each client.
-spec spec(riarc_event:mfa_args()) -> {ok, riarc_monitor:monitor()} | undefined.
spec({riarc_demo_tickets, init, _}) -> {ok, {?MODULE, {tickets, undefined, #{}}}};
spec({riarc_demo, client, _}) -> {ok, {?MODULE, {client, #{}}}};
spec(_) -> undefined.

%% @doc One step of either property.
-spec analyse(riarc_event:event(), term()) -> {next, term()} | accept | reject.
analyse({init, Server, _Parent, _MFA}, {tickets, undefined, Seen}) ->
    {next, {tickets, Server, Seen}};
analyse({send, From, _To, {Tag, N}}, {tickets, Server, Seen})
  when From =/= Server, is_integer(N) ->
    case is_reply_tag(Tag) of
        true -> seen(N, {tickets, Server}, Seen);
        false -> {next, {tickets, Server, Seen}}
    end;
analyse({recv, _Pid, {Tag, N}}, {client, Seen}) when is_integer(N) ->
    case is_reply_tag(Tag) of
        true -> seen(N, client, Seen);
        false -> {next, {client, Seen}}
    end;
analyse({exit, _Pid, normal}, {client, _}) -> accept;
analyse({exit, _Pid, _Other}, {client, _}) -> reject;
analyse(_Event, State) -> {next, State}.

%% gen_server reply tags: a reference, or on OTP 24+ an alias list [alias | Ref].
is_reply_tag(Ref) when is_reference(Ref) -> true;
is_reply_tag([alias | Ref]) when is_reference(Ref) -> true;
is_reply_tag(_) -> false.

seen(N, _Role, Seen) when is_map_key(N, Seen) -> reject;
seen(N, {tickets, Server}, Seen) -> {next, {tickets, Server, Seen#{N => true}}};
seen(N, client, Seen) -> {next, {client, Seen#{N => true}}}.
