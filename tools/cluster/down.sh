#!/usr/bin/env bash
# Stops the local cluster started by up.sh: the gpu-registrar, then the kwok cluster `gpu-nodes`.
# Usage: tools/cluster/down.sh [--stop]
#   (default) delete the cluster: processes, etcd data, pki, kubeconfig, the containers' logs
#             (.state/cluster is emptied of them; logs of the registrar stay)
#   --stop    only stop its processes; `up.sh` starts the same cluster again with its data
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=env.sh
source "$HERE/env.sh"
export KUBECONFIG="$GPU_NODES_STATE/kubeconfig"
CLUSTER=gpu-nodes

MODE=delete
case "${1:-}" in
  "") ;;
  --stop) MODE=stop ;;
  -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
  *) echo "down.sh: unknown argument: $1" >&2; exit 2 ;;
esac

PIDFILE="$GPU_NODES_STATE/gpu-registrar.pid"
if [ -f "$PIDFILE" ]; then
  pid=$(cat "$PIDFILE")
  # Only our own process: the pid must still be a gpu-registrar.py.
  if [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q gpu-registrar.py; then
    kill "$pid"
    for _ in $(seq 1 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    if [ -d "/proc/$pid" ]; then kill -9 "$pid" 2>/dev/null || true; fi
    echo "[down] gpu-registrar (pid $pid) stopped" >&2
  fi
  rm -f "$PIDFILE"
fi

# The exporter pods' IPs the registrar bound on lo (/32s of 198.18.0.0/15, see up.sh pod_cidr): it unbinds them when
# it stops, but not when it was killed.
if command -v ip >/dev/null; then
  for addr in $(ip -4 -o addr show dev lo | awk '{print $4}' | grep -E '^198\.1[89]\.[0-9]+\.[0-9]+/32$' || true); do
    if ip addr del "$addr" dev lo 2>/dev/null; then echo "[down] unbound $addr from lo" >&2; fi
  done
fi

if [ ! -f "$KWOK_WORKDIR/clusters/$CLUSTER/kwok.yaml" ]; then
  echo "[down] no cluster $CLUSTER under $KWOK_WORKDIR" >&2
  rm -f "$KUBECONFIG"
  exit 0
fi
if ! command -v kwokctl >/dev/null; then
  echo "down.sh: kwokctl not built (tools/cluster/build.sh kwok)" >&2; exit 1
fi

if [ "$MODE" = stop ]; then
  kwokctl --name "$CLUSTER" stop cluster
else
  # --kubeconfig: the file kwokctl removes the cluster's context from (default ~/.kube/config)
  kwokctl --name "$CLUSTER" delete cluster --kubeconfig "$KUBECONFIG"
  rm -f "$KUBECONFIG" "$GPU_NODES_STATE/nodes.yaml" "$GPU_NODES_STATE/kwokctl-config.yaml" "$GPU_NODES_STATE/kwok-stages.yaml"
  rm -rf "$GPU_NODES_STATE/pod-logs"
fi
[ "$MODE" = stop ] && echo "[down] cluster $CLUSTER stopped" >&2 || echo "[down] cluster $CLUSTER deleted" >&2
