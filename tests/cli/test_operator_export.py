"""The operator export as data: one Stack per stack, the owner as the others' prerequisite, secrets
only by reference. (tests/e2e/test_fleet.py has a real API server check them against the CRDs.)"""

from __future__ import annotations

import pytest
import yaml

from gpu_nodes.cli.operator_export import operator_objects, read_settings, secret_name
from gpu_nodes.cli.plan import plan_fleet
from gpu_nodes.errors import FleetError
from tests.cli.fleets import fleet, group

SETTINGS = {"repository": "https://git.example.com/platform/gpu-nodes.git", "backend": "s3://state"}


def exported(tmp_path, **extra):
    read = fleet(
        group("a", "n1"),
        group("b", "n2"),
        config={"kubernetes:kubeconfig": "/home/me/.kube/config"},
        secrets={"gpu-nodes:sshPrivateKey": {"env": "SSH_KEY"}},
    )
    path = tmp_path / "operator.yaml"
    path.write_text(yaml.safe_dump({**SETTINGS, **extra}))
    return operator_objects(plan_fleet(read), read_settings(path, read))


def stacks(objects):
    return {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "Stack"}


def test_one_stack_object_per_stack_and_the_owner_is_the_others_prerequisite(tmp_path):
    found = stacks(exported(tmp_path))
    assert sorted(found) == ["a", "b"], found
    assert "prerequisites" not in found["a"] and found["b"]["prerequisites"] == [{"name": "a"}], found


def test_secrets_are_named_never_written_and_the_local_kubeconfig_stays_home(tmp_path):
    spec = stacks(exported(tmp_path))["b"]
    assert spec["secretsRef"] == {
        "gpu-nodes:sshPrivateKey": {"type": "Secret", "secret": {"name": "gpu-nodes-sshprivatekey", "key": "value"}}
    }, spec
    assert "kubernetes:kubeconfig" not in spec["config"], spec["config"]
    assert spec["config"]["gpu-nodes:createRuntimeClass"] == "false" and spec["resyncFrequencySeconds"] == 600, spec


def test_missing_operator_settings_are_named(tmp_path):
    read = fleet(group("a", "n1"))
    path = tmp_path / "operator.yaml"
    path.write_text(yaml.safe_dump({"backend": "s3://state", "surprise": 1}))
    with pytest.raises(FleetError) as caught:
        read_settings(path, read)
    assert any(p.startswith("repository: got None") for p in caught.value.problems), caught.value.problems
    assert any(p.startswith("surprise: unknown key") for p in caught.value.problems), caught.value.problems


def test_a_secret_names_its_default_secret_after_its_key():
    assert secret_name("gpu-nodes:sshPrivateKey") == "gpu-nodes-sshprivatekey"
