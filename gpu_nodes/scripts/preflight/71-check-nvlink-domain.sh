# ------------------------------------------------------------ check: nvlink-domain
#
# With --nvlink-clique CLIQUE (the group's nvlinkDomain.clique): the machine must be in that multi-node NVLink
# domain. A GPU is in one once its NVLink fabric is trained: `nvidia-smi -q` reports, in its Fabric section,
# State Completed and Status Success, then the fabric's ClusterUUID and CliqueId (the fabric check reads the
# same states). GPU Feature Discovery labels a node `nvidia.com/gpu.clique` with <ClusterUUID>.<CliqueId> when
# every fabric-attached GPU reports the same two (k8s-device-plugin internal/lm/imex.go, getFabricIDs), and
# NVIDIA's DRA driver forms ComputeDomains of the nodes of one clique the same way
# (kubernetes-sigs/dra-driver-nvidia-gpu cmd/compute-domain-kubelet-plugin/nvlib.go, getCliqueID). So every
# GPU of the machine must be attached and report the declared clique: a GPU outside it would be left out of
# the domain's jobs, and a machine of another clique cannot join their IMEX domain. The UUID is compared
# without regard to case (nvidia-smi prints it in lowercase).
# Without --nvlink-clique it passes as "not requested".

check_nvlink_domain() {
  local i uuid clique state status in_clique=''
  local -a problems=() attached=()
  if [[ -z $NVLINK_CLIQUE ]]; then
    add_check nvlink-domain true "not requested"
    return
  fi
  smi_q_gpus nvlink-domain "whether its GPUs are in the NVLink domain $NVLINK_CLIQUE is" || return 0
  for i in "${!Q_BUS[@]}"; do
    state=${Q_FABRIC_STATE[i]} status=${Q_FABRIC_STATUS[i]}
    uuid=${Q_FIELD["$i|Fabric/ClusterUUID"]-} clique=${Q_FIELD["$i|Fabric/CliqueId"]-}
    if [[ $state != Completed || $status != Success ]]; then
      problems+=("GPU ${Q_BUS[i]}: fabric State ${state:-not reported}, Status ${status:-not reported}")
    elif [[ -z $uuid || -z $clique ]]; then
      problems+=("GPU ${Q_BUS[i]}: its fabric reports no ClusterUUID or CliqueId")
    elif [[ ${uuid,,}.$clique != "${NVLINK_CLIQUE,,}" ]]; then
      problems+=("GPU ${Q_BUS[i]}: in clique $uuid.$clique")
    else
      attached+=("${Q_BUS[i]}")
      in_clique=$uuid.$clique
    fi
  done
  if ((${#problems[@]} == 0)); then
    add_check nvlink-domain true "${#attached[@]} GPU(s) attached to the NVLink fabric in clique $in_clique, the one nvlinkDomain.clique names"
    return
  fi
  fabric_advice
  list_check nvlink-domain "the machine is not in the NVLink domain nvlinkDomain.clique names ($NVLINK_CLIQUE), so jobs across the domain's machines cannot use its GPUs. A fabric not Completed is trained by the fabric manager ($REPLY); a machine of another clique belongs to another group" "${#problems[@]}" "${problems[@]}"
}
