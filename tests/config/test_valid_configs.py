"""Valid configs pass unchanged: the shipped stacks, the local stack and the example program run
under the mocks with no problem and no warning."""

from __future__ import annotations

import logging
import runpy

import pytest
import yaml

from tests.factories import HOST_KEY, SECRET_KEYS, SSH_KEY
from tests.pulumi_mocks import ROOT, run_inline, run_program

# The tool that writes the local stack's config (a script, not a module of the package).
local_stack = runpy.run_path(str(ROOT / "tools/local/stack_config.py"))


def shipped(stack: str) -> dict:
    config = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())["config"]
    return {**config, "gpu-nodes:sshPrivateKey": SSH_KEY}


def local(preflight: bool) -> dict:
    hosts = [
        {"name": f"gpu-node-{i}", "sshHost": f"127.0.0.{i + 1}", "sshPort": 2222, "sshUser": "root", "hostKey": HOST_KEY}
        for i in (1, 2)
    ]
    groups = local_stack["node_groups"](hosts, "local-gpu", 4, 60, preflight, 5 if preflight else None)
    return {"kubernetes:kubeconfig": "/tmp/kubeconfig", "gpu-nodes:nodeGroups": groups, "gpu-nodes:sshPrivateKey": SSH_KEY}


CONFIGS = {
    "Pulumi.prod.yaml": lambda: shipped("prod"),
    "Pulumi.staging.yaml": lambda: shipped("staging"),
    "local stack, preflight on": lambda: local(True),
    "local stack, preflight off": lambda: local(False),
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
    program = ROOT / "examples/own-program"
    config = yaml.safe_load((program / f"Pulumi.{stack}.yaml").read_text())["config"]
    config = {key.replace("gpu-racks:", "gpu-nodes:"): value for key, value in config.items()}
    config["gpu-nodes:kubeconfig"] = "apiVersion: v1\nkind: Config\n"
    with caplog.at_level(logging.WARNING):
        run = run_inline(lambda: runpy.run_path(str(program / "__main__.py"), run_name="__main__"), config)
    assert run.of_type("gpu-nodes:index:GpuNodeGroup"), f"{stack}: no group registered"
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
