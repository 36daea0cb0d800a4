"""The one way our modules register a Kubernetes object: its manifest, as a typed resource; and,
for a shared object the stack may find someone else's, after its claim (providers/claims.py)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, TypeVar

import pulumi
import pulumi_kubernetes as k8s

from gpu_nodes.kube.client import ClusterAccess
from gpu_nodes.providers.claims import Claim, ObjectClaim
from gpu_nodes.resources.children import Children, claim_child

Registered = TypeVar("Registered", bound=pulumi.CustomResource)


def register(manifest: dict[str, Any], cls: type[Registered], name: str, opts: pulumi.ResourceOptions) -> Registered:
    """Register a manifest dict as the typed resource `cls` (top-level fields become its arguments)."""
    fields = {_snake(k): v for k, v in manifest.items() if k not in ("apiVersion", "kind")}
    return cls(name, **fields, opts=opts)


def generic_object(manifest: dict[str, Any], name: str, opts: pulumi.ResourceOptions) -> k8s.apiextensions.CustomResource:
    """Register an object of a kind pulumi-kubernetes has no class for (resource.k8s.io/v1 in
    4.25: its newest typed DRA classes are v1beta2), by its apiVersion and kind as the API server
    takes it; the provider reaches any kind the server serves."""
    rest = {k: v for k, v in manifest.items() if k not in ("apiVersion", "kind", "metadata")}
    return k8s.apiextensions.CustomResource(
        name, api_version=manifest["apiVersion"], kind=manifest["kind"], metadata=manifest["metadata"], opts=opts, **rest
    )


def claim_object(
    children: Children, child: str, claim: Claim, cluster: ClusterAccess, after: Sequence[pulumi.Resource] = ()
) -> ObjectClaim:
    """The claim of child `child`'s object (named `claim_child(child)`), after `after`."""
    name = claim_child(child)
    return ObjectClaim(children.name(name), claim, cluster, children.opts(name, depends_on=after))


def register_claimed(
    manifest: dict[str, Any],
    cls: type[Registered],
    children: Children,
    child: str,
    claim: Claim,
    cluster: ClusterAccess,
    after: Sequence[pulumi.Resource] = (),
    **extra: object,
) -> Registered:
    """Register `manifest` as child `child` once its claim (after `after`) finds the object free
    or this stack's; `extra` are the child's other options."""
    checked = claim_object(children, child, claim, cluster, after)
    return register(manifest, cls, children.name(child), children.opts(child, depends_on=[checked], **extra))


def _snake(camel: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", camel).lower()
