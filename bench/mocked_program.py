"""The program (`__main__.py`) evaluated under Pulumi mocks, as program_bench measures it: no engine,
no cluster, no machine. The mocks are a team's (gpu_nodes/testing.py) and answer as a healthy fleet
would: every resource's outputs are its inputs, each preflight command prints a passing report,
each node's gate is lifted."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime.mocks import MockMonitor

from gpu_nodes.testing import GpuNodesMocks

PROGRAM = Path(__file__).resolve().parent.parent / "__main__.py"
# A throwaway ed25519 key pair (`ssh-keygen -t ed25519 -N ""`): it opens no machine, and the mocks connect nowhere.
SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACBUIqevYE1Cnu+Aee0I58P+1YIHJrPXQqTMkKIO5AkTcQAAAIhDowhgQ6MI\nYAAAAAtzc2gtZWQyNTUxOQAAACBUIqevYE1Cnu+Aee0I58P+1YIHJrPXQqTMkKIO5AkTcQ\nAAAECNiIJ+H60d/5hiRgvZVDdgt79aH+4sZPxhNkJ6rJjjkVQip69gTUKe74B57Qjnw/7V\nggcms9dCpMyQog7kCRNxAAAAAAECAwQF\n-----END OPENSSH PRIVATE KEY-----\n"  # noqa: E501
HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICgOWx8GZAYwVo1DljYmxSdegqKZ4tjslNMpHdImvYML"
SECRET_KEYS = ["gpu-nodes:sshPrivateKey"]


def fleet_config(nodes: int, per_group: int) -> dict[str, Any]:
    """Stack config of `nodes` machines in groups of `per_group`, each verified with 1 and 2 GPUs per pod."""
    groups = []
    for start in range(0, nodes, per_group):
        index = start // per_group
        members = [
            {"name": f"gpu-{index}-{i}", "sshHost": f"10.0.0.{i % 250 + 1}", "sshUser": "ops", "hostKey": HOST_KEY}
            for i in range(min(per_group, nodes - start))
        ]
        groups.append({"name": f"group-{index}", "gpusPerNode": 4, "nodes": members, "verification": {"gpusPerPod": [1, 2]}})
    return {"gpu-nodes:nodeGroups": groups, "gpu-nodes:sshPrivateKey": SSH_KEY}


class CountingMonitor(MockMonitor):
    """The mocks' monitor, counting what the program registers (the stack included)."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self.urns: set[str] = set()

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        self.urns.add(response.urn)
        return response


def evaluate(config: dict[str, Any], secret_keys: list[str] = SECRET_KEYS) -> int:
    """Evaluates the program with this stack config, waiting for every registration; returns how many resources it registered."""
    mocks = GpuNodesMocks()
    monitor = CountingMonitor(mocks)
    pulumi.runtime.settings.set_root_resource(None)
    pulumi.runtime.set_mocks(mocks, project="gpu-nodes", stack="bench", preview=False, monitor=monitor)
    pulumi.runtime.set_all_config(
        {key: value if isinstance(value, str) else json.dumps(value) for key, value in config.items()}, secret_keys
    )

    @pulumi.runtime.test
    def _evaluate() -> None:
        runpy.run_path(str(PROGRAM), run_name="__main__")

    _evaluate()
    return len(monitor.urns)
