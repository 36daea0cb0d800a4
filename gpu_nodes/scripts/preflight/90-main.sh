# ----------------------------------------------------------------------- main

main() {
  # fd 3 carries the JSON; everything else, stray tool output included, goes to stderr.
  exec 3>&1 1>&2
  export LC_ALL=C
  shopt -s nullglob
  init_state
  trap on_exit EXIT
  trap 'exit 1' HUP INT TERM
  TMPD=$(mktemp -d 2>/dev/null) || TMPD=''
  if ! parse_args "$@"; then
    detect_hostname
    print_usage >&2
    add_check usage false "$USAGE_ERROR"
    emit
    return 2
  fi
  detect_hostname
  detect_machine
  collect_kubelet # for the runtime (auto) and the feature-gate checks
  kubelet_device_settings
  # The runtime's nvidia entry names the container toolkit it runs, which the checks from cuda on judge.
  inspect_runtime
  check_driver
  check_gpu_count
  check_gpu_model
  check_driver_version
  check_driver_advisories
  check_cuda
  check_mig
  check_fabric
  check_gpu_health
  check_mps
  smi_q_features
  smi_compute_cap
  check_toolkit
  check_runtime
  check_runtime_entry
  check_cdi
  check_cdi_generation
  check_isolation
  check_dev_char
  check_socket
  check_kubelet_gates
  check_dra_kubelet
  check_dra_driver_version
  check_dra_toolkit
  check_dra_cdi
  check_dra_gates
  check_dra_compute_domains
  check_dra_mig
  check_nvlink_domain
  check_imex_daemon
  check_imex_peers
  check_nri
  summarize
  emit
  $ALL_OK
}

# Sent as `bash -s` over SSH, the rest of this script is still unread on stdin:
# no command may read it, hence </dev/null.
main "$@" </dev/null
exit
