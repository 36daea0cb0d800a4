"""What a stack asks for: typed, immutable specs, each config field declared once beside its spec field.

A spec field that comes from stack config carries its `setting(...)` (key, type, default,
check, help); gpu_nodes/config/parse.py reads config by those declarations and the README's
tables are tested against them. Adding an optional field to a section is its declaration
here plus its use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpu_nodes.config.fields import BOOLEAN, INTEGER, LIST, OBJECT, SCALAR, STRING, Check, between, one_of, setting
from gpu_nodes.config.k8s_syntax import image_tag, is_dns_label, is_dns_subdomain
from gpu_nodes.config.preflight_spec import PreflightSpec
from gpu_nodes.config.spec_checks import (
    CDI_HOOK,
    CUDA_IN_TAG,
    DIRECTORY,
    GPU_MODEL,
    HOST_KEY,
    PORT,
    SSH_HOST,
    SSH_USER,
    count_or_percent,
    image_setting,
    namespace_setting,
    pull_policy_setting,
)
from gpu_nodes.constants import (
    DEFAULT_CDI_HOOK_PATH,
    DEFAULT_CUDA_IMAGE,
    DEFAULT_DEVICE_PLUGIN_IMAGE,
    DEFAULT_DEVICE_PLUGIN_NAMESPACE,
    DEFAULT_LABELS,
    DEFAULT_PRIORITY_VALUE,
    DEFAULT_TAINTS,
    DEFAULT_VERIFICATION_IMAGE,
    DEFAULT_VERIFICATION_NAMESPACE,
    DEFAULT_VERIFICATION_TIMEOUT,
    GPU_ACCESS,
    ISOLATION,
    MAX_PRIORITY_CLASS_NAME,
    MAX_USER_PRIORITY,
    MIG_STRATEGIES,
    MIN_PRIORITY,
    VERIFICATION_PRIORITY_SUFFIX,
)
from gpu_nodes.vocabulary import GPU_RESOURCE, GROUP_LABEL, Taint, mig_resource


@dataclass(frozen=True)
class NodeSpec:
    name: str = setting(
        "name",
        STRING,
        "string",
        "the Kubernetes node name",
        check=Check(is_dns_subdomain, "expected a Kubernetes node name (DNS-1123 subdomain)"),
        row=False,
    )
    # The SSH fields are required where preflight runs (config.py says so when reading them).
    ssh_host: str | None = setting(
        "sshHost",
        STRING,
        "string",
        "address of the machine: a host name or an IP address",
        default=None,
        default_text="required with preflight",
        check=SSH_HOST,
    )
    ssh_port: int = setting("sshPort", INTEGER, "int", "SSH port", default=22, check=PORT)
    ssh_user: str | None = setting(
        "sshUser",
        STRING,
        "string",
        'SSH user: `root` (see "Privileges")',
        default=None,
        default_text="required with preflight",
        check=SSH_USER,
    )
    host_key: str | None = setting(
        "hostKey",
        STRING,
        "string",
        "the machine's public ed25519 or ecdsa host key, `ssh-ed25519 AAAA...` (`ssh-keyscan -t ed25519 HOST`)",
        default=None,
        default_text="required with preflight",
        check=HOST_KEY,
    )


@dataclass(frozen=True)
class DevicePluginSpec:
    image: str = image_setting("pinned by tag (not `latest`) or digest", DEFAULT_DEVICE_PLUGIN_IMAGE)
    namespace: str = namespace_setting(
        "shared by groups; Pod Security `privileged` (the plugin mounts hostPath)", DEFAULT_DEVICE_PLUGIN_NAMESPACE
    )
    mig_strategy: str = setting(
        "migStrategy",
        STRING,
        "`none`/`single`/`mixed`",
        'the plugin\'s MIG strategy; `mixed` needs `verification.migResources` (see "MIG")',
        default="none",
        check=one_of(MIG_STRATEGIES),
    )
    time_slicing_replicas: int = setting(
        "timeSlicingReplicas",
        INTEGER,
        "int 1-64",
        "share each GPU N ways",
        default=1,
        default_text="`1` (off)",
        check=between(1, 64, "expected 1 (time-slicing off) to 64"),
    )
    fail_on_init_error: bool = setting(
        "failOnInitError", BOOLEAN, "bool", "the plugin's own default: exit when no GPU can be initialised", default=True
    )
    # Per GPU, as nvidia-mig-parted's `mig-devices` under `devices: all` (profile -> count).
    mig_devices: tuple[tuple[str, int], ...] = setting(
        "migDevices",
        OBJECT,
        "map",
        'the MIG devices each GPU is split into, e.g. `{"1g.10gb": 7}`: the readiness then checks their exact count (see "MIG")',
        default=None,
        default_text="the count is not checked",
    )
    tolerations: tuple[dict[str, Any], ...] = setting(
        "tolerations",
        LIST,
        "list",
        "more tolerations for the plugin's pods, beside the group's taints and the gate, e.g. "
        "`[{key: example.com/dedicated, operator: Exists}]`",
        default=None,
        default_text="none",
    )
    resources: dict[str, dict[str, str]] = setting(
        "resources",
        OBJECT,
        "object",
        "the plugin container's `requests` and `limits`, e.g. `{requests: {cpu: 50m, memory: 64Mi}}`",
        default=None,
        default_text="none (upstream's)",
    )
    health_checks: bool = setting(
        "healthChecks",
        BOOLEAN,
        "bool",
        "the plugin's XID health checks; `false` (`DP_DISABLE_HEALTHCHECKS=all`) for passthrough or vGPU hosts",
        default=True,
    )
    image_pull_policy: str | None = pull_policy_setting("the plugin's")
    max_unavailable: int | str | None = setting(
        "maxUnavailable",
        SCALAR,
        "int ≥ 1, or `N%`",
        "how many nodes' plugin pods a rollout replaces at once (the DaemonSet's `maxUnavailable`)",
        default=None,
        default_text="`1` (Kubernetes')",
        check=Check(count_or_percent, "expected a whole number of at least 1, or a percentage from 1% to 100%"),
    )
    ignored_xids: tuple[int, ...] = setting(
        "ignoredXids",
        LIST,
        "list of ints",
        "XIDs that do not make a GPU unhealthy, beside the plugin's own list (`DP_DISABLE_HEALTHCHECKS=109,...`)",
        default=None,
        default_text="none",
    )
    driver_root: str = setting(
        "driverRoot",
        STRING,
        "absolute path",
        "where the NVIDIA driver is installed on the machines: `/`, or `/run/nvidia/driver` where the driver runs in "
        "a container (the GPU Operator's); with `gpuAccess: cdi` it is mounted at `/driver-root` for the plugin's "
        'CDI specs (see "How tenants get their GPUs")',
        default="/",
        check=DIRECTORY,
    )
    cdi_hook_path: str = setting(
        "cdiHookPath",
        STRING,
        "absolute path",
        "with `gpuAccess: cdi`: the `nvidia-ctk` (or `nvidia-cdi-hook`) on the machines that the CDI specs' hooks "
        "run; preflight checks each machine has it",
        default=DEFAULT_CDI_HOOK_PATH,
        check=CDI_HOOK,
    )

    def mig_allocatable(self, gpus_per_node: int) -> dict[str, int] | None:
        """What each node offers under the declared MIG layout; None when none is declared."""
        if self.mig_strategy == "none" or not self.mig_devices:
            return None
        if self.mig_strategy == "single":
            # One profile: every MIG device is one nvidia.com/gpu, shared like a whole GPU.
            return {GPU_RESOURCE: gpus_per_node * sum(n for _, n in self.mig_devices) * self.time_slicing_replicas}
        return {mig_resource(profile): gpus_per_node * n for profile, n in self.mig_devices}

    @property
    def needs_config_file(self) -> bool:
        return self.mig_strategy != "none" or self.time_slicing_replicas > 1


@dataclass(frozen=True)
class PriorityClassSpec:
    name: str = setting(
        "name",
        STRING,
        "string",
        "not `system-*`, at most 240 characters: `<name>-verification` is created too",
        default=None,  # gpu-<group>, given by the group
        default_text="`gpu-<group>`",
        check=Check(
            lambda n: is_dns_subdomain(n) and not n.startswith("system-") and len(n) <= MAX_PRIORITY_CLASS_NAME,
            f"expected a DNS-1123 subdomain not starting with 'system-' (reserved), at most {MAX_PRIORITY_CLASS_NAME} "
            f"characters (the verification class adds {VERIFICATION_PRIORITY_SUFFIX!r})",
        ),
    )
    value: int = setting(
        "value",
        INTEGER,
        "int",
        "at most 1000000000 (above is reserved for system classes)",
        default=DEFAULT_PRIORITY_VALUE,
        check=between(
            MIN_PRIORITY,
            MAX_USER_PRIORITY,
            f"expected {MIN_PRIORITY} to {MAX_USER_PRIORITY} (higher values are reserved for system classes)",
        ),
    )


@dataclass(frozen=True)
class VerificationSpec:
    image: str = image_setting("pinned image with `nvidia-smi`", DEFAULT_VERIFICATION_IMAGE)
    cuda_image: str = image_setting(
        "pinned image whose own command runs a CUDA kernel (NVIDIA's CUDA sample `vectorAdd`), after `nvidia-smi`; "
        'the `cudaX.Y` in its tag is the CUDA version preflight weighs against the driver and the toolkit mode (see "CUDA")',
        DEFAULT_CUDA_IMAGE,
        key="cudaImage",
    )
    namespace: str = namespace_setting("shared by groups; Pod Security `restricted`", DEFAULT_VERIFICATION_NAMESPACE)
    gpus_per_pod: tuple[int, ...] = setting(
        "gpusPerPod",
        LIST,
        "list of int",
        "one Job per count requesting `nvidia.com/gpu`; `[1, 2]` adds a multi-GPU check; each ≤ `gpusPerNode` "
        "(≤ 7 × `gpusPerNode` with `migStrategy: single`); may be `[]` when `migResources` is set",
        default=[1],
    )
    # With migStrategy mixed: (resource, count) pairs, e.g. ("nvidia.com/mig-1g.5gb", 1).
    mig_resources: tuple[tuple[str, int], ...] = setting(
        "migResources",
        OBJECT,
        "map",
        "only with `migStrategy: mixed`, and then required: MIG resource → devices per Job, e.g. "
        '`{"nvidia.com/mig-1g.5gb": 1}`; one Job per resource, each count ≤ 7 × `gpusPerNode`',
        default=None,
    )
    per_node: bool = setting(
        "perNode",
        BOOLEAN,
        "bool",
        "one Job per node and count, pinned to that node; `false`: per count, any node of the group",
        default=True,
    )
    timeout_seconds: int = setting(
        "timeoutSeconds",
        INTEGER,
        "int 30-86400",
        "how long `pulumi up` waits for each Job (also its `activeDeadlineSeconds`) and for each node's GPU count to be exact",
        default=DEFAULT_VERIFICATION_TIMEOUT,
        check=between(30, 86_400, "expected 30 to 86400 seconds"),
    )
    image_pull_policy: str | None = pull_policy_setting("the verification pods'")

    @property
    def cuda_version(self) -> str | None:
        """The CUDA version the CUDA image is built for, from its tag (`vectoradd-cuda11.7.1` -> 11.7)."""
        found = CUDA_IN_TAG.search(image_tag(self.cuda_image))
        return f"{int(found[1])}.{int(found[2])}" if found else None


@dataclass(frozen=True)
class NodeGroupSpec:
    name: str = setting(
        "name",
        STRING,
        "string",
        "DNS-1123 label; names the group's objects and its node label value",
        check=Check(is_dns_label, "expected a DNS-1123 label: lowercase letters, digits and '-', at most 63 characters"),
    )
    nodes: tuple[NodeSpec, ...] = setting(
        "nodes",
        LIST,
        "list",
        "`{name, sshHost, sshPort, sshUser, hostKey}`; `name` is the Kubernetes node name; a node may belong to one group only",
        default_text="required, at least one",
        section=NodeSpec,
    )
    gpus_per_node: int = setting(
        "gpusPerNode",
        INTEGER,
        "int ≥ 1",
        "GPUs each node must expose",
        check=Check(lambda n: n >= 1, "expected at least 1"),
    )
    labels: tuple[tuple[str, str], ...] = setting(
        "labels",
        OBJECT,
        "map",
        "labels for every node (a map given here replaces the default); `gpu-nodes.dev/node-group` is added; keys under "
        "`kubernetes.io/`, `k8s.io/` (and their subdomains) and `gpu-nodes.dev/` are reserved",
        default=DEFAULT_LABELS,
        default_text='`{accelerator: nvidia, nvidia.com/gpu.present: "true"}`',
    )
    taints: tuple[Taint, ...] = setting(
        "taints",
        LIST,
        "list of strings",
        "`kubectl taint` syntax `key[=value]:Effect`; the same keys are reserved as for labels (the gate "
        "`gpu-nodes.dev/unverified` is the stack's own)",
        default=list(DEFAULT_TAINTS),
    )
    device_plugin: DevicePluginSpec = setting(
        "devicePlugin", OBJECT, "object", "", default={}, row=False, section=DevicePluginSpec
    )
    priority_class: PriorityClassSpec = setting(
        "priorityClass", OBJECT, "object", "", default={}, row=False, section=PriorityClassSpec
    )
    verification: VerificationSpec = setting(
        "verification", OBJECT, "object", "", default={}, row=False, section=VerificationSpec
    )
    preflight: PreflightSpec = setting("preflight", OBJECT, "object", "", default={}, row=False, section=PreflightSpec)
    gpu_access: str = setting(
        "gpuAccess",
        STRING,
        "`defaultRuntime`/`runtimeClass`/`cdi`",
        "how a tenant's pod gets its GPUs, and so what preflight requires and how the verification pods run: "
        "nvidia as the default runtime; a RuntimeClass tenants must name (`gpu-nodes:runtimeClass`); or CDI "
        '(the plugin\'s `cdi-cri` strategy). See "How tenants get their GPUs"',
        default="defaultRuntime",
        check=one_of(GPU_ACCESS),
    )
    isolation: str = setting(
        "isolation",
        STRING,
        "`default`/`strict`",
        "whether a pod may see GPUs it was not given: `default` keeps the container toolkit as it ships (a pod "
        "that sets `NVIDIA_VISIBLE_DEVICES=all`, as CUDA images do, sees every GPU under the nvidia runtime); "
        "`strict` needs NVIDIA's hardened toolkit settings, which preflight checks, and proves that a pod given no "
        'GPU sees none. See "How tenants get their GPUs"',
        default="default",
        check=one_of(ISOLATION),
    )
    gpu_model: str | None = setting(
        "gpuModel",
        STRING,
        "string",
        "the GPU model every node must have, as `nvidia-smi` names it (`NVIDIA H100 80GB HBM3`); without it the "
        'group\'s nodes must agree with each other (see "GPU facts")',
        default=None,
        default_text="most nodes' model",
        check=GPU_MODEL,
    )
    gpu_feature_labels: bool = setting(
        "gpuFeatureLabels",
        BOOLEAN,
        "bool",
        "label each node with GPU Feature Discovery's keys (`nvidia.com/gpu.product`, ...) from preflight's facts; "
        "turn off where GFD itself runs",
        default=True,
    )
    # The stack's RuntimeClass (per stack), which the device plugin names; None: there is none.
    runtime_class: str | None = None
    # The pull secret every pod of the group names (gpu-nodes:imagePullSecret); None: none.
    image_pull_secret: str | None = None

    @property
    def tenant_runtime_class(self) -> str | None:
        """The RuntimeClass a tenant's GPU pod must name: only with gpuAccess runtimeClass."""
        return self.runtime_class if self.gpu_access == "runtimeClass" else None

    @property
    def node_labels(self) -> dict[str, str]:
        """Every label this group puts on its nodes, the group label included."""
        return {**dict(self.labels), GROUP_LABEL: self.name}
