# ------------------------------------------------------------------------- MIG
#
# With --mig-strategy single or mixed (the group's devicePlugin.migStrategy) the
# plugin advertises MIG devices, which exist only on GPUs in MIG mode. Under
# single it advertises whole GPUs when no GPU is in MIG mode, so a MIG group would
# pass with no MIG at all; single also wants every GPU in MIG mode (one uniform
# layout), mixed at least one. nvidia-smi -q shows each GPU's "MIG Mode" with its
# Current and Pending values (smi_q); a pending Enabled takes effect at the GPU's
# next reset.

check_mig() {
  local i enabled=0 line
  local -a off=()
  if [[ -z $MIG_STRATEGY ]]; then
    add_check mig true "not requested"
    return
  fi
  smi_q_gpus mig "their MIG modes, which migStrategy $MIG_STRATEGY needs, are" || return 0
  for i in "${!Q_BUS[@]}"; do
    if [[ ${Q_MIG_CURRENT[i]} == Enabled ]]; then
      enabled=$((enabled + 1))
    else
      line="GPU ${Q_BUS[i]} ${Q_MIG_CURRENT[i]:-without a MIG mode}"
      [[ ${Q_MIG_PENDING[i]} == Enabled ]] && line+=" (Enabled is pending: reset the GPU)"
      off+=("$line")
    fi
  done
  printf -v line '%s, ' "${off[@]}"
  line=${line%, }
  if [[ $MIG_STRATEGY == single && ${#off[@]} -gt 0 ]]; then
    add_check mig false "migStrategy single needs every GPU in MIG mode, and $enabled of ${#Q_BUS[@]} are: $line; enable it (nvidia-smi -i <index> -mig 1, then reset the GPU) and create the same MIG layout on each, or use migStrategy none"
  elif ((enabled == 0)); then
    add_check mig false "migStrategy mixed needs at least one GPU in MIG mode, and none is: $line; enable it (nvidia-smi -i <index> -mig 1, then reset the GPU) and create the MIG devices, or use migStrategy none"
  else
    add_check mig true "$enabled of ${#Q_BUS[@]} GPU(s) in MIG mode (migStrategy $MIG_STRATEGY)"
  fi
}
