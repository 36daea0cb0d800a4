"""Claims: the stack creates a shared object only when it is absent or already this stack's."""

from __future__ import annotations

import pytest

from gpu_nodes.errors import ClaimError
from gpu_nodes.proof.inputs import Change, keys
from gpu_nodes.providers.claims import CREATE, REFERENCE, REPLACING_KEYS, Claim, ClaimProvider, claim_problem
from gpu_nodes.vocabulary import STACK_LABEL

STACK = "gpu-nodes.prod"
HINT = "Give the groups another namespace"


def namespace(labels: dict[str, str] | None = None) -> dict:
    return {"metadata": {"name": "nvidia-device-plugin", "labels": labels or {}}}


def create(kind: str = "Namespace") -> Claim:
    return Claim(kind, "nvidia-device-plugin", CREATE, STACK, HINT)


def test_an_absent_object_is_ours_to_create():
    assert claim_problem(create(), None) is None


def test_an_object_this_stack_created_is_ours():
    assert claim_problem(create(), namespace({STACK_LABEL: STACK})) is None


def test_an_object_from_before_the_stack_label_with_our_ownership_labels_is_ours():
    """Stacks deployed before the label: their namespaces carry only part-of and managed-by."""
    ours = {"app.kubernetes.io/part-of": "gpu-nodes", "app.kubernetes.io/managed-by": "pulumi"}
    assert claim_problem(create(), namespace(ours)) is None


def test_someone_elses_object_is_refused_naming_it_and_the_way_out():
    helm = {"app.kubernetes.io/managed-by": "Helm"}
    problem = claim_problem(create(), namespace(helm))
    assert problem is not None
    assert problem.startswith("Namespace nvidia-device-plugin exists already, created by someone else"), problem
    assert "neither adopts nor deletes it" in problem and HINT in problem, problem


def test_another_stacks_object_is_refused_naming_that_stack():
    problem = claim_problem(create("PriorityClass"), namespace({STACK_LABEL: "gpu-nodes.staging"}))
    assert (
        problem is not None and "PriorityClass nvidia-device-plugin exists already, created by stack gpu-nodes.staging" in problem
    )


def test_a_referenced_namespace_must_exist():
    claim = Claim("Namespace", "team-gpu", REFERENCE, STACK, "gpu-nodes:existingNamespaces")
    problem = claim_problem(claim, None)
    assert problem is not None and "does not exist" in problem and "gpu-nodes:existingNamespaces" in problem, problem
    assert claim_problem(claim, namespace()) is None


def test_a_referenced_plugin_namespace_must_admit_privileged_pods():
    claim = Claim("Namespace", "team-gpu", REFERENCE, STACK, "gpu-nodes:existingNamespaces", "privileged")
    problem = claim_problem(claim, namespace({"pod-security.kubernetes.io/enforce": "baseline"}))
    assert problem is not None and "enforces Pod Security level 'baseline'" in problem, problem
    assert claim_problem(claim, namespace({"pod-security.kubernetes.io/enforce": "privileged"})) is None
    assert claim_problem(claim, namespace()) is None  # the cluster's default


def test_the_provider_stops_the_run_on_a_foreign_object(monkeypatch):
    monkeypatch.setattr(ClaimProvider, "_read", lambda self, props, claim: namespace({"app.kubernetes.io/managed-by": "Helm"}))
    props = {"kind": "Namespace", "name": "nvidia-device-plugin", "mode": CREATE, "stack": STACK, "setting": HINT}
    with pytest.raises(ClaimError, match="exists already, created by someone else"):
        ClaimProvider().create(props)


def test_the_provider_keeps_the_verdict_of_a_free_name(monkeypatch):
    monkeypatch.setattr(ClaimProvider, "_read", lambda self, props, claim: None)
    props = {"kind": "Namespace", "name": "nvidia-device-plugin", "mode": CREATE, "stack": STACK, "setting": HINT}
    result = ClaimProvider().create(props)
    assert result.id == "Namespace/nvidia-device-plugin" and result.outs == props, result


def test_another_name_or_mode_is_a_new_claim_the_hint_is_not():
    olds = {"kind": "Namespace", "name": "a", "mode": CREATE, "stack": STACK, "setting": HINT}
    assert ClaimProvider().diff("x", olds, {**olds, "name": "b"}).replaces == ["name"]
    assert ClaimProvider().diff("x", olds, {**olds, "mode": REFERENCE}).replaces == ["mode"]
    # New words are stored (the state tells this run's), with no new claim: not a replacement.
    hint = ClaimProvider().diff("x", olds, {**olds, "setting": "other words"})
    assert hint.changes is True and not hint.replaces, vars(hint)


def test_another_object_or_mode_is_another_claim_as_the_claim_declares():
    assert REPLACING_KEYS == ("kind", "name", "mode", "namespace"), REPLACING_KEYS
    assert keys(Claim, Change.STATE_ONLY) == ("stack", "setting", "needsLevel"), keys(Claim, Change.STATE_ONLY)


def test_a_claim_reads_back_from_its_inputs_as_it_was():
    for written in (create(), Claim("Secret", "pull", CREATE, STACK, HINT, namespace="gpu-verification")):
        assert Claim.from_props(written.to_props()) == written, written.to_props()
    assert "namespace" not in create().to_props(), "a cluster-wide claim has no namespace input"
