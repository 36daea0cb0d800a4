"""More than four of our dynamic resources at work at once, in Pulumi's Python provider server.

The SDK serves every dynamic resource of a program from one process whose gRPC server runs at
most four calls at once (`pulumi/dynamic/__main__.py`, `main()`:
`grpc.server(futures.ThreadPoolExecutor(max_workers=4))`). A readiness check holds its call
for as long as it waits, up to `timeoutSeconds` + 30 s, so four nodes that cannot pass kept
every other node's taints, claims and readiness queued behind them: healthy nodes opened only
when failing ones timed out. When one of our modules is loaded in that server, this raises
the executor's limit. The engine's own `--parallel` (four steps per CPU by default) still
bounds how many steps run at once.
"""

from __future__ import annotations

import gc
import sys
from concurrent.futures import ThreadPoolExecutor

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


if in_dynamic_provider_server():
    raise_worker_limit()
