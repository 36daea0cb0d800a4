"""Valid stack config to start from; each test changes one thing. Also the stack files this
repository ships (the prod and staging examples, the local stack, the example program's racks)
as the program reads them."""

from __future__ import annotations

import copy
import runpy
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
# examples/own-program: a program of its own (project `gpu-racks`), one stack per rack.
EXAMPLE_PROGRAM = ROOT / "examples/own-program"
# The module of it that builds the fleet, which its __main__.py and its own tests import.
EXAMPLE_MODULE = "racks"

HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICgOWx8GZAYwVo1DljYmxSdegqKZ4tjslNMpHdImvYML"
# Host keys of other types, as ssh-keygen made them (-t rsa -b 2048, -t ecdsa).
RSA_HOST_KEY = (
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCdTfHfa62SJJdSdb9RqvV2M+YQWb0sS4x1sziwGWfyO/gmil4dqV6bLr5FCJiE"
    "4uG87Nz/S15+sAXUIAXtp7KyJ3Vk+VWgTh+AXrEtTQMRcUR7shNEgb9ZxdyqXpAXHgZwfcbXXFo3e9NBZwxLDu2fSci49nN1Te0A"
    "T/ritQfYClZoxgtY69/OjUcfzRboxNX91uJN+x41wwmGUQ+8IOcFdxV22S9vEoNyaQnAp100v0ClPVSX6gLsWkZEPT/0jxMrIN+z"
    "W3PF/zJczQ05yoNZNMBKxAT0M6dWgEmTdet12Jszv4Rmrp7U9ggo2jNSyY54W2hGTn15rd1ZmUPjXrN3"
)

ECDSA_HOST_KEY = (
    "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBPawNqADorf45Hwd1TEAkfJTjzSw"
    "M/j1SxVxKTRVp5Z6fxsNvTWlWxqpFefik9gTc1iwOZge0rKvT5GVuRp/5kA="
)
# A throwaway ed25519 key made with `ssh-keygen -t ed25519 -N ""` for these tests: it opens no machine.
SSH_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACBUIqevYE1Cnu+Aee0I58P+1YIHJrPXQqTMkKIO5AkTcQAAAIhDowhgQ6MI\n"
    "YAAAAAtzc2gtZWQyNTUxOQAAACBUIqevYE1Cnu+Aee0I58P+1YIHJrPXQqTMkKIO5AkTcQ\n"
    "AAAECNiIJ+H60d/5hiRgvZVDdgt79aH+4sZPxhNkJ6rJjjkVQip69gTUKe74B57Qjnw/7V\n"
    "ggcms9dCpMyQog7kCRNxAAAAAAECAwQF\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)


def node(name: str, index: int = 1) -> dict[str, Any]:
    return {"name": name, "sshHost": f"10.0.0.{index}", "sshUser": "ops", "hostKey": HOST_KEY}


def group(name: str = "a100", nodes: int | list[dict[str, Any]] = 2, **overrides: Any) -> dict[str, Any]:
    """A valid group with `nodes` generated nodes (or exactly the given node entries)."""
    raw = {
        "name": name,
        "gpusPerNode": 4,
        "nodes": nodes if isinstance(nodes, list) else [node(f"{name}-node-{i}", i) for i in range(1, nodes + 1)],
    }
    raw.update(copy.deepcopy(overrides))
    return raw


def stack_config(*groups: dict[str, Any], **extra: Any) -> dict[str, Any]:
    config = {"gpu-nodes:nodeGroups": list(groups) or [group()], "gpu-nodes:sshPrivateKey": SSH_KEY}
    config.update({f"gpu-nodes:{key}": value for key, value in extra.items()})
    return config


def two_groups(*more: dict[str, Any]) -> dict[str, Any]:
    """Stack config of two groups unlike each other, then `more`: a100 verified with 1 and 2 GPUs
    per pod, and h100, time-sliced, with a taint of its own."""
    return stack_config(
        group("a100", verification={"gpusPerPod": [1, 2]}),
        # Time-sliced: its Jobs ask for one GPU each (a multi-GPU pod could get one GPU twice).
        group(
            "h100",
            nodes=1,
            taints=["nvidia.com/gpu=present:NoSchedule", "dedicated=ml:NoExecute"],
            devicePlugin={"timeSlicingReplicas": 2},
        ),
        *more,
    )


SECRET_KEYS = ["gpu-nodes:sshPrivateKey"]
# A registry login as `docker login` writes it (a .dockerconfigjson; the auth is "user:pass"), for gpu-nodes:imagePullSecret.
REGISTRY_LOGIN = '{"auths": {"registry.example.com": {"auth": "dXNlcjpwYXNz"}}}'


def shipped_stack(stack: str) -> dict[str, Any]:
    """`Pulumi.<stack>.yaml` as shipped, with the SSH key its comment says to set (as a secret)."""
    config = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())["config"]
    return {**config, "gpu-nodes:sshPrivateKey": SSH_KEY}


def local_stack(nodes: int = 3, preflight: bool = True, max_sessions: int | None = None) -> dict[str, Any]:
    """The stack `make local-up` deploys, as `tools/local/stack_config.py` writes it: fake machines
    gpu-node-<i> at 127.0.10.<i>:2222 as root (tools/fakehost), the kubeconfig as a path."""
    # A script, not a module of the package: loaded from its file.
    writer = runpy.run_path(str(ROOT / "tools/local/stack_config.py"))
    hosts = [
        {"name": f"gpu-node-{i}", "sshHost": f"127.0.10.{i}", "sshPort": 2222, "sshUser": "root", "hostKey": HOST_KEY}
        for i in range(1, nodes + 1)
    ]
    groups = writer["node_groups"](hosts, "local-gpu", 4, 60, preflight, max_sessions)
    kubeconfig = "/gpu-nodes/.state/cluster/kubeconfig"
    return {"kubernetes:kubeconfig": kubeconfig, "gpu-nodes:nodeGroups": groups, "gpu-nodes:sshPrivateKey": SSH_KEY}


def example_project() -> str:
    return str(yaml.safe_load((EXAMPLE_PROGRAM / "Pulumi.yaml").read_text())["name"])


def example_stack(stack: str) -> dict[str, Any]:
    """The example program's `Pulumi.<stack>.yaml`, with the kubeconfig its comment says to set."""
    config = yaml.safe_load((EXAMPLE_PROGRAM / f"Pulumi.{stack}.yaml").read_text())["config"]
    return {**config, f"{example_project()}:kubeconfig": "apiVersion: v1\nkind: Config\n"}
