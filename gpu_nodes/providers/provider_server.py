"""Our two patches of Pulumi's Python provider server, made when one of our modules loads in it.

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

import gc
import sys
import traceback
import types
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from gpu_nodes.errors import GpuNodesError

# Threads that wait cost a stack each and no CPU; the engine's --parallel is the real bound.
DYNAMIC_PROVIDER_WORKERS = 256


def in_dynamic_provider_server() -> bool:
    main = sys.modules.get("__main__")
    return str(getattr(main, "__file__", "") or "").replace("\\", "/").endswith("pulumi/dynamic/__main__.py")


def raise_worker_limit(workers: int = DYNAMIC_PROVIDER_WORKERS) -> list[ThreadPoolExecutor]:
    """Raise the limit of every thread pool in this process that has fewer workers; returns them.

    Only the gRPC server's pool exists in the provider server when our code first loads. The
    limit is ThreadPoolExecutor's `_max_workers`, read by each submit when it decides whether
    to start another thread (CPython's concurrent/futures/thread.py, `_adjust_thread_count`)."""
    raised = []
    for executor in (o for o in gc.get_objects() if isinstance(o, ThreadPoolExecutor)):
        if executor._max_workers < workers:
            executor._max_workers = workers
            raised.append(executor)
    return raised


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
    server.traceback = OperatorWords()


if in_dynamic_provider_server():
    raise_worker_limit()
    speak_in_operator_words(sys.modules["__main__"])
