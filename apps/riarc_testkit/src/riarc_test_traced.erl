%% @doc What a test leaves traced. A test takes traced/0 before it monitors and checks
%% untraced/1 after: what riarc traced for it is untraced again, and the flags new
%% processes get are as they were (a process another test left traced, in the same VM,
%% is not this test's).
%% ```
%% 1> Before = riarc_test_traced:traced().
%% 2> riarc_test_traced:untraced(Before).
%% ok
%% '''
-module(riarc_test_traced).

-include_lib("stdlib/include/assert.hrl").

-export([traced/0, untraced/1]).
-export_type([snapshot/0]).

-opaque snapshot() :: {[pid()], term()}.

%% @doc The processes with trace flags, and the flags new processes get.
-spec traced() -> snapshot().
traced() ->
    {lists:sort([P || P <- erlang:processes(), {flags, F} <- [erlang:trace_info(P, flags)], F =/= []]),
     erlang:trace_info(new_processes, flags)}.

%% @doc Asserts that no process is traced now that was not at Before, and that new
%% processes get the flags they got then.
-spec untraced(snapshot()) -> ok.
untraced({Procs, New}) ->
    {After, NewAfter} = traced(),
    ?assertEqual([], [{P, erlang:trace_info(P, flags)} || P <- After -- Procs]),
    ?assertEqual(New, NewAfter),
    ok.
