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
