%% @doc The dashboard's page: one self-contained HTML document (its CSS and script
%% inline, nothing fetched but `/events'), fed by the server-sent events of
%% {@link riarc_dashboard}. Text from the monitored system (pids, calls, reasons) is put
%% into the page as text nodes, never as markup.
%% ```
%% 1> Html = riarc_dashboard_page:html(<<"{\"type\":\"hello\"}">>).
%% 2> binary:match(Html, <<"new EventSource('/events')">>) =/= nomatch.
%% true
%% 3> binary:match(Html, [<<"http://">>, <<"https://">>]).
%% nomatch
%% '''
-module(riarc_dashboard_page).

-export([html/1]).

%% @doc The page, showing Snapshot (the JSON of a `hello' event, or `null') until the
%% first event: a page shows what is known from its first paint, live or not.
%% riarc_json escapes `<', `>' and `&', so the JSON cannot end the script element.
-spec html(binary()) -> binary().
html(Snapshot) ->
    <<(head())/binary, "<script id=\"snapshot\" type=\"application/json\">", Snapshot/binary,
      "</script>\n", (body())/binary>>.

head() ->
    <<"<!DOCTYPE html>
<html lang=\"en\"><head><meta charset=\"utf-8\">
<title>riarc dashboard</title>
<style>
body{font-family:system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
header{background:#1d2330;color:#fff;padding:12px 20px;display:flex;gap:16px;align-items:baseline}
header h1{font-size:20px;margin:0}
#state{font-size:14px;padding:2px 8px;border-radius:10px;background:#3a4357}
#state.live{background:#1f7a3d}#state.over{background:#5b5f6b}#state.lost{background:#a33}
main{padding:16px 20px}
.row{display:flex;flex-wrap:wrap;gap:12px;margin-bottom:16px}
.tile{background:#fff;border-radius:8px;padding:10px 14px;min-width:110px;box-shadow:0 1px 2px #0002}
.tile .n{font-size:26px;font-weight:600}.tile .l{font-size:12px;color:#667}
.accept .n{color:#1f7a3d}.reject .n{color:#b3261e}.error .n{color:#b3261e}
.inconclusive .n{color:#a66a00}.none .n{color:#667}
table{border-collapse:collapse;width:100%;background:#fff;box-shadow:0 1px 2px #0002;font-size:13px}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #e4e6eb;vertical-align:top}
th{background:#eceef2}td.v{font-weight:600}td.why,td.mfa{font-family:ui-monospace,monospace;word-break:break-all}
tr.reject td.v,tr.error td.v{color:#b3261e}tr.accept td.v{color:#1f7a3d}tr.inconclusive td.v{color:#a66a00}
#note{font-size:13px;margin-top:10px}.small{font-size:12px;color:#667;margin-top:6px}
</style></head>
<body>
">>.

body() ->
    <<"
<header><h1>riarc dashboard</h1><span id=\"state\">connecting</span><span id=\"session\"></span></header>
<main>
<div class=\"row\" id=\"counts\"></div>
<div class=\"row\" id=\"stats\"></div>
<h2 style=\"font-size:16px\">Latest verdicts</h2>
<table><thead><tr><th>pid</th><th>process (initial call)</th><th>verdict</th><th>why</th></tr></thead>
<tbody id=\"latest\"></tbody></table>
<div id=\"note\"></div>
<div class=\"small\">live events received: <span id=\"received\">0</span></div>
</main>
<script>
'use strict';
var MAX = 20, latest = [], stats = null, counts = {}, dropped = 0, received = 0;
function el(tag, cls, text) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}
function tile(parent, cls, n, label) {
  var t = el('div', 'tile ' + cls); t.appendChild(el('div', 'n', n)); t.appendChild(el('div', 'l', label));
  parent.appendChild(t);
}
function mb(bytes) { return (bytes / 1048576).toFixed(1) + ' MB'; }
function render() {
  var c = document.getElementById('counts'); c.textContent = '';
  var total = 0, keys = Object.keys(counts).sort();
  keys.forEach(function (k) { total += counts[k]; });
  tile(c, 'total', total, 'processes with a verdict');
  keys.forEach(function (k) { tile(c, k, counts[k], k === 'none' ? 'no verdict yet' : k); });
  var s = document.getElementById('stats'); s.textContent = '';
  if (stats) {
    tile(s, '', stats.tracers, 'tracers alive');
    tile(s, '', stats.events_per_s === null ? '-' : stats.events_per_s, 'events / s');
    tile(s, '', stats.events, stats.events_counted === 'routed' ? 'events traced' : 'events (tracers ended)');
    tile(s, '', mb(stats.memory), 'riarc memory');
    tile(s, stats.overload === null ? '' : 'error', stats.overload === null ? 'no' : stats.overload, 'overload');
  }
  tile(s, dropped ? 'inconclusive' : '', dropped, 'events dropped (slow page)');
  var b = document.getElementById('latest'); b.textContent = '';
  latest.forEach(function (e) {
    var r = el('tr', e.verdict);
    r.appendChild(el('td', 'pid', e.node ? e.pid + ' @' + e.node : e.pid));
    r.appendChild(el('td', 'mfa', e.mfa));
    r.appendChild(el('td', 'v', e.verdict));
    r.appendChild(el('td', 'why', e.why));
    b.appendChild(r);
    if (e.chart) {
      // riarc_chart's SVG: drawn by riarc, every term of the system's in it escaped.
      var c = el('tr', 'chart'), td = el('td', 'chart'), d = el('details'), s = el('summary', '', 'sequence chart');
      td.colSpan = 4; d.appendChild(s);
      var box = el('div', 'svg'); box.innerHTML = e.chart; d.appendChild(box);
      td.appendChild(d); c.appendChild(td); b.appendChild(c);
    }
  });
}
function state(cls, text) { var s = document.getElementById('state'); s.className = cls; s.textContent = text; }
function take(ev) {
  if (ev.counts) counts = ev.counts;
  if (ev.type === 'hello' || ev.type === 'summary') {
    latest = ev.latest.slice(0, MAX); stats = ev.stats;
    document.getElementById('session').textContent = 'session ' + ev.session + ' on ' + ev.node;
  }
  if (ev.type === 'verdict') { latest.unshift(ev.entry); latest = latest.slice(0, MAX); }
  if (ev.type === 'stats') { stats = ev.stats; dropped = ev.dropped; }
  if (ev.type === 'summary') {
    if (es) es.close(); state('over', 'run over'); dropped = ev.dropped;
    document.getElementById('note').textContent = ev.why + ': ' + ev.verdicts + ' verdict(s).';
  } else { state('live', 'live'); }
  document.getElementById('received').textContent = received;
  render();
}
var first = JSON.parse(document.getElementById('snapshot').textContent);
if (first) { take(first); state('', 'connecting'); }
var es = new EventSource('/events');
es.onmessage = function (m) { received += 1; take(JSON.parse(m.data)); };
es.onerror = function () {
  if (es.readyState === EventSource.CLOSED) state('lost', 'disconnected'); else state('lost', 'reconnecting');
};
render();
</script>
</body></html>
">>.
