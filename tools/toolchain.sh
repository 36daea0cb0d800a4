#!/usr/bin/env bash
# Builds what the e2e tier and the local stack run, when it is not cached: the Pulumi engine
# (tools/engine) and the local control plane (tools/cluster), side by side, since neither
# keeps both cores busy through a cold build. Cached, it takes about a second.
set -euo pipefail
cd "$(dirname "$0")/.."

started=$(date +%s)
tools/engine/build.sh &
engine=$!
tools/cluster/build.sh &
cluster=$!
status=0
wait "$engine" || status=$?
wait "$cluster" || status=$?
echo "toolchain: ready in $(( $(date +%s) - started ))s (exit $status)" >&2
exit "$status"
