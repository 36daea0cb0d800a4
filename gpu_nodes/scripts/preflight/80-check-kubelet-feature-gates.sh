# ------------------------------------------------- check: kubelet feature gates

# The DevicePlugins feature gate was removed in Kubernetes 1.28: kubelet refuses
# to start when it is still set.
readonly GATE_REMOVED_MINOR=28

# scan_gate LABEL TEXT [GATE]: when TEXT sets feature gate GATE (default DevicePlugins), adds
# "LABEL (GATE=VALUE)" to GATE_HITS and VALUE to GATE_VALUES. Finds it as a flag (--feature-gates=
# DevicePlugins=true), as a YAML key, bare or quoted ("DevicePlugins": true,
# 'DevicePlugins': true) and as a JSON member, one object per line or not (EKS
# writes JSON). The name must stand alone: MyDevicePlugins is another gate.
scan_gate() {
  local line gate=${3:-DevicePlugins} re
  re="(^|[^A-Za-z0-9_])${gate}[\"']?[[:space:]]*[=:][[:space:]]*[\"']?([A-Za-z]*)"
  while IFS='' read -r line; do
    [[ $line =~ ^[[:space:]]*# ]] && continue
    if [[ $line =~ $re ]]; then
      GATE_HITS+=("$1 ($gate=${BASH_REMATCH[2]})")
      GATE_VALUES+=("${BASH_REMATCH[2]}")
      return
    fi
  done <<<"$2"
}

check_kubelet_gates() {
  local i where looked version
  GATE_HITS=() GATE_VALUES=()
  for i in "${!KL_TEXTS[@]}"; do
    scan_gate "${KL_LABELS[i]}" "${KL_TEXTS[i]}"
  done
  kubelet_version
  version=${KV_TEXT:-of unknown version}
  printf -v looked '%s, ' "${KL_LABELS[@]}"
  looked=${looked%, }
  if ((${#GATE_HITS[@]} == 0)) && ((${#KL_CANNOT_READ[@]})); then
    CANNOT_READ=("${KL_CANNOT_READ[@]}")
    cannot_read_text
    add_check kubelet-feature-gates false "$REPLY, so whether kubelet is given the removed DevicePlugins gate is unknown (kubelet $version; read: ${looked:-nothing else})"
    return
  fi
  if ((${#GATE_HITS[@]} == 0)); then
    add_check kubelet-feature-gates true "no DevicePlugins feature gate (kubelet $version; read: ${looked:-no kubelet flags found})"
    return
  fi
  printf -v where '%s, ' "${GATE_HITS[@]}"
  where=${where%, }
  if [[ -n $KV_TEXT ]] && ((KV_MAJOR == 1 && KV_MINOR < GATE_REMOVED_MINOR)); then
    add_check kubelet-feature-gates true "warning: DevicePlugins gate set in $where; kubelet $KV_TEXT still accepts it, but it is GA since 1.26 and removed in 1.28: drop it before upgrading"
  elif [[ -n $KV_TEXT ]]; then
    add_check kubelet-feature-gates false "DevicePlugins gate set in $where: kubelet $KV_TEXT (>= 1.28) no longer knows this removed gate and refuses to start; remove it"
  else
    add_check kubelet-feature-gates false "DevicePlugins gate set in $where and the kubelet version is unknown ($KV_WHY): on kubelet >= 1.28 this removed gate stops it from starting; remove it"
  fi
}
