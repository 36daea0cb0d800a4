"""`GpuFleet` in a program of its own: named children, the consumer's provider, two fleets, aliases."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
import pytest

from gpu_nodes import ConfigError, GpuFleet, GpuFleetArgs, GpuNodesError
from tests.factories import SSH_KEY, group
from tests.pulumi_mocks import CLAIM_TYPE, DYNAMIC_PROVIDER_TYPE, DYNAMIC_TYPES, ProgramRun, run_inline

FLEET_TYPE = "gpu-nodes:index:GpuFleet"
GROUP_TYPE = "gpu-nodes:index:GpuNodeGroup"
KEY = SSH_KEY


def fleet(name: str, *groups: dict, provider: k8s.Provider | None = None, **args: object) -> GpuFleet:
    fleet_args = GpuFleetArgs(node_groups=list(groups), ssh_private_key=pulumi.Output.secret(KEY), **args)  # type: ignore[arg-type]
    return GpuFleet(name, fleet_args, opts=pulumi.ResourceOptions(provider=provider) if provider else None)


def children_of(run: ProgramRun, urn: str) -> list:
    return [r for r in run.resources if r.parent == urn]


def test_every_child_of_a_fleet_is_named_after_it_and_parented_to_it():
    run = run_inline(lambda: fleet("training", group("a100")))
    (built,) = run.of_type(FLEET_TYPE)
    children = children_of(run, built.urn)
    assert children, f"{built.urn}: no children"
    for child in children:
        assert child.name.startswith("training-"), f"{child.urn}: not named training-..."
    assert {c.type for c in children} >= {GROUP_TYPE, "kubernetes:core/v1:Namespace", "kubernetes:node.k8s.io/v1:RuntimeClass"}


def test_two_fleets_with_their_own_groups_and_namespaces_do_not_collide():
    def program() -> None:
        fleet("training", group("a100"))
        fleet(
            "inference",
            group("l4", devicePlugin={"namespace": "inference-plugin"}, verification={"namespace": "inference-checks"}),
            runtime_class="nvidia-inference",
        )

    run = run_inline(program)
    urns = [r.urn for r in run.resources]
    assert len(urns) == len(set(urns)), f"duplicate URNs: {sorted(u for u in urns if urns.count(u) > 1)}"
    groups = sorted(r.name for r in run.of_type(GROUP_TYPE))
    assert groups == ["inference-l4", "training-a100"], groups


def test_a_second_fleet_creating_the_first_fleets_namespace_is_refused_before_it_registers_anything():
    def program() -> None:
        fleet("training", group("a100"))
        with pytest.raises(ConfigError) as raised:
            fleet("inference", group("l4"), runtime_class="nvidia-inference")
        message = str(raised.value)
        assert "namespace 'nvidia-device-plugin' belongs to fleet 'training' already" in message, message
        assert "existing_namespaces" in message, message

    run = run_inline(program)
    assert [r.name for r in run.of_type(FLEET_TYPE)] == ["training"], [r.urn for r in run.of_type(FLEET_TYPE)]
    assert not [r.urn for r in run.resources if r.name.startswith("inference")]


def test_a_fleet_referencing_the_first_fleets_namespaces_waits_for_it():
    def program() -> None:
        first = fleet("training", group("a100"))
        namespaces = ["nvidia-device-plugin", "gpu-verification"]
        args = GpuFleetArgs(
            node_groups=[group("l4")], existing_namespaces=namespaces, create_runtime_class=False, ssh_private_key=KEY
        )
        GpuFleet("inference", args, opts=pulumi.ResourceOptions(depends_on=[first]))

    run = run_inline(program)
    # Depending on a component is depending on what is in it: here, its namespaces.
    first = run.named("training-namespace-nvidia-device-plugin").urn
    claims = [r for r in run.of_type(CLAIM_TYPE) if r.name.startswith("inference-namespace-")]
    assert claims, "no namespace claims in fleet inference"
    for claim in claims:
        assert first in claim.dependencies, f"{claim.urn}: does not wait for fleet training"
        assert claim.inputs["mode"] == "reference", claim.urn
    assert not [r.urn for r in run.of_type("kubernetes:core/v1:Namespace") if r.name.startswith("inference")]


def test_the_dynamic_resources_reach_the_cluster_through_the_given_provider_and_keep_its_kubeconfig_secret():
    kubeconfig = "apiVersion: v1\nkind: Config\nclusters: []\n"

    def program() -> None:
        provider = k8s.Provider("platform", kubeconfig=kubeconfig, context="gpu-cluster")
        fleet("training", group("a100"), provider=provider)

    run = run_inline(program)
    # Issue 27: one copy of the credentials per fleet, in the configuration of the provider our
    # dynamic resources run under, which refresh and destroy use as the last `pulumi up` left it.
    (access,) = run.of_type(DYNAMIC_PROVIDER_TYPE)
    assert access.inputs["kubeconfig"] == kubeconfig and access.inputs["context"] == "gpu-cluster", access.inputs
    assert "kubeconfig" in access.secret_inputs, f"{access.urn}: the kubeconfig is not a secret"
    dynamic = [r for t in DYNAMIC_TYPES for r in run.of_type(t)]
    assert dynamic
    for resource in dynamic:
        assert not {"kubeconfig", "context"} & set(resource.inputs), f"{resource.urn} keeps credentials: {resource.inputs}"
        assert resource.provider.startswith(access.urn + "::"), f"{resource.urn}: provider {resource.provider}"
    for resource in run.resources:
        if resource.type.startswith("kubernetes:") and not resource.type.startswith("pulumi:providers"):
            assert resource.provider.split("::")[-2] == "platform", f"{resource.urn}: provider {resource.provider}"


def test_legacy_root_names_alias_the_groups_and_shared_objects_to_their_names_at_the_root():
    run = run_inline(lambda: fleet("gpu-nodes", group("a100"), legacy_root_names=True))
    for name in ("a100", "namespace-nvidia-device-plugin", "runtime-class-nvidia", "device-plugin-coexistence"):
        resource = run.named(name)
        # Our dynamic resources have it twice: under today's type and under the old one.
        assert set(resource.alias_names) == {name}, f"{resource.urn}: aliases {resource.alias_names}"


def test_a_fleet_has_no_aliases_unless_asked():
    run = run_inline(lambda: fleet("training", group("a100")))
    aliased = [r.urn for r in run.resources if r.alias_names]
    assert not aliased, f"aliased without legacy_root_names: {aliased}"


def test_bad_args_fail_before_the_fleet_is_registered_naming_the_key():
    def program() -> None:
        with pytest.raises(GpuNodesError) as raised:
            fleet("training", group("a100", gpusPerNode=0))
        # In the program's own words: its argument, not the stack config key.
        assert "node_groups[0].gpusPerNode: got 0" in str(raised.value), str(raised.value)
        assert "gpu-nodes:" not in str(raised.value), str(raised.value)

    run = run_inline(program)
    registered = [r.urn for r in run.resources if r.type != "pulumi:pulumi:Stack"]
    assert not registered, registered


def test_preflight_without_a_key_is_refused_naming_the_setting():
    def program() -> None:
        with pytest.raises(ConfigError) as raised:
            GpuFleet("training", GpuFleetArgs(node_groups=[group("a100")]))
        assert "ssh_private_key: not set" in str(raised.value), str(raised.value)

    run_inline(program)
