%% @doc EUnit with a property checked while tests run (riarc_watch). with_property/3 runs a
%% test body watched and fails it with `{riarc_property, Failures}' on a reject, an error
%% or an inconclusive verdict (or a riarc error, an invariant violation, an overload), the
%% report with the explanations printed to the test's output; test/3 makes a test of it;
%% setup/3 is a fixture that watches a group of tests and adds a last test that fails
%% when the property did. Target as riarc_watch: `self' is the test's process and what it
%% spawns; a registered name, `{application, App}', ... as riarc:attach/3 takes.
%% ```
%% 1> file:write_file("/tmp/riarc_eunit_doc.prop", "with _:_() never receive req, with _:_(_) never receive req, with _:_(_, _) never receive req.\n").
%% ok
%% 2> Q = fun() -> self() ! req, receive req -> normal end end.
%% 3> {riarc_property, [F]} = try riarc_eunit:with_property("/tmp/riarc_eunit_doc.prop", self, Q) catch error:E -> E end, string:find(F, "reject") =/= nomatch.
%% true
%% 4> riarc_eunit:with_property("/tmp/riarc_eunit_doc.prop", self, fun() -> 42 end).
%% 42
%% 5> {Title, _Test} = riarc_eunit:test("/tmp/riarc_eunit_doc.prop", self, Q), Title.
%% "riarc: property /tmp/riarc_eunit_doc.prop"
%% '''
-module(riarc_eunit).

-export([with_property/3, with_property/4, test/3, test/4, setup/3, setup/4]).

%% @doc with_property/4 with no options.
-spec with_property(riarc_watch:property(), riarc_watch:target(), fun(() -> T)) -> T.
with_property(Property, Target, Fun) ->
    with_property(Property, Target, Fun, #{}).

%% @doc Runs Fun with Property watched on Target and returns its value; raises
%% `error({riarc_property, Failures})' (one line each) when the property failed, after
%% printing the report, and `error({riarc_watch, Sentence})' when the watch could not
%% start or stop. An exception of Fun's is raised again after the report, so that the
%% test shows its own failure first.
-spec with_property(riarc_watch:property(), riarc_watch:target(), fun(() -> T), riarc_watch:opts()) -> T.
with_property(Property, Target, Fun, Opts) ->
    case riarc_watch:with(Property, Target, Fun, Opts) of
        {ok, Ran, #{status := Status, failures := Failures, report := Report}} ->
            Status =:= fail andalso io:format("riarc: the property FAILED~n~ts", [Report]),
            case {Ran, Status} of
                {{raised, C, R, St}, _} -> erlang:raise(C, R, St);
                {{return, V}, pass} -> V;
                {{return, _}, fail} -> erlang:error({riarc_property, Failures})
            end;
        {error, Reason} ->
            erlang:error({riarc_watch, riarc_watch:format_error(Reason)})
    end.

%% @doc test/4 with no options.
-spec test(riarc_watch:property(), riarc_watch:target(), fun(() -> term())) -> {string(), fun(() -> term())}.
test(Property, Target, Fun) ->
    test(Property, Target, Fun, #{}).

%% @doc An EUnit test (`{Title, Fun}') that runs Fun with the property watched.
-spec test(riarc_watch:property(), riarc_watch:target(), fun(() -> term()), riarc_watch:opts()) ->
    {string(), fun(() -> term())}.
test(Property, Target, Fun, Opts) ->
    {title(Property), fun() -> with_property(Property, Target, Fun, Opts) end}.

%% @doc setup/4 with no options.
-spec setup(riarc_watch:property(), riarc_watch:target(), term()) -> tuple().
setup(Property, Target, Tests) ->
    setup(Property, Target, Tests, #{}).

%% @doc A `{setup, ...}' fixture: Tests run in order, in the fixture's process (the
%% target `self'), with the property watched from before the first to after the last;
%% a last test judges it. Tests is any EUnit test set that needs no fixture value.
-spec setup(riarc_watch:property(), riarc_watch:target(), term(), riarc_watch:opts()) -> tuple().
setup(Property, Target, Tests, Opts) ->
    {setup, local,
     fun() ->
             case riarc_watch:start(Property, Target, Opts) of
                 {ok, W} -> W;
                 {error, Reason} -> erlang:error({riarc_watch, riarc_watch:format_error(Reason)})
             end
     end,
     %% The last test has stopped the watch already; this stops one that a failing
     %% group never reached (stop/1 of a stopped watch is an error, and harmless).
     fun(W) -> _ = riarc_watch:stop(W), ok end,
     fun(W) -> {inorder, [Tests, {title(Property), fun() -> judge(W) end}]} end}.

judge(W) ->
    case riarc_watch:stop(W) of
        {ok, #{status := pass}} -> ok;
        {ok, #{failures := Failures, report := Report}} ->
            io:format("riarc: the property FAILED~n~ts", [Report]),
            erlang:error({riarc_property, Failures});
        {error, Reason} ->
            erlang:error({riarc_watch, riarc_watch:format_error(Reason)})
    end.

title(P) when is_list(P); is_binary(P) -> lists:flatten(io_lib:format("riarc: property ~ts", [P]));
title(P) when is_atom(P) -> lists:flatten(io_lib:format("riarc: property ~ts", [P]));
title(_) -> "riarc: property".
