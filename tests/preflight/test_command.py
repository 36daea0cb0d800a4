"""Preflight wiring: how each node's check is sent, pinned, re-run and read back."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import subprocess

import pytest

from gpu_nodes.advisories import DRIVER_BULLETINS, PATCHED_DRIVER_BRANCHES, TOOLKIT_ADVISORIES
from gpu_nodes.config.node_group import GPU_ACCESS
from gpu_nodes.config.stack import parse_stack
from gpu_nodes.errors import ConfigError
from gpu_nodes.preflight.command import (
    SCRIPT_DIR,
    connection,
    parse_report,
    preflight_arguments,
    preflight_command,
    preflight_script,
    preflight_warnings,
    remote_dir,
    script_parts,
    script_root,
    triggers,
)
from gpu_nodes.preflight.report import passing_report
from tests.factories import HOST_KEY, group
from tests.pulumi_mocks import ROOT, run_component
from tests.specs import group_spec

COMMAND = "command:remote:Command"
COPY = "command:remote:CopyToRemote"
# NVIDIA's driver bulletins and patched branches, then its toolkit advisories, as every command line
# passes them (gpu_nodes/advisories.py).
PATCHED = ",".join(str(branch) for branch in PATCHED_DRIVER_BRANCHES)
ADVISORY_ARGS = " ".join(
    [f"--driver-advisory {b.script_argument()}" for b in DRIVER_BULLETINS]
    + [f"--patched-driver-branches {PATCHED}"]
    + [f"--toolkit-advisory {a.script_argument()}" for a in TOOLKIT_ADVISORIES]
)
DRIVER_ROWS = " ".join(f"{b.bulletin}={','.join(b.fixed)}" for b in DRIVER_BULLETINS)
DRIVER_TRIGGER = f"driver-advisories={DRIVER_ROWS} patched={PATCHED}"
TOOLKIT_TRIGGER = "toolkit-advisories=" + " ".join(a.script_argument() for a in TOOLKIT_ADVISORIES)


def commands(raw: dict) -> dict:
    run = run_component(raw)
    return {c.name: c for c in run.of_type(COMMAND)}


def test_one_command_per_node():
    assert sorted(commands(group("a100"))) == ["a100-a100-node-1-preflight", "a100-a100-node-2-preflight"]


def test_connects_with_the_node_ssh_fields_and_pinned_host_key():
    raw = group("a100")
    raw["nodes"][0].update(sshHost="10.1.2.3", sshPort=2222, sshUser="ops")
    command = commands(raw)["a100-a100-node-1-preflight"]
    connection = command.inputs["connection"]
    assert (connection["host"], connection["port"], connection["user"]) == ("10.1.2.3", 2222, "ops"), command.urn
    assert connection["hostKey"] == HOST_KEY, command.urn
    assert connection["privateKey"] == "test-key", command.urn


def test_a_node_without_its_address_is_a_config_mistake_naming_it():
    spec = group_spec()
    node = dataclasses.replace(spec.nodes[0], ssh_host=None)
    with pytest.raises(ConfigError) as caught:
        connection(node, spec.preflight, "key")
    (problem,) = caught.value.problems
    assert problem.startswith(f"node {node.name}: sshHost: got None; preflight logs in to the machine there"), problem


def test_private_key_is_secret():
    for command in commands(group("a100")).values():
        assert "connection" in command.secret_inputs, f"{command.urn}: the SSH key would be stored in plain text"


def test_bastion_is_used_with_its_own_pinned_key():
    proxy = {"host": "bastion.internal", "port": 2200, "user": "jump", "hostKey": HOST_KEY}
    command = commands(group("a100", preflight={"proxy": proxy}))["a100-a100-node-1-preflight"]
    sent = command.inputs["connection"]["proxy"]
    assert (sent["host"], sent["port"], sent["user"], sent["hostKey"]) == ("bastion.internal", 2200, "jump", HOST_KEY), (
        command.urn
    )


def test_ssh_timeout_reaches_the_connection_and_the_bastion():
    proxy = {"host": "bastion.internal", "user": "jump", "hostKey": HOST_KEY}
    command = commands(group("a100", preflight={"proxy": proxy, "sshTimeoutSeconds": 60}))["a100-a100-node-1-preflight"]
    sent = command.inputs["connection"]
    assert (sent["perDialTimeout"], sent["proxy"]["perDialTimeout"]) == (60, 60), command.urn


def test_without_ssh_timeout_the_connection_is_as_before():
    """Unset, the SDK's own default goes out (docs/configuration.md's), as it did before the field existed."""
    command = commands(group("a100", preflight={"proxy": {"host": "b", "user": "j", "hostKey": HOST_KEY}}))
    sent = command["a100-a100-node-1-preflight"].inputs["connection"]
    assert (sent["perDialTimeout"], sent["proxy"]["perDialTimeout"]) == (15, 15), sent


def copies(raw: dict) -> dict:
    run = run_component(raw)
    return {c.name: c for c in run.of_type(COPY)}


def test_one_script_copy_per_node_parented_to_the_component():
    run = run_component(group("a100"))
    component = run.named("a100")
    found = {c.name: c for c in run.of_type(COPY)}
    assert sorted(found) == ["a100-a100-node-1-preflight-script", "a100-a100-node-2-preflight-script"], sorted(found)
    for copy in found.values():
        assert copy.parent == component.urn, f"{copy.urn}: parent {copy.parent}"


def test_the_copy_uses_the_commands_connection_bastion_and_host_key():
    proxy = {"host": "bastion.internal", "port": 2200, "user": "jump", "hostKey": HOST_KEY}
    raw = group("a100", preflight={"proxy": proxy})
    command = commands(raw)["a100-a100-node-1-preflight"]
    copy = copies(raw)["a100-a100-node-1-preflight-script"]
    assert copy.inputs["connection"] == command.inputs["connection"], copy.urn
    assert copy.inputs["connection"]["proxy"]["host"] == "bastion.internal", copy.urn
    assert "connection" in copy.secret_inputs, f"{copy.urn}: the SSH key would be stored in plain text"


def test_the_copy_sends_the_parts_directory_by_relative_path():
    """A FileArchive is kept in the state as a hash and this path: relative, the same from any checkout."""
    copy = copies(group("a100"))["a100-a100-node-1-preflight-script"]
    assert copy.inputs["source"] == {"FileArchive": "gpu_nodes/scripts/preflight"}, copy.urn
    assert (ROOT / copy.inputs["source"]["FileArchive"]).resolve() == SCRIPT_DIR.resolve(), copy.urn


def test_the_copy_goes_to_a_directory_named_by_the_script_digest():
    copy = copies(group("a100"))["a100-a100-node-1-preflight-script"]
    digest = hashlib.sha256(preflight_script().encode()).hexdigest()
    assert copy.inputs["remotePath"] == f"/var/lib/gpu-nodes/preflight/{digest[:12]}", copy.urn


def test_the_copy_is_made_again_when_the_command_runs_again():
    """Same triggers: a re-check copies the script first (a reinstalled machine has lost it)."""
    raw = group("a100", preflight={"recheck": "2026-11-30"})
    copy = copies(raw)["a100-a100-node-1-preflight-script"]
    command = commands(raw)["a100-a100-node-1-preflight"]
    assert copy.inputs["triggers"] == command.inputs["triggers"], copy.urn


def test_each_command_depends_on_its_own_copy():
    run = run_component(group("a100"))
    urns = {r.urn: r.name for r in run.resources}
    for node in ("a100-node-1", "a100-node-2"):
        command = run.named(f"a100-{node}-preflight")
        needs = {urns[d] for d in command.dependencies}
        assert f"a100-{node}-preflight-script" in needs, f"{command.urn}: depends on {sorted(needs)}"


def lanes(run) -> dict[str, set[str]]:
    """For each node's script copy, the other nodes' preflight commands it waits for."""
    urns = {r.urn: r.name for r in run.resources}
    return {copy.name: {urns[d] for d in copy.dependencies if urns[d].endswith("-preflight")} for copy in run.of_type(COPY)}


def test_machines_beyond_max_sessions_wait_for_the_one_listed_that_many_places_before():
    """maxSessions 2: the machines form two lanes in the order the group lists them."""
    found = lanes(run_component(group("a100", nodes=5, preflight={"maxSessions": 2})))
    expected = {
        "a100-a100-node-1-preflight-script": set(),
        "a100-a100-node-2-preflight-script": set(),
        "a100-a100-node-3-preflight-script": {"a100-a100-node-1-preflight"},
        "a100-a100-node-4-preflight-script": {"a100-a100-node-2-preflight"},
        "a100-a100-node-5-preflight-script": {"a100-a100-node-3-preflight"},
    }
    assert found == expected, found


def test_up_to_max_sessions_machines_wait_for_none():
    found = lanes(run_component(group("a100", nodes=10)))
    waiting = {copy: needs for copy, needs in found.items() if needs}
    assert len(found) == 10 and not waiting, f"with the default of 10, these wait: {waiting}"


def test_the_eleventh_machine_waits_by_default():
    found = lanes(run_component(group("a100", nodes=11)))
    assert found["a100-a100-node-11-preflight-script"] == {"a100-a100-node-1-preflight"}, found


def test_the_command_sends_nothing_on_stdin():
    for command in commands(group("a100")).values():
        assert "stdin" not in command.inputs, f"{command.urn}: stdin is kept twice in the state"


def test_the_command_line_checks_the_digest_of_the_copy_then_runs_it_with_the_arguments():
    # Pinned: a new command line is a changed input, and re-runs preflight on every node.
    command = commands(group("a100"))["a100-a100-node-1-preflight"]
    digest = hashlib.sha256(preflight_script().encode()).hexdigest()
    create = command.inputs["create"]
    assert create.startswith(f"bash -c 'd=/var/lib/gpu-nodes/preflight/{digest[:12]} want={digest}; "), command.urn
    assert create.endswith(
        f"' preflight --runtime containerd --expect-gpus 4 {ADVISORY_ARGS} --require-default-runtime --min-cuda 12.5"
    ), command.urn
    body = create.split("' preflight ")[0]
    checked, ran = body.index("| sha256sum"), body.index("| bash -s --")
    assert checked < ran, f"{command.urn}: the script runs before its digest is checked"


def test_deleting_a_node_does_not_contact_its_machine():
    """No delete line (nor update line: pulumi-command runs create again): removing a node whose
    machine is dead, or destroying the stack, needs no SSH. The copy stays on the machine."""
    for command in commands(group("a100")).values():
        assert "delete" not in command.inputs and "update" not in command.inputs, command.urn
        assert command.inputs["addPreviousOutputInEnv"] is False, command.urn


@pytest.mark.parametrize("typ", [COMMAND, COPY])
def test_no_script_text_in_the_registered_inputs(typ):
    """Issue 10: the script was 44 KB of every node's state. What is registered is what is stored."""
    lines = {line.strip() for line in preflight_script().splitlines() if len(line.strip()) > 12}
    for resource in run_component(group("a100")).of_type(typ):
        stored = json.dumps(resource.inputs)
        assert len(stored.encode()) < 3_000, f"{resource.urn}: {len(stored.encode())} bytes of inputs"
        leaked = sorted(line for line in lines if json.dumps(line)[1:-1] in stored)
        assert leaked == [], f"{resource.urn}: holds script lines {leaked[:3]}"


def test_the_script_is_its_parts_joined_in_name_order():
    parts = script_parts()
    names = [part.name for part in parts]
    assert names == sorted(names) and names[0] == "00-common.sh" and names[-1] == "90-main.sh", names
    script = preflight_script()
    texts = [part.read_text() for part in parts]
    assert all(text.endswith("\n") for text in texts), "a part must end with a newline (joined as by cat)"
    cat = subprocess.run(["cat", *map(str, parts)], capture_output=True, text=True, check=True).stdout
    assert script == "".join(texts) == cat
    assert script.startswith("#!/usr/bin/env bash\n"), script[:40]
    # Run as `bash -s`: the script must stop before bash reads past it (see 90-main.sh).
    assert script.endswith('main "$@" </dev/null\nexit\n'), script[-60:]
    syntax = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True, check=False)
    assert syntax.returncode == 0, syntax.stderr


def test_each_check_is_defined_in_one_part():
    defined: dict[str, list[str]] = {}
    for part in script_parts():
        for function in re.findall(r"^([a-z_]+)\(\) \{", part.read_text(), re.MULTILINE):
            defined.setdefault(function, []).append(part.name)
    assert {f: p for f, p in defined.items() if len(p) > 1} == {}, "functions defined twice"
    checks = {f: p[0] for f, p in defined.items() if f.startswith("check_")}
    assert checks and all("-check-" in part for part in checks.values()), checks


def test_minimum_driver_and_runtime_reach_the_command_line():
    spec = group_spec(gpusPerNode=8, preflight={"containerRuntime": "cri-o", "minDriver": "550.54"})
    assert preflight_command(spec).endswith(
        f"' preflight --runtime cri-o --expect-gpus 8 --min-driver 550.54 {ADVISORY_ARGS} --require-default-runtime"
        " --min-cuda 12.5"
    )


def test_triggers_follow_script_gpu_count_and_runtime():
    # The four, and how tenants get their GPUs (a new path is a new check of every machine).
    command = commands(group("a100"))["a100-a100-node-1-preflight"]
    digest = hashlib.sha256(preflight_script().encode()).hexdigest()
    expected = [digest, "4", "containerd", "", DRIVER_TRIGGER, TOOLKIT_TRIGGER, "--require-default-runtime", "min-cuda=12.5"]
    assert command.inputs["triggers"] == expected, command.urn
    other = commands(group("a100", gpusPerNode=8, preflight={"containerRuntime": "docker"}))["a100-a100-node-1-preflight"]
    assert other.inputs["triggers"][1:3] == ["8", "docker"], other.urn


def test_a_recheck_value_joins_the_triggers_of_every_node():
    run = commands(group("a100", preflight={"recheck": "2026-11-30"}))
    for command in run.values():
        assert command.inputs["triggers"][-1] == "recheck=2026-11-30", command.urn


def test_same_config_gives_the_same_command():
    first = commands(group("a100"))["a100-a100-node-1-preflight"]
    second = commands(group("a100"))["a100-a100-node-1-preflight"]
    assert first.inputs == second.inputs, f"{first.urn}: a changed input would re-run the checks on every pulumi up"


def test_parse_report_summarises_the_json():
    report = {
        **passing_report(),
        "gpus": [{"index": i, "name": "NVIDIA A100-SXM4-80GB", "uuid": f"GPU-{i}", "memoryMiB": 81920} for i in range(2)],
        "checks": [{"name": "driver", "ok": True, "detail": ""}, {"name": "runtime", "ok": False, "detail": "no nvidia"}],
        "kubelet": {"cgroupDriver": "systemd", "cpuManagerPolicy": "static"},
    }
    summary = parse_report(json.dumps(report))
    assert (summary["driverVersion"], summary["cudaVersion"]) == ("550.54.15", "12.4"), summary
    assert summary["kubelet"] == {"cgroupDriver": "systemd", "cpuManagerPolicy": "static"}, summary
    assert summary["gpuCount"] == 2, summary
    assert summary["gpuModels"] == ["NVIDIA A100-SXM4-80GB"], summary
    assert summary["passedChecks"] == ["driver"] and summary["failedChecks"] == ["runtime"], summary


def test_parse_report_keeps_the_toolkits_mode_and_cdi_generation():
    """The per-node summary says which mode the container toolkit runs in and whether a CDI spec
    could be built there (66-check-cdi-generation.sh)."""
    toolkit = {"mode": "jit-cdi", "cdiGeneration": "failed"}
    summary = parse_report(json.dumps({**passing_report(), "toolkit": toolkit}))
    assert summary["toolkit"] == toolkit, summary


def test_parse_report_names_the_mig_devices_found_on_each_gpu():
    found = {"0": {"1g.10gb": 7}, "1": {"3g.40gb": 1, "1g.10gb": 4}}
    assert parse_report(json.dumps({**passing_report(), "mig": found}))["migDevices"] == found


def test_parse_report_has_no_mig_devices_where_the_script_read_none():
    assert parse_report(json.dumps({**passing_report(), "mig": None}))["migDevices"] is None
    assert parse_report(json.dumps(passing_report()))["migDevices"] is None


@pytest.mark.parametrize(
    ("access", "flags"),
    [
        ("defaultRuntime", ["--require-default-runtime"]),
        ("runtimeClass", []),
        ("cdi", ["--require-cdi", "--cdi-hook-path", "/usr/bin/nvidia-ctk"]),
    ],
)
def test_the_tenant_path_decides_what_preflight_requires(access: str, flags: list[str]):
    spec = parse_stack([group("a100", gpuAccess=access)]).node_groups[0]
    command = preflight_command(spec)
    start = f"' preflight --runtime containerd --expect-gpus 4 {ADVISORY_ARGS}"
    assert command.endswith(" ".join([start, *flags, "--min-cuda 12.5"])), command


def test_a_new_cdi_hook_path_reruns_preflight():
    """Each machine must have the program the plugin's CDI specs run as hooks."""
    paths = ["/usr/bin/nvidia-ctk", "/usr/local/nvidia/toolkit/nvidia-cdi-hook"]
    specs = [parse_stack([group("a100", gpuAccess="cdi", devicePlugin={"cdiHookPath": p})]).node_groups[0] for p in paths]
    assert triggers(specs[0]) != triggers(specs[1]), paths
    assert preflight_command(specs[1]).endswith(
        " --cdi-hook-path /usr/local/nvidia/toolkit/nvidia-cdi-hook --min-cuda 12.5"
    )


def test_the_cdi_hook_path_asks_nothing_of_groups_without_cdi():
    spec = parse_stack([group("a100", devicePlugin={"cdiHookPath": "/opt/nvidia-ctk"})]).node_groups[0]
    assert "--cdi-hook-path" not in preflight_command(spec), preflight_command(spec)
    assert triggers(spec) == triggers(parse_stack([group("a100")]).node_groups[0])


def test_a_new_tenant_path_reruns_preflight():
    paths = {
        access: triggers(parse_stack([group("a100", gpuAccess=access)]).node_groups[0]) for access in GPU_ACCESS
    }
    assert len({tuple(t) for t in paths.values()}) == len(GPU_ACCESS), paths


@pytest.mark.parametrize(
    ("image", "flag"),
    [
        ("nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04", " --min-cuda 12.5"),
        ("nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda10.2", " --min-cuda 10.2"),
    ],
)
def test_the_cuda_images_version_is_what_preflight_requires_of_the_driver(image: str, flag: str):
    spec = parse_stack([group("a100", verification={"cudaImage": image})]).node_groups[0]
    assert preflight_command(spec).endswith(flag), preflight_command(spec)


def test_a_cuda_image_whose_tag_names_no_cuda_version_asks_nothing_of_the_driver():
    spec = parse_stack([group("a100", verification={"cudaImage": "registry.example.com/team/gpu-burn:v3"})]).node_groups[0]
    assert "--min-cuda" not in preflight_command(spec), preflight_command(spec)


@pytest.mark.parametrize("strategy", ["single", "mixed"])
def test_a_mig_strategy_asks_preflight_for_gpus_in_mig_mode(strategy: str):
    extra = {"verification": {"migResources": {"nvidia.com/mig-1g.5gb": 1}}} if strategy == "mixed" else {}
    spec = parse_stack([group("a100", devicePlugin={"migStrategy": strategy}, **extra)]).node_groups[0]
    assert preflight_command(spec).endswith(f" --mig-strategy {strategy}"), preflight_command(spec)
    assert triggers(spec)[-1] == f"mig={strategy}", triggers(spec)


def mixed_mig(layout: dict[str, int]):
    raw = group("a100", devicePlugin={"migStrategy": "mixed", "migDevices": layout})
    raw["verification"] = {"migResources": {"nvidia.com/mig-1g.10gb": 1}}
    return parse_stack([raw]).node_groups[0]


def test_a_mig_layout_is_sent_to_preflight_to_count_on_each_gpu():
    spec = mixed_mig({"2g.20gb": 2, "1g.10gb": 3})
    assert preflight_command(spec).endswith(" --mig-strategy mixed --mig-devices 1g.10gb=3,2g.20gb=2"), preflight_command(spec)


def test_a_new_mig_layout_reruns_preflight():
    before, after = mixed_mig({"1g.10gb": 7}), mixed_mig({"1g.10gb": 3, "2g.20gb": 2})
    assert triggers(after)[-2:] == ["mig=mixed", "mig-devices=1g.10gb=3,2g.20gb=2"], triggers(after)
    assert triggers(before) != triggers(after), triggers(before)


def test_a_mig_strategy_without_a_layout_keeps_its_triggers():
    spec = parse_stack([group("a100", devicePlugin={"migStrategy": "single"})]).node_groups[0]
    assert "--mig-devices" not in preflight_command(spec), preflight_command(spec)
    assert not any(t.startswith("mig-devices=") for t in triggers(spec)), triggers(spec)


def test_no_mig_strategy_asks_nothing_about_mig():
    spec = parse_stack([group("a100")]).node_groups[0]
    assert "--mig-strategy" not in preflight_command(spec), preflight_command(spec)


def test_no_minimum_toolkit_asks_nothing_beyond_the_advisories():
    spec = parse_stack([group("a100", preflight={"minToolkit": ""})]).node_groups[0]
    assert "--min-toolkit" not in preflight_command(spec), preflight_command(spec)
    assert f" {ADVISORY_ARGS} " in preflight_command(spec), preflight_command(spec)
    assert not any(t.startswith("min-toolkit=") for t in triggers(spec)), triggers(spec)


def test_a_minimum_toolkit_above_the_floor_reaches_the_command_line_and_the_triggers():
    spec = parse_stack([group("a100", preflight={"minToolkit": "1.20.0"})]).node_groups[0]
    assert f"{ADVISORY_ARGS} --min-toolkit 1.20.0 " in preflight_command(spec), preflight_command(spec)
    assert "min-toolkit=1.20.0" in triggers(spec), triggers(spec)


def test_an_accepted_advisory_is_passed_as_accepted_and_re_checks_the_machines():
    accepting = parse_stack([group("a100", preflight={"acceptToolkitAdvisories": ["CVE-2026-24260"]})]).node_groups[0]
    command = preflight_command(accepting)
    assert "--accepted-toolkit-advisory CVE-2026-24260=1.19.1" in command, command
    assert "--toolkit-advisory CVE-2026-24260=" not in command, command
    assert "accepted:CVE-2026-24260=1.19.1" in " ".join(triggers(accepting)), triggers(accepting)
    assert triggers(accepting) != triggers(parse_stack([group("a100")]).node_groups[0])


def test_parse_report_keeps_the_toolkit_and_its_advisories():
    toolkit = {"version": "1.18.2", "openAdvisories": ["CVE-2026-24260"], "acceptedAdvisories": []}
    summary = parse_report(json.dumps({**passing_report(), "toolkit": toolkit}))
    assert summary["toolkit"] == toolkit, summary


def test_driver_advisories_warn_by_default_and_refuse_only_where_the_group_asks():
    warning = parse_stack([group("a100")]).node_groups[0]
    refusing = parse_stack([group("a100", preflight={"driverAdvisories": "refuse"})]).node_groups[0]
    assert "--refuse-driver-advisories" not in preflight_command(warning), preflight_command(warning)
    command = preflight_command(refusing)
    assert f"--patched-driver-branches {PATCHED} --refuse-driver-advisories " in command, command
    assert "--refuse-driver-advisories" in triggers(refusing), triggers(refusing)


def test_parse_report_keeps_the_drivers_branch_and_its_open_bulletins():
    advisories = {"branch": "R550", "branchPatched": False, "openBulletins": ["5747", "5821", "5861"]}
    summary = parse_report(json.dumps({**passing_report(), "driverAdvisories": advisories}))
    assert summary["driverAdvisories"] == advisories, summary


# An R550 machine as the script reports it (30-check-driver.sh): past its end of life, open to the three
# bulletins of 2026, its check's detail naming every CVE.
WARNED_REPORT = {
    **passing_report(),
    "driverVersion": "550.54.15",
    "driverAdvisories": {"branch": "R550", "branchPatched": False, "openBulletins": ["5747", "5821", "5861"]},
    "checks": [
        {"name": "driver", "ok": True, "detail": "NVIDIA driver 550.54.15, 1 GPU(s): NVIDIA H100 80GB HBM3"},
        {
            "name": "driver-advisories",
            "ok": True,
            "detail": "warning: driver 550.54.15: branch R550 is past its end of life, NVIDIA no longer patches it; "
            "bulletin 5747 (CVE-2025-33219, CVE-2025-33220): never fixed on R550, fixed in 535.288.01 / 570.211.01 ...",
        },
        {"name": "runtime", "ok": True, "detail": "warning: containerd's config could not be dumped; read from its files"},
        {"name": "cuda", "ok": False, "detail": "warning: not a pass, so not a warning"},
    ],
}


def test_a_driver_open_to_bulletins_is_one_line_naming_them_and_the_fix_not_every_cve():
    warnings = preflight_warnings(json.dumps(WARNED_REPORT))
    assert warnings[0] == (
        "driver-advisories: driver 550.54.15 is open to NVIDIA's bulletins 5747, 5821, 5861 and is on R550, past its end "
        "of life: move to a long-term support branch NVIDIA patches (R580 from 580.178.04, R620) (the CVEs: this machine's "
        "preflight report; preflight.driverAdvisories: refuse keeps such machines out)"
    ), warnings
    assert "CVE-" not in warnings[0], warnings


def test_a_driver_on_a_patched_branch_is_told_its_branchs_fixed_release():
    report = {
        **WARNED_REPORT,
        "driverVersion": "580.159.03",
        "driverAdvisories": {"branch": "R580", "branchPatched": True, "openBulletins": ["5861"]},
    }
    line = preflight_warnings(json.dumps(report))[0]
    said = "driver-advisories: driver 580.159.03 is open to NVIDIA's bulletin 5861: upgrade to 580.178.04 or later (R580) "
    assert line.startswith(said), line


def test_a_driver_whose_version_is_unknown_is_said_in_the_checks_own_words():
    detail = "driver version unknown (see the driver check): cannot tell which of NVIDIA's bulletins it is open to"
    report = {
        **WARNED_REPORT,
        "driverVersion": None,
        "driverAdvisories": {"branch": None, "branchPatched": None, "openBulletins": []},
        "checks": [{"name": "driver-advisories", "ok": True, "detail": f"warning: {detail}"}],
    }
    assert preflight_warnings(json.dumps(report)) == [f"driver-advisories: {detail}"]


def test_other_checks_that_passed_with_a_warning_are_said_with_their_detail():
    warnings = preflight_warnings(json.dumps(WARNED_REPORT))
    assert warnings[1:] == ["runtime: containerd's config could not be dumped; read from its files"], warnings


def test_the_report_names_the_checks_that_passed_with_a_warning():
    summary = parse_report(json.dumps(WARNED_REPORT))
    assert summary["warnedChecks"] == ["driver-advisories", "runtime"], summary


def test_output_that_is_no_report_has_no_warnings():
    assert preflight_warnings("preflight: no script to read") == []


def test_become_sudo_copies_into_the_users_home_and_runs_the_checked_script_through_sudo():
    run = commands(group("a100", preflight={"become": "sudo"}))
    command = run["a100-a100-node-1-preflight"].inputs["create"]
    digest = hashlib.sha256(preflight_script().encode()).hexdigest()
    assert f"d=.gpu-nodes/preflight/{digest[:12]} " in command, command
    assert command.index("sudo -n true") < command.index("| sudo -n bash -s --"), command
    assert "| bash -s --" not in command, "a second, unprivileged run of the script"
    assert "become=sudo" in run["a100-a100-node-1-preflight"].inputs["triggers"]


def test_become_sudo_copy_goes_where_the_command_reads():
    spec = parse_stack([group("a100", preflight={"become": "sudo"})]).node_groups[0]
    copies = {
        r.name: r for r in run_component(group("a100", preflight={"become": "sudo"})).of_type("command:remote:CopyToRemote")
    }
    copy = copies["a100-a100-node-1-preflight-script"]
    assert copy.inputs["remotePath"] == remote_dir(script_root(spec.preflight)), copy.urn
    assert copy.inputs["remotePath"].startswith(".gpu-nodes/preflight/"), copy.urn


def test_without_become_the_copy_stays_roots():
    spec = parse_stack([group("a100")]).node_groups[0]
    assert remote_dir(script_root(spec.preflight)).startswith("/var/lib/gpu-nodes/preflight/")


# ------------------------------------------------ the group's isolation on the command line


def group_preflight(**config):
    return parse_stack([group("a100", **config)]).node_groups[0]


def test_strict_isolation_asks_preflight_for_the_hardened_toolkit():
    args = preflight_arguments(group_preflight(isolation="strict"))
    assert args[args.index("--isolation") + 1] == "strict", args


def test_default_isolation_adds_no_argument():
    assert "--isolation" not in preflight_arguments(group_preflight())
    assert "--isolation" not in preflight_arguments(group_preflight(isolation="default"))


def test_a_new_isolation_reruns_preflight_and_default_keeps_the_triggers():
    assert triggers(group_preflight(isolation="strict")) != triggers(group_preflight())
    assert triggers(group_preflight(isolation="default")) == triggers(group_preflight())


def test_gpu_model_reaches_preflight():
    spec = parse_stack([group(gpuModel="NVIDIA H100 80GB HBM3")]).node_groups[0]
    assert preflight_arguments(spec)[-2:] == ["--gpu-model", "NVIDIA H100 80GB HBM3"], preflight_arguments(spec)


# ------------------------------------------------ the group's allocator on the command line


def test_a_dra_group_asks_preflight_for_the_dra_drivers_prerequisites():
    spec = group_preflight(allocator="dra")
    assert spec.uses_dra
    args = preflight_arguments(spec)
    assert args[-2:] == ["--allocator", "dra"], args
    assert "allocator=dra" in triggers(spec)
    assert "--allocator dra" in preflight_command(spec)


def test_a_device_plugin_group_keeps_its_command_line_and_triggers():
    # devicePlugin is the default: saying so changes nothing the machines see, nor what re-runs them.
    default, explicit = group_preflight(), group_preflight(allocator="devicePlugin")
    assert preflight_command(explicit) == preflight_command(default)
    assert triggers(explicit) == triggers(default)
    assert "--allocator" not in preflight_arguments(default)
    assert not any(t.startswith("allocator=") for t in triggers(default))


def mps_group(**device_plugin):
    sharing = {"strategy": "mps", "replicas": 8}
    return parse_stack([group("a100", devicePlugin={"sharing": sharing, **device_plugin})]).node_groups[0]


def test_mps_asks_preflight_for_what_its_daemon_needs():
    spec = mps_group()
    assert preflight_command(spec).endswith(" --mps-replicas 8"), preflight_command(spec)
    assert triggers(spec)[-1] == "mps-replicas=8", triggers(spec)


def test_under_a_containerized_driver_the_mps_programs_are_looked_for_under_its_root():
    spec = mps_group(driverRoot="/run/nvidia/driver")
    assert preflight_command(spec).endswith(" --mps-replicas 8 --mps-driver-root /run/nvidia/driver"), preflight_command(spec)
    assert triggers(spec)[-2:] == ["mps-replicas=8", "mps-driver-root=/run/nvidia/driver"], triggers(spec)


@pytest.mark.parametrize("device_plugin", [{}, {"timeSlicingReplicas": 4}, {"sharing": {"replicas": 4}}])
def test_without_mps_nothing_is_asked_about_it(device_plugin):
    spec = parse_stack([group("a100", devicePlugin=device_plugin)]).node_groups[0]
    assert "--mps" not in preflight_command(spec), preflight_command(spec)
    assert not any(t.startswith("mps-") for t in triggers(spec)), triggers(spec)


# --- NVLink domains, ComputeDomains, dynamic MIG and NRI: what the machine is asked, only where the group says ----

CLIQUE = "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026"


def test_a_device_plugin_group_of_an_nvlink_domain_asks_for_its_clique_its_host_daemon_its_peers_and_channel():
    domain = {"clique": CLIQUE, "imexPeers": ["10.0.0.11", "10.0.0.12"]}
    spec = group_spec(devicePlugin={"imex": {"channelIds": [0], "required": True}}, nvlinkDomain=domain)
    arguments = preflight_arguments(spec)
    tail = arguments[arguments.index("--nvlink-clique") :]
    assert tail == [
        "--nvlink-clique", CLIQUE, "--imex", "host", "--imex-peers", "10.0.0.11,10.0.0.12",
        "--imex-channels", "0", "--imex-required",
    ]  # fmt: skip
    assert triggers(spec)[-5:] == [
        f"nvlink-clique={CLIQUE}", "imex=host", "imex-peers=10.0.0.11,10.0.0.12", "imex-channels=0", "--imex-required"
    ]


def test_a_dra_group_with_compute_domains_asks_for_its_clique_and_the_drivers_daemons():
    spec = group_spec(allocator="dra", dra={"computeDomains": True}, nvlinkDomain={"clique": CLIQUE})
    arguments = preflight_arguments(spec)
    assert arguments[arguments.index("--nvlink-clique") :] == ["--nvlink-clique", CLIQUE, "--imex", "driver"]


def test_dynamic_mig_and_nri_are_asked_for():
    mig = preflight_arguments(group_spec(allocator="dra", dra={"migProfiles": ["1g.10gb"]}))
    assert mig[-3:] == ["--allocator", "dra", "--dra-mig"], mig
    nri = preflight_arguments(group_spec(gpuAccess="cdi", containerToolkit="nri"))
    assert nri[-2:] == ["--toolkit", "nri"], nri


def test_a_group_without_them_keeps_its_command_line():
    arguments = preflight_arguments(group_spec())
    assert not {"--nvlink-clique", "--imex", "--dra-mig", "--toolkit"} & set(arguments), arguments
