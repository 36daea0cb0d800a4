"""The base of every failure a user is meant to read: its message names what is wrong and the way out.

Internal signals (a watch that expired, a write that raced another) are not among them; a
program embedding gpu-nodes can catch `GpuNodesError` to tell its users' mistakes and their
machines' faults from bugs.
"""

from __future__ import annotations

import pulumi


class GpuNodesError(pulumi.RunError):
    """A failure for the operator: bad stack config, a node that stays gated, an object or a
    device plugin that is someone else's. A `pulumi.RunError`: raised in a program, Pulumi shows
    its message without a traceback."""
