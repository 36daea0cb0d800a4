#!/usr/bin/env bash
# The five-minute loop: every tier that needs neither the engine nor the local cluster (the unit
# tests under Pulumi's mocks, the preflight script under real bash and a real sshd, the config and
# docs checks), selected by pytest markers (docs/testing.md). Lint first, as make test does. Extra
# arguments go to pytest (e.g. tools/unit.sh tests/config -x).
set -euo pipefail
cd "$(dirname "$0")/.."

tools/setup.sh
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/mypy --strict gpu_nodes/config  # the declarations and their reader, strictly typed
GPU_NODES_TIER=unit exec .venv/bin/python -m pytest -m "not engine and not cluster" "$@"
