# ------------------------------------------------------ check: container toolkit
#
# With --min-toolkit (preflight.minToolkit, 1.17.8 by default) the version nvidia-ctk reports
# ("NVIDIA Container Toolkit CLI version 1.17.8", then its commit) must be at least that:
# releases before 1.17.8 are open to CVE-2025-23266, where a container image sets LD_PRELOAD
# for the toolkit's createContainer hook and runs code as root on the host.

readonly TOOLKIT_CVE_FIXED=1.17.8
# Where the toolkit reads its settings (internal/config: config.toml under /etc/nvidia-container-runtime).
readonly TOOLKIT_CONFIG=/etc/nvidia-container-runtime/config.toml
# A TOML table header, "[name]": its name, trimmed.
readonly TOML_TABLE_RE='^[[:space:]]*\[[[:space:]]*([^]]*[^][:space:]])[[:space:]]*\]'
# A bare key and its value, up to any comment.
readonly TOML_KEY_RE='^[[:space:]]*([A-Za-z0-9_-]+)[[:space:]]*=[[:space:]]*([^#]*)'
declare -A TK_CONFIG=()

check_toolkit() {
  local ctk='' runtime=''
  find_cmd nvidia-ctk && ctk=$REPLY
  find_cmd nvidia-container-runtime && runtime=$REPLY
  if [[ -z $ctk && -z $runtime ]]; then
    add_check container-toolkit false "neither nvidia-ctk nor nvidia-container-runtime is on PATH: install the NVIDIA Container Toolkit"
    return
  fi
  if [[ -z $ctk ]]; then
    toolkit_verdict "nvidia-container-runtime at $runtime (no nvidia-ctk, version unknown)" ''
    return
  fi
  toolkit_version
  if ((TK_RC != 0)); then
    toolkit_verdict "warning: $ctk is installed but nvidia-ctk --version failed (exit $TK_RC)" ''
    return
  fi
  toolkit_verdict "nvidia-ctk: ${TK_LINE:-no version printed}" "$TK_VERSION"
}

# toolkit_version: sets TK_VERSION ("1.17.8"), TK_LINE (what nvidia-ctk printed first) and
# TK_RC, or TK_WHY when the version is unknown. Asks `nvidia-ctk --version` once per run:
# the CUDA and the toolkit checks both need it.
toolkit_version() {
  if [[ -n ${TK_ASKED-} ]]; then
    [[ -n $TK_VERSION ]]
    return
  fi
  TK_ASKED=true TK_VERSION='' TK_LINE='' TK_RC='' TK_WHY=''
  if ! command -v nvidia-ctk >/dev/null 2>&1; then
    TK_WHY="nvidia-ctk is not on PATH"
    return 1
  fi
  run_capture "$CMD_TIMEOUT" nvidia-ctk --version
  TK_RC=$CAP_RC
  if ((CAP_RC != 0)); then
    TK_WHY="nvidia-ctk --version failed (exit $CAP_RC)"
    return 1
  fi
  [[ $CAP_OUT =~ version\ ([0-9]+(\.[0-9]+)+) ]] && TK_VERSION=${BASH_REMATCH[1]}
  brief "$CAP_OUT"
  TK_LINE=$REPLY
  [[ -n $TK_VERSION ]] || TK_WHY="nvidia-ctk --version printed no version"
  [[ -n $TK_VERSION ]]
}

# toolkit_config: reads config.toml (TOOLKIT_CONFIG) for the CUDA and the isolation checks into
# TK_CONFIG: "table/key" -> the value's text before any comment, trimmed, quotes kept, with ""
# as the top level's table ("/disable-require"); TK_CONFIG_FOUND false when there is no file
# (the toolkit's defaults then). Status 1 when the file may not be read (noted in CANNOT_READ).
# Only bare keys and one-line values: what the toolkit's own config.toml has.
toolkit_config() {
  local line key table='' file=$ROOT$TOOLKIT_CONFIG
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

# toolkit_verdict DETAIL VERSION: the check, against --min-toolkit when one is asked for.
toolkit_verdict() {
  local detail=$1 version=$2 why=''
  if [[ -n $version ]] && ! version_ge "$version" "$TOOLKIT_CVE_FIXED"; then
    why=": releases before $TOOLKIT_CVE_FIXED are open to CVE-2025-23266 (a container escape to root on the host)"
  fi
  minimum_check container-toolkit "$version" "$MIN_TOOLKIT" "$detail" \
    "$detail; need a toolkit >= $MIN_TOOLKIT and its version is unknown: install nvidia-ctk $MIN_TOOLKIT or later" \
    "$detail (>= $MIN_TOOLKIT)" "$detail < $MIN_TOOLKIT$why; upgrade the NVIDIA Container Toolkit"
}
