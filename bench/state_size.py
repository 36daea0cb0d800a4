"""What a stack's state keeps, by resource type: how many, and the KB of each one's inputs, outputs
and whole entry (URNs, dependencies and property dependencies included), from `pulumi stack export`.

Sizes are of compact JSON, as the backend writes the state file: `pulumi stack export` indents
its output, which makes the same state about 2.8 times as long (13.6 MB against the file's 4.9
MB for a stack of 100 nodes).

    pulumi stack export --stack bench-1 > state.json && .venv/bin/python -m bench.state_size state.json --nodes 100
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class TypeSize:
    type: str
    count: int = 0
    inputs: int = 0
    outputs: int = 0
    whole: int = 0


def compact_bytes(data: Any) -> int:
    """The length of `data` as compact JSON: what the backend writes for it."""
    return len(json.dumps(data, separators=(",", ":")))


def stored_bytes(export_text: str) -> int:
    """The size of the state a `pulumi stack export` printed, as the backend stores it."""
    return compact_bytes(json.loads(export_text))


def sizes_by_type(export: Mapping[str, Any]) -> list[TypeSize]:
    """Each resource type's bytes in the state, the largest first."""
    found: dict[str, TypeSize] = {}
    for resource in export["deployment"]["resources"]:
        size = found.setdefault(resource["type"], TypeSize(resource["type"]))
        size.count += 1
        size.inputs += compact_bytes(resource.get("inputs") or {})
        size.outputs += compact_bytes(resource.get("outputs") or {})
        size.whole += compact_bytes(resource)
    return sorted(found.values(), key=lambda s: -s.whole)


def format_sizes(sizes: Sequence[TypeSize], nodes: int) -> str:
    lines = ["| type | count | inputs KB each | outputs KB each | whole KB each | KB per node |", "|---|---|---|---|---|---|"]
    for s in sizes:
        each = [s.inputs / s.count / 1024, s.outputs / s.count / 1024, s.whole / s.count / 1024]
        cells = [f"`{s.type}`", str(s.count), *(f"{v:.1f}" for v in each), f"{s.whole / nodes / 1024:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    total = sum(s.whole for s in sizes)
    lines.append(f"| all | {sum(s.count for s in sizes)} | | | {total / 1024:.1f} | {total / nodes / 1024:.1f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export", type=Path, help="the output of `pulumi stack export`")
    parser.add_argument("--nodes", type=int, required=True, help="the stack's node count")
    args = parser.parse_args(argv)
    print(format_sizes(sizes_by_type(json.loads(args.export.read_text())), args.nodes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
