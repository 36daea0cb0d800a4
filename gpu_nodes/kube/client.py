"""How our own resources reach the cluster: the Kubernetes provider's kubeconfig and context."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pulumi

from gpu_nodes.pulumi_internals import provider_input

if TYPE_CHECKING:
    from kubernetes.client import ApiClient


# The package of Pulumi's Python dynamic resources (`pulumi-python:dynamic...` types).
DYNAMIC_PACKAGE = "pulumi-python"


@dataclass(frozen=True)
class ClusterAccess:
    """The kubeconfig (path or contents; a secret) and context our dynamic resources (taints, GPU
    capacity, verification results) call the API server with: the Kubernetes provider's own."""

    kubeconfig: pulumi.Input[str] | None = None
    context: pulumi.Input[str] | None = None
    # The provider of Pulumi's Python dynamic resources that holds them (`served`), if any.
    provider: pulumi.ProviderResource | None = None

    @classmethod
    def from_stack_config(cls) -> ClusterAccess:
        """What the default Kubernetes provider reads: `kubernetes:kubeconfig` and `kubernetes:context`."""
        config = pulumi.Config("kubernetes")
        return cls(kubeconfig=config.get_secret("kubeconfig"), context=config.get("context"))

    @classmethod
    def of_provider(cls, provider: pulumi.ProviderResource) -> ClusterAccess:
        """The kubeconfig and context a Kubernetes provider was given.

        A provider's outputs are its inputs, so the dynamic resources reach the cluster the
        provider reaches, with no second description of it. The kubeconfig stays a secret
        whatever the consumer passed (it may hold credentials)."""
        kubeconfig = provider_input(provider, "kubeconfig")
        return cls(
            kubeconfig=pulumi.Output.secret(kubeconfig) if kubeconfig is not None else None,
            context=provider_input(provider, "context"),
        )

    def served(self, name: str, opts: pulumi.ResourceOptions | None = None) -> ClusterAccess:
        """This access, held by a provider of Pulumi's Python dynamic resources made for it.

        `pulumi refresh` and `pulumi destroy` do not run the program: each resource's provider
        runs with what the state says. A provider resource's inputs are updated by every
        `pulumi up` that changes them (Pulumi's Python provider server has no DiffConfig, so the
        engine updates it in place and replaces nothing: `DiffConfig` in
        sdk/go/common/resource/plugin/provider_plugin.go), and refresh and destroy configure the
        provider with them; the server hands them to each of our providers' `configure`. So the
        credentials of the last run are what refresh and destroy use, kept once per fleet rather
        than in every resource. Empty strings stand for "not set", so that the keys are there."""
        access = {"kubeconfig": given_or_empty(self.kubeconfig), "context": given_or_empty(self.context)}
        return dataclasses.replace(self, provider=pulumi.ProviderResource(DYNAMIC_PACKAGE, name, access, opts))

    def props(self) -> dict[str, Any]:
        """As inputs of a dynamic resource, when no provider holds them (`served`); its provider
        gets them back in `props`."""
        return {} if self.provider is not None else {"kubeconfig": self.kubeconfig, "context": self.context}


async def _known() -> bool:
    return True


def given_or_empty(value: pulumi.Input[str] | None) -> pulumi.Input[str]:
    """`value`, or "" where it is not set, known in a preview too.

    A Kubernetes provider not given a context (the stack sets no `kubernetes:context`) has
    none among its outputs, and in a preview the SDK makes an output the engine's answer
    lacks unknown. Our provider resource would then be unconfigured in every preview, and
    the engine would diff none of our resources (`Diff` in sdk/go/common/resource/plugin/
    provider_plugin.go: "has inputs that are not known during preview"). A value the engine
    does not know yet in a preview (a cluster created in the same run) is taken as not set,
    there only: the run itself has it."""
    if not isinstance(value, pulumi.Output):
        return value or ""
    known: pulumi.Output[str | None] = pulumi.Output(value.resources(), value.future(), _known(), value.is_secret())
    return known.apply(lambda given: given or "")


def api_client_from_props(props: Mapping[str, Any]) -> ApiClient:
    """The API client for a dynamic resource whose inputs hold `ClusterAccess.props()`."""
    return api_client(props.get("kubeconfig") or None, props.get("context") or None)


# Credentials a dynamic provider process calls with at once: one set per stack, more only while one rotates.
CLIENTS_KEPT = 4


@functools.lru_cache(maxsize=CLIENTS_KEPT)
def api_client(kubeconfig: str | None, context: str | None) -> ApiClient:
    """A `kubernetes.client.ApiClient` from kubeconfig contents or a path, else the defaults.

    `kubernetes:kubeconfig` may hold either, as for the Kubernetes provider; without it,
    `$KUBECONFIG` / `~/.kube/config`, then the in-cluster service account.

    One client per credentials and process: every call of our providers in a run (one per node and
    resource) would otherwise parse the kubeconfig again and open its own connections, which
    bench/profile.py found to be a fifth of a refresh's work in the dynamic providers. The client's
    connection pool (urllib3's PoolManager) is safe to share between the provider server's threads.
    """
    from kubernetes import client, config

    made: ApiClient
    if kubeconfig and ("\n" in kubeconfig or kubeconfig.lstrip().startswith("{")):
        import yaml

        made = config.new_client_from_config_dict(yaml.safe_load(kubeconfig), context=context)
    elif kubeconfig:
        made = config.new_client_from_config(config_file=kubeconfig, context=context)
    else:
        try:
            made = config.new_client_from_config(context=context)
        except config.ConfigException:
            config.load_incluster_config()
            made = client.ApiClient()
    return made
