"""Namespaces the node groups share, each with the Pod Security level its pods need.

Each is created by the stack (after a claim finds it absent, or already this stack's), or, when
listed in `gpu-nodes:existingNamespaces`, referenced: then the stack never creates or deletes it
(gpu_nodes/providers/claims.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from gpu_nodes.config.stack import EXISTING_NAMESPACES, IMAGE_PULL_SECRET, StackSpec
from gpu_nodes.constants import PULL_SECRET_NAME
from gpu_nodes.kube.client import ClusterAccess
from gpu_nodes.manifests.namespaces import PRIVILEGED, namespace_levels, namespace_manifest, pull_secret_manifest
from gpu_nodes.providers.claims import CREATE, REFERENCE, Claim
from gpu_nodes.resources.child_names import namespace_child, pull_secret_child
from gpu_nodes.resources.children import Children
from gpu_nodes.resources.registration import claim_object, register_claimed


@dataclass(frozen=True)
class SharedNamespace:
    """A namespace the groups put objects in: the Namespace the stack created, or the claim
    that found someone else's (then nothing of ours is deleted with it)."""

    name: str
    resource: pulumi.Resource
    owned: bool
    # The stack's pull Secret in it (gpu-nodes:imagePullSecret), which its pods name.
    pull_secret: pulumi.Resource | None = None

    @property
    def ready(self) -> list[pulumi.Resource]:
        """What a pod in it waits for: the namespace, and the pull Secret it names."""
        return [self.resource, *([self.pull_secret] if self.pull_secret else [])]

    @property
    def deleted_with(self) -> pulumi.Resource | None:
        """What our objects in it go with on destroy: the namespace, when it is ours to delete."""
        return self.resource if self.owned else None


def namespace_claim(name: str, level: str, stack: StackSpec, owner: str) -> Claim:
    if name in stack.existing_namespaces:
        return Claim("Namespace", name, REFERENCE, owner, EXISTING_NAMESPACES.key, PRIVILEGED if level == PRIVILEGED else None)
    setting = (
        "Give the groups another namespace (devicePlugin.namespace, verification.namespace), "
        f"or list it in {EXISTING_NAMESPACES.key} to use it as it is"
    )
    return Claim("Namespace", name, CREATE, owner, setting)


def declare_namespaces(
    stack: StackSpec,
    children: Children,
    cluster: ClusterAccess,
    owner: str,
    pull_secret: pulumi.Input[str] | None = None,
) -> dict[str, SharedNamespace]:
    """Claim each namespace of `namespace_levels` once, create those that are ours to create,
    and put the stack's pull Secret in each (after its own claim) when there is one."""
    namespaces: dict[str, SharedNamespace] = {}
    for name, level in namespace_levels(stack).items():
        claim, child = namespace_claim(name, level, stack, owner), namespace_child(name)
        owned = claim.mode == CREATE
        namespace: pulumi.Resource = (
            register_claimed(namespace_manifest(name, level, owner), k8s.core.v1.Namespace, children, child, claim, cluster)
            if owned
            else claim_object(children, child, claim, cluster)
        )
        secret = _pull_secret(name, namespace, owned, owner, children, cluster, pull_secret) if pull_secret else None
        namespaces[name] = SharedNamespace(name, namespace, owned=owned, pull_secret=secret)
    return namespaces


def _pull_secret(
    namespace: str,
    after: pulumi.Resource,
    owned: bool,
    owner: str,
    children: Children,
    cluster: ClusterAccess,
    login: pulumi.Input[str],
) -> k8s.core.v1.Secret:
    setting = f"Rename or remove that Secret, or leave {IMAGE_PULL_SECRET.key} unset and give the pods none"
    claim = Claim("Secret", PULL_SECRET_NAME, CREATE, owner, setting, namespace=namespace)
    manifest = pull_secret_manifest(namespace, owner, pulumi.Output.secret(login))
    child, deleted_with = pull_secret_child(namespace), after if owned else None
    return register_claimed(manifest, k8s.core.v1.Secret, children, child, claim, cluster, [after], deleted_with=deleted_with)
