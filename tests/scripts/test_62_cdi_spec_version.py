"""The CDI spec version (62-cdi-spec-version.sh), asked by the cdi and dra-cdi checks: the runtime
must read the cdiVersion the machine's specs carry. Toolkit 1.19.1 writes 0.7.0 (its release notes'
known issue; nvidia-container-toolkit issues 1860 and 1940); what each runtime release reads is the
CDI library its go.mod vendors (fixtures/README.md, "The CDI spec version")."""

from __future__ import annotations

import pytest

from .check_cases import CheckCase, run_case
from .machines import containerd_17_cdi_on
from .preflight_node import FakeNode

REQUIRE_CDI = ("--require-cdi",)
# A spec as toolkit 1.19.1 writes it: cdiVersion 0.7.0, and the 0.7.0 field older libraries refuse.
SPEC_0_7 = (
    '---\ncdiVersion: "0.7.0"\nkind: nvidia.com/gpu\ndevices:\n- name: all\n  containerEdits:\n'
    "    deviceNodes:\n    - path: /dev/nvidia0\ncontainerEdits:\n  additionalGids:\n  - 44\n"
)


def containerd_at(version: str, toolkit: str = "1.19.1"):
    def arrange(node: FakeNode) -> None:
        containerd_17_cdi_on(node, version)
        node.nvidia_ctk(toolkit)

    return arrange


def crio_at(version: str):
    """CRI-O `version`, configured for nvidia as nvidia-ctk writes its drop-in, as `crio --version` prints it."""

    def arrange(node: FakeNode) -> None:
        node.drop_command("containerd")
        node.remove("etc/containerd")
        node.file("etc/crio/crio.conf", '[crio.runtime]\ndefault_runtime = "crun"\n')
        node.file(
            "etc/crio/crio.conf.d/99-nvidia.toml",
            '[crio.runtime.runtimes.nvidia]\nruntime_path = "/usr/bin/nvidia-container-runtime"\n',
        )
        node.command("crio", f'[ "$1" = --version ] || exit 1\necho "crio version {version}"\necho "Version:        {version}"')

    return arrange


CASES = [
    CheckCase(
        "containerd 1.7.15 cannot read the 0.7.0 specs toolkit 1.19.1 writes",
        containerd_at("v1.7.15"),
        REQUIRE_CDI,
        ok=False,
        says=(
            "containerd 1.7.15 reads CDI specs up to cdiVersion 0.6.0",
            "toolkit 1.19.1 writes cdiVersion 0.7.0",
            '"unresolvable CDI devices"',
            "upgrade containerd to 1.7.16 or later",
        ),
    ),
    CheckCase("containerd 1.7.16 reads them", containerd_at("v1.7.16"), REQUIRE_CDI, ok=True),
    CheckCase("containerd 1.7.15 reads what toolkit 1.18.2 writes", containerd_at("v1.7.15", "1.18.2"), REQUIRE_CDI, ok=True),
    CheckCase(
        "a 0.7.0 spec already on the machine is judged whatever the toolkit",
        lambda node: (containerd_at("v1.7.13", "1.18.2")(node), node.file("etc/cdi/nvidia.yaml", SPEC_0_7)),
        REQUIRE_CDI,
        ok=False,
        says=("containerd 1.7.13 reads CDI specs up to cdiVersion 0.6.0", "/etc/cdi/nvidia.yaml is cdiVersion 0.7.0"),
    ),
    CheckCase(
        "CRI-O 1.29 cannot read them",
        crio_at("1.29.4"),
        REQUIRE_CDI,
        runtime="cri-o",
        ok=False,
        says=("cri-o 1.29.4 reads CDI specs up to cdiVersion 0.6.0", "upgrade cri-o to 1.30.0 or later"),
    ),
    CheckCase("CRI-O 1.30 reads them", crio_at("1.30.0"), REQUIRE_CDI, runtime="cri-o", ok=True),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_runtime_reads_the_cdi_spec_version(node: FakeNode, case: CheckCase) -> None:
    run_case(node, case, "cdi")


def test_a_dra_group_is_told_the_same(node: FakeNode) -> None:
    containerd_at("v1.7.15")(node)
    check = node.preflight("--allocator", "dra").check("dra-cdi")
    assert check["ok"] is False and "upgrade containerd to 1.7.16 or later" in check["detail"], check
