# The project's entry points; each target is one script under tools/.
.PHONY: local-up local-down unit test bench bench-engine bench-profile lint release-tags

local-up:     ## local cluster + fake GPU machines + `pulumi up --stack local`, then the report
	tools/local/up.sh

local-down:   ## stop the local cluster and machines (state under .state/ is kept)
	tools/local/down.sh

unit:         ## the five-minute loop: every test that needs neither the engine nor the local cluster
	tools/unit.sh

test:         ## every test: unit (mocks), preflight script (bash, real sshd), e2e (real engine)
	tools/test.sh

bench:
	tools/setup.sh
	.venv/bin/python -m bench.program_bench

# Real engine vs a kubectl runbook on the local cluster; run it alone (see bench/README.md):
#   make bench-engine SIZES=10,30
#   make bench-engine SIZES=100 BENCH_ARGS=--skip-checkpoints   # the engine without per-step state saves
#   make bench-engine SIZES=1000 BENCH_ARGS="--split 10 --at-once 1,2"  # one fleet over 10 stacks (bench/split.py)
SIZES ?= 10,30
BENCH_ARGS ?=
bench-engine:
	tools/setup.sh
	tools/toolchain.sh
	.venv/bin/python -m bench.engine_bench --sizes $(SIZES) $(BENCH_ARGS)

# Where one stack's drift check spends its core-seconds, by process and by Python function (bench/README.md):
#   make bench-profile NODES=100
NODES ?= 100
bench-profile:
	tools/setup.sh
	tools/toolchain.sh
	.venv/bin/python -m bench.profile --nodes $(NODES)

release-tags: ## tag each release (v0.4.0, ...) on the commit releases.txt records, in this clone; idempotent
	python3 tools/release_tags.py

lint:
	tools/setup.sh
	.venv/bin/ruff check .
	.venv/bin/mypy
	.venv/bin/mypy policy  # its own program, with its own __main__.py
	tools/shellcheck.sh
