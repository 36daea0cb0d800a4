"""Our two patches of Pulumi's Python provider server, made when one of our modules loads in it
(each reach into the server is in gpu_nodes/pulumi_internals.py).

More than four of our dynamic resources at work at once.

The SDK serves every dynamic resource of a program from one process whose gRPC server runs at
most four calls at once (`pulumi/dynamic/__main__.py`, `main()`:
`grpc.server(futures.ThreadPoolExecutor(max_workers=4))`). A readiness check holds its call
for as long as it waits, up to `timeoutSeconds` + 30 s, so four nodes that cannot pass kept
every other node's taints, claims and readiness queued behind them: healthy nodes opened only
when failing ones timed out. When one of our modules is loaded in that server, this raises
the executor's limit. The engine's own `--parallel` (four steps per CPU by default) still
bounds how many steps run at once.

Failures in the operator's words. The server answers every failed call with
`context.abort(grpc.StatusCode.UNKNOWN, traceback.format_exc())` (`_abort_with_traceback` in
`pulumi/dynamic/__main__.py`), so a claim refusing a namespace reached the operator under a
dozen lines of our internals. The wrapper looks `traceback` up in the server module's globals
when a call fails, so replacing that one name is the whole patch: a `GpuNodesError` is sent as
its message, anything else (a bug) still with its traceback.
"""

from __future__ import annotations

import sys
import traceback
import types
from typing import Any

from gpu_nodes.errors import GpuNodesError
from gpu_nodes.pulumi_internals import dynamic_provider_server, raise_worker_limit, replace_failure_formatter

# Threads that wait cost a stack each and no CPU; the engine's --parallel is the real bound.
DYNAMIC_PROVIDER_WORKERS = 256


class OperatorWords(types.ModuleType):
    """The `traceback` module, but `format_exc` of a `GpuNodesError` is its message alone."""

    def __init__(self) -> None:
        super().__init__("traceback")

    def __getattr__(self, name: str) -> Any:
        return getattr(traceback, name)

    @staticmethod
    def format_exc(limit: int | None = None, chain: bool = True) -> str:
        error = sys.exc_info()[1]
        if isinstance(error, GpuNodesError):
            return str(error)
        return traceback.format_exc(limit, chain)


def speak_in_operator_words(server: Any) -> None:
    """Make the provider server module `server` report our failures by their message."""
    replace_failure_formatter(server, OperatorWords())


if (server := dynamic_provider_server()) is not None:
    raise_worker_limit(DYNAMIC_PROVIDER_WORKERS)
    speak_in_operator_words(server)
