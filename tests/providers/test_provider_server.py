"""Our patches of Pulumi's Python provider server: its four-call limit, and failures in the operator's words."""

from __future__ import annotations

import subprocess
import sys
import threading
import traceback
import types
from concurrent.futures import ThreadPoolExecutor

import pytest

from gpu_nodes.errors import (
    ClaimError,
    ClusterViewUnavailableError,
    NodeKeptChangingError,
    NodeNotFoundError,
    NodeNotReadyError,
    OtherPluginError,
    TaintConflictError,
)
from gpu_nodes.providers.provider_server import in_dynamic_provider_server, raise_worker_limit, speak_in_operator_words


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


def _formatted(error: Exception) -> str:
    """What the provider server sends the engine for `error`: its `traceback.format_exc()`, once patched."""
    server = types.SimpleNamespace(traceback=traceback)
    speak_in_operator_words(server)
    try:
        raise error
    except Exception:
        return str(server.traceback.format_exc())


@pytest.mark.parametrize(
    "error",
    [
        ClaimError("Namespace nvidia-device-plugin exists already, created by someone else"),
        OtherPluginError("another NVIDIA device plugin would share this stack's nodes"),
        NodeNotReadyError("node gpu-0 stays gated (gpu-nodes.dev/unverified) after 30s"),
        TaintConflictError("the node already has taint nvidia.com/gpu=other:NoSchedule, set by someone else"),
        NodeKeptChangingError("node gpu-0: its taints changed under us 8 times in a row; run pulumi up again"),
        NodeNotFoundError("node gpu-0 not found"),
        ClusterViewUnavailableError("cannot read the cluster: https://10.0.0.1:6443 did not answer the list of nodes"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_a_failure_of_ours_reaches_the_operator_as_its_message_only(error):
    sent = _formatted(error)
    assert sent == str(error), f"{type(error).__name__} reached the engine as {sent!r}"


def test_an_unexpected_bug_still_shows_its_traceback():
    sent = _formatted(KeyError("node"))
    assert sent.startswith("Traceback (most recent call last):") and "KeyError: 'node'" in sent, sent


def test_the_rest_of_the_traceback_module_is_left_as_it_was():
    server = types.SimpleNamespace(traceback=traceback)
    speak_in_operator_words(server)
    assert server.traceback.format_exception is traceback.format_exception


@pytest.mark.parametrize("module", [f"gpu_nodes.providers.{name}" for name in ("taints", "readiness", "claims", "coexistence")])
def test_loading_a_provider_loads_the_patches(module):
    """The provider server loads a provider's module by the import path in the state, and nothing else of ours."""
    code = f"import sys, {module}; print('gpu_nodes.providers.provider_server' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "True", f"{module} loads without gpu_nodes/providers/provider_server.py"
