"""Changing the e2e stack's config file, as an operator edits `Pulumi.<stack>.yaml`."""

from __future__ import annotations

from typing import Any

import yaml

from tests.e2e.conftest import ROOT, STACK, STATE, LocalEnv

STACK_FILE = ROOT / f"Pulumi.{STACK}.yaml"


def edit_group(change) -> str:
    """Apply `change` to the stack's node group config; returns the old file to restore."""
    old = STACK_FILE.read_text()
    settings = yaml.safe_load(old)
    change(settings["config"]["gpu-nodes:nodeGroups"][0])
    STACK_FILE.write_text(yaml.safe_dump(settings, sort_keys=True))
    return old


def set_stack_config(key: str, value: Any) -> None:
    settings = yaml.safe_load(STACK_FILE.read_text())
    settings["config"][key] = value
    STACK_FILE.write_text(yaml.safe_dump(settings, sort_keys=True))


def start_stack(local: LocalEnv, stack: str, config: dict[str, Any]) -> None:
    """A stack of its own for a test module: `config` as its file's config, the fake machines' SSH key its secret."""
    local.run("pulumi", "stack", "init", "--stack", stack, "--non-interactive", check=False)
    path = ROOT / f"Pulumi.{stack}.yaml"
    settings = yaml.safe_load(path.read_text()) if path.exists() else None
    path.write_text(yaml.safe_dump({**(settings or {}), "config": config}, sort_keys=True))
    key = (STATE / "fakehosts/id_ed25519").read_text()
    local.run("pulumi", "config", "set", "--secret", "--stack", stack, "gpu-nodes:sshPrivateKey", stdin=key)
