# ---------------------------------------------------- check: device-plugin socket

check_socket() {
  local path=/var/lib/kubelet/device-plugins/kubelet.sock
  # A DRA group's GPUs are never the device plugin's (NVIDIA refuses both on one node): its kubelet
  # plugin registers through kubelet's plugin registry (k8s.io/dynamic-resource-allocation
  # kubeletplugin.KubeletRegistryDir), not this socket.
  if [[ $ALLOCATOR == dra ]]; then
    add_check device-plugin-socket true "not judged: NVIDIA's DRA driver allocates this group's GPUs and registers with kubelet under /var/lib/kubelet/plugins_registry, not through $path"
    return
  fi
  # Only a socket counts: a plain file there is debris, and kubelet not listening.
  if [[ -S $ROOT$path ]]; then
    add_check device-plugin-socket true "$path is present: kubelet accepts device plugins"
  elif blocked_by "$ROOT$path"; then
    CANNOT_READ=()
    can_read "$ROOT$path"
    cannot_read_text
    add_check device-plugin-socket false "$REPLY, so whether kubelet serves device plugins is unknown"
  elif [[ -e $ROOT$path ]]; then
    add_check device-plugin-socket false "$path exists but is not a socket: kubelet is not serving device-plugin registration there"
  else
    add_check device-plugin-socket false "$path is missing: kubelet is not running, or is not serving device plugins"
  fi
}
