"""The environment `tools/local/env.sh` sets up, for Python callers (the e2e tier, bench/).

The engine, the control plane's binaries and kubeconfig, PULUMI_HOME and the passphrase come
from the shell script itself, sourced by a real bash, so there is one definition of them.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# As in tools/local/env.sh, which says why: the file backend writes no sidecar a kill can truncate.
FILE_BACKEND_QUERY = "metadata=skip"


def local_environment(backend: Path) -> dict[str, str]:
    """The variables tools/local/env.sh exports, with the file backend moved to `backend`."""
    out = subprocess.run(
        ["bash", "-c", "source tools/local/env.sh >/dev/null && env -0"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    env = dict(item.split("=", 1) for item in out.split("\0") if "=" in item)
    env["PULUMI_BACKEND_URL"] = f"file://{backend}?{FILE_BACKEND_QUERY}"
    return env
