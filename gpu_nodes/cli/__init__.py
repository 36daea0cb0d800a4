"""The `gpu-nodes` command (docs/fleet.md); `python -m gpu_nodes.cli` runs it too."""

from gpu_nodes.cli.main import main

__all__ = ["main"]
