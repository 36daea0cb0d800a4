"""The Kubernetes API client our dynamic resources use, configured like the provider."""

from __future__ import annotations

from typing import Any


def api_client(kubeconfig: str | None, context: str | None) -> Any:
    """A `kubernetes.client.ApiClient` from kubeconfig contents or a path, else the defaults.

    `kubernetes:kubeconfig` may hold either, as for the Kubernetes provider; without it,
    `$KUBECONFIG` / `~/.kube/config`, then the in-cluster service account.
    """
    from kubernetes import client, config

    if kubeconfig and ("\n" in kubeconfig or kubeconfig.lstrip().startswith("{")):
        import yaml

        return config.new_client_from_config_dict(yaml.safe_load(kubeconfig), context=context)
    if kubeconfig:
        return config.new_client_from_config(config_file=kubeconfig, context=context)
    try:
        return config.new_client_from_config(context=context)
    except config.ConfigException:
        config.load_incluster_config()
        return client.ApiClient()
