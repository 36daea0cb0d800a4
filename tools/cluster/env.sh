# shellcheck shell=bash
# Source me: puts the locally built control-plane binaries first on PATH (so our kubectl wins
# over any other one, e.g. an old /usr/bin/kubectl) and points kubectl/kwokctl at the local
# cluster's state under <repo>/.state/cluster.
#   source tools/cluster/env.sh
# Exports: GPU_NODES_CACHE_BIN (the bin dirs), GPU_NODES_STATE, KWOK_WORKDIR, KUBECONFIG.
# Set GPU_NODES_KEEP_KUBECONFIG=1 to leave KUBECONFIG alone.

_gpu_nodes_here="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)"
# shellcheck source=versions.sh
. "$_gpu_nodes_here/versions.sh"

GPU_NODES_CACHE_BIN="$CLUSTER_CACHE/kubernetes-$CLUSTER_K8S_VERSION/bin:$CLUSTER_CACHE/etcd-$CLUSTER_ETCD_VERSION/bin:$CLUSTER_CACHE/kwok-$CLUSTER_KWOK_VERSION/bin"
# Drop earlier copies of our dirs, then prepend them: sourcing twice keeps one copy, in front.
_gpu_nodes_path=":$PATH:"
for _d in $(printf '%s' "$GPU_NODES_CACHE_BIN" | tr ':' ' '); do
  while [ "${_gpu_nodes_path#*:"$_d":}" != "$_gpu_nodes_path" ]; do
    _gpu_nodes_path="${_gpu_nodes_path%%:"$_d":*}:${_gpu_nodes_path#*:"$_d":}"
  done
done
_gpu_nodes_path="${_gpu_nodes_path#:}"
PATH="$GPU_NODES_CACHE_BIN:${_gpu_nodes_path%:}"
PATH="${PATH%:}"
export PATH GPU_NODES_CACHE_BIN

GPU_NODES_STATE="$(cd "$_gpu_nodes_here/../.." && pwd)/.state/cluster"
export GPU_NODES_STATE
# kwokctl keeps its clusters, pki, logs and config under $KWOK_WORKDIR (default ~/.kwok).
export KWOK_WORKDIR="$GPU_NODES_STATE/kwok"
if [ -z "${GPU_NODES_KEEP_KUBECONFIG:-}" ]; then
  export KUBECONFIG="$GPU_NODES_STATE/kubeconfig"
fi
hash -r 2>/dev/null || true
unset _gpu_nodes_here _gpu_nodes_path _d
