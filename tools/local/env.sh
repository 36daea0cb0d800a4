# shellcheck shell=bash
# Source me: the engine and the local cluster on PATH, and a file backend for local stacks.
#   source tools/local/env.sh
_local_here="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)"
_local_root="$(cd "$_local_here/../.." && pwd)"
# shellcheck source=../engine/env.sh
. "$_local_root/tools/engine/env.sh"
# shellcheck source=../cluster/env.sh
. "$_local_root/tools/cluster/env.sh"
# metadata=skip: no `.attrs` sidecar beside each state file. The sidecar is truncated and
# rewritten on every save (gocloud.dev blob/fileblob attrs.go, setAttrs), so a run killed at
# that moment leaves it empty and every later command fails "failed to load checkpoint: EOF";
# Pulumi's file backend never reads it (pkg/backend/diy uses no blob attributes).
export PULUMI_BACKEND_URL="file://$_local_root/.state/pulumi?metadata=skip"
# Local stacks only: their single secret is the throwaway key of the fake machines.
export PULUMI_CONFIG_PASSPHRASE="${PULUMI_CONFIG_PASSPHRASE:-gpu-nodes-local-only}"
mkdir -p "$_local_root/.state/pulumi"
unset _local_here _local_root
