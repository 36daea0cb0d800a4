# ------------------------------------------------------------------------- MPS
#
# With --mps-replicas N (the group's devicePlugin.sharing: {strategy: mps, replicas: N}) the device
# plugin's MPS control daemon shares each GPU N ways. What it asks of the machine, read from upstream:
# - No GPU in MIG mode: the plugin refuses to share a MIG device through MPS ("sharing using MPS is not
#   supported for MIG devices", k8s-device-plugin internal/plugin/mps.go, getMPSOptions; README "With
#   CUDA MPS"), and GPU Feature Discovery labels such a node mps.capable=false (internal/lm/nvml.go,
#   isMPSCapable). A pending Enabled turns MIG on at the GPU's next reset.
# - A compute mode the daemon may take over: it sets each GPU to EXCLUSIVE_PROCESS when it starts and
#   back to DEFAULT when it stops (cmd/mps-control-daemon/mps/daemon.go, setComputeMode, with
#   `nvidia-smi -i <uuid> -c`). Default, as a GPU ships, or Exclusive_Process, the daemon's own (or one
#   an admin set for MPS), pass; Prohibited (no CUDA context at all) and Exclusive_Thread (deprecated)
#   are someone's choice the daemon would overrule. nvidia-smi -q prints it as "Compute Mode".
# - CUDA MPS at all: compute capability 3.5 or later (NVIDIA's MPS documentation; "CUDA MPS requires a
#   device that supports Unified Virtual Address (UVA) and has compute capability SM 3.5 or higher").
# - N clients on each GPU: the daemon refuses more than 48 from compute capability 7.5 on and more than
#   16 below ("invalid MPS configuration", cmd/mps-control-daemon/mps/device.go, maxClients and
#   assertReplicas), and exits.
# - The driver's MPS programs, nvidia-cuda-mps-control (which the daemon runs, mps/daemon.go) and
#   nvidia-cuda-mps-server (which it starts): the container toolkit mounts them into the daemon's
#   container from the driver root's bin directories (nvidia-container-toolkit pkg/nvcdi/driver-nvml.go,
#   NewDriverBinariesDiscoverer, through internal/lookup: /usr/local/sbin, /usr/local/bin, /usr/sbin,
#   /usr/bin, /sbin, /bin under the root, --mps-driver-root, the group's devicePlugin.driverRoot).
# Without --mps-replicas the check passes as "not requested".

readonly MPS_MIN_CAPABILITY=3.5
# From this compute capability on an MPS server takes 48 clients, below it 16 (device.go).
readonly MPS_WIDE_CAPABILITY=7.5
readonly MPS_WIDE_CLIENTS=48 MPS_NARROW_CLIENTS=16
readonly MPS_PROGRAMS=(nvidia-cuda-mps-control nvidia-cuda-mps-server)
readonly MPS_BIN_DIRS=(/usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin)

# validate_mps_args: the MPS arguments (20-arguments.sh validate_args calls it); sets USAGE_ERROR and fails.
validate_mps_args() {
  if [[ -n $MPS_REPLICAS ]]; then
    if ! [[ $MPS_REPLICAS =~ ^[0-9]{1,3}$ ]] || ((10#$MPS_REPLICAS < 2)); then
      USAGE_ERROR="--mps-replicas wants a whole number of 2 or more (the replicas of each GPU), got '$MPS_REPLICAS'"
      return 1
    fi
    MPS_REPLICAS=$((10#$MPS_REPLICAS))
  fi
  if [[ -n $MPS_DRIVER_ROOT && -z $MPS_REPLICAS ]]; then
    USAGE_ERROR="--mps-driver-root needs --mps-replicas"
    return 1
  fi
  if [[ -n $MPS_DRIVER_ROOT && $MPS_DRIVER_ROOT != /* ]]; then
    USAGE_ERROR="--mps-driver-root wants an absolute path like /run/nvidia/driver, got '$MPS_DRIVER_ROOT'"
    return 1
  fi
}

# mps_capabilities: sets MPS_CAPS, the compute capability of each GPU ("8.0"), in index order; fails,
# REPLY saying why, when nvidia-smi gives none.
mps_capabilities() {
  local line
  MPS_CAPS=()
  run_capture "$SMI_TIMEOUT" nvidia-smi --query-gpu=compute_cap --format=csv,noheader
  if ((CAP_RC == 0)); then
    while IFS='' read -r line; do
      trim "$line"
      [[ -z $REPLY ]] && continue
      if ! [[ $REPLY =~ ^[0-9]{1,3}\.[0-9]{1,3}$ ]]; then
        MPS_CAPS=()
        break
      fi
      MPS_CAPS+=("$REPLY")
    done <<<"$CAP_OUT"
  fi
  ((${#MPS_CAPS[@]})) && return 0
  brief "$CAP_OUT"$'\n'"$CAP_ERR"
  REPLY="nvidia-smi --query-gpu=compute_cap gave no compute capability (exit $CAP_RC: ${REPLY:-no output})"
  return 1
}

# mps_gpu_problem INDEX: fails when GPU INDEX cannot serve MPS_REPLICAS MPS clients, REPLY saying why.
mps_gpu_problem() {
  local i=$1 mode cap limit name
  local -a why=()
  name="GPU $i (bus ${Q_BUS[i]})"
  if [[ ${Q_MIG_CURRENT[i]} == Enabled ]]; then
    why+=("is in MIG mode: the device plugin does not share MIG devices through MPS; disable it (nvidia-smi -i $i -mig 0, then reset the GPU) or share the group by timeSlicing")
  elif [[ ${Q_MIG_PENDING[i]} == Enabled ]]; then
    why+=("has MIG mode Enabled pending, which takes effect at its next reset: the device plugin does not share MIG devices through MPS; nvidia-smi -i $i -mig 0")
  fi
  mode=${Q_FIELD["$i|Compute Mode"]-}
  case $mode in
    Default | Exclusive_Process) ;;
    '') why+=("reports no compute mode in nvidia-smi -q, which the MPS control daemon sets (to Exclusive_Process)") ;;
    *) why+=("is in compute mode $mode, which the MPS control daemon would overrule with Exclusive_Process: set it back (nvidia-smi -i $i -c DEFAULT) if MPS may have it") ;;
  esac
  cap=${MPS_CAPS[i]-}
  if [[ -z $cap ]]; then
    why+=("has no compute capability listed by nvidia-smi --query-gpu=compute_cap")
  elif ! version_ge "$cap" "$MPS_MIN_CAPABILITY"; then
    why+=("has compute capability $cap: CUDA MPS needs $MPS_MIN_CAPABILITY or later")
  else
    limit=$MPS_NARROW_CLIENTS
    version_ge "$cap" "$MPS_WIDE_CAPABILITY" && limit=$MPS_WIDE_CLIENTS
    ((MPS_REPLICAS <= limit)) || why+=("has compute capability $cap, whose MPS server takes at most $limit clients, fewer than devicePlugin.sharing.replicas $MPS_REPLICAS")
  fi
  ((${#why[@]})) || return 0
  printf -v REPLY '%s, ' "${why[@]}"
  REPLY="$name ${REPLY%, }"
  return 1
}

# mps_programs: sets REPLY to the bin directory under the driver root that holds both MPS programs
# (as the machine shows it); fails, REPLY naming what is missing, when none does.
mps_programs() {
  local dir program root=${MPS_DRIVER_ROOT%/} missing=''
  local -a found=()
  for program in "${MPS_PROGRAMS[@]}"; do
    for dir in "${MPS_BIN_DIRS[@]}"; do
      if [[ -x $ROOT$root$dir/$program && ! -d $ROOT$root$dir/$program ]]; then
        found+=("$root$dir/$program")
        continue 2
      fi
    done
    missing+="${missing:+ and }$program"
  done
  if [[ -n $missing ]]; then
    REPLY="$missing not found under the driver root ${MPS_DRIVER_ROOT:-/} (in ${MPS_BIN_DIRS[*]}), where the container toolkit looks for the MPS programs to put in the MPS control daemon's container: install the driver's MPS programs (Ubuntu's nvidia-compute-utils-<branch>, Debian's nvidia-cuda-mps)"
    return 1
  fi
  REPLY="${found[*]}"
}

check_mps() {
  local i line caps=''
  local -a problems=()
  if [[ -z $MPS_REPLICAS ]]; then
    add_check mps true "not requested"
    return
  fi
  smi_q_gpus mps "their MIG and compute modes, which MPS sharing depends on, are" || return 0
  mps_capabilities || problems+=("$REPLY")
  for i in "${!Q_BUS[@]}"; do
    mps_gpu_problem "$i" || problems+=("$REPLY")
  done
  mps_programs || problems+=("$REPLY")
  if ((${#problems[@]})); then
    printf -v line '%s; ' "${problems[@]}"
    add_check mps false "devicePlugin.sharing shares each GPU $MPS_REPLICAS ways through MPS, and this machine cannot: ${line%; }"
    return
  fi
  printf -v caps '%s, ' "${MPS_CAPS[@]}"
  add_check mps true "${#Q_BUS[@]} GPU(s) ready for MPS with $MPS_REPLICAS replicas each: none in MIG mode, compute modes the MPS control daemon may set, compute capability ${caps%, }; $REPLY"
}
