%% @doc Grammar of riarc's property language: sHML in detectEr's syntax. Takes the tokens
%% of {@link riarc_shml_lexer} (annotated with {Line, Column} by {@link riarc_shml}) and
%% returns a list of clauses; patterns and guards come out in Erlang's abstract format.
%% The AST:
%% ```
%% clause  :: {clause, Anno, Target, Formula}
%% Target  :: {call, Anno, M, F, Args} | {badcall, Anno, M, Expr} | {other, Expr}
%%            (checked later: must be a call)
%% Formula :: {ff, Anno} | {tt, Anno} | {rvar, Anno, Name} | {max, Anno, Name, Formula}
%%          | {'and', Anno, [Formula]} | {nec, Anno, Action, Formula}
%%          | {unknown, Anno, Name, [Formula]}                 % rejected later, with a message
%% Action  :: {act, Anno, spawn | init | exit | send | recv | timeout, [Expr], Guard}
%%            (timeout: `P ?? timeout', one field P)
%% '''
%% The one-line forms `never E' and `after A never B' come out as that AST too (see
%% never_clause/4): nothing after the parser knows them.
%% ```
%% 1> {ok, Ts} = riarc_shml:tokens("with m:f() monitor ff.", "x.prop").
%% 2> riarc_shml_parser:parse(Ts).
%% {ok,[{clause,{1,1},{call,{1,6},{atom,{1,6},m},{atom,{1,8},f},[]},{ff,{1,20}}}]}
%% '''

Nonterminals
file clause target formula formulas action guard guard_seq call_pat event
expr expr_100 expr_150 expr_160 expr_200 expr_300 expr_400 expr_500 expr_600 expr_max
exprs list_tail map_fields map_field strings comp_op list_op add_op mult_op prefix_op
bin_elements bin_element bit_expr opt_bit_size opt_bit_type_list bit_type_list bit_type.

Terminals
with monitor 'when' max ff tt 'and' 'or' 'andalso' 'orelse' 'not' 'div' 'rem' 'band'
'bor' 'bxor' 'bsl' 'bsr' 'xor' 'bnot'
atom var integer float string char
'(' ')' '[' ']' '{' '}' '.' ',' ':' ';' '!' '?' '??' '|' '=' '<' '>' '+' '-' '*' '/' '#'
'->' '<-' '**' '=:=' '=/=' '==' '/=' '=<' '>=' '++' '--' '=>' ':=' '<<' '>>' clause_sep.

Rootsymbol file.

file -> clause '.' : ['$1'].
file -> clause '.' file : ['$1' | '$3'].
file -> clause clause_sep file : ['$1' | '$3'].

clause -> with target monitor formula : {clause, ?anno('$1'), '$2', '$4'}.
clause -> with target atom event : never_clause('$1', '$2', '$3', '$4').
clause -> with target atom event atom event : after_clause('$1', '$2', '$3', '$4', '$5', '$6').

event -> atom expr guard : event('$1', '$2', '$3').

target -> call_pat : '$1'.
target -> expr : {other, '$1'}.

call_pat -> expr_max ':' expr_max : remote('$2', '$1', '$3').

formula -> ff : {ff, ?anno('$1')}.
formula -> tt : {tt, ?anno('$1')}.
formula -> var : {rvar, ?anno('$1'), ?value('$1')}.
formula -> max '(' var '.' formula ')' : {max, ?anno('$1'), ?value('$3'), '$5'}.
formula -> 'and' '(' formulas ')' : {'and', ?anno('$1'), '$3'}.
formula -> '[' action ']' formula : {nec, ?anno('$1'), '$2', '$4'}.
formula -> '(' formula ')' : '$2'.
formula -> atom : {unknown, ?anno('$1'), ?value('$1'), none}.
formula -> atom '(' formulas ')' : {unknown, ?anno('$1'), ?value('$1'), '$3'}.
formula -> 'or' '(' formulas ')' : {unknown, ?anno('$1'), 'or', '$3'}.
formula -> 'not' '(' formulas ')' : {unknown, ?anno('$1'), 'not', '$3'}.

formulas -> formula : ['$1'].
formulas -> formula ',' formulas : ['$1' | '$3'].

action -> expr '->' expr ',' call_pat guard : {act, ?anno('$2'), spawn, ['$1', '$3', '$5'], '$6'}.
action -> expr '<-' expr ',' call_pat guard : {act, ?anno('$2'), init, ['$1', '$3', '$5'], '$6'}.
action -> expr '**' expr guard : {act, ?anno('$2'), exit, ['$1', '$3'], '$4'}.
action -> expr_max ':' expr_max '!' expr guard : {act, ?anno('$4'), send, ['$1', '$3', '$5'], '$6'}.
action -> expr '?' expr guard : {act, ?anno('$2'), recv, ['$1', '$3'], '$4'}.
action -> expr '??' expr guard : timeout_action('$2', '$1', '$3', '$4').

guard -> '$empty' : [].
guard -> 'when' guard_seq : '$2'.

guard_seq -> exprs : ['$1'].
guard_seq -> exprs ';' guard_seq : ['$1' | '$3'].

exprs -> expr : ['$1'].
exprs -> expr ',' exprs : ['$1' | '$3'].

expr -> expr_100 : '$1'.

expr_100 -> expr_150 '=' expr_100 : {match, ?anno('$2'), '$1', '$3'}.
expr_100 -> expr_150 : '$1'.

expr_150 -> expr_160 'orelse' expr_150 : op('$2', '$1', '$3').
expr_150 -> expr_160 : '$1'.

expr_160 -> expr_200 'andalso' expr_160 : op('$2', '$1', '$3').
expr_160 -> expr_200 : '$1'.

expr_200 -> expr_300 comp_op expr_300 : op('$2', '$1', '$3').
expr_200 -> expr_300 : '$1'.

expr_300 -> expr_400 list_op expr_300 : op('$2', '$1', '$3').
expr_300 -> expr_400 : '$1'.

expr_400 -> expr_400 add_op expr_500 : op('$2', '$1', '$3').
expr_400 -> expr_500 : '$1'.

expr_500 -> expr_500 mult_op expr_600 : op('$2', '$1', '$3').
expr_500 -> expr_600 : '$1'.

expr_600 -> prefix_op expr_600 : {op, ?anno('$1'), ?cat('$1'), '$2'}.
expr_600 -> expr_max : '$1'.

expr_max -> var : '$1'.
expr_max -> atom : '$1'.
expr_max -> integer : '$1'.
expr_max -> float : '$1'.
expr_max -> char : '$1'.
expr_max -> strings : '$1'.
expr_max -> '(' expr ')' : '$2'.
expr_max -> '[' ']' : {nil, ?anno('$1')}.
expr_max -> '[' expr list_tail : {cons, ?anno('$1'), '$2', '$3'}.
expr_max -> '{' '}' : {tuple, ?anno('$1'), []}.
expr_max -> '{' exprs '}' : {tuple, ?anno('$1'), '$2'}.
expr_max -> '#' '{' '}' : {map, ?anno('$1'), []}.
expr_max -> '#' '{' map_fields '}' : {map, ?anno('$1'), '$3'}.
expr_max -> atom '(' ')' : {call, ?anno('$1'), '$1', []}.
expr_max -> atom '(' exprs ')' : {call, ?anno('$1'), '$1', '$3'}.
expr_max -> var '(' ')' : {call, ?anno('$1'), '$1', []}.
expr_max -> var '(' exprs ')' : {call, ?anno('$1'), '$1', '$3'}.

expr_max -> '<<' '>>' : {bin, ?anno('$1'), []}.
expr_max -> '<<' bin_elements '>>' : {bin, ?anno('$1'), '$2'}.

bin_elements -> bin_element : ['$1'].
bin_elements -> bin_element ',' bin_elements : ['$1' | '$3'].

bin_element -> bit_expr opt_bit_size opt_bit_type_list :
    {bin_element, element(2, '$1'), '$1', '$2', '$3'}.

bit_expr -> prefix_op expr_max : {op, ?anno('$1'), ?cat('$1'), '$2'}.
bit_expr -> expr_max : '$1'.

opt_bit_size -> '$empty' : default.
opt_bit_size -> ':' expr_max : '$2'.

opt_bit_type_list -> '$empty' : default.
opt_bit_type_list -> '/' bit_type_list : '$2'.

bit_type_list -> bit_type : ['$1'].
bit_type_list -> bit_type '-' bit_type_list : ['$1' | '$3'].

bit_type -> atom : ?value('$1').
bit_type -> atom ':' integer : {?value('$1'), ?value('$3')}.

strings -> string : '$1'.
strings -> string strings : {string, ?anno('$1'), ?value('$1') ++ ?value('$2')}.

list_tail -> ']' : {nil, ?anno('$1')}.
list_tail -> '|' expr ']' : '$2'.
list_tail -> ',' expr list_tail : {cons, ?anno('$2'), '$2', '$3'}.

map_fields -> map_field : ['$1'].
map_fields -> map_field ',' map_fields : ['$1' | '$3'].

map_field -> expr '=>' expr : {map_field_assoc, ?anno('$2'), '$1', '$3'}.
map_field -> expr ':=' expr : {map_field_exact, ?anno('$2'), '$1', '$3'}.

comp_op -> '==' : '$1'.
comp_op -> '/=' : '$1'.
comp_op -> '=<' : '$1'.
comp_op -> '<' : '$1'.
comp_op -> '>=' : '$1'.
comp_op -> '>' : '$1'.
comp_op -> '=:=' : '$1'.
comp_op -> '=/=' : '$1'.

list_op -> '++' : '$1'.
list_op -> '--' : '$1'.

add_op -> '+' : '$1'.
add_op -> '-' : '$1'.
add_op -> 'bor' : '$1'.
add_op -> 'bxor' : '$1'.
add_op -> 'bsl' : '$1'.
add_op -> 'bsr' : '$1'.
add_op -> 'or' : '$1'.
add_op -> 'xor' : '$1'.

mult_op -> '/' : '$1'.
mult_op -> '*' : '$1'.
mult_op -> 'div' : '$1'.
mult_op -> 'rem' : '$1'.
mult_op -> 'band' : '$1'.
mult_op -> 'and' : '$1'.

prefix_op -> '+' : '$1'.
prefix_op -> '-' : '$1'.
prefix_op -> 'bnot' : '$1'.
prefix_op -> 'not' : '$1'.

Erlang code.

-define(anno(T), element(2, T)).
-define(value(T), element(3, T)).
-define(cat(T), element(1, T)).

%% The one-line forms, written as the sHML they mean (docs/properties.md, "One-line
%% properties"):
%%   never E          max(X. and([E] ff, [L] X))
%%   after A never B  max(X. and([A] max(Y. and([B] ff, [L] Y, ...)), [L] X, ...))
%% where the loops [L] match every event of each kind A and B name, so that every other
%% event of those kinds leads back to the same state.
never_clause(With, Target, {atom, _, never}, Ev) ->
    {clause, ?anno(With), Target, never_formula(Ev, kinds([Ev]))};
never_clause(_With, _Target, Word, _Ev) ->
    return_error(?anno(Word), "expected monitor, never or after after the with pattern").

after_clause(With, Target, {atom, _, 'after'}, A, {atom, _, never}, B) ->
    Kinds = kinds([A, B]),
    {act, Anno, _, _, _} = Act = action(A),
    X = 'After',
    {clause, ?anno(With), Target,
     {max, Anno, X, {'and', Anno, [{nec, Anno, Act, never_formula(B, Kinds)} | loops(Kinds, X, Anno)]}}};
after_clause(_With, _Target, {atom, _, 'after'}, _A, Word, _B) ->
    return_error(?anno(Word), "expected never (the form is after E never E)");
after_clause(_With, _Target, Word, _A, _, _B) ->
    return_error(?anno(Word), "expected monitor, never or after after the with pattern").

never_formula(Ev, Kinds) ->
    {act, Anno, _, _, _} = Act = action(Ev),
    X = 'Never',
    {max, Anno, X, {'and', Anno, [{nec, Anno, Act, {ff, Anno}} | loops(Kinds, X, Anno)]}}.

event({atom, _, W} = Word, Pat, Guard) when W =:= 'receive'; W =:= send; W =:= exit ->
    {event, ?anno(Word), W, Pat, Guard};
event(Word, _Pat, _Guard) ->
    return_error(?anno(Word), "expected receive, send or exit").

kinds(Evs) -> lists:usort([kind(W) || {event, _, W, _, _} <- Evs]).

kind('receive') -> recv;
kind(K) -> K.

action({event, A, 'receive', Pat, Guard}) -> {act, A, recv, [any(A), Pat], Guard};
action({event, A, send, Pat, Guard}) -> {act, A, send, [any(A), any(A), Pat], Guard};
action({event, A, exit, {atom, _, abnormal}, Guard}) ->
    %% As OTP's logger and supervisors count it: any reason but normal, shutdown and
    %% {shutdown, _}.
    %% A name of this place: the two events of an after form each have their own.
    R = {var, A, list_to_atom(lists:flatten(io_lib:format("Abnormal_~w_~w", tuple_to_list(A))))},
    Tests = [{op, A, '=/=', R, {atom, A, normal}}, {op, A, '=/=', R, {atom, A, shutdown}},
             {op, A, 'orelse', {op, A, 'not', {call, A, {atom, A, is_tuple}, [R]}},
              {op, A, 'orelse',
               {op, A, '=/=', {call, A, {atom, A, tuple_size}, [R]}, {integer, A, 2}},
               {op, A, '=/=', {call, A, {atom, A, element}, [{integer, A, 1}, R]},
                {atom, A, shutdown}}}}],
    Alts = case Guard of [] -> [[]]; _ -> Guard end,
    {act, A, exit, [any(A), R], [Tests ++ Alt || Alt <- Alts]};
action({event, A, exit, Pat, Guard}) -> {act, A, exit, [any(A), Pat], Guard}.

loops(Kinds, X, A) ->
    [{nec, A, {act, A, K, loop_fields(K, A), []}, {rvar, A, X}} || K <- Kinds].

loop_fields(recv, A) -> [any(A), any(A)];
loop_fields(send, A) -> [any(A), any(A), any(A)];
loop_fields(exit, A) -> [any(A), any(A)].

any(A) -> {var, A, '_'}.

%% M:F(Args) is parsed as M ':' F(Args); anything else after the colon is not a call.
remote(Colon, M, {call, _, F, Args}) -> {call, ?anno(Colon), M, F, Args};
remote(Colon, M, Other) -> {badcall, ?anno(Colon), M, Other}.

op(Op, L, R) -> {op, ?anno(Op), ?cat(Op), L, R}.

%% P ?? timeout: the word after ?? is fixed; anything else is reported where it starts.
timeout_action(Op, P, {atom, _, timeout}, Guard) -> {act, ?anno(Op), timeout, [P], Guard};
timeout_action(_Op, _P, Other, _Guard) ->
    return_error(first_loc(Other), "expected timeout after ?? (the action is P ?? timeout)").

%% The leftmost {Line, Column} in an expression.
first_loc(Term) -> lists:min(locs(Term)).

locs({L, C} = Loc) when is_integer(L), is_integer(C) -> [Loc];
locs(T) when is_tuple(T) -> locs(tuple_to_list(T));
locs([H | T]) -> locs(H) ++ locs(T);
locs(_) -> [].
