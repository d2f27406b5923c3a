%% The initial call the model checker gives each process of a system, shared by the model
%% (riarc_explore_model: spawn events, Λ) and the reduction (riarc_explore_por: it finds
%% spawn events in tracer states by it). It is only a label: no such function exists.
%% It keeps riarc_explore's name, which the traces of failures have always printed.
-ifndef(RIARC_EXPLORE_PROCESS_HRL).
-define(RIARC_EXPLORE_PROCESS_HRL, true).

-define(PROCESS_MFA(S), {riarc_explore, process, [S]}).

-endif.
