"""Print the per-node report from `pulumi stack output nodeGroups --json` (read on stdin).

One row per node: what preflight found, then the runbook's final checklist (each item pass
or FAIL) and whether the readiness gate is still up (gpu_nodes/cli/node_table.py, which the
fleet command prints too). Run from the checkout: `python -m tools.local.report`.
"""

from __future__ import annotations

import json
import sys

from gpu_nodes.cli.node_table import HEADER, aligned, rows


def main() -> None:
    for line in aligned([HEADER, *rows(json.load(sys.stdin))]):
        print(line)


if __name__ == "__main__":
    main()
