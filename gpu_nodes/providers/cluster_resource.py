"""The base of our dynamic resources: each calls the API server itself, as the provider would.

What a resource's state says of how to reach the cluster (kubeconfig, context) and of which
code runs it (`__provider`, the provider class by import path) is what `pulumi refresh` and
`pulumi destroy` use, for they do not run the program: the provider server hands Read and
Delete the outputs of the last Update, and a Same step keeps them as they were
(`SameStep.Apply`, pkg/resource/deploy/step.go in pulumi/pulumi). So these are a change like
any other, and its Update rewrites them only: new credentials never re-run the work.
"""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.dynamic import ConfigureRequest, DiffResult, Resource, ResourceProvider, UpdateResult
from pulumi.runtime.rpc import unwrap_rpc_secret

from gpu_nodes.kube.client import ClusterAccess

# The type all our resources had before each got its own (aliased, so none is replaced).
UNTYPED = "pulumi-python:dynamic:Resource"

ACCESS_KEYS = ("kubeconfig", "context")
# Where pulumi.dynamic keeps the pickled provider class (PROVIDER_KEY in pulumi/dynamic/dynamic.py).
PROVIDER_KEY = "__provider"


def stale_run(olds: dict[str, Any], news: dict[str, Any]) -> bool:
    """Whether the state reaches the cluster, or names the code, otherwise than this run does."""
    return any(unwrap_rpc_secret(olds.get(k)) != unwrap_rpc_secret(news.get(k)) for k in (*ACCESS_KEYS, PROVIDER_KEY))


class ClusterResourceProvider(ResourceProvider):
    """A provider whose `diff_own` / `update_own` judge and do the work; the credentials and
    the import path kept in the state follow each run on top of that."""

    # The pickled class is an import path and holds no secret: stored in plain text, an
    # operator reads which code a destroy will run (`pulumi stack export`).
    serialize_as_secret_always = False
    # The access our provider resource holds (`ClusterAccess.served`); None under the default
    # provider, whose resources keep theirs in their own state (deployed before, or a bare group).
    access: dict[str, Any] | None = None

    def configure(self, req: ConfigureRequest) -> None:
        # The provider's inputs as the server received them (`Config._props`, pulumi/dynamic/
        # config.py): `Config.get` would look for "<project>:kubeconfig".
        raw: dict[str, Any] = getattr(req.config, "_props", None) or {}
        if "kubeconfig" in raw or "context" in raw:
            self.access = {key: unwrap_rpc_secret(raw.get(key)) or "" for key in ACCESS_KEYS}

    def cluster_props(self, props: dict[str, Any]) -> dict[str, Any]:
        """`props` with the access to reach the cluster with: the configured one, if any."""
        return {**props, **self.access} if self.access is not None else props

    def diff_own(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=False)

    def update_own(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=news)

    def diff(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        own = self.diff_own(id_, olds, news)
        if own.changes or not stale_run(olds, news):
            return own
        return DiffResult(changes=True)

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        if self.diff_own(id_, olds, news).changes:
            return self.update_own(id_, olds, news)
        # The provider server writes the new `__provider` itself. Credentials that moved to our
        # provider resource leave the resource's state.
        kept = {key: value for key, value in olds.items() if key not in ACCESS_KEYS}
        return UpdateResult(outs={**kept, **{key: news[key] for key in ACCESS_KEYS if key in news}})


class ClusterResource(Resource):
    """A dynamic resource that reaches the cluster with its provider's configuration when the
    access is `served`, else with the access among its inputs (`ClusterAccess.props()`, the
    kubeconfig a secret in its outputs too); its provider reads either back (`cluster_props`).
    Subclasses name their type: `class X(ClusterResource, module="gpu-nodes", name="X")`."""

    def __init__(
        self,
        provider: ClusterResourceProvider,
        name: str,
        props: dict[str, Any],
        cluster: ClusterAccess,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        opts = pulumi.ResourceOptions.merge(
            opts,
            pulumi.ResourceOptions(
                additional_secret_outputs=["kubeconfig"], aliases=[pulumi.Alias(type_=UNTYPED)], provider=cluster.provider
            ),
        )
        super().__init__(provider, name, {**props, **cluster.props()}, opts)
