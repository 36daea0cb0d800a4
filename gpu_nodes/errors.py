"""Every failure of gpu-nodes, in one place: who raises it and who gets to read it.

A `GpuNodesError` is meant for the operator: its message names what is wrong and the way out,
and Pulumi shows it without a traceback (in the program: it is a `pulumi.RunError`; in the
provider server: gpu_nodes/providers/provider_server.py). A program embedding gpu-nodes can
catch it to tell its users' mistakes and their machines' faults from bugs, and one of its three
kinds to tell them apart: a `ConfigError` (the config is wrong: fix it and run again), a
`ClusterError` (the cluster holds something in the way, or does not answer), a `NodeError` (a
node failed, or cannot be marked).

The internal signals below it are plain exceptions: the code that raises them also catches
them, and a bug that lets one escape keeps its traceback.
"""

from __future__ import annotations

from pathlib import Path

import pulumi


class GpuNodesError(pulumi.RunError):
    """A failure for the operator: bad stack config, a node that stays gated, an object or a
    device plugin that is someone else's. A `pulumi.RunError`: raised in a program, Pulumi shows
    its message without a traceback."""


# --- for the operator: the message names what is wrong and the way out


class ConfigError(GpuNodesError):
    """Invalid stack configuration (or fleet arguments); `problems` holds one line per mistake,
    each naming the key, the value and what is allowed. Raised by the config readers, `GpuFleet`
    and `GpuNodeGroup`; the operator reads it from `pulumi up` or `preview`."""

    def __init__(self, problems: list[str], what: str = "stack configuration", where: Path | str | None = None):
        self.problems = problems
        at = f"{where}: " if where is not None else ""
        super().__init__(f"{at}invalid {what}:\n" + "\n".join(f"  - {p}" for p in problems))


class FleetError(ConfigError):
    """A fleet file the `gpu-nodes` command refuses: each line names the key, the value and what is
    allowed. Raised by gpu_nodes/cli; the command prints it and exits."""

    def __init__(self, path: Path | str, problems: list[str], what: str = "fleet file"):
        super().__init__(problems, what, where=path)


class ClusterError(GpuNodesError):
    """The cluster is in the stack's way: it holds an object or a device plugin that is someone
    else's, or its API server does not answer (or answers without what every object has). The
    message names the object or the server."""


class ClaimError(ClusterError):
    """An object the stack would create exists already and is someone else's (the claims provider)."""


class OtherPluginError(ClusterError):
    """Another GPU allocator would share the stack's nodes (the coexistence provider)."""


class ClusterFeatureError(ClusterError):
    """The API server drops a field a setting needs (a Kubernetes feature gate is off), or may not be
    asked whether it keeps it (the DRA features provider)."""


class ClusterViewUnavailableError(ClusterError):
    """The API server did not answer the initial lists in time (gpu_nodes/kube/cluster_view.py);
    every provider that waits on the cluster passes it on to the operator, naming the server."""


class NodeError(GpuNodesError):
    """A node failed its proof, or the stack cannot mark it: the message names the node."""


class NodeNotReadyError(NodeError):
    """A node failed its proof and stays gated; the message lists what failed (the readiness provider)."""


class NodeQuarantinedError(NodeNotReadyError):
    """Someone else (NVSentinel) has the node in quarantine: it keeps our gate, and theirs stay
    (gpu_nodes/proof/quarantine.py). Raised where the gate would be lifted (gpu_nodes/kube/node_taints.py)."""


class TaintConflictError(NodeError):
    """Someone else holds a taint with our key and effect but another value (the taints provider)."""


class NodeKeptChangingError(NodeError):
    """The node's taints changed between our read and our write on every attempt: the taints
    provider gave up, and the operator runs `pulumi up` again."""


class NodeNotFoundError(NodeError):
    """The node is not in the cluster: the taints provider cannot mark it (its delete takes it as
    done). A node name in the stack config that the cluster does not know reaches the operator so."""


# --- internal signals: raised and caught inside the package, never meant for the operator


class ResourceVersionConflictError(Exception):
    """The node changed between our read and our write (HTTP 409): the taints provider reads
    again; after too many in a row it raises `NodeKeptChangingError` instead."""


class WatchExpiredError(Exception):
    """The resourceVersion we watch from is gone from the server's history (410 Gone): the
    cluster view lists again. Raised and caught in gpu_nodes/kube/."""
