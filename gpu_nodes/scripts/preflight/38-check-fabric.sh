# ---------------------------------------------------------------------- fabric
#
# On NVSwitch machines (HGX/DGX A100, H100, H200, B200) CUDA fails with error 802,
# "system not yet initialized", until the fabric manager has trained the fabric,
# while NVML and nvidia-smi work. Hopper and later report it per GPU (smi_q's
# "Fabric" section: State Not Started, In Progress or Completed; Status Success or
# an error, meaningful once Completed). PCIe and single-GPU parts say N/A or Not
# Supported, and so does Ampere, whose NVSwitches need the nvidia-fabricmanager
# service running instead; the nvidia-nvswitch driver lists them under
# /proc/driver/nvidia-nvswitch/devices.
readonly NVSWITCH_DEVICES=/proc/driver/nvidia-nvswitch/devices

# fabric_advice: sets REPLY to what trains the fabric. NVLink 5 systems (HGX B200,
# GB200) also need NVIDIA's NVLink subnet manager (NVLSM, which the fabric manager
# starts) and the ib_umad kernel module it reaches the NVSwitches through (the
# Fabric Manager user guide, NVLink 5 section).
fabric_advice() {
  REPLY="check systemctl status nvidia-fabricmanager (its version must be the driver's, $DRIVER_VERSION); on NVLink 5 systems (HGX B200, GB200) the fabric manager also needs NVLSM (the nvlsm package) and the ib_umad kernel module loaded (modprobe ib_umad)"
}

# fabric_manager_running: a process named nv-fabricmanager runs (comm keeps 15 characters).
fabric_manager_running() {
  local f comm
  for f in "$ROOT"/proc/[0-9]*/comm; do
    read -r comm <"$f" 2>/dev/null || continue
    [[ $comm == nv-fabricmanage* ]] && return 0
  done
  return 1
}

check_fabric() {
  local i reported=0 line
  local -a switches=() waiting=()
  smi_q_gpus fabric "their fabric state is" || return 0
  for i in "${!Q_BUS[@]}"; do
    case ${Q_FABRIC_STATE[i]} in
      Completed)
        reported=$((reported + 1))
        [[ ${Q_FABRIC_STATUS[i]} == Success ]] || waiting+=("GPU ${Q_BUS[i]}: Completed with status ${Q_FABRIC_STATUS[i]:-unknown}")
        ;;
      "Not Started" | "In Progress")
        reported=$((reported + 1))
        waiting+=("GPU ${Q_BUS[i]}: ${Q_FABRIC_STATE[i]}")
        ;;
    esac
  done
  if ((${#waiting[@]})); then
    printf -v line '%s; ' "${waiting[@]}"
    fabric_advice
    add_check fabric false "the NVSwitch fabric is not ready, so CUDA fails with error 802 on these GPUs: ${line%; }. The fabric manager trains it: $REPLY"
    return
  fi
  if ((reported)); then
    add_check fabric true "$reported GPU(s) report their NVSwitch fabric Completed, Success"
    return
  fi
  switches=("$ROOT$NVSWITCH_DEVICES"/*)
  if ((${#switches[@]} == 0)); then
    add_check fabric true "no NVSwitch fabric: the GPUs report none and no NVSwitch is present"
  elif fabric_manager_running; then
    add_check fabric true "${#switches[@]} NVSwitch(es) present, the GPUs report no fabric state (as Ampere does), and nv-fabricmanager runs"
  else
    add_check fabric false "${#switches[@]} NVSwitch(es) present ($NVSWITCH_DEVICES) and the GPUs report no fabric state (as Ampere does), but no nv-fabricmanager runs: CUDA fails with error 802 until it does. Start it: systemctl enable --now nvidia-fabricmanager (the package for driver $DRIVER_VERSION)"
  fi
}
