%% @doc A Common Test hook that checks a property while each test case runs. Installed as
%% `{ct_hooks, [{riarc_cth, Opts}]}' (in a suite's suite/0, a test spec or `ct_run
%% -ct_hooks'), it attaches riarc before init_per_testcase (riarc_watch) and detaches
%% after end_per_testcase: a reject, an error or an inconclusive verdict (or a riarc
%% error, an invariant violation, an overload) fails a case that would have passed, with
%% `{fail, "riarc: ..."}', and the verdicts with their explanations go to the case's log
%% (ct:log); accepts and partitions with no verdict pass. Tracing is never left on: the
%% watch ends with the case, or with the case's process when a timetrap kills it.
%%
%% Opts (a map or a property list): `property' (a property file, looked for in the
%% case's data_dir first, or a Spec; required), `target' (default `self': the test
%% case's process, init_per_testcase and end_per_testcase included, and every process
%% they spawn; else a registered name, `{application, App}', `{supervisor, Ref}', ... as
%% riarc:attach/3 takes, or a list), `strict' (a case whose property monitored nothing
%% fails), `riarc' (riarc:attach/3's options), `cases' (`#{Case => Opts | off}': per-case
%% options over the suite's). A case's info function may say `{riarc, Opts | off}' too, and
%% init_per_suite or init_per_group may put `{riarc, Opts | off}' in the Config; the
%% case's own options win over the group's, which win over the hook's.
%% ```
%% 1> file:write_file("/tmp/riarc_cth_doc.prop", "with riarc_demo_pqr:q() never receive req.\n").
%% ok
%% 2> {ok, S0} = riarc_cth:init(riarc_cth, #{property => "/tmp/riarc_cth_doc.prop"}).
%% 3> {[], S1} = riarc_cth:pre_init_per_testcase(doc_SUITE, bad_case, [], S0).
%% 4> {Q, Ref} = spawn_monitor(riarc_demo_pqr, q, []), Q ! req, receive {'DOWN', Ref, _, _, R} -> R end.
%% normal
%% 5> {{fail, Why}, S2} = riarc_cth:post_end_per_testcase(doc_SUITE, bad_case, [], ok, S1), lists:prefix("riarc: ", Why).
%% true
%% 6> {[], S3} = riarc_cth:pre_init_per_testcase(doc_SUITE, good_case, [], S2).
%% 7> {ok, S4} = riarc_cth:post_end_per_testcase(doc_SUITE, good_case, [], ok, S3), riarc_cth:terminate(S4).
%% ok
%% '''
-module(riarc_cth).

-export([id/1, init/2, pre_init_per_testcase/4, post_init_per_testcase/5,
         post_end_per_testcase/5, terminate/1, format_error/1]).
-export_type([opts/0, error_reason/0]).

-type opts() :: #{property => riarc_watch:property(), target => riarc_watch:target(),
                  strict => boolean(), riarc => riarc:opts(),
                  cases => #{atom() => opts() | off}, id => term()}
              | [{atom(), term()}].
-type error_reason() :: {bad_opts, term()}.

%% The hook's options, and the watches of the cases running now, by suite and case (a
%% case killed by its timetrap ends in another process than it started in).
-record(cth_state, {opts :: map(), watching = #{} :: #{{module(), term()} => riarc_watch:watch()}}).

%% The failure reason shown in Common Test's overview is kept to one screen line or so;
%% the full report is in the case's log.
-define(REASON_CHARS, 400).

%% @doc The hook's id: `riarc_cth', or the `id' option (to install it twice).
-spec id(opts()) -> term().
id(Opts) ->
    case to_map(Opts) of
        #{id := Id} -> Id;
        _ -> ?MODULE
    end.

%% @doc Takes the hook's options.
-spec init(term(), opts()) -> {ok, #cth_state{}} | {error, {?MODULE, error_reason()}}.
init(_Id, Opts) ->
    case to_map(Opts) of
        M when is_map(M) -> {ok, #cth_state{opts = M}};
        _ -> {error, {?MODULE, {bad_opts, Opts}}}
    end.

%% @doc Starts watching the case, unless its options say `off' or name no property; a
%% watch that cannot start fails the case, saying why.
-spec pre_init_per_testcase(module(), term(), list(), #cth_state{}) ->
    {list() | {fail, string()}, #cth_state{}}.
pre_init_per_testcase(Suite, Case, Config, S = #cth_state{opts = Hook}) ->
    case case_opts(Suite, Case, Config, Hook) of
        off -> {Config, S};
        #{property := Property} = Opts ->
            WOpts = #{strict => maps:get(strict, Opts, false), riarc => maps:get(riarc, Opts, #{}),
                      dirs => [D || D <- [proplists:get_value(data_dir, Config)], D =/= undefined]},
            case riarc_watch:start(Property, maps:get(target, Opts, self), WOpts) of
                {ok, W} ->
                    {Config, S#cth_state{watching = (S#cth_state.watching)#{{Suite, Case} => W}}};
                {error, Reason} ->
                    Why = "riarc: " ++ riarc_watch:format_error(Reason),
                    log("~ts", [Why]),
                    {{fail, Why}, S}
            end;
        #{} ->
            %% Installed, but no property for this case: said in its log, so that an
            %% unchecked case does not pass for a checked one.
            log("riarc: no property given for this case: not watched", []),
            {Config, S}
    end.

%% @doc A case whose init_per_testcase skipped or failed it runs no further: its watch
%% ends here (its report is logged; the case's own result stands).
-spec post_init_per_testcase(module(), term(), list(), term(), #cth_state{}) -> {term(), #cth_state{}}.
post_init_per_testcase(Suite, Case, _Config, {Stop, _} = Return, S)
  when Stop =:= skip; Stop =:= fail; Stop =:= skipped; Stop =:= failed; Stop =:= error ->
    {_, S1} = finish(Suite, Case, Return, S),
    {Return, S1};
%% The Config init_per_testcase returned (or what Common Test passes for a suite without
%% one): the case runs.
post_init_per_testcase(_Suite, _Case, _Config, Return, S) ->
    {Return, S}.

%% @doc Stops watching the case and judges: a case that passed fails when its property
%% did; one that failed already keeps its own reason (the property's report is logged).
-spec post_end_per_testcase(module(), term(), list(), term(), #cth_state{}) -> {term(), #cth_state{}}.
post_end_per_testcase(Suite, Case, _Config, Return, S) ->
    finish(Suite, Case, Return, S).

%% @doc Stops whatever is still watched (a case the framework never ended).
-spec terminate(#cth_state{}) -> ok.
terminate(#cth_state{watching = Ws}) ->
    _ = [riarc_watch:stop(W) || W <- maps:values(Ws)],
    ok.

finish(Suite, Case, Return, S = #cth_state{watching = Ws}) ->
    case maps:take({Suite, Case}, Ws) of
        error -> {Return, S};
        {W, Rest} ->
            S1 = S#cth_state{watching = Rest},
            case riarc_watch:stop(W) of
                {ok, #{status := pass, report := Report}} ->
                    log("riarc: the property held (no violation)~n~ts", [Report]),
                    {Return, S1};
                {ok, #{status := fail, failures := Fs, report := Report, verdicts := Vs}} ->
                    log("riarc: the property FAILED~n~ts", [Report]),
                    charts(Vs),
                    {fail_unless_failed(Return, reason(Fs)), S1};
                {error, Reason} ->
                    Why = "riarc: " ++ riarc_watch:format_error(Reason),
                    log("~ts", [Why]),
                    {fail_unless_failed(Return, Why), S1}
            end
    end.

%% A message sequence chart of each reject and error, in the case's log (HTML, so the
%% chart's SVG is written as it is).
%% A chart that cannot be drawn is said so; the case's verdict stands either way.
charts(Verdicts) ->
    _ = [try ct:log(default, 50, "~ts", [riarc_chart:svg(V)], [])
         catch Class:Why -> log("riarc: no chart for ~0tp (~0tp)", [maps:get(pid, V, undefined), {Class, Why}])
         end || V = #{verdict := Verdict} <- Verdicts, Verdict =:= reject orelse Verdict =:= error],
    ok.

%% The case's log is HTML: pids and `=>' are escaped to show as text.
log(Fmt, Args) ->
    ct:log(default, 50, Fmt, Args, [esc_chars]).

%% What a case that passed (ok, a value, a comment) returns; a skip or failure stands.
fail_unless_failed({skip, _} = R, _Why) -> R;
fail_unless_failed({skipped, _} = R, _Why) -> R;
fail_unless_failed({fail, _} = R, _Why) -> R;
fail_unless_failed({error, _} = R, _Why) -> R;
fail_unless_failed({timetrap_timeout, _} = R, _Why) -> R;
fail_unless_failed({failed, _} = R, _Why) -> R;
fail_unless_failed(_Passed, Why) -> {fail, Why}.

reason(Failures) ->
    Text = "riarc: " ++ lists:join("; ", Failures),
    case string:length(Text) > ?REASON_CHARS of
        true -> string:slice(Text, 0, ?REASON_CHARS) ++ " ... (the case's log has the rest)";
        false -> lists:flatten(Text)
    end.

%% The options of one case: the hook's, then Config's `riarc' (init_per_suite or
%% init_per_group), then the case's info function's, then the hook's `cases' entry.
case_opts(Suite, Case, Config, Hook) ->
    Layers = [Hook, proplists:get_value(riarc, Config, #{}), info_opts(Suite, Case),
              maps:get(name(Case), maps:get(cases, Hook, #{}), #{})],
    lists:foldl(fun(_, off) -> off;
                   (off, _) -> off;
                   (L, Acc) ->
                        case to_map(L) of
                            off -> off;
                            M when is_map(M) -> maps:merge(Acc, M);
                            _Malformed -> Acc
                        end
                end, #{}, Layers).

%% A case in a group may be named `{Group, Case}' by some versions of Common Test.
name({_Group, Case}) -> Case;
name(Case) -> Case.

info_opts(Suite, Case) ->
    F = name(Case),
    case is_atom(F) andalso code:ensure_loaded(Suite) =:= {module, Suite}
         andalso erlang:function_exported(Suite, F, 0) of
        true ->
            try Suite:F() of
                Info when is_list(Info) -> proplists:get_value(riarc, Info, #{});
                _ -> #{}
            catch _:_ -> #{}
            end;
        false -> #{}
    end.

to_map(off) -> off;
to_map(M) when is_map(M) -> M;
to_map(L) when is_list(L) ->
    try maps:from_list([{K, V} || {K, V} <- L])
    catch _:_ -> L
    end;
to_map(Other) -> Other.

%% @doc A sentence for an error of this module.
-spec format_error(error_reason()) -> string().
format_error({bad_opts, Opts}) ->
    lists:flatten(io_lib:format("riarc_cth's options must be a map or a property list, not ~0tP",
                                [Opts, 8])).
