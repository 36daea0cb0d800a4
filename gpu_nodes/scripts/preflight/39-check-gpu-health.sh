# ------------------------------------------------------------------ GPU health
#
# What the driver says about each GPU in nvidia-smi -q (smi_q's Q_FIELD), read
# against NVML's meanings (NVIDIA/go-nvml pkg/nvml/nvml.h):
# - "GPU Recovery Action" (R570+, nvmlDeviceGetGpuRecoveryAction /
#   NVML_FI_DEV_GET_GPU_RECOVERY_ACTION): None, or Reset (NVML_GPU_RECOVERY_ACTION_GPU_RESET),
#   Reboot (NODE_REBOOT), Drain P2P (DRAIN_P2P), Drain and Reset (DRAIN_AND_RESET).
# - "GPU Reset Status": Reset Required, Drain and Reset Recommended: Yes or No
#   (deprecated from R570, which prints "Requested functionality has been deprecated").
# - "Remapped Rows": Pending (a row waits for the GPU's next reset to be remapped),
#   Remapping Failure Occurred (a row could not be remapped: the memory is worn out).
# - "Retired Pages": Pending Page Blacklist (or Pending): pages wait for a reset.
# - "Fabric" > "Health" (R570+, nvmlGpuFabricInfo_v3_t healthSummary and healthMask):
#   Summary Healthy, Unhealthy or Limited Capacity (NVML_GPU_FABRIC_HEALTH_SUMMARY_*),
#   Bandwidth Full or Degraded, Route Recovery in progress, Route Unhealthy and
#   Access Timeout Recovery True or False, Incorrect Configuration None or its cause.
# A field the driver does not report (older branches, PCIe parts) prints N/A or
# Not Supported, or is missing: that is no fault. The device plugin sees none of
# this: it marks a GPU unhealthy only on an XID event while it runs.

# ok_value VALUE GOOD...: VALUE is one of GOOD, or says the field is not reported.
ok_value() {
  local value=$1 good
  shift
  case $value in
    '' | N/A | '[N/A]' | 'Not Supported' | '[Not Supported]' | *deprecated*) return 0 ;;
  esac
  for good in "$@"; do
    [[ $value == "$good" ]] && return 0
  done
  return 1
}

# gpu_faults INDEX: appends one line per fault of GPU INDEX to FAULTS, each naming
# its bus id, the field and what to do; sets FABRIC_FAULT when the fabric has one.
gpu_faults() {
  local i=$1 bus=${Q_BUS[$1]} value field
  local reset="drain the node, then reset the GPU (nvidia-smi -r -i ${Q_BUS[$1]})"
  value=${Q_FIELD["$i|GPU Recovery Action"]-}
  if ! ok_value "$value" None; then
    case $value in
      Reset | 'Drain and Reset') FAULTS+=("GPU $bus: GPU Recovery Action: $value ($reset)") ;;
      Reboot) FAULTS+=("GPU $bus: GPU Recovery Action: Reboot (drain the node and reboot the machine)") ;;
      'Drain P2P') FAULTS+=("GPU $bus: GPU Recovery Action: Drain P2P (stop the work that uses peer-to-peer (NVLink) traffic on it, then run preflight again)") ;;
      *) FAULTS+=("GPU $bus: GPU Recovery Action: $value (drain the node; the driver asks for an action this check does not know)") ;;
    esac
  fi
  [[ ${Q_FIELD["$i|GPU Reset Status/Reset Required"]-} == Yes ]] &&
    FAULTS+=("GPU $bus: GPU Reset Status > Reset Required: Yes ($reset)")
  [[ ${Q_FIELD["$i|GPU Reset Status/Drain and Reset Recommended"]-} == Yes ]] &&
    FAULTS+=("GPU $bus: GPU Reset Status > Drain and Reset Recommended: Yes ($reset)")
  [[ ${Q_FIELD["$i|Remapped Rows/Pending"]-} == Yes ]] &&
    FAULTS+=("GPU $bus: Remapped Rows > Pending: Yes ($reset so that the rows are remapped)")
  [[ ${Q_FIELD["$i|Remapped Rows/Remapping Failure Occurred"]-} == Yes ]] &&
    FAULTS+=("GPU $bus: Remapped Rows > Remapping Failure Occurred: Yes (its memory cannot remap more rows: replace the GPU)")
  for field in 'Pending Page Blacklist' Pending; do
    [[ ${Q_FIELD["$i|Retired Pages/$field"]-} == Yes ]] &&
      FAULTS+=("GPU $bus: Retired Pages > $field: Yes ($reset so that the pages are retired)")
  done
  for field in Summary Bandwidth 'Route Recovery in progress' 'Route Unhealthy' 'Access Timeout Recovery' 'Incorrect Configuration'; do
    value=${Q_FIELD["$i|Fabric/Health/$field"]-}
    case $field in
      Summary) ok_value "$value" Healthy && continue ;;
      Bandwidth) ok_value "$value" Full && continue ;;
      'Incorrect Configuration') ok_value "$value" None && continue ;;
      *) ok_value "$value" False && continue ;;
    esac
    FAULTS+=("GPU $bus: Fabric > Health > $field: $value")
    FABRIC_FAULT=true
  done
  return 0
}

check_gpu_health() {
  local i line
  FAULTS=() FABRIC_FAULT=false
  smi_q_gpus gpu-health "their health is" || return 0
  for i in "${!Q_BUS[@]}"; do
    gpu_faults "$i"
  done
  if ((${#FAULTS[@]} == 0)); then
    add_check gpu-health true "${#Q_BUS[@]} GPU(s) healthy: no recovery action, pending reset, row remap, page retirement or fabric fault"
    return
  fi
  printf -v line '%s; ' "${FAULTS[@]}"
  line="the driver reports GPU(s) that must not take work: ${line%; }"
  if [[ $FABRIC_FAULT == true ]]; then
    fabric_advice
    line+=". For the NVLink fabric: $REPLY"
  fi
  add_check gpu-health false "$line. Run preflight again once fixed"
}
