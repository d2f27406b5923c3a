-module(riarc_remote).
-export([attach/4]).
-spec attach(node(), term(), term(), map()) -> {error, term()}.
attach(_N, _T, _S, _O) -> {error, nyi}.
