"""Issue 27: a stack's state stays true when the program is not run (refresh, destroy, a killed run).

On the stack `e2e`, as one operator's story after one `pulumi up`: the state names today's
types and import paths and keeps the kubeconfig once; a kubeconfig moved to a new path is
what refresh and destroy use after the next `pulumi up`; runs killed with SIGKILL during
preflight and during the readiness waits recover with the steps of docs/operations.md ("After a killed run").
"""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from tests.e2e.conftest import GATE, GROUP, NODES, OUR_TAINT, ROOT, STACK, STATE, LocalEnv
from tests.e2e.stack_state import (
    DYNAMIC_PROVIDER_TYPE,
    DYNAMIC_TYPE_PREFIX,
    exported,
    kill_when,
    leftovers,
    ours,
    provider_class,
    resources,
)

pytestmark = pytest.mark.cluster

STACK_FILE = ROOT / f"Pulumi.{STACK}.yaml"
ROTATION = STATE / "e2e-rotation"


@pytest.fixture(scope="module", autouse=True)
def reconciled(deployed: LocalEnv) -> None:
    """The stack as it declares, read afresh: the modules before this one restart the local control plane
    (test_scale.py runs up.sh again on 101 nodes) and leave the shared stack's Jobs to what that did to them."""
    deployed.pulumi("up", "--refresh", "--yes", "--skip-preview", timeout=1200)


def test_after_one_up_the_preview_is_clean_with_every_resource_of_ours_diffed(deployed):
    preview = deployed.pulumi("preview", "--expect-no-changes", check=False)
    output = preview.stdout + preview.stderr
    assert preview.returncode == 0 and "not known during preview" not in output, deployed.explain("preview", preview)


def test_after_one_up_every_resource_names_todays_types_and_import_paths(deployed):
    export = exported(deployed)
    (access,) = [r for r in resources(export) if r["type"] == DYNAMIC_PROVIDER_TYPE]
    for resource in ours(export):
        urn = resource["urn"]
        assert resource["type"].startswith(DYNAMIC_TYPE_PREFIX), f"{urn}: still untyped"
        path = provider_class(resource)
        assert path.startswith("gpu_nodes.providers."), f"{urn}: __provider is {path}"
        kept = {"kubeconfig", "context"} & {*(resource.get("inputs") or {}), *(resource.get("outputs") or {})}
        assert not kept, f"{urn} keeps {kept} in its state"
        assert resource["provider"].startswith(access["urn"] + "::"), f"{urn}: provider {resource['provider']}"


def test_a_kubeconfig_given_as_contents_is_kept_once_not_once_per_node(deployed):
    old = STACK_FILE.read_text()
    path = deployed.pulumi("config", "get", "kubernetes:kubeconfig").stdout.strip()
    contents = (ROOT / path).read_text()
    try:
        by_path = len(deployed.pulumi("stack", "export").stdout)
        deployed.run("pulumi", "config", "set", "--secret", "--stack", STACK, "kubernetes:kubeconfig", stdin=contents)
        deployed.pulumi("up", "--yes", "--skip-preview", timeout=1200)
        by_contents = len(deployed.pulumi("stack", "export").stdout)
        # The Kubernetes provider and ours hold it (encrypted) in their inputs and outputs: four
        # copies whatever the node count (each node's taints and readiness held it four times).
        grown = by_contents - by_path
        print(f"\nstate: {by_path} B with a path, {by_contents} B with contents ({len(contents)} B), {len(NODES)} nodes")
        assert grown < 4 * 2 * len(contents), f"the state grew {grown} B for a {len(contents)} B kubeconfig"
        deployed.pulumi("refresh", "--preview-only", "--expect-no-changes")
    finally:
        STACK_FILE.write_text(old)
    deployed.pulumi("up", "--yes", "--skip-preview", timeout=1200)


def non_same_steps(local: LocalEnv) -> dict[str, str]:
    """What `pulumi preview` would do, by resource name, leaving out what stays the same."""
    steps = json.loads(local.pulumi("preview", "--json").stdout).get("steps", [])
    return {s["urn"].rsplit("::", 1)[1]: s["op"] for s in steps if s["op"] not in ("same", "read")}


def test_removing_and_adding_a_node_touches_that_node_only(deployed):
    """Issue 27: with preflight on and no gpuModel, no other node's resources change."""
    old = STACK_FILE.read_text()
    settings = yaml.safe_load(old)
    group = settings["config"]["gpu-nodes:nodeGroups"][0]
    assert group.get("preflight", {}).get("enabled", True) and "gpuModel" not in group, group
    gone = NODES[-1]
    group["nodes"] = [n for n in group["nodes"] if (n["name"] if isinstance(n, dict) else n) != gone]
    try:
        STACK_FILE.write_text(yaml.safe_dump(settings, sort_keys=True))
        removed = non_same_steps(deployed)
        others = {name: op for name, op in removed.items() if f"-{gone}-" not in name}
        assert others == {"gpu-nodes-device-plugin-coexistence": "update"}, f"removing {gone} changes {others}"
        deployed.pulumi("up", "--yes", "--skip-preview", timeout=1200)
    finally:
        STACK_FILE.write_text(old)
    added = non_same_steps(deployed)
    others = {name: op for name, op in added.items() if f"-{gone}-" not in name}
    assert others == {"gpu-nodes-device-plugin-coexistence": "update"}, f"adding {gone} back changes {others}"
    print(f"\nadding {gone}: {len(added)} steps ({sorted(set(added.values()))}), removing it: {len(removed)}")
    deployed.pulumi("up", "--yes", "--skip-preview", timeout=1200)
    deployed.pulumi("preview", "--expect-no-changes")


def test_a_kubeconfig_moved_to_a_new_path_is_what_refresh_and_destroy_use(deployed):
    """The issue's reproduction: `pulumi up` with the new path, the old file removed, then
    refresh and destroy succeed and leave no label, taint or gate of ours."""
    old = STACK_FILE.read_text()
    original = deployed.pulumi("config", "get", "kubernetes:kubeconfig").stdout.strip()
    shutil.rmtree(ROTATION, ignore_errors=True)
    runner_1, runner_2 = ROTATION / "runner-1/kubeconfig", ROTATION / "runner-2/kubeconfig"
    for path in (runner_1, runner_2):
        path.parent.mkdir(parents=True)
        shutil.copy(original, path)
    try:
        deployed.pulumi("config", "set", "kubernetes:kubeconfig", str(runner_1))
        deployed.pulumi("up", "--yes", "--skip-preview", timeout=1200)
        deployed.pulumi("config", "set", "kubernetes:kubeconfig", str(runner_2))
        deployed.pulumi("up", "--yes", "--skip-preview", timeout=1200)
        runner_1.unlink()
        deployed.pulumi("refresh", "--preview-only", "--expect-no-changes")
        deployed.pulumi("destroy", "--yes", "--skip-preview", timeout=1200)
        left = leftovers(deployed, NODES, GROUP, OUR_TAINT, GATE)
        assert not left, deployed.explain(f"destroy after the rotation left {left}")
    finally:
        STACK_FILE.write_text(old)


RECOVERY = (
    ("cancel", "--yes"),
    ("refresh", "--clear-pending-creates", "--yes", "--skip-preview"),
)


def recover_and_finish(local: LocalEnv, killed: str) -> None:
    """The steps after a killed run (docs/operations.md), then a complete `pulumi up`."""
    for step in RECOVERY:
        local.pulumi(*step, timeout=900)
    local.pulumi("up", "--yes", "--skip-preview", timeout=1200)
    preview = local.pulumi("preview", "--expect-no-changes", check=False)
    assert preview.returncode == 0, local.explain(f"after a run killed {killed}, preview is not clean", preview)
    pending = exported(local)["deployment"].get("pending_operations") or []
    assert not pending, f"pending operations left: {json.dumps(pending)[:2000]}"


def test_a_run_killed_during_preflight_recovers_and_leaves_nothing_after_destroy(local):
    kill_when(local, r"-preflight\s+creating")
    recover_and_finish(local, "during preflight")
    local.pulumi("destroy", "--yes", "--skip-preview", timeout=1200)
    left = leftovers(local, NODES, GROUP, OUR_TAINT, GATE)
    assert not left, local.explain(f"destroy after a run killed during preflight left {left}")


def test_a_run_killed_during_the_readiness_waits_recovers_and_leaves_nothing_after_destroy(local):
    kill_when(local, r"-readiness\s+creating")
    recover_and_finish(local, "during the readiness waits")
    local.pulumi("destroy", "--yes", "--skip-preview", timeout=1200)
    left = leftovers(local, NODES, GROUP, OUR_TAINT, GATE)
    assert not left, local.explain(f"destroy after a run killed during the readiness waits left {left}")
