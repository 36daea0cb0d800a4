"""The isolation check (64-check-isolation.sh): whether a pod can see GPUs it was not given.

Under --require-cdi (gpuAccess: cdi) nvidia must not be the default runtime. With
--isolation strict the container toolkit must be hardened; without it, a toolkit hardened
already leaves the device plugin's envvar list unread. The toolkit's config.toml is the
package's own (fakehost.TOOLKIT_CONFIG, fixtures/README.md names its source); the hardened
one is what nvidia-ctk writes for the two settings (fakehost.TOOLKIT_CONFIG_HARDENED)."""

from __future__ import annotations

import pytest

from tests.sshd import fakehost

from .machines import runc_default
from .preflight_node import FAILED_EXIT, PASSED_EXIT, FakeNode

CONFIG = "etc/nvidia-container-runtime/config.toml"
ENVVAR_KEY = "accept-nvidia-visible-devices-envvar-when-unprivileged"
MOUNTS_KEY = "accept-nvidia-visible-devices-as-volume-mounts"
ONLY_ENVVAR_OFF = fakehost.TOOLKIT_CONFIG.replace(f"#{ENVVAR_KEY} = true", f"{ENVVAR_KEY} = false")
# The keys are top-level: under a table they are other keys, and the toolkit's defaults stand.
UNDER_A_TABLE = fakehost.TOOLKIT_CONFIG + f"\n[nvidia-container-cli.extra]\n{ENVVAR_KEY} = false\n{MOUNTS_KEY} = true\n"


def isolation(node: FakeNode, *args: str) -> tuple[dict, int]:
    result = node.preflight(*args)
    return result.check("isolation"), result.returncode


# --- default isolation ------------------------------------------------------------------


def test_default_isolation_on_a_stock_toolkit_passes_and_says_what_pods_can_see(node: FakeNode) -> None:
    check, code = isolation(node)
    assert check["ok"] is True and code == PASSED_EXIT, check
    assert f"{ENVVAR_KEY} is true (the toolkit's default; read /etc/nvidia-container-runtime/config.toml)" in check["detail"]
    assert "sees every GPU" in check["detail"] and "isolation: strict" in check["detail"], check


def test_default_isolation_says_when_the_config_sets_the_default_itself(node: FakeNode) -> None:
    node.file(CONFIG, fakehost.TOOLKIT_CONFIG.replace(f"#{ENVVAR_KEY} = true", f"{ENVVAR_KEY} = true"))
    check, _ = isolation(node)
    assert check["ok"] is True, check
    assert f"{ENVVAR_KEY} is true (set in /etc/nvidia-container-runtime/config.toml)" in check["detail"], check


def test_a_missing_toolkit_config_is_the_toolkits_defaults(node: FakeNode) -> None:
    node.remove(CONFIG)
    check, code = isolation(node)
    assert check["ok"] is True and code == PASSED_EXIT, check
    assert "no /etc/nvidia-container-runtime/config.toml: the toolkit's defaults" in check["detail"], check


@pytest.mark.parametrize("config", [fakehost.TOOLKIT_CONFIG_HARDENED, ONLY_ENVVAR_OFF])
def test_a_hardened_toolkit_fails_default_isolation_naming_the_setting(node: FakeNode, config: str) -> None:
    node.file(CONFIG, config)
    check, code = isolation(node)
    assert check["ok"] is False and code == FAILED_EXIT, check
    assert f"{ENVVAR_KEY} = false in /etc/nvidia-container-runtime/config.toml" in check["detail"], check
    assert "the device plugin's envvar list" in check["detail"], check
    assert "set the group's isolation: strict" in check["detail"], check


def test_a_hardened_toolkit_under_cdi_says_the_plugin_itself_gets_no_gpu(node: FakeNode) -> None:
    runc_default(node)
    node.file(CONFIG, fakehost.TOOLKIT_CONFIG_HARDENED)
    check, _ = isolation(node, "--require-cdi")
    assert check["ok"] is False, check
    assert "the device plugin itself" in check["detail"] and "set the group's isolation: strict" in check["detail"], check


def test_the_settings_count_only_at_the_top_level(node: FakeNode) -> None:
    node.file(CONFIG, UNDER_A_TABLE)
    check, _ = isolation(node)
    assert check["ok"] is True, check
    check, _ = isolation(node, "--isolation", "strict")
    assert check["ok"] is False, check


# --- strict isolation -------------------------------------------------------------------


def test_strict_isolation_on_a_hardened_toolkit_passes(node: FakeNode) -> None:
    node.file(CONFIG, fakehost.TOOLKIT_CONFIG_HARDENED)
    check, code = isolation(node, "--isolation", "strict")
    assert check["ok"] is True and code == PASSED_EXIT, check
    assert f"strict: {ENVVAR_KEY} = false, {MOUNTS_KEY} = true" in check["detail"], check


@pytest.mark.parametrize(
    ("config", "missing"),
    [
        (fakehost.TOOLKIT_CONFIG, [f"{ENVVAR_KEY} = false (it is true)", f"{MOUNTS_KEY} = true (it is false)"]),
        (ONLY_ENVVAR_OFF, [f"{MOUNTS_KEY} = true (it is false)"]),
        (None, [f"{ENVVAR_KEY} = false (it is true)", f"{MOUNTS_KEY} = true (it is false)"]),
    ],
)
def test_strict_isolation_on_a_toolkit_not_hardened_fails_naming_what_to_set(
    node: FakeNode, config: str | None, missing: list[str]
) -> None:
    if config is None:
        node.remove(CONFIG)
    else:
        node.file(CONFIG, config)
    check, code = isolation(node, "--isolation", "strict")
    assert check["ok"] is False and code == FAILED_EXIT, check
    for item in missing:
        assert item in check["detail"], check
    assert "in /etc/nvidia-container-runtime/config.toml, at the top level" in check["detail"], check


def test_strict_isolation_fails_when_the_toolkit_config_cannot_be_parsed_as_a_value(node: FakeNode) -> None:
    node.file(CONFIG, fakehost.TOOLKIT_CONFIG_HARDENED.replace(f"{ENVVAR_KEY} = false", f'{ENVVAR_KEY} = "false"'))
    check, _ = isolation(node, "--isolation", "strict")
    assert check["ok"] is False, check
    assert f'{ENVVAR_KEY} = "false"' in check["detail"] and "not true or false" in check["detail"], check


# --- CDI: nvidia must not be the default runtime ----------------------------------------


def test_cdi_with_nvidia_as_the_default_runtime_fails_naming_it_and_the_fix(node: FakeNode) -> None:
    # The healthy node's drop-in makes nvidia containerd's default.
    check, code = isolation(node, "--require-cdi")
    assert check["ok"] is False and code == FAILED_EXIT, check
    assert "nvidia is containerd's default runtime (read containerd config dump)" in check["detail"], check
    assert "docs/cdi.md" in check["detail"], check
    assert "nvidia-ctk runtime configure --runtime=containerd without --set-as-default" in check["detail"], check
    assert "restart containerd" in check["detail"], check


def test_cdi_with_runc_as_the_default_runtime_passes(node: FakeNode) -> None:
    runc_default(node)
    check, code = isolation(node, "--require-cdi")
    assert check["ok"] is True, check
    assert "nvidia is not containerd's default runtime (runc is)" in check["detail"], check


def test_nvidia_as_the_default_is_what_default_runtime_access_wants(node: FakeNode) -> None:
    check, _ = isolation(node, "--require-default-runtime")
    assert check["ok"] is True, check
