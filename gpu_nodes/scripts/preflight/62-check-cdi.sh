# ------------------------------------------------------------------------- CDI
#
# With --require-cdi (the group's gpuAccess: cdi) a tenant's pod gets its GPUs as
# CDI devices that the device plugin names (its cdi-cri strategy) and describes
# in specs under /var/run/cdi. Two parts must pass them on: kubelet, through the
# CRI (DevicePluginCDIDevices: beta and on by default from Kubernetes 1.29, GA in
# 1.31), and the runtime, which must resolve them. containerd 2.x does unless
# enable_cdi = false; containerd 1.7 only with enable_cdi = true (its default is
# false); CRI-O always does; cri-dockerd passes no CDI devices to docker.
# Without --require-cdi the check passes as "not requested".

# cdi_fix NAME MAJOR: sets REPLY to how to turn CDI on in runtime NAME.
cdi_fix() {
  local section="[plugins.\"io.containerd.grpc.v1.cri\"]" service=containerd
  (($2 >= 2)) && section="[plugins.'io.containerd.cri.v1.runtime']"
  case $1 in
    k3s | rke2)
      [[ $1 == rke2 ]] && service=rke2-server || service=k3s
      REPLY="set enable_cdi = true under $section in a config.toml.tmpl beside $1's config.toml, then restart $service"
      ;;
    *) REPLY="set enable_cdi = true under $section in /etc/containerd/config.toml (or a drop-in), then restart $service" ;;
  esac
}

check_cdi() {
  local -a cdi_problems=() cdi_found=()
  if ! $REQUIRE_CDI; then
    add_check cdi true "not requested"
    return
  fi
  if kubelet_version; then
    if ((KV_MAJOR == 1 && KV_MINOR < 29)); then
      cdi_problems+=("kubelet $KV_TEXT passes no CDI devices to the runtime (DevicePluginCDIDevices is on by default from 1.29): upgrade kubelet to 1.29 or later")
    else
      cdi_found+=("kubelet $KV_TEXT passes CDI devices")
    fi
  else
    cdi_problems+=("$KV_WHY, so whether kubelet passes CDI devices is unknown")
  fi
  runtime_cdi "use gpuAccess defaultRuntime there (nvidia-ctk runtime configure --runtime=docker --set-as-default, then restart docker)"
  if [[ $ALLOCATOR == dra ]]; then
    # The DRA driver's CDI specs run its own nvidia-cdi-hook, which its kubelet plugin copies to the
    # host (dra-driver-nvidia-gpu cmd/gpu-kubelet-plugin/main.go, setNvidiaCDIHookPath), not the
    # device plugin's cdiHookPath.
    cdi_found+=("CDI hooks are the DRA driver's own nvidia-cdi-hook")
  elif cdi_hook_program; then
    cdi_found+=("$REPLY")
  else
    cdi_problems+=("$REPLY")
  fi
  list_check cdi "tenant pods would get no GPUs as CDI devices" "${#cdi_problems[@]}" "${cdi_problems[@]}" "${cdi_found[@]}"
}

# runtime_cdi DOCKER_FIX: whether the container runtime resolves CDI devices, as its running
# daemon (61-running-runtime.sh) or its files say; appends what it found to the caller's
# cdi_found, or a problem and its fix to the caller's cdi_problems (DOCKER_FIX: what to do
# behind cri-dockerd, which passes none). The cdi and dra-cdi checks both ask.
runtime_cdi() {
  local -a version_cmd=()
  local major cdi_off
  case $RT_NAME in
    containerd | k3s | rke2)
      if [[ $RT_NAME == containerd ]] && command -v containerd >/dev/null 2>&1; then
        version_cmd=(containerd)
      elif [[ $RT_NAME == rke2 && -x $ROOT/var/lib/rancher/rke2/bin/containerd ]]; then
        version_cmd=("$ROOT/var/lib/rancher/rke2/bin/containerd")
      fi
      containerd_major "${version_cmd[@]}"
      major=$REPLY
      if ((${#CANNOT_READ[@]})) && [[ -z $RT_ENABLE_CDI ]]; then
        cdi_problems+=("$RT_NAME: its config could not be read, so whether it resolves CDI devices is unknown")
      elif [[ -n $CTRD_VERSION ]] && ! version_ge "$CTRD_VERSION" 1.7.2; then
        # CDI came in 1.7.0 (containerd PR 6654), the CRI's CDIDevices field in 1.7.2 (PR 8519);
        # kubelet passes CDI devices only there from 1.32 (kubernetes PR 126435).
        cdi_problems+=("$MAJOR_WHY reads no CDI devices from the CRI (from 1.7.2 on): upgrade containerd to 1.7.2 or later")
      elif [[ -n $RUN_CDI_FIX ]]; then
        cdi_problems+=("$RUN_CDI_FIX")
      elif [[ $RT_ENABLE_CDI == false ]]; then
        cdi_fix "$RT_NAME" "$major"
        cdi_off="enable_cdi = false; read $RT_SOURCE"
        [[ $RT_SRC == crictl-info ]] && cdi_off="enableCDI false in $RT_SOURCE"
        cdi_problems+=("$RT_NAME ($MAJOR_WHY) has CDI turned off ($cdi_off): $REPLY")
      elif ((major < 2)) && [[ $RT_ENABLE_CDI != true ]]; then
        cdi_fix "$RT_NAME" "$major"
        cdi_problems+=("$RT_NAME ($MAJOR_WHY) resolves no CDI devices: containerd 1.x needs enable_cdi = true and none is set (read $RT_SOURCE): $REPLY")
      else
        cdi_found+=("$RT_NAME ($MAJOR_WHY) resolves CDI devices (enable_cdi ${RT_ENABLE_CDI:-unset, on by default in 2.x})")
      fi
      cdi_spec_readable "$RT_NAME" "$CTRD_VERSION"
      ;;
    cri-o)
      cdi_found+=("cri-o resolves CDI devices")
      crio_version && cdi_spec_readable cri-o "$REPLY"
      ;;
    docker) cdi_problems+=("docker behind cri-dockerd: cri-dockerd passes no CDI devices from kubelet to docker; $1") ;;
    *) cdi_problems+=("no container runtime was found, so whether it resolves CDI devices is unknown") ;;
  esac
}
