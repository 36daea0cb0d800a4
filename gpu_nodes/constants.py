"""Names and figures more than one layer shares: object names, the RuntimeClass, limits.

A section's own defaults and allowed values are declared in its module (gpu_nodes/config/); the
keys of the marks on the cluster are in gpu_nodes/vocabulary.py.
"""

from __future__ import annotations

NAMESPACE = "gpu-nodes"

# The verification pods' own, non-preempting PriorityClass is named after the group's.
VERIFICATION_PRIORITY_SUFFIX = "-verification"

# The RuntimeClass the device plugin and verification pods run under, as the GPU Operator
# names it; its handler is the runtime name `nvidia-ctk runtime configure` writes.
DEFAULT_RUNTIME_CLASS = "nvidia"
RUNTIME_HANDLER = "nvidia"

# The Secret the stack creates in each namespace it uses from gpu-nodes:imagePullSecret.
PULL_SECRET_NAME = "gpu-nodes-pull"
# A GPU splits into at most seven MIG devices (the smallest profile is 1/7 of an A100/H100).
MAX_MIG_DEVICES_PER_GPU = 7
