"""The cdi check (62-check-cdi.sh), --require-cdi (gpuAccess: cdi): kubelet and the runtime must
pass the plugin's CDI devices on to a tenant's pod. containerd configs are upstream files
(fixtures/README.md names each); the nvidia runtime tables appended to them are what
`nvidia-ctk runtime configure` adds, and what `containerd config dump` then shows (machines.py)."""

from __future__ import annotations

import pytest

from .check_cases import CheckCase, run_case
from .machines import CONTAINERD_2, CONTAINERD_17, containerd, containerd_2, containerd_17, containerd_17_cdi_on
from .preflight_node import FAILED_EXIT, FIXTURES, PASSED_EXIT, FakeNode

REQUIRE_CDI = ("--require-cdi",)


def containerd_answers(version: str, dump: str):
    return lambda node: containerd(node, version, dump)


def kubelet_1_28(node: FakeNode) -> None:
    containerd(node, CONTAINERD_2, containerd_2())
    node.kubelet("v1.28.9")


def docker_behind_cri_dockerd(node: FakeNode) -> None:
    node.command("dockerd", "exit 0")
    node.file("etc/docker/daemon.json", (FIXTURES / "docker-daemon-nvidia-ctk-default.json").read_text())


CASES = [
    *(
        CheckCase(
            f"containerd 2 resolves CDI devices, {why}",
            containerd_answers(CONTAINERD_2, dump),
            REQUIRE_CDI,
            exit=PASSED_EXIT,
            ok=True,
            says=("containerd (containerd v2.0.5) resolves CDI devices",),
        )
        for dump, why in [(containerd_2(), "enable_cdi true"), (containerd_2(None), "enable_cdi unset")]
    ),
    CheckCase(
        "containerd 2 with CDI turned off fails with the fix",
        containerd_answers(CONTAINERD_2, containerd_2("false")),
        REQUIRE_CDI,
        exit=FAILED_EXIT,
        ok=False,
        says=(
            "has CDI turned off (enable_cdi = false; read containerd config dump)",
            "set enable_cdi = true under [plugins.'io.containerd.cri.v1.runtime']",
        ),
    ),
    CheckCase(
        "containerd 1.7 without enable_cdi fails with the fix",
        containerd_answers(CONTAINERD_17, containerd_17(enable_cdi=False)),
        REQUIRE_CDI,
        exit=FAILED_EXIT,
        ok=False,
        says=(
            "containerd 1.x needs enable_cdi = true and none is set",
            'set enable_cdi = true under [plugins."io.containerd.grpc.v1.cri"]',
            "restart containerd",
        ),
    ),
    CheckCase(
        "containerd 1.7 with enable_cdi passes",
        containerd_answers(CONTAINERD_17, containerd_17(enable_cdi=True)),
        REQUIRE_CDI,
        exit=PASSED_EXIT,
        ok=True,
    ),
    *(
        CheckCase(
            f"containerd {version} reads no CDI devices from the CRI",
            lambda node, version=version: containerd_17_cdi_on(node, version),
            REQUIRE_CDI,
            ok=False,
            says=(
                f"containerd {version} reads no CDI devices from the CRI (from 1.7.2 on)",
                "upgrade containerd to 1.7.2 or later",
            ),
        )
        for version in ["v1.7.0", "v1.7.1", "v1.6.33"]
    ),
    CheckCase(
        "containerd 1.7.2 with CDI on passes where its specs are of a version it reads",
        lambda node: (containerd_17_cdi_on(node, "v1.7.2"), node.nvidia_ctk("1.18.2")),
        REQUIRE_CDI,
        ok=True,
    ),
    CheckCase(
        "a kubelet before 1.29 passes no CDI devices",
        kubelet_1_28,
        REQUIRE_CDI,
        ok=False,
        says=("kubelet v1.28.9 passes no CDI devices", "upgrade kubelet to 1.29"),
    ),
    CheckCase(
        "docker behind cri-dockerd cannot take the CDI path",
        docker_behind_cri_dockerd,
        REQUIRE_CDI,
        runtime="docker",
        ok=False,
        says=("cri-dockerd passes no CDI devices", "gpuAccess defaultRuntime"),
    ),
    CheckCase(
        "without --require-cdi the check is not requested",
        containerd_answers(CONTAINERD_17, containerd_17(enable_cdi=False)),
        ok=True,
        detail="not requested",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_cdi_check(node: FakeNode, case: CheckCase) -> None:
    run_case(node, case, "cdi")
