# ------------------------------------------------------------------------- DRA
#
# With --allocator dra (the group's allocator: dra) NVIDIA's DRA driver hands out the group's GPUs
# as ResourceClaims, and its kubelet plugin must find a machine that meets its documented
# prerequisites. Read from kubernetes-sigs/dra-driver-nvidia-gpu (formerly NVIDIA/k8s-dra-driver-gpu):
# - Kubernetes v1.34.2 or later for GPU allocation (site/content/docs/prerequisites.md and
#   docs/prerequisites.md, "Software support matrix"); the chart itself installs from 1.32
#   (deployments/helm/dra-driver-nvidia-gpu/Chart.yaml, kubeVersion ">=1.32.0-0"), which the docs
#   keep for ComputeDomains. Kubelet is what runs the plugin and prepares the claims, so its
#   version is the one judged.
# - NVIDIA driver v565 or later for GPU allocation; v570.158.01 or later for ComputeDomains (the
#   IMEXDaemonsWithDNSNames gate, on by default, needs it; the same prerequisites pages).
# - NVIDIA Container Toolkit v1.18.0 or later (site/content/docs/prerequisites.md).
# - CDI enabled in the container runtime: "The DRA Driver uses CDI to expose GPUs to containers"
#   (containerd 2.0+ and CRI-O 1.27+ by default; the same pages). It writes its CDI specs itself
#   (cmd/gpu-kubelet-plugin/main.go, --cdi-root) and runs its own nvidia-cdi-hook.
# - Kubelet's DynamicResourceAllocation gate on: Kubernetes' pkg/features/kube_features.go has it
#   beta and off by default in 1.32 and 1.33, GA and on in 1.34, locked on from 1.35 (a kubelet
#   given it false there refuses to start); at 1.34 it may still be turned off. The driver's own
#   gates (site/content/docs/reference/feature-gates.md) ask nothing more of kubelet for GPU
#   allocation; DRAConsumableCapacity, for its alpha ConsumableShares, is not set by gpu-nodes.
# With --imex driver (the group's dra.computeDomains), the ComputeDomains' floors too (dra-compute-domains):
# driver 570.158.01, which the driver's IMEXDaemonsWithDNSNames gate needs ("The ComputeDomain plugin will fail
# to start on older drivers", site/content/docs/prerequisites.md, "ComputeDomains additional prerequisites"), and
# Kubernetes 1.32 with the DynamicResourceAllocation gate on, which dra-kubelet's 1.34.2 and dra-feature-gates
# already hold. The rest of those prerequisites are checked elsewhere: multi-node NVLink hardware and the clique
# (nvlink-domain), the machine's own nvidia-imex service off (imex-daemon).
# With --dra-mig (the group's dra.migProfiles), what the driver's dynamic MIG needs of the GPUs (dra-mig):
# MIG-capable GPUs ("MIG is available only on NVIDIA data center GPUs with the Ampere architecture or newer"), and
# on Ampere MIG mode already on ("Ampere cannot toggle MIG mode without a GPU reset. If MIG mode is off, the
# driver falls back to full-GPU allocation and advertises no MIG partitions. Hopper and later architectures enable
# MIG mode on demand"); MIG devices made by others are named, for the driver destroys them when its kubelet plugin
# starts (site/content/docs/guides/gpu-allocation/mig.md, "Limitations and considerations").
# Without --allocator dra each check passes as "not requested".

readonly DRA_SOURCE="kubernetes-sigs/dra-driver-nvidia-gpu docs/prerequisites.md"
# Each floor of NVIDIA's DRA driver, and the prerequisite it comes from (DRA_SOURCE).
declare -rA DRA_FLOOR=(
  [kubernetes]=1.34.2
  [driver]=565
  [toolkit]=1.18.0
  # ComputeDomains: their Kubernetes floor (with DynamicResourceAllocation turned on below 1.34, below
  # [kubernetes] anyway) and their driver's (dra-compute-domains).
  [computedomains-kubernetes]=1.32
  [computedomains-driver]=570.158.01
)
readonly DRA_GATE=DynamicResourceAllocation
# From this minor on the gate is locked on (kube_features.go: GA 1.34, LockToDefault 1.35).
readonly DRA_GATE_LOCKED_MINOR=35

check_dra_kubelet() {
  local floor=${DRA_FLOOR[kubernetes]}
  if [[ $ALLOCATOR != dra ]]; then
    add_check dra-kubelet true "not requested"
  elif ! kubelet_version; then
    add_check dra-kubelet false "$KV_WHY, so whether kubelet meets NVIDIA's DRA driver (Kubernetes $floor or later, $DRA_SOURCE) is unknown"
  elif version_ge "${KV_TEXT#v}" "$floor"; then
    add_check dra-kubelet true "kubelet $KV_TEXT >= $floor, NVIDIA's DRA driver's floor for GPU allocation"
  else
    add_check dra-kubelet false "kubelet $KV_TEXT < $floor: NVIDIA's DRA driver allocates GPUs from Kubernetes $floor on ($DRA_SOURCE): upgrade the node to Kubernetes $floor or later"
  fi
}

check_dra_driver_version() {
  local floor=${DRA_FLOOR[driver]}
  [[ $ALLOCATOR == dra ]] || floor=''
  minimum_check dra-driver-version "$DRIVER_VERSION" "$floor" "not requested" \
    "driver version unknown (see the driver check), NVIDIA's DRA driver needs >= $floor" \
    "$DRIVER_VERSION >= $floor, NVIDIA's DRA driver's floor for GPU allocation" \
    "$DRIVER_VERSION < $floor, NVIDIA's DRA driver's floor for GPU allocation ($DRA_SOURCE): upgrade the NVIDIA driver to R$floor or later"
}

check_dra_toolkit() {
  local floor=${DRA_FLOOR[toolkit]}
  [[ $ALLOCATOR == dra ]] || floor=''
  minimum_check dra-toolkit "${TK_VERSION-}" "$floor" "not requested" \
    "NVIDIA Container Toolkit version unknown (see the container-toolkit check), NVIDIA's DRA driver needs >= $floor" \
    "NVIDIA Container Toolkit $TK_VERSION >= $floor" \
    "NVIDIA Container Toolkit $TK_VERSION < $floor, NVIDIA's DRA driver's floor ($DRA_SOURCE): upgrade the toolkit"
}

# check_dra_cdi: the running runtime must resolve CDI devices whatever gpuAccess says: the DRA
# driver hands GPUs to containers only as CDI devices.
check_dra_cdi() {
  local -a cdi_problems=() cdi_found=()
  if [[ $ALLOCATOR != dra ]]; then
    add_check dra-cdi true "not requested"
    return
  fi
  runtime_cdi "NVIDIA's DRA driver hands out GPUs only as CDI devices: run this node on containerd or CRI-O"
  list_check dra-cdi "NVIDIA's DRA driver hands GPUs to containers only as CDI devices" "${#cdi_problems[@]}" "${cdi_problems[@]}" "${cdi_found[@]}"
}

# check_dra_gates: kubelet's flags and config files (collect_kubelet) must not turn the
# DynamicResourceAllocation gate off.
check_dra_gates() {
  local i where looked version
  local -a off=()
  if [[ $ALLOCATOR != dra ]]; then
    add_check dra-feature-gates true "not requested"
    return
  fi
  GATE_HITS=() GATE_VALUES=()
  for i in "${!KL_TEXTS[@]}"; do
    scan_gate "${KL_LABELS[i]}" "${KL_TEXTS[i]}" "$DRA_GATE"
  done
  for i in "${!GATE_HITS[@]}"; do
    [[ ${GATE_VALUES[i],,} == true ]] || off+=("${GATE_HITS[i]}")
  done
  kubelet_version
  version=${KV_TEXT:-of unknown version}
  printf -v looked '%s, ' "${KL_LABELS[@]}"
  looked=${looked%, }
  if ((${#off[@]} == 0)) && ((${#KL_CANNOT_READ[@]})); then
    CANNOT_READ=("${KL_CANNOT_READ[@]}")
    cannot_read_text
    add_check dra-feature-gates false "$REPLY, so whether kubelet turns the $DRA_GATE gate off is unknown (kubelet $version; read: ${looked:-nothing else})"
    return
  fi
  if ((${#off[@]} == 0)); then
    where="not set, on by default from 1.34"
    ((${#GATE_HITS[@]})) && printf -v where 'set in %s, ' "${GATE_HITS[@]}" && where=${where%, }
    add_check dra-feature-gates true "$DRA_GATE gate $where (kubelet $version; read: ${looked:-no kubelet flags found})"
    return
  fi
  printf -v where '%s, ' "${off[@]}"
  where=${where%, }
  if [[ -n $KV_TEXT ]] && ((KV_MAJOR == 1 && KV_MINOR >= DRA_GATE_LOCKED_MINOR)); then
    add_check dra-feature-gates false "$DRA_GATE gate set in $where: kubelet $KV_TEXT has it locked on (from 1.$DRA_GATE_LOCKED_MINOR) and refuses to start with it off; remove it"
  else
    add_check dra-feature-gates false "$DRA_GATE gate set in $where: kubelet $version then prepares no ResourceClaims, so NVIDIA's DRA driver hands out no GPUs here; remove it, or set it to true"
  fi
}

# check_dra_compute_domains: with --imex driver, the driver floor of the DRA driver's ComputeDomains.
check_dra_compute_domains() {
  local floor=${DRA_FLOOR[computedomains-driver]}
  [[ $ALLOCATOR == dra && $IMEX_MODE == driver ]] || floor=''
  minimum_check dra-compute-domains "$DRIVER_VERSION" "$floor" "not requested" \
    "driver version unknown (see the driver check), NVIDIA's DRA driver's ComputeDomains need >= $floor" \
    "$DRIVER_VERSION >= $floor, the floor of NVIDIA's DRA driver's ComputeDomains" \
    "$DRIVER_VERSION < $floor, the floor of NVIDIA's DRA driver's ComputeDomains (its IMEXDaemonsWithDNSNames gate, on by default, needs it: $DRA_SOURCE): upgrade the NVIDIA driver to $floor or later"
}

# check_dra_mig: with --dra-mig, GPUs the DRA driver can split on demand.
check_dra_mig() {
  local i mode cc=${FEAT_COMPUTE:-} made=0
  local -a problems=() found=()
  if [[ $ALLOCATOR != dra ]] || ! $DRA_MIG; then
    add_check dra-mig true "not requested"
    return
  fi
  smi_q_gpus dra-mig "whether NVIDIA's DRA driver can split its GPUs by MIG is" || return 0
  for i in "${!Q_BUS[@]}"; do
    mode=${Q_MIG_CURRENT[i]}
    if [[ -z $mode || $mode == N/A || $mode == *"Not Supported"* ]]; then
      problems+=("GPU ${Q_BUS[i]}: no MIG (MIG Mode ${mode:-not reported})")
    elif [[ $mode != Enabled && $cc == 8.* ]]; then
      problems+=("GPU ${Q_BUS[i]}: MIG mode $mode on an Ampere GPU (compute capability $cc), which cannot turn it on without a reset: nvidia-smi -i ${Q_BUS[i]} -mig 1, then reset the GPU")
    else
      found+=("GPU ${Q_BUS[i]}: MIG mode $mode")
    fi
  done
  # MIG devices someone made (nvidia-smi -L lists them under their GPU: 37-check-mig.sh reads the listing, which
  # the report's "mig" entry then holds).
  smi_mig_devices
  for i in "${!L_COUNT[@]}"; do made=$((made + L_COUNT[$i])); done
  if ((${#problems[@]} == 0 && made > 0)); then
    add_check dra-mig true "warning: ${#found[@]} GPU(s) can be split by MIG, but $made MIG device(s) are already made, which NVIDIA's DRA driver destroys when its kubelet plugin starts with dynamic MIG ($DRA_SOURCE, guides/gpu-allocation/mig.md)"
    return
  fi
  list_check dra-mig "NVIDIA's DRA driver cannot split these GPUs by MIG on demand (dra.migProfiles)" "${#problems[@]}" "${problems[@]}" "${found[@]}"
}
