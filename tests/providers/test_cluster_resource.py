"""What every dynamic resource of ours does with how it reaches the cluster and which code runs it.

`pulumi refresh` and `pulumi destroy` run a resource's provider with the outputs of its last
Update: a Same step keeps them (`SameStep.Apply`, pkg/resource/deploy/step.go in pulumi/pulumi).
So new credentials or a new import path are a change, and that change rewrites them only.
"""

from __future__ import annotations

import pulumi
import pytest
from google.protobuf.struct_pb2 import Struct
from pulumi.dynamic import Config, ConfigureRequest, UpdateResult
from pulumi.runtime import rpc

from gpu_nodes.providers.claims import ClaimProvider, ObjectClaim
from gpu_nodes.providers.cluster_resource import UNTYPED, ClusterResourceProvider, read_inputs, untyped_aliases
from gpu_nodes.providers.coexistence import CoexistenceInputs, CoexistenceProvider, DevicePluginCoexistence
from gpu_nodes.providers.readiness import NodeReadiness, NodeReadinessProvider
from gpu_nodes.providers.taints import NodeTaints, NodeTaintsProvider

# Each provider with inputs its own diff finds unchanged when compared with themselves.
OWN_INPUTS = {
    NodeTaintsProvider: {"node": "gpu-0", "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
    NodeReadinessProvider: {"node": "gpu-0", "jobs": ["gpu-verify-gpu-0"], "checklist": {}, "gate": "lifted"},
    ClaimProvider: {"kind": "Namespace", "name": "nvidia-device-plugin", "mode": "create"},
    CoexistenceProvider: {"nodes": ["gpu-0"], "handOver": [], "found": []},
}
ACCESS = {"kubeconfig": "/runner-1/kubeconfig", "context": "ci", "__provider": "old-import-path"}
ROTATIONS = {
    "kubeconfig moved": {"kubeconfig": "/runner-2/kubeconfig"},
    "kubeconfig given as contents": {"kubeconfig": "apiVersion: v1\nkind: Config\n"},
    "context renamed": {"context": "ci-2"},
    "provider's import path": {"__provider": "todays-import-path"},
}


def worker(provider_class: type) -> ClusterResourceProvider:
    """The provider, failing the test if it does its work (a taint write, a wait, a claim, a look)."""

    class Worker(provider_class):  # type: ignore[misc, valid-type]
        def update_own(self, id_: str, olds: dict, news: dict) -> UpdateResult:
            raise AssertionError(f"{provider_class.__name__} {id_}: did its work again for a change of credentials")

    return Worker()


@pytest.mark.parametrize("provider_class", OWN_INPUTS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("rotation", ROTATIONS.values(), ids=ROTATIONS.keys())
def test_new_credentials_are_a_change(provider_class, rotation):
    olds = {**OWN_INPUTS[provider_class], **ACCESS}
    diff = provider_class().diff("gpu-0", olds, {**olds, **rotation})
    assert diff.changes is True and not diff.replaces, f"{provider_class.__name__}: {rotation} gave {vars(diff)}"


@pytest.mark.parametrize("provider_class", OWN_INPUTS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("rotation", ROTATIONS.values(), ids=ROTATIONS.keys())
def test_new_credentials_are_stored_without_doing_the_work_again(provider_class, rotation):
    olds = {**OWN_INPUTS[provider_class], **ACCESS}
    outs = worker(provider_class).update("gpu-0", olds, {**olds, **rotation}).outs
    assert outs == {**olds, **rotation}, f"{provider_class.__name__}: {rotation} stored {outs}"


# An input the work does not depend on, and an output of the last work, for each provider.
HINT_AND_RESULT = {
    NodeTaintsProvider: ({"nodeName": "gpu-0"}, {"round": 3, "health": []}),
    NodeReadinessProvider: ({"gpusPerNode": 8}, {"checklist": {"labelled": "pass"}, "gate": "lifted", "recovery": None}),
    ClaimProvider: ({"setting": "Set gpu-nodes:existingNamespaces"}, {}),
    CoexistenceProvider: ({"nodeCount": 1}, {"handedOver": ["kube-system/nvdp"], "found": []}),
}


@pytest.mark.parametrize("provider_class", OWN_INPUTS, ids=lambda c: c.__name__)
def test_the_state_takes_this_runs_inputs_and_keeps_the_last_works_results(provider_class):
    hint, result = HINT_AND_RESULT[provider_class]
    olds = {**OWN_INPUTS[provider_class], **ACCESS, **result}
    news = {**OWN_INPUTS[provider_class], **ACCESS, **hint, **dict.fromkeys(result)}  # outputs are None among inputs
    assert provider_class().diff("gpu-0", olds, news).changes, provider_class.__name__
    outs = worker(provider_class).update("gpu-0", olds, news).outs
    assert outs == {**news, **result}, f"{provider_class.__name__} stored {outs}"


@pytest.mark.parametrize("provider_class", OWN_INPUTS, ids=lambda c: c.__name__)
def test_the_same_credentials_are_no_change(provider_class):
    olds = {**OWN_INPUTS[provider_class], **ACCESS}
    assert not provider_class().diff("gpu-0", olds, dict(olds)).changes, provider_class.__name__


@pytest.mark.parametrize("provider_class", OWN_INPUTS, ids=lambda c: c.__name__)
def test_the_import_path_in_the_state_is_plain_text(provider_class):
    # pulumi.dynamic.Resource stores __provider as a secret unless the provider says otherwise.
    assert provider_class.serialize_as_secret_always is False, provider_class.__name__


@pytest.mark.parametrize(
    "resource, token",
    [
        (NodeTaints, "dynamic/gpu-nodes:NodeTaints"),
        (NodeReadiness, "dynamic/gpu-nodes:NodeReadiness"),
        (ObjectClaim, "dynamic/gpu-nodes:ObjectClaim"),
        (DevicePluginCoexistence, "dynamic/gpu-nodes:DevicePluginCoexistence"),
    ],
)
def test_each_resource_has_its_own_type(resource, token):
    assert resource._resource_type_name == token, resource.__name__


def configured(provider_class: type, access: dict) -> ClusterResourceProvider:
    """The provider as the provider server hands it over: configured with its provider's inputs."""
    provider = provider_class()
    provider.configure(ConfigureRequest(Config(raw_config=access, project_name="gpu-nodes")))
    return provider


@pytest.mark.parametrize("provider_class", OWN_INPUTS, ids=lambda c: c.__name__)
def test_a_configured_provider_reaches_the_cluster_as_configured_not_as_the_state_says(provider_class):
    provider = configured(provider_class, {"kubeconfig": "/runner-2/kubeconfig", "context": ""})
    reach = provider.cluster_props({**OWN_INPUTS[provider_class], **ACCESS})
    assert (reach["kubeconfig"], reach["context"]) == ("/runner-2/kubeconfig", ""), reach


@pytest.mark.parametrize("provider_class", OWN_INPUTS, ids=lambda c: c.__name__)
def test_the_default_provider_reaches_the_cluster_as_the_state_says(provider_class):
    # Resources of a stack deployed before, removed from the program in the run that upgrades it.
    provider = configured(provider_class, {})
    reach = provider.cluster_props({**OWN_INPUTS[provider_class], **ACCESS})
    assert (reach["kubeconfig"], reach["context"]) == (ACCESS["kubeconfig"], ACCESS["context"]), reach


@pytest.mark.parametrize("provider_class", OWN_INPUTS, ids=lambda c: c.__name__)
def test_credentials_moved_to_the_provider_leave_the_resources_state(provider_class):
    olds = {**OWN_INPUTS[provider_class], **ACCESS}
    news = dict(OWN_INPUTS[provider_class])
    assert provider_class().diff("gpu-0", olds, news).changes, provider_class.__name__
    outs = worker(provider_class).update("gpu-0", olds, news).outs
    assert not {"kubeconfig", "context"} & set(outs), f"{provider_class.__name__} keeps {outs}"


def test_a_resource_from_the_stacks_root_is_found_under_its_old_type_there_too():
    legacy = pulumi.ResourceOptions(aliases=[pulumi.Alias(name="device-plugin-coexistence", parent=pulumi.ROOT_STACK_RESOURCE)])
    found = [(a.name, a.parent, a.type_) for a in untyped_aliases(legacy)]
    # `...` keeps the resource's own value; a parent of ROOT_STACK_RESOURCE is the stack's root.
    assert found == [(..., ..., UNTYPED), ("device-plugin-coexistence", pulumi.ROOT_STACK_RESOURCE, UNTYPED)], found


def test_a_record_is_read_from_the_inputs_with_the_secrets_the_engine_keeps_unwrapped():
    # A secret on the wire (pulumi/pulumi, sdk/go/common/resource/sig/sig.go, Secret), decoded as the
    # provider server decodes a Create's or an Update's inputs (pulumi/dynamic/__main__.py).
    secret = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "value": ["gpu-0", "gpu-1"]}
    wire = Struct()
    wire.update({"nodes": secret, "handOver": []})
    read = read_inputs(CoexistenceInputs, rpc.deserialize_properties(wire))
    assert read == CoexistenceInputs(["gpu-0", "gpu-1"], [], []), read
