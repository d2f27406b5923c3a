%% @doc Weaving compiled modules: a parse transform applied to a loaded module's own
%% abstract code (from its debug_info), compiled and loaded in its place, and the
%% original put back. Inline monitoring (riarc_inline) and record & replay
%% (riarc_replay) weave modules this way, each with its own transform.
%% ```
%% 1> {ok, _File, Bin} = riarc_weave:compile(riarc_demo_pqr, riarc_inline_transform).
%% 2> is_binary(Bin).
%% true
%% 3> riarc_weave:restore([riarc_demo_pqr]).
%% ok
%% '''
-module(riarc_weave).

-export([compile/2, load/3, restore/1, descend/3, kept/2, keep/1, format_error/1]).
-export_type([error_reason/0, kept/0]).

-type error_reason() :: {not_loaded, module()} | {no_abstract_code, module(), term()}
                      | {weave_failed, module(), term()} | {load_failed, module(), term()}.
%% A kept weave, to hand to another VM (kept/2, keep/1).
-opaque kept() :: {{riarc_weave, module(), module()}, {{file:filename(), binary(), binary()}, binary()}}.

%% @doc The generic step of a transform's walk over abstract code: each part of Node (a
%% tuple's elements, a list's members) walked with Walk, a counter (for fresh variable
%% names) threaded through in order; a leaf is left as it is. A transform's walk handles
%% the shapes it rewrites and gives everything else to this.
-spec descend(fun((term(), N) -> {term(), N}), term(), N) -> {term(), N}.
descend(Walk, Node, N0) when is_tuple(Node) ->
    {Elems, N1} = lists:mapfoldl(Walk, N0, tuple_to_list(Node)),
    {list_to_tuple(Elems), N1};
descend(Walk, Node, N0) when is_list(Node) ->
    lists:mapfoldl(Walk, N0, Node);
descend(_Walk, Leaf, N) ->
    {Leaf, N}.

%% @doc Module M's abstract code, transformed by Transform:parse_transform/2 and compiled
%% (with debug_info, so that it can be woven again): the binary to load, and the file
%% the module was loaded from. Unchanged modules are woven once per VM (stamp/3).
-spec compile(module(), module()) -> {ok, file:filename(), binary()} | {error, {riarc_weave, error_reason()}}.
compile(M, Transform) ->
    case code:which(M) of
        File when is_list(File) ->
            Key = {?MODULE, M, Transform},
            Stamp = stamp(M, File, Transform),
            case persistent_term:get(Key, none) of
                {Stamp, Bin} when Stamp =/= none ->
                    {ok, File, Bin};
                _ ->
                    case weave(M, File, Transform) of
                        {ok, Bin} ->
                            _ = Stamp =/= none andalso persistent_term:put(Key, {Stamp, Bin}),
                            {ok, File, Bin};
                        Error ->
                            Error
                    end
            end;
        _ -> {error, {?MODULE, {not_loaded, M}}}
    end.

%% Woven code is about ten times the size of the module's and takes the compiler about
%% as many times as long (measured: riarc_replay_progs, 87 ms plain, 1.4 s woven), and a
%% replay or an inline run weaves again each time. So the last weave of each module and
%% transform is kept for the VM's life (persistent_term: read without copying, written
%% once per module, again only when its beam file or the transform changed), under the
%% beam file's and the transform's MD5s: the same stamp, the same forms read, the same
%% binary compiled. A file that cannot be read has no stamp and is never cached.
stamp(M, File, Transform) ->
    case beam_lib:md5(File) of
        {ok, {M, Md5}} -> {File, Md5, Transform:module_info(md5)};
        _ -> none
    end.

%% @doc The kept weaves of Modules with Transform, weaving those not kept yet (a module
%% that cannot be woven is left out: the VM that needs it says why). Handed to another VM
%% of the same installation (a peer started with this VM's code path), keep/1 spares it
%% the weaving: each entry is used there only if its stamp matches that VM's own files.
-spec kept([module()], module()) -> [kept()].
kept(Modules, Transform) ->
    [{Key, Entry} || M <- Modules, {ok, _, _} <- [compile(M, Transform)],
                     Key <- [{?MODULE, M, Transform}],
                     {_, _} = Entry <- [persistent_term:get(Key, none)]].

%% @doc Keeps weaves made by kept/2 in another VM, as if made here.
-spec keep([kept()]) -> ok.
keep(Entries) ->
    _ = [persistent_term:put(Key, Entry) || {Key = {?MODULE, M, T}, Entry = {{_, _, _}, Bin}} <- Entries,
                                            is_atom(M), is_atom(T), is_binary(Bin),
                                            persistent_term:get(Key, none) =/= Entry],
    ok.

weave(M, File, Transform) ->
    case abstract_code(M, File) of
        {ok, Forms} ->
            Woven = Transform:parse_transform(Forms, []),
            case compile:forms(Woven, [binary, return_errors, debug_info]) of
                {ok, M, Bin} -> {ok, Bin};
                {ok, M, Bin, _Warnings} -> {ok, Bin};
                {error, Errors, _} -> {error, {?MODULE, {weave_failed, M, Errors}}}
            end;
        Error -> Error
    end.

-spec load(module(), file:filename(), binary()) -> ok | {error, {riarc_weave, error_reason()}}.
load(M, File, Bin) ->
    _ = code:unstick_mod(M),
    case code:load_binary(M, File, Bin) of
        {module, M} -> ok;
        {error, Why} -> {error, {?MODULE, {load_failed, M, Why}}}
    end.

%% @doc Puts the modules' own code back from their beams. Woven code must no longer be
%% running: processes still in it are killed when it is purged, as for any code reload.
-spec restore([module()]) -> ok | {error, {riarc_weave, error_reason()}}.
restore([]) -> ok;
restore([M | Ms]) ->
    _ = code:purge(M),
    case code:load_file(M) of
        {module, M} -> _ = code:purge(M), restore(Ms);
        {error, Reason} -> {error, {?MODULE, {load_failed, M, Reason}}}
    end.

%% @doc One sentence for an error of weaving.
-spec format_error(error_reason()) -> string().
format_error({not_loaded, M}) ->
    flat("module ~s is not loaded and not in the code path", [M]);
format_error({no_abstract_code, M, _}) ->
    flat("module ~s has no debug_info: recompile it with debug_info to weave it", [M]);
format_error({weave_failed, M, Errors}) ->
    flat("the woven code of ~s does not compile: ~0tp", [M, Errors]);
format_error({load_failed, M, Reason}) ->
    flat("cannot load module ~s: ~0tp (old code of it may still be running)", [M, Reason]).

abstract_code(M, File) ->
    case beam_lib:chunks(File, [debug_info]) of
        {ok, {M, [{debug_info, {debug_info_v1, Backend, Data}}]}} ->
            case Backend:debug_info(erlang_v1, M, Data, []) of
                {ok, Forms} -> {ok, Forms};
                {error, Reason} -> {error, {?MODULE, {no_abstract_code, M, Reason}}}
            end;
        _ -> {error, {?MODULE, {no_abstract_code, M, no_debug_info}}}
    end.

flat(Fmt, Args) -> lists:flatten(io_lib:format(Fmt, Args)).
