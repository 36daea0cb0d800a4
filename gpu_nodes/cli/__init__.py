"""The `gpu-nodes` command (README, "The fleet command"); `python -m gpu_nodes.cli` runs it too."""

from gpu_nodes.cli.main import main

__all__ = ["main"]
