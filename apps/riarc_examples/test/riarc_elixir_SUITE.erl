% The Elixir example (examples/elixir, docs/elixir.md) under riarc: compiled with Elixir's
% own compiler (`elixirc') into the suite's priv_dir, then run under monitoring from
% Erlang. Checks that Elixir GenServers and Supervisors are matched by their callback
% modules and Tasks by the functions they run, that the racy account's lost update is
% caught with reject and an explanation in every run (the example's burst forces it),
% both by the example's sHML property and by an Erlang monitor, and that the safe
% account is accepted throughout. A Common Test suite: it starts an OS compiler and
% takes seconds. Skipped, with the reason, only where `elixirc' is not installed.
-module(riarc_elixir_SUITE).

-import(riarc_test_cli, [root/0]).

-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, suite/0, init_per_suite/1, end_per_suite/1]).
-export([callback_modules/1, task_identity/1, race_caught_shml/1, race_caught_erlang/1,
         race_caught_elixir_monitor/1, safe_all_accepted/1, cli_run/1]).

%% How many seeded runs each verdict test makes: the race must show in every one.
-define(RUNS, 5).

-spec all() -> [atom() | {group, atom()}].
all() -> [] ++ riarc_test_tier:slow_groups([slow]).

%% The full tier's cases (make test-all): riarc_test_tier.
-spec groups() -> [{atom(), list(), [atom()]}].
groups() -> [{slow, [], [callback_modules, task_identity, race_caught_shml,
          race_caught_erlang, race_caught_elixir_monitor, safe_all_accepted, cli_run]}].

-spec suite() -> list().
suite() -> [{timetrap, {minutes, 5}}].


-spec init_per_suite(list()) -> list() | {skip, string()}.
init_per_suite(Config) ->
    case os:find_executable("elixirc") of
        false ->
            {skip, "elixirc is not installed (Debian's package elixir; scripts/ensure-toolchain installs it)"};
        Elixirc ->
            Out = filename:join(proplists:get_value(priv_dir, Config), "bank_ebin"),
            ok = filelib:ensure_path(Out),
            Sources = filelib:wildcard(filename:join([root(), "examples", "elixir", "lib", "**", "*.ex"])),
            ?assert(length(Sources) >= 5),
            %% riarc on elixirc's code path: Bank.Monitor declares @behaviour :riarc_monitor.
            RiarcEbin = filename:dirname(code:which(riarc_monitor)),
            Cmd = lists:join(" ", [Elixirc, "-pa", RiarcEbin, "-o", Out | Sources]) ++ " 2>&1; echo \"status=$?\"",
            Lines = string:split(string:trim(os:cmd(lists:flatten(Cmd))), "\n", all),
            ?assertEqual("status=0", lists:last(Lines), Lines),
            ElixirEbin = elixir_ebin(Elixirc),
            true = code:add_patha(ElixirEbin),
            true = code:add_patha(Out),
            {module, 'Elixir.Bank.Demo'} = code:ensure_loaded('Elixir.Bank.Demo'),
            [{bank_ebin, Out}, {elixir_ebin, ElixirEbin}, {props, compile_props(Out)} | Config]
    end.

-spec end_per_suite(list()) -> ok.
end_per_suite(Config) ->
    _ = code:del_path(proplists:get_value(bank_ebin, Config)),
    _ = code:del_path(proplists:get_value(elixir_ebin, Config)),
    ok.

%% The example's property compiled by the command line (`bin/riarc compile', an OS
%% process: this app does not depend on the property language's) into Dir, and loaded.
compile_props(Dir) ->
    {Lines, Status} = cli("compile examples/elixir/bank.prop -o " ++ Dir, " 2>&1"),
    ?assertEqual("status=0", Status, Lines),
    Beam = filename:join(Dir, "riarc_props_bank.beam"),
    {module, Mod} = code:load_abs(filename:rootname(Beam)),
    Mod.

%% bin/riarc with Args in the top directory: its output lines and "status=N"; Redirect
%% says what becomes of its standard error (" 2>&1" to have it among the lines).
cli(Args, Redirect) ->
    Out = os:cmd("cd " ++ root() ++ " && bin/riarc " ++ Args ++ Redirect ++ "; echo \"status=$?\""),
    Lines = string:split(string:trim(Out), "\n", all),
    {lists:droplast(Lines), lists:last(Lines)}.

%% Elixir's standard library next to its compiler (Debian: /usr/bin/elixirc links to
%% /usr/lib/elixir/bin/elixirc, the library is /usr/lib/elixir/lib/elixir/ebin).
elixir_ebin(Elixirc) ->
    Real = string:trim(os:cmd("readlink -f " ++ Elixirc)),
    Ebin = filename:join([filename:dirname(filename:dirname(Real)), "lib", "elixir", "ebin"]),
    ?assert(filelib:is_regular(filename:join(Ebin, "Elixir.Task.beam")), Ebin),
    Ebin.

%% A seeded run size: Clients client Tasks withdrawing N times each. The seed is printed
%% so that a failing run can be repeated.
sizes(Seed) ->
    ct:pal("seed ~p", [Seed]),
    _ = rand:seed(exsss, Seed),
    {1 + rand:uniform(7), rand:uniform(10)}.

%% Every process's logical MFA, as Λ is asked for it; the account, its supervisor and the
%% clients get recording monitors, the rest stays in its parent's partition.
callback_modules(_Config) ->
    Self = self(),
    Spec = fun(MFA) ->
                   Self ! {asked, MFA},
                   case MFA of
                       {'Elixir.Bank', init, _} -> {ok, riarc_test_sys:recorder(Self, MFA)};
                       {'Elixir.Bank.Supervisor', init, _} -> {ok, riarc_test_sys:recorder(Self, MFA)};
                       {'Elixir.Bank.Client', run, _} -> {ok, riarc_test_sys:recorder(Self, MFA)};
                       _ -> undefined
                   end
           end,
    {ok, #{verdicts := Vs, violations := [], root_exits := []}} =
        riarc:run({'Elixir.Bank.Demo', main, [2, 3, racy]}, Spec, #{log => false}),
    Asked = flush_asked(),
    %% The Supervisor and the GenServer are their callback modules' init with the
    %% argument given to start_link; the clients, Tasks, the function they run.
    ?assertEqual(1, count({'Elixir.Bank.Supervisor', init, [{racy, 6}]}, Asked)),
    ?assertEqual(1, count({'Elixir.Bank', init, [{racy, 6}]}, Asked)),
    [{'Elixir.Bank.Client', run, [Root, 3]}, {'Elixir.Bank.Client', run, [Root, 3]}] =
        [MFA || MFA = {'Elixir.Bank.Client', run, _} <- Asked],
    ?assert(is_pid(Root)),
    %% The racy account's settle Tasks, one per withdrawal, are Bank.settle/4.
    ?assertEqual(6, length([MFA || MFA = {'Elixir.Bank', settle, [_, _, _, 1]} <- Asked])),
    %% No process is left as Elixir's internals: no Task.Supervised, no gen.
    ?assertEqual([], [MFA || MFA = {M, _, _} <- Asked, M =:= 'Elixir.Task.Supervised' orelse M =:= gen]),
    ?assertEqual(lists:sort([{'Elixir.Bank', init, [{racy, 6}]}, {'Elixir.Bank.Supervisor', init, [{racy, 6}]},
                             {'Elixir.Bank.Client', run, [Root, 3]}, {'Elixir.Bank.Client', run, [Root, 3]}]),
                 lists:sort([MFA || #{mfa := MFA} <- Vs])),
    %% Each recording monitor opened with its process's init event (its MFA) and closed
    %% with its exit.
    Seen = flush(),
    [begin
         Es = [E || {mon, M, E} <- Seen, M =:= MFA],
         ?assertMatch([{init, _, _, MFA} | _], Es),
         ?assertMatch({exit, _, _}, lists:last(Es))
     end || #{mfa := MFA} <- Vs],
    ok.

count(X, L) -> length([Y || Y <- L, Y =:= X]).

%% The racy account's settle Tasks (Task.start(Bank, :settle, [...])) are asked as
%% 'Elixir.Bank':settle/4; given monitors of their own, each sees its own run: started as
%% settle, one reply to a client, one write back to the account, a normal exit.
task_identity(_Config) ->
    Self = self(),
    Spec = fun({'Elixir.Bank', settle, [_, _, _, 1]}) -> {ok, riarc_test_sys:recorder(Self, {settle, make_ref()})};
              (_) -> undefined end,
    {ok, #{verdicts := Vs, violations := []}} =
        riarc:run({'Elixir.Bank.Demo', main, [3, 4, racy]}, Spec, #{log => false}),
    ?assertEqual(12, length(Vs)),
    [?assertMatch(#{mfa := {'Elixir.Bank', settle, [Bank, {_, _}, B, 1]}, verdict := none}
                    when is_pid(Bank) andalso is_integer(B), V) || V <- Vs],
    Seen = flush(),
    Ids = lists:usort([Id || {mon, Id, _} <- Seen]),
    ?assertEqual(12, length(Ids)),
    [begin
         Es = [E || {mon, I, E} <- Seen, I =:= Id],
         ?assertMatch([{init, _, _, {'Elixir.Bank', settle, _}},
                       {send, _, _, {_, {ok, _}}},
                       {send, _, _, {'$gen_cast', {set, _}}},
                       {exit, _, normal}], Es)
     end || Id <- Ids].

%% The example's property (examples/elixir/bank.prop) catches the lost update in every
%% run: the account rejects, explained by the balance it told twice.
race_caught_shml(Config) ->
    Props = proplists:get_value(props, Config),
    [begin
         {Clients, N} = sizes(Seed),
         Vs = verdicts(Props, Clients, N, racy, #{explain => 1000}),
         [Bank] = [V || V = #{mfa := {'Elixir.Bank', init, _}} <- Vs],
         ?assertMatch(#{verdict := reject}, Bank, {seed, Seed}),
         explained(Bank, Seed),
         %% A client's burst withdrawal was answered, so no client failed.
         ?assertEqual(Clients, length([x || #{mfa := {'Elixir.Bank.Client', run, _}, verdict := accept} <- Vs]),
                      {seed, Seed})
     end || Seed <- seeds()],
    ok.

%% The same property written as an Erlang monitor: the balances told so far, reject on
%% one told again.
race_caught_erlang(_Config) ->
    Spec = fun({'Elixir.Bank', init, _}) -> {ok, told(#{})};
              (_) -> undefined end,
    [begin
         {Clients, N} = sizes(Seed),
         [Bank] = verdicts(Spec, Clients, N, racy, #{explain => 1000}),
         ?assertMatch(#{verdict := reject, mfa := {'Elixir.Bank', init, [{racy, _}]}}, Bank, {seed, Seed}),
         explained(Bank, Seed)
     end || Seed <- seeds()],
    ok.

told(Told) ->
    fun({send, _, _, {_, {ok, B}}}) when is_map_key(B, Told) -> reject;
       ({send, _, _, {_, {ok, B}}}) -> told(Told#{B => true});
       (_) -> told(Told)
    end.

%% The property written in Elixir (examples/elixir/lib/bank/monitor.ex, a Spec module with
%% the riarc_monitor callbacks): reject in every run, explained in its own words; on the
%% safe account it never rejects (it never accepts either: none).
race_caught_elixir_monitor(_Config) ->
    [begin
         {Clients, N} = sizes(Seed),
         [Bank] = verdicts('Elixir.Bank.Monitor', Clients, N, racy, #{explain => 1000}),
         ?assertMatch(#{verdict := reject}, Bank, {seed, Seed}),
         explained(Bank, Seed),
         #{explanation := #{monitor := #{words := Words}}} = Bank,
         ?assertMatch({match, _}, re:run(Words, "was told to a second client"), {seed, Seed, Words}),
         ?assertMatch([#{verdict := none}], verdicts('Elixir.Bank.Monitor', Clients, N, safe, #{}), {seed, Seed})
     end || Seed <- seeds()],
    ok.

%% The safe account under the same burst: every monitored process is accepted (the
%% account when it exits, having told no balance twice; each client when it exits
%% normally).
safe_all_accepted(Config) ->
    Props = proplists:get_value(props, Config),
    [begin
         {Clients, N} = sizes(Seed),
         Vs = verdicts(Props, Clients, N, safe, #{}),
         ?assertEqual(Clients + 1, length(Vs), {seed, Seed}),
         ?assertEqual([accept], lists:usort([V || #{verdict := V} <- Vs]), {seed, Seed, Vs})
     end || Seed <- seeds()],
    ok.

%% The command of docs/elixir.md: the racy account's line says reject, followed by its
%% explanation, status 1; the safe account's run is accepted throughout, status 0.
cli_run(Config) ->
    Ebin = proplists:get_value(bank_ebin, Config),
    Lib = filename:dirname(filename:dirname(proplists:get_value(elixir_ebin, Config))),
    Run = fun(Args) ->
                  cli("run -pa " ++ Ebin ++ " --lib " ++ Lib ++ " -m Elixir.Bank.Demo -f main -a '"
                      ++ Args ++ "' --props examples/elixir/bank.prop", " 2>/dev/null")
          end,
    {[Reject | Rest], Status} = Run("[4, 5]"),
    ?assertEqual("status=1", Status, [Reject | Rest]),
    ?assertMatch({match, _}, re:run(Reject, " Elixir.Bank:init/1 reject$"), Reject),
    ?assertMatch(["    last events (=> decided):" | _], Rest),
    ?assertEqual(4, length([L || L <- Rest, lists:suffix(" Elixir.Bank.Client:run/2 accept", L)])),
    {Safe, SafeStatus} = Run("[4, 5, safe]"),
    ?assertEqual("status=0", SafeStatus, Safe),
    ?assertEqual(5, length([L || L <- Safe, lists:suffix(" accept", L)]), Safe),
    ?assertEqual(5, length(riarc_test_cli:verdicts(Safe)), Safe).

seeds() ->
    Base = erlang:unique_integer([positive]),
    [{Base, I, erlang:system_time()} || I <- lists:seq(1, ?RUNS)].

verdicts(Spec, Clients, N, Mode, Opts) ->
    {ok, #{verdicts := Vs, violations := [], errors := [], root_exits := []}} =
        riarc:run({'Elixir.Bank.Demo', main, [Clients, N, Mode]}, Spec, Opts#{log => false}),
    ?assertEqual([], [V || V = #{verdict := error} <- Vs]),
    Vs.

%% The explanation of the account's reject: the deciding event tells a balance that an
%% earlier event of its window told already.
explained(#{explanation := #{deciding_event := Decided, last_events := Last, mfa := {'Elixir.Bank', init, _}}}, Seed) ->
    {send, _, _, {_, {ok, B}}} = Decided,
    ?assertEqual(Decided, lists:last(Last), {seed, Seed}),
    Before = lists:droplast(Last),
    ?assert(lists:any(fun({send, _, _, {_, {ok, B1}}}) -> B1 =:= B; (_) -> false end, Before),
            {seed, Seed, B, Last});
explained(V, Seed) ->
    ct:fail({no_explanation, V, {seed, Seed}}).

flush() -> receive M -> [M | flush()] after 0 -> [] end.

%% The MFAs Λ was asked for, leaving the monitors' reports in the mailbox.
flush_asked() -> receive {asked, MFA} -> [MFA | flush_asked()] after 0 -> [] end.
