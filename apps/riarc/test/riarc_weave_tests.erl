%% @doc EUnit tests of riarc_weave's cache: an unchanged module is woven once per VM, a
%% module whose beam file changed is woven again, and each weave gives the binary a
%% fresh compile would.
%% ```
%% $ rebar3 eunit --module=riarc_weave_tests
%% '''
-module(riarc_weave_tests).

-include_lib("eunit/include/eunit.hrl").

%% The transform of these tests: the forms unchanged, each call counted.
-export([parse_transform/2]).

-define(PROBE, riarc_weave_probe).

parse_transform(Forms, _Options) ->
    _ = ets:update_counter(?MODULE, weaves, 1, {weaves, 0}),
    Forms.

weaves() ->
    case ets:lookup(?MODULE, weaves) of
        [{weaves, N}] -> N;
        [] -> 0
    end.

%% A module of one function returning Value, written to Dir with debug_info and loaded.
probe(Dir, Value) ->
    Forms = [{attribute, 1, module, ?PROBE}, {attribute, 2, export, [{value, 0}]},
             {function, 3, value, 0, [{clause, 3, [], [], [{integer, 3, Value}]}]}],
    {ok, ?PROBE, Bin} = compile:forms(Forms, [binary, debug_info]),
    File = filename:join(Dir, atom_to_list(?PROBE) ++ ".beam"),
    ok = file:write_file(File, Bin),
    _ = code:purge(?PROBE),
    {module, ?PROBE} = code:load_abs(filename:rootname(File)),
    File.

cache_test() ->
    Dir = riarc_test_tmp:dir("riarc_weave_tests"),
    _ = ets:new(?MODULE, [named_table, public]),
    true = code:add_patha(Dir),
    try
        File = probe(Dir, 1),
        {ok, File, Bin1} = riarc_weave:compile(?PROBE, ?MODULE),
        ?assertEqual(1, weaves()),
        %% Unchanged: the kept weave, the transform not run again.
        ?assertEqual({ok, File, Bin1}, riarc_weave:compile(?PROBE, ?MODULE)),
        ?assertEqual(1, weaves()),
        ok = riarc_weave:load(?PROBE, File, Bin1),
        ?assertEqual(1, ?PROBE:value()),
        %% The beam file changed: woven again, from the new code.
        File = probe(Dir, 2),
        {ok, File, Bin2} = riarc_weave:compile(?PROBE, ?MODULE),
        ?assertEqual(2, weaves()),
        ?assertNotEqual(Bin1, Bin2),
        ok = riarc_weave:load(?PROBE, File, Bin2),
        ?assertEqual(2, ?PROBE:value()),
        ok = riarc_weave:restore([?PROBE]),
        ?assertEqual(2, ?PROBE:value()),
        %% Handed to another VM (here: this one, its weave forgotten), the kept weave is
        %% used there without weaving; one for other files is not.
        Kept = riarc_weave:kept([?PROBE], ?MODULE),
        ?assertMatch([_], Kept),
        true = persistent_term:erase({riarc_weave, ?PROBE, ?MODULE}),
        ok = riarc_weave:keep(Kept),
        ?assertEqual({ok, File, Bin2}, riarc_weave:compile(?PROBE, ?MODULE)),
        ?assertEqual(2, weaves()),
        File = probe(Dir, 3),
        ok = riarc_weave:keep(Kept),
        {ok, File, Bin3} = riarc_weave:compile(?PROBE, ?MODULE),
        ?assertEqual(3, weaves()),
        ?assertNotEqual(Bin2, Bin3)
    after
        _ = code:purge(?PROBE),
        _ = code:delete(?PROBE),
        _ = code:purge(?PROBE),
        ets:delete(?MODULE),
        _ = persistent_term:erase({riarc_weave, ?PROBE, ?MODULE}),
        _ = code:del_path(Dir),
        _ = file:del_dir_r(Dir)
    end.
