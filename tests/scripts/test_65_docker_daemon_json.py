"""The docker daemon.json reader of the preflight script (65-docker-daemon-json.sh), on its own.

It reads two things, `runtimes.nvidia` (present?) and `default-runtime`, and rejects what
dockerd would refuse to start with: a file that is not one JSON object. Upstream samples are
in fixtures/ (fixtures/README.md names each source); the machine-level docker tests are in
test_60_check_runtime.py and test_61_running_runtime.py.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

import pytest

from gpu_nodes.preflight.command import SCRIPT_DIR

from .preflight_node import BASH, FIXTURES

# The reader and what it uses (json_str for its messages).
PARTS = [SCRIPT_DIR / "10-report.sh", SCRIPT_DIR / "65-docker-daemon-json.sh"]
PROBE = 'json_scan_daemon "$(cat)"; rc=$?; printf "%s\\n%s\\n%s\\n%s" "$rc" "$JP_HAS_NVIDIA" "$JP_DEFAULT" "$JP_ERR"'


@dataclass(frozen=True)
class Read:
    valid: bool
    has_nvidia: bool
    default: str
    error: str


def read(text: str) -> Read:
    script = "".join(part.read_text() for part in PARTS) + PROBE
    proc = subprocess.run([BASH, "-c", script], input=text, capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    rc, has_nvidia, default, error = proc.stdout.split("\n", 3)
    return Read(rc == "0", has_nvidia == "true", default, error)


def test_dockers_documented_full_example_has_no_nvidia_runtime():
    """Every option dockerd accepts on Linux: nested objects, arrays of objects, numbers, booleans."""
    assert read((FIXTURES / "docker-daemon-full-example-linux.json").read_text()) == Read(True, False, "runc", "")


def test_nvidia_ctk_configure_adds_the_runtime():
    assert read((FIXTURES / "docker-daemon-nvidia-ctk.json").read_text()) == Read(True, True, "runc", "")


def test_nvidia_ctk_configure_set_as_default():
    assert read((FIXTURES / "docker-daemon-nvidia-ctk-default.json").read_text()) == Read(True, True, "nvidia", "")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{}", Read(True, False, "", "")),
        (' \n{"default-runtime": "nvidia"}\n\n', Read(True, False, "nvidia", "")),
        # Only the top-level keys count, not the same names deeper down.
        ('{"features": {"runtimes": {"nvidia": {}}}}', Read(True, False, "", "")),
        ('{"runtimes": {"custom": {"default-runtime": "nvidia", "path": "nvidia"}}}', Read(True, False, "", "")),
        ('{"runtimes": {"nvidia-cdi": {"path": "x"}}}', Read(True, False, "", "")),
        # Strings may hold quotes, braces and brackets.
        ('{"labels": ["a\\"}{]["], "default-runtime": "nvidia"}', Read(True, False, "nvidia", "")),
        # dockerd (Go's encoding/json) takes the last of two equal keys.
        ('{"default-runtime": "nvidia", "default-runtime": "runc"}', Read(True, False, "runc", "")),
        ('{"runtimes": {"nvidia": {"args": [], "path": "/usr/bin/nvidia-container-runtime"}}}', Read(True, True, "", "")),
    ],
)
def test_reads_the_two_keys_where_dockerd_reads_them(text: str, expected: Read):
    assert read(text) == expected


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('{\n  "runtimes": {"nvidia": {"path": "x",}}\n}', 'expected a quoted key at line 2, found "}"'),
        ('{"a" 1}', "expected ':' at line 1, found \"1\""),
        ('{"a": 1 "b": 2}', "expected ',' or '}' at line 1, found \"\\\"\""),
        ('{"a": [1 2]}', "expected ',' or ']' at line 1, found \"2\""),
        ('{"a": "open', 'unterminated string at line 1, found "\\""'),
        ('{"a": tru}', 'unexpected character at line 1, found "t"'),
        ("[]", 'expected an object at line 1, found "["'),
        ('{"a": 1} {}', 'unexpected text after the object at line 1, found "{"'),
        ('{"a": ', "unexpected end of file at line 1, at the end of the file"),
        ('{"a": ' + "[" * 70 + "]" * 70 + "}", 'nested too deeply at line 1, found "["'),
    ],
)
def test_what_dockerd_would_refuse_is_reported_with_its_line(text: str, error: str):
    result = read(text)
    # What was read before the mistake is not used: inspect_docker stops at the error.
    assert (result.valid, result.error) == (False, error), result


def scan(text: str, values: str, keys: str) -> list[str]:
    """json_scan with JP_WANT values and JP_WANT_KEYS keys: each wanted path's value, then its keys."""
    script = "".join(part.read_text() for part in PARTS)
    script += f'JP_WANT=" {values} " JP_WANT_KEYS=" {keys} "\njson_scan "$(cat)" || exit 3\n'
    script += f'for p in {values}; do printf "%s\\n" "${{JP_VALUE[$p]-}}"; done\n'
    script += f'for p in {keys}; do printf "%s\\n" "${{JP_KEYS[$p]-}}"; done'
    proc = subprocess.run([BASH, "-c", script], input=text, capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0 and not proc.stderr, (proc.returncode, proc.stderr)
    return proc.stdout.splitlines()


def test_crictl_info_gives_the_running_containerds_default_runtimes_and_cdi():
    """containerd's docs/cri/crictl.md sample: `defaultRuntime` (an object) beside `defaultRuntimeName`."""
    text = (FIXTURES / "crictl-info-containerd-1.7.json").read_text()
    got = scan(text, "/config/containerd/defaultRuntimeName /config/enableCDI", "/config/containerd/runtimes")
    assert got == ["runc", "false", "runc"], got


def test_docker_info_gives_the_running_dockerds_default_and_runtimes():
    got = scan((FIXTURES / "docker-info.json").read_text(), "/DefaultRuntime", "/Runtimes")
    assert got == ["runc", "io.containerd.runc.v2 runc"], got
