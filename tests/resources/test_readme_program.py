"""The README's "Use it in your own program" example, run as written (under the mocks)."""

from __future__ import annotations

import re

from tests.factories import SSH_KEY
from tests.pulumi_mocks import PROJECT, ROOT, run_inline


def readme_program() -> str:
    section = (ROOT / "README.md").read_text().split("## Use it in your own program", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "README: no Python example under 'Use it in your own program'"
    return found[1]


def test_the_readme_example_runs_as_written():
    config = {f"{PROJECT}:kubeconfig": "apiVersion: v1\nkind: Config\n", f"{PROJECT}:sshPrivateKey": SSH_KEY}
    run = run_inline(lambda: exec(readme_program(), {"__name__": "__main__"}), config)
    groups = [r.name for r in run.of_type("gpu-nodes:index:GpuNodeGroup")]
    assert groups == ["gpus-a100"], [r.urn for r in run.resources]
    assert run.of_type("command:remote:Command"), "the example's node ran no preflight"
