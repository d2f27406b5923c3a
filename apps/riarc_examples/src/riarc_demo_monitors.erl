%% @doc The demo's properties, written as Erlang monitors (a riarc Spec module).
%% <ul>
%% <li>The ticket dispenser's partition (the gen_server and the helpers it spawns, which
%%     Λ leaves in their parent's partition) never hands out the same ticket twice: it
%%     watches every reply the partition sends, `{send, _, _, {Tag, N}}' with a
%%     gen_server reply tag, and rejects on the first repeated N.</li>
%% <li>Each client gets strictly new tickets, and exits normally.</li>
%% </ul>
%% ```
%% 1> riarc_demo_monitors:spec({riarc_demo_tickets, init, [0]}).
%% {ok,{riarc_demo_monitors,{tickets,#{}}}}
%% '''
-module(riarc_demo_monitors).
-behaviour(riarc_monitor).

-export([spec/1, analyse/2]).

%% @doc Λ: monitors for the dispenser and for each client.
-spec spec(riarc_event:mfa_args()) -> {ok, riarc_monitor:monitor()} | undefined.
spec({riarc_demo_tickets, init, _}) -> {ok, {?MODULE, {tickets, #{}}}};
spec({riarc_demo, client, _}) -> {ok, {?MODULE, {client, #{}}}};
spec(_) -> undefined.

%% @doc One step of either property.
-spec analyse(riarc_event:event(), term()) -> {next, term()} | accept | reject.
analyse({send, _From, _To, {[alias | _], N}}, {Role, Seen}) when is_integer(N) ->
    seen(N, Role, Seen);
analyse({send, _From, _To, {Ref, N}}, {Role, Seen}) when is_reference(Ref), is_integer(N) ->
    seen(N, Role, Seen);
analyse({recv, _Pid, {Ref, N}}, {client, Seen}) when is_reference(Ref), is_integer(N) ->
    seen(N, client, Seen);
analyse({recv, _Pid, {[alias | _], N}}, {client, Seen}) when is_integer(N) ->
    seen(N, client, Seen);
analyse({exit, _Pid, normal}, {client, _}) -> accept;
analyse({exit, _Pid, _Other}, {client, _}) -> reject;
analyse(_Event, State) -> {next, State}.

seen(N, Role, Seen) when is_map_key(N, Seen) -> _ = Role, reject;
seen(N, Role, Seen) -> {next, {Role, Seen#{N => true}}}.
