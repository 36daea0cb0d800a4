#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what the tests need, builds the engine
# and the local control plane when they are not cached, then runs every test in one pytest
# session. Extra arguments go to pytest (e.g. tools/test.sh -k taints).
set -euo pipefail
cd "$(dirname "$0")/.."

tools/setup.sh
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/mypy policy  # its own program, with its own __main__.py
tools/shellcheck.sh

# The whole suite (no pytest arguments) also runs the unit tier at both ends of pyproject.toml's
# dependency ranges, each in a virtualenv of its own (docs/testing.md, "Both ends of the ranges").
if (($# == 0)); then
  tools/ends.sh floor -q
  tools/ends.sh newest -q
fi

# The e2e tier needs the real engine and control plane; built once per machine, then cached.
tools/toolchain.sh

exec .venv/bin/python -m pytest "$@"
