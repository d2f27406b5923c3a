%% @doc The HTML of the reports: one self-contained page (inline style, and a few lines of
%% inline JavaScript that sort a table when its header is clicked; nothing is fetched from
%% the network), a reading guide at the top, real tables and figures.
%%
%% ```
%% 1> Page = riarc_bench_html:page("Demo", "How to read this page.",
%%        [riarc_bench_html:table([{"set-up", text}, {"MRT (ms)", num}],
%%                                [[<<"baseline">>, {"5.5 [5.1, 6.0]", 5.5}]])]).
%% 2> file:write_file("/tmp/demo.html", Page).
%% ok
%% '''
-module(riarc_bench_html).

-export([page/3, table/2, figure/2, esc/1, ci_cell/2, change_cell/1]).

-export_type([cell/0]).

%% A table cell: its text (escaped here), or {Text, SortKey} when the text does not sort
%% as it should (e.g. "5.5 [5.1, 6.0]" sorts by 5.5), or {raw, Html} for markup.
-type cell() :: iodata() | {iodata(), number() | string()} | {raw, iodata()}.

-define(STYLE,
        "body{font-family:system-ui,sans-serif;max-width:1500px;margin:auto;padding:0 1em;color:#222}"
        "h1{font-size:1.5em}h2{margin-top:1.6em;border-bottom:1px solid #ccc}"
        ".guide{background:#f4f7fb;border-left:4px solid #0072B2;padding:.6em 1em;max-width:60em}"
        "table{border-collapse:collapse;font-size:88%;margin:.5em 0}"
        "th,td{border:1px solid #ccc;padding:3px 7px;text-align:right;white-space:nowrap}"
        "td.t,th.t{text-align:left}th{background:#eef;cursor:pointer;position:sticky;top:0}"
        "th[data-dir=asc]::after{content:' \\25B2'}th[data-dir=desc]::after{content:' \\25BC'}"
        ".ns{color:#777}.sig{font-weight:bold}.small{color:#a60}.out{color:#D55E00}"
        ".figs{display:flex;flex-wrap:wrap;gap:8px}figure{margin:0;width:49%}"
        "figure img{width:100%;height:auto;border:1px solid #eee}figcaption{font-size:85%;color:#555}"
        ".scroll{overflow-x:auto;max-width:100%}"
        "pre{background:#f7f7f7;padding:.5em;overflow-x:auto}").

%% Click a header to sort by it; click again to reverse. Cells sort by data-sort when
%% given, numerically when both keys are numbers.
-define(SCRIPT,
        "function sk(td){var s=td.getAttribute('data-sort');if(s===null)s=td.textContent;"
        "var f=parseFloat(s);return isNaN(f)?s:f}"
        "document.querySelectorAll('table.sortable th').forEach(function(th){"
        "th.addEventListener('click',function(){var t=th.closest('table'),b=t.tBodies[0],"
        "i=Array.prototype.indexOf.call(th.parentNode.children,th),asc=th.getAttribute('data-dir')!=='asc';"
        "t.querySelectorAll('th').forEach(function(h){h.removeAttribute('data-dir')});"
        "th.setAttribute('data-dir',asc?'asc':'desc');var r=Array.prototype.slice.call(b.rows);"
        "r.sort(function(x,y){var a=sk(x.cells[i]),c=sk(y.cells[i]);"
        "if(typeof a==='number'&&typeof c==='number')return asc?a-c:c-a;"
        "return asc?String(a).localeCompare(String(c)):String(c).localeCompare(String(a))});"
        "r.forEach(function(e){b.appendChild(e)})})});").

%% @doc A whole page as UTF-8: title, reading guide (HTML), body.
-spec page(string(), iodata(), iodata()) -> binary().
page(Title, Guide, Body) ->
    unicode:characters_to_binary(
    ["<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
     "<meta name=\"viewport\" content=\"width=device-width\"><title>", esc(Title), "</title>\n"
     "<style>", ?STYLE, "</style></head><body>\n<h1>", esc(Title), "</h1>\n",
     "<p class=\"guide\"><b>How to read this page.</b> ", Guide, "</p>\n",
     Body, "\n<script>", ?SCRIPT, "</script>\n</body></html>\n"]).

%% @doc A sortable table. Columns are {Header, text | num}: text columns are left-aligned.
-spec table([{iodata(), text | num}], [[cell()]]) -> iodata().
table(Cols, Rows) ->
    Class = fun(text) -> " class=\"t\""; (num) -> "" end,
    Kinds = [K || {_, K} <- Cols],
    ["<div class=\"scroll\"><table class=\"sortable\"><thead><tr>",
     [["<th", Class(K), " title=\"click to sort\">", esc(H), "</th>"] || {H, K} <- Cols],
     "</tr></thead>\n<tbody>\n",
     [["<tr>", [td(C, Class(K)) || {C, K} <- lists:zip(Row, Kinds)], "</tr>\n"] || Row <- Rows],
     "</tbody></table></div>\n"].

td({raw, Html}, Class) -> ["<td", Class, ">", Html, "</td>"];
td({Text, Key}, Class) when is_number(Key) ->
    ["<td", Class, " data-sort=\"", io_lib:format("~p", [Key]), "\">", esc(Text), "</td>"];
td({Text, Key}, Class) when is_list(Key) ->
    ["<td", Class, " data-sort=\"", esc(Key), "\">", esc(Text), "</td>"];
td(Text, Class) -> ["<td", Class, ">", esc(Text), "</td>"].

%% @doc An image file (relative to the page) with its caption.
-spec figure(string(), iodata()) -> iodata().
figure(Src, Caption) ->
    ["<figure><img src=\"", esc(Src), "\" alt=\"", esc(Caption), "\"><figcaption>", esc(Caption),
     "</figcaption></figure>\n"].

%% @doc Escapes text for HTML.
-spec esc(iodata() | atom() | number()) -> iodata().
esc(A) when is_atom(A) -> esc(atom_to_list(A));
esc(N) when is_integer(N) -> integer_to_list(N);
esc(F) when is_float(F) -> float_to_list(F, [short]);
esc(S) ->
    [case C of
         $< -> "&lt;"; $> -> "&gt;"; $& -> "&amp;"; $" -> "&quot;"; _ -> C
     end || C <- unicode:characters_to_list(S)].

%% @doc A table cell for a median and its interval (riarc_bench_ci:format/2); with too
%% few runs for an interval, the median alone in the colour the page's guide explains
%% once (not "n too small" in every cell).
-spec ci_cell(riarc_bench_ci:summary(), number()) -> cell().
ci_cell(#{enough := false, median := M}, Scale) ->
    {raw, ["<span class=\"small\">", esc(riarc_bench_ci:num(M * Scale)), "</span>"]};
ci_cell(S, Scale) -> riarc_bench_ci:format(S, Scale).

%% @doc A table cell for a comparison with the baseline, as a ratio (2.00x), marked
%% significant, not significant, or from too few runs to tell.
-spec change_cell(riarc_bench_ci:comparison()) -> cell().
change_cell(C) ->
    Class = case C of
                #{enough := false} -> "small";
                #{significant := true} -> "sig";
                _ -> "ns"
            end,
    {raw, ["<span class=\"", Class, "\">", esc(riarc_bench_ci:format_ratio(C)), "</span>"]}.
