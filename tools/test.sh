#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what the tests need, builds the engine
# and the local control plane when they are not cached, then runs every test in one pytest
# session. Extra arguments go to pytest (e.g. tools/test.sh -k taints).
set -euo pipefail
cd "$(dirname "$0")/.."

tools/setup.sh
.venv/bin/ruff check .

# The e2e tier needs the real engine and control plane; built once per machine, then cached.
started=$(date +%s)
tools/engine/build.sh pulumi python kubernetes
# pulumi-resource-command cannot be built while the module proxy refuses its module; the
# e2e tests that need it (preflight through the engine) say so and skip.
tools/engine/build.sh command || echo "test.sh: pulumi-resource-command unavailable: preflight e2e tests will skip" >&2
tools/cluster/build.sh
echo "test.sh: toolchain ready in $(( $(date +%s) - started ))s" >&2

exec .venv/bin/python -m pytest "$@"
