"""The typed inputs a program passes, written by gpu_nodes/package/generate.py from the field declarations: do
not edit.

They type `GpuFleetArgs`' groups in a Python program (gpu_nodes/resources/fleet.py) and the component package's
inputs, from which the SDK infers the schema every language's SDK is generated from (gpu_nodes/package/
components.py). Keys are the stack config's own (camelCase, as the schema and every SDK spell them), in
Python as in any language, so that docs/configuration.md's tables are the reference of each; the fleet's own
arguments (`GpuFleetInputs`) are `GpuFleetArgs`' (snake case, as Pulumi's Python SDKs name a property).
"""

from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypeAlias, TypedDict

import pulumi


class Strategy(StrEnum):
    "What `strategy` takes: `timeSlicing`, `mps`."

    TIME_SLICING = "timeSlicing"
    MPS = "mps"


class MigStrategy(StrEnum):
    "What `migStrategy` takes: `none`, `single`, `mixed`."

    NONE = "none"
    SINGLE = "single"
    MIXED = "mixed"


class ImagePullPolicy(StrEnum):
    "What `imagePullPolicy` takes: `Always`, `IfNotPresent`, `Never`."

    ALWAYS = "Always"
    IF_NOT_PRESENT = "IfNotPresent"
    NEVER = "Never"


class DeviceIdStrategy(StrEnum):
    "What `deviceIdStrategy` takes: `uuid`, `index`."

    UUID = "uuid"
    INDEX = "index"


class AllocationPolicy(StrEnum):
    "What `allocationPolicy` takes: `distributed`, `packed`."

    DISTRIBUTED = "distributed"
    PACKED = "packed"


class DeviceDiscoveryStrategy(StrEnum):
    "What `deviceDiscoveryStrategy` takes: `auto`, `nvml`, `tegra`."

    AUTO = "auto"
    NVML = "nvml"
    TEGRA = "tegra"


class ContainerRuntime(StrEnum):
    "What `containerRuntime` takes: `containerd`, `docker`, `cri-o`, `k3s`, `rke2`, `auto`."

    CONTAINERD = "containerd"
    DOCKER = "docker"
    CRI_O = "cri-o"
    K3S = "k3s"
    RKE2 = "rke2"
    AUTO = "auto"


class DriverAdvisories(StrEnum):
    "What `driverAdvisories` takes: `warn`, `refuse`."

    WARN = "warn"
    REFUSE = "refuse"


class Become(StrEnum):
    "What `become` takes: `sudo`."

    SUDO = "sudo"


class GpuAccess(StrEnum):
    "What `gpuAccess` takes: `defaultRuntime`, `runtimeClass`, `cdi`."

    DEFAULT_RUNTIME = "defaultRuntime"
    RUNTIME_CLASS = "runtimeClass"
    CDI = "cdi"


class Isolation(StrEnum):
    "What `isolation` takes: `default`, `strict`."

    DEFAULT = "default"
    STRICT = "strict"


class Allocator(StrEnum):
    "What `allocator` takes: `devicePlugin`, `dra`."

    DEVICE_PLUGIN = "devicePlugin"
    DRA = "dra"


class ContainerToolkit(StrEnum):
    "What `containerToolkit` takes: `runtime`, `nri`."

    RUNTIME = "runtime"
    NRI = "nri"


class TolerationOperator(StrEnum):
    "How a toleration matches a taint: by its value, or any value."

    EQUAL = "Equal"
    EXISTS = "Exists"


class TaintEffect(StrEnum):
    "What a taint does to the pods that do not tolerate it."

    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


if TYPE_CHECKING:
    StrategyOrWord: TypeAlias = Strategy | Literal["timeSlicing", "mps"]
    MigStrategyOrWord: TypeAlias = MigStrategy | Literal["none", "single", "mixed"]
    ImagePullPolicyOrWord: TypeAlias = ImagePullPolicy | Literal["Always", "IfNotPresent", "Never"]
    DeviceIdStrategyOrWord: TypeAlias = DeviceIdStrategy | Literal["uuid", "index"]
    AllocationPolicyOrWord: TypeAlias = AllocationPolicy | Literal["distributed", "packed"]
    DeviceDiscoveryStrategyOrWord: TypeAlias = DeviceDiscoveryStrategy | Literal["auto", "nvml", "tegra"]
    ContainerRuntimeOrWord: TypeAlias = ContainerRuntime | Literal["containerd", "docker", "cri-o", "k3s", "rke2", "auto"]
    DriverAdvisoriesOrWord: TypeAlias = DriverAdvisories | Literal["warn", "refuse"]
    BecomeOrWord: TypeAlias = Become | Literal["sudo"]
    GpuAccessOrWord: TypeAlias = GpuAccess | Literal["defaultRuntime", "runtimeClass", "cdi"]
    IsolationOrWord: TypeAlias = Isolation | Literal["default", "strict"]
    AllocatorOrWord: TypeAlias = Allocator | Literal["devicePlugin", "dra"]
    ContainerToolkitOrWord: TypeAlias = ContainerToolkit | Literal["runtime", "nri"]
    TolerationOperatorOrWord: TypeAlias = TolerationOperator | Literal["Equal", "Exists"]
    TaintEffectOrWord: TypeAlias = TaintEffect | Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    MaxUnavailableValue: TypeAlias = int | str
    EnabledXidsValue: TypeAlias = list[int] | Literal["all"]
    DiagnosticsValue: TypeAlias = Literal["off", 1, 2, 3]
else:
    StrategyOrWord = Strategy
    MigStrategyOrWord = MigStrategy
    ImagePullPolicyOrWord = ImagePullPolicy
    DeviceIdStrategyOrWord = DeviceIdStrategy
    AllocationPolicyOrWord = AllocationPolicy
    DeviceDiscoveryStrategyOrWord = DeviceDiscoveryStrategy
    ContainerRuntimeOrWord = ContainerRuntime
    DriverAdvisoriesOrWord = DriverAdvisories
    BecomeOrWord = Become
    GpuAccessOrWord = GpuAccess
    IsolationOrWord = Isolation
    AllocatorOrWord = Allocator
    ContainerToolkitOrWord = ContainerToolkit
    TolerationOperatorOrWord = TolerationOperator
    TaintEffectOrWord = TaintEffect
    MaxUnavailableValue = Any
    EnabledXidsValue = Any
    DiagnosticsValue = Any


class Toleration(TypedDict):
    "A toleration of the device plugin's pods, as a pod spec takes it (Kubernetes' core/v1 Toleration)."

    key: NotRequired[str]
    "The taint key it tolerates; without one, operator `Exists` tolerates every taint."
    operator: NotRequired[TolerationOperatorOrWord]
    "`Equal`: the taint's value is `value`; `Exists`: any value. Default: `Equal`."
    value: NotRequired[str]
    "The taint value it tolerates, with operator `Equal`."
    effect: NotRequired[TaintEffectOrWord]
    "The taint effect it tolerates. Default: every effect."
    tolerationSeconds: NotRequired[int]
    "With effect `NoExecute`: how long a pod stays once the taint is put on. Default: for ever."


class ResourceRequirements(TypedDict):
    "A container's resources, as a pod spec takes them: `cpu`, `memory`, `ephemeral-storage`."

    requests: NotRequired[dict[str, str]]
    "What the container is given, each a quantity: `{cpu: 50m, memory: 64Mi}`."
    limits: NotRequired[dict[str, str]]
    "What it may use at most, each a quantity at least its request."


class Node(TypedDict):
    "One machine, already joined to the cluster as a node."

    name: str
    "The Kubernetes node name."
    sshHost: NotRequired[pulumi.Input[str]]
    (
        "Address of the machine: a host name or an IP address; from a program, may be another resource's "
        "output, checked when it resolves. Required with preflight."
    )
    sshPort: NotRequired[pulumi.Input[int]]
    "SSH port; from a program, may be another resource's output, checked when it resolves. Default: `22`."
    sshUser: NotRequired[pulumi.Input[str]]
    (
        "SSH user: `root` (see \"Privileges\"); from a program, may be another resource's output, checked when "
        "it resolves. Required with preflight."
    )
    hostKey: NotRequired[pulumi.Input[str]]
    (
        "The machine's public ed25519 or ecdsa host key, `ssh-ed25519 AAAA...` (`ssh-keyscan -t ed25519 "
        "HOST`); from a program, may be another resource's output, checked when it resolves. Required with "
        "preflight."
    )


class Sharing(TypedDict):
    "How the device plugin shares each GPU: time-slicing or MPS, and how many ways."

    strategy: NotRequired[StrategyOrWord]
    (
        "CUDA time-slicing (no isolation between the pods sharing a GPU), or CUDA MPS: the plugin's MPS "
        "control daemon runs on each node and gives each pod an equal share of the GPU's memory and compute "
        "(see \"Sharing a GPU\"). Default: `timeSlicing`."
    )
    replicas: int
    "How many pods share each GPU: the node offers `gpusPerNode` x replicas; with `timeSlicing`, 1 is off."
    renameByDefault: NotRequired[bool]
    (
        "Advertise the replicas as `nvidia.com/gpu.shared`, which tenants' pods then ask for, in place of "
        "`nvidia.com/gpu`. Default: `false`."
    )
    failRequestsGreaterThanOne: NotRequired[bool]
    (
        "The plugin refuses a container that asks for more than one replica (its pod fails with "
        "`UnexpectedAdmissionError`); `false` under `mps` needs plugin v0.20.0. Default: `false`; `true` with"
        " `mps`."
    )


class Imex(TypedDict):
    "The IMEX channels the device plugin adds to each container it gives GPUs."

    channelIds: NotRequired[list[int]]
    (
        "The IMEX channels the plugin adds to each container it gives GPUs (`IMEX_CHANNEL_IDS`): `[]` or "
        "`[0]`, for jobs across the machines of an NVLink domain; needs `nvlinkDomain` (see \"IMEX and NVLink "
        "domains\"). Default: `[]` (none)."
    )
    required: NotRequired[bool]
    (
        "The plugin refuses to start on a machine without the channel, rather than leave it out "
        "(`IMEX_REQUIRED`). Default: `false`."
    )


class DevicePlugin(TypedDict):
    "The group's NVIDIA device plugin DaemonSet."

    image: NotRequired[str]
    (
        "Pinned by tag (not `latest`) or digest; a release NVIDIA's advisories name for the strategy the "
        "group uses is refused unless `acceptAdvisories` names its CVEs (see \"Device plugin advisories\"). "
        "Default: `nvcr.io/nvidia/k8s-device-plugin:v0.20.1`."
    )
    acceptAdvisories: NotRequired[list[str]]
    (
        "NVIDIA's device plugin advisories accepted as a risk for this group's `image`, e.g. "
        "`[CVE-2025-23266, CVE-2025-23267]`: a plugin open only to these is deployed, and a warning names "
        "them. Default: none."
    )
    namespace: NotRequired[str]
    "Shared by groups; Pod Security `privileged` (the plugin mounts hostPath). Default: `nvidia-device-plugin`."
    migStrategy: NotRequired[MigStrategyOrWord]
    "The plugin's MIG strategy; `mixed` needs `verification.migResources` (see \"MIG\"). Default: `none`."
    timeSlicingReplicas: NotRequired[int]
    (
        "Share each GPU N ways by time-slicing: the older spelling of `sharing: {strategy: timeSlicing, "
        "replicas: N}`. Default: `1` (off)."
    )
    sharing: NotRequired[Sharing]
    (
        "How the device plugin shares each GPU: time-slicing or MPS, and how many ways. Default: what "
        "`timeSlicingReplicas` says (off)."
    )
    failOnInitError: NotRequired[bool]
    "The plugin's own default: exit when no GPU can be initialised. Default: `true`."
    migDevices: NotRequired[dict[str, int]]
    (
        "The MIG devices each GPU is split into, e.g. `{\"1g.10gb\": 7}`: preflight counts them on each GPU and"
        " the readiness checks the exact count (see \"MIG\"). Default: the count is not checked."
    )
    tolerations: NotRequired[list[Toleration]]
    (
        "More tolerations for the plugin's pods, beside the group's taints and the gate, e.g. `[{key: "
        "example.com/dedicated, operator: Exists}]`. Default: none."
    )
    resources: NotRequired[ResourceRequirements]
    (
        "The plugin container's `requests` and `limits`, e.g. `{requests: {cpu: 50m, memory: 64Mi}}`. "
        "Default: none (upstream's)."
    )
    healthChecks: NotRequired[bool]
    (
        "The plugin's XID health checks; `false` (`DP_DISABLE_HEALTHCHECKS=all`) for passthrough or vGPU "
        "hosts; under allocator `dra`, the DRA driver's, on where the cluster keeps device taints (see "
        "\"DRA\"). Default: `true`."
    )
    imagePullPolicy: NotRequired[ImagePullPolicyOrWord]
    (
        "The plugin's `imagePullPolicy`; `Never` or `IfNotPresent` where images are loaded onto the machines "
        "(air-gapped). Default: Kubernetes' (`IfNotPresent` for a tag)."
    )
    maxUnavailable: NotRequired[MaxUnavailableValue]
    (
        "How many nodes' plugin pods a rollout replaces at once (the DaemonSet's `maxUnavailable`). Default: "
        "`1` (Kubernetes')."
    )
    ignoredXids: NotRequired[list[int]]
    (
        "XIDs that do not make a GPU unhealthy, beside the plugin's own list "
        "(`DP_DISABLE_HEALTHCHECKS=109,...`). Default: none."
    )
    enabledXids: NotRequired[EnabledXidsValue]
    (
        "XIDs that make a GPU unhealthy although the plugin's own list ignores them (13, 31, 43, 45, 68, 109)"
        " or `ignoredXids` would; `all` for every XID (`DP_ENABLE_HEALTHCHECKS`, plugin v0.18+). Default: "
        "none."
    )
    driverRoot: NotRequired[str]
    (
        "Where the NVIDIA driver is installed on the machines: `/`, or `/run/nvidia/driver` where the driver "
        "runs in a container (the GPU Operator's); with `gpuAccess: cdi` it is mounted at `/driver-root` for "
        "the plugin's CDI specs (see \"How tenants get their GPUs\"). Default: `/`."
    )
    pauseForMigManager: NotRequired[bool]
    (
        "Step off a node while NVIDIA's MIG manager (the GPU Operator's) reconfigures its GPUs, as the "
        "Operator's own plugin does, and come back after "
        "(`nvidia.com/gpu.deploy.device-plugin=paused-for-mig-change`; see \"Beside the GPU Operator\"). "
        "Default: `false`."
    )
    cdiHookPath: NotRequired[str]
    (
        "With `gpuAccess: cdi`: the `nvidia-ctk` (or `nvidia-cdi-hook`) on the machines that the CDI specs' "
        "hooks run; preflight checks each machine has it. Default: `/usr/bin/nvidia-ctk`."
    )
    deviceIdStrategy: NotRequired[DeviceIdStrategyOrWord]
    (
        "How the plugin names the GPUs it hands a container (`DEVICE_ID_STRATEGY`): by `uuid`, or by `index` "
        "where a GPU has no UUID the runtime can name (NVIDIA's Tegra parts). Default: `uuid` (the plugin's)."
    )
    allocationPolicy: NotRequired[AllocationPolicyOrWord]
    (
        "How the plugin picks among shared replicas and MIG devices: spread over the GPUs, or packed onto the"
        " fewest (`SHARED_DEVICES_ALLOCATION_POLICY`); only with sharing or MIG. Default: the plugin's "
        "(`distributed`)."
    )
    cdiFeatureFlags: NotRequired[list[str]]
    (
        "Features of the CDI specs the plugin writes, e.g. `[disable-ipc-discoverer]` (`CDI_FEATURE_FLAGS`); "
        "only with `gpuAccess: cdi`. Default: none."
    )
    cdiDisableHooks: NotRequired[list[str]]
    (
        "Hooks left out of the CDI specs the plugin writes, e.g. `[enable-cuda-compat]`, or `[all]` "
        "(`CDI_DISABLE_HOOKS`); only with `gpuAccess: cdi`. Default: none."
    )
    deviceDiscoveryStrategy: NotRequired[DeviceDiscoveryStrategyOrWord]
    (
        "How the plugin finds the GPUs (`DEVICE_DISCOVERY_STRATEGY`): NVML for data-center GPUs, tegra for "
        "integrated ones. Default: the plugin's (`auto`)."
    )
    imex: NotRequired[Imex]
    "The IMEX channels the device plugin adds to each container it gives GPUs. Default: `{}`."


class PriorityClass(TypedDict):
    "The PriorityClass of the group's GPU workloads."

    name: NotRequired[str]
    "Not `system-*`, at most 240 characters: `<name>-verification` is created too. Default: `gpu-<group>`."
    value: NotRequired[int]
    "At most 1000000000 (above is reserved for system classes). Default: `1000000`."


class Performance(TypedDict):
    "Intra-node NCCL all-reduce on each node, held to a bus-bandwidth floor."

    enabled: NotRequired[bool]
    (
        "Run nccl-tests' `all_reduce_perf` on each node of two GPUs or more, holding all its GPUs, and hold "
        "its bus bandwidth to the floor (see \"The proof\"). Default: `false`."
    )
    minBusBandwidth: NotRequired[float]
    (
        "The floor of the all-reduce bus bandwidth (`busbw`, out of place, at the largest size), in GB/s; "
        "without it, the floor NVIDIA's and the clouds' figures give for the node's GPU model and count "
        "(gpu_nodes/bandwidth_floors.py). Default: from the GPU model."
    )
    image: NotRequired[str]
    (
        "Pinned image with nccl-tests' `all_reduce_perf_mpi` and Open MPI's `mpirun` (NVIDIA's NGC PyTorch "
        "image). Default: `nvcr.io/nvidia/pytorch:25.06-py3`."
    )


class Verification(TypedDict):
    "The verification Jobs that prove the group's GPUs as a tenant's pod gets them."

    image: NotRequired[str]
    "Pinned image with `nvidia-smi`. Default: `nvcr.io/nvidia/cuda:13.0.3-base-ubuntu24.04`."
    cudaImage: NotRequired[str]
    (
        "Pinned image whose own command runs a CUDA kernel (NVIDIA's CUDA sample `vectorAdd`), after "
        "`nvidia-smi`; the `cudaX.Y` in its tag is the CUDA version preflight weighs against the driver and "
        "the toolkit mode (see \"CUDA\"). Default: "
        "`nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04`."
    )
    namespace: NotRequired[str]
    "Shared by groups; Pod Security `restricted`. Default: `gpu-verification`."
    gpusPerPod: NotRequired[list[int]]
    (
        "One Job per count requesting `nvidia.com/gpu`; `[1, 2]` adds a multi-GPU check; each ≤ `gpusPerNode`"
        " (≤ 7 × `gpusPerNode` with `migStrategy: single`); may be `[]` when `migResources` or "
        "`dra.migProfiles` is set. Default: `[1]`."
    )
    migResources: NotRequired[dict[str, int]]
    (
        "Only with `migStrategy: mixed`, and then required: MIG resource → devices per Job, e.g. "
        "`{\"nvidia.com/mig-1g.5gb\": 1}`; one Job per resource, each count ≤ 7 × `gpusPerNode`. Default: none."
    )
    perNode: NotRequired[bool]
    "One Job per node and count, pinned to that node; `false`: per count, any node of the group. Default: `true`."
    timeoutSeconds: NotRequired[int]
    (
        "How long `pulumi up` waits for each Job (also its `activeDeadlineSeconds`) and for each node's GPU "
        "count to be exact. Default: `600`."
    )
    imagePullPolicy: NotRequired[ImagePullPolicyOrWord]
    (
        "The verification pods' `imagePullPolicy`; `Never` or `IfNotPresent` where images are loaded onto the"
        " machines (air-gapped). Default: Kubernetes' (`IfNotPresent` for a tag)."
    )
    diagnostics: NotRequired[DiagnosticsValue]
    (
        "The level of NVIDIA's DCGM diagnostics (`dcgmi diag -r <level>`) each node runs, in a pod holding "
        "all its GPUs, before its gate lifts: 1 the deployment checks (seconds), 2 also PCIe and memory "
        "(about two minutes), 3 the long hardware and stress tests (about 15 minutes); `off` on a MIG or MPS "
        "group (see \"The proof\"). Default: `1` (`off` where no pod can hold the GPUs whole)."
    )
    diagnosticsImage: NotRequired[str]
    (
        "Pinned image of NVIDIA's DCGM with `dcgmi`: a release past NVIDIA's DCGM bulletins (4.5.3 or later)."
        " Default: `nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04`."
    )
    performance: NotRequired[Performance]
    "Intra-node NCCL all-reduce on each node, held to a bus-bandwidth floor. Default: `{}`."
    plainImage: NotRequired[str]
    (
        "Pinned image without NVIDIA's variables, with `/bin/sh` and `ls`: the containers that ask for no GPU"
        " and must see none (see \"The proof\"). Default: `docker.io/library/ubuntu:22.04`."
    )


class SshProxy(TypedDict):
    "A bastion the machines are reached through."

    host: pulumi.Input[str]
    "The bastion's address; from a program, may be another resource's output, checked when it resolves."
    port: NotRequired[pulumi.Input[int]]
    "Its SSH port; from a program, may be another resource's output, checked when it resolves. Default: `22`."
    user: pulumi.Input[str]
    "Its SSH user; from a program, may be another resource's output, checked when it resolves."
    hostKey: NotRequired[pulumi.Input[str]]
    (
        "Its public host key; from a program, may be another resource's output, checked when it resolves. "
        "Default: none."
    )


class Preflight(TypedDict):
    "The checks run on each machine over SSH before it is brought in."

    enabled: NotRequired[bool]
    "Run the SSH checks before bringing a node in. Default: `true`."
    containerRuntime: NotRequired[ContainerRuntimeOrWord]
    (
        "Which runtime's nvidia configuration to check; `docker` is Docker behind cri-dockerd; `k3s`/`rke2` "
        "read their own containerd config under `/var/lib/rancher/<name>/agent/etc/containerd`; `auto` "
        "follows kubelet's `--container-runtime-endpoint` (or `containerRuntimeEndpoint`), then the CRI "
        "socket that listens. Default: `containerd`."
    )
    maxSessions: NotRequired[int]
    (
        "Machines of the group checked at once, each over one SSH connection at a time (the copy, then the "
        "command); the default stays within a stock sshd's `MaxStartups`, also on a bastion. Default: `10`."
    )
    minDriver: NotRequired[str]
    "Minimum driver version, e.g. `\"550.54\"`. Default: none."
    driverAdvisories: NotRequired[DriverAdvisoriesOrWord]
    (
        "A driver open to one of NVIDIA's display-driver security bulletins, or on a branch NVIDIA no longer "
        "patches, is named per node as a warning; `refuse` keeps such machines out (see \"Driver advisories\")."
        " Default: `warn`."
    )
    minToolkit: NotRequired[str]
    (
        "A minimum NVIDIA Container Toolkit (`nvidia-ctk --version`) above the floor NVIDIA's advisories set;"
        " one below it is refused unless `acceptToolkitAdvisories` names every CVE it lets in (see \"Toolkit "
        "advisories\"). Default: `1.19.1`, the advisories' floor."
    )
    acceptToolkitAdvisories: NotRequired[list[str]]
    (
        "NVIDIA Container Toolkit advisories accepted as a risk on these machines, e.g. `[CVE-2026-24260]`: a"
        " toolkit open only to these passes, and its report names them. Default: none."
    )
    proxy: NotRequired[SshProxy]
    (
        "Bastion `{host, port (22), user, hostKey}`, reached with the same key; from a program, each of the "
        "four may be another resource's output, checked when it resolves. Default: none."
    )
    become: NotRequired[BecomeOrWord]
    (
        "Run the checks as root through `sudo -n` when `sshUser` is not root; the script is then copied to "
        "the user's home (see \"Privileges\"). Default: none (log in as root)."
    )
    recheck: NotRequired[str]
    (
        "1-64 printable characters; a new value runs preflight again on every node of the group (see "
        "\"Re-check the machines\"). Default: none."
    )
    sshTimeoutSeconds: NotRequired[int]
    (
        "Seconds each SSH connection attempt may take, to the machine and to the bastion (pulumi-command's "
        "`perDialTimeout`; it tries up to 10 times); raise it for slow links. Default: `15` "
        "(pulumi-command's)."
    )


class Dra(TypedDict):
    "What a group whose GPUs NVIDIA's DRA driver allocates offers beyond ResourceClaims."

    extendedResourceName: NotRequired[bool]
    (
        "With allocator `dra`: the DeviceClass `gpu.nvidia.com` serves plain `nvidia.com/gpu` requests "
        "(`extendedResourceName`, as the driver's chart renders it), so a tenant's pod that asks for "
        "`nvidia.com/gpu` gets the group's GPUs through DRA, and the verification Jobs ask so; needs "
        "Kubernetes' DRAExtendedResource (beta and on from 1.36), which `pulumi up` checks. See \"DRA\". "
        "Default: `false`."
    )
    computeDomains: NotRequired[bool]
    (
        "With allocator `dra` on NVLink-domain machines (`nvlinkDomain`): NVIDIA's DRA driver's "
        "ComputeDomains, which hand IMEX channels to jobs across the domain's machines; the group gets a "
        "ComputeDomain its proof uses. See \"DRA\", \"ComputeDomains\". Default: `false`."
    )
    migProfiles: NotRequired[list[str]]
    (
        "With allocator `dra`: split GPUs by MIG on demand (the driver's DynamicMIG) and prove each profile "
        "listed, e.g. `[1g.10gb]`: a claim of one device of it, and a Job that sees its MIG device; needs "
        "Kubernetes' DRAPartitionableDevices (beta and on from 1.36), which `pulumi up` checks. An Ampere GPU"
        " in MIG mode is offered only split: set `verification.gpusPerPod: []` and no `diagnostics` there. "
        "See \"DRA\", \"MIG under DRA\". Default: none."
    )


class Metrics(TypedDict):
    "NVIDIA's dcgm-exporter on the group's nodes, scraped by each node's proof."

    enabled: NotRequired[bool]
    (
        "Run NVIDIA's dcgm-exporter on the group's nodes, with a Service, and prove each node by scraping it:"
        " GPU utilisation, memory used, temperature and power for every GPU (see \"The proof\"). Default: "
        "`false`."
    )
    image: NotRequired[str]
    (
        "Pinned dcgm-exporter image: a release past NVIDIA's bulletin 5857 (exporter 4.8.2 or later). "
        "Default: `nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless`."
    )
    serviceMonitor: NotRequired[bool]
    (
        "Also a Prometheus Operator `ServiceMonitor` for the exporter's Service (the cluster must serve "
        "`monitoring.coreos.com/v1`). Default: `false`."
    )


class NvlinkDomain(TypedDict):
    "The NVLink domain (clique) the group's machines belong to, and its IMEX peers."

    clique: str
    (
        "The NVLink domain every node of the group is in, as GPU Feature Discovery labels it "
        "(`nvidia.com/gpu.clique`, `<ClusterUUID>.<CliqueId>` of `nvidia-smi -q`'s Fabric section): preflight"
        " and the proof check each node."
    )
    imexPeers: NotRequired[list[str]]
    (
        "Where the machines run NVIDIA's IMEX daemon themselves (a group with `devicePlugin.imex`): the "
        "addresses each machine's daemon must list in its nodes config (`/etc/nvidia-imex/nodes_config.cfg`),"
        " the domain's machines. Default: none."
    )


class NodeGroup(TypedDict):
    "One group of like GPU machines: an entry of `nodeGroups`."

    name: str
    "DNS-1123 label; names the group's objects and its node label value."
    nodes: list[Node]
    (
        "`{name, sshHost, sshPort, sshUser, hostKey}`; `name` is the Kubernetes node name; a node may belong "
        "to one group only."
    )
    gpusPerNode: int
    "GPUs each node must expose."
    labels: NotRequired[dict[str, str]]
    (
        "Labels for every node (a map given here replaces the default); `gpu-nodes.dev/node-group` is added; "
        "keys under `kubernetes.io/`, `k8s.io/` (and their subdomains) and `gpu-nodes.dev/` are reserved. "
        "Default: `{accelerator: nvidia, nvidia.com/gpu.present: \"true\"}`."
    )
    taints: NotRequired[list[str]]
    (
        "`kubectl taint` syntax `key[=value]:Effect`; the same keys are reserved as for labels (the gate "
        "`gpu-nodes.dev/unverified` is the stack's own). Default: `[\"nvidia.com/gpu=present:NoSchedule\"]`."
    )
    devicePlugin: NotRequired[DevicePlugin]
    "The group's NVIDIA device plugin DaemonSet. Default: `{}`."
    priorityClass: NotRequired[PriorityClass]
    "The PriorityClass of the group's GPU workloads. Default: `{}`."
    verification: NotRequired[Verification]
    "The verification Jobs that prove the group's GPUs as a tenant's pod gets them. Default: `{}`."
    preflight: NotRequired[Preflight]
    "The checks run on each machine over SSH before it is brought in. Default: `{}`."
    gpuAccess: NotRequired[GpuAccessOrWord]
    (
        "How a tenant's pod gets its GPUs, and so what preflight requires and how the verification pods run: "
        "nvidia as the default runtime; a RuntimeClass tenants must name (`gpu-nodes:runtimeClass`); or CDI "
        "(the plugin's `cdi-cri` strategy). See \"How tenants get their GPUs\". Default: `defaultRuntime` "
        "(`cdi` with allocator `dra`)."
    )
    isolation: NotRequired[IsolationOrWord]
    (
        "Whether a pod may see GPUs it was not given: `default` keeps the container toolkit as it ships (a "
        "pod that sets `NVIDIA_VISIBLE_DEVICES=all`, as CUDA images do, sees every GPU under the nvidia "
        "runtime); `strict` needs NVIDIA's hardened toolkit settings, which preflight checks, and proves that"
        " a pod given no GPU sees none. See \"How tenants get their GPUs\". Default: `default`."
    )
    gpuModel: NotRequired[str]
    (
        "The GPU model every node must have, as `nvidia-smi` names it (`NVIDIA H100 80GB HBM3`); without it "
        "the group's nodes must agree with each other (see \"GPU facts\"). Default: most nodes' model."
    )
    allocator: NotRequired[AllocatorOrWord]
    (
        "Who hands out the group's GPUs: NVIDIA's device plugin (`nvidia.com/gpu`), or NVIDIA's DRA driver "
        "(ResourceClaims of the DeviceClass `gpu.nvidia.com`). See \"DRA\". Default: `devicePlugin`."
    )
    dra: NotRequired[Dra]
    "What a group whose GPUs NVIDIA's DRA driver allocates offers beyond ResourceClaims. Default: `{}`."
    nvlinkDomain: NotRequired[NvlinkDomain]
    "The NVLink domain (clique) the group's machines belong to, and its IMEX peers. Default: none."
    containerToolkit: NotRequired[ContainerToolkitOrWord]
    (
        "How the machines' NVIDIA Container Toolkit reaches containers: the container runtime's `nvidia` "
        "entry, or its NRI plugin (the GPU Operator's `cdi.nriPluginEnabled`: no `nvidia` runtime, no "
        "RuntimeClass; CDI devices only, so `gpuAccess: cdi`). See \"NRI-mode nodes\". Default: `runtime`."
    )
    metrics: NotRequired[Metrics]
    "NVIDIA's dcgm-exporter on the group's nodes, scraped by each node's proof. Default: `{}`."
    gpuFeatureLabels: NotRequired[bool]
    (
        "Label each node with GPU Feature Discovery's keys (`nvidia.com/gpu.product`, ...) from preflight's "
        "facts; turn off where GFD itself runs. Default: `true`."
    )


class GpuFleetInputs(TypedDict):
    "What a GPU fleet asks for: the stack config's `gpu-nodes:*` settings."

    node_groups: list[NodeGroup]
    "One entry per node group (below)."
    ssh_private_key: NotRequired[pulumi.Input[str]]
    "Private key for the machines (and the bastion). Required when any group runs preflight."
    insecure_skip_host_key_check: NotRequired[bool]
    "Accept any SSH host key for nodes without `hostKey` (see \"Host keys\"). Default: `false`."
    runtime_class: NotRequired[str]
    (
        "The RuntimeClass the device plugin names, and tenants' pods with `gpuAccess: runtimeClass`; `\"\"` or "
        "`false`: none (see \"How tenants get their GPUs\"). Default: `nvidia`."
    )
    create_runtime_class: NotRequired[bool]
    (
        "Create the class (handler `nvidia`), or only name one that exists already. Default: `true` for "
        "`nvidia`, `false` for another name."
    )
    existing_namespaces: NotRequired[list[str]]
    (
        "Namespaces the groups use that exist already: the stack puts its objects in them but never creates "
        "or deletes them (see \"Objects the stack did not create\"). Default: none."
    )
    hand_over: NotRequired[list[str]]
    (
        "Other NVIDIA device plugin or DRA driver installs allowed on the cluster, kept off this stack's "
        "nodes: `<namespace>/<DaemonSet>`, `ClusterPolicy/<name>` or `GPUCluster/<name>` (see \"Another device"
        " plugin on the cluster\"). Default: none."
    )
    image_pull_secret: NotRequired[pulumi.Input[str]]
    (
        "A registry login (`.dockerconfigjson`, as `docker login` writes `~/.docker/config.json`): the stack "
        "puts it in a Secret `gpu-nodes-pull` in each namespace it uses, before the pods that name it (see "
        "\"Private registries\"). Default: none."
    )


class GpuNodeGroupInputs(TypedDict):
    "What one GPU node group asks for on its own: its keys, and the fleet's beside them."

    name: str
    "DNS-1123 label; names the group's objects and its node label value."
    nodes: list[Node]
    (
        "`{name, sshHost, sshPort, sshUser, hostKey}`; `name` is the Kubernetes node name; a node may belong "
        "to one group only."
    )
    gpusPerNode: int
    "GPUs each node must expose."
    labels: NotRequired[dict[str, str]]
    (
        "Labels for every node (a map given here replaces the default); `gpu-nodes.dev/node-group` is added; "
        "keys under `kubernetes.io/`, `k8s.io/` (and their subdomains) and `gpu-nodes.dev/` are reserved. "
        "Default: `{accelerator: nvidia, nvidia.com/gpu.present: \"true\"}`."
    )
    taints: NotRequired[list[str]]
    (
        "`kubectl taint` syntax `key[=value]:Effect`; the same keys are reserved as for labels (the gate "
        "`gpu-nodes.dev/unverified` is the stack's own). Default: `[\"nvidia.com/gpu=present:NoSchedule\"]`."
    )
    devicePlugin: NotRequired[DevicePlugin]
    "The group's NVIDIA device plugin DaemonSet. Default: `{}`."
    priorityClass: NotRequired[PriorityClass]
    "The PriorityClass of the group's GPU workloads. Default: `{}`."
    verification: NotRequired[Verification]
    "The verification Jobs that prove the group's GPUs as a tenant's pod gets them. Default: `{}`."
    preflight: NotRequired[Preflight]
    "The checks run on each machine over SSH before it is brought in. Default: `{}`."
    gpuAccess: NotRequired[GpuAccessOrWord]
    (
        "How a tenant's pod gets its GPUs, and so what preflight requires and how the verification pods run: "
        "nvidia as the default runtime; a RuntimeClass tenants must name (`gpu-nodes:runtimeClass`); or CDI "
        "(the plugin's `cdi-cri` strategy). See \"How tenants get their GPUs\". Default: `defaultRuntime` "
        "(`cdi` with allocator `dra`)."
    )
    isolation: NotRequired[IsolationOrWord]
    (
        "Whether a pod may see GPUs it was not given: `default` keeps the container toolkit as it ships (a "
        "pod that sets `NVIDIA_VISIBLE_DEVICES=all`, as CUDA images do, sees every GPU under the nvidia "
        "runtime); `strict` needs NVIDIA's hardened toolkit settings, which preflight checks, and proves that"
        " a pod given no GPU sees none. See \"How tenants get their GPUs\". Default: `default`."
    )
    gpuModel: NotRequired[str]
    (
        "The GPU model every node must have, as `nvidia-smi` names it (`NVIDIA H100 80GB HBM3`); without it "
        "the group's nodes must agree with each other (see \"GPU facts\"). Default: most nodes' model."
    )
    allocator: NotRequired[AllocatorOrWord]
    (
        "Who hands out the group's GPUs: NVIDIA's device plugin (`nvidia.com/gpu`), or NVIDIA's DRA driver "
        "(ResourceClaims of the DeviceClass `gpu.nvidia.com`). See \"DRA\". Default: `devicePlugin`."
    )
    dra: NotRequired[Dra]
    "What a group whose GPUs NVIDIA's DRA driver allocates offers beyond ResourceClaims. Default: `{}`."
    nvlinkDomain: NotRequired[NvlinkDomain]
    "The NVLink domain (clique) the group's machines belong to, and its IMEX peers. Default: none."
    containerToolkit: NotRequired[ContainerToolkitOrWord]
    (
        "How the machines' NVIDIA Container Toolkit reaches containers: the container runtime's `nvidia` "
        "entry, or its NRI plugin (the GPU Operator's `cdi.nriPluginEnabled`: no `nvidia` runtime, no "
        "RuntimeClass; CDI devices only, so `gpuAccess: cdi`). See \"NRI-mode nodes\". Default: `runtime`."
    )
    metrics: NotRequired[Metrics]
    "NVIDIA's dcgm-exporter on the group's nodes, scraped by each node's proof. Default: `{}`."
    gpuFeatureLabels: NotRequired[bool]
    (
        "Label each node with GPU Feature Discovery's keys (`nvidia.com/gpu.product`, ...) from preflight's "
        "facts; turn off where GFD itself runs. Default: `true`."
    )
    ssh_private_key: NotRequired[pulumi.Input[str]]
    "Private key for the machines (and the bastion). Required when any group runs preflight."
    insecure_skip_host_key_check: NotRequired[bool]
    "Accept any SSH host key for nodes without `hostKey` (see \"Host keys\"). Default: `false`."
    runtime_class: NotRequired[str]
    (
        "The RuntimeClass the device plugin names, and tenants' pods with `gpuAccess: runtimeClass`; `\"\"` or "
        "`false`: none (see \"How tenants get their GPUs\"). Default: `nvidia`."
    )
    create_runtime_class: NotRequired[bool]
    (
        "Create the class (handler `nvidia`), or only name one that exists already. Default: `true` for "
        "`nvidia`, `false` for another name."
    )
    existing_namespaces: NotRequired[list[str]]
    (
        "Namespaces the groups use that exist already: the stack puts its objects in them but never creates "
        "or deletes them (see \"Objects the stack did not create\"). Default: none."
    )
    hand_over: NotRequired[list[str]]
    (
        "Other NVIDIA device plugin or DRA driver installs allowed on the cluster, kept off this stack's "
        "nodes: `<namespace>/<DaemonSet>`, `ClusterPolicy/<name>` or `GPUCluster/<name>` (see \"Another device"
        " plugin on the cluster\"). Default: none."
    )
    image_pull_secret: NotRequired[pulumi.Input[str]]
    (
        "A registry login (`.dockerconfigjson`, as `docker login` writes `~/.docker/config.json`): the stack "
        "puts it in a Secret `gpu-nodes-pull` in each namespace it uses, before the pods that name it (see "
        "\"Private registries\"). Default: none."
    )


__all__ = [
    "Strategy",
    "MigStrategy",
    "ImagePullPolicy",
    "DeviceIdStrategy",
    "AllocationPolicy",
    "DeviceDiscoveryStrategy",
    "ContainerRuntime",
    "DriverAdvisories",
    "Become",
    "GpuAccess",
    "Isolation",
    "Allocator",
    "ContainerToolkit",
    "TolerationOperator",
    "TaintEffect",
    "Toleration",
    "ResourceRequirements",
    "Node",
    "Sharing",
    "Imex",
    "DevicePlugin",
    "PriorityClass",
    "Performance",
    "Verification",
    "SshProxy",
    "Preflight",
    "Dra",
    "Metrics",
    "NvlinkDomain",
    "NodeGroup",
    "GpuFleetInputs",
    "GpuNodeGroupInputs",
]
