"""Write the stack config that points the program at the local cluster and fake machines.

Reads `.state/fakehosts/hosts.json` (addresses and pinned host keys of the running fake
machines) and merges `config:` into `Pulumi.<stack>.yaml`, keeping what `pulumi stack init`
wrote there (the passphrase salt). The SSH key is set separately, as a secret.

    python tools/local/stack_config.py --stack local [--gpus 4] [--group local-gpu]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
HOSTS = ROOT / ".state/fakehosts/hosts.json"
KUBECONFIG = ROOT / ".state/cluster/kubeconfig"


def node_groups(hosts: list[dict[str, Any]], group: str, gpus: int, timeout: int) -> list[dict[str, Any]]:
    return [
        {
            "name": group,
            "gpusPerNode": gpus,
            "nodes": [
                {k: host[k] for k in ("name", "sshHost", "sshPort", "sshUser", "hostKey")}
                for host in sorted(hosts, key=lambda h: h["name"])
            ],
            "verification": {"gpusPerPod": [1, 2], "timeoutSeconds": timeout},
            "preflight": {"enabled": True, "containerRuntime": "containerd"},
        }
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="local")
    parser.add_argument("--group", default="local-gpu")
    parser.add_argument("--gpus", type=int, default=4)
    parser.add_argument("--timeout", type=int, default=60, help="verification timeoutSeconds")
    args = parser.parse_args()

    path = ROOT / f"Pulumi.{args.stack}.yaml"
    settings = yaml.safe_load(path.read_text()) if path.exists() else {}
    settings = settings or {}
    config = settings.setdefault("config", {})
    config["kubernetes:kubeconfig"] = str(KUBECONFIG)
    config["gpu-nodes:nodeGroups"] = node_groups(json.loads(HOSTS.read_text()), args.group, args.gpus, args.timeout)
    path.write_text(yaml.safe_dump(settings, sort_keys=True))
    nodes = len(config["gpu-nodes:nodeGroups"][0]["nodes"])
    print(f"wrote {path.name}: {nodes} nodes in group {args.group}")


if __name__ == "__main__":
    main()
