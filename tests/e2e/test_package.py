"""gpu-nodes as a package: installed from this checkout, in a program of a team's own, across stacks.

- A clean virtualenv installs the package with pip (dependencies and the preflight script as
  package data) and imports it from another directory.
- The example program (`examples/own-program`, installed into that virtualenv as a user would)
  runs two stacks on the local cluster: `rack-a` owns the shared namespaces and RuntimeClass,
  `rack-b` only references them. Both racks are verified; destroying `rack-b` leaves `rack-a`.
- A stack deployed by this repository's program as it was before the package (UPGRADE_FROM)
  upgrades to today's with a clean refresh and preview, and no replacement.

Runs after test_operations.py (file order) on nodes of its own, beside the story's stack.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import ROOT, STATE, LocalEnv
from tests.e2e.stack_state import DYNAMIC_TYPE_PREFIX, ours, provider_class

pytestmark = pytest.mark.cluster

KUBECONFIG = ROOT / ".state/cluster/kubeconfig"
# The last commit of the root program before gpu_nodes/ and GpuFleet: its stacks are the ones to upgrade.
UPGRADE_FROM = "5885b83"
UPGRADE_NODES = ["gpu-node-4", "gpu-node-5"]
# How `pulumi preview --json` names the steps of a replacement.
REPLACE_OPS = ("replace", "create-replacement", "delete-replaced")
# The children a new release may replace (see the upgrade test).
REPLACED_ON_UPGRADE = ("-preflight", "-preflight-script", "-verification-check")
RACKS = {"rack-a": ["gpu-node-6"], "rack-b": ["gpu-node-7"]}
SHARED_NAMESPACES = ["gpus-device-plugin", "gpus-verification"]
WORK = STATE / "e2e-package"


def pulumi(local: LocalEnv, cwd: Path, stack: str, *args: str, check: bool = True, timeout: int = 900):
    return local.run("pulumi", *args, "--stack", stack, "--non-interactive", check=check, timeout=timeout, cwd=cwd)


@pytest.fixture(scope="module")
def cluster(local: LocalEnv) -> LocalEnv:
    """The story's cluster grown to seven nodes, with fake machines behind sshd on the upgrade's."""
    local.run("tools/cluster/up.sh", "--nodes", "7", timeout=600)
    local.run("tools/fakehost/up.sh", *UPGRADE_NODES)
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    return local


@pytest.fixture(scope="module")
def venv(cluster: LocalEnv) -> Path:
    """A clean virtualenv, with the example program's requirements installed by pip as a user would:
    its pinned SDKs and gpu-nodes from this checkout (`../..` there, this checkout's path here)."""
    path = WORK / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    requirements = (ROOT / "examples/own-program/requirements.txt").read_text().replace("\n../..\n", f"\n{ROOT}\n")
    (WORK / "requirements.txt").write_text(requirements)
    pip = (str(path / "bin/pip"), "install", "--quiet", "--disable-pip-version-check")
    cluster.run(*pip, "-r", str(WORK / "requirements.txt"), timeout=900, cwd=WORK)
    return path


def test_the_package_installs_with_pip_and_imports_from_another_directory(venv: Path, local: LocalEnv):
    elsewhere = WORK / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    probe = (
        "import gpu_nodes, gpu_nodes.preflight.command as c; "
        "print(gpu_nodes.__file__); print(len(c.script_parts())); print(c.script_source().path)"
    )
    result = local.run(str(venv / "bin/python"), "-c", probe, cwd=elsewhere)
    module, parts, archive = result.stdout.split()
    assert str(venv) in module, f"gpu_nodes imported from {module}, not from the virtualenv"
    assert int(parts) == len(list((ROOT / "gpu_nodes/scripts/preflight").glob("*.sh"))), f"{parts} script parts installed"
    assert Path(archive).is_absolute() and Path(archive).is_dir(), f"the script's archive path {archive}"


def example_program(venv: Path) -> Path:
    """The example, copied out of the checkout, with the virtualenv as its own `venv`."""
    program = WORK / "own-program"
    if not program.exists():
        shutil.copytree(ROOT / "examples/own-program", program, ignore=shutil.ignore_patterns("Pulumi.rack-*.yaml"))
        (program / "venv").symlink_to(venv)
    return program


def rack_config(rack: str) -> dict:
    return {
        "gpu-racks:rack": rack,
        "gpu-racks:nodes": RACKS[rack],
        "gpu-racks:gpusPerNode": 4,
        "gpu-racks:shared": "own" if rack == "rack-a" else "reference",
    }


def init_rack(local: LocalEnv, program: Path, rack: str) -> None:
    pulumi(local, program, rack, "stack", "init", check=False)
    stack_file = program / f"Pulumi.{rack}.yaml"
    settings = yaml.safe_load(stack_file.read_text()) if stack_file.exists() else {}
    settings = settings or {}
    settings["config"] = rack_config(rack)
    stack_file.write_text(yaml.safe_dump(settings, sort_keys=True))
    pulumi(local, program, rack, "config", "set", "--secret", "kubeconfig", str(KUBECONFIG))


def gated(local: LocalEnv, node: str) -> bool:
    return any(t["key"] == "gpu-nodes.dev/unverified" for t in local.node(node)["spec"].get("taints") or [])


@pytest.fixture(scope="module")
def racks(venv: Path, cluster: LocalEnv) -> Iterator[Path]:
    program = example_program(venv)
    yield program
    for rack in ("rack-b", "rack-a"):
        pulumi(cluster, program, rack, "destroy", "--yes", "--skip-preview", check=False)
        pulumi(cluster, program, rack, "stack", "rm", "--yes", check=False)


def test_two_stacks_share_one_clusters_objects_and_destroying_the_referencing_one_leaves_them(racks: Path, local: LocalEnv):
    for rack in RACKS:
        init_rack(local, racks, rack)
        pulumi(local, racks, rack, "up", "--yes", "--skip-preview", timeout=1200)
    for rack, nodes in RACKS.items():
        report = json.loads(pulumi(local, racks, rack, "stack", "output", "nodeGroups", "--json").stdout)
        for node in nodes:
            assert report[rack][node]["gate"] == "lifted", f"{rack}/{node}: {report[rack][node]}"
            assert not gated(local, node), local.explain(f"{node} of {rack} is still gated")
        pulumi(local, racks, rack, "preview", "--expect-no-changes")
    for namespace in SHARED_NAMESPACES:
        labels = local.kubectl_json("get", "namespace", namespace)["metadata"]["labels"]
        assert labels.get("gpu-nodes.dev/stack") == "gpu-racks.rack-a", f"namespace {namespace}: {labels}"

    pulumi(local, racks, "rack-b", "destroy", "--yes", "--skip-preview")
    for namespace in SHARED_NAMESPACES:
        assert local.kubectl("get", "namespace", namespace, check=False).returncode == 0, f"{namespace} went with rack-b"
    assert local.kubectl("get", "runtimeclass", "nvidia-gpus", check=False).returncode == 0, "nvidia-gpus went with rack-b"
    daemonsets = local.kubectl_json("get", "daemonsets", "-n", "gpus-device-plugin")["items"]
    assert [d["metadata"]["name"] for d in daemonsets] == ["nvidia-device-plugin-rack-a"], [
        d["metadata"]["name"] for d in daemonsets
    ]
    assert not gated(local, "gpu-node-6"), local.explain("rack-a's node was gated by rack-b's destroy")
    pulumi(local, racks, "rack-a", "preview", "--expect-no-changes")
    pulumi(local, racks, "rack-a", "refresh", "--preview-only", "--expect-no-changes")


def previous_program() -> Path:
    """The root program at UPGRADE_FROM, beside today's, sharing its virtualenv."""
    old = WORK / "previous"
    if not old.exists():
        old.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", UPGRADE_FROM], cwd=ROOT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        (old / ".venv").symlink_to(ROOT / ".venv")
    return old


def upgrade_config() -> dict:
    hosts = {h["name"]: h for h in json.loads((STATE / "fakehosts/hosts.json").read_text())}
    group = {
        "name": "upgrade",
        "gpusPerNode": 4,
        "nodes": [{k: hosts[n][k] for k in ("name", "sshHost", "sshPort", "sshUser", "hostKey")} for n in UPGRADE_NODES],
        "preflight": {"containerRuntime": "containerd"},
        "verification": {"gpusPerPod": [1, 2], "timeoutSeconds": 120, "namespace": "gpu-verification-upgrade"},
        "devicePlugin": {"namespace": "nvidia-device-plugin-upgrade"},
        "priorityClass": {"name": "gpu-upgrade"},
    }
    return {
        "gpu-nodes:nodeGroups": [group],
        "gpu-nodes:runtimeClass": "nvidia-upgrade",
        "gpu-nodes:createRuntimeClass": "true",
        "kubernetes:kubeconfig": str(KUBECONFIG),
    }


def test_a_stack_of_the_program_before_the_package_upgrades_in_place(cluster: LocalEnv):
    local, stack = cluster, "upgrade"
    old = previous_program()
    pulumi(local, old, stack, "stack", "init", check=False)
    stack_file = old / f"Pulumi.{stack}.yaml"
    settings = yaml.safe_load(stack_file.read_text()) or {}
    settings["config"] = upgrade_config()
    stack_file.write_text(yaml.safe_dump(settings, sort_keys=True))
    key = (STATE / "fakehosts/id_ed25519").read_text()
    local.run("pulumi", "config", "set", "--secret", "--stack", stack, "gpu-nodes:sshPrivateKey", stdin=key, cwd=old)
    try:
        pulumi(local, old, stack, "up", "--yes", "--skip-preview", timeout=1200)
        before = json.loads(pulumi(local, old, stack, "stack", "output", "--json").stdout)
        shutil.copy(stack_file, ROOT / stack_file.name)

        # Today's code on the same state: refresh loads the old state's providers (components/), preview diffs.
        pulumi(local, ROOT, stack, "refresh", "--preview-only", "--expect-no-changes")
        preview = pulumi(local, ROOT, stack, "preview", "--json")
        steps = json.loads(preview.stdout).get("steps", []) if preview.stdout.strip().startswith("{") else []
        changed = {s["urn"]: s["op"] for s in steps if s["op"] not in ("same", "read")}
        # The new resources: the fleet component itself, which has no provider and nothing in the
        # cluster, the provider that holds the cluster's access for our dynamic resources, and the
        # plugin's own ServiceAccount (it ran under the namespace's default one before), and each node's Jobs of the
        # proof items 0.5.0 runs by default: the access check and DCGM's diagnostics (docs/upgrading.md, "To 0.5.0").
        created = sorted(urn.rsplit("::", 1)[1] for urn, op in changed.items() if op == "create")
        proof = [f"gpu-nodes-upgrade-verify-{node}-{item}" for node in UPGRADE_NODES for item in ("access", "dcgm")]
        expected = sorted(["gpu-nodes", "gpu-nodes-cluster-access", "gpu-nodes-upgrade-device-plugin-service-account", *proof])
        assert created == expected, local.explain(f"the upgrade changes {changed}", preview)
        fleet = next(urn for urn, op in changed.items() if op == "create" and urn.endswith("::gpu-nodes"))
        assert fleet.endswith("::gpu-nodes:index:GpuFleet::gpu-nodes"), fleet
        deleted = [urn for urn, op in changed.items() if op == "delete"]
        assert not deleted, local.explain(f"the upgrade deletes {deleted}", preview)
        # What a new release may replace, each for a behaviour of its own: a new preflight script runs
        # again on every machine (its copy and its command), a new verification check script is a new
        # proof (its ConfigMap and the Jobs that mount it). Nothing else is replaced or deleted.
        replaced = {urn for urn, op in changed.items() if op in REPLACE_OPS}
        unexpected = sorted(urn for urn in replaced if not urn.endswith(REPLACED_ON_UPGRADE) and ":batch/v1:Job::" not in urn)
        assert not unexpected, local.explain(f"the upgrade replaces {unexpected}", preview)
        # Everything else that changes is updated in place: our dynamic resources (typed now, aliased
        # from the old type) drop their copy of the credentials and name today's import path; the
        # plugin runs privileged; the labels carry GFD's new keys.
        rest = {urn: op for urn, op in changed.items() if op != "create" and urn not in replaced}
        assert all(op == "update" for op in rest.values()), local.explain(f"the upgrade changes {rest}", preview)
        assert any(DYNAMIC_TYPE_PREFIX in urn for urn in rest), local.explain(f"no dynamic resource updated: {rest}", preview)

        pulumi(local, ROOT, stack, "up", "--yes", "--skip-preview")
        after = json.loads(pulumi(local, ROOT, stack, "stack", "output", "--json").stdout)
        assert after.keys() == before.keys(), f"the outputs changed shape:\nbefore {before}\nafter {after}"
        report = after["nodeGroups"]["upgrade"]
        assert sorted(report) == sorted(before["nodeGroups"]["upgrade"]), report
        for name, node in report.items():
            assert set(node["checklist"].values()) == {"pass"} and node["gate"] == "lifted", f"{name}: {node}"
        urns = [r["urn"] for r in json.loads(pulumi(local, ROOT, stack, "stack", "export").stdout)["deployment"]["resources"]]
        assert any(u.endswith("::gpu-nodes-upgrade-gpu-node-4-taints") for u in urns), "the resources keep their old names"
        export = json.loads(pulumi(local, ROOT, stack, "stack", "export").stdout)
        stale = {r["urn"]: provider_class(r) for r in ours(export) if not provider_class(r).startswith("gpu_nodes.providers.")}
        assert not stale, f"after one pulumi up, resources still name old import paths: {stale}"
        pulumi(local, ROOT, stack, "preview", "--expect-no-changes")
        pulumi(local, ROOT, stack, "refresh", "--preview-only", "--expect-no-changes")
    finally:
        pulumi(local, ROOT, stack, "destroy", "--yes", "--skip-preview", check=False)
        pulumi(local, ROOT, stack, "stack", "rm", "--yes", check=False)
        (ROOT / stack_file.name).unlink(missing_ok=True)
