%% @doc Test support: a scratch directory of a test, under $TMPDIR (or /tmp), named after
%% the test and this VM, so that runs never share one: neither side by side nor one after
%% another (the OS reuses process ids, and scratch directories stay behind).
%% ```
%% 1> D = riarc_test_tmp:dir("doc").
%% 2> filelib:is_dir(D).
%% true
%% '''
-module(riarc_test_tmp).

-export([dir/1]).

-define(VM_KEY, {?MODULE, vm}).

%% @doc The directory for Name, made if missing; the same one for every call in this VM.
-spec dir(string()) -> file:filename().
dir(Name) ->
    Dir = filename:join([os:getenv("TMPDIR", "/tmp"), "riarc_tests", Name ++ "-" ++ vm()]),
    ok = filelib:ensure_path(Dir),
    Dir.

%% This VM: its OS process id, and the time of the first call, which tells apart two
%% VMs that had the same id.
vm() ->
    case persistent_term:get(?VM_KEY, undefined) of
        undefined ->
            Vm = os:getpid() ++ "-" ++ integer_to_list(erlang:system_time(microsecond)),
            persistent_term:put(?VM_KEY, Vm),
            Vm;
        Vm ->
            Vm
    end.
