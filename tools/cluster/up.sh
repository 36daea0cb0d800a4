#!/usr/bin/env bash
# Starts (or re-uses) the local kwok cluster `gpu-nodes` for end-to-end tests:
#   - kwokctl --runtime binary with the binaries built by build.sh (nothing is downloaded)
#   - state under <repo>/.state/cluster (kwok workdir, pki, logs), admin kubeconfig at
#     <repo>/.state/cluster/kubeconfig
#   - nodes gpu-node-1..N (simulated GPU machines, no nvidia.com/gpu until a device-plugin pod
#     runs on them) and cpu-node-1, all managed by kwok
#   - gpu-registrar.py in the background (pid/log under .state/cluster)
# Idempotent: re-running on a running cluster only re-applies the nodes and checks the rest.
#
# Usage: tools/cluster/up.sh [--nodes N] [--gpus G] [--timeout SECONDS]
#   --nodes N    GPU nodes to create (default 3)
#   --gpus G     GPUs per GPU node, the gpu-nodes.dev/simulated-gpus annotation (default 4)
#   --timeout S  how long to wait for the API server and for nodes to be Ready (default 180)
# Env: GPU_NODES_DRA_WIPE_DELAY  seconds a gone DRA plugin's ResourceSlices stay (default 30, as
#      kubelet); read when the registrar starts
#      GPU_NODES_FEATURE_GATES    Kubernetes feature gates for the control plane, e.g.
#      DRAExtendedResource=true; read only when the cluster is created
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=env.sh
source "$HERE/env.sh"
export KUBECONFIG="$GPU_NODES_STATE/kubeconfig"

NODES=3
GPUS=4
TIMEOUT=180
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) NODES=$2; shift 2 ;;
    --nodes=*) NODES=${1#*=}; shift ;;
    --gpus) GPUS=$2; shift 2 ;;
    --gpus=*) GPUS=${1#*=}; shift ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --timeout=*) TIMEOUT=${1#*=}; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "up.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done
[[ "$NODES" =~ ^[0-9]+$ ]] || { echo "up.sh: --nodes must be a number" >&2; exit 2; }
[[ "$GPUS" =~ ^[0-9]+$ ]] || { echo "up.sh: --gpus must be a number" >&2; exit 2; }
# Each node gets a /25 of 198.18.0.0/15 as its podCIDR (below): room for 1024 nodes, cpu-node-1 among them.
[ "$NODES" -le 1023 ] || { echo "up.sh: --nodes must be at most 1023 (each node has a /25 of 198.18.0.0/15 for its pods), not $NODES" >&2; exit 2; }

CLUSTER=gpu-nodes
START=$(date +%s)
log() { printf '[up %3ss] %s\n' "$(( $(date +%s) - START ))" "$*" >&2; }

K8S_BIN="$CLUSTER_CACHE/kubernetes-$CLUSTER_K8S_VERSION/bin"
ETCD_BIN="$CLUSTER_CACHE/etcd-$CLUSTER_ETCD_VERSION/bin"
KWOK_BIN="$CLUSTER_CACHE/kwok-$CLUSTER_KWOK_VERSION/bin"
for b in "$K8S_BIN/kube-apiserver" "$K8S_BIN/kube-controller-manager" "$K8S_BIN/kube-scheduler" \
         "$K8S_BIN/kubectl" "$ETCD_BIN/etcd" "$KWOK_BIN/kwok" "$KWOK_BIN/kwokctl"; do
  [ -x "$b" ] || { echo "up.sh: missing $b: run tools/cluster/build.sh first" >&2; exit 1; }
done
[ "$(command -v kubectl)" = "$K8S_BIN/kubectl" ] || { echo "up.sh: kubectl on PATH is not ours" >&2; exit 1; }

mkdir -p "$GPU_NODES_STATE" "$KWOK_WORKDIR"

# Everything kwokctl would otherwise download points at a local file (a local path is linked
# into the cluster's bin dir). etcdctl/etcdutl are only needed for snapshots and stay unset.
export KWOK_RUNTIME=binary
export KWOK_KUBE_VERSION="$CLUSTER_K8S_VERSION"
export KWOK_KUBE_APISERVER_BINARY="$K8S_BIN/kube-apiserver"
export KWOK_KUBE_CONTROLLER_MANAGER_BINARY="$K8S_BIN/kube-controller-manager"
export KWOK_KUBE_SCHEDULER_BINARY="$K8S_BIN/kube-scheduler"
export KWOK_KUBECTL_BINARY="$K8S_BIN/kubectl"
export KWOK_CONTROLLER_BINARY="$KWOK_BIN/kwok"
export KWOK_ETCD_BINARY="$ETCD_BIN/etcd"
export KWOK_ETCD_VERSION="${CLUSTER_ETCD_VERSION#v}"

# ---------------------------------------------------------------- kwokctl config and kwok stages
# kwok runs with Stage objects in the API (--enable-crds=Stage,Logs), so that a test can add a stage
# of its own for as long as it needs one (a failing CUDA container on one node, say) and delete
# it after; and with Logs objects, through which the registrar hands kwok-controller the logs of the
# containers it runs (`kubectl logs`, kwok's pkg/kwok/server/debugging_logs.go). The stages applied at start are kwokctl's defaults (node-initialize,
# node-heartbeat-with-lease, pod-ready, pod-complete, pod-delete) plus two opt-in chaos stages:
#   node label node-not-ready.stage.kwok.x-k8s.io=true          -> node Ready=False
#   pod label  pod-container-running-failed.stage.kwok.x-k8s.io=true -> pod Failed (exit 1)
# Taken verbatim from the kwok module this cluster runs. After them, stages of our own for what a
# kubelet does and kwok's stages leave out (stages/*.yaml, each saying which upstream code it follows).
CONFIG="$GPU_NODES_STATE/kwokctl-config.yaml"
STAGES="$GPU_NODES_STATE/kwok-stages.yaml"
write_config() {
  # Every component (etcd has no auth) listens on loopback only; kwokctl's default is 0.0.0.0.
  printf '%s\n' "apiVersion: config.kwok.x-k8s.io/v1alpha1" "kind: KwokctlConfiguration" "options:" \
    "  bindAddress: 127.0.0.1" > "$CONFIG.tmp"
  # Opt-in Kubernetes feature gates (kwokctl passes kubeFeatureGates to kube-apiserver,
  # kube-controller-manager and kube-scheduler alike), e.g. DRAExtendedResource=true: see README
  # "DRA". None by default: DRA itself (resource.k8s.io/v1) is GA and on in 1.35.
  if [ -n "${GPU_NODES_FEATURE_GATES:-}" ]; then
    printf '  kubeFeatureGates: "%s"\n' "$GPU_NODES_FEATURE_GATES" >> "$CONFIG.tmp"
  fi
  # One controller manager and one scheduler, so no leader election. With it on (the default,
  # for replicated control planes), either exits when the API server is slow to renew its lease
  # ("leaderelection lost", kube-controller-manager's controllermanager.go), and kwokctl's binary
  # runtime, unlike kubelet for kubeadm's static pods, never restarts it: seen with ten stacks'
  # drift at once on 1000 nodes, after which no Job or DaemonSet could finish deleting.
  printf '%s\n' "componentsPatches:" \
    "- name: kube-controller-manager" "  extraArgs:" "  - key: leader-elect" '    value: "false"' \
    "- name: kube-scheduler" "  extraArgs:" "  - key: leader-elect" '    value: "false"' >> "$CONFIG.tmp"
  mv -f "$CONFIG.tmp" "$CONFIG"
}
write_stages() {
  local dir
  dir=$(cd "$HERE/go/kwok" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  if [ -z "$dir" ] || [ ! -d "$dir/kustomize/stage" ]; then
    (cd "$HERE/go/kwok" && go mod download sigs.k8s.io/kwok)
    dir=$(cd "$HERE/go/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  fi
  local s="$dir/kustomize/stage" f
  {
    for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
             pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml \
             node/chaos/node-not-ready.yaml pod/chaos/pod-container-running-failed.yaml; do
      echo "---"
      echo "# from sigs.k8s.io/kwok@$CLUSTER_KWOK_VERSION kustomize/stage/$f"
      cat "$s/$f"
    done
    for f in "$HERE"/stages/*.yaml; do
      echo "---"
      echo "# ours: tools/cluster/stages/${f##*/}"
      cat "$f"
    done
  } > "$STAGES.tmp"
  mv -f "$STAGES.tmp" "$STAGES"
}

api_ready() { kubectl get --raw /readyz >/dev/null 2>&1; }

cluster_exists() { [ -f "$KWOK_WORKDIR/clusters/$CLUSTER/kwok.yaml" ]; }

# kwokctl logs each step as a JSON line: kept in a file, shown when it fails.
KWOKLOG="$GPU_NODES_STATE/kwokctl.log"
kwokctl_failed() {
  echo "up.sh: kwokctl $1 cluster failed; its log, $KWOKLOG, ends:" >&2
  tail -20 "$KWOKLOG" >&2
  exit 1
}

if cluster_exists && api_ready; then
  log "cluster $CLUSTER is running"
elif cluster_exists; then
  log "cluster $CLUSTER exists but does not answer: kwokctl start cluster (log $KWOKLOG)"
  kwokctl --name "$CLUSTER" start cluster --timeout "${TIMEOUT}s" --wait "${TIMEOUT}s" >>"$KWOKLOG" 2>&1 || kwokctl_failed start
else
  write_config
  log "kwokctl create cluster $CLUSTER (Kubernetes $CLUSTER_K8S_VERSION, etcd $CLUSTER_ETCD_VERSION, kwok $CLUSTER_KWOK_VERSION; log $KWOKLOG)"
  kwokctl --name "$CLUSTER" --config "$CONFIG" create cluster \
    --runtime binary \
    --enable-crds=Stage,Logs \
    --kube-apiserver-binary "$KWOK_KUBE_APISERVER_BINARY" \
    --kube-controller-manager-binary "$KWOK_KUBE_CONTROLLER_MANAGER_BINARY" \
    --kube-scheduler-binary "$KWOK_KUBE_SCHEDULER_BINARY" \
    --kwok-controller-binary "$KWOK_CONTROLLER_BINARY" \
    --etcd-binary "$KWOK_ETCD_BINARY" \
    --kubeconfig "$KUBECONFIG" \
    --timeout "${TIMEOUT}s" \
    --wait "${TIMEOUT}s" >>"$KWOKLOG" 2>&1 || kwokctl_failed create
fi

# The admin kubeconfig, rewritten each time (kwokctl picks the API server's port at creation).
kwokctl --name "$CLUSTER" get kubeconfig > "$KUBECONFIG.tmp"
chmod 600 "$KUBECONFIG.tmp"
mv -f "$KUBECONFIG.tmp" "$KUBECONFIG"

log "waiting for the API server"
deadline=$(( $(date +%s) + TIMEOUT ))
until api_ready; do
  [ "$(date +%s)" -lt "$deadline" ] || { echo "up.sh: API server not ready after ${TIMEOUT}s" >&2; exit 1; }
  sleep 1
done
until kubectl get serviceaccount default -n default >/dev/null 2>&1; do
  [ "$(date +%s)" -lt "$deadline" ] || { echo "up.sh: no default service account after ${TIMEOUT}s" >&2; exit 1; }
  sleep 1
done

# ---------------------------------------------------------------- stages
if ! kubectl get crd stages.kwok.x-k8s.io >/dev/null 2>&1; then
  echo "up.sh: cluster $CLUSTER serves no Stage objects (created before kwok ran with --enable-crds=Stage): run tools/cluster/down.sh, then up.sh" >&2
  exit 1
fi
if ! kubectl get crd logs.kwok.x-k8s.io >/dev/null 2>&1; then
  echo "up.sh: cluster $CLUSTER serves no Logs objects (created before kwok ran with --enable-crds=Stage,Logs): run tools/cluster/down.sh, then up.sh" >&2
  exit 1
fi
write_stages
log "applying kwok's stages"
kubectl apply --server-side --field-manager=gpu-nodes-up -f "$STAGES" >/dev/null

# ---------------------------------------------------------------- nodes
# instance type for a GPU count (NVIDIA A10G machines); the node's cpu/memory follow it
gpu_instance() {
  case "$1" in
    1) echo "g5.2xlarge 8 32Gi" ;;
    4) echo "g5.12xlarge 48 192Gi" ;;
    8) echo "g5.48xlarge 192 768Gi" ;;
    *) echo "g5.12xlarge 48 192Gi" ;;
  esac
}

# The pod CIDR of node INDEX: the INDEX-th /25 of 198.18.0.0/15, RFC 2544's benchmarking range. kwok hands
# out pod IPs from the node's podCIDR (pkg/kwok/controllers/pod_controller.go, funcPodIPsWith), and the API
# server's pod proxy only connects to a global unicast pod IP (kubernetes pkg/registry/core/pod/strategy.go,
# ResourceLocation): this range is one, and no real network is in it, so the registrar can bind an exporter
# pod's IP on lo and serve its metrics there without shadowing anything.
pod_cidr() {
  local offset=$(( $1 * 128 ))
  echo "198.$(( 18 + offset / 65536 )).$(( offset / 256 % 256 )).$(( offset % 256 ))/25"
}

# node NAME INDEX INSTANCE CPU MEMORY [GPUS]
node_manifest() {
  local name=$1 index=$2 itype=$3 cpu=$4 mem=$5 gpus=${6:-} cidr
  cidr=$(pod_cidr "$index")
  cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: $name
  annotations:
    kwok.x-k8s.io/node: fake
EOF
  [ -n "$gpus" ] && echo "    gpu-nodes.dev/simulated-gpus: \"$gpus\""
  cat <<EOF
  labels:
    kubernetes.io/hostname: $name
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    beta.kubernetes.io/os: linux
    beta.kubernetes.io/arch: amd64
    node.kubernetes.io/instance-type: $itype
    topology.kubernetes.io/region: local-1
    topology.kubernetes.io/zone: local-1a
spec:
  podCIDR: $cidr
  podCIDRs:
  - $cidr
status:
  capacity:
    cpu: "$cpu"
    memory: $mem
    pods: "110"
    ephemeral-storage: 500Gi
  allocatable:
    cpu: "$cpu"
    memory: $mem
    pods: "110"
    ephemeral-storage: 500Gi
  nodeInfo:
    architecture: amd64
    operatingSystem: linux
    osImage: Ubuntu 22.04.5 LTS
    kernelVersion: 5.15.0-1072-aws
    containerRuntimeVersion: containerd://1.7.27
    kubeletVersion: $CLUSTER_K8S_VERSION
    kubeProxyVersion: $CLUSTER_K8S_VERSION
EOF
}

{
  for i in $(seq 1 "$NODES"); do
    read -r itype cpu mem <<<"$(gpu_instance "$GPUS")"
    node_manifest "gpu-node-$i" "$i" "$itype" "$cpu" "$mem" "$GPUS"
  done
  node_manifest cpu-node-1 0 m5.2xlarge 8 32Gi
} > "$GPU_NODES_STATE/nodes.yaml"
log "applying $NODES GPU node(s) and cpu-node-1"
# Server-side apply: on creation the status (cpu/memory/pods capacity) is kept; later runs only
# re-assert our labels and annotations (status is ignored on update, so the nvidia.com/gpu that
# the registrar adds stays). The manifest leaves out node.alpha.kubernetes.io/ttl: the TTL
# controller owns it and rewrites it above 100 nodes, which would make a re-run conflict.
kubectl apply --server-side --field-manager=gpu-nodes-up -f "$GPU_NODES_STATE/nodes.yaml" >/dev/null

# Someone else's label and taint on gpu-node-1 (a different field manager each, like an
# operator's kubectl): the Pulumi program must leave them alone.
if [ "$NODES" -ge 1 ]; then
  kubectl label node gpu-node-1 example.com/owner=platform-team --overwrite >/dev/null
  kubectl taint node gpu-node-1 example.com/maintenance=true:PreferNoSchedule --overwrite >/dev/null
fi

log "waiting for nodes to be Ready"
names=(cpu-node-1)
for i in $(seq 1 "$NODES"); do names+=("gpu-node-$i"); done
remaining=$(( deadline - $(date +%s) )); [ "$remaining" -gt 10 ] || remaining=10
kubectl wait --for=condition=Ready "${names[@]/#/node/}" --timeout="${remaining}s" >/dev/null

# ---------------------------------------------------------------- registrar
PIDFILE="$GPU_NODES_STATE/gpu-registrar.pid"
REGLOG="$GPU_NODES_STATE/gpu-registrar.log"
registrar_running() {
  local pid
  [ -f "$PIDFILE" ] || return 1
  pid=$(cat "$PIDFILE")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q gpu-registrar.py
}
if registrar_running; then
  log "gpu-registrar running (pid $(cat "$PIDFILE"))"
else
  # --dra-wipe-delay: how long the ResourceSlices of a DRA plugin that went stay (kubelet: 30 s).
  nohup "${PYTHON:-python3}" "$HERE/gpu-registrar.py" --kubeconfig "$KUBECONFIG" \
    --dra-wipe-delay "${GPU_NODES_DRA_WIPE_DELAY:-30}" >>"$REGLOG" 2>&1 </dev/null &
  echo $! > "$PIDFILE"
  sleep 1
  registrar_running || { echo "up.sh: gpu-registrar did not start, see $REGLOG" >&2; tail -20 "$REGLOG" >&2; exit 1; }
  log "gpu-registrar started (pid $(cat "$PIDFILE"), log $REGLOG)"
fi

kubectl get nodes -L node.kubernetes.io/instance-type >&2
log "ready: export KUBECONFIG=$KUBECONFIG (or: source tools/cluster/env.sh)"
