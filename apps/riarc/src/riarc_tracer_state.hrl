%% A RIARC tracer's state (riarc_tracer_core), shared by the modules that step it:
%% riarc_tracer_core (the algorithm), riarc_tracer_instrument (Alg. 2, a child's
%% placement), riarc_tracer_state (its maps, effects and end) and riarc_tracer_control
%% (control requests). Nothing else looks inside it.
-record(tracer, {
    mode = direct :: riarc_tracer_core:mode(),
    %% Π, the routing map.
    pi = #{} :: #{riarc_event:sid() => riarc_tracer_core:tracer() | {held, [term()]}},
    %% Γ, the traced-processes map.
    gamma = #{} :: #{riarc_event:sid() => riarc_tracer_core:mode()},
    cfg :: riarc_tracer_core:cfg(),                % Λ and the tracer's surroundings
    %% The partitions it analyses (its own, those it adopted): ςM and what they see.
    parts :: riarc_tracer_parts:t(),
    %% App. B: direct events of a process not known yet wait for its spawn event.
    pending = riarc_reorder:new() :: riarc_reorder:t(),
    %% Per routed process, the direct events of it dispatched so far (exited once its
    %% exit was), and the detach requests waiting for the rest of them (the Cut).
    seen = #{} :: #{riarc_event:sid() => non_neg_integer() | exited},
    parked = #{} :: #{riarc_event:sid() => {riarc_tracer_core:tracer(), riarc_tracer_core:cut()}},
    collected = 0 :: non_neg_integer(),            % direct events taken from the mailbox
    reordered = 0 :: non_neg_integer(),            % of which waited for their spawn (App. B)
    routed = 0 :: non_neg_integer(),               % messages dispatched or forwarded
    dtc_issued = 0 :: non_neg_integer(),           % for I16
    detached = 0 :: non_neg_integer(),             % Γ entries added in • mode, for I16
    acked = 0 :: non_neg_integer(),                % acknowledgements of our own dtc
    held = queue:new() :: queue:queue(term()),     % Invariant I14: what priority mode defers
    %% Who asked to be told once this tracer has handed on all it holds (control
    %% request settle), and with which reference.
    settling = [] :: [{riarc_tracer_core:tracer(), reference()}],
    fx = [] :: [riarc_tracer_core:effect()]        % effects of this step, newest first
}).
