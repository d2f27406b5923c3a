%% @doc Message sequence charts for people: why a partition was rejected (or its monitor
%% failed), drawn from its verdict entry's explanation. One lifeline per process of the
%% partition and per peer it exchanged messages with (or spawned, or was spawned by); its
%% last events top to bottom, up to the one that decided, which is highlighted; arrows for
%% sends and receives (a send and its receive joined into one arrow when both are in
%% view), marks for spawns, exits and timeouts; above each chart the verdict's sentence
%% (riarc_result:format_why/1, and an error's reason) and the property clause that decided
%% (`FILE:LINE', when the monitor named it).
%%
%% The page is one self-contained HTML file: inline SVG and CSS, no script, nothing fetched.
%% Every term in it is HTML-escaped and bounded (label/1): the trace's messages are the
%% monitored system's data, and a message holding `<script>' must show as text.
%% ```
%% 1> E = #{pid => p, mfa => {m, f, []}, verdict => reject, events => 3,
%%          explanation => #{process => p, mfa => {m, f, []}, monitor => #{},
%%                           last_events => [{init, p, sup, {m, f, []}}, {send, p, q, "<b>"},
%%                                           {recv, p, ok}],
%%                           deciding_event => {recv, p, ok}}}.
%% 2> riarc_chart:lifelines(maps:get(explanation, E)).
%% [p,sup,q]
%% 3> riarc_chart:escape(riarc_chart:label({send, p, q, "<b>"})).
%% "{send,p,q,&quot;&lt;b&gt;&quot;}"
%% 4> iolist_size(riarc_chart:html([E], #{})) > 1000.
%% true
%% '''
-module(riarc_chart).

-export([html/2, svg/1, caption/1, events_svg/2, trace_html/2, charted/1, lifelines/1,
         joins/1, label/1, label/2, process_label/1, mfa_label/1, cut_label/1, escape/1]).
-export_type([opts/0, chart_opts/0]).

%% `title': the page's heading; `note': a sentence shown under it (a cut, say).
-type opts() :: #{title => string(), note => string()}.
%% `deciding': the event to highlight (its last occurrence); `first_no': the number, in
%% the partition's trace, of the first event shown; `title': the SVG's accessible title.
-type chart_opts() :: #{deciding => riarc_event:traced(), first_no => pos_integer(),
                        title => string(), focus => [riarc_event:sid()]}.

%% Geometry, in pixels.
-define(LANE, 190).
-define(ROW, 30).
-define(TOP, 46).
-define(GUTTER, 56).
%% Characters of a term on the chart; the whole (up to ?TIP) in the tooltip.
-define(LABEL, 44).
-define(TIP, 240).

%%% Pages

%% @doc The page: one section per reject and error of Entries (the others are counted),
%% or a page saying there is none, so that a script can rely on the file.
-spec html([riarc_result:verdict_entry()], opts()) -> iodata().
html(Entries, Opts) ->
    Charted = charted(Entries),
    Title = maps:get(title, Opts, "riarc: rejects and errors"),
    Summary = case Charted of
                  [] -> ["<p class=\"none\">no rejects or errors: ", integer_to_list(length(Entries)),
                         " verdict(s), none of them a reject or an error.</p>\n"];
                  _ -> ["<p>", integer_to_list(length(Charted)), " of ",
                        integer_to_list(length(Entries)),
                        " verdict(s) are a reject or an error; one chart each.</p>\n"]
              end,
    page(Title, [note(Opts), Summary,
                 [section(E) || E <- Charted]]).

%% @doc The page of a whole trace (`riarc export --format html'): one chart of Events.
-spec trace_html([riarc_event:traced()], opts()) -> iodata().
trace_html(Events, Opts) ->
    Title = maps:get(title, Opts, "riarc: a trace"),
    page(Title, [note(Opts),
                 ["<p>", integer_to_list(length(Events)), " event(s).</p>\n"],
                 "<div class=\"chart\">", events_svg(Events, #{title => Title}), "</div>\n"]).

%% @doc The entries a page charts: the rejects and errors, in order.
-spec charted([riarc_result:verdict_entry()]) -> [riarc_result:verdict_entry()].
charted(Entries) ->
    [E || E = #{verdict := V} <- Entries, V =:= reject orelse V =:= error].

page(Title, Body) ->
    ["<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>",
     escape(Title), "</title>\n<style>\n", page_css(), "</style>\n</head>\n<body>\n<h1>",
     escape(Title), "</h1>\n", Body, "</body>\n</html>\n"].

note(#{note := N}) -> ["<p class=\"note\">", escape(N), "</p>\n"];
note(#{}) -> [].

section(E) ->
    ["<section class=\"verdict ", atom_to_list(maps:get(verdict, E)), "\">\n", caption(E),
     case E of
         #{explanation := #{last_events := [_ | _]}} ->
             ["<div class=\"chart\">", svg(E), "</div>\n"];
         #{} ->
             "<p class=\"note\">no events to chart: the verdict came without an explanation.</p>\n"
     end,
     "</section>\n"].

%% @doc The heading of an entry's chart, as an HTML fragment: the process and its
%% verdict, the why sentence, an error's reason, the deciding clause (`FILE:LINE') and
%% the monitor's own words, each escaped.
-spec caption(riarc_result:verdict_entry()) -> iodata().
caption(E = #{pid := Pid, mfa := MFA, verdict := V}) ->
    Why = string:trim(riarc_result:format_why(E)),
    Reason = case {V, E} of
                 {error, #{reason := R}} -> [para("reason", ["reason: ", label(R, ?TIP)])];
                 _ -> []
             end,
    Clause = case E of
                 #{why := #{clause := {File, Line}}} ->
                     [para("clause", ["decided by the property clause at ",
                                      flat("~ts:~b", [File, Line])])];
                 #{} -> []
             end,
    Words = case E of
                #{explanation := #{monitor := #{words := W}}} ->
                    [para("words", ["monitor: ", cut(chars(W), 2 * ?TIP)])];
                #{} -> []
            end,
    ["<h2>", escape(process(Pid, MFA)), " <span class=\"v\">",
     atom_to_list(V), "</span></h2>\n",
     [para("why", Why) || Why =/= "", not lists:prefix("reason:", Why)], Reason, Clause, Words].

%% A process as verdict lines name it, `<pid> M:F/Arity', with a recording's process as
%% the file names it (riarc_result would print a binary as <<"...">>).
process(Pid, MFA) ->
    [_, Call] = string:split(riarc_result:format_process(x, MFA), " "),
    process_label(Pid) ++ " " ++ Call.

para(Class, Text) ->
    ["<p class=\"", Class, "\">", escape(Text), "</p>\n"].

%%% Charts

%% @doc The chart of an entry's explanation, as an `<svg>' element with its own style
%% (the dashboard embeds it): its last events, the deciding one highlighted.
-spec svg(riarc_result:verdict_entry()) -> iodata().
svg(E = #{pid := Pid, mfa := MFA}) ->
    Ex = maps:get(explanation, E, #{last_events => []}),
    Events = maps:get(last_events, Ex, []),
    First = case E of
                #{why := #{event_no := N}} -> max(1, N - length(Events) + 1);
                #{events := N} -> max(1, N - length(Events) + 1);
                #{} -> 1
            end,
    Opts = #{first_no => First,
             title => process(Pid, MFA) ++ " " ++ atom_to_list(maps:get(verdict, E)),
             focus => [maps:get(process, Ex, Pid)]},
    events_svg(Events, case Ex of
                           #{deciding_event := D} -> Opts#{deciding => D};
                           #{} -> Opts
                       end).

%% @doc The lifelines of an explanation, left to right: the partition's own processes
%% (its process first, then the others as the events name them), then its peers.
-spec lifelines(#{process := riarc_event:sid(), last_events := [riarc_event:traced()],
                  atom() => term()}) -> [riarc_event:sid()].
lifelines(#{process := P, last_events := Es}) ->
    sids([P], Es).

sids(Focus, Es) ->
    Own = uniq(Focus ++ [riarc_event:origin(E) || E <- Es]),
    Peers = [S || E <- Es, S <- peers(E)],
    uniq(Own ++ Peers).

peers({send, _, To, _}) -> [To];
peers({spawn, _, Child, _}) -> [Child];
peers({init, _, Parent, _}) when Parent =/= undefined -> [Parent];
peers(_) -> [].

uniq(L) -> uniq(L, #{}).
uniq([], _) -> [];
uniq([H | T], Seen) when is_map_key(H, Seen) -> uniq(T, Seen);
uniq([H | T], Seen) -> [H | uniq(T, Seen#{H => true})].

%% @doc A chart of Events as an `<svg>' element (the whole trace's, or an entry's).
-spec events_svg([riarc_event:traced()], chart_opts()) -> iodata().
events_svg(Events, Opts) ->
    Lanes = sids(maps:get(focus, Opts, []), Events),
    Lane = maps:from_list(lists:zip(Lanes, lists:seq(0, length(Lanes) - 1))),
    Indexed = lists:zip(lists:seq(0, length(Events) - 1), Events),
    Joined = joins(Events),
    Deciding = deciding_row(Indexed, Opts),
    Width = ?GUTTER + max(1, length(Lanes)) * ?LANE + 120,
    Height = ?TOP + (length(Events) + 1) * ?ROW,
    First = maps:get(first_no, Opts, 1),
    ["<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"riarc-msc\" width=\"", int(Width),
     "\" height=\"", int(Height), "\" viewBox=\"0 0 ", int(Width), " ", int(Height),
     "\" role=\"img\">\n<title>", escape(maps:get(title, Opts, "message sequence chart")),
     "</title>\n<style>\n", svg_css(), "</style>\n",
     [lifeline(S, I, Height) || {S, I} <- lists:zip(Lanes, lists:seq(0, length(Lanes) - 1))],
     %% Each row made a binary at once: a chart of a long trace is not kept as text lists.
     [unicode:characters_to_binary(row(K, E, #{lane => Lane, joined => Joined, deciding => K =:= Deciding,
                                               no => First + K, width => Width}))
      || {K, E} <- Indexed],
     "</svg>\n"].

%% The row of the deciding event: its last occurrence (the explanation ends with it).
deciding_row(Indexed, #{deciding := D}) ->
    lists:foldl(fun({K, E}, _) when E =:= D -> K; (_, Acc) -> Acc end, none, Indexed);
deciding_row(_, _) ->
    none.

%% @doc Sends joined to their receives, by position in Events (from 0): a receive of Msg
%% by To takes the oldest send of Msg to To before it that no receive took yet.
%% `{send, S} => R' and `{recv, R} => S' for each pair.
-spec joins([riarc_event:traced()]) -> #{{send | recv, non_neg_integer()} => non_neg_integer()}.
joins(Events) ->
    Indexed = lists:zip(lists:seq(0, length(Events) - 1), Events),
    {_, Pairs} = lists:foldl(
        fun({K, {send, _, To, Msg}}, {Open, Ps}) ->
                {maps:update_with({To, Msg}, fun(Q) -> queue:in(K, Q) end, queue:from_list([K]), Open), Ps};
           ({K, {recv, P, Msg}}, {Open, Ps}) ->
                case maps:find({P, Msg}, Open) of
                    {ok, Q} ->
                        case queue:out(Q) of
                            {{value, S}, Q1} -> {Open#{{P, Msg} := Q1}, Ps#{{send, S} => K, {recv, K} => S}};
                            {empty, _} -> {Open, Ps}
                        end;
                    error -> {Open, Ps}
                end;
           (_, Acc) -> Acc
        end, {#{}, #{}}, Indexed),
    Pairs.

lifeline(S, I, Height) ->
    X = x(I),
    Name = process_label(S),
    ["<g class=\"lifeline\"><title>", escape(label(S, ?TIP)), "</title>",
     "<rect class=\"head\" x=\"", int(X - ?LANE div 2 + 8), "\" y=\"8\" width=\"", int(?LANE - 16),
     "\" height=\"22\" rx=\"4\"/>",
     "<text class=\"lname\" x=\"", int(X), "\" y=\"23\">", escape(Name), "</text>",
     "<line class=\"life\" x1=\"", int(X), "\" y1=\"30\" x2=\"", int(X), "\" y2=\"", int(Height - 6),
     "\"/></g>\n"].

row(K, E, C = #{deciding := Dec, no := No, width := W}) ->
    Y = y(K),
    Kind = atom_to_list(riarc_event:kind(E)),
    Class = ["ev ", Kind, [" deciding" || Dec]],
    ["<g class=\"", Class, "\"><title>", escape(label(E, ?TIP)), "</title>",
     [["<rect class=\"hl\" x=\"0\" y=\"", int(Y - ?ROW div 2), "\" width=\"", int(W),
       "\" height=\"", int(?ROW), "\"/>"] || Dec],
     "<text class=\"no\" x=\"4\" y=\"", int(Y + 4), "\">#", int(No), "</text>",
     draw(K, E, C),
     [["<text class=\"mark\" x=\"", int(W - 112), "\" y=\"", int(Y + 4), "\">&#8656; decided</text>"]
      || Dec],
     "</g>\n"].

draw(K, {send, From, To, Msg}, C = #{joined := J}) ->
    X1 = lx(From, C),
    X2 = lx(To, C),
    Y1 = y(K),
    Y2 = case J of #{{send, K} := R} -> y(R); #{} -> Y1 end,
    Text = ["! ", label(Msg)],
    case X1 =:= X2 of
        true -> [loop(X1, Y1), text(X1 + 28, Y1 - 4, "start", Text)];
        false -> [arrow(X1, Y1, X2, Y2, "msg"), text((X1 + X2) div 2, Y1 - 5, "middle", Text)]
    end;
draw(K, {recv, P, Msg}, C = #{joined := J}) ->
    X = lx(P, C),
    Y = y(K),
    case J of
        #{{recv, K} := _} ->
            %% The arrow of its send ends here: a dot, the message named once.
            [dot(X, Y, "joined"), text(X + 8, Y + 4, "start", ["? ", label(Msg)])];
        #{} ->
            %% From a process out of view: a short arrow in from the left.
            [arrow(X - ?LANE div 2 + 10, Y, X, Y, "msg in"), text(X + 8, Y + 4, "start", ["? ", label(Msg)])]
    end;
draw(K, {spawn, Parent, Child, MFA}, C) ->
    X1 = lx(Parent, C),
    X2 = lx(Child, C),
    Y = y(K),
    Text = ["spawn ", mfa(MFA)],
    case X1 =:= X2 of
        true -> [dot(X1, Y, "spawn"), text(X1 + 8, Y + 4, "start", Text)];
        false -> [arrow(X1, Y, X2, Y, "spawn"), text((X1 + X2) div 2, Y - 5, "middle", Text)]
    end;
draw(K, {init, Child, _Parent, MFA}, C) ->
    mark(K, Child, "init", ["init ", mfa(MFA)], C);
draw(K, {attached, P, MFA}, C) ->
    mark(K, P, "init", ["attached ", mfa(MFA)], C);
draw(K, {exit, P, Reason}, C) ->
    X = lx(P, C),
    Y = y(K),
    ["<path class=\"exit\" d=\"M", int(X - 6), " ", int(Y - 6), " L", int(X + 6), " ", int(Y + 6),
     " M", int(X + 6), " ", int(Y - 6), " L", int(X - 6), " ", int(Y + 6), "\"/>",
     text(X + 10, Y + 4, "start", ["exit ", label(Reason)])];
draw(K, {timeout, P}, C) ->
    mark(K, P, "timeout", "timeout", C);
%% riarc's own: P set a timer to send Dest the atom `timeout' (riarc_event's timer_event()).
draw(K, {timer_timeout, P, Dest}, C) ->
    mark(K, P, "timeout", ["timer: timeout to ", process_label(Dest)], C);
%% riarc's own: P's call that may take away what the trace shows (cut_event()).
draw(K, {cut, P, Why}, C) ->
    mark(K, P, "cut", cut_label(Why), C).

%% @doc What cut a process's view, in a few words: its call, or what a look found.
-spec cut_label(term()) -> string().
cut_label({Kind, _}) when Kind =:= trace; Kind =:= trace_pattern -> "cut: " ++ atom_to_list(Kind) ++ " call";
cut_label({flags_removed, _}) -> "cut: flags taken";
cut_label({tracer_replaced, _}) -> "cut: tracer replaced";
cut_label({patterns_changed, _}) -> "cut: patterns changed";
cut_label(_) -> "cut".

mark(K, P, Class, Text, C) ->
    X = lx(P, C),
    Y = y(K),
    [dot(X, Y, Class), text(X + 8, Y + 4, "start", Text)].

lx(S, #{lane := Lane}) -> x(maps:get(S, Lane, 0)).
x(I) -> ?GUTTER + I * ?LANE + ?LANE div 2.
y(K) -> ?TOP + (K + 1) * ?ROW.

dot(X, Y, Class) ->
    ["<circle class=\"", Class, "\" cx=\"", int(X), "\" cy=\"", int(Y), "\" r=\"4\"/>"].

text(X, Y, Anchor, Text) ->
    ["<text class=\"lbl\" x=\"", int(X), "\" y=\"", int(Y), "\" text-anchor=\"", Anchor, "\">",
     escape(Text), "</text>"].

%% An arrow with its head drawn as a polygon: no <marker> ids, which would clash when
%% several charts share a page.
arrow(X1, Y1, X2, Y2, Class) ->
    DX = X2 - X1,
    DY = Y2 - Y1,
    Len = max(1.0, math:sqrt(DX * DX + DY * DY)),
    UX = DX / Len,
    UY = DY / Len,
    BX = X2 - 9 * UX,
    BY = Y2 - 9 * UY,
    P = fun(A, B) -> [num(A), ",", num(B)] end,
    ["<line class=\"", Class, "\" x1=\"", int(X1), "\" y1=\"", int(Y1), "\" x2=\"", num(BX),
     "\" y2=\"", num(BY), "\"/>",
     "<polygon class=\"head ", Class, "\" points=\"", P(X2, Y2), " ", P(BX - 4 * UY, BY + 4 * UX), " ",
     P(BX + 4 * UY, BY - 4 * UX), "\"/>"].

%% A message a process sends itself.
loop(X, Y) ->
    ["<path class=\"msg\" d=\"M", int(X), " ", int(Y - 6), " h22 v12 h-14\"/>",
     "<polygon class=\"head msg\" points=\"", int(X), ",", int(Y + 6), " ", int(X + 8), ",",
     int(Y + 2), " ", int(X + 8), ",", int(Y + 10), "\"/>"].

int(I) -> integer_to_list(I).
num(F) -> float_to_list(float(F), [{decimals, 1}, compact]).

mfa(MFA) -> mfa_label(MFA).

%% @doc An initial call as verdict lines show it, `M:F/Arity', bounded.
-spec mfa_label(riarc_event:mfa_args()) -> string().
mfa_label({M, F, A}) when is_list(A) ->
    lists:flatten([label(M), ":", label(F), "/", integer_to_list(length(A))]);
mfa_label(Other) -> label(Other).

%% @doc A process's name on a chart: a pid as the VM prints it, a process of a recording
%% as the file names it (the binary format gives pids as text), bounded.
-spec process_label(riarc_event:sid()) -> string().
process_label(S) when is_binary(S) ->
    case unicode:characters_to_list(S) of
        L when is_list(L) -> cut(L, ?LABEL);
        _ -> label(S)
    end;
process_label({riarc_unknown_atom, B}) when is_binary(B) -> process_label(B);
process_label(S) -> label(S).

%%% Bounded terms and escaping

%% @doc A term on one line as a chart shows it (riarc_term_show, at most 8 elements of a
%% list, tuple or map, 6 levels deep, binaries and strings at 48), cut at 44 characters
%% (`...' marks what was left out).
-spec label(term()) -> string().
label(T) -> label(T, ?LABEL).

%% @doc label/1, cut at Max characters.
-spec label(term(), pos_integer()) -> string().
label(T, Max) ->
    cut(riarc_term_show:show(T, #{items => 8, depth => 6, bytes => 48, chars => 48, width => Max}), Max).

cut(S, Max) ->
    case string:length(S) > Max of
        true -> string:slice(S, 0, Max - 3) ++ "...";
        false -> S
    end.

escape(Text) ->
    lists:flatmap(fun($&) -> "&amp;";
                     ($<) -> "&lt;";
                     ($>) -> "&gt;";
                     ($") -> "&quot;";
                     ($') -> "&#39;";
                     (C) -> [C]
                  end, chars(Text)).

chars(Text) ->
    case unicode:characters_to_list(Text) of
        L when is_list(L) -> L;
        _ -> lists:flatten(io_lib:format("~0tp", [Text]))
    end.

flat(Fmt, Args) -> lists:flatten(io_lib:format(Fmt, Args)).

%%% Style

page_css() ->
    "body{font-family:system-ui,sans-serif;margin:1.5em;color:#1b1b1b;background:#fff}\n"
    "h1{font-size:1.3em}h2{font-size:1.05em;font-family:ui-monospace,monospace;margin:0 0 .3em}\n"
    "section.verdict{border:1px solid #ccc;border-radius:6px;padding:.8em 1em;margin:1em 0}\n"
    "section.reject{border-left:6px solid #c0392b}section.error{border-left:6px solid #8e44ad}\n"
    ".v{color:#c0392b}p{margin:.25em 0;font-family:ui-monospace,monospace;font-size:.9em;"
    "white-space:pre-wrap}\n"
    "p.clause{font-weight:bold}p.note,p.none{font-family:system-ui,sans-serif}\n"
    ".chart{overflow:auto;margin-top:.6em}\n".

%% In each SVG itself: one the dashboard embeds, or one saved on its own, looks the same.
svg_css() ->
    ".riarc-msc{font-family:ui-monospace,monospace;font-size:11px;background:#fff}\n"
    ".riarc-msc .head{fill:#eef2f7;stroke:#5b6b7f}.riarc-msc .lname{text-anchor:middle;"
    "font-weight:bold}\n"
    ".riarc-msc .life{stroke:#9aa5b1;stroke-dasharray:4 3}\n"
    ".riarc-msc line.msg,.riarc-msc path.msg{stroke:#1f5fa8;stroke-width:1.4;fill:none}"
    ".riarc-msc polygon.msg{fill:#1f5fa8}\n"
    ".riarc-msc line.spawn{stroke:#2e7d32;stroke-dasharray:5 3}.riarc-msc polygon.spawn{fill:#2e7d32}\n"
    ".riarc-msc circle{fill:#5b6b7f}.riarc-msc circle.init,.riarc-msc circle.spawn{fill:#2e7d32}"
    ".riarc-msc circle.timeout{fill:#e67e22}.riarc-msc circle.cut{fill:#c0392b}\n"
    ".riarc-msc path.exit{stroke:#c0392b;stroke-width:2}\n"
    ".riarc-msc .no{fill:#888}.riarc-msc .hl{fill:#fde2e1}\n"
    ".riarc-msc .deciding .lbl,.riarc-msc .mark{font-weight:bold;fill:#c0392b}\n".
