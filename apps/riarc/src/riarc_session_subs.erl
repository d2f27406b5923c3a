%% @doc Who a session tells of each verdict as it learns it (riarc_session:subscribe/3):
%% the subscribers, each with the tag it chose, and which entries of the system's
%% processes on followed nodes they were told already. The stream is
%% `{riarc_session_verdict, Tag, Entry}'.
%% ```
%% 1> Tag = make_ref(), S1 = riarc_session_subs:add(self(), Tag, riarc_session_subs:new()).
%% 2> riarc_session_subs:any(S1).
%% true
%% 3> riarc_session_subs:publish([#{pid => self(), verdict => accept}], S1).
%% ok
%% 4> receive {riarc_session_verdict, Tag, #{verdict := V}} -> V end.
%% accept
%% '''
-module(riarc_session_subs).

-export([new/0, add/3, member/2, remove/2, any/1, publish/2, publish_new/2]).
-export_type([t/0]).

-record(subs, {
    %% Who is told of each verdict, with the tag each chose.
    tags = #{} :: #{pid() => reference()},
    %% The entries of followed nodes the subscribers were told, by node and process.
    told_followed = #{} :: #{{node(), term()} => map()}
}).

-opaque t() :: #subs{}.

%% @doc Nobody subscribed.
-spec new() -> t().
new() -> #subs{}.

%% @doc Pid subscribes with Tag (monitored, once, to end its stream with it).
-spec add(pid(), reference(), t()) -> t().
add(Pid, Tag, S = #subs{tags = Tags}) ->
    _ = is_map_key(Pid, Tags) orelse monitor(process, Pid),
    S#subs{tags = Tags#{Pid => Tag}}.

%% @doc Whether Pid subscribed.
-spec member(pid(), t()) -> boolean().
member(Pid, #subs{tags = Tags}) -> is_map_key(Pid, Tags).

%% @doc Pid ended: its stream too.
-spec remove(pid(), t()) -> t().
remove(Pid, S = #subs{tags = Tags}) -> S#subs{tags = maps:remove(Pid, Tags)}.

%% @doc Whether anyone subscribed: nobody (the usual case) is checked first, so that no
%% entry is made for nobody.
-spec any(t()) -> boolean().
any(#subs{tags = Tags}) -> map_size(Tags) > 0.

%% @doc These entries, to every subscriber.
-spec publish([map()], t()) -> ok.
publish(Entries, #subs{tags = Tags}) ->
    _ = [Pid ! {riarc_session_verdict, Tag, E} || {Pid, Tag} <- maps:to_list(Tags), E <- Entries],
    ok.

%% @doc The entries of the system's processes on followed nodes (each with its `node'),
%% as known now: those that changed since the subscribers were last told, to each of
%% them. Nobody subscribed: nothing is told nor kept.
-spec publish_new([map()], t()) -> t().
publish_new(_Entries, S = #subs{tags = Tags}) when map_size(Tags) =:= 0 ->
    S;
publish_new(Entries, S = #subs{told_followed = Told}) ->
    New = [E || E = #{node := N, pid := P} <- Entries, maps:get({N, P}, Told, none) =/= E],
    ok = publish(New, S),
    S#subs{told_followed = maps:merge(Told, maps:from_list([{{N, P}, E} || E = #{node := N, pid := P} <- New]))}.
