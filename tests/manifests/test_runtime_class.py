"""The stack's RuntimeClass: what it is, when it is created, and who names it."""

from __future__ import annotations

import pytest

from gpu_nodes.config.stack import RuntimeClassSpec, parse_stack
from gpu_nodes.errors import ConfigError
from gpu_nodes.manifests.runtime_class import runtime_class_manifest
from tests.factories import group

STACK = "gpu-nodes.test"


def runtime_class(name, create=None):
    return parse_stack([group()], runtime_class=name, create_runtime_class=create).runtime_class


def problems(name, create=None) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_stack([group()], runtime_class=name, create_runtime_class=create)
    return caught.value.problems


def test_on_by_default_and_created_as_the_gpu_operator_does():
    assert runtime_class(None) == RuntimeClassSpec(name="nvidia", create=True)
    manifest = runtime_class_manifest(RuntimeClassSpec(name="nvidia", create=True), STACK)
    assert manifest["apiVersion"] == "node.k8s.io/v1" and manifest["kind"] == "RuntimeClass", manifest
    assert manifest["metadata"]["name"] == "nvidia", manifest
    assert manifest["handler"] == "nvidia", manifest["metadata"]["name"]


def test_no_scheduling_constraint_on_the_class():
    """Our pods select their group's nodes themselves; a class-wide nodeSelector would also bind
    everyone else's pods that name this cluster-wide class (as the GPU Operator's, handler only)."""
    manifest = runtime_class_manifest(RuntimeClassSpec(name="nvidia", create=True), STACK)
    assert "scheduling" not in manifest and "overhead" not in manifest, manifest["metadata"]["name"]


@pytest.mark.parametrize("off", ["", "false", False])
def test_empty_or_false_turns_it_off(off):
    assert runtime_class(off) is None


def test_another_name_references_an_existing_class():
    """e.g. the GPU Operator's nvidia-cdi: someone else owns it, we only name it."""
    spec = runtime_class("nvidia-cdi")
    assert spec == RuntimeClassSpec(name="nvidia-cdi", create=False), spec
    assert runtime_class_manifest(spec, STACK) is None


def test_an_existing_nvidia_class_can_be_referenced_instead_of_adopted():
    spec = runtime_class("nvidia", "false")
    assert spec == RuntimeClassSpec(name="nvidia", create=False), spec


def test_another_name_can_be_created_on_request():
    spec = runtime_class("gpu", "true")
    assert runtime_class_manifest(spec, STACK)["metadata"]["name"] == "gpu", spec
    assert runtime_class_manifest(spec, STACK)["handler"] == "nvidia", spec


def test_invalid_name_is_refused_with_the_key():
    (problem,) = problems("Not_A_Name")
    assert problem.startswith("gpu-nodes:runtimeClass: got 'Not_A_Name';"), problem
    assert "RuntimeClass name" in problem and "false" in problem, problem


def test_true_is_not_a_name():
    (problem,) = problems("true")
    assert problem.startswith("gpu-nodes:runtimeClass: got 'true';"), problem


def test_create_flag_must_be_boolean():
    (problem,) = problems(None, "sometimes")
    assert problem.startswith("gpu-nodes:createRuntimeClass: got 'sometimes'; expected true or false"), problem


def test_nothing_to_create_when_off():
    (problem,) = problems("false", "true")
    assert problem.startswith("gpu-nodes:createRuntimeClass: got True;"), problem
    assert "gpu-nodes:runtimeClass is off" in problem, problem


def test_groups_learn_the_stacks_class_and_tenants_name_it_only_when_told():
    on = parse_stack([group()]).node_groups[0]
    assert (on.runtime_class, on.tenant_runtime_class) == ("nvidia", None), on
    named = parse_stack([group(gpuAccess="runtimeClass")]).node_groups[0]
    assert (named.runtime_class, named.tenant_runtime_class) == ("nvidia", "nvidia"), named
    off = parse_stack([group()], runtime_class="").node_groups[0]
    assert (off.runtime_class, off.tenant_runtime_class) == (None, None), off


@pytest.mark.parametrize("access", ["runtimeClass", "cdi"])
def test_a_path_that_needs_the_class_is_refused_when_it_is_off(access: str):
    with pytest.raises(
        ConfigError,
        match=rf"gpu-nodes:nodeGroups\[0\]\.gpuAccess: got '{access}'; needs the RuntimeClass .*gpu-nodes:runtimeClass is off",
    ):
        parse_stack([group(gpuAccess=access)], runtime_class="")


def test_an_unknown_tenant_path_names_the_choices():
    with pytest.raises(ConfigError, match=r"gpuAccess: got 'nvidia'; expected one of defaultRuntime, runtimeClass, cdi"):
        parse_stack([group(gpuAccess="nvidia")])
