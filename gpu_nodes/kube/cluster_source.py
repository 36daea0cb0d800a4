"""The `Source` of gpu_nodes/kube/cluster_view.py that calls the API server: paged lists and watches.

The cache knows nothing of HTTP; this is all of it, per kind: list in pages, then watch from
the list's resourceVersion, with timeouts that end a connection that died silently.
"""

from __future__ import annotations

import contextlib
import json
import random
import socket
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from gpu_nodes.errors import WatchExpiredError
from gpu_nodes.kube.cluster_view import Kind, Listing, Source, describe_error
from gpu_nodes.vocabulary import OWN_SELECTOR

if TYPE_CHECKING:
    from kubernetes.client import ApiClient


# Pages of a list: at fleet scale a single response of every Node is tens of megabytes.
PAGE_SIZE = 500
CONNECT_SECONDS = 10
LIST_READ_SECONDS = 60
# The server ends each watch after this long (spread so the three do not reconnect together);
# the read timeout is longer, so it fires only on a connection that died silently.
WATCH_SECONDS = (240, 300)
WATCH_READ_SLACK_SECONDS = 60


class KubernetesSource:
    """Lists and watches one kind with the `kubernetes` client, as raw JSON (no model classes)."""

    def __init__(
        self,
        call: Callable[..., Any],
        kind: str,
        api_version: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ):
        self._call = call
        self._kind = kind
        self._api_version = api_version
        self._selector = {"label_selector": label_selector} if label_selector else {}
        if field_selector:
            self._selector["field_selector"] = field_selector
        self._response: Any = None

    def list(self) -> Listing:
        from kubernetes.client.exceptions import ApiException

        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            try:
                response = self._call(
                    **self._selector,
                    limit=PAGE_SIZE,
                    _continue=token,
                    _preload_content=False,
                    _request_timeout=(CONNECT_SECONDS, LIST_READ_SECONDS),
                )
            except ApiException as error:
                if error.status == 410 and token:
                    # The continue token expired between pages: start a consistent list over.
                    items, token = [], None
                    continue
                raise
            try:
                body = json.loads(response.data)
            finally:
                response.release_conn()
            for item in body.get("items") or []:
                # A list's items omit these; a single GET (and a watch event) has them.
                items.append({"apiVersion": self._api_version, "kind": self._kind, **item})
            token = body["metadata"].get("continue")
            if not token:
                return Listing(items, str(body["metadata"]["resourceVersion"]))

    def watch(self, resource_version: str) -> Iterator[dict[str, Any]]:
        from kubernetes.client.exceptions import ApiException
        from kubernetes.watch.watch import iter_resp_lines

        seconds = random.randint(*WATCH_SECONDS)
        try:
            response = self._call(
                **self._selector,
                watch=True,
                resource_version=resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=seconds,
                _preload_content=False,
                _request_timeout=(CONNECT_SECONDS, seconds + WATCH_READ_SLACK_SECONDS),
            )
        except ApiException as error:
            if error.status == 410:
                raise WatchExpiredError(describe_error(error)) from error
            raise
        self._response = response
        try:
            for line in iter_resp_lines(response):
                if line.strip():
                    yield json.loads(line)
        finally:
            self._response = None
            response.close()
            response.release_conn()

    def close(self) -> None:
        response = self._response
        sock = getattr(getattr(response, "connection", None), "sock", None)
        if sock is not None:
            # A read blocked on the socket returns only if the socket itself is shut down.
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def node_sources(client: ApiClient) -> dict[Kind, Source]:
    """Every Node of the cluster, one watch per process and credentials.

    Not narrower, for no selector names just a stack's nodes: a field selector takes only `=`, `==`
    and `!=` (apimachinery pkg/fields/selector.go `parseSelector`), so one watch per node; a set of
    `kubernetes.io/hostname` values misses nodes whose name is not their hostname (kubelet writes the
    label from its hostname and names the node apart, pkg/kubelet/kubelet_node_status.go
    `initialNode`), and the stack's node list in every resource's inputs would update them all
    when a node is added; our group label is what a refresh must see removed, while a watch
    selecting on it reports that node DELETED (apiserver pkg/storage/cacher/cache_watcher.go
    `convertToWatchEvent`). docs/operations.md, "Large fleets", has the figures."""
    from kubernetes.client import CoreV1Api

    return {"nodes": KubernetesSource(CoreV1Api(client).list_node, "Node", "v1")}


def own_sources(client: ApiClient, selector: str = OWN_SELECTOR) -> dict[Kind, Source]:
    """Our Pods and Jobs that `selector` selects, in every namespace (a group's plugin and
    verification namespaces differ): `vocabulary.group_selector`, one group's."""
    from kubernetes.client import BatchV1Api, CoreV1Api

    core, batch = CoreV1Api(client), BatchV1Api(client)
    return {
        "pods": KubernetesSource(core.list_pod_for_all_namespaces, "Pod", "v1", selector),
        "jobs": KubernetesSource(batch.list_job_for_all_namespaces, "Job", "batch/v1", selector),
    }


def slice_sources(client: ApiClient, driver: str) -> dict[Kind, Source]:
    """The ResourceSlices one DRA driver publishes, every node's: one per node and driver (a
    node's pool may span several), so a watch of them all is the size of the fleet's GPU list.
    The API server selects ResourceSlices by `spec.driver` ("A field selector can be used to list
    only ResourceSlice objects with a certain driver name", k8s.io/api `resource/v1/types.go`,
    `ResourceSliceSpec.Driver`)."""
    from kubernetes.client import ResourceV1Api

    resource = ResourceV1Api(client)
    return {
        "resourceslices": KubernetesSource(
            resource.list_resource_slice, "ResourceSlice", "resource.k8s.io/v1", field_selector=f"spec.driver={driver}"
        )
    }
