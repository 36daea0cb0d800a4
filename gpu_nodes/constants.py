"""Names, defaults and figures the program shares across modules: object names, images, limits.

Each is defined once, here; the specs (gpu_nodes/config/, one module per section) use them as their defaults and the
manifests as what they write. The keys of the marks on the cluster are in gpu_nodes/vocabulary.py.
"""

from __future__ import annotations

from gpu_nodes.vocabulary import GPU_PRESENT_LABEL, GPU_RESOURCE

NAMESPACE = "gpu-nodes"

# `accelerator` is the runbook's; `nvidia.com/gpu.present` is NVIDIA's own (GPU Feature
# Discovery, NFD rules, the device plugin chart's affinity and the GPU Operator key on it), so
# that a cluster that later adopts those tools schedules them on our nodes.
DEFAULT_LABELS = {"accelerator": "nvidia", GPU_PRESENT_LABEL: "true"}
DEFAULT_TAINTS = (f"{GPU_RESOURCE}=present:NoSchedule",)
DEFAULT_DEVICE_PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
DEFAULT_DEVICE_PLUGIN_NAMESPACE = "nvidia-device-plugin"
# The program the device plugin's CDI specs run as hooks, by default (k8s-device-plugin
# api/config/v1/consts.go, DefaultNvidiaCTKPath), where the toolkit's packages install it.
DEFAULT_CDI_HOOK_PATH = "/usr/bin/nvidia-ctk"
DEFAULT_VERIFICATION_IMAGE = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
# NVIDIA's CUDA sample vectorAdd, which the GPU Operator's validator runs too: a real kernel on
# the GPUs. CUDA 11.7, because the container toolkit refuses an image built for a newer CUDA
# than the driver's, and 11.7 runs on every driver from R515 on (README, "CUDA").
DEFAULT_CUDA_IMAGE = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda11.7.1-ubuntu20.04"
DEFAULT_VERIFICATION_NAMESPACE = "gpu-verification"
DEFAULT_VERIFICATION_TIMEOUT = 600
# Machines of a group checked at once: OpenSSH's MaxStartups (default 10:30:100) starts refusing
# new connections beyond 10 still logging in, so a stock bastion refuses none of ours.
DEFAULT_PREFLIGHT_SESSIONS = 10
# The first NVIDIA Container Toolkit release that fixes CVE-2025-23266 (NVIDIAScape): a container
# could set LD_PRELOAD for the toolkit's createContainer hook and run code as root on the host.
DEFAULT_MIN_TOOLKIT = "1.17.8"
DEFAULT_PRIORITY_VALUE = 1_000_000
# Kubernetes reserves values above one billion for the system classes.
MAX_USER_PRIORITY = 1_000_000_000
MIN_PRIORITY = -2_147_483_648
# The verification pods' own, non-preempting PriorityClass is named after the group's.
VERIFICATION_PRIORITY_SUFFIX = "-verification"
MAX_PRIORITY_CLASS_NAME = 253 - len(VERIFICATION_PRIORITY_SUFFIX)

# The RuntimeClass the device plugin and verification pods run under, as the GPU Operator
# names it; its handler is the runtime name `nvidia-ctk runtime configure` writes.
DEFAULT_RUNTIME_CLASS = "nvidia"
RUNTIME_HANDLER = "nvidia"

MIG_STRATEGIES = ("none", "single", "mixed")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
# The Secret the stack creates in each namespace it uses from gpu-nodes:imagePullSecret.
PULL_SECRET_NAME = "gpu-nodes-pull"
CONTAINER_RUNTIMES = ("containerd", "docker", "cri-o", "k3s", "rke2", "auto")
# How a tenant's pod gets its GPUs, and so the path the verification pods take (README, "How
# tenants get their GPUs"): nvidia as the node's default runtime; a RuntimeClass that tenants
# must name; or CDI devices that the plugin names (its cdi-cri strategy).
GPU_ACCESS = ("defaultRuntime", "runtimeClass", "cdi")
# Whether a pod may see GPUs it was not given (README, "How tenants get their GPUs"): `default`
# leaves the container toolkit as it ships, which honours NVIDIA_VISIBLE_DEVICES in any container;
# `strict` is NVIDIA's hardening, where only the device plugin's volume mounts (or CDI) give GPUs.
ISOLATION = ("default", "strict")
# A GPU splits into at most seven MIG devices (the smallest profile is 1/7 of an A100/H100).
MAX_MIG_DEVICES_PER_GPU = 7
