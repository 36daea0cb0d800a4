# ------------------------------------------------------------------------ CUDA
#
# The driver's CUDA version is the "CUDA Version" of nvidia-smi's header (no
# --query-gpu field gives it). The verification runs a CUDA kernel from an image
# built for some CUDA version X.Y (--min-cuda, from its tag), and the container
# toolkit refuses to start an image whose CUDA (NVIDIA_REQUIRE_CUDA "cuda>=X.Y")
# is newer than the driver's: so the driver must support X.Y or later. CUDA's
# minor version compatibility lets an X.Y application run on any X.* driver only
# where that requirement is turned off (NVIDIA_DISABLE_REQUIRE), which tenants'
# images do not do.
readonly CUDA_VERSION_RE="CUDA Version:[[:space:]]*([0-9]+)\\.([0-9]+)"

check_cuda() {
  CUDA_VERSION=''
  if [[ $SMI_OK != true && -z $MIN_CUDA ]]; then
    add_check cuda true "not requested"
    return
  elif [[ $SMI_OK != true ]]; then
    add_check cuda false "the driver's CUDA version is unknown (see the driver check), need >= $MIN_CUDA for the verification's CUDA image"
    return
  fi
  run_capture "$SMI_TIMEOUT" nvidia-smi
  if [[ $CAP_OUT =~ $CUDA_VERSION_RE ]]; then
    CUDA_VERSION="$((10#${BASH_REMATCH[1]})).$((10#${BASH_REMATCH[2]}))"
  fi
  if [[ -z $MIN_CUDA ]]; then
    add_check cuda true "not requested${CUDA_VERSION:+ (the driver supports CUDA $CUDA_VERSION)}"
  elif [[ -z $CUDA_VERSION ]]; then
    brief "$CAP_OUT"$'\n'"$CAP_ERR"
    add_check cuda false "nvidia-smi names no CUDA Version (exit $CAP_RC: ${REPLY:-no output}), need >= $MIN_CUDA for the verification's CUDA image"
  elif version_ge "$CUDA_VERSION" "$MIN_CUDA"; then
    add_check cuda true "driver $DRIVER_VERSION supports CUDA $CUDA_VERSION >= $MIN_CUDA (the verification's CUDA image)"
  else
    add_check cuda false "driver $DRIVER_VERSION supports CUDA up to $CUDA_VERSION, but the verification's CUDA image is built for CUDA $MIN_CUDA, which the container toolkit refuses to start on it: upgrade the driver to one for CUDA $MIN_CUDA or later, or set verification.cudaImage to an image built for CUDA $CUDA_VERSION or older"
  fi
}
