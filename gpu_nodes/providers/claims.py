"""Only what this stack created is its own: a check before each shared object it would create.

pulumi-kubernetes 4.25 creates with server-side apply, which takes over an object that exists
already: `pulumi up` would adopt another team's namespace (the device plugin chart's documented
namespace is our default) and `pulumi destroy` would delete it with everything in it. So before
the stack creates a namespace, RuntimeClass or PriorityClass, a claim reads it: absent, it is
ours to create; present, it must carry this stack's label (or our ownership labels and no stack
label: docs/upgrading.md, "Upgrading deployed stacks"), else the run stops naming the object and the
setting that avoids it. A
namespace listed in `gpu-nodes:existingNamespaces` is referenced instead: it must exist, the
stack puts its objects in it, and never creates or deletes it.

The claim runs when it is created (first `pulumi up` of the object) and keeps its verdict.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult

from gpu_nodes.errors import ClaimError
from gpu_nodes.kube.client import ClusterAccess, api_client_from_props
from gpu_nodes.manifests.naming import ownership_labels
from gpu_nodes.proof.inputs import Change, DeclaredInputs, declared, keys
from gpu_nodes.providers.cluster_resource import ClusterResource, ClusterResourceProvider, read_inputs
from gpu_nodes.vocabulary import PSA_ENFORCE, STACK_LABEL

CREATE, REFERENCE = "create", "reference"


@dataclass(frozen=True)
class Claim(DeclaredInputs):
    """One claim, as its resource is given it: another object or another mode is another claim (`REPLACE`);
    the stack's name and the hint are not."""

    # Namespace, RuntimeClass, PriorityClass, DeviceClass, Secret, or what runs ComputeDomains (CustomResourceDefinition,
    # ClusterRole, ClusterRoleBinding)
    kind: str = field(metadata=declared("kind", Change.REPLACE, required=True))
    name: str = field(metadata=declared("name", Change.REPLACE, required=True))
    # CREATE or REFERENCE
    mode: str = field(metadata=declared("mode", Change.REPLACE, required=True))
    # This stack, as STACK_LABEL writes it.
    stack: str = field(metadata=declared("stack", Change.STATE_ONLY, required=True))
    # The setting a user changes to avoid a foreign object, for the message.
    setting: str = field(metadata=declared("setting", Change.STATE_ONLY, required=True))
    # A referenced namespace must admit this Pod Security level (None: any).
    needs_level: str | None = field(default=None, metadata=declared("needsLevel", Change.STATE_ONLY))
    # Where a namespaced object (the pull Secret) lives; a cluster-wide claim has no such input (tests/golden/*.json).
    namespace: str | None = field(default=None, metadata=declared("namespace", Change.REPLACE, only_when_set=True))


# What makes another claim.
REPLACING_KEYS = keys(Claim, Change.REPLACE)


def stack_label_value() -> str:
    return f"{pulumi.get_project()}.{pulumi.get_stack()}"[:63].strip("-_.")


def claim_problem(claim: Claim, found: Mapping[str, Any] | None) -> str | None:
    """Why the stack may not go on with this object (None: it may), from the object as read."""
    what = f"{claim.kind} {claim.namespace}/{claim.name}" if claim.namespace else f"{claim.kind} {claim.name}"
    if claim.mode == REFERENCE:
        if found is None:
            return f"{what} does not exist; create it first, or remove it from {claim.setting} so that the stack creates it"
        level = ((found.get("metadata") or {}).get("labels") or {}).get(PSA_ENFORCE)
        if claim.needs_level and level not in (None, claim.needs_level):
            return (
                f"{what} enforces Pod Security level {level!r}, and the device plugin needs {claim.needs_level!r} "
                f"(it mounts hostPath): label it {PSA_ENFORCE}={claim.needs_level}, or use a namespace of its own"
            )
        return None
    if found is None:
        return None
    labels = (found.get("metadata") or {}).get("labels") or {}
    owner = labels.get(STACK_LABEL)
    if owner == claim.stack:
        return None
    ours = all(labels.get(key) == value for key, value in ownership_labels().items())
    if owner is None and ours:
        return None  # our ownership labels and no stack label: ours (docs/upgrading.md, "Upgrading deployed stacks")
    by = f"stack {owner}" if owner else "someone else (it has no gpu-nodes labels)"
    return f"{what} exists already, created by {by}: this stack neither adopts nor deletes it. {claim.setting}"


def read_object(api: Any, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    """The object as the API returns it, or None when there is none."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    readers = {
        "Namespace": lambda: client.CoreV1Api(api).read_namespace(name),
        "RuntimeClass": lambda: client.NodeV1Api(api).read_runtime_class(name),
        "PriorityClass": lambda: client.SchedulingV1Api(api).read_priority_class(name),
        "DeviceClass": lambda: client.ResourceV1Api(api).read_device_class(name),
        # The DRA driver's ComputeDomains: its CRDs and the chart's fixed-name cluster roles (device_classes.py).
        "CustomResourceDefinition": lambda: client.ApiextensionsV1Api(api).read_custom_resource_definition(name),
        "ClusterRole": lambda: client.RbacAuthorizationV1Api(api).read_cluster_role(name),
        "ClusterRoleBinding": lambda: client.RbacAuthorizationV1Api(api).read_cluster_role_binding(name),
        "Secret": lambda: client.CoreV1Api(api).read_namespaced_secret(name, namespace or "default"),
    }
    try:
        found = readers[kind]()
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    serialized: dict[str, Any] = api.sanitize_for_serialization(found)
    # Only its metadata is judged: a Secret's data never leaves this function.
    return {"metadata": serialized.get("metadata") or {}}


class ClaimProvider(ClusterResourceProvider):
    def _read(self, props: dict[str, Any], claim: Claim) -> dict[str, Any] | None:
        return read_object(api_client_from_props(self.cluster_props(props)), claim.kind, claim.name, claim.namespace)

    def create(self, props: dict[str, Any]) -> CreateResult:
        claim = read_inputs(Claim, props)
        problem = claim_problem(claim, self._read(props, claim))
        if problem:
            raise ClaimError(problem)
        where = f"{claim.namespace}/" if claim.namespace else ""
        return CreateResult(id_=f"{claim.kind}/{where}{claim.name}", outs=props)

    def diff_own(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = [key for key in REPLACING_KEYS if olds.get(key) != news.get(key)]
        return DiffResult(changes=bool(replaces), replaces=replaces, delete_before_replace=True)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return ReadResult(id_=id_, outs=props)


class ObjectClaim(ClusterResource, module="gpu-nodes", name="ObjectClaim"):
    """Checks, once, that the stack may create (or reference) one shared object."""

    def __init__(self, name: str, claim: Claim, cluster: ClusterAccess, opts: pulumi.ResourceOptions | None = None):
        super().__init__(ClaimProvider(), name, claim.to_props(), cluster, opts)
