"""The process's shared `ClusterView`s, shared by every waiter of the provider process: per set of
credentials one of the cluster's Nodes, and per node group one of its own Pods and Jobs, which
reads its Nodes from the first.

One provider process serves one stack (its fleet's provider resource), and a fleet's stacks run
side by side on one cluster: each process watches its own groups' pods and Jobs only, not every
stack's (docs/operations.md, "Large fleets").

Above the three it joins, which know nothing of each other: the cache (cluster_view.py), the
API client (client.py) and the calls that list and watch (cluster_source.py).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from gpu_nodes.kube.client import api_client
from gpu_nodes.kube.cluster_source import node_sources, own_sources, slice_sources
from gpu_nodes.kube.cluster_view import ClusterView
from gpu_nodes.vocabulary import DRA_GPU_DRIVER, INSTANCE_LABEL, OWN_SELECTOR, group_selector

# How long `shared_view` waits for the initial lists; a module attribute so tests can shorten it.
sync_timeout_seconds = 60.0

# (kubeconfig, context, label selector of the pods and Jobs; None for the view of the Nodes, `SLICES`
# for that of the DRA driver's ResourceSlices)
ViewKey = tuple[str | None, str | None, str | None]
SLICES = "resourceslices"

_views: dict[ViewKey, ClusterView] = {}
_lock = threading.Lock()


def connect(
    kubeconfig: str | None,
    context: str | None,
    selector: str | None,
    nodes: ClusterView | None,
    slices: ClusterView | None = None,
) -> ClusterView:
    """A view of the cluster these credentials reach, not yet started (tests replace this): of
    its Nodes when `selector` is None, of the DRA driver's ResourceSlices when it is `SLICES`, else
    of the Pods and Jobs `selector` selects, reading its Nodes from `nodes` (and its slices from `slices`)."""
    client = api_client(kubeconfig, context)
    server = str(client.configuration.host)
    if selector is None:
        return ClusterView(node_sources(client), server=server)
    if selector == SLICES:
        return ClusterView(slice_sources(client, DRA_GPU_DRIVER), server=server)
    return ClusterView(own_sources(client, selector), server=server, nodes=nodes, slices=slices)


def _started(key: ViewKey, nodes: ClusterView | None, slices: ClusterView | None = None) -> ClusterView:
    """The view under `key`, created and started if there is none yet. Under the lock."""
    view = _views.get(key)
    if view is None:
        view = connect(*key, nodes, slices)
        view.start()
        _views[key] = view
    return view


def shared_view(kubeconfig: str | None, context: str | None, selector: str = OWN_SELECTOR, dra: bool = False) -> ClusterView:
    """The one view of this process for these credentials and the pods and Jobs `selector`
    selects (created and started on first use), with the one view of the cluster's Nodes and,
    for a DRA group (`dra`), the one of the DRA driver's ResourceSlices. A cluster without DRA is
    never asked for ResourceSlices."""
    credentials = (kubeconfig or None, context or None)
    with _lock:
        nodes = _started((*credentials, None), None)
        slices = _started((*credentials, SLICES), None) if dra else None
        # A group's selector is its own, and a group has one allocator: its view reads slices or never does.
        view = _started((*credentials, selector), nodes, slices)
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


def watched_selector(props: Mapping[str, Any]) -> str:
    """The pods and Jobs a resource of a group reads: its group's, named by the plugin selector's
    instance label (`selector_labels(..., group.name)`, gpu_nodes/resources/node_builders.py
    `node_target`), an input it has already: no input changes for it. Without one, all of ours."""
    group = (props.get("pluginSelector") or {}).get(INSTANCE_LABEL)
    return group_selector(group) if group else OWN_SELECTOR


def cluster_view_from_props(props: Mapping[str, Any]) -> ClusterView:
    """The process's shared watches for a dynamic resource whose inputs hold `ClusterAccess.props()`
    and its node's target (`NodeTarget.to_props`, gpu_nodes/proof/target.py)."""
    dra = bool(props.get("draGpus"))
    return shared_view(props.get("kubeconfig") or None, props.get("context") or None, watched_selector(props), dra)
