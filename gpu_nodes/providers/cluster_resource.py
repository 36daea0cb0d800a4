"""The base of our dynamic resources: each calls the API server itself, as the provider would."""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.dynamic import Resource, ResourceProvider

from gpu_nodes.kube.client import ClusterAccess


class ClusterResource(Resource):
    """A dynamic resource with the cluster's access among its inputs (`ClusterAccess.props()`),
    which its provider reads back (`api_client_from_props`); the kubeconfig stays a secret in
    its outputs too."""

    def __init__(
        self,
        provider: ResourceProvider,
        name: str,
        props: dict[str, Any],
        cluster: ClusterAccess,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"]))
        super().__init__(provider, name, {**props, **cluster.props()}, opts)
