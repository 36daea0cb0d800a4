import subprocess
import sys
from pathlib import Path

# The program imports `components` as its own top-level package, as `pulumi up` runs it.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def pytest_report_header() -> str:
    """Which parts of the engine the e2e tiers run: the real ones, or our stand-ins."""
    parts = subprocess.run(
        ["bash", "-c", 'source tools/engine/env.sh 2>/dev/null && echo "$GPU_NODES_ENGINE_PARTS"'],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return f"engine parts: {parts or 'not built'}"
