"""The script's main (90-main.sh): every check, in order, on a machine that passes them all."""

from __future__ import annotations

from .preflight_node import CHECK_NAMES, PASSED_EXIT, FakeNode


def test_healthy_node_passes_every_check_in_order(node: FakeNode) -> None:
    result = node.preflight()
    assert result.returncode == PASSED_EXIT, result.stderr
    assert result.report["ok"] is True
    assert [c["name"] for c in result.report["checks"]] == CHECK_NAMES
    assert all(c["ok"] for c in result.report["checks"]), result.report["checks"]
