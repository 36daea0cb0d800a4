"""The device-plugin-socket check (70-check-device-plugin-socket.sh): kubelet's registration socket
must be there, and be a socket."""

from __future__ import annotations

import pytest

from .check_cases import CheckCase, run_case
from .preflight_node import FAILED_EXIT, FakeNode

SOCKET = "var/lib/kubelet/device-plugins/kubelet.sock"

CASES = [
    CheckCase(
        "missing socket fails",
        lambda node: node.remove(SOCKET),
        exit=FAILED_EXIT,
        ok=False,
        starts=f"/{SOCKET} is missing",
    ),
    CheckCase(
        "a regular file instead of the socket fails",
        lambda node: [node.remove(SOCKET), node.file(SOCKET, "")],
        exit=FAILED_EXIT,
        ok=False,
        says=("exists but is not a socket",),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_device_plugin_socket_check(node: FakeNode, case: CheckCase) -> None:
    run_case(node, case, "device-plugin-socket")
