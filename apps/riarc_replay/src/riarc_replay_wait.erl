%% @doc The runtime's own waits in a process of a run, made so that none of them is a
%% receive that times out. Monitors of a recorded or replayed run
%% ({@link riarc_replay_monitor}) are shown every `timeout' event the VM traces, since
%% code that is not woven (gen_server's own loop without `otp => true', a `receive after'
%% without clauses) times out as in the plain run and nothing else would tell them. So
%% the runtime never polls with `after 0' nor sleeps with `after N': it backs off with a
%% timer message of its own (nap/0), looks at what the mailbox holds now by sending
%% itself a probe (probe/0), and marks a program's timeout that a replay takes without
%% waiting (timed_out/0). Monitors are not shown the naps and probes (own/1); the mark
%% is the plain run's timeout event.
%% ```
%% 1> riarc_replay_wait:nap().
%% ok
%% 2> P = riarc_replay_wait:probe(), riarc_replay_wait:drop_probe(P).
%% ok
%% 3> riarc_replay_wait:timed_out().
%% '$riarc_rr_timeout'
%% 4> riarc_replay_wait:own({'$riarc_rr_nap', make_ref()}).
%% true
%% '''
-module(riarc_replay_wait).

-export([nap/0, probe/0, drop_probe/1, timed_out/0, own/1]).

-include("riarc_replay_rt.hrl").

%% @doc Waits about a millisecond: a timer message to itself, taken by a receive that
%% waits for nothing else.
-spec nap() -> ok.
nap() ->
    Ref = make_ref(),
    _ = erlang:send_after(1, self(), {?NAP, Ref}),
    receive {?NAP, Ref} -> ok end.

%% @doc Marks the mailbox's current end with a message to itself: a receive with a clause
%% `{'$riarc_rr_probe', Ref}' for it takes a message of its other clauses only if one
%% was there before the probe, as `after 0' would, without timing out.
-spec probe() -> reference().
probe() ->
    Ref = make_ref(),
    self() ! {?PROBE, Ref},
    Ref.

%% @doc Takes the probe Ref back once a receive took another message before it.
-spec drop_probe(reference()) -> ok.
drop_probe(Ref) ->
    receive {?PROBE, Ref} -> ok end.

%% @doc A replay took a recorded timeout without waiting, so the VM shows no timeout:
%% the process marks it with a message to itself, which riarc's monitors see as the
%% plain run's timeout event (riarc_replay_monitor:event/1).
-spec timed_out() -> '$riarc_rr_timeout'.
timed_out() ->
    self() ! ?TIMEOUT_MARK,
    receive ?TIMEOUT_MARK -> '$riarc_rr_timeout' end.

%% @doc True for the messages of the runtime's waits (naps and probes).
-spec own(term()) -> boolean().
own({?NAP, Ref}) -> is_reference(Ref);
own({?PROBE, Ref}) -> is_reference(Ref);
own(_) -> false.
