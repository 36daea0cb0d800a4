# --------------------------------------------------------- the running runtime
#
# The files say what a runtime runs after its next start; the running daemon runs what
# it read at its last. `nvidia-ctk runtime configure` writes files and asks for a restart,
# and until then pods start as before. So where the running daemon answers, its word is
# the verdict and the files are what a restart would bring:
# - containerd: `crictl info` prints the CRI plugin's running config (the verbose Status
#   info), config.containerd.defaultRuntimeName, config.containerd.runtimes and
#   config.enableCDI (the JSON tags of containerd's pkg/cri/config/config.go in 1.7,
#   internal/cri/config/config.go in 2.x).
# - docker: `docker info --format '{{json .}}'` prints the daemon's Info: DefaultRuntime
#   and Runtimes (moby api/types/system/info.go).
# Without crictl or docker on PATH, or without an answer, the files decide as before.
# k3s and RKE2 (their containerd renders its config at each start) and CRI-O keep the
# files' verdict.

readonly DEFAULT_CONTAINERD_ENDPOINT=unix:///run/containerd/containerd.sock

# running_runtime NAME: after inspect_NAME, asks the running daemon. When it answers, its
# values replace the files' (RT_CONFIGURED, RT_IS_DEFAULT, RT_DEFAULT_NAME, RT_ENABLE_CDI,
# RT_SRC, RT_SOURCE, and the nvidia runtime's entry, ENT_*). Sets RUN_FIX (the files already have what the daemon lacks: restart
# it), RUN_CDI_FIX (the same for CDI) and RUN_WARN (the daemon has what its files lack);
# check_runtime empties them before inspect_NAME.
running_runtime() {
  ((${#CANNOT_READ[@]})) && return 0
  [[ -z $RT_ERROR ]] || return 0
  case $1 in
    containerd) running_containerd ;;
    docker) running_docker ;;
  esac
  return 0
}

# running_containerd: `crictl info` at the endpoint kubelet uses (containerd's default
# socket when kubelet names none).
running_containerd() {
  local endpoint=$DEFAULT_CONTAINERD_ENDPOINT
  command -v crictl >/dev/null 2>&1 || return 0
  if kubelet_endpoint && [[ $KL_ENDPOINT == *containerd.sock ]]; then
    endpoint=$KL_ENDPOINT
    [[ $endpoint == *://* ]] || endpoint=unix://$endpoint
  fi
  run_capture "$CMD_TIMEOUT" crictl --runtime-endpoint "$endpoint" info
  running_answer "crictl info" || return 0
  JP_WANT=" /config/containerd/defaultRuntimeName /config/enableCDI $CRICTL_ENTRY_WANT" JP_WANT_KEYS=" /config/containerd/runtimes "
  if ! json_scan "$CAP_OUT" || [[ -z ${JP_VALUE[/config/containerd/defaultRuntimeName]-} ]]; then
    RT_SOURCE+="; crictl info printed no CRI runtime config${JP_ERR:+ ($JP_ERR)}, so the files decide"
    return 0
  fi
  running_verdict containerd containerd "crictl info" crictl-info "${JP_VALUE[/config/containerd/defaultRuntimeName]}" \
    "${JP_KEYS[/config/containerd/runtimes]-}" "${JP_VALUE[/config/enableCDI]-}"
  entry_from_crictl
}

running_docker() {
  command -v docker >/dev/null 2>&1 || return 0
  run_capture "$CMD_TIMEOUT" docker info --format '{{json .}}'
  running_answer "docker info" || return 0
  JP_WANT=" /DefaultRuntime /Runtimes/nvidia/path /Runtimes/nvidia/runtimeType " JP_WANT_KEYS=" /Runtimes "
  if ! json_scan "$CAP_OUT" || [[ -z ${JP_VALUE[/DefaultRuntime]-} ]]; then
    RT_SOURCE+="; docker info printed no DefaultRuntime${JP_ERR:+ ($JP_ERR)}, so the files decide"
    return 0
  fi
  running_verdict docker dockerd "docker info" docker-info "${JP_VALUE[/DefaultRuntime]}" "${JP_KEYS[/Runtimes]-}" ''
  entry_from_json /Runtimes/nvidia path runtimeType
}

# running_answer LABEL: succeeds when the command of run_capture answered; otherwise notes
# in RT_SOURCE that the files decide, and why.
running_answer() {
  ((CAP_RC == 0)) && [[ -n ${CAP_OUT//[[:space:]]/} ]] && return 0
  brief "$CAP_ERR"$'\n'"$CAP_OUT"
  timed_out && REPLY="timed out after ${CMD_TIMEOUT}s"
  RT_SOURCE+="; $1 failed (exit $CAP_RC: ${REPLY:-no output}), so the files decide"
  return 1
}

# running_verdict NAME DAEMON LABEL SRC DEFAULT RUNTIMES CDI: the running daemon's values
# (its default runtime, its runtimes' names, its CDI setting, '' when it has none) become
# the verdict; what differs from the files (RT_* as inspect_NAME left them) is named.
running_verdict() {
  local name=$1 daemon=$2 label=$3 src=$4 default=$5 runtimes=$6 cdi=$7 service=${RUNTIME_SERVICE[$1]}
  local files=$RT_SOURCE files_nvidia=$RT_CONFIGURED files_default=${RT_DEFAULT_NAME:-runc} files_cdi=$RT_ENABLE_CDI
  local running_nvidia=false
  [[ " $runtimes " == *" nvidia "* ]] && running_nvidia=true
  RT_CONFIGURED=$running_nvidia RT_DEFAULT_NAME=$default RT_IS_DEFAULT=false RT_SRC=$src RT_CERTAIN=true
  [[ $default == nvidia ]] && RT_IS_DEFAULT=true
  [[ -n $cdi ]] && RT_ENABLE_CDI=$cdi
  if [[ $files_nvidia == true && $running_nvidia != true ]]; then
    RUN_FIX="its files add it ($files) but the running $daemon has not loaded them: restart $service"
  elif [[ $files_default == nvidia && $default != nvidia ]]; then
    RUN_FIX="its files make nvidia the default ($files) but the running $daemon has not loaded them: restart $service"
  fi
  if [[ $files_cdi == true && $cdi == false ]]; then
    RUN_CDI_FIX="the running $name has CDI off ($label), though its files set enable_cdi = true: restart $service"
  fi
  if [[ $running_nvidia == true && $files_nvidia != true ]] || [[ $default == nvidia && $files_default != nvidia ]]; then
    RUN_WARN="the running $daemon has what its files ($files) do not: a restart of $name would drop it"
  fi
  RT_SOURCE="$label (the running $daemon)"
  [[ -z $RUN_FIX$RUN_CDI_FIX$RUN_WARN ]] && RT_SOURCE+=", which agrees with its files ($files)"
  return 0
}
