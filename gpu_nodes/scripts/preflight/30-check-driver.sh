# ---------------------------------------------------------------- check: driver

readonly QUERY_FIELDS=index,name,uuid,driver_version,memory.total

# parse_gpu_line LINE: splits one line of the nvidia-smi query into G_INDEX,
# G_NAME, G_UUID, G_DRIVER and G_MEM. The name is everything between the first
# comma and the last three fields, so names with spaces (or commas) survive.
parse_gpu_line() {
  local rest
  [[ $1 == *,*,*,*,* ]] || return 1
  trim "${1%%,*}" && G_INDEX=$REPLY
  rest=${1#*,}
  trim "${rest##*,}" && G_MEM=$REPLY && rest=${rest%,*}
  trim "${rest##*,}" && G_DRIVER=$REPLY && rest=${rest%,*}
  trim "${rest##*,}" && G_UUID=$REPLY && rest=${rest%,*}
  trim "$rest" && G_NAME=$REPLY
  # "81920 MiB" when a version ignores nounits.
  G_MEM=${G_MEM%[Mm][Ii][Bb]}
  trim "$G_MEM" && G_MEM=$REPLY
  [[ $G_INDEX =~ ^[0-9]{1,6}$ && $G_MEM =~ ^[0-9]{1,12}$ ]] || return 1
  [[ -n $G_NAME && -n $G_UUID && -n $G_DRIVER ]]
}

check_driver() {
  local line driver=''
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    add_check driver false "nvidia-smi not found on PATH: the NVIDIA driver utilities are not installed"
    return
  fi
  run_capture "$SMI_TIMEOUT" nvidia-smi --query-gpu="$QUERY_FIELDS" --format=csv,noheader,nounits
  if timed_out; then
    add_check driver false "nvidia-smi did not answer within ${SMI_TIMEOUT}s: the driver is wedged or a GPU fell off the bus"
    return
  fi
  if ((CAP_RC != 0)) || [[ $CAP_OUT =~ $SMI_ERROR_RE ]]; then
    brief "$CAP_OUT"$'\n'"$CAP_ERR"
    add_check driver false "nvidia-smi failed (exit $CAP_RC): ${REPLY:-no output}"
    return
  fi
  while IFS='' read -r line; do
    trim "$line"
    line=$REPLY
    [[ -n $line ]] || continue
    if ! parse_gpu_line "$line"; then
      ((${#line} > 300)) && line="${line:0:300}..."
      add_check driver false "cannot read this line of nvidia-smi --query-gpu output: $line"
      return
    fi
    add_gpu "$((10#$G_INDEX))" "$G_NAME" "$G_UUID" "$((10#$G_MEM))"
    driver=${driver:-$G_DRIVER}
  done <<<"$CAP_OUT"
  if ((GPU_COUNT == 0)); then
    add_check driver false "nvidia-smi listed no GPUs"
    return
  fi
  DRIVER_VERSION=$driver SMI_OK=true
  add_check driver true "NVIDIA driver $driver, $GPU_COUNT GPU(s): $GPU_NAMES"
}

# check_driver_advisories: the driver against NVIDIA's display-driver bulletins (--driver-advisory
# BULLETIN:CVES=FIXED, gpu_nodes/advisories.py: the first fixed driver of each branch) and the
# branches NVIDIA still patches (--patched-driver-branches, from its lifecycle table). A driver open
# to one, or on a branch past its end of life, is a warning; with --refuse-driver-advisories
# (preflight.driverAdvisories: refuse) it fails.
check_driver_advisories() {
  local row id cves branch newest=0 patched_text=''
  local -a problems=() patched=()
  if ((${#DRV_ADVISORIES[@]} == 0)) && ! $DRV_PATCHED_GIVEN; then
    add_check driver-advisories true "not requested"
    return
  fi
  if [[ -z $DRIVER_VERSION ]]; then
    driver_advisories_verdict "driver version unknown (see the driver check): cannot tell which of NVIDIA's bulletins it is open to"
    return
  fi
  branch=$(release_line "$DRIVER_VERSION" 1)
  DRV_BRANCH=R$branch
  if $DRV_PATCHED_GIVEN; then
    IFS=, read -r -a patched <<<"$DRV_PATCHED"
    DRV_BRANCH_PATCHED=false
    for row in "${patched[@]}"; do
      ((10#$row == 10#$branch)) && DRV_BRANCH_PATCHED=true
      ((10#$row > newest)) && newest=$((10#$row))
    done
    # A branch newer than every one the lifecycle table lists is newer than the table, not past its end.
    ((10#$branch > newest)) && DRV_BRANCH_PATCHED=true
    if $DRV_BRANCH_PATCHED; then
      patched_text=", a branch NVIDIA patches"
    else
      problems+=("branch R$branch is past its end of life, NVIDIA no longer patches it (patched: R${DRV_PATCHED//,/, R})")
    fi
  fi
  for row in "${DRV_ADVISORIES[@]}"; do
    id=${row%%:*} cves=${row#*:}
    cves=${cves%%=*}
    advisory_open "$DRIVER_VERSION" "${row#*=}" 1 || continue
    DRV_OPEN_IDS+=("$id")
    [[ $cves == *,+* ]] && cves="${cves%,+*} and ${cves##*,+} more"
    driver_fix "$branch" "${row#*=}"
    problems+=("bulletin $id (${cves//,/, }): $REPLY")
  done
  if ((${#problems[@]} == 0)); then
    add_check driver-advisories true "driver $DRIVER_VERSION on branch R$branch$patched_text: open to none of NVIDIA's ${#DRV_ADVISORIES[@]} bulletin(s)"
    return
  fi
  printf -v row '%s; ' "${problems[@]}"
  driver_advisories_verdict "driver $DRIVER_VERSION: ${row%; }"
}

# driver_fix BRANCH FIXED: sets REPLY to what fixes a bulletin for a driver of BRANCH: its branch's
# release, or (a branch the bulletin never fixed) a move to one of the releases it lists.
driver_fix() {
  local fix
  local -a fixes
  IFS=, read -r -a fixes <<<"$2"
  for fix in "${fixes[@]}"; do
    if [[ $(release_line "$fix" 1) == "$1" ]]; then
      REPLY="fixed in $fix on this branch"
      return
    fi
  done
  REPLY="never fixed on R$1, fixed in ${2//,/ \/ }"
}

# driver_advisories_verdict DETAIL: a warning, or with --refuse-driver-advisories a failure.
driver_advisories_verdict() {
  if $DRV_REFUSE; then
    add_check driver-advisories false "$1: upgrade the driver (preflight.driverAdvisories is refuse)"
  else
    add_check driver-advisories true "warning: $1: upgrade the driver; set preflight.driverAdvisories to refuse to keep such machines out"
  fi
}

check_gpu_count() {
  local ok=false why=''
  ((GPU_COUNT == EXPECT_GPUS)) && ok=true
  $SMI_OK || why=" (nvidia-smi gave no usable GPU list, see the driver check)"
  add_check gpu-count "$ok" "found $GPU_COUNT GPU(s), expected $EXPECT_GPUS$why"
}

# With --gpu-model (the group's gpuModel) every GPU must be that model, as nvidia-smi
# names it: a machine of another model in the group would be labelled and sold as it.
check_gpu_model() {
  if [[ -z $GPU_MODEL ]]; then
    add_check gpu-model true "not requested"
  elif ! $SMI_OK; then
    add_check gpu-model false "GPU model unknown (see the driver check), need $GPU_MODEL"
  elif [[ $GPU_NAMES == "$GPU_MODEL" ]]; then
    add_check gpu-model true "all $GPU_COUNT GPU(s) are $GPU_MODEL"
  else
    add_check gpu-model false "found $GPU_NAMES, and the group declares gpuModel '$GPU_MODEL': move this machine to a group of its model, or change gpuModel"
  fi
}

check_driver_version() {
  minimum_check driver-version "$DRIVER_VERSION" "$MIN_DRIVER" "not requested" \
    "driver version unknown (see the driver check), need >= $MIN_DRIVER" \
    "$DRIVER_VERSION >= $MIN_DRIVER" "$DRIVER_VERSION < $MIN_DRIVER: upgrade the NVIDIA driver"
}
