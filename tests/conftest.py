import subprocess
from pathlib import Path


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
