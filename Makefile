# riarc: the two set-up commands are `make demo` and `make test`; both install the toolchain
# from Debian's packages when it is missing (scripts/ensure-toolchain).
REBAR ?= rebar3
export ERL_FLAGS ?=

.PHONY: all toolchain build test eunit check xref dialyzer demo bench verify clean

all: build

toolchain:
	@scripts/ensure-toolchain

build: toolchain
	$(REBAR) compile

# The whole suite: unit, property and integration tests, then xref and Dialyzer.
test: toolchain
	$(REBAR) eunit
	$(REBAR) xref
	$(REBAR) dialyzer

eunit: toolchain
	$(REBAR) eunit

xref: toolchain
	$(REBAR) xref

dialyzer: toolchain
	$(REBAR) dialyzer

check: xref dialyzer

# The main job: the bundled buggy system monitored by riarc.
demo: build
	@bin/riarc demo

# Benchmarks are not tests: they write their results under bench-results/.
bench: build
	@bin/riarc experiment examples/bench/quick.config --out bench-results/quick

verify: build
	@bin/riarc verify --max-procs 4

clean:
	rm -rf _build
