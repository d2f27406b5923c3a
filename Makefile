# riarc: the two set-up commands are `make demo` and `make test`; both install the toolchain
# from Debian's packages when it is missing (scripts/ensure-toolchain).
REBAR ?= rebar3
export ERL_FLAGS ?=

.PHONY: all toolchain test-toolchain build test test-all verdicts-soak eunit ct layout check xref dialyzer demo bench bench-top bench-scale bench-takeover bench-shapes bench-replay bench-quick report-check verify clean

all: build

toolchain:
	@scripts/ensure-toolchain

# The tests also need PropEr and poolboy, which riarc itself does not.
test-toolchain:
	@scripts/ensure-toolchain --test

build: toolchain
	$(REBAR) compile

# The suite in two tiers (scripts/test-tier, which prints each step's time). `make test',
# the fast tier (minutes): EUnit units, properties at moderate counts from a fixed seed,
# in-VM integration, the doc examples; the Common Test suites' fast cases, one peer-node
# suite among them; the architecture (apps along their dependency arrows, no module
# cycles), xref and Dialyzer. `make test-all' (what CI runs) adds the stress, soak,
# loaded, distributed and fault-campaign tiers: the same steps with RIARC_TIER=all.
test: test-toolchain
	@scripts/test-tier fast

test-all: test-toolchain
	@scripts/test-tier all

# The differential oracle (riarc_oracle_tests: random systems and properties, every mode
# against the reference interpreter) at 100 times the fast tier's cases.
verdicts-soak: test-toolchain
	RIARC_ORACLE_CASES=1500 $(REBAR) eunit --module=riarc_oracle_tests

layout: test-toolchain
	$(REBAR) as test compile
	scripts/check-layout

eunit: test-toolchain
	$(REBAR) eunit

ct: test-toolchain
	$(REBAR) ct

xref: toolchain
	$(REBAR) xref

dialyzer: toolchain
	$(REBAR) dialyzer

check: xref dialyzer

# The main job: the bundled buggy system monitored by riarc, then what monitoring costs on
# a small scale (baseline, riarc, centralised and inline monitoring, 3 runs each; a few
# minutes), ending with a summary of at most five lines and the report's path.
demo: build
	@bin/riarc demo

# Benchmarks are not tests: they write their results under bench-results/. `bench' is the
# study of 000 §5 at this machine's scale (docs/evaluation.md gives its run time);
# `bench-quick' is the load driver's own small experiment (docs/bench.md).
bench: build
	@bin/riarc experiment examples/bench/study-high.config --out bench-results/high
	@bin/riarc experiment examples/bench/study-moderate.config --out bench-results/moderate
	@bin/riarc study high=bench-results/high moderate=bench-results/moderate --out bench-results/study

# A heavier load, one repetition each (about 10 minutes): how the set-ups scale.
bench-top: build
	@bin/riarc experiment examples/bench/study-top.config --out bench-results/top
	@bin/riarc study top=bench-results/top --out bench-results/study-top

# Where central monitoring breaks: n = 40 000 and 80 000 workers in a 4 GiB ceiling per
# run (about 25 minutes); docs/evaluation.md reports it.
bench-scale: build
	@bin/riarc experiment examples/bench/study-scale.config --out bench-results/scale
	@bin/riarc study scale=bench-results/scale --out bench-results/study-scale

# What the takeover costs (docs/evaluation.md): riarc against centralised monitoring and
# the VM's tracing floor, instrumentation alone, 5 interleaved repetitions (~15 minutes).
bench-takeover: build
	@scripts/bench-takeover

# What monitoring costs on systems of different shapes (flat, chains, wide trees,
# ping-pong, the load driver) with "no process receives {error, _}": baseline, the VM's
# tracing with riarc's trace patterns (the floor), riarc and centralised, fresh VMs,
# interleaved; the load driver's MRT with instrumentation alone; ends with issue 30's
# targets (about 6 minutes); docs/evaluation.md has a run.
bench-shapes: build
	@scripts/bench-shapes

# Record & replay (docs/replay.md): Savina-style programs unrecorded, recorded with each
# strategy and replayed, 5 runs each; writes bench-results/replay.md.
bench-replay: build
	@mkdir -p bench-results
	@erl -noshell -pa _build/default/lib/*/ebin -eval 'riarc_replay_bench:main(["bench-results/replay.md", "5"]), halt().'

bench-quick: build
	@bin/riarc experiment examples/bench/quick.config --out bench-results/quick

# The HTML report of the load driver's small experiment, rendered in a real browser
# (headless chromium) and checked: tables, images, no raw Markdown, nothing from the network.
report-check: bench-quick
	scripts/report-check bench-results/quick/report.html

# The model check of the tracer core (docs/core.md, "Model checking the core"): every spawn
# tree of up to 4 processes under every arrangement of monitors, of 5 and 6 with the
# root's monitor alone and with the root's and the last process's; one search per
# arrangement, on every core; a line per system, totals per size.
verify: build
	erl -noshell -pa _build/default/lib/*/ebin -eval 'riarc_explore:main([{1, every}, {2, every}, {3, every}, {4, every}, {5, [none, last]}, {6, [none, last]}, {3, every, #{adopt => 1}}, {4, every, #{adopt => 1}}, {4, every, #{adopt => 100}}])'

clean:
	rm -rf _build
