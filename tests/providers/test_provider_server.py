"""Lifting the four-call limit of Pulumi's Python provider server for our dynamic resources."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from gpu_nodes.providers.provider_server import in_dynamic_provider_server, raise_worker_limit


def test_a_four_worker_pool_runs_every_waiting_call_once_raised():
    pool = ThreadPoolExecutor(max_workers=4)
    release, started = threading.Event(), threading.Semaphore(0)

    def wait() -> None:
        started.release()
        release.wait(10)

    try:
        assert pool in raise_worker_limit(16), "the pool was not raised"
        futures = [pool.submit(wait) for _ in range(8)]
        running = sum(started.acquire(timeout=5) for _ in range(8))
        assert running == 8, f"only {running} of 8 waiting calls ran at once"
    finally:
        release.set()
        for future in futures:
            future.result(timeout=10)
        pool.shutdown()


def test_a_larger_pool_is_left_alone():
    pool = ThreadPoolExecutor(max_workers=512)
    try:
        assert pool not in raise_worker_limit(256)
        assert pool._max_workers == 512
    finally:
        pool.shutdown()


def test_the_program_process_is_not_the_provider_server():
    assert in_dynamic_provider_server() is False
