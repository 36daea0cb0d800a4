"""The real outputs of NVIDIA's tools that the proof's readers are tested on (fixtures/README.md names the source of each)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def recorded(name: str) -> str:
    """The text of fixtures/<name>, exactly as stored."""
    return (FIXTURES / name).read_text()


def recorded_json(name: str) -> Any:
    return json.loads(recorded(name))


def fixture_names(pattern: str) -> list[str]:
    """The fixtures whose names match `pattern` (a glob), sorted: a table of every sample of a kind."""
    return sorted(path.name for path in FIXTURES.glob(pattern))


# The recorded scrape of an 8 x H100 node through the GPU Operator's exporter (NVIDIA/aicr's evidence).
H100_SCRAPE = "dcgm-exporter-h100x8-aicr.prom"


def h100_with_fb_used() -> str:
    """The recorded H100 scrape has no DCGM_FI_DEV_FB_USED (its author kept four fields): each GPU's
    DCGM_FI_DEV_GPU_UTIL line is repeated under that name, making the scrape of a GPU that exports all four."""
    lines = recorded(H100_SCRAPE).splitlines()
    util, fb_used = "DCGM_FI_DEV_GPU_UTIL{", "DCGM_FI_DEV_FB_USED{"
    return "\n".join([*lines, *(line.replace(util, fb_used, 1) for line in lines if line.startswith(util))])
