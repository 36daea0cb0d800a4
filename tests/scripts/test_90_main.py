"""The script's main (90-main.sh): every check, in order, on a machine that passes them all."""

from __future__ import annotations

from gpu_nodes.preflight.command import parse_report
from gpu_nodes.preflight.report import NOT_CHECKED, read_report

from .preflight_node import CHECK_NAMES, FAILED_EXIT, PASSED_EXIT, FakeNode


def test_healthy_node_passes_every_check_in_order(node: FakeNode) -> None:
    result = node.preflight()
    assert result.returncode == PASSED_EXIT, result.stderr
    assert result.report["ok"] is True
    assert [c["name"] for c in result.report["checks"]] == CHECK_NAMES
    assert all(c["ok"] for c in result.report["checks"]), result.report["checks"]


def test_what_a_machine_prints_is_read_as_a_report_passed_or_failed(node: FakeNode) -> None:
    """gpu_nodes/preflight/report.py reads anything else as a machine not yet checked: every report
    the script prints must pass its shape check, or a real machine's facts would be lost."""
    passed = node.preflight()
    node.drop_command("nvidia-smi")
    failed = node.preflight()
    assert failed.returncode == FAILED_EXIT and not failed.report["ok"], failed.stderr
    for result in (passed, failed):
        assert read_report(result.stdout) == result.report, result.stdout
        assert parse_report(result.stdout) != NOT_CHECKED, result.stdout
