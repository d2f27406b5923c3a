%% @doc Test support: a scratch directory of a test, under $TMPDIR (or /tmp), named after
%% the test and this VM's OS process so that runs side by side never share one.
%% ```
%% 1> D = riarc_test_tmp:dir("doc").
%% 2> filelib:is_dir(D).
%% true
%% '''
-module(riarc_test_tmp).

-export([dir/1]).

%% @doc The directory for Name, made if missing.
-spec dir(string()) -> file:filename().
dir(Name) ->
    Dir = filename:join([os:getenv("TMPDIR", "/tmp"), "riarc_tests", Name ++ "-" ++ os:getpid()]),
    ok = filelib:ensure_path(Dir),
    Dir.
