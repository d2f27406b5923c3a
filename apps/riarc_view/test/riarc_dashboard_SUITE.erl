%% The dashboard in a real browser (Debian's headless chromium): a run with its
%% dashboard, the page opened once verdicts have arrived, then driven over the DevTools
%% protocol (--remote-debugging-pipe) to see that it shows those verdicts, that a verdict
%% reached after it opened appears without a reload (the server-sent events), and that
%% it says the run is over once the session ends. `chromium --dump-dom' checks the page
%% as served. Without chromium (scripts/ensure-toolchain --test installs it) the cases
%% are skipped, saying so. RIARC_DASHBOARD_PNG=FILE saves the live page's screenshot
%% (docs/img/dashboard.png is one).
-module(riarc_dashboard_SUITE).

-include_lib("stdlib/include/assert.hrl").
-include_lib("common_test/include/ct.hrl").

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1]).
-export([live_page/1, dump_dom/1, chart_page/1]).
-export([system/2, worker/0]).

-spec all() -> [atom()].
all() -> [dump_dom, live_page, chart_page].

-spec suite() -> list().
suite() -> [{timetrap, {minutes, 3}}].

-spec init_per_suite(list()) -> list() | {skip, string()}.
init_per_suite(Config) ->
    case os:find_executable(os:getenv("CHROMIUM", "chromium")) of
        false ->
            {skip, "chromium is not installed, so the page is not checked in a browser "
                   "(scripts/ensure-toolchain --test, or apt-get install -y chromium)"};
        Chrome ->
            {ok, _} = application:ensure_all_started(riarc_view),
            [{chrome, Chrome} | Config]
    end.

-spec end_per_suite(list()) -> ok.
end_per_suite(_Config) ->
    ok.

%%% The system: N workers that each wait for `ok' (exit normal) or `crash'.

-spec system(pid(), pos_integer()) -> ok.
system(Test, N) ->
    Ws = [spawn_link(?MODULE, worker, []) || _ <- lists:seq(1, N)],
    process_flag(trap_exit, true),
    Test ! {workers, self(), Ws},
    [receive {'EXIT', W, _} -> ok end || W <- Ws],
    ok.

-spec worker() -> ok.
worker() ->
    receive
        ok -> ok;
        crash -> exit({crashed, lost_update})
    end.

spec() ->
    fun({?MODULE, worker, _}) ->
            {ok, fun M({exit, _, normal}) -> accept;
                     M({exit, _, _}) -> reject;
                     M(_) -> M
                 end};
       (_) -> undefined
    end.

start(N) ->
    {ok, S} = riarc:start({?MODULE, system, [self(), N]}, spec(), #{log => false}),
    Ws = receive {workers, _, W} -> W after 10000 -> error(no_workers) end,
    {ok, D} = riarc_dashboard:start(S, #{port => 0}),
    Tag = make_ref(),
    _ = riarc_session:subscribe(S, self(), Tag),
    {S, D, Ws, Tag}.

%% Sends each worker its word and waits, as a subscriber of the session, for its verdict.
release(Words, Tag) ->
    _ = [W ! Word || {W, Word} <- Words],
    [receive {riarc_session_verdict, Tag, #{pid := W}} -> ok after 10000 -> error({no_verdict, W}) end
     || {W, _} <- Words],
    ok.

pid_text(P) -> pid_to_list(P).

%%% Cases

%% The page as served, rendered: `chromium --dump-dom' after two verdicts shows them.
-spec dump_dom(list()) -> ok.
dump_dom(Config) ->
    {S, D, [W1, W2, W3], Tag} = start(3),
    ok = release([{W1, crash}, {W2, ok}], Tag),
    Profile = filename:join(?config(priv_dir, Config), "dump-profile"),
    Dom = chromium(?config(chrome, Config),
                   ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--user-data-dir=" ++ Profile, "--dump-dom", riarc_dashboard:url(D)]),
    Esc = fun(P) -> "&lt;" ++ string:trim(pid_text(P), both, "<>") ++ "&gt;" end,
    ?assertNotEqual(nomatch, string:find(Dom, Esc(W1)), Dom),
    ?assertNotEqual(nomatch, string:find(Dom, Esc(W2)), Dom),
    ?assertNotEqual(nomatch, string:find(Dom, "<td class=\"v\">reject</td>"), Dom),
    ?assertNotEqual(nomatch, string:find(Dom, "<td class=\"v\">accept</td>"), Dom),
    ?assertNotEqual(nomatch, string:find(Dom, "riarc_dashboard_SUITE:worker/0"), Dom),
    W3 ! ok,
    {ok, _} = riarc_session:finish(S, 10000),
    ok = riarc_dashboard:wait(D, 10000).

%% The live page: verdicts shown, one more appears through the event stream, the end.
-spec live_page(list()) -> ok.
live_page(Config) ->
    N = 12,
    {S, D, Ws, Tag} = start(N),
    {Before, [Live | After]} = lists:split(8, Ws),
    ok = release([{W, case I rem 3 of 0 -> crash; _ -> ok end}
                  || {I, W} <- lists:zip(lists:seq(1, 8), Before)], Tag),
    B = browser_open(?config(chrome, Config), filename:join(?config(priv_dir, Config), "profile")),
    try
        Page = page_open(B, riarc_dashboard:url(D)),
        %% Shown once the stream is connected (its hello event counted).
        Text = page_wait(Page, "document.getElementById('received').textContent !== '0' && "
                               "document.querySelectorAll('#latest tr:not(.chart)').length === 8"),
        %% Each reject shows its sequence chart.
        _ = page_wait(Page, "document.querySelectorAll('#latest tr.chart svg.riarc-msc').length === 2"),
        _ = [?assertNotEqual(nomatch, string:find(Text, pid_text(W)), Text) || W <- Before],
        ?assertNotEqual(nomatch, string:find(Text, "riarc_dashboard_SUITE:worker/0"), Text),
        ?assertNotEqual(nomatch, string:find(Text, "reject"), Text),
        ?assertNotEqual(nomatch, string:find(Text, "{crashed,lost_update}"), Text),
        %% A verdict reached now reaches the open page.
        ok = release([{Live, crash}], Tag),
        Text2 = page_wait(Page, "document.getElementById('latest').innerText.indexOf('"
                                ++ pid_text(Live) ++ "') >= 0"),
        ?assertNotEqual(nomatch, string:find(Text2, "live"), Text2),
        Png = screenshot(Page),
        ok = file:write_file(filename:join(?config(priv_dir, Config), "dashboard.png"), Png),
        _ = case os:getenv("RIARC_DASHBOARD_PNG") of
                false -> ok;
                File -> ok = file:write_file(File, Png)
            end,
        %% The run ends: the page says so.
        _ = [W ! ok || W <- After],
        {ok, _} = riarc_session:finish(S, 10000),
        Text3 = page_wait(Page, "document.getElementById('state').textContent === 'run over'"),
        ?assertNotEqual(nomatch, string:find(Text3, "the session ended: 12 verdict(s)"), Text3),
        ok = riarc_dashboard:wait(D, 10000)
    after
        browser_close(B)
    end.

%% A reject's sequence chart (riarc_chart, what --chart writes) rendered by the browser:
%% the SVG is drawn with a lifeline for the worker, its deciding event (its crash)
%% marked. RIARC_CHART_PNG=FILE saves its screenshot (docs/img/chart.png is one).
-spec chart_page(list()) -> ok.
chart_page(Config) ->
    {S, D, [W1, W2], Tag} = start(2),
    ok = release([{W1, crash}, {W2, ok}], Tag),
    {ok, #{verdicts := Vs}} = riarc_session:finish(S, 10000),
    ok = riarc_dashboard:wait(D, 10000),
    [Reject] = [V || V = #{verdict := reject} <- Vs],
    File = filename:join(?config(priv_dir, Config), "chart.html"),
    ok = file:write_file(File, riarc_chart:html([Reject], #{})),
    Flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--user-data-dir=" ++ filename:join(?config(priv_dir, Config), "chart-profile")],
    Dom = chromium(?config(chrome, Config), Flags ++ ["--dump-dom", "file://" ++ File]),
    ?assertNotEqual(nomatch, string:find(Dom, "<svg"), Dom),
    ?assertNotEqual(nomatch, string:find(Dom, "deciding"), Dom),
    ?assertNotEqual(nomatch, string:find(Dom, "decided</text>"), Dom),
    ?assertNotEqual(nomatch, string:find(Dom, "{crashed,lost_update}"), Dom),
    Png = filename:join(?config(priv_dir, Config), "chart.png"),
    _ = chromium(?config(chrome, Config), Flags ++ ["--window-size=1000,640", "--screenshot=" ++ Png,
                                                    "file://" ++ File]),
    {ok, <<137, "PNG", _/binary>> = Bin} = file:read_file(Png),
    _ = case os:getenv("RIARC_CHART_PNG") of
            false -> ok;
            Out -> ok = file:write_file(Out, Bin)
        end,
    ok.

%%% chromium

%% Runs chromium to its end, its standard output.
chromium(Chrome, Args) ->
    Port = open_port({spawn_executable, Chrome}, [{args, Args}, binary, exit_status, stderr_to_stdout]),
    collect(Port, <<>>).

collect(Port, Acc) ->
    receive
        {Port, {data, D}} -> collect(Port, <<Acc/binary, D/binary>>);
        {Port, {exit_status, 0}} -> unicode:characters_to_list(Acc);
        {Port, {exit_status, St}} -> error({chromium_failed, St, Acc})
    after 120000 -> error(chromium_timeout)
    end.

%% chromium driven over the DevTools protocol: JSON messages ending in a NUL byte, on its
%% file descriptors 3 (in) and 4 (out), here the port's pipes.
browser_open(Chrome, Profile) ->
    Cmd = "exec \"$0\" --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars "
          "--user-data-dir=\"$1\" --remote-debugging-pipe 3<&0 4>&1 >/dev/null 2>&1",
    Port = open_port({spawn_executable, "/bin/sh"}, [{args, ["-c", Cmd, Chrome, Profile]},
                                                    binary, exit_status]),
    put(cdp_buffer, <<>>),
    put(cdp_id, 0),
    Port.

browser_close(Port) ->
    _ = catch cdp(Port, undefined, <<"Browser.close">>, #{}),
    receive {Port, {exit_status, _}} -> ok after 10000 -> catch port_close(Port), ok end.

page_open(Port, Url) ->
    #{<<"targetId">> := T} = cdp(Port, undefined, <<"Target.createTarget">>, #{url => <<"about:blank">>}),
    #{<<"sessionId">> := Sid} = cdp(Port, undefined, <<"Target.attachToTarget">>,
                                    #{targetId => T, flatten => true}),
    _ = cdp(Port, Sid, <<"Emulation.setDeviceMetricsOverride">>,
            #{width => 1200, height => 760, deviceScaleFactor => 1, mobile => false}),
    _ = cdp(Port, Sid, <<"Page.navigate">>, #{url => list_to_binary(Url)}),
    {Port, Sid}.

%% The page's text once Cond (JavaScript) holds: the page itself waits, a promise
%% resolved by the check it runs as it changes.
page_wait({Port, Sid}, Cond) ->
    %% Race: the page may still be loading (its elements not there yet): a condition that
    %% cannot be read yet is not met yet.
    Js = "new Promise(function (ok) { (function f() { var met; try { met = (" ++ Cond ++ "); }"
         " catch (e) { met = false; } if (met) ok(document.body.innerText);"
         " else setTimeout(f, 50); })(); })",
    R = cdp(Port, Sid, <<"Runtime.evaluate">>,
            #{expression => list_to_binary(Js), awaitPromise => true, returnByValue => true}),
    case R of
        #{<<"exceptionDetails">> := Why} -> error({page_script_failed, Cond, Why});
        #{<<"result">> := #{<<"value">> := Text}} when is_binary(Text) -> unicode:characters_to_list(Text)
    end.

screenshot({Port, Sid}) ->
    #{<<"data">> := B64} = cdp(Port, Sid, <<"Page.captureScreenshot">>, #{format => png}),
    Png = base64:decode(B64),
    <<137, "PNG", _/binary>> = Png,
    Png.

cdp(Port, Sid, Method, Params) ->
    Id = get(cdp_id) + 1,
    put(cdp_id, Id),
    Msg0 = #{id => Id, method => Method, params => Params},
    Msg = case Sid of undefined -> Msg0; _ -> Msg0#{sessionId => Sid} end,
    true = port_command(Port, [riarc_json:encode(Msg), 0]),
    reply(Port, Id).

reply(Port, Id) ->
    case binary:split(get(cdp_buffer), <<0>>) of
        [Line, Rest] ->
            put(cdp_buffer, Rest),
            case riarc_json:decode(Line) of
                {ok, #{<<"id">> := Id, <<"result">> := R}} -> R;
                {ok, #{<<"id">> := Id, <<"error">> := E}} -> error({cdp, E});
                {ok, _Event} -> reply(Port, Id)
            end;
        [_] ->
            receive
                {Port, {data, D}} -> put(cdp_buffer, <<(get(cdp_buffer))/binary, D/binary>>), reply(Port, Id);
                {Port, {exit_status, St}} -> error({chromium_ended, St})
            after 60000 -> error({cdp_timeout, Id})
            end
    end.
