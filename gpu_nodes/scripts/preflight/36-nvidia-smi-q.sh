# ------------------------------------------------------------ nvidia-smi -q
#
# What the MIG, fabric and GPU health checks read, once: nvidia-smi -q lists each
# GPU as a "GPU <bus id>" line, then fields and sections indented by four spaces
# ("    GPU Recovery Action : None", "    MIG Mode", "    Fabric"), their fields by
# eight ("        Current : Disabled") and subsections' fields by twelve (R570+
# "        Health" under Fabric: "            Summary : Healthy"). The column the
# values start at differs between driver branches (R580 pads wider), so fields
# are split at their first colon, not at a column.

# smi_q: runs nvidia-smi -q once and sets Q_BUS, Q_MIG_CURRENT, Q_MIG_PENDING,
# Q_FABRIC_STATE and Q_FABRIC_STATUS, one entry per GPU in the order listed (an
# entry is empty where the GPU has no such section); Q_FIELD, every field of
# every GPU keyed "<index>|<section>/<subsection>/<field>" (as far as nested:
# "0|GPU Recovery Action", "0|Remapped Rows/Pending", "0|Fabric/Health/Summary");
# Q_DONE, Q_RC and Q_OUT.
smi_q() {
  [[ ${Q_DONE-} == true ]] && return 0
  local line section='' sub='' gpu=-1 text
  local -r field='^([^:]*[^[:space:]:])[[:space:]]*:[[:space:]]*(.*[^[:space:]])?[[:space:]]*$'
  Q_BUS=() Q_MIG_CURRENT=() Q_MIG_PENDING=() Q_FABRIC_STATE=() Q_FABRIC_STATUS=()
  declare -gA Q_FIELD=()
  run_capture "$SMI_TIMEOUT" nvidia-smi -q
  Q_DONE=true Q_RC=$CAP_RC Q_OUT=$CAP_OUT$'\n'$CAP_ERR
  while IFS='' read -r line; do
    if [[ $line =~ ^GPU[[:space:]]+([0-9A-Fa-f:.]+)[[:space:]]*$ ]]; then
      Q_BUS+=("${BASH_REMATCH[1]}") Q_MIG_CURRENT+=("") Q_MIG_PENDING+=("") Q_FABRIC_STATE+=("") Q_FABRIC_STATUS+=("")
      gpu=$((gpu + 1)) section='' sub=''
    elif ((gpu >= 0)) && [[ $line =~ ^[[:space:]]{4}([^[:space:]].*[^[:space:]])[[:space:]]*$ ]]; then
      text=${BASH_REMATCH[1]} section=$text sub=''
      if [[ $text =~ $field ]]; then
        Q_FIELD["$gpu|${BASH_REMATCH[1]}"]=${BASH_REMATCH[2]}
        section=''
      fi
    elif [[ -n $section && $line =~ ^[[:space:]]{8}([^[:space:]].*[^[:space:]])[[:space:]]*$ ]]; then
      text=${BASH_REMATCH[1]} sub=$text
      [[ $text =~ $field ]] || continue
      sub=''
      Q_FIELD["$gpu|$section/${BASH_REMATCH[1]}"]=${BASH_REMATCH[2]}
      case "$section/${BASH_REMATCH[1]}" in
        "MIG Mode/Current") Q_MIG_CURRENT[-1]=${BASH_REMATCH[2]} ;;
        "MIG Mode/Pending") Q_MIG_PENDING[-1]=${BASH_REMATCH[2]} ;;
        Fabric/State) Q_FABRIC_STATE[-1]=${BASH_REMATCH[2]} ;;
        Fabric/Status) Q_FABRIC_STATUS[-1]=${BASH_REMATCH[2]} ;;
      esac
    elif [[ -n $sub && $line =~ ^[[:space:]]{12}([^[:space:]].*[^[:space:]])[[:space:]]*$ ]]; then
      text=${BASH_REMATCH[1]}
      [[ $text =~ $field ]] && Q_FIELD["$gpu|$section/$sub/${BASH_REMATCH[1]}"]=${BASH_REMATCH[2]}
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

# smi_q_features: from the -q already read (nothing when it was not), what GPU Feature
# Discovery labels (k8s-device-plugin internal/lm): FEAT_MIG_CAPABLE, true when any GPU
# has a MIG mode (nvml.go newMigCapabilityLabeler; "MIG Mode" "Current" is N/A on GPUs
# without MIG), and FEAT_CLIQUE, "<ClusterUUID>.<CliqueId>" when every GPU attached to an
# NVLink fabric (State Completed, Status Success) reports the same two (imex.go).
smi_q_features() {
  local i uuids='' cliques='' mode
  [[ $Q_DONE == true ]] && ((${#Q_BUS[@]})) || return 0
  FEAT_MIG_CAPABLE=false
  for i in "${!Q_BUS[@]}"; do
    mode=${Q_MIG_CURRENT[i]}
    [[ -n $mode && $mode != N/A && $mode != *"Not Supported"* ]] && FEAT_MIG_CAPABLE=true
    [[ ${Q_FABRIC_STATE[i]} == Completed && ${Q_FABRIC_STATUS[i]} == Success ]] || continue
    [[ " $uuids " == *" ${Q_FIELD["$i|Fabric/ClusterUUID"]-} "* ]] || uuids+=" ${Q_FIELD["$i|Fabric/ClusterUUID"]-}"
    [[ " $cliques " == *" ${Q_FIELD["$i|Fabric/CliqueId"]-} "* ]] || cliques+=" ${Q_FIELD["$i|Fabric/CliqueId"]-}"
  done
  uuids=${uuids# } cliques=${cliques# }
  if [[ -n $uuids && -n $cliques && $uuids != *" "* && $cliques != *" "* ]]; then
    FEAT_CLIQUE=$uuids.$cliques
  fi
}

# smi_compute_cap: FEAT_COMPUTE, the CUDA compute capability of the first GPU ("9.0"), from
# which GPU Feature Discovery labels gpu.family and gpu.compute.* (internal/lm/resource.go
# newArchitectureLabels, the node's first GPU); empty when nvidia-smi does not give one
# (its compute_cap field prints "X.Y" per GPU).
smi_compute_cap() {
  local first
  [[ $SMI_OK == true ]] || return 0
  run_capture "$SMI_TIMEOUT" nvidia-smi --query-gpu=compute_cap --format=csv,noheader
  ((CAP_RC == 0)) || return 0
  first=${CAP_OUT%%$'\n'*}
  trim "$first"
  [[ $REPLY =~ ^[0-9]{1,3}\.[0-9]{1,3}$ ]] && FEAT_COMPUTE=$REPLY
  return 0
}
