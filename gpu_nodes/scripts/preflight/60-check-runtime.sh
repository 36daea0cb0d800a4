# ----------------------------------------------------------------- check: runtime

# runtimes.nvidia, runtimes."nvidia" or runtimes.'nvidia', as a table or a dotted key,
# but not runtimes.nvidia-cdi and friends.
readonly NVIDIA_RUNTIME_RE="runtimes\\.(nvidia|\"nvidia\"|'nvidia')([].[:space:]=]|\$)"

# nvidia-ctk's name for each runtime, and the service to restart after it.
declare -rA CTK_RUNTIME=([containerd]=containerd [docker]=docker [cri-o]=crio)
declare -rA RUNTIME_SERVICE=([containerd]=containerd [docker]=docker [cri-o]=crio)
# CRI sockets, most telling first. docker-ce always installs containerd and leaves
# its socket, so a cri-dockerd socket outranks containerd's; k3s and RKE2 share
# /run/k3s/containerd and may sit beside a system containerd.
readonly -a CRI_SOCKETS=(
  /var/run/cri-dockerd.sock /run/cri-dockerd.sock
  /var/run/crio/crio.sock /run/crio/crio.sock
  /run/k3s/containerd/containerd.sock
  /run/containerd/containerd.sock /var/run/containerd/containerd.sock
)

# scan_toml TEXT DEFAULT_KEY [entry]: notes whether TEXT configures the nvidia runtime and
# the last value given to DEFAULT_KEY (later files override earlier ones); with "entry", TEXT
# is what decides, and the nvidia runtime's entry is read from it too (66-check-runtime-entry.sh).
scan_toml() {
  local line key_re="^[[:space:]]*$2[[:space:]]*=[[:space:]]*[\"']([^\"']*)[\"']"
  local cdi_re="^[[:space:]]*enable_cdi[[:space:]]*=[[:space:]]*(true|false)"
  while IFS='' read -r line; do
    [[ $line =~ ^[[:space:]]*# ]] && continue
    [[ $line =~ $NVIDIA_RUNTIME_RE ]] && RT_CONFIGURED=true
    [[ $line =~ $key_re ]] && RT_DEFAULT_NAME=${BASH_REMATCH[1]}
    [[ $line =~ $cdi_re ]] && RT_ENABLE_CDI=${BASH_REMATCH[1]}
  done <<<"$1"
  [[ $RT_DEFAULT_NAME == nvidia ]] && RT_IS_DEFAULT=true
  [[ ${3-} != entry ]] || entry_scan_toml "$1"
}

# read_files FILE...: sets REPLY to the files' text, and RT_SOURCE to their names.
read_files() {
  local f text='' names=''
  for f in "$@"; do
    slurp "$f"
    text+=$REPLY$'\n'
    shown "$f"
    names+="${names:+, }$REPLY"
  done
  RT_SOURCE=$names
  REPLY=$text
}

# toml_head TEXT: from the keys before TEXT's first table, sets IMPORTS (the
# patterns of imports = [...]) and CFG_VERSION (version; 1 when unset, as in containerd).
toml_head() {
  local line buf='' collecting=false
  IMPORTS=() CFG_VERSION=1
  while IFS='' read -r line; do
    [[ $line =~ ^[[:space:]]*# ]] && continue
    if $collecting; then
      buf+=" $line"
      [[ $line == *]* ]] && collecting=false
      continue
    fi
    [[ $line =~ ^[[:space:]]*\[ ]] && break # top-level keys end at the first table
    if [[ $line =~ ^[[:space:]]*version[[:space:]]*=[[:space:]]*([0-9]+) ]]; then
      CFG_VERSION=$((10#${BASH_REMATCH[1]}))
    elif [[ $line =~ ^[[:space:]]*imports[[:space:]]*= ]]; then
      buf=${line#*=}
      [[ $buf == *]* ]] || collecting=true
    fi
  done <<<"$1"
  while [[ $buf =~ [\"\']([^\"\']*)[\"\'] ]]; do
    IMPORTS+=("${BASH_REMATCH[1]}")
    buf=${buf#*"${BASH_REMATCH[0]}"}
  done
}

# containerd_files MAIN: the files containerd loads for the config MAIN (as on the
# machine), in its order, as containerd's LoadConfig does it (containerd
# services/server/config/config.go in 1.x, cmd/containerd/server/config/config.go
# in 2.x): MAIN first, then, breadth first, what each loaded file's `imports`
# names; a pattern with * is a glob, a relative path is relative to the importing
# file's directory (containerd 1.x resolved a relative *glob* against its working
# directory instead; such configs are rare and the verdict is marked uncertain
# anyway); a file already loaded is skipped. Nothing else is read: a
# conf.d that no `imports` names is never loaded, whatever the version. Sets
# FILES, FILE_TEXTS, ROOT_VERSION (MAIN's config version) and UNIMPORTED (drop-ins
# lying in the usual dirs beside MAIN that were not loaded).
containerd_files() {
  local main=$1 i=0 f pattern dir
  local -a pending=("$ROOT$main")
  local -A loaded=()
  FILES=() FILE_TEXTS=() ROOT_VERSION='' UNIMPORTED=()
  while ((i < ${#pending[@]} && i < 256)); do
    f=${pending[i]} && ((i++))
    [[ -z ${loaded[$f]-} ]] || continue
    loaded[$f]=1
    slurp "$f" || continue
    FILES+=("$f") FILE_TEXTS+=("$REPLY")
    toml_head "$REPLY"
    [[ -n $ROOT_VERSION ]] || ROOT_VERSION=$CFG_VERSION
    shown "$f" && dir=${REPLY%/*}
    for pattern in "${IMPORTS[@]}"; do
      [[ $pattern == /* ]] || pattern=$dir/$pattern
      if [[ $pattern == *[*?[]* ]]; then
        glob_root "$pattern"
        pending+=("${MATCHES[@]}")
      else
        pending+=("$ROOT$pattern")
      fi
    done
  done
  dir=${main%/*}
  for pattern in "$dir/conf.d/*.toml" "$dir/config.toml.d/*.toml" "$dir/config-v3.toml.d/*.toml"; do
    glob_root "$pattern"
    for f in "${MATCHES[@]}"; do
      [[ -n ${loaded[$f]-} ]] || { shown "$f" && UNIMPORTED+=("$REPLY"); }
    done
  done
}

# containerd_major BIN...: sets REPLY to containerd's major version (1 or 2) and
# MAJOR_WHY to how it is known (CTRD_VERSION to the whole version, 1.7.27, when
# `BIN --version` told it): from `BIN --version` when it answers, else from
# the config version (3 exists only in containerd 2; 1 and 2 are taken as 1.x).
containerd_major() {
  CTRD_VERSION=''
  if (($#)); then
    run_capture "$CMD_TIMEOUT" "$@" --version
    if ((CAP_RC == 0)) && [[ $CAP_OUT =~ [[:space:]]v?(([0-9]+)\.[0-9]+\.[0-9]+) ]]; then
      REPLY=${BASH_REMATCH[2]} MAJOR_WHY="containerd ${BASH_REMATCH[0]# }" CTRD_VERSION=${BASH_REMATCH[1]}
      return
    fi
  fi
  if ((ROOT_VERSION >= 3)); then
    REPLY=2 MAJOR_WHY="config version $ROOT_VERSION"
  else
    REPLY=1 MAJOR_WHY="config version $ROOT_VERSION, so taken for containerd 1.x"
  fi
}

# merge_1x: sets REPLY to FILES merged as containerd 1.x merges imports: shallow,
# per top-level section under `plugins` (mergeConfig: `to.Plugins[k] = v`). A file
# that names plugins."io.containerd.grpc.v1.cri" at all replaces the whole cri
# section of the files before it, runtimes and default_runtime_name included.
# Sets MERGE_NOTES to each such replacement.
merge_1x() {
  local i line key cur text=''
  local header_re="^[[:space:]]*\\[+[[:space:]]*plugins[[:space:]]*\\.[[:space:]]*(\"[^\"]*\"|'[^']*'|[A-Za-z0-9_.-]+)"
  local -A owner=()
  MERGE_NOTES=()
  for i in "${!FILE_TEXTS[@]}"; do
    while IFS='' read -r line; do
      [[ $line =~ $header_re ]] || continue
      key=${BASH_REMATCH[1]} && cur=${key//[\"\']/}
      [[ $key == [\"\']* ]] || { key=${key%%.*} && cur=$key; } # a bare key ends at the first dot
      if [[ -n ${owner[$cur]-} && ${owner[$cur]} != "$i" ]]; then
        shown "${FILES[i]}" && line=$REPLY
        shown "${FILES[${owner[$cur]}]}"
        MERGE_NOTES+=("$line replaces plugins.$key of $REPLY")
      fi
      owner[$cur]=$i
    done <<<"${FILE_TEXTS[i]}"
  done
  for i in "${!FILE_TEXTS[@]}"; do
    cur=''
    while IFS='' read -r line; do
      if [[ $line =~ ^[[:space:]]*\[ ]]; then
        cur=''
        if [[ $line =~ $header_re ]]; then
          key=${BASH_REMATCH[1]} && cur=${key//[\"\']/}
          [[ $key == [\"\']* ]] || cur=${cur%%.*}
        fi
      fi
      [[ -z $cur || ${owner[$cur]} == "$i" ]] && text+=$line$'\n'
    done <<<"${FILE_TEXTS[i]}"
  done
  REPLY=$text
}

# containerd_dump LABEL CMD...: reads the effective config from CMD (config dump);
# fails with DUMP_NOTE saying why when it cannot.
containerd_dump() {
  local label=$1
  shift
  run_capture "$CMD_TIMEOUT" "$@"
  if ((CAP_RC == 0)) && [[ -n ${CAP_OUT//[[:space:]]/} ]]; then
    RT_SOURCE=$label RT_SRC=config-dump RT_CERTAIN=true
    scan_toml "$CAP_OUT" default_runtime_name entry
    return 0
  fi
  brief "$CAP_ERR"
  timed_out && REPLY="timed out after ${CMD_TIMEOUT}s"
  DUMP_NOTE="$label failed (exit $CAP_RC: ${REPLY:-no output}), so read the files: "
  return 1
}

# containerd_from_files MAIN SRC NOTE BIN...: the verdict from containerd's files
# for config MAIN, merged by containerd's rules (see containerd_files, merge_1x;
# containerd 2.x merges plugin sections key by key, so later files simply win).
# SRC is "files" (k3s, RKE2: their generated config is the file containerd reads)
# or "file-fallback" (config dump was unavailable). Certain only when one file
# decides and no merge rule had to be guessed.
containerd_from_files() {
  local main=$1 src=$2 note=$3 list text
  shift 3
  RT_SRC=$src RT_CERTAIN=false
  containerd_files "$main"
  if ((${#FILES[@]} == 0)); then
    RT_SOURCE="${note}no $main"
  else
    printf -v list '%s, ' "${FILES[@]#"$ROOT"}"
    list=${list%, }
    if ((${#FILES[@]} == 1)); then
      text=${FILE_TEXTS[0]}
      [[ $src == files ]] && RT_CERTAIN=true
      RT_SOURCE="$note$list"
    else
      containerd_major "$@"
      if ((REPLY == 1)); then
        merge_1x && text=$REPLY
        RT_SOURCE="$note$list, merged as containerd 1.x does ($MAJOR_WHY: an imported file replaces whole plugin sections)"
      else
        printf -v text '%s\n' "${FILE_TEXTS[@]}"
        MERGE_NOTES=()
        RT_SOURCE="$note$list, merged as containerd 2.x does ($MAJOR_WHY)"
      fi
      ((${#MERGE_NOTES[@]})) && printf -v list '; %s' "${MERGE_NOTES[@]}" && RT_SOURCE+=$list
    fi
    scan_toml "$text" default_runtime_name entry
  fi
  if ((${#UNIMPORTED[@]})); then
    printf -v list '%s, ' "${UNIMPORTED[@]}"
    list=${list%, }
    if ((${#UNIMPORTED[@]} == 1)); then list+=" is"; else list+=" are"; fi
    RT_SOURCE+="; $list not imported"
  fi
  [[ $src == file-fallback ]] && RT_SOURCE+="; a verdict from the files is less certain than one from containerd config dump"
}

inspect_containerd() {
  # The effective config is what counts: a drop-in from nvidia-ctk (1.18+) never
  # shows up in config.toml itself, and config dump merges them all.
  local -a version_cmd=()
  DUMP_NOTE=''
  if command -v containerd >/dev/null 2>&1; then
    containerd_dump "containerd config dump" containerd config dump && return
    version_cmd=(containerd)
  fi
  containerd_from_files /etc/containerd/config.toml file-fallback "$DUMP_NOTE" "${version_cmd[@]}"
}

# inspect_rancher: k3s and RKE2 run their own containerd with the config they
# generate at each start under /var/lib/rancher/<name>/agent/etc/containerd (from
# config.toml.tmpl or config-v3.toml.tmpl beside it when present), with no
# containerd on PATH. k3s embeds containerd (no config dump); RKE2 ships the binary
# in /var/lib/rancher/rke2/bin, which can dump that config.
inspect_rancher() {
  local name=$RT_NAME main bin=/var/lib/rancher/rke2/bin/containerd tmpl
  main=/var/lib/rancher/$name/agent/etc/containerd/config.toml
  DUMP_NOTE=''
  if [[ $name == rke2 && -x $ROOT$bin ]]; then
    containerd_dump "$bin config dump" "$ROOT$bin" --config "$ROOT$main" config dump && return
  fi
  containerd_from_files "$main" files "$DUMP_NOTE"
  for tmpl in config-v3.toml.tmpl config.toml.tmpl; do
    if [[ -f $ROOT${main%/*}/$tmpl ]]; then
      RT_SOURCE+="; $name renders it from ${main%/*}/$tmpl at each start"
      break
    fi
  done
}

inspect_crio() {
  FILES=()
  if [[ -f $ROOT/etc/crio/crio.conf ]] || can_read "$ROOT/etc/crio/crio.conf"; then
    FILES+=("$ROOT/etc/crio/crio.conf")
  fi
  # CRI-O reads every file of crio.conf.d, in lexical order, later ones winning.
  glob_root "/etc/crio/crio.conf.d/*"
  FILES+=("${MATCHES[@]}")
  RT_SRC=files RT_CERTAIN=true
  if ((${#FILES[@]} == 0)); then
    RT_SOURCE="no /etc/crio/crio.conf nor /etc/crio/crio.conf.d files"
    return
  fi
  read_files "${FILES[@]}"
  scan_toml "$REPLY" default_runtime entry
  crio_unread_dropins
}

# crio_unread_dropins: nvidia-ctk 1.18.0-1.19.0 wrote CRI-O's drop-in to /etc/crio/conf.d
# (cmd/nvidia-ctk/runtime/configure/configure.go, defaultCrioDropInConfigFilePath; the
# toolkit installer's crio.go DefaultDropInConfig), a directory CRI-O never reads: it reads
# crio.conf and its --config-dir, /etc/crio/crio.conf.d (fixed in toolkit 1.19.1). Running
# the same command again writes the same file; sets RUN_FIX to what does help when such a
# drop-in holds what the files CRI-O reads lack.
crio_unread_dropins() {
  local read_nvidia=$RT_CONFIGURED read_default=$RT_DEFAULT_NAME read_is_default=$RT_IS_DEFAULT read_source=$RT_SOURCE list
  glob_root "/etc/crio/conf.d/*"
  ((${#MATCHES[@]})) || return 0
  read_files "${MATCHES[@]}" && list=$RT_SOURCE
  RT_CONFIGURED=false RT_DEFAULT_NAME='' RT_IS_DEFAULT=false
  scan_toml "$REPLY" default_runtime
  if [[ $RT_CONFIGURED == true && $read_nvidia != true ]] || [[ $RT_IS_DEFAULT == true && $read_is_default != true ]]; then
    RUN_FIX="$list is in /etc/crio/conf.d, a directory CRI-O never reads (CRI-O reads /etc/crio/crio.conf.d and /etc/crio/crio.conf; nvidia-ctk 1.18.0 to 1.19.0 wrote its drop-in there, fixed in 1.19.1): move it to /etc/crio/crio.conf.d/ (or upgrade the NVIDIA Container Toolkit to 1.19.1 or later and run nvidia-ctk runtime configure --runtime=crio again), then restart crio"
  fi
  RT_CONFIGURED=$read_nvidia RT_DEFAULT_NAME=$read_default RT_IS_DEFAULT=$read_is_default RT_SOURCE=$read_source
}

inspect_docker() {
  local f="$ROOT/etc/docker/daemon.json" doc
  RT_SOURCE=/etc/docker/daemon.json RT_SRC=files RT_CERTAIN=true
  if ! slurp "$f"; then
    RT_SOURCE="/etc/docker/daemon.json (missing)"
    return
  fi
  doc=$REPLY
  if [[ -z ${doc//[[:space:]]/} ]]; then
    RT_ERROR="docker: /etc/docker/daemon.json is empty, so dockerd will not start with it"
    return
  fi
  if ! json_scan_daemon "$doc"; then
    RT_ERROR="docker: /etc/docker/daemon.json is not valid JSON ($JP_ERR), so dockerd will not start with it"
    return
  fi
  RT_CONFIGURED=$JP_HAS_NVIDIA
  entry_from_json /runtimes/nvidia path runtimeType
  RT_DEFAULT_NAME=$JP_DEFAULT
  [[ $JP_DEFAULT == nvidia ]] && RT_IS_DEFAULT=true
}

# endpoint_runtime ENDPOINT: sets REPLY to the runtime that serves CRI at
# ENDPOINT ('' when unknown), and RANCHER_WHY to what told k3s from RKE2.
endpoint_runtime() {
  RANCHER_WHY=''
  case ${1#unix://} in
    */k3s/containerd/containerd.sock)
      # k3s and RKE2 both serve it; their data directories tell them apart.
      if [[ -d $ROOT/var/lib/rancher/rke2 ]]; then
        REPLY=rke2 RANCHER_WHY=/var/lib/rancher/rke2
      else
        REPLY=k3s
        [[ -d $ROOT/var/lib/rancher/k3s ]] && RANCHER_WHY=/var/lib/rancher/k3s
      fi
      ;;
    *cri-dockerd.sock | *dockershim.sock) REPLY=docker ;;
    *crio.sock) REPLY=cri-o ;;
    *containerd.sock) REPLY=containerd ;;
    *) REPLY='' ;;
  esac
}

# detect_runtime: for --runtime auto. What kubelet is told to use decides; then
# which CRI socket is listening; then, with neither (kubelet or the runtime down),
# what is installed. "containerd on PATH" alone would be wrong on docker machines:
# docker-ce always installs containerd.
detect_runtime() {
  local path name bin dir
  DETECT_NOTE=''
  if kubelet_endpoint; then
    endpoint_runtime "$KL_ENDPOINT"
    if [[ -n $REPLY ]]; then
      DETECTED=$REPLY DETECT_WHY="$KL_ENDPOINT_WHERE${RANCHER_WHY:+, $RANCHER_WHY}"
      return 0
    fi
    DETECT_NOTE="kubelet's endpoint $KL_ENDPOINT names no runtime we know; "
  elif ((${#KL_CANNOT_READ[@]})); then
    DETECT_NOTE="kubelet's flags could not all be read; "
  fi
  for path in "${CRI_SOCKETS[@]}"; do
    [[ -S $ROOT$path ]] || continue
    endpoint_runtime "$path"
    DETECTED=$REPLY DETECT_WHY="${DETECT_NOTE}CRI socket $path${RANCHER_WHY:+, $RANCHER_WHY}"
    return 0
  done
  for name in rke2 k3s containerd cri-o docker; do
    case $name in
      rke2) bin='' dir=/var/lib/rancher/rke2/agent/etc/containerd ;;
      k3s) bin=k3s dir=/var/lib/rancher/k3s/agent/etc/containerd ;;
      containerd) bin=containerd dir=/etc/containerd ;;
      cri-o) bin=crio dir=/etc/crio ;;
      docker) bin=dockerd dir=/etc/docker ;;
    esac
    if [[ -n $bin ]] && command -v "$bin" >/dev/null 2>&1; then
      DETECTED=$name DETECT_WHY="${DETECT_NOTE}no CRI socket found; $bin on PATH"
      return 0
    fi
    if [[ -d $ROOT$dir ]]; then
      DETECTED=$name DETECT_WHY="${DETECT_NOTE}no CRI socket found; $dir exists"
      return 0
    fi
  done
  return 1
}

# fix_missing NAME: sets REPLY to how to give runtime NAME the nvidia runtime.
fix_missing() {
  case $1 in
    k3s | rke2)
      local svc=k3s
      [[ $1 == rke2 ]] && svc=rke2-server
      REPLY="$1 adds it itself when it finds nvidia-container-runtime at start: install the NVIDIA Container Toolkit, then restart $svc (or $1-agent)"
      ;;
    *) REPLY="run nvidia-ctk runtime configure --runtime=${CTK_RUNTIME[$1]}, then restart ${RUNTIME_SERVICE[$1]}" ;;
  esac
}

# fix_default NAME: sets REPLY to how to make nvidia the default runtime of NAME.
fix_default() {
  case $1 in
    k3s | rke2) REPLY="start $1 with --default-runtime=nvidia (default-runtime: nvidia in /etc/rancher/$1/config.yaml)" ;;
    *) REPLY="nvidia-ctk runtime configure --runtime=${CTK_RUNTIME[$1]} --set-as-default, then restart ${RUNTIME_SERVICE[$1]}" ;;
  esac
}

# inspect_runtime: reads the runtime (chosen by --runtime, or found by auto) and its nvidia entry into RT_*
# and ENT_*, adding no check: main reads it before the checks, since the entry says which container
# toolkit the runtime runs (find_toolkit, 40-check-toolkit.sh), and check_runtime judges it in its turn.
# RT_NAME stays '' when auto found no runtime.
inspect_runtime() {
  local name=$RUNTIME_ARG
  RT_UNREADABLE=false RT_HOW='' RT_CANNOT_READ=()
  entry_reset
  if [[ $name == auto ]]; then
    detect_runtime || return 0
    name=$DETECTED RT_HOW="auto chose $DETECTED ($DETECT_WHY); "
  fi
  RT_NAME=$name RT_CONFIGURED=false RT_IS_DEFAULT=false RT_DEFAULT_NAME='' RT_SOURCE='' RT_ERROR='' RT_ENABLE_CDI=''
  RUN_FIX='' RUN_CDI_FIX='' RUN_WARN=''
  CANNOT_READ=()
  case $name in
    containerd) inspect_containerd ;;
    k3s | rke2) inspect_rancher ;;
    cri-o) inspect_crio ;;
    docker) inspect_docker ;;
  esac
  running_runtime "$name"
  RT_CANNOT_READ=("${CANNOT_READ[@]}")
  # A file we could not read may hold (or undo) the nvidia runtime: no verdict.
  ((${#CANNOT_READ[@]})) && RT_CERTAIN=false RT_UNREADABLE=true
  return 0
}

# check_runtime: the verdict on what inspect_runtime read.
check_runtime() {
  local name=$RT_NAME how=$RT_HOW
  if [[ -z $name ]]; then
    add_check runtime false "auto: no container runtime found (kubelet names no CRI endpoint, no CRI socket listens; no containerd, k3s, crio or dockerd on PATH; no /etc/containerd, /var/lib/rancher/{k3s,rke2}, /etc/crio or /etc/docker)"
    return
  fi
  CANNOT_READ=("${RT_CANNOT_READ[@]}")
  if ((${#CANNOT_READ[@]})); then
    cannot_read_text
    add_check runtime false "$how$name: $REPLY, so whether $name has the nvidia runtime is unknown"
  elif [[ -n $RT_ERROR ]]; then
    add_check runtime false "$how$RT_ERROR"
  elif [[ $RT_CONFIGURED != true && $TOOLKIT_VIA == nri ]]; then
    # The toolkit's NRI plugin and the runtime's own CDI support give containers their GPUs (73-check-nri.sh).
    add_check runtime true "$how$name has no nvidia runtime (read $RT_SOURCE), as the toolkit's NRI mode leaves it: CDI devices reach containers through the runtime's CDI support and the toolkit's NRI plugin (the nri and cdi checks judge them)"
  elif [[ $RT_CONFIGURED != true ]]; then
    fix_missing "$name"
    nri_recognised && REPLY="this machine looks set up by the GPU Operator's toolkit in NRI mode (cdi.nriPluginEnabled: $NRI_SOCKET, the toolkit in $INSTALLER_TOOLKIT_ROOT, $MANAGEMENT_CDI_SPEC), which configures no nvidia runtime: give its group containerToolkit: nri (with gpuAccess: cdi). Otherwise $REPLY"
    add_check runtime false "$how$name has no nvidia runtime (read $RT_SOURCE): ${RUN_FIX:-$REPLY}"
  elif [[ $RT_IS_DEFAULT == true ]]; then
    RT_DEFAULT=true
    runtime_passes "$how$name: nvidia runtime configured and the default (read $RT_SOURCE)"
  elif $REQUIRE_DEFAULT; then
    # Asked for when the stack gives pods no RuntimeClass: under runc the device
    # plugin cannot load NVML and the verification pods see no GPU.
    RT_CLASS=true
    fix_default "$name"
    add_check runtime false "$how$name: nvidia runtime configured, but nvidia is not the default runtime (the default is ${RT_DEFAULT_NAME:-runc}) (read $RT_SOURCE): pods that name no RuntimeClass, the device plugin's included, would run without the GPUs. Make nvidia the default (${RUN_FIX:-$REPLY}), or give GPU pods a RuntimeClass with handler nvidia"
  else
    RT_CLASS=true
    runtime_passes "$how$name: nvidia runtime configured but the default is ${RT_DEFAULT_NAME:-runc} (read $RT_SOURCE): GPU pods need a RuntimeClass with handler nvidia${RUN_FIX:+; $RUN_FIX}"
  fi
}

# runtime_passes DETAIL: passes the runtime check, as a warning when the running daemon has
# what its files do not (RUN_WARN, 61-running-runtime.sh).
runtime_passes() {
  if [[ -n ${RUN_WARN-} ]]; then
    add_check runtime true "warning: $1; $RUN_WARN"
  else
    add_check runtime true "$1"
  fi
}
