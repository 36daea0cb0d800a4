"""The dra-* checks (68-check-dra.sh), --allocator dra (the group's allocator: dra): the machine must
meet the documented prerequisites of NVIDIA's DRA driver: kubelet 1.34.2 or later, an R565 or later
driver, toolkit 1.18.0 or later, CDI on in the running runtime, and DynamicResourceAllocation not
turned off. Under dra the device plugin's socket is not judged, nor, with --require-cdi, the device
plugin's CDI hook program. Without --allocator dra, nothing changes: each dra-* check is "not requested"."""

from __future__ import annotations

from dataclasses import replace

import pytest

from .check_cases import CheckCase, run_case
from .machines import CONTAINERD_2, CONTAINERD_17, containerd, containerd_2, docker_ce_machine, fixture
from .preflight_node import CHECK_NAMES, FAILED_EXIT, FIXTURES, GPU_LINES, NVIDIA_DROPIN, PASSED_EXIT, FakeNode, fakehost, heredoc

DRA = ("--allocator", "dra")
# What the DRA driver's floors are for GPU allocation (68-check-dra.sh, from its docs/prerequisites.md).
SOURCE = "kubernetes-sigs/dra-driver-nvidia-gpu docs/prerequisites.md"
DRIVER = "580.95.05"
DRA_CHECKS = ["dra-kubelet", "dra-driver-version", "dra-toolkit", "dra-cdi", "dra-feature-gates"]
KUBELET_CONFIG = "var/lib/kubelet/config.yaml"


def running_containerd(node: FakeNode, enable_cdi: bool) -> None:
    """crictl info of the running containerd, nvidia its default, CDI on or off."""
    node.crictl(fakehost.crictl_info(default_runtime="nvidia", nvidia=True, enable_cdi=enable_cdi))


def dra_ready(node: FakeNode) -> FakeNode:
    """The healthy node as NVIDIA's DRA driver wants it (fakehost.dra_ready): kubelet v1.34.2, an R580
    driver, the running containerd 1.7 resolving CDI devices."""
    machine = fakehost.dra_ready(fakehost.MachineSpec(gpus=2))
    node.healthy_nvidia_smi(GPU_LINES.replace("550.54.15", machine.driver), fakehost.smi_table(machine))
    node.kubelet(machine.kubelet_version)
    containerd(node, CONTAINERD_17, NVIDIA_DROPIN)
    running_containerd(node, enable_cdi=machine.cdi)
    return node


def then(*steps):
    """The DRA-ready node, then steps."""

    def arrange(node: FakeNode) -> None:
        dra_ready(node)
        for step in steps:
            step(node)

    return arrange


def kubelet(version: str):
    return lambda node: node.kubelet(version)


def gate(value: str):
    """kubelet's config file sets DynamicResourceAllocation to value."""
    return lambda node: node.file(KUBELET_CONFIG, fakehost.kubelet_config((("DynamicResourceAllocation", value == "true"),)))


def docker_behind_cri_dockerd(node: FakeNode) -> None:
    docker_ce_machine(node, fixture("docker-daemon-nvidia-ctk-default.json"))
    node.drop_command("crictl")


CASES = [
    # ------------------------------------------------------------ dra-kubelet
    CheckCase(
        "dra-kubelet: 1.34.2 passes",
        then(),
        DRA,
        ok=True,
        detail="kubelet v1.34.2 >= 1.34.2, NVIDIA's DRA driver's floor for GPU allocation",
    ),
    CheckCase(
        "dra-kubelet: 1.33 fails with the floor, its source and the fix",
        then(kubelet("v1.33.5")),
        DRA,
        exit=FAILED_EXIT,
        ok=False,
        detail=f"kubelet v1.33.5 < 1.34.2: NVIDIA's DRA driver allocates GPUs from Kubernetes 1.34.2 on ({SOURCE}): "
        "upgrade the node to Kubernetes 1.34.2 or later",
    ),
    CheckCase(
        "dra-kubelet: the floor is a patch release", then(kubelet("v1.34.1")), DRA, ok=False, starts="kubelet v1.34.1 < 1.34.2"
    ),
    CheckCase(
        "dra-kubelet: no kubelet",
        then(lambda node: node.drop_command("kubelet")),
        DRA,
        ok=False,
        starts="kubelet is not on PATH, so whether kubelet meets NVIDIA's DRA driver (Kubernetes 1.34.2 or later",
    ),
    # ----------------------------------------------------- dra-driver-version
    CheckCase(
        "dra-driver-version: R580 passes",
        then(),
        DRA,
        ok=True,
        detail=f"{DRIVER} >= 565, NVIDIA's DRA driver's floor for GPU allocation",
    ),
    CheckCase(
        "dra-driver-version: R550 fails with the floor and the fix",
        lambda node: [dra_ready(node), node.healthy_nvidia_smi(GPU_LINES)],
        DRA,
        exit=FAILED_EXIT,
        ok=False,
        detail=f"550.54.15 < 565, NVIDIA's DRA driver's floor for GPU allocation ({SOURCE}): "
        "upgrade the NVIDIA driver to R565 or later",
    ),
    CheckCase(
        "dra-driver-version: no driver",
        then(lambda node: node.nvidia_smi("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.", 9)),
        DRA,
        ok=False,
        detail="driver version unknown (see the driver check), NVIDIA's DRA driver needs >= 565",
    ),
    # ------------------------------------------------------------ dra-toolkit
    CheckCase("dra-toolkit: 1.19.1 passes", then(), DRA, ok=True, detail="NVIDIA Container Toolkit 1.19.1 >= 1.18.0"),
    CheckCase(
        "dra-toolkit: 1.17.8 fails",
        then(lambda node: node.nvidia_ctk("1.17.8")),
        DRA,
        ok=False,
        detail=f"NVIDIA Container Toolkit 1.17.8 < 1.18.0, NVIDIA's DRA driver's floor ({SOURCE}): upgrade the toolkit",
    ),
    # ---------------------------------------------------------------- dra-cdi
    CheckCase(
        "dra-cdi: the running containerd resolves CDI devices",
        then(),
        DRA,
        ok=True,
        says=("containerd (containerd v1.7.27) resolves CDI devices (enable_cdi true)",),
    ),
    CheckCase(
        "dra-cdi: the running containerd has CDI off, whatever gpuAccess says",
        then(lambda node: running_containerd(node, enable_cdi=False)),
        DRA,
        exit=FAILED_EXIT,
        ok=False,
        starts="NVIDIA's DRA driver hands GPUs to containers only as CDI devices: containerd",
        says=(
            "has CDI turned off (enableCDI false in crictl info (the running containerd)",
            "set enable_cdi = true under",
            "restart containerd",
        ),
    ),
    CheckCase(
        "dra-cdi: the files turn CDI on but the running containerd has not loaded them",
        then(
            lambda node: running_containerd(node, enable_cdi=False),
            lambda node: node.file("etc/containerd/conf.d/99-nvidia.toml", fakehost.containerd_nvidia_dropin(cdi=True)),
            lambda node: node.command(
                "containerd", f'[ "$*" = "config dump" ] || exit 1\necho \'{fakehost.containerd_nvidia_dropin(cdi=True)}\''
            ),
        ),
        DRA,
        ok=False,
        says=("the running containerd has CDI off (crictl info), though its files set enable_cdi = true: restart containerd",),
    ),
    CheckCase(
        "dra-cdi: containerd 2 has CDI on by default",
        then(lambda node: node.drop_command("crictl"), lambda node: containerd(node, CONTAINERD_2, containerd_2(None))),
        DRA,
        ok=True,
        says=("containerd (containerd v2.0.5) resolves CDI devices (enable_cdi unset, on by default in 2.x)",),
    ),
    CheckCase(
        "dra-cdi: docker behind cri-dockerd cannot run the DRA driver's GPUs",
        then(docker_behind_cri_dockerd),
        DRA,
        runtime="docker",
        ok=False,
        says=("cri-dockerd passes no CDI devices", "run this node on containerd or CRI-O"),
    ),
    # ------------------------------------------------------ dra-feature-gates
    CheckCase(
        "dra-feature-gates: not set is on by default",
        then(),
        DRA,
        ok=True,
        starts="DynamicResourceAllocation gate not set, on by default from 1.34 (kubelet v1.34.2; read: ",
    ),
    CheckCase(
        "dra-feature-gates: set to true passes",
        then(gate("true")),
        DRA,
        ok=True,
        starts="DynamicResourceAllocation gate set in /var/lib/kubelet/config.yaml (DynamicResourceAllocation=true)",
    ),
    CheckCase(
        "dra-feature-gates: turned off on kubelet 1.34 fails",
        then(gate("false")),
        DRA,
        exit=FAILED_EXIT,
        ok=False,
        detail="DynamicResourceAllocation gate set in /var/lib/kubelet/config.yaml (DynamicResourceAllocation=false): "
        "kubelet v1.34.2 then prepares no ResourceClaims, so NVIDIA's DRA driver hands out no GPUs here; "
        "remove it, or set it to true",
    ),
    CheckCase(
        "dra-feature-gates: turned off on kubelet 1.35, where it is locked on",
        then(
            kubelet("v1.35.0"),
            lambda node: node.file("etc/default/kubelet", "KUBELET_EXTRA_ARGS=--feature-gates=DynamicResourceAllocation=false\n"),
        ),
        DRA,
        ok=False,
        detail="DynamicResourceAllocation gate set in /etc/default/kubelet (DynamicResourceAllocation=false): kubelet v1.35.0 "
        "has it locked on (from 1.35) and refuses to start with it off; remove it",
    ),
    # --------------------------------------- the device plugin's checks under dra
    CheckCase(
        "device-plugin-socket: not judged under dra, socket or none",
        then(lambda node: node.remove("var/lib/kubelet/device-plugins/kubelet.sock")),
        DRA,
        exit=PASSED_EXIT,
        ok=True,
        starts="not judged: NVIDIA's DRA driver allocates this group's GPUs",
    ),
    CheckCase(
        "cdi: under dra the device plugin's hook program is not asked for",
        then(lambda node: node.remove("usr/bin/nvidia-ctk")),
        (*DRA, "--require-cdi"),
        ok=True,
        says=("CDI hooks are the DRA driver's own nvidia-cdi-hook",),
        never=("cdiHookPath",),
    ),
]

# Run under the check each row is about (its name's prefix), or the one it names.
CHECK_OF = {case.name: case.name.split(":")[0] for case in CASES}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_dra_checks(node: FakeNode, case: CheckCase) -> None:
    run_case(node, case, CHECK_OF[case.name])


def test_a_dra_ready_machine_passes_every_check(node: FakeNode) -> None:
    result = dra_ready(node).preflight(*DRA)
    assert result.returncode == PASSED_EXIT, result.stderr
    assert [c["name"] for c in result.report["checks"]] == CHECK_NAMES
    assert all(c["ok"] for c in result.report["checks"]), result.report["checks"]
    for name in DRA_CHECKS:
        assert result.check(name)["detail"] != "not requested", result.check(name)


@pytest.mark.parametrize("args", [(), ("--allocator", "devicePlugin")], ids=["no allocator", "devicePlugin"])
def test_a_device_plugin_machine_is_judged_as_before(node: FakeNode, args: tuple[str, ...]) -> None:
    # The healthy node meets none of the DRA driver's floors (kubelet 1.30, R550, CDI off), and no one asks.
    result = node.preflight(*args)
    assert result.returncode == PASSED_EXIT, result.stderr
    assert [result.check(name)["detail"] for name in DRA_CHECKS] == ["not requested"] * len(DRA_CHECKS)
    assert result.check("device-plugin-socket")["detail"].endswith("kubelet accepts device plugins"), result.stderr


def test_the_healthy_node_fails_the_dra_checks_it_does_not_meet(node: FakeNode) -> None:
    result = node.preflight(*DRA)
    assert result.returncode == FAILED_EXIT
    failed = [c["name"] for c in result.report["checks"] if not c["ok"]]
    assert failed == ["dra-kubelet", "dra-driver-version", "dra-cdi"], result.stderr


# --- ComputeDomains (--imex driver) and dynamic MIG (--dra-mig) ------------------------------------------------------

CLIQUE = "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026"
COMPUTE_DOMAINS = (*DRA, "--nvlink-clique", CLIQUE, "--imex", "driver")


def driver(version: str):
    """The DRA-ready node with driver `version` (nvidia-smi's query lines and header)."""

    def arrange(node: FakeNode) -> None:
        machine = replace(fakehost.dra_ready(fakehost.MachineSpec(gpus=2)), driver=version)
        node.healthy_nvidia_smi(GPU_LINES.replace("550.54.15", version), fakehost.smi_table(machine))

    return arrange


@pytest.mark.parametrize(
    ("version", "ok"), [("580.95.05", True), ("570.158.01", True), ("570.133.20", False), ("565.57.01", False)]
)
def test_compute_domains_need_driver_570_158_01(node: FakeNode, version: str, ok: bool) -> None:
    """site/content/docs/prerequisites.md: "NVIDIA Driver v570.158.01 or later", for IMEXDaemonsWithDNSNames."""
    dra_ready(node)
    driver(version)(node)
    check = node.preflight(*COMPUTE_DOMAINS).check("dra-compute-domains")
    assert check["ok"] is ok, check
    if not ok:
        assert check["detail"] == (
            f"{version} < 570.158.01, the floor of NVIDIA's DRA driver's ComputeDomains (its IMEXDaemonsWithDNSNames gate, "
            f"on by default, needs it: {SOURCE}): upgrade the NVIDIA driver to 570.158.01 or later"
        ), check


def test_compute_domains_are_judged_only_when_asked(node: FakeNode) -> None:
    assert dra_ready(node).preflight(*DRA).check("dra-compute-domains")["detail"] == "not requested"


def mig_q(node: FakeNode, mode: str, compute_cap: str, listing: str | None = None) -> None:
    """nvidia-smi as on the DRA-ready machine, each GPU's MIG mode `mode` in -q (the fake machines' -q, Disabled,
    otherwise), of compute capability `compute_cap`, -L printing `listing` (default: no MIG device)."""
    machine = replace(fakehost.dra_ready(fakehost.MachineSpec(gpus=2)), compute_cap=compute_cap)
    current = "        Current                           : "
    q = fakehost.smi_q(machine).replace(f"{current}Disabled\n", f"{current}{mode}\n")
    lines = GPU_LINES.replace("550.54.15", machine.driver)
    answers = (
        f"  *--query-gpu=compute_cap*)\n{heredoc(compute_cap + chr(10) + compute_cap)}\n;;\n"
        f"  *--query-gpu=*)\n{heredoc(lines)}\n;;\n  -q)\n{heredoc(q)}\n;;\n"
        f"  -L)\n{heredoc(listing or fakehost.smi_list(lines))}\n;;\n  *)\n{heredoc(fakehost.smi_table(machine))}\n;;"
    )
    node.command("nvidia-smi", f'case "$*" in\n{answers}\nesac')


@pytest.mark.parametrize(
    ("mode", "cc", "ok", "says"),
    [
        ("Disabled", "9.0", True, "MIG mode Disabled"),
        ("Enabled", "8.0", True, "MIG mode Enabled"),
        (
            "Disabled",
            "8.0",
            False,
            "MIG mode Disabled on an Ampere GPU (compute capability 8.0), which cannot turn it on without a reset",
        ),
        ("N/A", "8.9", False, "no MIG (MIG Mode N/A)"),
    ],
    ids=["hopper, off: on demand", "ampere, on", "ampere, off", "no MIG"],
)
def test_dynamic_mig_wants_mig_capable_gpus_and_ampere_in_mig_mode(node: FakeNode, mode, cc, ok, says) -> None:
    """site/content/docs/guides/gpu-allocation/mig.md: Ampere cannot toggle MIG mode without a reset; Hopper and later
    enable it on demand."""
    dra_ready(node)
    mig_q(node, mode, cc)
    check = node.preflight(*DRA, "--dra-mig").check("dra-mig")
    assert check["ok"] is ok and says in check["detail"], check


def test_mig_devices_made_by_others_are_named_as_the_driver_destroys_them(node: FakeNode) -> None:
    dra_ready(node)
    mig_q(node, "Enabled", "8.0", (FIXTURES / "nvidia-smi-L-a100-mig-beside-whole-gpus.txt").read_text())
    result = node.preflight(*DRA, "--dra-mig")
    check = result.check("dra-mig")
    assert check["ok"] is True and check["detail"].startswith("warning: 2 GPU(s) can be split by MIG, but"), check
    assert "destroys when its kubelet plugin starts" in check["detail"], check
    assert result.report["mig"], result.report["mig"]
