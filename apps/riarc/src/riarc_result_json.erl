%% @doc A verdict entry (riarc_result) as JSON: the one conversion of a verdict for
%% machines, the object of `--format json' lines (riarc_cli_report) and of the dashboard.
%% riarc_json takes maps, lists, binaries, atoms and numbers only, so the process, its
%% initial call, the deciding event and the monitor's state are given as text here, the
%% terms bounded as the text explanation bounds them (riarc_term_show).
%%
%% The object: `pid' (as the verdict line names it), `node' (the pid's node; null for a
%% process a trace names by text), `mfa' (`M:F/Arity'), `verdict', `events' (how many of
%% the partition's events were analysed), and when the entry has them: `why' (`text', the
%% why line's sentence, with `event_no', `event' and the monitor's `words', or
%% `ended_after'), `explanation' (`events' as text, oldest first, `deciding_event', the
%% monitor's `words' and `state') and `reason' (of an error or inconclusive verdict).
%% ```
%% 1> E = riarc_result:entry(p1, {riarc_demo_pqr, p, []}, error, 3, {crashed, badarith}).
%% #{events => 3,mfa => {riarc_demo_pqr,p,[]},pid => p1,reason => {crashed,badarith},verdict => error}
%% 2> riarc_result_json:entry(E).
%% #{events => 3,mfa => <<"riarc_demo_pqr:p/0">>,node => null,pid => <<"p1">>,
%%   reason => <<"{crashed,badarith}">>,verdict => error,
%%   why => #{text => <<"reason: {crashed,badarith}">>}}
%% 3> riarc_result_json:counts([E, E#{verdict := accept}]).
%% #{accept => 1,error => 1}
%% '''
-module(riarc_result_json).

-export([entry/1, counts/1, text/1]).

%% @doc The JSON object of one verdict entry.
-spec entry(riarc_result:verdict_entry()) -> #{atom() => riarc_json:json()}.
entry(V = #{pid := P, mfa := MFA, verdict := Verdict, events := N}) ->
    Base = #{pid => sid(P), node => node_of(P), mfa => text(riarc_result:format_mfa(MFA)),
             verdict => Verdict, events => N},
    maps:merge(Base, maps:from_list(why(V) ++ explanation(V) ++ reason(V))).

%% @doc How many verdicts of each kind: `#{accept => 6, none => 1}'.
-spec counts([riarc_result:verdict_entry()]) -> #{riarc_monitor:verdict() => pos_integer()}.
counts(Vs) ->
    lists:foldl(fun(#{verdict := V}, M) -> maps:update_with(V, fun(K) -> K + 1 end, 1, M) end,
                #{}, Vs).

%% @doc Text (a string or iodata of characters) as a JSON string: a UTF-8 binary.
-spec text(unicode:chardata()) -> binary().
text(Chars) ->
    case unicode:characters_to_binary(Chars) of
        B when is_binary(B) -> B;
        %% Bytes that are not UTF-8 (a name from a foreign trace) are shown, not refused.
        _ -> unicode:characters_to_binary(riarc_term_show:show(Chars))
    end.

%% A trace in the binary format names processes by text, which the verdict line prints
%% as it is; a pid is its text, and anything else as the verdict line shows it.
sid(P) when is_binary(P) -> text(P);
sid(P) -> text(riarc_result:format_sid(P)).

node_of(P) when is_pid(P) -> node(P);
node_of(_) -> null.

why(V = #{why := W}) ->
    Fields = maps:with([event_no, ended_after], W),
    Event = [{event, show(E)} || #{event := E} <- [W]],
    Words = [{words, text(Ws)} || #{words := Ws} <- [W]],
    [{why, maps:merge(Fields, maps:from_list([{text, why_text(V)} | Event ++ Words]))}];
why(V = #{reason := _}) ->
    [{why, #{text => why_text(V)}}];
why(_) ->
    [].

%% The why line without its indentation.
why_text(V) ->
    text(string:trim(riarc_result:format_why(V), leading)).

explanation(#{explanation := #{last_events := Es, deciding_event := D, monitor := M}}) ->
    Ex = #{events => [show(E) || E <- Es], deciding_event => show(D)},
    Words = [{words, text(W)} || #{words := W} <- [M]],
    State = [{state, show(S)} || #{state := S} <- [M]],
    [{explanation, maps:merge(Ex, maps:from_list(Words ++ State))}];
explanation(_) ->
    [].

reason(#{reason := R}) -> [{reason, show(R)}];
reason(_) -> [].

show(T) -> text(riarc_term_show:show(T)).
