# ----------------------------------------------------------- kubelet's settings
#
# Kubelet's flags and config files answer two questions: which CRI endpoint it
# talks to (for --runtime auto) and whether the removed DevicePlugins gate is set.
# collect_kubelet reads them once, in kubelet's order of precedence: the running
# kubelet's command line, the flag files, then the config file and its drop-ins.

# Where kubeadm, distro packages, systemd units and EKS's AMI put kubelet's flags,
# and where k3s and RKE2 take them (kubelet-arg in their config.yaml).
readonly -a KUBELET_FLAG_FILES=(
  /var/lib/kubelet/kubeadm-flags.env /etc/default/kubelet /etc/sysconfig/kubelet
  /etc/systemd/system/kubelet.service "/etc/systemd/system/kubelet.service.d/*.conf"
  "/usr/lib/systemd/system/kubelet.service.d/*.conf"
  /etc/rancher/k3s/config.yaml "/etc/rancher/k3s/config.yaml.d/*.yaml"
  /etc/rancher/rke2/config.yaml "/etc/rancher/rke2/config.yaml.d/*.yaml"
)
# kubelet's --config default under kubeadm, and the usual drop-in dir (kubelet
# reads a drop-in dir only when given --config-dir; a gate waiting there for that
# flag is worth reporting all the same).
readonly KUBELET_DEFAULT_CONFIG=/var/lib/kubelet/config.yaml
readonly KUBELET_DEFAULT_CONFIG_DIR=/etc/kubernetes/kubelet.conf.d

# kl_add LABEL TEXT: one source of kubelet settings.
kl_add() {
  KL_LABELS+=("$1")
  KL_TEXTS+=("$2")
}

# kl_note_flags TEXT: adds the paths of --config and --config-dir in TEXT.
kl_note_flags() {
  local text=$1 re="--config(-dir)?(=|[[:space:]]+)[\"']?([^[:space:]\"']+)"
  while [[ $text =~ $re ]]; do
    if [[ -n ${BASH_REMATCH[1]} ]]; then
      KL_DIRS+=("${BASH_REMATCH[3]}")
    else
      KL_CONFIGS+=("${BASH_REMATCH[3]}")
    fi
    text=${text#*"${BASH_REMATCH[0]}"}
  done
}

# collect_kubelet: fills KL_LABELS/KL_TEXTS (flag sources first: KL_FLAG_COUNT of
# them, then config files in the order kubelet applies them) and KL_CANNOT_READ.
collect_kubelet() {
  local f g pid config dir text
  local -a argv
  local -A seen=()
  KL_LABELS=() KL_TEXTS=() KL_CONFIGS=("$KUBELET_DEFAULT_CONFIG") KL_DIRS=("$KUBELET_DEFAULT_CONFIG_DIR")
  CANNOT_READ=()
  for f in "$ROOT"/proc/[0-9]*/cmdline; do
    mapfile -d '' -t argv <"$f" 2>/dev/null || continue
    ((${#argv[@]})) || continue
    [[ ${argv[0]##*/} == kubelet ]] || continue
    pid=${f%/cmdline} && pid=${pid##*/}
    kl_add "the command line of kubelet (pid $pid)" "${argv[*]}"
    kl_note_flags "${argv[*]}"
  done
  for f in "${KUBELET_FLAG_FILES[@]}"; do
    glob_root "$f"
    for g in "${MATCHES[@]}"; do
      slurp "$g" || continue
      text=$REPLY
      shown "$g"
      kl_add "$REPLY" "$text"
      kl_note_flags "$text"
    done
  done
  KL_FLAG_COUNT=${#KL_TEXTS[@]}
  for config in "${KL_CONFIGS[@]}"; do
    [[ $config == /* && -z ${seen[$config]-} ]] || continue
    seen[$config]=1
    slurp "$ROOT$config" && kl_add "$config" "$REPLY"
  done
  # Drop-ins: *.conf only, in lexical order, each overriding the ones before.
  for dir in "${KL_DIRS[@]}"; do
    [[ $dir == /* && -z ${seen[$dir]-} ]] || continue
    seen[$dir]=1
    glob_root "${dir%/}/*.conf"
    for g in "${MATCHES[@]}"; do
      slurp "$g" || continue
      config=$REPLY
      shown "$g"
      kl_add "$REPLY" "$config"
    done
  done
  KL_CANNOT_READ=("${CANNOT_READ[@]}")
}

# kubelet_version: sets KV_TEXT ("v1.30.2"), KV_MINOR and KV_MAJOR, or KV_WHY. Asks
# `kubelet --version` once per run; the CDI and feature-gate checks both need it.
kubelet_version() {
  if [[ -n ${KV_RC-} ]]; then
    return "$KV_RC"
  fi
  KV_TEXT='' KV_MAJOR='' KV_MINOR='' KV_WHY='' KV_RC=1
  if ! command -v kubelet >/dev/null 2>&1; then
    KV_WHY="kubelet is not on PATH"
    return 1
  fi
  run_capture "$CMD_TIMEOUT" kubelet --version
  if ((CAP_RC == 0)) && [[ $CAP_OUT =~ v?([0-9]+)\.([0-9]+)(\.[0-9]+)? ]]; then
    KV_TEXT="v${BASH_REMATCH[0]#v}" KV_MAJOR=$((10#${BASH_REMATCH[1]})) KV_MINOR=$((10#${BASH_REMATCH[2]})) KV_RC=0
    return 0
  fi
  brief "$CAP_OUT"$'\n'"$CAP_ERR"
  KV_WHY="kubelet --version gave no version (exit $CAP_RC: ${REPLY:-no output})"
  return 1
}

# kubelet_setting FLAG KEY: sets KL_VALUE to what kubelet is given as --FLAG or as
# config key KEY, and KL_WHERE to where that was found; fails when it is given neither.
kubelet_setting() {
  local i line re_flag re_config
  re_flag="--$1(=|[[:space:]]+)[\"']?([^[:space:]\"']+)"
  re_config="(^|[^A-Za-z])$2[\"']?[[:space:]]*:[[:space:]]*[\"']?([^[:space:]\"',}]+)"
  KL_VALUE='' KL_WHERE=''
  # A flag beats the config file; among flag sources the running kubelet comes first.
  for ((i = 0; i < KL_FLAG_COUNT; i++)); do
    while IFS='' read -r line; do
      [[ $line =~ ^[[:space:]]*# ]] && continue
      if [[ $line =~ $re_flag ]]; then
        KL_VALUE=${BASH_REMATCH[2]}
        KL_WHERE="kubelet --$1 $KL_VALUE in ${KL_LABELS[i]}"
        return 0
      fi
    done <<<"${KL_TEXTS[i]}"
  done
  # Config files: a later drop-in overrides the config file.
  for ((i = KL_FLAG_COUNT; i < ${#KL_TEXTS[@]}; i++)); do
    while IFS='' read -r line; do
      [[ $line =~ ^[[:space:]]*# ]] && continue
      if [[ $line =~ $re_config ]]; then
        KL_VALUE=${BASH_REMATCH[2]}
        KL_WHERE="kubelet $2 $KL_VALUE in ${KL_LABELS[i]}"
      fi
    done <<<"${KL_TEXTS[i]}"
  done
  [[ -n $KL_VALUE ]]
}

# kubelet_endpoint: sets KL_ENDPOINT to the CRI endpoint kubelet is given, and
# KL_ENDPOINT_WHERE to where that was found; fails when it is given none.
kubelet_endpoint() {
  KL_ENDPOINT='' KL_ENDPOINT_WHERE=''
  kubelet_setting container-runtime-endpoint containerRuntimeEndpoint || return 1
  KL_ENDPOINT=$KL_VALUE KL_ENDPOINT_WHERE=$KL_WHERE
}

# kubelet_device_settings: sets KL_CGROUP_DRIVER and KL_CPU_MANAGER, the two kubelet
# settings under which a running pod can lose its GPUs (the systemd cgroup driver's
# daemon-reload, the CPU manager's static policy: nvidia-container-toolkit issue 48)
# unless the device plugin passes the device nodes (PASS_DEVICE_SPECS) or CDI devices.
# Kubelet's own defaults, cgroupfs and none, when it is given neither; both empty when
# no kubelet settings were found at all. Reported, not judged: the plugin's settings
# cover both cases (gpu_nodes/manifests/device_plugin.py).
kubelet_device_settings() {
  KL_CGROUP_DRIVER='' KL_CPU_MANAGER=''
  ((${#KL_TEXTS[@]})) || return 0
  KL_CGROUP_DRIVER=cgroupfs KL_CPU_MANAGER=none
  if kubelet_setting cgroup-driver cgroupDriver; then KL_CGROUP_DRIVER=$KL_VALUE; fi
  if kubelet_setting cpu-manager-policy cpuManagerPolicy; then KL_CPU_MANAGER=$KL_VALUE; fi
}
