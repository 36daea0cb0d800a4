"""The process's one `ClusterView` per set of credentials, shared by every waiter of the provider process.

Above the three it joins, which know nothing of each other: the cache (cluster_view.py), the
API client (client.py) and the calls that list and watch (cluster_source.py).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from gpu_nodes.kube.client import api_client
from gpu_nodes.kube.cluster_source import kubernetes_sources
from gpu_nodes.kube.cluster_view import ClusterView

# How long `shared_view` waits for the initial lists; a module attribute so tests can shorten it.
sync_timeout_seconds = 60.0

_views: dict[tuple[str | None, str | None], ClusterView] = {}
_lock = threading.Lock()


def connect(kubeconfig: str | None, context: str | None) -> ClusterView:
    """A view of the cluster these credentials reach, not yet started (tests replace this)."""
    client = api_client(kubeconfig, context)
    return ClusterView(kubernetes_sources(client), server=str(client.configuration.host))


def shared_view(kubeconfig: str | None, context: str | None) -> ClusterView:
    """The one view of this process for these credentials (created and started on first use)."""
    key = (kubeconfig or None, context or None)
    with _lock:
        view = _views.get(key)
        if view is None:
            view = connect(*key)
            view.start()
            _views[key] = view
    # Outside the lock: concurrent first callers wait for the same sync in parallel. A view
    # that failed to sync stays registered and keeps retrying, so a later call may succeed.
    view.wait_synced(sync_timeout_seconds)
    return view


def forget_shared_views() -> None:
    """Stop and drop every shared view (tests, and the end of a process that wants it tidy)."""
    with _lock:
        views = list(_views.values())
        _views.clear()
    for view in views:
        view.stop()


def cluster_view_from_props(props: Mapping[str, Any]) -> ClusterView:
    """The process's shared watches for a dynamic resource whose inputs hold `ClusterAccess.props()`."""
    return shared_view(props.get("kubeconfig") or None, props.get("context") or None)
