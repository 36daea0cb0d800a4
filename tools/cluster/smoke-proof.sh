#!/usr/bin/env bash
# End-to-end check of what the local cluster plays for gpu-nodes' node proof (run after up.sh): with a
# device-plugin DaemonSet giving GPUs on gpu-node-1 and gpu-node-2 and a dcgm-exporter DaemonSet there,
#   - a DCGM diagnostics Job and an NCCL bandwidth Job pinned to each node complete, `kubectl logs` shows
#     dcgmi's JSON (every test Pass) and all_reduce_perf's table (~230 GB/s at 4 GiB);
#   - the API server's pod proxy returns each node's exporter page, the four fields for each of its GPUs;
#   - gpu-node-2's fake machine broken with tools/fakehost/break.sh: persistence-mode-off fails the
#     diagnostics Job (exit 226 twice, backoffLimit 1: BackoffLimitExceeded), p2p-disabled drops the bus
#     bandwidth to ~5 GB/s, metrics-stopped empties its page; healthy brings the page back.
# gpu-node-1 has no fake machine: it answers as a healthy machine of its gpu-nodes.dev/simulated-gpus.
# Starts gpu-node-2's fake machine if it is not up (and stops it after); leaves the cluster as it found it.
# Usage: tools/cluster/smoke-proof.sh     (needs: up.sh with at least 2 GPU nodes of 4 GPUs; root, for
#        the fake machine and the exporter pods' IPs)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source=env.sh
source "$HERE/env.sh"
export KUBECONFIG="$GPU_NODES_STATE/kubeconfig"
NS=gpu-proof-smoke
BROKEN=gpu-node-2
DCGM_IMAGE=nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04
START=$(date +%s.%N)
step() { printf '[smoke-proof %6.1fs] %s\n' "$(echo "$(date +%s.%N) - $START" | bc)" "$*"; }
fail() { echo "smoke-proof: $*" >&2; exit 1; }

started_fakehost=false
cleanup() {
  "$REPO/tools/fakehost/break.sh" "$BROKEN" healthy >/dev/null 2>&1 || true
  if $started_fakehost; then "$REPO/tools/fakehost/down.sh" "$BROKEN" >/dev/null 2>&1 || true; fi
  kubectl label node gpu-node-1 gpu-node-2 gpu-proof-smoke.dev/gpus- >/dev/null 2>&1 || true
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
}
trap cleanup EXIT

# ---------------------------------------------------------------- the node's objects, shaped as the product's
# The pod template labels of gpu-nodes' proof (the registrar and stages/pod-run-by-registrar.yaml select by them).
labels() { # COMPONENT
  printf '{app.kubernetes.io/name: gpu-verification, app.kubernetes.io/component: %s, app.kubernetes.io/part-of: gpu-nodes, app.kubernetes.io/managed-by: pulumi, app.kubernetes.io/instance: smoke}' "$1"
}
pinned() { # NODE: the product's pinning, by node name
  printf '{nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [%s]}]}]}}}' "$1"
}
diagnostics_job() { # NAME NODE LEVEL
  kubectl apply -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata: {name: $1, namespace: $NS, labels: $(labels diagnostics)}
spec:
  backoffLimit: 1
  template:
    metadata: {labels: $(labels diagnostics)}
    spec:
      restartPolicy: Never
      affinity: $(pinned "$2")
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      securityContext: {runAsNonRoot: true, runAsUser: 65534, runAsGroup: 65534, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: dcgm
        image: $DCGM_IMAGE
        command: [dcgmi, diag, -r, "$3", -j]
        terminationMessagePolicy: FallbackToLogsOnError
        securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
        resources: {limits: {nvidia.com/gpu: 4}}
      - name: isolation
        image: busybox:1.37
        command: [sh, -c, "! ls /dev/nvidia* 2>/dev/null"]
        securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
EOF
}
performance_job() { # NAME NODE
  kubectl apply -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata: {name: $1, namespace: $NS, labels: $(labels performance)}
spec:
  backoffLimit: 1
  template:
    metadata: {labels: $(labels performance)}
    spec:
      restartPolicy: Never
      affinity: $(pinned "$2")
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      securityContext: {runAsNonRoot: true, runAsUser: 65534, runAsGroup: 65534}
      containers:
      - name: nccl
        image: nvcr.io/nvidia/pytorch:25.11-py3
        command: [/usr/local/mpi/bin/mpirun, -np, "1", /usr/local/bin/all_reduce_perf_mpi, -b, 4G, -e, 4G, -f, "2", -g, "4"]
        resources: {limits: {nvidia.com/gpu: 4}}
EOF
}
wait_job() { # NAME CONDITION
  kubectl -n "$NS" wait --for=condition="$2" "job/$1" --timeout=60s >/dev/null ||
    { kubectl -n "$NS" get pods -o wide >&2; fail "job $1 is not $2"; }
}
exit_codes() { # JOB CONTAINER: the container's exit code in each of the Job's pods
  kubectl -n "$NS" get pods -l "job-name=$1" \
    -o jsonpath="{range .items[*]}{.status.containerStatuses[?(@.name==\"$2\")].state.terminated.exitCode}{' '}{end}"
}
dcgm_statuses() { # JOB: "<test>=<summary status> ..." from the dcgm container's log, as the proof reads it
  kubectl -n "$NS" logs "job/$1" -c dcgm 2>/dev/null | python3 -c '
import json, sys
doc = json.load(sys.stdin)
print(" ".join(t["name"] + "=" + t["test_summary"]["status"] for c in doc["DCGM Diagnostic"]["test_categories"] for t in c["tests"]))'
}
busbw_at_largest() { # JOB: the out-of-place busbw of the largest size in the nccl container's log
  kubectl -n "$NS" logs "job/$1" -c nccl | awk '!/^#/ && NF == 13 { size = $1; busbw = $8 } END { print size, busbw }'
}
metrics() { # POD: the exporter's page through the API server's pod proxy
  kubectl get --raw "/api/v1/namespaces/$NS/pods/$1:9400/proxy/metrics"
}
exporter_pod() { # NODE
  kubectl -n "$NS" get pods -l app.kubernetes.io/name=dcgm-exporter --field-selector "spec.nodeName=$1" -o jsonpath='{.items[0].metadata.name}'
}
fields_per_gpu() { # PAGE on stdin: "<gpus with all four fields>/<gpus>"
  python3 -c '
import re, sys
need = {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE"}
seen = {}
for line in sys.stdin:
    m = re.match(r"(\w+)\{gpu=\"(\d+)\"", line)
    if m:
        seen.setdefault(m.group(2), set()).add(m.group(1))
print(f"{sum(need <= f for f in seen.values())}/{len(seen)}")'
}

# ---------------------------------------------------------------- setup
fakehost_up() { # NODE: its sshd runs (the pid fakehost.py wrote, still an sshd of that machine's config)
  local state="$REPO/.state/fakehosts/$1" pid cmdline
  pid=$(cat "$state/pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  cmdline=$(tr '\0' ' ' < "/proc/$pid/cmdline")
  grep -q "$state/sshd_config" <<<"$cmdline"
}
if ! fakehost_up "$BROKEN"; then
  step "starting $BROKEN's fake machine (tools/fakehost/up.sh)"
  "$REPO/tools/fakehost/up.sh" "$BROKEN" >/dev/null
  started_fakehost=true
fi
"$REPO/tools/fakehost/break.sh" "$BROKEN" healthy 2>/dev/null

step "device plugin and dcgm-exporter DaemonSets on gpu-node-1, gpu-node-2"
# A run just before leaves its namespace terminating (the cleanup does not wait): wait for it to go.
kubectl wait --for=delete "namespace/$NS" --timeout=120s >/dev/null 2>&1 || true
kubectl create namespace "$NS" >/dev/null
kubectl label node gpu-node-1 gpu-node-2 gpu-proof-smoke.dev/gpus=true --overwrite >/dev/null
kubectl apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: nvidia-device-plugin, namespace: $NS}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: nvidia-device-plugin}}
  template:
    metadata: {labels: {app.kubernetes.io/name: nvidia-device-plugin}}
    spec:
      nodeSelector: {gpu-proof-smoke.dev/gpus: "true"}
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers:
      - {name: nvidia-device-plugin-ctr, image: "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: dcgm-exporter, namespace: $NS}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: dcgm-exporter, app.kubernetes.io/instance: smoke}}
  template:
    metadata:
      labels: {app.kubernetes.io/name: dcgm-exporter, app.kubernetes.io/component: metrics, app.kubernetes.io/part-of: gpu-nodes, app.kubernetes.io/instance: smoke}
    spec:
      nodeSelector: {gpu-proof-smoke.dev/gpus: "true"}
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers:
      - name: dcgm-exporter
        image: nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless
        env: [{name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]
        ports: [{name: metrics, containerPort: 9400}]
        readinessProbe: {httpGet: {path: /health, port: 9400}}
        livenessProbe: {httpGet: {path: /health, port: 9400}}
---
apiVersion: v1
kind: Service
metadata: {name: dcgm-exporter, namespace: $NS}
spec:
  selector: {app.kubernetes.io/name: dcgm-exporter, app.kubernetes.io/instance: smoke}
  ports: [{name: metrics, port: 9400, targetPort: metrics}]
EOF
kubectl -n "$NS" rollout status daemonset/nvidia-device-plugin --timeout=60s >/dev/null
kubectl -n "$NS" rollout status daemonset/dcgm-exporter --timeout=60s >/dev/null
for n in gpu-node-1 gpu-node-2; do
  for _ in $(seq 1 50); do
    [ "$(kubectl get node "$n" -o jsonpath='{.status.allocatable.nvidia\.com/gpu}')" = 4 ] && break; sleep 0.2
  done
  [ "$(kubectl get node "$n" -o jsonpath='{.status.allocatable.nvidia\.com/gpu}')" = 4 ] || fail "$n has no 4 GPUs"
done
step "both rolled out, 4 GPUs on each node"

# ---------------------------------------------------------------- healthy
step "diagnostics (level 1) and performance Jobs on gpu-node-1 (no fake machine) and $BROKEN (its fake machine)"
for n in gpu-node-1 "$BROKEN"; do
  diagnostics_job "diag-$n" "$n" 1
  performance_job "nccl-$n" "$n"
done
for n in gpu-node-1 "$BROKEN"; do
  wait_job "diag-$n" Complete
  wait_job "nccl-$n" Complete
done
step "all four Jobs Complete"
for n in gpu-node-1 "$BROKEN"; do
  [ "$(exit_codes "diag-$n" dcgm)" = "0 " ] || fail "diag-$n: dcgm exit codes '$(exit_codes "diag-$n" dcgm)'"
  [ "$(dcgm_statuses "diag-$n")" = "software=Pass" ] || fail "diag-$n: $(dcgm_statuses "diag-$n")"
  [ "$(busbw_at_largest "nccl-$n")" = "4294967296 232.81" ] || fail "nccl-$n: $(busbw_at_largest "nccl-$n")"
done
step "kubectl logs: dcgmi software=Pass (exit 0) and busbw 232.81 GB/s at 4 GiB on both nodes"
diagnostics_job diag-level-3 gpu-node-1 3
wait_job diag-level-3 Complete
step "level 3 on gpu-node-1: $(dcgm_statuses diag-level-3)"

for n in gpu-node-1 "$BROKEN"; do
  pod=$(exporter_pod "$n")
  for _ in $(seq 1 25); do metrics "$pod" >/dev/null 2>&1 && break; sleep 0.2; done
  got=$(metrics "$pod" | fields_per_gpu)
  [ "$got" = 4/4 ] || fail "$n: exporter page has the four fields for $got GPUs"
  # what the machine's nvidia-smi prints for GPU 0 (tools/fakehost/fakehost.py query_gpu_lines)
  want_uuid=$(python3 -c 'import sys, uuid; print("GPU-" + str(uuid.uuid5(uuid.NAMESPACE_DNS, sys.argv[1] + ".gpu0")))' "$n")
  page=$(metrics "$pod")  # (not piped into grep -q: under pipefail, its early exit fails the pipe)
  grep -q "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"$want_uuid\"" <<<"$page" || fail "$n: GPU 0's UUID is not $want_uuid"
done
step "pod proxy: each exporter's page has the four fields for 4/4 GPUs, the UUIDs the machines' nvidia-smi prints"

# ---------------------------------------------------------------- broken
"$REPO/tools/fakehost/break.sh" "$BROKEN" persistence-mode-off 2>/dev/null
diagnostics_job diag-broken "$BROKEN" 1
wait_job diag-broken Failed
[ "$(exit_codes diag-broken dcgm)" = "226 226 " ] || fail "diag-broken: dcgm exit codes '$(exit_codes diag-broken dcgm)'"
log=$(kubectl -n "$NS" logs job/diag-broken -c dcgm 2>/dev/null)
grep -q 'Persistence Mode: Persistence mode for GPU 0 is disabled' <<<"$log" || fail "diag-broken: no persistence mode warning in the log"
reason=$(kubectl -n "$NS" get job diag-broken -o jsonpath='{.status.conditions[?(@.type=="Failed")].reason}')
step "persistence-mode-off: diagnostics Job Failed ($reason), dcgm exited 226 in both pods, DCGM's warning in the log"

"$REPO/tools/fakehost/break.sh" "$BROKEN" p2p-disabled 2>/dev/null
performance_job nccl-broken "$BROKEN"
wait_job nccl-broken Complete
[ "$(busbw_at_largest nccl-broken)" = "4294967296 5.20" ] || fail "nccl-broken: $(busbw_at_largest nccl-broken)"
step "p2p-disabled: performance Job Complete (exit 0, as nccl-tests), busbw 5.20 GB/s at 4 GiB"

"$REPO/tools/fakehost/break.sh" "$BROKEN" metrics-stopped 2>/dev/null
pod=$(exporter_pod "$BROKEN")
[ "$(metrics "$pod" | fields_per_gpu)" = 0/0 ] || fail "$BROKEN: metrics-stopped page still has GPU lines"
[ "$(metrics "$(exporter_pod gpu-node-1)" | fields_per_gpu)" = 4/4 ] || fail "gpu-node-1's page changed"
"$REPO/tools/fakehost/break.sh" "$BROKEN" healthy 2>/dev/null
[ "$(metrics "$pod" | fields_per_gpu)" = 4/4 ] || fail "$BROKEN: healthy page has not the four fields for 4/4 GPUs"
step "metrics-stopped: $BROKEN's page has no GPU lines (gpu-node-1's unchanged); healthy: back"

# ---------------------------------------------------------------- the exporter goes
ip=$(kubectl -n "$NS" get pod "$pod" -o jsonpath='{.status.podIP}')
kubectl -n "$NS" delete daemonset dcgm-exporter --wait=true >/dev/null
bound() { local addrs; addrs=$(ip -4 -o addr show dev lo); grep -q " $1/32 " <<<"$addrs"; }
for _ in $(seq 1 50); do bound "$ip" || break; sleep 0.2; done
! bound "$ip" || fail "$ip still bound on lo after its pod went"
step "exporter DaemonSet deleted: its pod IP $ip is unbound from lo"
step "OK"
