"""The Python example of "Use it in your own program", in the README and in docs/own-program.md, run as
written (under the mocks)."""

from __future__ import annotations

import re
import sys
import types

import pulumi
import pytest

from tests.factories import HOST_KEY, SSH_KEY
from tests.pulumi_mocks import PROJECT, ROOT, run_inline

# Each page that shows the example, and the heading it is under.
EXAMPLES = {"README.md": "## Use it in your own program", "docs/own-program.md": "## In Python"}


def example_program(page: str) -> str:
    section = (ROOT / page).read_text().split(EXAMPLES[page], 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, f"{page}: no Python example under {EXAMPLES[page]!r}"
    return found[1]


@pytest.mark.parametrize("page", list(EXAMPLES))
def test_the_example_runs_as_written(page):
    config = {f"{PROJECT}:kubeconfig": "apiVersion: v1\nkind: Config\n", f"{PROJECT}:sshPrivateKey": SSH_KEY}
    run = run_inline(lambda: exec(example_program(page), {"__name__": "__main__"}), config)
    groups = [r.name for r in run.of_type("gpu-nodes:index:GpuNodeGroup")]
    assert groups == ["gpus-a100"], [r.urn for r in run.resources]
    assert run.of_type("command:remote:Command"), "the example's node ran no preflight"


class GpuVm(pulumi.CustomResource):
    """`my_infra.GpuVm` of docs/own-program.md's "Machines made by the same program": a machine
    whose address and host key are its outputs (the mocks give its inputs back)."""

    private_ip: pulumi.Output[str]
    host_key: pulumi.Output[str]

    def __init__(self, name: str):
        super().__init__("my-infra:index:GpuVm", name, {"private_ip": "10.0.7.2", "host_key": HOST_KEY})


def test_the_machines_made_by_the_same_program_example_runs_as_written(monkeypatch):
    section = (ROOT / "docs/own-program.md").read_text().split("## Machines made by the same program", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "docs/own-program.md: no Python example of machines made by the same program"
    monkeypatch.setitem(sys.modules, "my_infra", types.SimpleNamespace(GpuVm=GpuVm))
    config = {f"{PROJECT}:kubeconfig": "apiVersion: v1\nkind: Config\n", f"{PROJECT}:sshPrivateKey": SSH_KEY}
    run = run_inline(lambda: exec(found[1], {"__name__": "__main__"}), config)
    (command,) = run.of_type("command:remote:Command")
    assert command.inputs["connection"]["host"] == "10.0.7.2", command.inputs["connection"]
    vm = next(r for r in run.resources if r.type == "my-infra:index:GpuVm")
    assert vm.urn in command.dependencies, f"{command.urn}: does not wait for {vm.urn}"
