"""Valid configs pass unchanged: the shipped stacks, the README's minimal stack config, the local stack
and the example program run under the mocks with no problem and no warning."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
import yaml

from tests.factories import SECRET_KEYS, SSH_KEY, local_stack, shipped_stack
from tests.pulumi_mocks import ROOT, run_example, run_program


def readme_stack() -> dict[str, Any]:
    """The README's "A minimal stack config", with the SSH key it says to set (as a secret)."""
    section = (ROOT / "README.md").read_text().split("## A minimal stack config", 1)[1]
    found = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert found, "README: no YAML under 'A minimal stack config'"
    return {**yaml.safe_load(found[1])["config"], "gpu-nodes:sshPrivateKey": SSH_KEY}


CONFIGS = {
    "Pulumi.prod.yaml": lambda: shipped_stack("prod"),
    "Pulumi.staging.yaml": lambda: shipped_stack("staging"),
    "README, a minimal stack config": readme_stack,
    "local stack, preflight on": lambda: local_stack(nodes=2, preflight=True, max_sessions=5),
    "local stack, preflight off": lambda: local_stack(nodes=2, preflight=False),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_a_valid_stack_runs_with_no_warning(name, caplog):
    with caplog.at_level(logging.WARNING):
        run = run_program(CONFIGS[name](), SECRET_KEYS)
    assert run.of_type("gpu-nodes:index:GpuNodeGroup"), f"{name}: no group registered"
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == [], f"{name}: {warnings}"


@pytest.mark.parametrize("stack", ["rack-a", "rack-b"])
def test_the_example_program_runs_with_its_stacks(stack, caplog):
    with caplog.at_level(logging.WARNING):
        run = run_example(stack)
    assert run.of_type("gpu-nodes:index:GpuNodeGroup"), f"{stack}: no group registered"
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
