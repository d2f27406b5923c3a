%% @doc The VM's send and receive trace patterns (`erlang:trace_pattern/3'), shared by
%% the sessions of a node: which sent and received messages the VM traces at all.
%%
%% A compiled property module says which messages its monitors can see
%% (`trace_patterns/0', see riarc_shml_patterns); a session monitoring with it need not
%% have the others traced. But the patterns are **node-global**: one send pattern and one
%% receive pattern for every traced process of the node, whoever traces it. So every
%% session holds the patterns it needs while it runs (a session with no such module holds
%% `true': every message) and the VM gets their union: no session misses a message that
%% another session's patterns leave out. When the last holder lets go, the patterns that
%% were there before the first one came are put back. A holder whose owner process is
%% dead (a session that ended without closing its backend) is dropped at the next change.
%% Tracing done on the node outside riarc while a session filters sees only the messages
%% the union keeps.
%%
%% Receive timeouts are always traced: the receive pattern is
%% `riarc_route:receive_pattern/1' of the union, which marks them for the routing table.
%% ```
%% 1> K = make_ref().
%% 2> riarc_trace_pattern:hold(K, self(), #{send => false, 'receive' => [{['_', '_', {error, '_'}], [], []}]}).
%% ok
%% 3> riarc_trace_pattern:installed().
%% #{'receive' => [{['$1','_','_'],[{'=:=','$1',clock_service}],[{message,clock_service}]},
%%                 {['_','_',{error,'_'}],[],[]}],
%%   send => false}
%% 4> riarc_trace_pattern:release(K).
%% ok
%% '''
-module(riarc_trace_pattern).

-export([hold/3, release/1, installed/0, valid/1, union/1]).
-export_type([pattern/0, patterns/0]).

%% Every message of the kind (`true'), none (`false'), or those a match specification
%% matches (`[Receiver, Msg]' for send, `[Node, Sender, Msg]' for 'receive').
-type pattern() :: true | false | [{list() | '_', list(), list()}].
-type patterns() :: #{send => pattern(), 'receive' => pattern()}.

-define(KEY, {?MODULE, state}).

%% OTP 25's specs of erlang:trace_pattern/3 and erlang:trace_info/2 leave out send and
%% 'receive' (see riarc_route): those calls go through apply/3.

%% @doc Holds Patterns (a kind left out: every message) under Key for as long as Owner
%% lives or until release/1; the VM's patterns become the union of every holder's.
-spec hold(term(), pid() | undefined, patterns()) -> ok.
hold(Key, Owner, Patterns) when is_map(Patterns) ->
    change(fun(Hs) -> Hs#{Key => {Owner, Patterns}} end).

%% @doc Lets go of Key's patterns (nothing if it holds none).
-spec release(term()) -> ok.
release(Key) ->
    change(fun(Hs) -> maps:remove(Key, Hs) end).

%% @doc The send and receive patterns the VM has now.
-spec installed() -> #{send := pattern(), 'receive' := pattern()}.
installed() ->
    {match_spec, S} = erlang:trace_info(send, match_spec),
    {match_spec, R} = apply(erlang, trace_info, ['receive', match_spec]),
    #{send => S, 'receive' => R}.

%% @doc Whether a term is a patterns() map the VM accepts.
-spec valid(term()) -> boolean().
valid(Ps) when is_map(Ps) ->
    lists:all(fun({send, P}) -> valid(P, [a, b]);
                 ({'receive', P}) -> valid(P, [a, b, c]);
                 (_) -> false
              end, maps:to_list(Ps));
valid(_) -> false.

valid(P, _) when is_boolean(P) -> true;
valid(P, Input) when is_list(P) ->
    try erlang:match_spec_test(Input, P, trace) of
        {ok, _, _, _} -> true;
        {error, _} -> false
    catch error:_ -> false
    end;
valid(_, _) -> false.

%% Race: two sessions starting or ending at once would each install a union that lacks
%% the other's patterns; changes are made one at a time, under a lock of this node.
change(Fun) ->
    global:trans({?MODULE, self()}, fun() -> change_locked(Fun) end, [node()]).

change_locked(Fun) ->
    #{holders := Hs0, saved := Saved0} = persistent_term:get(?KEY, #{holders => #{}, saved => none}),
    Hs = maps:filter(fun(_, {Owner, _}) -> alive(Owner) end, Fun(Hs0)),
    Saved = case {map_size(Hs), Saved0} of
                {0, none} -> none;
                {0, _} -> install(Saved0), none;
                {_, none} -> S = installed(), install(held(Hs)), S;
                {_, _} -> install(held(Hs)), Saved0
            end,
    New = #{holders => Hs, saved => Saved},
    case New =:= #{holders => Hs0, saved => Saved0} of
        true -> ok;
        false -> persistent_term:put(?KEY, New)
    end,
    ok.

alive(undefined) -> true;
alive(Pid) when is_pid(Pid) -> is_process_alive(Pid).

%% What the VM gets: the union of every holder's patterns.
held(Hs) ->
    Held = [P || {_, P} <- maps:values(Hs)],
    #{send => union([maps:get(send, P, true) || P <- Held]),
      'receive' => riarc_route:receive_pattern(union([maps:get('receive', P, true) || P <- Held]))}.

%% @doc The pattern that keeps what any of Ps keeps.
-spec union([pattern()]) -> pattern().
union(Ps) ->
    case lists:member(true, Ps) of
        true -> true;
        false ->
            case lists:usort(lists:append([P || P <- Ps, is_list(P)])) of
                [] -> false;
                Clauses -> Clauses
            end
    end.

install(#{send := S, 'receive' := R}) ->
    _ = apply(erlang, trace_pattern, [send, S, []]),
    _ = apply(erlang, trace_pattern, ['receive', R, []]),
    ok.
