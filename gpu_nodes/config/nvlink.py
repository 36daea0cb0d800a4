"""The group's `nvlinkDomain` section: the NVLink domain its machines belong to (GB200 NVL72 and other
multi-node NVLink machines), as the team declares it. Preflight checks each machine is in it and, where
the machines' own IMEX daemon serves it, that the daemon lists the domain's peers; the proof checks each
node's clique label names it (docs/machines.md, "IMEX and NVLink domains").

An NVLink domain is told by its clique: GPU Feature Discovery labels a node `nvidia.com/gpu.clique` with
`<ClusterUUID>.<CliqueId>`, the fabric's cluster UUID and clique id every GPU of the node reports once its
fabric is trained (k8s-device-plugin internal/lm/imex.go; `nvidia-smi -q`, section Fabric), and NVIDIA's
DRA driver forms ComputeDomains of the nodes of one clique the same way (kubernetes-sigs/dra-driver-nvidia-gpu
cmd/compute-domain-kubelet-plugin/nvlib.go, getCliqueID: `<clusterUUID>.<cliqueID>`).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence

from gpu_nodes.config.fields import Check, section, setting
from gpu_nodes.config.problems import Problems

# A UUID (the fabric's ClusterUUID, as nvidia-smi prints it, lowercase) and the clique id, a whole number.
_CLIQUE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.[0-9]{1,10}")
CLIQUE_FORM = "<ClusterUUID>.<CliqueId> as nvidia.com/gpu.clique says it, e.g. 9c6f5af3-53bf-49b5-a436-b66766c413c3.4026"


def is_clique(value: str) -> bool:
    return bool(_CLIQUE.fullmatch(value))


def read_peers(problems: Problems, key: str, raw: object) -> tuple[str, ...]:
    """IP addresses, each once, in the order given: what NVIDIA's IMEX daemon reads from its nodes config
    (IMEX guide, "IMEX Service Config Options": IMEX_NODE_CONFIG_FILE, "the IP addresses of the nodes that
    are in this IMEX domain")."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.add(key, raw, "expected a list of IP addresses, e.g. [10.0.0.11, 10.0.0.12]")
        return ()
    found: list[str] = []
    for index, item in enumerate(raw):
        try:
            address = str(ipaddress.ip_address(item)) if isinstance(item, str) else None
        except ValueError:
            address = None
        if address is None:
            problems.add(f"{key}[{index}]", item, "expected an IP address (the IMEX daemon's nodes config lists addresses)")
        elif address not in found:
            found.append(address)
    return tuple(found)


@section
class NvlinkDomainSpec:
    clique: str = setting(
        "clique",
        "the NVLink domain every node of the group is in, as GPU Feature Discovery labels it (`nvidia.com/gpu.clique`, "
        "`<ClusterUUID>.<CliqueId>` of `nvidia-smi -q`'s Fabric section): preflight and the proof check each node",
        check=Check(is_clique, f"expected {CLIQUE_FORM}"),
    )
    imex_peers: tuple[str, ...] = setting(
        "imexPeers",
        "where the machines run NVIDIA's IMEX daemon themselves (a group with `devicePlugin.imex`): the addresses "
        "each machine's daemon must list in its nodes config (`/etc/nvidia-imex/nodes_config.cfg`), the domain's "
        "machines",
        default=None,
        default_text="none",
        written=Sequence[str],
        parse=read_peers,
    )
