%% A RIARC tracer process's loop state (riarc_tracer), shared with the overload watch
%% that reads and updates it between messages (riarc_tracer_overload). Nothing else
%% looks inside it.

%% The partition's root and its remote parent; where to, from the cfg's relay_to.
-type relay() :: {relay, pid(), pid()}.

%% The loop's own state around the core's: the session's monitor, the message count
%% for the mailbox watch, and the partition's analysis process (undefined when the
%% partition has none, or once it has ended: the monitor has its verdict or was
%% detached over its budget).
-record(tracer_loop, {sref :: reference(),
            cfg :: map(),
            %% Trust boundary: what goes to the session carries its token.
            session :: pid(),
            token :: reference() | undefined,
            n = 0 :: non_neg_integer() | reported,
            %% Or, for a partition relayed to its root's remote parent's session (one
            %% partition spanning nodes, the core's effect relay): where its events go.
            analysis :: undefined | pid() | relay(),
            analysis_key :: undefined | riarc_analysis:key(),   % its messages carry it
            aref :: undefined | reference(),
            %% The analysis's step clock: how far it is behind (undefined once its
            %% backlog was reported).
            clock :: undefined | riarc_analysis:clock(),
            %% The partition's events so far: if riarc ends its analysis (shed), the
            %% session counts from it what was not analysed.
            events = 0 :: non_neg_integer(),
            %% Events for the analysis not sent yet, newest first: they go in one message
            %% when the mailbox is empty or riarc_tracer's ?BATCH of them wait (a tracer that falls
            %% behind sends its monitor fewer, larger messages).
            buf = [] :: [riarc_event:event()],
            nbuf = 0 :: non_neg_integer(),
            %% Policy backpressure: the partition's processes this tracer suspended
            %% while its monitor catches up, and since when (ms).
            suspended = [] :: [pid()],
            since = 0 :: integer(),
            max_payload = infinity :: pos_integer() | infinity,
            %% Cut detection: the timer of the next look at how the VM traces this
            %% tracer's processes (riarc_tracer's ?VIEW_CHECK_MS).
            view_timer :: reference() | undefined,
            %% The processes still to look at in this round of looks (riarc_backend:
            %% look_slice/2).
            look_queue = [] :: [riarc_event:sid()],
            %% Ended processes whose exit event had not come at a look, each with its
            %% erlang:trace_delivered/1 call's reference.
            probes = #{} :: #{reference() => riarc_event:sid()},
            %% A stop request put aside until the VM has delivered every trace message it
            %% made before it (erlang:trace_delivered(all)), with that call's reference and
            %% the processes that had ended when it came (riarc_tracer's last look).
            stopping = undefined :: undefined | {reference(), term(), [riarc_event:sid()]}}).
