"""The stack files the fleet command manages: `Pulumi.<stack>.yaml`, derived from the fleet file.

Each is rewritten on every run with a header saying so; what `pulumi stack init` wrote there
(the secrets provider's salt or key) and the encrypted secrets are kept. Secrets are set
through the workspace (`pulumi config set --secret`), only when their value changed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pulumi import automation as auto

from gpu_nodes.cli.fleet_file import Fleet, SecretSource
from gpu_nodes.cli.plan import StackPlan


def header(fleet: Fleet) -> str:
    # The fleet file as seen from the program directory, where this file lives.
    source = os.path.relpath(fleet.path.resolve(), fleet.program)
    return (
        f"# Managed by `gpu-nodes fleet` from {source}: edit that file, not this one.\n"
        '# The command rewrites this file on every run (docs/fleet.md, "The fleet command").\n'
    )


def stack_file(program: Path, stack: str) -> Path:
    return program / f"Pulumi.{stack}.yaml"


def managed_settings(existing: dict[str, Any] | None, stack: StackPlan, secret_keys: set[str]) -> dict[str, Any]:
    """The stack file's content: the derived config, and from the old file what Pulumi wrote
    itself (the secrets provider's settings, each secret's ciphertext)."""
    old = existing or {}
    settings = {k: v for k, v in old.items() if k != "config"}
    kept = {k: v for k, v in (old.get("config") or {}).items() if k in secret_keys and isinstance(v, dict) and "secure" in v}
    settings["config"] = {**stack.config, **kept}
    return settings


def write_stack_file(path: Path, fleet: Fleet, settings: dict[str, Any]) -> None:
    path.write_text(header(fleet) + yaml.safe_dump(settings, sort_keys=True))


def prepare_stack(
    workspace: auto.LocalWorkspace, fleet: Fleet, stack: StackPlan, read: Callable[[SecretSource], str], renew: bool
) -> auto.Stack:
    """The stack exists in the backend, its file says what the fleet file says, its secrets are set.

    A secret is read from its source when the stack has none yet, or when `renew` (on `up`):
    a drift check or a destroy needs no SSH key at hand when the stack file holds it already.
    """
    selected = auto.Stack.create_or_select(stack.name, workspace)
    path = stack_file(fleet.program, stack.name)
    existing = yaml.safe_load(path.read_text()) if path.exists() else None
    keys = {source.key for source in fleet.secrets}
    settings = managed_settings(existing, stack, keys)
    write_stack_file(path, fleet, settings)
    wanted = [source for source in fleet.secrets if renew or source.key not in settings["config"]]
    for key, value in ((source.key, read(source)) for source in wanted):
        try:
            current: str | None = workspace.get_config(stack.name, key).value
        except auto.errors.CommandError:
            current = None
        if current != value:
            workspace.set_config(stack.name, key, auto.ConfigValue(value, secret=True))
    # `pulumi config set` rewrote the file without our header: put it back.
    text = path.read_text()
    if not text.startswith(header(fleet)):
        write_stack_file(path, fleet, yaml.safe_load(text))
    return selected
