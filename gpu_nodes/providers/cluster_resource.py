"""The base of our dynamic resources: each calls the API server itself, as the provider would.

What a resource's state says of how to reach the cluster (kubeconfig, context) and of which
code runs it (`__provider`, the provider class by import path) is what `pulumi refresh` and
`pulumi destroy` use, for they do not run the program: the provider server hands Read and
Delete the outputs of the last Update, and a Same step keeps them as they were
(`SameStep.Apply`, pkg/resource/deploy/step.go in pulumi/pulumi). So these are a change like
any other, and its Update rewrites them only: new credentials never re-run the work.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import pulumi
from pulumi.dynamic import ConfigureRequest, DiffResult, Resource, ResourceProvider, UpdateResult

# Loaded by every dynamic resource of ours (each derives from this module's base): in Pulumi's
# provider server, lift its four-call limit and send our failures as their message.
import gpu_nodes.providers.provider_server  # noqa: F401
from gpu_nodes.kube.client import ClusterAccess
from gpu_nodes.proof.inputs import DeclaredInputs
from gpu_nodes.pulumi_internals import dynamic_provider_config, unwrap_secret

# The type states may hold our resources under: each type is aliased from it (docs/upgrading.md, "Upgrading deployed stacks").
UNTYPED = "pulumi-python:dynamic:Resource"

ACCESS_KEYS = ("kubeconfig", "context")

Record = TypeVar("Record", bound=DeclaredInputs)


def read_inputs(record: type[Record], props: Mapping[str, Any]) -> Record:
    """What a resource was given, as its record, from the inputs or the state the provider server
    hands over: a value the engine keeps as a secret comes wrapped, and is read unwrapped."""
    return record.from_props({key: unwrap_secret(value) for key, value in props.items()})


class ClusterResourceProvider(ResourceProvider):
    """A provider whose `diff_own` / `update_own` judge and do the work. On top of that, any
    other difference between the state and this run's inputs (credentials, the import path, a
    hint in a message) is a change whose Update stores them and keeps the last work's results."""

    # The pickled class is an import path and holds no secret: stored in plain text, an
    # operator reads which code a destroy will run (`pulumi stack export`).
    serialize_as_secret_always = False
    # What the work computes (outputs that are no inputs; None among the inputs).
    computed: tuple[str, ...] = ()
    # The access our provider resource holds (`ClusterAccess.served`); None under the default
    # provider, whose resources keep theirs among their own inputs (a bare group's, say).
    access: dict[str, Any] | None = None

    def configure(self, req: ConfigureRequest) -> None:
        raw = dynamic_provider_config(req)
        if "kubeconfig" in raw or "context" in raw:
            self.access = {key: unwrap_secret(raw.get(key)) or "" for key in ACCESS_KEYS}

    def cluster_props(self, props: dict[str, Any]) -> dict[str, Any]:
        """`props` with the access to reach the cluster with: the configured one, if any."""
        return {**props, **self.access} if self.access is not None else props

    def diff_own(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=False)

    def update_own(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=news)

    def state_behind(self, olds: dict[str, Any], news: dict[str, Any]) -> bool:
        """Whether the state holds other inputs than this run's (`__provider` among them)."""
        keys = (set(olds) | set(news)) - set(self.computed)
        return any(unwrap_secret(olds.get(k)) != unwrap_secret(news.get(k)) for k in sorted(keys))

    def diff(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        own = self.diff_own(id_, olds, news)
        if own.changes or not self.state_behind(olds, news):
            return own
        return DiffResult(changes=True)

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        if self.diff_own(id_, olds, news).changes:
            return self.update_own(id_, olds, news)
        # This run's inputs (credentials that moved to our provider resource leave the state),
        # the last work's results; the provider server writes the new `__provider` itself.
        inputs = {key: value for key, value in news.items() if key not in self.computed}
        return UpdateResult(outs={**inputs, **{key: olds[key] for key in self.computed if key in olds}})


def untyped_aliases(opts: pulumi.ResourceOptions | None) -> list[pulumi.Alias]:
    """The resource under the untyped type: where it is now, and at each of its other aliases (at
    the stack's root, with `legacy_root_names`). The engine matches one alias at
    a time, each defaulting the rest to the resource's current name, parent and type."""
    given = [a for a in (opts.aliases if opts else None) or [] if isinstance(a, pulumi.Alias)]
    return [
        pulumi.Alias(type_=UNTYPED),
        *(pulumi.Alias(name=a.name, parent=a.parent, stack=a.stack, project=a.project, type_=UNTYPED) for a in given),
    ]


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
                additional_secret_outputs=["kubeconfig"], aliases=untyped_aliases(opts), provider=cluster.provider
            ),
        )
        super().__init__(provider, name, {**props, **cluster.props()}, opts)
