"""Changing the e2e stack's config file, as an operator edits `Pulumi.<stack>.yaml`."""

from __future__ import annotations

from typing import Any

import yaml

from tests.e2e.conftest import ROOT, STACK

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
