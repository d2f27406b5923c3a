%% @doc The inline weaver (000 fig. 1a): a parse transform that makes a module's processes
%% run their monitors themselves, at the points where riarc's tracing would see an event.
%%
%% What it rewrites, in every function and fun of the module:
%% <ul>
%% <li>`To ! Msg' and `erlang:send(To, Msg)': {@link riarc_inline_rt:send/2} (the send
%%     event, after the send);</li>
%% <li>every clause of every `receive': the clause's pattern is bound to a fresh
%%     variable and the clause body starts with {@link riarc_inline_rt:recv/1} (the
%%     receive event, when the message is taken); guards are untouched; an `after'
%%     body starts with {@link riarc_inline_rt:timeout/0} (the timeout event riarc's
%%     tracing shows for a receive that timed out);</li>
%% <li>`spawn', `spawn_link', `spawn_monitor', `spawn_opt' (plain or `erlang:') and
%%     `proc_lib:spawn', `spawn_link', `spawn_opt', local forms only:
%%     {@link riarc_inline_rt:spawn/2}, which asks Λ in the parent and starts the child
%%     with its monitor, its init event and its exit event;</li>
%% <li>`timer:sleep/1': {@link riarc_inline_rt:sleep/1}, the timeout event after it (OTP's
%%     sleep is a receive with only an `after', which riarc's tracing shows);</li>
%% <li>`gen_server:call/2,3', `cast/2' and `reply/2': the messages gen_server sends
%%     and receives for them; `gen_server:start/3,4', `start_link/3,4' and
%%     `start_monitor/3,4': the spawn of the server and the receive of its ack;</li>
%% <li>in a module with `-behaviour(gen_server)': `init/1' takes the process's monitor
%%     (OTP's code that spawned it is not woven) and reports the ack proc_lib sends once
%%     it returns, `handle_call/3' the request and the reply its result makes,
%%     `handle_cast/2' and `handle_info/2' the message they were called for,
%%     `terminate/2' the exit (a module without one gets one that only reports it:
%%     gen_server calls it where it would have called none, and ignores its result);</li>
%% <li>the timeout a callback's result asks for (`init/1', `handle_call/3',
%%     `handle_cast/2', `handle_info/2', `handle_continue/2'): in a monitored process, a
%%     timer stands for it, and a first clause of `handle_info/2' turns the timer's
%%     message into the `handle_info(timeout, State)' gen_server would have called, the
%%     timeout event riarc's tracing shows; a message `timeout' stays a message (see
%%     riarc_inline_rt's gen_timeout). A module without `handle_info/2' gets one that
%%     reports what it is sent and does what gen_server does without one.</li>
%% </ul>
%% Each of these events is the one riarc's tracing shows for what OTP's code does there
%% (OTP 25's message shapes), so a monitor sees the same trace inline as outline.
%% Use it at compile time with `-compile({parse_transform, riarc_inline_transform}).', or
%% on compiled modules with {@link riarc_inline:instrument/1}.
%% ```
%% 1> {ok, Forms} = epp:parse_file("apps/riarc_testkit/src/riarc_demo_pqr.erl", []).
%% 2> Woven = riarc_inline_transform:parse_transform(Forms, []).
%% 3> {ok, riarc_demo_pqr, _Bin} = compile:forms(Woven, [binary]).
%% '''
-module(riarc_inline_transform).

-export([parse_transform/2]).

-define(RT, riarc_inline_rt).
-define(SPAWNS, [spawn, spawn_link, spawn_monitor, spawn_opt]).
-define(PROC_LIB_SPAWNS, [spawn, spawn_link, spawn_opt]).

%% @doc The parse transform.
-spec parse_transform([erl_parse:abstract_form()], [compile:option()]) -> [erl_parse:abstract_form()].
parse_transform(Forms, _Options) ->
    Module = module(Forms),
    Local = [{N, A} || {function, _, N, A, _} <- Forms],
    GenServer = lists:any(fun({attribute, _, B, gen_server}) when B =:= behaviour; B =:= behavior -> true;
                             (_) -> false
                          end, Forms),
    Ctx = #{module => Module, local => Local, gen_server => GenServer},
    Missing = [F || GenServer, F <- [{terminate, 2}, {handle_info, 2}], not lists:member(F, Local)],
    marked(added(Missing, [form(F, Ctx) || F <- Forms], Module)).

%% The woven module says so (riarc_inline_rt:woven/1): a run whose processes run code
%% that reports nothing must not read as one that saw everything.
marked(Forms) ->
    {Before, After} = lists:splitwith(fun({attribute, _, module, _}) -> false; (_) -> true end, Forms),
    [Mod = {attribute, L, module, _} | Rest] = After,
    Before ++ [Mod, {attribute, L, ?RT:woven_attribute(), true} | Rest].

%% The callbacks a gen_server module lacks, added. Without terminate/2, the exit of a
%% server that stops itself is OTP's, which nothing woven sees; without handle_info/2,
%% neither are its plain messages nor its timeout.
added([], Forms, _Module) ->
    Forms;
added(Missing, Forms, Module) ->
    {Before, [Eof]} = lists:split(length(Forms) - 1, Forms),
    L = element(2, Eof),
    Export = {attribute, L, export, Missing},
    %% An export attribute must come before the functions: after the module's own.
    {Attrs, Funs} = lists:splitwith(fun({function, _, _, _, _}) -> false; (_) -> true end, Before),
    Attrs ++ [Export] ++ Funs ++ [added_function(F, L, Module) || F <- Missing] ++ [Eof].

added_function({terminate, 2}, L, _Module) ->
    {function, L, terminate, 2,
     [{clause, L, [{var, L, 'Reason'}, {var, L, '_'}], [],
       [rt(L, gen_exit, [{var, L, 'Reason'}]), {atom, L, ok}]}]};
added_function({handle_info, 2}, L, Module) ->
    {function, L, handle_info, 2,
     [timer_clause(L),
      {clause, L, [{var, L, 'Info'}, {var, L, 'State'}], [],
       [rt(L, gen_unhandled, [{atom, L, Module}, {var, L, 'Info'}, {var, L, 'State'}])]}]}.

%% handle_info/2's first clause: the message of the timer that stands for gen_server's
%% timeout becomes the call gen_server would have made for it; a stale one is dropped.
timer_clause(L) ->
    Timer = {var, L, 'RiarcInline@Timer'},
    State = {var, L, 'RiarcInline@State'},
    Message = {tuple, L, [{atom, L, timeout}, Timer, {atom, L, ?RT:gen_timer_tag()}]},
    {clause, L, [Message, State], [[{call, L, {atom, L, is_reference}, [Timer]}]],
     [{'case', L, rt(L, gen_fired, [Timer]),
       [{clause, L, [{atom, L, true}], [], [{call, L, {atom, L, handle_info}, [{atom, L, timeout}, State]}]},
        {clause, L, [{atom, L, false}], [], [{tuple, L, [{atom, L, noreply}, State]}]}]}]}.

module(Forms) ->
    hd([M || {attribute, _, module, M} <- Forms]).

form({function, L, Name, Arity, Clauses}, Ctx) ->
    {Clauses1, _} = lists:mapfoldl(fun(C, N) -> callback_clause(Name, Arity, C, N, Ctx) end,
                                   0, Clauses),
    case Ctx of
        #{gen_server := true} when {Name, Arity} =:= {handle_info, 2} ->
            {function, L, Name, Arity, [timer_clause(L) | Clauses1]};
        _ ->
            {function, L, Name, Arity, Clauses1}
    end;
form(Other, _Ctx) ->
    Other.

%% The gen_server callbacks report what gen_server received for them and what their
%% results make it do; any other function is only walked.
callback_clause(Name, Arity, {clause, L, Pats, Guards, Body}, N0, Ctx = #{gen_server := true})
  when {Name, Arity} =:= {init, 1}; {Name, Arity} =:= {handle_call, 3};
       {Name, Arity} =:= {handle_cast, 2}; {Name, Arity} =:= {handle_info, 2};
       {Name, Arity} =:= {handle_continue, 2}; {Name, Arity} =:= {terminate, 2} ->
    {Vars, N1} = fresh_vars(length(Pats), L, N0),
    Bound = [{match, L, P, V} || {P, V} <- lists:zip(Pats, Vars)],
    {Body1, N2} = walk(Body, N1, Ctx),
    {{clause, L, Bound, Guards, callback_call(Name, Vars, L, Ctx) ++ callback_result(Name, Vars, Body1, L)}, N2};
callback_clause(_Name, _Arity, Clause, N0, Ctx) ->
    walk(Clause, N0, Ctx).

%% What OTP's code does with init/1's and handle_call/3's results (an ack, a reply),
%% reported once the body has given them.
callback_result(init, [_Arg], Body, L) ->
    [rt(L, gen_init_done, [{block, L, Body}])];
callback_result(handle_call, [_Req, From, _], Body, L) ->
    [rt(L, gen_handled, [From, {block, L, Body}])];
callback_result(Name, _Vars, Body, L)
  when Name =:= handle_cast; Name =:= handle_info; Name =:= handle_continue ->
    [rt(L, gen_returned, [{block, L, Body}])];
callback_result(_Name, _Vars, Body, _L) ->
    Body.

%% handle_continue/2 is called for no message: nothing to report before it.
callback_call(init, [Arg], L, #{module := M}) ->
    [rt(L, gen_init, [{atom, L, M}, Arg])];
callback_call(handle_call, [Req, From, _], L, _) ->
    [rt(L, gen_info, [{tuple, L, [{atom, L, '$gen_call'}, From, Req]}])];
callback_call(handle_cast, [Msg, _], L, _) ->
    [rt(L, gen_info, [{tuple, L, [{atom, L, '$gen_cast'}, Msg]}])];
callback_call(handle_info, [Info, _], L, _) ->
    [rt(L, gen_info, [Info])];
callback_call(handle_continue, _, _L, _) ->
    [];
callback_call(terminate, [Reason, _], L, _) ->
    [rt(L, gen_exit, [Reason])].

%%% The walk -----------------------------------------------------------------------------

%% A walk over the abstract code, threading a counter for fresh variable names. Only
%% expression shapes are rewritten; patterns and guards cannot contain them.
walk({op, L, '!', To, Msg}, N0, Ctx) ->
    {[To1, Msg1], N1} = walk([To, Msg], N0, Ctx),
    {rt(L, send, [To1, Msg1]), N1};
walk({call, L, {remote, _, {atom, _, erlang}, {atom, _, send}}, [To, Msg]}, N0, Ctx) ->
    {[To1, Msg1], N1} = walk([To, Msg], N0, Ctx),
    {rt(L, send, [To1, Msg1]), N1};
walk({call, L, {atom, _, F}, Args}, N0, Ctx = #{local := Local}) ->
    case lists:member(F, ?SPAWNS) andalso not lists:member({F, length(Args)}, Local) of
        true -> spawn_call(L, erlang, F, Args, N0, Ctx);
        false -> walk_parts({call, L, {atom, L, F}, Args}, N0, Ctx)
    end;
walk({call, L, {remote, _, {atom, _, erlang}, {atom, _, F}}, Args} = C, N0, Ctx) ->
    case lists:member(F, ?SPAWNS) of
        true -> spawn_call(L, erlang, F, Args, N0, Ctx);
        false -> walk_parts(C, N0, Ctx)
    end;
walk({call, L, {remote, _, {atom, _, proc_lib}, {atom, _, F}}, Args} = C, N0, Ctx) ->
    case lists:member(F, ?PROC_LIB_SPAWNS) of
        true -> spawn_call(L, proc_lib, F, Args, N0, Ctx);
        false -> walk_parts(C, N0, Ctx)
    end;
walk({call, L, {remote, _, {atom, _, timer}, {atom, _, sleep}}, [T]}, N0, Ctx) ->
    {T1, N1} = walk(T, N0, Ctx),
    {rt(L, sleep, [T1]), N1};
walk({call, L, {remote, _, {atom, _, gen_server}, {atom, _, F}}, Args} = C, N0, Ctx) ->
    {Args1, N1} = walk(Args, N0, Ctx),
    case {F, length(Args)} of
        {call, A} when A =:= 2; A =:= 3 -> {rt(L, gen_call, [{atom, L, call}, list(Args1, L)]), N1};
        {cast, 2} -> {rt(L, gen_cast, Args1), N1};
        {reply, 2} -> {rt(L, gen_reply, Args1), N1};
        {Start, A} when (Start =:= start orelse Start =:= start_link orelse Start =:= start_monitor),
                        (A =:= 3 orelse A =:= 4) ->
            {rt(L, gen_start, [{atom, L, Start}, list(Args1, L)]), N1};
        _ -> walk_parts(C, N0, Ctx)
    end;
walk({'receive', L, Clauses}, N0, Ctx) ->
    {Clauses1, N1} = recv_clauses(Clauses, N0, Ctx),
    {{'receive', L, Clauses1}, N1};
walk({'receive', L, Clauses, Timeout, After}, N0, Ctx) ->
    {Clauses1, N1} = recv_clauses(Clauses, N0, Ctx),
    {[Timeout1 | After1], N2} = walk([Timeout | After], N1, Ctx),
    {{'receive', L, Clauses1, Timeout1, [rt(L, timeout, []) | After1]}, N2};
walk(Node, N0, Ctx) ->
    walk_parts(Node, N0, Ctx).

%% Anything else (a call left as it is among them): its parts are walked.
walk_parts(Node, N0, Ctx) ->
    riarc_weave:descend(fun(E, N) -> walk(E, N, Ctx) end, Node, N0).

spawn_call(L, Mod, F, Args, N0, Ctx) ->
    {Args1, N1} = walk(Args, N0, Ctx),
    {rt(L, spawn, [{tuple, L, [{atom, L, Mod}, {atom, L, F}]}, list(Args1, L)]), N1}.

%% Each clause `Pattern [when Guard] -> Body' becomes
%% `Pattern = Fresh [when Guard, not gen_timer(Fresh)] -> riarc_inline_rt:recv(Fresh), Body'.
%% Race: the timer that stands for gen_server's timeout (riarc_inline_rt) is cancelled
%% when a message is taken, but its message may be in the mailbox already; a callback's
%% own receive must not take it (gen_server's timeout is no message), so it stays for
%% gen_server's loop, whose woven handle_info/2 drops it.
recv_clauses(Clauses, N0, Ctx) ->
    lists:mapfoldl(
      fun({clause, L, [Pat], Guards, Body}, N) ->
              {[Var], N1} = fresh_vars(1, L, N),
              {Body1, N2} = walk(Body, N1, Ctx),
              Guards1 = case Guards of
                            [] -> [[not_gen_timer(Var, L)]];
                            _ -> [Conj ++ [not_gen_timer(Var, L)] || Conj <- Guards]
                        end,
              {{clause, L, [{match, L, Pat, Var}], Guards1, [rt(L, recv, [Var]) | Body1]}, N2}
      end, N0, Clauses).

%% `not (is_tuple(V) andalso tuple_size(V) =:= 3 andalso element(3, V) =:= Tag)', Tag the
%% gen_server timer's (riarc_inline_rt:gen_timer_tag/0).
not_gen_timer(V, L) ->
    IsTuple = {call, L, {atom, L, is_tuple}, [V]},
    Size = {op, L, '=:=', {call, L, {atom, L, tuple_size}, [V]}, {integer, L, 3}},
    Tag = {op, L, '=:=', {call, L, {atom, L, element}, [{integer, L, 3}, V]}, {atom, L, ?RT:gen_timer_tag()}},
    {op, L, 'not', {op, L, 'andalso', IsTuple, {op, L, 'andalso', Size, Tag}}}.

fresh_vars(K, L, N) ->
    {[{var, L, list_to_atom("RiarcInline@" ++ integer_to_list(I))} || I <- lists:seq(N, N + K - 1)],
     N + K}.

rt(L, F, Args) ->
    {call, L, {remote, L, {atom, L, ?RT}, {atom, L, F}}, Args}.

list([], L) -> {nil, L};
list([H | T], L) -> {cons, L, H, list(T, L)}.
