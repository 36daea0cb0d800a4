# ------------------------------------------------------------------ check: nri
#
# With --toolkit nri (the group's containerToolkit: nri) the machine's NVIDIA Container Toolkit is the one the GPU
# Operator's toolkit container installs with `cdi.nriPluginEnabled`: the installer leaves the container runtime's
# configuration alone (nvidia-container-toolkit cmd/nvidia-ctk-installer/container/runtime/runtime.go,
# NewConfigurer: a no-op configurer when the NRI plugin is on), installs the toolkit under its root
# (/usr/local/nvidia/toolkit, cmd/nvidia-ctk-installer/main.go toolkitRoot), writes the CDI spec of the management
# device, management.nvidia.com/gpu (toolkit/toolkit.go generateCDISpec, into /var/run/cdi, named by
# cdi.GenerateNameForSpec: management.nvidia.com-gpu.yaml), and serves an NRI plugin on the runtime's NRI socket
# (--nri-socket, by default the NRI API's DefaultSocketPath, /var/run/nri/nri.sock; the GPU Operator mounts the
# same, controllers/object_controls.go DefaultRuntimeNRISocketFile) that injects the CDI devices a pod's
# `nvidia.cdi.k8s.io/container.<name>` annotation names (container/runtime/nri/plugin.go). No nvidia runtime
# entry exists then, and none is needed: tenants' pods get the device plugin's CDI devices through the runtime's
# own CDI support (gpuAccess cdi), NVIDIA's own pods the management device through NRI. The check wants:
# - the NRI socket, which a runtime listens on only with NRI on (containerd 2.0 and later have it on unless
#   `disable = true` under [plugins."io.containerd.nri.v1.nri"]; containerd 1.7 needs `disable = false` there;
#   CRI-O `enable_nri = true` under [crio.nri]);
# - the management device's CDI spec, which the NRI plugin's injections name;
# - a toolkit whose NRI plugin can serve NVIDIA's pods outside its own namespace: 1.19.0 brought the NRI plugin
#   and injected only into pods of the toolkit's namespace ("restrict NRI injection of CDI devices to pods in the
#   toolkit's namespace"); 1.20.0 restricts only management devices there and adds the namespaces of
#   --nri-management-cdi-device-namespaces (NRI_MANAGEMENT_CDI_DEVICE_NAMESPACES; CHANGELOG.md v1.19.0-rc.2 and
#   v1.20.0-rc.1), which the device plugin's namespace must be among.
# The toolkit judged is the installer's (find_toolkit): with no nvidia runtime entry to follow, preflight looks
# under the installer's root. Without --toolkit nri it passes as "not requested"; the runtime check then names a
# machine that looks set up this way (nri_recognised).

readonly NRI_SOCKET=/var/run/nri/nri.sock
readonly MANAGEMENT_CDI_SPEC=/var/run/cdi/management.nvidia.com-gpu.yaml
readonly INSTALLER_TOOLKIT_ROOT=/usr/local/nvidia/toolkit
readonly NRI_TOOLKIT_FLOOR=1.20.0
readonly NRI_SOURCE="nvidia-container-toolkit CHANGELOG.md v1.19.0-rc.2 and v1.20.0-rc.1"

# nri_recognised: true when the machine looks set up by the GPU Operator's toolkit in NRI mode: the runtime's NRI
# socket, the installer's toolkit and the management device's CDI spec, with no nvidia runtime entry (RT_CONFIGURED).
nri_recognised() {
  [[ $RT_CONFIGURED != true && -S $ROOT$NRI_SOCKET && -x $ROOT$INSTALLER_TOOLKIT_ROOT/nvidia-ctk && -e $ROOT$MANAGEMENT_CDI_SPEC ]]
}

check_nri() {
  local -a problems=() found=()
  if [[ $TOOLKIT_VIA != nri ]]; then
    add_check nri true "not requested"
    return
  fi
  if [[ -S $ROOT$NRI_SOCKET ]]; then
    found+=("the runtime's NRI socket $NRI_SOCKET")
  else
    problems+=("no NRI socket at $NRI_SOCKET, so the toolkit's NRI plugin has no runtime to serve: turn the runtime's NRI on (containerd 2.0 and later unless [plugins.\"io.containerd.nri.v1.nri\"] disable = true; containerd 1.7 needs disable = false there; CRI-O enable_nri = true under [crio.nri]), then restart it")
  fi
  if [[ -e $ROOT$MANAGEMENT_CDI_SPEC ]]; then
    found+=("the management device's CDI spec $MANAGEMENT_CDI_SPEC")
  else
    problems+=("no $MANAGEMENT_CDI_SPEC, the CDI spec of the management device the NRI plugin gives NVIDIA's own pods: the GPU Operator's toolkit container writes it with cdi.enabled (its NRI plugin needs CDI)")
  fi
  if toolkit_version; then
    if version_ge "$TK_VERSION" "$NRI_TOOLKIT_FLOOR"; then
      found+=("toolkit $TK_VERSION at $TK_CTK, whose NRI plugin serves NVIDIA's pods of the namespaces its installer lists")
    else
      problems+=("toolkit $TK_VERSION at $TK_CTK < $NRI_TOOLKIT_FLOOR: its NRI plugin injects only into pods of the toolkit's own namespace, not the device plugin's ($NRI_SOURCE): upgrade the GPU Operator's toolkit")
    fi
  else
    problems+=("the toolkit's version is unknown ($TK_WHY), so whether its NRI plugin can serve the device plugin's pods is unknown")
  fi
  list_check nri "the machine's toolkit cannot give GPUs through NRI" "${#problems[@]}" "${problems[@]}" "${found[@]}"
}
