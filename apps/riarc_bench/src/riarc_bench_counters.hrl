%% The master's shared counters (one `counters' array): their indices, for the master
%% that counts and the collector that samples.
-define(C_CREATED, 1).
-define(C_ENDED, 2).
-define(C_REQUESTS, 3).
-define(C_ACKS, 4).
-define(C_MESSAGES, 5).
-define(N_COUNTERS, 5).
