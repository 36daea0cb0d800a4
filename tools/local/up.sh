#!/usr/bin/env bash
# The main job: a local cluster with simulated GPU nodes, a fake machine behind SSH for each,
# `pulumi up` with the real engine on stack `local`, and the per-node report.
# Usage: tools/local/up.sh [--stack NAME] [--nodes N]
set -euo pipefail
cd "$(dirname "$0")/../.."

stack=local
nodes=3
while [ $# -gt 0 ]; do
  case "$1" in
    --stack) stack=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    *) echo "up.sh: unknown argument: $1 (use --stack NAME, --nodes N)" >&2; exit 2 ;;
  esac
done

tools/setup.sh
tools/toolchain.sh
tools/cluster/up.sh --nodes "$nodes"
mapfile -t names < <(seq -f "gpu-node-%g" 1 "$nodes")
tools/fakehost/up.sh "${names[@]}" >/dev/null

# shellcheck source=env.sh
source tools/local/env.sh
pulumi stack select --create --non-interactive "$stack"
.venv/bin/python tools/local/stack_config.py --stack "$stack"
pulumi config set --secret --stack "$stack" gpu-nodes:sshPrivateKey <.state/fakehosts/id_ed25519
# --refresh: after local-down the cluster is new, and the state must learn that first.
# --suppress-outputs: the per-node report is printed below as a table, one line per node, rather than
# as the outputs' whole tree (`pulumi stack output --stack local nodeGroups` prints that).
pulumi up --stack "$stack" --yes --non-interactive --refresh --suppress-outputs
pulumi stack output --stack "$stack" nodeGroups --json | .venv/bin/python -m tools.local.report
