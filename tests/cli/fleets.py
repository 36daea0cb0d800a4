"""Fleet files for the command's tests: groups as gpu-nodes:nodeGroups spells them, preflight off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpu_nodes.cli.fleet_file import Fleet, read_fleet

ROOT = Path(__file__).resolve().parents[2]


def group(name: str, *nodes: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "gpusPerNode": 4, "nodes": [{"name": n} for n in nodes], "preflight": {"enabled": False}, **extra}


def fleet_raw(*groups: dict[str, Any], **extra: Any) -> dict[str, Any]:
    # The repository's own program: its Pulumi.yaml is what the command checks for.
    return {"program": str(ROOT), "nodeGroups": list(groups), **extra}


def fleet(*groups: dict[str, Any], **extra: Any) -> Fleet:
    return read_fleet(Path("/fleets/fleet.yaml"), fleet_raw(*groups, **extra))
