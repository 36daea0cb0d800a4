"""The report (10-report.sh): one JSON object on stdout, made without jq or python, every string in
it escaped; the human summary on stderr."""

from __future__ import annotations

import shutil

from .preflight_node import PASSED_EXIT, USAGE_EXIT, FakeNode


def test_stdout_holds_only_the_json_and_stderr_the_summary(node: FakeNode) -> None:
    node.command("nvidia-ctk", 'echo "stray line on stdout"; echo "NVIDIA Container Toolkit CLI version 1.17.8"')
    result = node.preflight()
    assert result.returncode == PASSED_EXIT, result.stderr
    assert result.stdout.count("\n") == 1 and result.stdout.startswith("{"), result.stdout
    assert "preflight: gpu-node-1 is READY" in result.stderr


def test_runs_with_neither_jq_nor_python_on_path(node: FakeNode) -> None:
    for tool in ("jq", "python", "python3"):
        assert shutil.which(tool, path=node.path_env()) is None, tool
    result = node.preflight()
    assert result.returncode == PASSED_EXIT, result.stderr
    assert result.report["ok"] is True


def test_special_characters_in_gpu_names_and_hostname_are_escaped(node: FakeNode) -> None:
    odd_name = 'NVIDIA "A100"\\PCIe\tüñ\x01 ✓'
    node.file("etc/hostname", 'node "7"\\b\n')
    node.healthy_nvidia_smi(f"0, {odd_name}, GPU-x, 550.54.15, 40960")
    result = node.preflight(gpus=1)
    assert result.returncode == PASSED_EXIT, result.stderr
    assert result.report["hostname"] == 'node "7"\\b'
    assert result.report["gpus"][0]["name"] == odd_name
    assert odd_name in result.check("driver")["detail"]


def test_newline_in_detail_is_escaped(bare_node: FakeNode) -> None:
    result = bare_node.run("--runtime", "con\ntainerd\r", "--expect-gpus", "1", with_root=False)
    assert result.returncode == USAGE_EXIT
    expected = "unknown runtime 'con\ntainerd\r': want containerd, docker, cri-o, k3s, rke2 or auto"
    assert result.check("usage")["detail"] == expected
