# ------------------------------------------------------ check: container toolkit
#
# The toolkit judged is the one the container runtime runs, found once (find_toolkit): the nvidia
# runtime's entry (containerd's BinaryName, CRI-O's runtime_path, docker's runtimes.nvidia.path, as
# 60-check-runtime.sh and 61-running-runtime.sh read it) names nvidia-container-runtime, and the
# toolkit is the nvidia-ctk beside it, with the config.toml that runtime reads. The packages install
# both in /usr/bin and read /etc/nvidia-container-runtime/config.toml; the GPU Operator's toolkit
# container installs them under its toolkit root, /usr/local/nvidia/toolkit (toolkit.installDir
# /usr/local/nvidia in its values.yaml, plus "toolkit": nvidia-container-toolkit
# cmd/nvidia-ctk-installer/main.go, toolkitRoot), points the runtime's entry there
# (container/operator/operator.go, GetRuntimes WithRoot), and writes the config beside them (below).
# A machine with both judges the one in use; without an entry to follow, the one on PATH.
#
# Its version (nvidia-ctk --version: "NVIDIA Container Toolkit CLI version 1.19.1", then its commit)
# is judged against NVIDIA's toolkit advisories, each given as --toolkit-advisory CVE=FIXED,...
# (gpu_nodes/advisories.py: the first fixed release of each release line): a toolkit open to one
# fails, naming every CVE and the release that fixes it. One the group accepts as a risk
# (--accepted-toolkit-advisory, preflight.acceptToolkitAdvisories) passes, named as accepted.
# With --min-toolkit (preflight.minToolkit) it must also be at least that.

# Where the packages' toolkit reads its settings (internal/config: config.toml under /etc/nvidia-container-runtime).
readonly PACKAGE_TOOLKIT_CONFIG=/etc/nvidia-container-runtime/config.toml
# Where the GPU Operator's toolkit container writes the config of the toolkit it installs, under its toolkit root
# (cmd/nvidia-ctk-installer/toolkit/toolkit.go, installToolkitConfig); the wrappers it installs in place of
# nvidia-container-runtime and the hook hand them that file as NVIDIA_CTK_CONFIG_FILE_PATH
# (toolkit/installer/executables.go, ConfigFilePath), so the runtime reads it, not /etc's.
readonly INSTALLER_TOOLKIT_CONFIG=.config/nvidia-container-runtime/config.toml
# The config the toolkit judged reads (set by find_toolkit; the packages' until then).
TOOLKIT_CONFIG=$PACKAGE_TOOLKIT_CONFIG
# A TOML table header, "[name]": its name, trimmed.
readonly TOML_TABLE_RE='^[[:space:]]*\[[[:space:]]*([^]]*[^][:space:]])[[:space:]]*\]'
# A bare key and its value, up to any comment.
readonly TOML_KEY_RE='^[[:space:]]*([A-Za-z0-9_-]+)[[:space:]]*=[[:space:]]*([^#]*)'
declare -A TK_CONFIG=()

# find_toolkit: once per run, the toolkit the runtime runs: TK_RUNTIME (its nvidia-container-runtime, as
# shown; '' when not known), TK_CTK (the nvidia-ctk beside it, or on PATH; '' when none), TK_CTK_RUN (what
# runs it), TOOLKIT_CONFIG (the config.toml it reads) and TK_HOW (how it was found, for the details).
# Needs inspect_runtime (60-check-runtime.sh) first.
find_toolkit() {
  [[ -z ${TK_FOUND-} ]] || return 0
  TK_FOUND=true TK_RUNTIME='' TK_CTK='' TK_CTK_RUN='' TOOLKIT_CONFIG=$PACKAGE_TOOLKIT_CONFIG TK_HOW=''
  if entry_runtime_file; then
    TK_RUNTIME=$REPLY
    local dir=${REPLY%/*}
    if [[ -f $ROOT$dir/nvidia-ctk && -x $ROOT$dir/nvidia-ctk ]]; then
      TK_CTK=$dir/nvidia-ctk TK_CTK_RUN=$ROOT$dir/nvidia-ctk
    fi
    [[ -e $ROOT$dir/$INSTALLER_TOOLKIT_CONFIG ]] && TOOLKIT_CONFIG=$dir/$INSTALLER_TOOLKIT_CONFIG
    TK_HOW="the toolkit $RT_NAME's nvidia runtime runs, $ENT_KEY $ENT_BINARY"
    return 0
  fi
  if [[ $TOOLKIT_VIA == nri && -f $ROOT$INSTALLER_TOOLKIT_ROOT/nvidia-ctk && -x $ROOT$INSTALLER_TOOLKIT_ROOT/nvidia-ctk ]]; then
    # In NRI mode no entry names the toolkit: it is the one the GPU Operator's installer put under its root
    # (73-check-nri.sh), with its config beside it.
    TK_CTK=$INSTALLER_TOOLKIT_ROOT/nvidia-ctk TK_CTK_RUN=$ROOT$INSTALLER_TOOLKIT_ROOT/nvidia-ctk
    [[ -x $ROOT$INSTALLER_TOOLKIT_ROOT/nvidia-container-runtime ]] && TK_RUNTIME=$INSTALLER_TOOLKIT_ROOT/nvidia-container-runtime
    [[ -e $ROOT$INSTALLER_TOOLKIT_ROOT/$INSTALLER_TOOLKIT_CONFIG ]] && TOOLKIT_CONFIG=$INSTALLER_TOOLKIT_ROOT/$INSTALLER_TOOLKIT_CONFIG
    TK_HOW="the toolkit the GPU Operator's installer put under $INSTALLER_TOOLKIT_ROOT for its NRI plugin (containerToolkit: nri; no nvidia runtime entry names one)"
    return 0
  fi
  find_cmd nvidia-ctk && TK_CTK=$REPLY TK_CTK_RUN=$REPLY
  find_cmd nvidia-container-runtime && TK_RUNTIME=$REPLY
  TK_HOW="on PATH: ${TK_NO_ENTRY:-no nvidia runtime entry names a toolkit}"
}

# entry_runtime_file: sets REPLY to the nvidia-container-runtime the runtime's nvidia entry runs, as shown,
# and ENT_KEY to the entry's key for it; fails, with TK_NO_ENTRY saying why, when there is no such file.
entry_runtime_file() {
  local value=$ENT_BINARY dir IFS=:
  TK_NO_ENTRY='' ENT_KEY=BinaryName
  [[ $RT_NAME == docker ]] && ENT_KEY=path
  [[ $RT_NAME == cri-o ]] && ENT_KEY=runtime_path
  if [[ -z $RT_NAME || $RT_CONFIGURED != true || -n $RT_ERROR ]] || $RT_UNREADABLE || $ENT_INLINE; then
    TK_NO_ENTRY="the runtime's nvidia entry was not read (the runtime check says why)"
    return 1
  fi
  # CRI-O runs a handler without runtime_path as its own name on its PATH (66-check-runtime-entry.sh).
  [[ $RT_NAME == cri-o && -z $value ]] && value=nvidia ENT_KEY="runtime_path unset, so PATH's"
  if [[ -z $value ]]; then
    TK_NO_ENTRY="the nvidia runtime's entry names no binary"
    return 1
  fi
  if [[ $value == /* ]]; then
    REPLY=$value
    [[ -f $ROOT$value && -x $ROOT$value ]] && return 0
  elif [[ $value != */* ]]; then
    for dir in $SERVICE_PATH; do
      REPLY=$dir/$value
      [[ -f $ROOT$REPLY && -x $ROOT$REPLY ]] && return 0
    done
  fi
  TK_NO_ENTRY="the nvidia runtime's entry names $value, not an executable file here (the runtime-entry check says more)"
  return 1
}

check_toolkit() {
  find_toolkit
  if [[ -z $TK_CTK && -z $TK_RUNTIME ]]; then
    add_check container-toolkit false "neither nvidia-ctk nor nvidia-container-runtime is on PATH, and no nvidia runtime entry names one ($TK_NO_ENTRY): install the NVIDIA Container Toolkit"
    return
  fi
  if [[ -z $TK_CTK ]]; then
    toolkit_verdict "nvidia-container-runtime at $TK_RUNTIME ($TK_HOW; no nvidia-ctk beside it, version unknown)" ''
    return
  fi
  toolkit_version
  if ((TK_RC != 0)); then
    toolkit_verdict "warning: $TK_CTK ($TK_HOW) is installed but nvidia-ctk --version failed (exit $TK_RC)" ''
    return
  fi
  toolkit_verdict "$TK_CTK ($TK_HOW): ${TK_LINE:-no version printed}" "$TK_VERSION"
}

# toolkit_version: sets TK_VERSION ("1.17.8"), TK_LINE (what nvidia-ctk printed first) and
# TK_RC, or TK_WHY when the version is unknown. Asks the found toolkit's `nvidia-ctk --version`
# once per run: the CUDA, the toolkit and the DRA checks all need it.
toolkit_version() {
  if [[ -n ${TK_ASKED-} ]]; then
    [[ -n $TK_VERSION ]]
    return
  fi
  TK_ASKED=true TK_VERSION='' TK_LINE='' TK_RC='' TK_WHY=''
  find_toolkit
  if [[ -z $TK_CTK ]]; then
    TK_WHY="no nvidia-ctk ($TK_HOW)"
    return 1
  fi
  run_capture "$CMD_TIMEOUT" "$TK_CTK_RUN" --version
  TK_RC=$CAP_RC
  if ((CAP_RC != 0)); then
    TK_WHY="$TK_CTK --version failed (exit $CAP_RC)"
    return 1
  fi
  [[ $CAP_OUT =~ version\ ([0-9]+(\.[0-9]+)+) ]] && TK_VERSION=${BASH_REMATCH[1]}
  brief "$CAP_OUT"
  TK_LINE=$REPLY
  [[ -n $TK_VERSION ]] || TK_WHY="$TK_CTK --version printed no version"
  [[ -n $TK_VERSION ]]
}

# toolkit_config: reads the found toolkit's config.toml (TOOLKIT_CONFIG) for the CUDA and the isolation checks into
# TK_CONFIG: "table/key" -> the value's text before any comment, trimmed, quotes kept, with ""
# as the top level's table ("/disable-require"); TK_CONFIG_FOUND false when there is no file
# (the toolkit's defaults then). Status 1 when the file may not be read (noted in CANNOT_READ).
# Only bare keys and one-line values: what the toolkit's own config.toml has.
toolkit_config() {
  local line key table='' file
  find_toolkit
  file=$ROOT$TOOLKIT_CONFIG
  TK_CONFIG=() TK_CONFIG_FOUND=false
  if ! slurp "$file"; then
    blocked_by "$file" && return 1 # there, but not to be read by this user
    return 0
  fi
  TK_CONFIG_FOUND=true
  while IFS='' read -r line; do
    if [[ $line =~ $TOML_TABLE_RE ]]; then
      table=${BASH_REMATCH[1]}
    elif [[ $line =~ ^[[:space:]]*\[ ]]; then
      table='[' # no table header: what follows is in no table read here
    elif [[ $line =~ $TOML_KEY_RE ]]; then
      key=${BASH_REMATCH[1]}
      trim "${BASH_REMATCH[2]}"
      TK_CONFIG["$table/$key"]=$REPLY
    fi
  done <<<"$REPLY"
}

# advisory_open VERSION FIXED [PARTS]: true when VERSION is open to an advisory fixed in FIXED
# ("1.16.3,1.17.4"): on a listed release line, below that line's fix; on any other line, below the
# newest fix (an older line, or one between listed lines, never got it). A release line is the
# first PARTS parts of a version: 2 for the toolkit (1.19), 1 for a driver's branch (580). As
# gpu_nodes/advisories.py is_open.
advisory_open() {
  local version=$1 parts=${3:-2} fix
  local -a fixes
  IFS=, read -r -a fixes <<<"$2"
  for fix in "${fixes[@]}"; do
    if [[ $(release_line "$fix" "$parts") == "$(release_line "$version" "$parts")" ]]; then
      ! version_ge "$version" "$fix"
      return
    fi
  done
  ! version_ge "$version" "${fixes[-1]}"
}

# release_line VERSION [PARTS]: prints its first PARTS (2) parts ("1.19.1" -> "1.19"; "580.126.09" 1 -> "580").
release_line() {
  local -a parts
  IFS=. read -r -a parts <<<"$1"
  if ((${2:-2} == 1)); then
    printf '%s' "${parts[0]}"
  else
    printf '%s.%s' "${parts[0]}" "${parts[1]:-0}"
  fi
}

# toolkit_advisories VERSION: the advisories VERSION is open to: refused ones in TK_OPEN ("CVE (fixed
# in X)") and TK_OPEN_IDS, accepted ones in TK_OPEN_ACCEPTED; with VERSION unknown, every one is open.
toolkit_advisories() {
  local version=$1 row cve fixed list
  TK_OPEN=() TK_OPEN_IDS=() TK_OPEN_ACCEPTED=()
  for list in TK_ADVISORIES TK_ACCEPTED; do
    local -n rows=$list
    for row in "${rows[@]}"; do
      cve=${row%%=*} fixed=${row#*=}
      [[ -z $version ]] || advisory_open "$version" "$fixed" || continue
      if [[ $list == TK_ADVISORIES ]]; then
        TK_OPEN+=("$cve (fixed in ${fixed//,/ \/ })") TK_OPEN_IDS+=("$cve")
      else
        TK_OPEN_ACCEPTED+=("$cve")
      fi
    done
    unset -n rows
  done
}

# toolkit_verdict DETAIL VERSION: the check, against the advisories and --min-toolkit.
toolkit_verdict() {
  local detail=$1 version=$2 open accepted=''
  toolkit_advisories "$version"
  if ((${#TK_OPEN_ACCEPTED[@]})); then
    printf -v accepted ', %s' "${TK_OPEN_ACCEPTED[@]}"
    accepted="; open to ${accepted#, }, accepted as a risk by preflight.acceptToolkitAdvisories"
  fi
  if ((${#TK_OPEN[@]})); then
    printf -v open '; %s' "${TK_OPEN[@]}"
    open=${open#; }
    if [[ -z $version ]]; then
      add_check container-toolkit false "$detail; its version is unknown, so NVIDIA's advisories cannot clear it: install nvidia-ctk $(toolkit_floor) or later (advisories: $open)"
    else
      add_check container-toolkit false "$detail: open to NVIDIA's advisories $open$accepted; upgrade the NVIDIA Container Toolkit to $(toolkit_floor) or later"
    fi
    return
  fi
  minimum_check container-toolkit "$version" "$MIN_TOOLKIT" "$detail$accepted" \
    "$detail; need a toolkit >= $MIN_TOOLKIT and its version is unknown: install nvidia-ctk $MIN_TOOLKIT or later" \
    "$detail (>= $MIN_TOOLKIT)$accepted" "$detail < $MIN_TOOLKIT; upgrade the NVIDIA Container Toolkit"
}

# toolkit_floor: prints the release to upgrade to: the newest fix of each advisory refused here,
# or --min-toolkit when that is higher.
toolkit_floor() {
  local row fix floor=${MIN_TOOLKIT:-0}
  local -a fixes
  for row in "${TK_ADVISORIES[@]}"; do
    IFS=, read -r -a fixes <<<"${row#*=}"
    fix=${fixes[-1]}
    version_ge "$floor" "$fix" || floor=$fix
  done
  printf '%s' "$floor"
}
