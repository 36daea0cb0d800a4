# ------------------------------------------------------------ nvidia-smi -q
#
# What the MIG and fabric checks read, once: nvidia-smi -q lists each GPU as a
# "GPU <bus id>" line, then sections indented by four spaces ("    MIG Mode",
# "    Fabric") whose values are indented by eight ("        Current : Disabled").

# smi_q: runs nvidia-smi -q once and sets Q_BUS, Q_MIG_CURRENT, Q_MIG_PENDING,
# Q_FABRIC_STATE and Q_FABRIC_STATUS, one entry per GPU in the order listed (an
# entry is empty where the GPU has no such section); Q_DONE, Q_RC and Q_OUT.
smi_q() {
  [[ ${Q_DONE-} == true ]] && return 0
  local line section=''
  Q_BUS=() Q_MIG_CURRENT=() Q_MIG_PENDING=() Q_FABRIC_STATE=() Q_FABRIC_STATUS=()
  run_capture "$SMI_TIMEOUT" nvidia-smi -q
  Q_DONE=true Q_RC=$CAP_RC Q_OUT=$CAP_OUT$'\n'$CAP_ERR
  while IFS='' read -r line; do
    if [[ $line =~ ^GPU[[:space:]]+([0-9A-Fa-f:.]+)[[:space:]]*$ ]]; then
      Q_BUS+=("${BASH_REMATCH[1]}") Q_MIG_CURRENT+=("") Q_MIG_PENDING+=("") Q_FABRIC_STATE+=("") Q_FABRIC_STATUS+=("")
      section=''
    elif ((${#Q_BUS[@]})) && [[ $line =~ ^[[:space:]]{4}([^[:space:]].*[^[:space:]])[[:space:]]*$ ]]; then
      section=${BASH_REMATCH[1]}
      [[ $section == *:* ]] && section=''
    elif [[ -n $section && $line =~ ^[[:space:]]{8}([A-Za-z]+)[[:space:]]*:[[:space:]]*(.*[^[:space:]]) ]]; then
      case "$section/${BASH_REMATCH[1]}" in
        "MIG Mode/Current") Q_MIG_CURRENT[-1]=${BASH_REMATCH[2]} ;;
        "MIG Mode/Pending") Q_MIG_PENDING[-1]=${BASH_REMATCH[2]} ;;
        Fabric/State) Q_FABRIC_STATE[-1]=${BASH_REMATCH[2]} ;;
        Fabric/Status) Q_FABRIC_STATUS[-1]=${BASH_REMATCH[2]} ;;
      esac
    fi
  done <<<"$CAP_OUT"
}

# smi_q_gpus CHECK WHAT: runs smi_q and succeeds when it listed GPUs; otherwise fails CHECK,
# saying that WHAT ("their MIG modes are") unknown and why, and returns 1.
smi_q_gpus() {
  if [[ $SMI_OK != true ]]; then
    add_check "$1" false "$2 unknown (see the driver check)"
    return 1
  fi
  smi_q
  ((${#Q_BUS[@]})) && return 0
  brief "$Q_OUT"
  add_check "$1" false "nvidia-smi -q listed no GPU (exit $Q_RC: ${REPLY:-no output}), so $2 unknown"
  return 1
}
