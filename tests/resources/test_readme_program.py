"""The Python example of "Use it in your own program", in the README and in docs/own-program.md, run as
written (under the mocks)."""

from __future__ import annotations

import re

import pytest

from tests.factories import SSH_KEY
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
