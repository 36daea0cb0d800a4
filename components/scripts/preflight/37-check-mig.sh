# ------------------------------------------------------------------------- MIG
#
# With --mig-strategy single or mixed (the group's devicePlugin.migStrategy) the
# plugin advertises MIG devices, which exist only on GPUs in MIG mode. Under
# single it advertises whole GPUs when no GPU is in MIG mode, so a MIG group would
# pass with no MIG at all; single also wants every GPU in MIG mode (one uniform
# layout), mixed at least one. nvidia-smi -q shows each GPU's "MIG Mode" with its
# Current and Pending values; a pending Enabled takes effect at the GPU's next reset.

# mig_modes TEXT: sets MIG_BUSES, MIG_CURRENT and MIG_PENDING (one entry per GPU, in
# the order nvidia-smi -q lists them) from TEXT.
mig_modes() {
  local line bus='' in_mig=false
  MIG_BUSES=() MIG_CURRENT=() MIG_PENDING=()
  while IFS='' read -r line; do
    if [[ $line =~ ^GPU[[:space:]]+([0-9A-Fa-f:.]+)[[:space:]]*$ ]]; then
      bus=${BASH_REMATCH[1]} in_mig=false
      MIG_BUSES+=("$bus") MIG_CURRENT+=("") MIG_PENDING+=("")
    elif [[ -n $bus && $line =~ ^[[:space:]]{4}MIG[[:space:]]Mode[[:space:]]*$ ]]; then
      in_mig=true
    elif $in_mig && [[ $line =~ ^[[:space:]]{8}(Current|Pending)[[:space:]]*:[[:space:]]*(.*[^[:space:]]) ]]; then
      if [[ ${BASH_REMATCH[1]} == Current ]]; then
        MIG_CURRENT[-1]=${BASH_REMATCH[2]}
      else
        MIG_PENDING[-1]=${BASH_REMATCH[2]}
      fi
    elif [[ $line =~ ^[[:space:]]{4}[^[:space:]] ]]; then
      in_mig=false
    fi
  done <<<"$1"
}

check_mig() {
  local i enabled=0 line
  local -a off=()
  if [[ -z $MIG_STRATEGY ]]; then
    add_check mig true "not requested"
    return
  fi
  if [[ $SMI_OK != true ]]; then
    add_check mig false "MIG modes unknown (see the driver check); migStrategy $MIG_STRATEGY needs GPUs in MIG mode"
    return
  fi
  run_capture "$SMI_TIMEOUT" nvidia-smi -q
  mig_modes "$CAP_OUT"
  if ((${#MIG_BUSES[@]} == 0)); then
    brief "$CAP_OUT"$'\n'"$CAP_ERR"
    add_check mig false "nvidia-smi -q listed no GPU (exit $CAP_RC: ${REPLY:-no output}), so their MIG modes are unknown"
    return
  fi
  for i in "${!MIG_BUSES[@]}"; do
    if [[ ${MIG_CURRENT[i]} == Enabled ]]; then
      enabled=$((enabled + 1))
    else
      line="GPU ${MIG_BUSES[i]} ${MIG_CURRENT[i]:-without a MIG mode}"
      [[ ${MIG_PENDING[i]} == Enabled ]] && line+=" (Enabled is pending: reset the GPU)"
      off+=("$line")
    fi
  done
  printf -v line '%s, ' "${off[@]}"
  line=${line%, }
  if [[ $MIG_STRATEGY == single && ${#off[@]} -gt 0 ]]; then
    add_check mig false "migStrategy single needs every GPU in MIG mode, and $enabled of ${#MIG_BUSES[@]} are: $line; enable it (nvidia-smi -i <index> -mig 1, then reset the GPU) and create the same MIG layout on each, or use migStrategy none"
  elif ((enabled == 0)); then
    add_check mig false "migStrategy mixed needs at least one GPU in MIG mode, and none is: $line; enable it (nvidia-smi -i <index> -mig 1, then reset the GPU) and create the MIG devices, or use migStrategy none"
  else
    add_check mig true "$enabled of ${#MIG_BUSES[@]} GPU(s) in MIG mode (migStrategy $MIG_STRATEGY)"
  fi
}
