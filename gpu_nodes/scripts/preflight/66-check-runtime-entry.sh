# -------------------------------------------------------------- check: runtime-entry
#
# The runtime check says whether the nvidia runtime is there; this one judges its entry, as the
# source that decided holds it (60-check-runtime.sh and 61-running-runtime.sh fill ENT_* while
# they read: config dump, the files, crictl info, daemon.json, docker info, CRI-O's files):
# - its binary is an executable file on the machine. containerd's runc shim runs BinaryName
#   (go-runc's Runc.Command, "runc" when empty) with exec.CommandContext, which looks a bare
#   name up on the shim's PATH, inherited from containerd; dockerd hands runtimes.<name>.path
#   to the same shim as BinaryName (moby daemon/runtime_unix.go, setupRuntimes and
#   defaultV2ShimConfig); CRI-O stats runtime_path, or looks the handler's own name up on
#   its PATH when there is none, and ignores a handler that fails (a default that fails
#   stops CRI-O: cri-o pkg/config/config.go, ValidateRuntimes and ValidateRuntimePath);
# - containerd's runtime_type is not empty: the CRI creates a pod's containers with it as
#   their runtime (containerd.WithRuntime(ociRuntime.Type, ...) in the CRI's sandbox_run.go)
#   and containerd refuses an empty one, "container.Runtime.Name must be set: invalid
#   argument" (validateContainer, core/metadata/containers.go; metadata/containers.go in 1.x);
# - its cgroup driver agrees with kubelet's: the runc shim's SystemdCgroup (unset is false,
#   cgroupfs) for containerd, CRI-O's cgroup_manager and the conmon cgroup that goes with it.
#   k3s and RKE2 hand their kubelet the driver they also give runc's entry, so there runc's
#   entry is what the nvidia runtime must agree with. dockerd sets SystemdCgroup on every
#   runtime from its own cgroup driver (defaultV2ShimConfig), so docker's entry has none.

# The PATH systemd gives the services it starts (DEFAULT_PATH in systemd's
# src/basic/path-util.h, with the split /sbin and /bin): where a bare binary name is looked up.
readonly SERVICE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
readonly RUNC_SHIM=io.containerd.runc.v2
# What crictl info (61-running-runtime.sh) is asked for, besides the runtime check's values.
readonly CRICTL_ENTRY=/config/containerd/runtimes/nvidia
readonly CRICTL_ENTRY_WANT=" $CRICTL_ENTRY/runtimeType $CRICTL_ENTRY/options/BinaryName $CRICTL_ENTRY/options/SystemdCgroup /config/containerd/runtimes/runc/options/SystemdCgroup "

# entry_reset: no entry read yet. ENT_BINARY is the binary key's value (BinaryName,
# runtime_path, path) and ENT_BINARY_SET whether the key is there; ENT_TYPE likewise;
# ENT_SYSTEMD and ENT_RUNC_SYSTEMD the nvidia and runc entries' SystemdCgroup ('' unset);
# ENT_CGROUP_MANAGER, ENT_CONMON_CGROUP and ENT_MONITOR_CGROUP are CRI-O's.
entry_reset() {
  ENT_BINARY='' ENT_BINARY_SET=false ENT_TYPE='' ENT_TYPE_SET=false ENT_SYSTEMD='' ENT_RUNC_SYSTEMD='' ENT_RUNC_SEEN=false
  ENT_CGROUP_MANAGER='' ENT_CONMON_CGROUP='' ENT_MONITOR_CGROUP='' ENT_INLINE=false
}

# toml_path TEXT: sets REPLY to a TOML key or table name without its quotes and blanks, so that
# plugins."io.containerd.grpc.v1.cri".containerd.runtimes.'nvidia' ends in containerd.runtimes.nvidia.
toml_path() { REPLY=${1//[\"\'$' \t']/}; }

# toml_value TEXT: sets REPLY to a value's text: a string's contents, else what comes before a comment.
toml_value() {
  if [[ $1 =~ ^\"([^\"]*)\" || $1 =~ ^\'([^\']*)\' ]]; then
    REPLY=${BASH_REMATCH[1]}
  else
    trim "${1%%#*}"
  fi
}

# entry_scan_toml TEXT: notes the nvidia (and runc) runtime's keys in TEXT, containerd's or
# CRI-O's, as tables or dotted keys; later values win, as they do when containerd and CRI-O merge.
entry_scan_toml() {
  local line table='' path
  while IFS='' read -r line; do
    [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
    if [[ $line =~ ^[[:space:]]*\[+([^]]*)\]+ ]]; then
      toml_path "${BASH_REMATCH[1]}" && table=$REPLY
      [[ $table == *.containerd.runtimes.runc || $table == *.containerd.runtimes.runc.options ]] && ENT_RUNC_SEEN=true
      continue
    fi
    [[ $line =~ ^[[:space:]]*([^=]*[^=[:space:]])[[:space:]]*=[[:space:]]*(.*)$ ]] || continue
    toml_path "${BASH_REMATCH[1]}" && path=$table${table:+.}$REPLY
    toml_value "${BASH_REMATCH[2]}"
    entry_key "$path" "$REPLY"
  done <<<"$1"
}

# entry_key PATH VALUE: records VALUE when PATH is a key the check judges. The entry written as an
# inline table ({ ... }) is noted, not read: its keys would otherwise read as missing.
entry_key() {
  if [[ $2 == \{* ]]; then
    case $1 in *.containerd.runtimes.nvidia | *.containerd.runtimes.nvidia.options | crio.runtime.runtimes.nvidia) ENT_INLINE=true ;; esac
    return 0
  fi
  case $1 in
    *.containerd.runtimes.nvidia.runtime_type | crio.runtime.runtimes.nvidia.runtime_type) ENT_TYPE=$2 ENT_TYPE_SET=true ;;
    *.containerd.runtimes.nvidia.options.BinaryName | crio.runtime.runtimes.nvidia.runtime_path) ENT_BINARY=$2 ENT_BINARY_SET=true ;;
    *.containerd.runtimes.nvidia.options.SystemdCgroup) ENT_SYSTEMD=$2 ;;
    *.containerd.runtimes.runc.options.SystemdCgroup) ENT_RUNC_SYSTEMD=$2 ENT_RUNC_SEEN=true ;;
    *.containerd.runtimes.runc.*) ENT_RUNC_SEEN=true ;;
    crio.runtime.runtimes.nvidia.monitor_cgroup) ENT_MONITOR_CGROUP=$2 ;;
    crio.runtime.cgroup_manager) ENT_CGROUP_MANAGER=$2 ;;
    crio.runtime.conmon_cgroup) ENT_CONMON_CGROUP=$2 ;;
  esac
}

# entry_from_json PREFIX BINARY TYPE: the entry from json_scan's JP_VALUE, the nvidia runtime's
# object at PREFIX with its binary under the key BINARY and its type under TYPE.
entry_from_json() {
  entry_reset
  [[ -n ${JP_VALUE[$1/$2]+set} ]] && ENT_BINARY=${JP_VALUE[$1/$2]} ENT_BINARY_SET=true
  [[ -n ${JP_VALUE[$1/$3]+set} ]] && ENT_TYPE=${JP_VALUE[$1/$3]} ENT_TYPE_SET=true
  return 0
}

# entry_from_crictl: the running containerd's entry (crictl info's JSON, asked for CRICTL_ENTRY_WANT).
entry_from_crictl() {
  entry_from_json "$CRICTL_ENTRY" options/BinaryName runtimeType
  ENT_SYSTEMD=${JP_VALUE[$CRICTL_ENTRY/options/SystemdCgroup]-}
  if [[ " ${JP_KEYS[/config/containerd/runtimes]-} " == *" runc "* ]]; then
    ENT_RUNC_SEEN=true ENT_RUNC_SYSTEMD=${JP_VALUE[/config/containerd/runtimes/runc/options/SystemdCgroup]-}
  fi
}

# ------------------------------------------------------------------- the binary

# resolve_binary VALUE: sets REPLY to the file VALUE names on the machine (as shown) when it is an
# executable file; otherwise fails with REPLY saying what is wrong.
resolve_binary() {
  local dir IFS=: where
  if [[ $1 == /* ]]; then
    if [[ -f $ROOT$1 && -x $ROOT$1 ]]; then
      REPLY=$1
    elif blocked_by "$ROOT$1"; then
      shown "$REPLY"
      REPLY="cannot tell whether $1 can run: $REPLY may not be read or searched by this user; preflight needs root (README: Privileges)"
      return 1
    elif [[ -e $ROOT$1 ]]; then
      REPLY="$1 is not an executable file" && return 1
    else
      REPLY="$1 is not on this machine" && return 1
    fi
    return 0
  fi
  if [[ $1 == */* ]]; then
    REPLY="$1 is a relative path, which the runtime resolves against its working directory, not a fixed place" && return 1
  fi
  for dir in $SERVICE_PATH; do
    where=$dir/$1
    if [[ -f $ROOT$where && -x $ROOT$where ]]; then
      REPLY="$1 is $where on the daemon's PATH"
      return 0
    fi
  done
  REPLY="no directory of the daemon's PATH ($SERVICE_PATH, as systemd gives services) holds an executable $1"
  return 1
}

# runtime_found_at: sets REPLY to where nvidia-container-runtime is on the machine, '' if nowhere.
runtime_found_at() {
  local dir IFS=:
  for dir in $SERVICE_PATH; do
    [[ -f $ROOT$dir/nvidia-container-runtime && -x $ROOT$dir/nvidia-container-runtime ]] && REPLY=$dir/nvidia-container-runtime && return 0
  done
  REPLY=''
  return 1
}

# fix_binary: sets REPLY to how to point the nvidia runtime of RT_NAME at its binary.
fix_binary() {
  local lead target=PATH service=${RUNTIME_SERVICE[$RT_NAME]-}
  if runtime_found_at; then
    target=$REPLY lead="nvidia-container-runtime is at $REPLY: point the entry at it"
  else
    lead="install the NVIDIA Container Toolkit, or point the entry at nvidia-container-runtime"
  fi
  case $RT_NAME in
    k3s | rke2)
      [[ $RT_NAME == rke2 ]] && service=rke2-server || service=k3s
      REPLY="$RT_NAME writes the nvidia runtime from the nvidia-container-runtime it finds at each start: install the NVIDIA Container Toolkit, then restart $service"
      ;;
    docker) REPLY="$lead (runtimes.nvidia.path in /etc/docker/daemon.json: nvidia-ctk runtime configure --runtime=docker --nvidia-runtime-path=$target), then restart docker" ;;
    *) REPLY="$lead (nvidia-ctk runtime configure --runtime=${CTK_RUNTIME[$RT_NAME]} --nvidia-runtime-path=$target), then restart $service" ;;
  esac
}

# entry_binary KEY WRITTEN: judges ENT_BINARY, the value of KEY as WRITTEN in its source.
entry_binary() {
  local key=$1 written=$2
  if resolve_binary "$ENT_BINARY"; then
    if [[ $REPLY == /* ]]; then entry_found+=("$key $REPLY is an executable file"); else entry_found+=("$key $REPLY"); fi
    return
  fi
  local why=$REPLY effect="no pod with the nvidia runtime starts"
  [[ $RT_NAME == cri-o ]] && effect="CRI-O ignores the handler, and does not start when it is the default"
  fix_binary
  entry_problems+=("$written in the nvidia runtime (read $RT_SOURCE): $why, so $effect; $REPLY")
}

# ------------------------------------------------------------- the cgroup driver

# kubelet_driver: sets KL_DRIVER_WHERE to where kubelet's cgroup driver (KL_CGROUP_DRIVER) comes
# from; fails when no kubelet settings were found.
kubelet_driver() {
  [[ -n ${KL_CGROUP_DRIVER-} ]] || return 1
  if kubelet_setting cgroup-driver cgroupDriver; then
    KL_DRIVER_WHERE=$KL_WHERE
  else
    KL_DRIVER_WHERE="kubelet's default, cgroupfs (no cgroupDriver in its flags or config)"
  fi
}

# systemd_text VALUE: sets REPLY to how SystemdCgroup VALUE reads, with the driver it means.
systemd_text() {
  case $1 in
    true) REPLY="SystemdCgroup = true (systemd)" ;;
    '') REPLY="SystemdCgroup unset (cgroupfs)" ;;
    *) REPLY="SystemdCgroup = $1 (cgroupfs)" ;;
  esac
}

# entry_systemd_cgroup: the nvidia runtime's SystemdCgroup against kubelet's driver (containerd), or
# against runc's entry (k3s and RKE2, which give both, and their kubelet, one setting).
entry_systemd_cgroup() {
  local want where have=cgroupfs fix service=${RUNTIME_SERVICE[$RT_NAME]-containerd}
  [[ $ENT_SYSTEMD == true ]] && have=systemd
  if [[ $RT_NAME == containerd ]] && kubelet_driver; then
    want=$KL_CGROUP_DRIVER where=$KL_DRIVER_WHERE
  elif $ENT_RUNC_SEEN; then
    want=cgroupfs
    [[ $ENT_RUNC_SYSTEMD == true ]] && want=systemd
    systemd_text "$ENT_RUNC_SYSTEMD"
    where="runc's entry (${REPLY% (*})"
  else
    entry_found+=("SystemdCgroup not judged: neither kubelet's settings nor runc's entry were found")
    return
  fi
  [[ $want == systemd || $want == cgroupfs ]] || return 0
  systemd_text "$ENT_SYSTEMD"
  if [[ $have == "$want" ]]; then
    entry_found+=("${REPLY% (*} agrees with $where")
    return
  fi
  local value=false
  [[ $want == systemd ]] && value=true
  case $RT_NAME in
    k3s | rke2)
      [[ $RT_NAME == rke2 ]] && service=rke2-server || service=k3s
      fix="$RT_NAME gives the nvidia runtime its own SystemdCgroup since k3s pull request 8470: upgrade $RT_NAME, or set SystemdCgroup = $value for the nvidia runtime in a config.toml.tmpl beside its config.toml; then restart $service"
      ;;
    *) fix="set SystemdCgroup = $value in the nvidia runtime's options table ([...containerd.runtimes.nvidia.options]), then restart $service; nvidia-ctk has no flag for it: it copies runc's options (pkg/config/engine/containerd/config.go, GetDefaultRuntimeOptions), so nvidia-ctk runtime configure --runtime=containerd --config-source=command writes it once runc's entry has it" ;;
  esac
  entry_problems+=("the nvidia runtime has $REPLY (read $RT_SOURCE), which disagrees with $where: runc and kubelet then disagree on the pods' cgroups, and pods with the nvidia runtime fail to start or are killed (nvidia-container-toolkit issue 28; k3s issue 7130); $fix")
}

# ------------------------------------------------------------------ per runtime

entry_containerd() {
  if ! $ENT_TYPE_SET || [[ -z $ENT_TYPE ]]; then
    local fix="set runtime_type = \"$RUNC_SHIM\" under [...containerd.runtimes.nvidia], or upgrade the NVIDIA Container Toolkit to 1.20.0 or later and run nvidia-ctk runtime configure --runtime=containerd again; then restart containerd"
    [[ $RT_NAME == k3s || $RT_NAME == rke2 ]] && fix="set runtime_type = \"$RUNC_SHIM\" for the nvidia runtime in a config.toml.tmpl beside $RT_NAME's config.toml, then restart $RT_NAME"
    entry_problems+=("runtime_type is empty in the nvidia runtime (read $RT_SOURCE): containerd creates each pod's containers with it as their runtime and refuses an empty one (\"container.Runtime.Name must be set: invalid argument\"), so no pod with the nvidia runtime starts. nvidia-ctk before 1.20.0 copied it empty from a runc entry that had none (nvidia-container-toolkit issue 1956; fixed in 1.20.0); $fix")
  elif [[ $ENT_TYPE != "$RUNC_SHIM" ]]; then
    entry_found+=("runtime_type $ENT_TYPE is not the runc shim, whose options (BinaryName, SystemdCgroup) this check knows: not judged further")
    return
  else
    entry_found+=("runtime_type $ENT_TYPE")
  fi
  if [[ -z $ENT_BINARY ]]; then
    fix_binary
    entry_problems+=("the nvidia runtime has no BinaryName (read $RT_SOURCE): the runc shim then runs runc itself (go-runc's default command), so pods get no GPUs from it; $REPLY")
  else
    entry_binary BinaryName "BinaryName = \"$ENT_BINARY\""
  fi
  entry_systemd_cgroup
}

entry_docker() {
  if ! $ENT_BINARY_SET && $ENT_TYPE_SET; then
    entry_found+=("the nvidia runtime runs the shim $ENT_TYPE (runtimeType), no binary path of its own to judge")
    return
  fi
  entry_binary path "\"path\": \"$ENT_BINARY\""
}

entry_crio() {
  if [[ -n $ENT_BINARY ]]; then
    entry_binary runtime_path "runtime_path = \"$ENT_BINARY\""
  elif resolve_binary nvidia; then
    entry_found+=("no runtime_path: CRI-O runs nvidia from its PATH")
  else
    fix_binary
    entry_problems+=("the nvidia runtime has no runtime_path (read $RT_SOURCE): CRI-O looks for \"nvidia\" on its PATH, which holds none, and ignores the handler; $REPLY")
  fi
  crio_cgroups
}

# crio_cgroups: CRI-O's cgroup_manager (systemd by default: internal/config/cgmgr, DefaultCgroupManager)
# against kubelet's driver: CRI-O refuses a pod sandbox whose cgroup parent is not of its kind
# ("cri-o configured with systemd cgroup manager, but did not receive slice as parent", and the
# reverse). The conmon cgroup (conmon_cgroup, which overrides the handler's monitor_cgroup) must
# be 'pod' or empty under cgroupfs, 'pod' or a slice under systemd, or CRI-O does not start
# (pkg/config/config.go, TranslateMonitorFieldsForHandler; only for the oci runtime type).
crio_cgroups() {
  local manager=${ENT_CGROUP_MANAGER:-systemd} where="read $RT_SOURCE" monitor=${ENT_CONMON_CGROUP:-$ENT_MONITOR_CGROUP} key=monitor_cgroup
  [[ -n $ENT_CGROUP_MANAGER ]] || where="CRI-O's default"
  [[ -n $ENT_CONMON_CGROUP ]] && key=conmon_cgroup
  if kubelet_driver && [[ $KL_CGROUP_DRIVER != "$manager" ]]; then
    entry_problems+=("cgroup_manager $manager ($where) but $KL_DRIVER_WHERE: CRI-O refuses every pod sandbox (\"cri-o configured with $manager cgroup manager, but did not receive slice as parent\" or its reverse); set cgroup_manager = \"$KL_CGROUP_DRIVER\" under [crio.runtime] in /etc/crio/crio.conf.d (with cgroupfs also conmon_cgroup = \"pod\"), or kubelet's cgroupDriver to $manager; then restart crio or kubelet")
  elif kubelet_driver; then
    entry_found+=("cgroup_manager $manager ($where) agrees with $KL_DRIVER_WHERE")
  fi
  [[ -z $ENT_TYPE || $ENT_TYPE == oci ]] || return 0
  if [[ $manager == cgroupfs ]] && [[ -n $monitor && $monitor != pod && $monitor != system.slice ]]; then
    entry_problems+=("$key = \"$monitor\" with the cgroupfs cgroup manager (read $RT_SOURCE): CRI-O does not start (\"cgroupfs manager conmon cgroup should be 'pod' or empty\"); set $key = \"pod\", then restart crio")
  elif [[ $manager == systemd ]] && [[ -n $monitor && $monitor != pod && $monitor != *.slice ]]; then
    entry_problems+=("$key = \"$monitor\" with the systemd cgroup manager (read $RT_SOURCE): CRI-O does not start (\"conmon cgroup should be 'pod' or a systemd slice\"); set $key = \"pod\" or a slice such as system.slice, then restart crio")
  fi
}

check_runtime_entry() {
  local -a entry_problems=() entry_found=()
  if [[ -z $RT_NAME || $RT_CONFIGURED != true || -n $RT_ERROR ]] || $RT_UNREADABLE; then
    add_check runtime-entry true "no nvidia runtime entry to judge (the runtime check says why)"
    return
  fi
  CANNOT_READ=()
  if $ENT_INLINE; then
    add_check runtime-entry true "the nvidia runtime is written as (or with) an inline table, which this check does not read: not judged (read $RT_SOURCE)"
    return
  fi
  case $RT_NAME in
    containerd | k3s | rke2) entry_containerd ;;
    docker) entry_docker ;;
    cri-o) entry_crio ;;
  esac
  list_check runtime-entry "the nvidia runtime's entry would not run GPU pods" "${#entry_problems[@]}" "${entry_problems[@]}" "${entry_found[@]}" "read $RT_SOURCE"
}
