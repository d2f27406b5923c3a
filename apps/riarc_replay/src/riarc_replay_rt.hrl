%% What the modules of record & replay's per-process runtime share: the state a process
%% of a run keeps in its process dictionary (riarc_replay_rt for processes, sends,
%% receives and values; riarc_replay_versions for the sender side's receive;
%% riarc_replay_take for the messages a receive takes; riarc_replay_stream for its
%% events; riarc_replay_timers; riarc_replay_ets), and the event types of its stream
%% (docs/replay.md).
-ifndef(RIARC_REPLAY_RT_HRL).
-define(RIARC_REPLAY_RT_HRL, true).

-define(KEY, '$riarc_rr').
-define(WAIT, '$riarc_rr_wait').
%% The runtime's own messages of its waits (riarc_replay_wait): a replayed timeout's
%% mark, a back-off's timer, a probe of the mailbox.
-define(TIMEOUT_MARK, '$riarc_rr_timed_out').
-define(NAP, '$riarc_rr_nap').
-define(PROBE, '$riarc_rr_probe').
%% What a woven receive does inline (riarc_replay_transform): rr (recording, receiver
%% side), rv (recording, sender side, nothing in the version buffer); anything else
%% calls riarc_replay_rt:recv/2.
-define(MODE, '$riarc_rr_mode').
%% Sender side: {Vnext, Vcount}: the lowest version that has not arrived yet, and the
%% versioned receives since the last plain or timed-out one (the version buffer itself,
%% which changes only when messages arrive out of order, is #replay_run.vbuf); see
%% riarc_replay_versions.
-define(VER, '$riarc_rr_ver').
%% A RECV's data: the sender's index (24 bits) and the message's seq (40 bits).
-define(SEQ_BITS, 40).

%% Event types (the 1-byte header). A value type with bit 7 set means: the data is an
%% index into the process's side table, which holds the value.
-define(EV_RECV, 1).        % receiver side: took the message (sender index:24, seq:40)
-define(EV_RECV_EXT, 2).    % took a message no woven sender wrapped
-define(EV_TIMEOUT, 3).     % the receive's `after' fired
-define(EV_SEND, 4).        % sender side: the receiver's version this message got
-define(EV_ETS, 5).         % the table's turn (version) of this ETS operation
-define(EV_FROM, 6).        % the plain message the RECV_EXT before took: kind:32, index:32
-define(EV_REPEAT, 7).      % the event before it (RECV or SEND) N:40 more times, data + Step:24 each
-define(EV_MONO, 16).
-define(EV_SYSTIME, 17).
-define(EV_TIMESTAMP, 18).  % {Mega, Sec, Micro} packed as 20+20+24 bits
-define(EV_NOW, 19).        % same packing
-define(EV_RAND_FLOAT, 20). % the IEEE 754 double's bits
-define(EV_RAND_INT, 21).
-define(EV_UNIQUE, 22).
-define(EV_REF, 23).        % data: the ordinal of this ref among the process's refs
-define(EV_TIMER, 24).      % cancel_timer/read_timer: ms left, -1 for false
-define(EV_DELAY, 25).      % an absolute timer's delay in ms, from its start
-define(SIDE, 16#80).

%% A process's state in a run, under ?KEY.
-record(replay_run, {run :: riarc_replay_rt:run(),
             mode :: record | replay,
             strategy :: receiver | sender,
             tab :: ets:tid(),
             idx :: non_neg_integer(),
             lid :: [pos_integer()],
             kids = 0 :: non_neg_integer(),
             refs = 0 :: non_neg_integer(),
             %% Recording: the next chunk's number, and side values (the events are
             %% under riarc_replay_stream's buffer).
             chunk = 0 :: non_neg_integer(),
             side = [] :: [term()],
             nside = 0 :: non_neg_integer(),
             %% Replay: the process's stream and side table, and where it is.
             stream = <<>> :: binary(),
             pos = 0 :: non_neg_integer(),
             sides = {} :: tuple(),
             progress :: counters:counters_ref(),
             %% Replay: a REPEAT being replayed: events of type rtype left, and the
             %% next one's data.
             rep = 0 :: non_neg_integer(),
             rtype = 0 :: 0..255,
             rdata = 0 :: integer(),
             rstep = 0 :: non_neg_integer(),
             %% Receiver side: this process's wrapped sends so far (the next message's
             %% seq) in slot 1, an atomics array of the process: one call, and nothing
             %% allocated, per send.
             seq :: atomics:atomics_ref(),
             %% Sender side: versioned messages taken out of the mailbox, not yet
             %% received (the lowest version not arrived yet is under ?VER).
             vbuf = gb_trees:empty() :: gb_trees:tree(),
             %% The shared objects' turns (riarc_replay_ets).
             tabs = #{} :: #{term() => atomics:atomics_ref() | private}}).

-endif.
