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
