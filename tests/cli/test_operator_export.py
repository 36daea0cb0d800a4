"""The operator export as data: one Stack per stack, the owner as the others' prerequisite, secrets
only by reference. (tests/e2e/test_fleet.py has a real API server check them against the CRDs.)"""

from __future__ import annotations

import pytest
import yaml

from gpu_nodes.cli.operator_export import RULES, operator_objects, read_settings, secret_name
from gpu_nodes.cli.plan import plan_fleet
from gpu_nodes.errors import FleetError
from tests.cli.fleets import fleet, group
from tests.factories import REGISTRY_LOGIN, SECRET_KEYS, two_groups
from tests.pulumi_mocks import run_program

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
    assert any(p.startswith("repository: got nothing (the key is required)") for p in caught.value.problems), (
        caught.value.problems
    )
    assert any(p.startswith("surprise: got 1; unknown key") for p in caught.value.problems), caught.value.problems


def settings_problems(tmp_path, text: str) -> list[str]:
    path = tmp_path / "operator.yaml"
    path.write_text(text)
    with pytest.raises(FleetError) as caught:
        read_settings(path, fleet(group("a", "n1"), secrets={"gpu-nodes:sshPrivateKey": {"env": "SSH_KEY"}}))
    return caught.value.problems


_REQUIRED = "repository: https://git.example.com/gpu-nodes.git\nbackend: s3://state\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("repository: [a, b\n", "not YAML"),
        ("- repository\n", "got ['repository']; expected a mapping with repository, backend"),
        (_REQUIRED + "resyncFrequencySeconds: often\n", "resyncFrequencySeconds: got 'often'; expected a whole number"),
        (_REQUIRED + "resyncFrequencySeconds: -5\n", "resyncFrequencySeconds: got -5; expected 60 or more"),
        (_REQUIRED + "resyncFrequencySeconds: 30\n", "resyncFrequencySeconds: got 30; expected 60 or more"),
        (_REQUIRED + "namespace: GPU_Fleet\n", "namespace: got 'GPU_Fleet'; expected a namespace name"),
        (_REQUIRED + "serviceAccount: 'a b'\n", "serviceAccount: got 'a b'; expected a ServiceAccount name"),
        (_REQUIRED + "env: {PULUMI_CONFIG_PASSPHRASE: 5}\n", "env.PULUMI_CONFIG_PASSPHRASE: got 5; expected an object"),
        (_REQUIRED + "env: {1PASS: {secret: s, key: k}}\n", "env.1PASS: got {'secret': 's', 'key': 'k'}; expected an env"),
        (_REQUIRED + "env: {PASS: {secret: s}}\n", "env.PASS.key: got nothing (the key is required)"),
        (_REQUIRED + "env: {PASS: {secret: Bad_Name, key: k}}\n", "env.PASS.secret: got 'Bad_Name'; expected a Secret's name"),
        (_REQUIRED + "env: {PASS: {secret: s, key: 'a/b'}}\n", "env.PASS.key: got 'a/b'; expected a key of the Secret's data"),
        (_REQUIRED + "env: {PASS: {secret: s, key: k, name: x}}\n", "env.PASS.name: got 'x'; unknown key"),
        (_REQUIRED + "env: [PASS]\n", "env: got ['PASS']; expected an object"),
        (_REQUIRED + "secrets: {sshPrivateKey: {secret: s, key: k}}\n", "secrets.sshPrivateKey: got"),
        (_REQUIRED + "backend: file:///tmp/state\n", "backend: got 'file:///tmp/state'; expected a backend the pods reach"),
        (_REQUIRED + "repository: ''\n", "repository: got ''; expected a git URL"),
        (_REQUIRED + "repoDir: /abs\n", "repoDir: got '/abs'; expected a relative path"),
        (_REQUIRED + "resyncFrequency: 60\n", "resyncFrequency: got 60; unknown key; did you mean resyncFrequencySeconds?"),
    ],
    ids=[
        "not-yaml",
        "not-a-mapping",
        "resync-a-word",
        "resync-negative",
        "resync-below-the-operators-minimum",
        "namespace-no-dns-label",
        "service-account-no-name",
        "env-value-a-number",
        "env-name-a-digit-first",
        "env-without-key",
        "env-secret-no-name",
        "env-key-with-slash",
        "env-unknown-field",
        "env-a-list",
        "secret-key-without-namespace",
        "local-file-backend",
        "empty-repository",
        "absolute-repo-dir",
        "typo",
    ],
)
def test_bad_operator_settings_are_refused_naming_the_key(tmp_path, text: str, expected: str):
    found = settings_problems(tmp_path, text)
    assert any(expected in p for p in found), f"no problem says {expected!r}: {found}"


def test_a_stack_name_the_operator_refuses_is_named(tmp_path):
    path = tmp_path / "operator.yaml"
    path.write_text(_REQUIRED)
    read = fleet(group("a", "n1"), stacks={"Rack_A": ["a"]})
    with pytest.raises(FleetError) as caught:
        read_settings(path, read)
    assert any("stack name 'Rack_A'; the operator's Stack takes a DNS-1123 subdomain" in p for p in caught.value.problems), (
        caught.value.problems
    )


def test_one_export_does_not_change_the_next_ones_defaults(tmp_path):
    path = tmp_path / "operator.yaml"
    path.write_text(_REQUIRED)
    read_settings(path, fleet(group("a", "n1"), secrets={"gpu-nodes:sshPrivateKey": {"env": "SSH_KEY"}}))
    later = read_settings(path, fleet(group("a", "n1")))
    assert later.secrets == {}, later.secrets


def test_a_secret_names_its_default_secret_after_its_key():
    assert secret_name("gpu-nodes:sshPrivateKey") == "gpu-nodes-sshprivatekey"


def _rule_resource(resource_type: str) -> tuple[str, str, str]:
    """(apiGroup, resource, verb) a registered `kubernetes:<group>/<version>:<Kind>` needs: the
    resource's plural as the API server names it; a NodePatch patches its Node."""
    api, kind = resource_type.removeprefix("kubernetes:").split(":")
    group_name = api.split("/")[0]
    group_name = "" if group_name == "core" else group_name
    if kind.endswith("Patch"):
        kind, verb = kind.removesuffix("Patch"), "patch"
    else:
        verb = "create"
    plural = kind.lower() + ("es" if kind.endswith("s") else "s")
    return group_name, plural, verb


def test_the_workspaces_role_lets_the_program_create_every_kind_it_registers():
    """What the program registers under mocks (every optional object: a pull Secret, the RuntimeClass)
    is what the workspace pod's ClusterRole must allow (docs/what-it-creates.md)."""
    pull_secret = "gpu-nodes:imagePullSecret"
    run = run_program(two_groups() | {pull_secret: REGISTRY_LOGIN}, [*SECRET_KEYS, pull_secret])
    kinds = {r.type for r in run.resources if r.type.startswith("kubernetes:") and not r.type.startswith("kubernetes:pulumi")}
    allowed = {(g, res, verb) for rule in RULES for g in rule["apiGroups"] for res in rule["resources"] for verb in rule["verbs"]}
    missing = sorted(
        f"{kind} ({need[1]})"
        for kind in kinds
        if (need := _rule_resource(kind)) not in allowed and (need[0], need[1], "*") not in allowed
    )
    assert missing == [], missing
