"""Write the stack config that points the program at the local cluster and fake machines.

Reads `.state/fakehosts/hosts.json` (addresses and pinned host keys of the running fake
machines) and merges `config:` into `Pulumi.<stack>.yaml`, keeping what `pulumi stack init`
wrote there (the passphrase salt). The SSH key is set separately, as a secret.

    python tools/local/stack_config.py --stack local [--gpus 4] [--group local-gpu]
        [--nodes N] [--preflight on|off] [--max-sessions N] [--proof full|default|ITEMS]

`--nodes N` takes gpu-node-1..N (default: every running fake machine). With `--preflight off`
no fake machine is needed: the nodes are only named, as the program then needs no SSH details.
`--proof full` (the default) proves each node with every item the program has: beside the defaults
(DCGM's diagnostics, the access check), NCCL's all-reduce held to 200 GB/s (a DGX A100's four GPUs
reach about 230 GB/s, tools/fakehost/README.md) and the exporter's metrics; `--proof default` keeps
the program's defaults alone. Or name the items beyond the access check and the workload's Jobs, which
always run: `--proof dcgm,nccl` (`none` for neither; the benchmarks measure each item so).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
HOSTS = ROOT / ".state/fakehosts/hosts.json"
KUBECONFIG = ROOT / ".state/cluster/kubeconfig"


# The all-reduce floor of the local group's four A100s: no figure of NVIDIA's or the clouds' is known for four
# (gpu_nodes/bandwidth_floors.py), so the group gives its own, below what a healthy machine answers.
LOCAL_BUS_BANDWIDTH_FLOOR = 200


@dataclass(frozen=True)
class ProofItems:
    """Which proof items beyond the access check and the workload's Jobs the group runs (those two always run)."""

    dcgm: bool = True  # DCGM's diagnostics at the program's default level (on by default)
    nccl: bool = False  # NCCL's all-reduce against LOCAL_BUS_BANDWIDTH_FLOOR
    metrics: bool = False  # the exporter's metrics

    @classmethod
    def read(cls, text: str) -> ProofItems:
        """`default`, `full`, `none`, or the items by name: `dcgm,nccl,metrics`."""
        if text in ("default", "full"):
            return cls() if text == "default" else FULL_PROOF
        named = {item for item in text.split(",") if item and item != "none"}
        unknown = named - {"dcgm", "nccl", "metrics"}
        if unknown:
            raise argparse.ArgumentTypeError(f"--proof: got {text!r}; expected default, full, none or items of dcgm,nccl,metrics")
        return cls(dcgm="dcgm" in named, nccl="nccl" in named, metrics="metrics" in named)

    @property
    def text(self) -> str:
        """As `--proof` reads it."""
        return ",".join(item for item in ("dcgm", "nccl", "metrics") if getattr(self, item)) or "none"


# `--proof full`, the local stacks' default: every item the program has.
FULL_PROOF = ProofItems(nccl=True, metrics=True)


def node_groups(
    hosts: list[dict[str, Any]],
    group: str,
    gpus: int,
    timeout: int,
    preflight: bool = True,
    max_sessions: int | None = None,
    proof: ProofItems = FULL_PROOF,
) -> list[dict[str, Any]]:
    # Preflight settings only where preflight runs: with it off they would do nothing (and be warned about).
    checks: dict[str, Any] = {"enabled": preflight}
    if preflight:
        checks["containerRuntime"] = "containerd"
    if preflight and max_sessions is not None:
        checks["maxSessions"] = max_sessions
    return [
        {
            "name": group,
            "gpusPerNode": gpus,
            "nodes": [
                {k: host[k] for k in ("name", "sshHost", "sshPort", "sshUser", "hostKey") if preflight or k == "name"}
                for host in sorted(hosts, key=lambda h: h["name"])
            ],
            "verification": {
                "gpusPerPod": [1, 2],
                "timeoutSeconds": timeout,
                **({} if proof.dcgm else {"diagnostics": "off"}),
                **({"performance": {"enabled": True, "minBusBandwidth": LOCAL_BUS_BANDWIDTH_FLOOR}} if proof.nccl else {}),
            },
            "preflight": checks,
            **({"metrics": {"enabled": True}} if proof.metrics else {}),
        }
    ]


def select_hosts(nodes: int | None, preflight: bool) -> list[dict[str, Any]]:
    """gpu-node-1..N (or every running fake machine); with preflight, each must be running."""
    if nodes is not None and not preflight:
        return [{"name": f"gpu-node-{i}"} for i in range(1, nodes + 1)]
    running = {host["name"]: host for host in json.loads(HOSTS.read_text())}
    if nodes is None:
        return list(running.values())
    missing = [f"gpu-node-{i}" for i in range(1, nodes + 1) if f"gpu-node-{i}" not in running]
    if missing:
        raise SystemExit(f"stack_config.py: no fake machine running for {', '.join(missing)} (tools/fakehost/up.sh)")
    return [running[f"gpu-node-{i}"] for i in range(1, nodes + 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="local")
    parser.add_argument("--group", default="local-gpu")
    parser.add_argument("--gpus", type=int, default=4)
    parser.add_argument("--timeout", type=int, default=60, help="verification timeoutSeconds")
    parser.add_argument("--nodes", type=int, help="gpu-node-1..N (default: every running fake machine)")
    parser.add_argument("--preflight", choices=("on", "off"), default="on")
    parser.add_argument("--max-sessions", type=int, help="preflight.maxSessions (default: the program's)")
    parser.add_argument(
        "--proof", type=ProofItems.read, default=FULL_PROOF, help="full (every item), default, none, or items: dcgm,nccl,metrics"
    )
    args = parser.parse_args()
    preflight = args.preflight == "on"

    path = ROOT / f"Pulumi.{args.stack}.yaml"
    settings = yaml.safe_load(path.read_text()) if path.exists() else {}
    settings = settings or {}
    config = settings.setdefault("config", {})
    config["kubernetes:kubeconfig"] = str(KUBECONFIG)
    config["gpu-nodes:nodeGroups"] = node_groups(
        select_hosts(args.nodes, preflight), args.group, args.gpus, args.timeout, preflight, args.max_sessions, args.proof
    )
    path.write_text(yaml.safe_dump(settings, sort_keys=True))
    nodes = len(config["gpu-nodes:nodeGroups"][0]["nodes"])
    print(f"wrote {path.name}: {nodes} nodes in group {args.group}, preflight {args.preflight}")


if __name__ == "__main__":
    main()
