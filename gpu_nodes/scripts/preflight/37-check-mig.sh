# ------------------------------------------------------------------------- MIG
#
# With --mig-strategy single or mixed (the group's devicePlugin.migStrategy) the
# plugin advertises MIG devices, which exist only on GPUs in MIG mode. Under
# single it advertises whole GPUs when no GPU is in MIG mode, so a MIG group would
# pass with no MIG at all; single also wants every GPU in MIG mode (one uniform
# layout), mixed at least one. nvidia-smi -q shows each GPU's "MIG Mode" with its
# Current and Pending values (smi_q); a pending Enabled takes effect at the GPU's
# next reset.
#
# With --mig-devices (devicePlugin.migDevices: the layout every GPU has) every GPU
# must be in MIG mode, under mixed too, and have exactly those MIG devices, as
# nvidia-smi -L lists them (smi_mig_devices). A GPU in MIG mode without any MIG
# device fails here: the plugin refuses to start on it ("device %v has an invalid
# MIG configuration", k8s-device-plugin internal/rm/device_map.go,
# assertAllMigDevicesAreValid), and the node would fail its readiness later.

# smi_mig_devices: runs nvidia-smi -L once. Per GPU index it lists: L_UUID[index], L_PROFILES[index]
# (the profiles of its MIG devices, each once, in the order listed) and L_COUNT["index|profile"]
# (how many it has of that profile); L_OK true when it listed GPUs, else L_PROBLEM says why;
# MIG_JSON, the report's "mig" entry.
#
# nvidia-smi -L prints each GPU on a line of its own and, under a GPU in MIG mode, one indented
# line per MIG device (a compute instance), named by its profile as go-nvlib names it
# (tests/scripts/fixtures/nvidia-smi-L-*.txt, e.g. from NVIDIA/k8s-device-plugin issue 1643):
#   GPU 0: NVIDIA RTX PRO 6000 Blackwell Server Edition (UUID: GPU-02b2a5a5-...)
#     MIG 1g.24gb     Device  0: (UUID: MIG-82661492-...)
# The profile is the word after "MIG", up to "Device", so that a name as long as the padding
# still reads; drivers before R470 print MIG-GPU-<uuid>/<gi>/<ci> as the device's UUID
# (MIG user guide), and neither UUID of a device is read.
smi_mig_devices() {
  [[ $L_DONE == true ]] && return 0
  local line gpu='' profile entries json
  local -a profiles=()
  local -r gpu_line='^GPU[[:space:]]+([0-9]+):.*\(UUID:[[:space:]]*([^)[:space:]]+)\)[[:space:]]*$'
  local -r mig_line='^[[:space:]]+MIG[[:space:]]+([^[:space:]]+)[[:space:]]*Device[[:space:]]+[0-9]+:'
  L_UUID=() L_PROFILES=()
  declare -gA L_COUNT=()
  L_DONE=true
  run_capture "$SMI_TIMEOUT" nvidia-smi -L
  if timed_out; then
    L_PROBLEM="nvidia-smi -L did not answer within ${SMI_TIMEOUT}s"
    return 0
  fi
  if ((CAP_RC != 0)) || [[ $CAP_OUT =~ $SMI_ERROR_RE ]]; then
    brief "$CAP_OUT"$'\n'"$CAP_ERR"
    L_PROBLEM="nvidia-smi -L failed (exit $CAP_RC: ${REPLY:-no output})"
    return 0
  fi
  while IFS='' read -r line; do
    if [[ $line =~ $gpu_line ]]; then
      gpu=$((10#${BASH_REMATCH[1]}))
      L_UUID[gpu]=${BASH_REMATCH[2]} L_PROFILES[gpu]=''
    elif [[ -n $gpu && $line =~ $mig_line ]]; then
      profile=${BASH_REMATCH[1]}
      [[ -n ${L_COUNT["$gpu|$profile"]-} ]] || L_PROFILES[gpu]+=" $profile"
      L_COUNT["$gpu|$profile"]=$((${L_COUNT["$gpu|$profile"]-0} + 1))
    fi
  done <<<"$CAP_OUT"
  if ((${#L_UUID[@]} == 0)); then
    brief "$CAP_OUT"
    L_PROBLEM="nvidia-smi -L listed no GPU (${REPLY:-no output})"
    return 0
  fi
  L_OK=true json=''
  for gpu in "${!L_UUID[@]}"; do
    entries=''
    read -r -a profiles <<<"${L_PROFILES[gpu]}"
    for profile in "${profiles[@]}"; do
      json_str "$profile"
      entries+="${entries:+, }$REPLY: ${L_COUNT["$gpu|$profile"]}"
    done
    json+="${json:+, }\"$gpu\": {$entries}"
  done
  MIG_JSON="{$json}"
}

# mig_found INDEX: sets REPLY to the MIG devices nvidia-smi -L lists on GPU INDEX, as
# --mig-devices writes a layout ("1g.10gb=3,2g.20gb=2"; empty for none).
mig_found() {
  local profile found=''
  local -a profiles=()
  read -r -a profiles <<<"${L_PROFILES[$1]-}"
  for profile in "${profiles[@]}"; do
    found+="${found:+,}$profile=${L_COUNT["$1|$profile"]}"
  done
  REPLY=$found
}

# mig_difference INDEX: fails when GPU INDEX has other MIG devices than --mig-devices declares,
# with REPLY saying what it has and which are missing and extra, by count.
mig_difference() {
  local i=$1 profile want have missing='' extra='' diff
  local -a profiles=()
  read -r -a profiles <<<"${L_PROFILES[i]-}"
  for profile in "${MIG_WANT_ORDER[@]}"; do
    want=${MIG_WANT[$profile]} have=${L_COUNT["$i|$profile"]-0}
    ((have < want)) && missing+="${missing:+, }$((want - have)) x $profile missing"
    ((have > want)) && extra+="${extra:+, }$((have - want)) x $profile extra"
  done
  for profile in "${profiles[@]}"; do
    [[ -n ${MIG_WANT[$profile]+set} ]] || extra+="${extra:+, }${L_COUNT["$i|$profile"]} x $profile extra"
  done
  diff=$missing${missing:+${extra:+, }}$extra
  [[ -n $diff ]] || return 0
  mig_found "$i"
  if [[ -z $REPLY ]]; then
    REPLY="GPU $i (${L_UUID[i]}) has no MIG device: $diff (the device plugin does not start on a GPU in MIG mode without one)"
  else
    REPLY="GPU $i (${L_UUID[i]}) has $REPLY: $diff"
  fi
  return 1
}

# check_mig_layout: every GPU (all in MIG mode) against --mig-devices.
check_mig_layout() {
  local i line
  local -a differ=()
  if [[ $L_OK != true ]]; then
    add_check mig false "$L_PROBLEM, so the MIG devices are unknown; devicePlugin.migDevices declares $MIG_DEVICES on every GPU"
    return
  fi
  for i in "${!Q_BUS[@]}"; do
    if [[ -z ${L_UUID[i]+set} ]]; then
      differ+=("GPU $i (bus ${Q_BUS[i]}) is not listed by nvidia-smi -L")
    elif ! mig_difference "$i"; then
      differ+=("$REPLY")
    fi
  done
  if ((${#differ[@]} == 0)); then
    add_check mig true "${#Q_BUS[@]} of ${#Q_BUS[@]} GPU(s) in MIG mode (migStrategy $MIG_STRATEGY), each with the MIG devices of devicePlugin.migDevices: $MIG_DEVICES"
    return
  fi
  printf -v line '%s; ' "${differ[@]}"
  add_check mig false "the MIG devices nvidia-smi -L lists differ from devicePlugin.migDevices ($MIG_DEVICES on every GPU): ${line%; }; create that layout on each GPU (nvidia-mig-parted apply, with it as the mig-devices of a devices: all entry, or nvidia-smi mig -cgi <profiles> -C), or declare the layout the GPUs have"
}

check_mig() {
  local i enabled=0 line every=''
  local -a off=()
  if [[ -z $MIG_STRATEGY ]]; then
    add_check mig true "not requested"
    return
  fi
  smi_q_gpus mig "their MIG modes, which migStrategy $MIG_STRATEGY needs, are" || return 0
  smi_mig_devices
  for i in "${!Q_BUS[@]}"; do
    if [[ ${Q_MIG_CURRENT[i]} == Enabled ]]; then
      enabled=$((enabled + 1))
    else
      line="GPU ${Q_BUS[i]} ${Q_MIG_CURRENT[i]:-without a MIG mode}"
      [[ ${Q_MIG_PENDING[i]} == Enabled ]] && line+=" (Enabled is pending: reset the GPU)"
      off+=("$line")
    fi
  done
  printf -v line '%s, ' "${off[@]}"
  line=${line%, }
  ((${#MIG_WANT_ORDER[@]})) && every="devicePlugin.migDevices ($MIG_DEVICES on every GPU)"
  [[ $MIG_STRATEGY == single ]] && every="migStrategy single"
  if [[ -n $every && ${#off[@]} -gt 0 ]]; then
    add_check mig false "$every needs every GPU in MIG mode, and $enabled of ${#Q_BUS[@]} are: $line; enable it (nvidia-smi -i <index> -mig 1, then reset the GPU) and create the same MIG layout on each, or use migStrategy none"
  elif ((enabled == 0)); then
    add_check mig false "migStrategy mixed needs at least one GPU in MIG mode, and none is: $line; enable it (nvidia-smi -i <index> -mig 1, then reset the GPU) and create the MIG devices, or use migStrategy none"
  elif ((${#MIG_WANT_ORDER[@]})); then
    check_mig_layout
  else
    add_check mig true "$enabled of ${#Q_BUS[@]} GPU(s) in MIG mode (migStrategy $MIG_STRATEGY)"
  fi
}
