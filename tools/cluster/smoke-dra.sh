#!/usr/bin/env bash
# End-to-end check of DRA on the local cluster (run after up.sh): a DaemonSet standing in for the
# kubelet plugin of NVIDIA's DRA driver on gpu-node-1 makes the registrar publish that node's
# ResourceSlice; a Job taking 2 GPUs through a ResourceClaimTemplate gets its claim from
# kube-controller-manager, its devices from kube-scheduler and runs to Succeeded under kwok; a claim
# for more GPUs than the slice lists stays Pending with the scheduler's message; deleting the
# DaemonSet wipes the slice after kubelet's delay (GPU_NODES_DRA_WIPE_DELAY, 30 s by default).
# Leaves the cluster as it found it (the DeviceClass too, unless it was there before).
# Usage: tools/cluster/smoke-dra.sh [--no-wipe]   (--no-wipe: skip the ~30 s wait for the wipe)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=env.sh
source "$HERE/env.sh"
export KUBECONFIG="$GPU_NODES_STATE/kubeconfig"
WAIT_WIPE=1
[ "${1:-}" = "--no-wipe" ] && WAIT_WIPE=0
NS=gpu-smoke-dra
NODE=gpu-node-1
START=$(date +%s.%N)
step() { printf '[smoke-dra %6.1fs] %s\n' "$(echo "$(date +%s.%N) - $START" | bc)" "$*"; }
fail() { echo "smoke-dra: $*" >&2; exit 1; }
# ResourceSlices of driver gpu.nvidia.com on a node: "<name> <device names...>" per slice
slices() {
  kubectl get resourceslices --field-selector "spec.nodeName=$1,spec.driver=gpu.nvidia.com" \
    -o jsonpath='{range .items[*]}{.metadata.name}{range .spec.devices[*]} {.name}{end}{"\n"}{end}'
}
devices() { slices "$1" | awk '{print NF - 1}'; }
wait_for() { # SECONDS COMMAND...: until the command succeeds
  local timeout=$1 _; shift
  for _ in $(seq 1 "$(( timeout * 5 ))"); do "$@" && return 0; sleep 0.2; done
  return 1
}
has_devices() { [ "$(devices "$1")" = "$2" ]; }
no_slice() { [ -z "$(slices "$1")" ]; }

WATCH_PID=
CLASS_WAS_THERE=
kubectl get deviceclass gpu.nvidia.com >/dev/null 2>&1 && CLASS_WAS_THERE=1
cleanup() {
  if [ -n "$WATCH_PID" ]; then kill "$WATCH_PID" 2>/dev/null || true; fi
  kubectl label node "$NODE" gpu-smoke.dev/dra-plugin- >/dev/null 2>&1 || true
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  [ -n "$CLASS_WAS_THERE" ] || kubectl delete deviceclass gpu.nvidia.com >/dev/null 2>&1 || true
}
trap cleanup EXIT

step "no ResourceSlice of gpu.nvidia.com before the DRA kubelet plugin runs"
# (a slice an earlier run left may still be waiting for its wipe: give it that long)
for n in gpu-node-1 gpu-node-2 gpu-node-3 cpu-node-1; do wait_for 40 no_slice "$n" || fail "$n has a slice: $(slices "$n")"; done

# The DeviceClass as the driver's chart renders it for resource.k8s.io/v1 (templates/deviceclass-gpu.yaml).
# Without the DRAExtendedResource gate (alpha in 1.35, off) the API server drops extendedResourceName.
kubectl apply -f - >/dev/null <<'EOF'
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.nvidia.com
spec:
  selectors:
  - cel:
      expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
  extendedResourceName: nvidia.com/gpu
EOF
step "DeviceClass gpu.nvidia.com (extendedResourceName as stored: '$(kubectl get deviceclass gpu.nvidia.com -o jsonpath='{.spec.extendedResourceName}')')"

# (an earlier run's namespace may still be terminating)
kubectl wait --for=delete "namespace/$NS" --timeout=60s >/dev/null 2>&1 || true
kubectl create namespace "$NS" >/dev/null
kubectl label node "$NODE" gpu-smoke.dev/dra-plugin=true --overwrite >/dev/null
# Stands in for the chart's kubelet plugin DaemonSet: its `gpus` container runs gpu-kubelet-plugin
# behind bash -c (templates/kubeletplugin.yaml). kwok runs nothing; the image is never pulled.
kubectl apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: dra-driver-nvidia-gpu-kubelet-plugin
  namespace: $NS
spec:
  selector:
    matchLabels: {dra-driver-nvidia-gpu-component: kubelet-plugin}
  template:
    metadata:
      labels: {dra-driver-nvidia-gpu-component: kubelet-plugin}
    spec:
      nodeSelector: {gpu-smoke.dev/dra-plugin: "true"}
      tolerations:
      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
      containers:
      - name: gpus
        image: registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1
        command: ["bash", "-c"]
        args: ["exec gpu-kubelet-plugin -v 6"]
EOF
kubectl -n "$NS" rollout status daemonset/dra-driver-nvidia-gpu-kubelet-plugin --timeout=60s >/dev/null
step "kubelet-plugin DaemonSet rolled out on $NODE"
wait_for 10 has_devices "$NODE" 4 || fail "$NODE: slice '$(slices "$NODE")', want 4 devices"
step "$NODE publishes $(slices "$NODE")"
sleep 2 # a few registrar passes: the others must stay without
for n in gpu-node-2 gpu-node-3 cpu-node-1; do no_slice "$n" || fail "$n has a slice: $(slices "$n")"; done
step "gpu-node-2, gpu-node-3 and cpu-node-1 still have none"

kubectl apply -f - >/dev/null <<EOF
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: two-gpus, namespace: $NS}
spec:
  spec:
    devices:
      requests:
      - name: gpus
        exactly: {deviceClassName: gpu.nvidia.com, allocationMode: ExactCount, count: 2}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: five-gpus, namespace: $NS}
spec:
  spec:
    devices:
      requests:
      - name: gpus
        exactly: {deviceClassName: gpu.nvidia.com, allocationMode: ExactCount, count: 5}
EOF
job() { # NAME TEMPLATE
  cat <<EOF
apiVersion: batch/v1
kind: Job
metadata: {name: $1, namespace: $NS}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {kubernetes.io/hostname: $NODE}
      tolerations:
      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
      resourceClaims:
      - {name: gpus, resourceClaimTemplateName: $2}
      containers:
      - name: nvidia-smi
        image: nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04
        command: [nvidia-smi, -L]
        resources:
          claims: [{name: gpus}]
EOF
}
# The claim lives only while the pod needs it (kube-controller-manager deletes a generated claim
# once its pod is done): watch the claims to see the allocation.
WATCH="$GPU_NODES_STATE/smoke-dra-claims.json"
kubectl get resourceclaims -n "$NS" --watch -o json > "$WATCH" 2>&1 &
WATCH_PID=$!
sleep 0.5
step "Job taking 2 GPUs through ResourceClaimTemplate two-gpus, pinned to $NODE"
job dra-verify two-gpus | kubectl apply -f - >/dev/null
kubectl -n "$NS" wait --for=condition=Complete job/dra-verify --timeout=60s >/dev/null
read -r pod_node phase claim <<<"$(kubectl -n "$NS" get pod -l job-name=dra-verify \
  -o jsonpath='{.items[0].spec.nodeName} {.items[0].status.phase} {.items[0].status.resourceClaimStatuses[0].resourceClaimName}')"
step "Job complete: pod $phase on $pod_node, claim $claim"
if [ "$pod_node" != "$NODE" ] || [ "$phase" != Succeeded ]; then fail "pod on $pod_node, phase $phase"; fi
# "<owner kind>/<owner name> <pool>/<device>..." of the claim's first allocated version in the watch
allocation() {
  "${PYTHON:-python3}" - "$WATCH" "$claim" <<'PY'
import json, sys
text, dec, i = open(sys.argv[1]).read(), json.JSONDecoder(), 0
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    obj, i = dec.raw_decode(text, i)
    results = ((obj.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []
    if obj["metadata"]["name"] == sys.argv[2] and results:
        owner = (obj["metadata"].get("ownerReferences") or [{}])[0]
        print(f"{owner.get('kind')}/{owner.get('name')}", *(f"{r['pool']}/{r['device']}" for r in results))
        break
PY
}
allocated_now() { [ -n "$(allocation)" ]; }
wait_for 5 allocated_now || true
allocated=$(allocation)
[ -n "$allocated" ] || fail "claim $claim never seen allocated (watch: $WATCH)"
step "claim $claim (made by kube-controller-manager for $(echo "$allocated" | cut -d' ' -f1)) was allocated by kube-scheduler: $(echo "$allocated" | cut -d' ' -f2-)"
[ "$(echo "$allocated" | wc -w)" = 3 ] || fail "want 2 devices: $allocated"
kill "$WATCH_PID" 2>/dev/null || true
WATCH_PID=

step "Job asking for 5 GPUs on $NODE (its slice lists 4)"
job dra-too-many five-gpus | kubectl apply -f - >/dev/null
msg=
for _ in $(seq 1 50); do
  msg=$(kubectl -n "$NS" get pod -l job-name=dra-too-many \
    -o jsonpath='{.items[0].status.phase} {.items[0].status.conditions[?(@.type=="PodScheduled")].reason}: {.items[0].status.conditions[?(@.type=="PodScheduled")].message}')
  case "$msg" in "Pending Unschedulable: "*) break ;; esac
  sleep 0.2
done
case "$msg" in "Pending Unschedulable: "*"cannot allocate all claims"*) ;; *) fail "want Pending, unschedulable: '$msg'" ;; esac
step "stays $msg"
kubectl -n "$NS" delete job dra-too-many --wait=false >/dev/null

step "delete the DaemonSet: the slice stays for kubelet's wiping delay, then goes"
kubectl -n "$NS" delete daemonset dra-driver-nvidia-gpu-kubelet-plugin --wait=true >/dev/null
gone=$(date +%s.%N)
sleep 2
slices "$NODE" | grep -q . || fail "$NODE's slice went at once"
step "2 s after: $NODE still publishes $(slices "$NODE" | awk '{print $1}')"
if [ "$WAIT_WIPE" = 1 ]; then
  wait_for 60 no_slice "$NODE" || fail "$NODE's slice still there: $(slices "$NODE")"
  step "$NODE has no slice again, $(printf '%.1f' "$(echo "$(date +%s.%N) - $gone" | bc)") s after the DaemonSet went"
fi
step "OK"
