"""Valid stack config to start from; each test changes one thing."""

from __future__ import annotations

import copy
from typing import Any

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


SECRET_KEYS = ["gpu-nodes:sshPrivateKey"]
