#!/usr/bin/env bash
# End-to-end check of the local cluster (run after up.sh): a device-plugin DaemonSet on some
# nodes makes nvidia.com/gpu appear on exactly those nodes; a Job asking for one GPU completes;
# deleting the DaemonSet takes the GPUs away again. Leaves the cluster as it found it.
# Usage: tools/cluster/smoke.sh     (needs: up.sh with at least 2 GPU nodes)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=env.sh
source "$HERE/env.sh"
export KUBECONFIG="$GPU_NODES_STATE/kubeconfig"
NS=gpu-smoke
START=$(date +%s.%N)
step() { printf '[smoke %6.1fs] %s\n' "$(echo "$(date +%s.%N) - $START" | bc)" "$*"; }
gpus() { kubectl get node "$1" -o jsonpath='{.status.capacity.nvidia\.com/gpu}/{.status.allocatable.nvidia\.com/gpu}'; }
wait_gpus() { # NODE WANT TIMEOUT
  local _
  for _ in $(seq 1 "$(( $3 * 5 ))"); do [ "$(gpus "$1")" = "$2" ] && return 0; sleep 0.2; done
  echo "smoke: node $1 has nvidia.com/gpu '$(gpus "$1")', want '$2'" >&2; return 1
}
cleanup() {
  kubectl label node gpu-node-1 gpu-node-2 gpu-smoke.dev/plugin- >/dev/null 2>&1 || true
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
}
trap cleanup EXIT

step "no node has nvidia.com/gpu before the device plugin runs"
for n in gpu-node-1 gpu-node-2 gpu-node-3 cpu-node-1; do wait_gpus "$n" / 5; done

step "device-plugin DaemonSet with nodeSelector gpu-smoke.dev/plugin=true on gpu-node-1,2"
kubectl create namespace "$NS" >/dev/null
kubectl label node gpu-node-1 gpu-node-2 gpu-smoke.dev/plugin=true --overwrite >/dev/null
kubectl apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: nvidia-device-plugin
  namespace: $NS
  labels: {app.kubernetes.io/name: nvidia-device-plugin}
spec:
  selector:
    matchLabels: {app.kubernetes.io/name: nvidia-device-plugin}
  template:
    metadata:
      labels: {app.kubernetes.io/name: nvidia-device-plugin}
    spec:
      nodeSelector: {gpu-smoke.dev/plugin: "true"}
      tolerations:
      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
      containers:
      - name: nvidia-device-plugin-ctr
        image: nvcr.io/nvidia/k8s-device-plugin:v0.20.0
EOF
kubectl -n "$NS" rollout status daemonset/nvidia-device-plugin --timeout=60s
step "DaemonSet rolled out"
wait_gpus gpu-node-1 4/4 10
wait_gpus gpu-node-2 4/4 10
step "gpu-node-1 and gpu-node-2 report nvidia.com/gpu 4/4 (capacity/allocatable)"
sleep 3 # a few registrar passes: the others must stay without GPUs
wait_gpus gpu-node-3 / 1
wait_gpus cpu-node-1 / 1
step "gpu-node-3 and cpu-node-1 still have none"

step "Job requesting nvidia.com/gpu: 1"
kubectl apply -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata:
  name: gpu-verify
  namespace: $NS
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: nvidia-smi
        image: nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04
        command: [nvidia-smi]
        resources:
          limits: {nvidia.com/gpu: 1}
EOF
kubectl -n "$NS" wait --for=condition=Complete job/gpu-verify --timeout=60s
node=$(kubectl -n "$NS" get pod -l job-name=gpu-verify -o jsonpath='{.items[0].spec.nodeName}')
step "Job complete, its pod ran on $node"
case "$node" in gpu-node-1|gpu-node-2) ;; *) echo "smoke: GPU pod on $node" >&2; exit 1 ;; esac

step "delete the DaemonSet: nvidia.com/gpu goes away"
kubectl -n "$NS" delete daemonset nvidia-device-plugin --wait=true >/dev/null
wait_gpus gpu-node-1 / 30
wait_gpus gpu-node-2 / 30
step "gpu-node-1 and gpu-node-2 have no nvidia.com/gpu again"
step "OK"
