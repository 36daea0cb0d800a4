"""Our patches of Pulumi's Python provider server: failures in the operator's words, made on load.

The four-call limit and each reach into the server: tests/test_pulumi_internals.py."""

from __future__ import annotations

import subprocess
import sys
import traceback
import types

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
from gpu_nodes.providers.provider_server import speak_in_operator_words


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
