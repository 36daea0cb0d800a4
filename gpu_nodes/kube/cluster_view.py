"""One list+watch per kind, shared by every waiter of the provider process.

The dynamic resources wait for things in the cluster: a node's allocatable `nvidia.com/gpu`,
the device-plugin pod Running on a node, a verification Job succeeding. Polling the API server
per waiter is O(nodes) requests every few seconds at fleet scale; instead the provider process
keeps (gpu_nodes/kube/shared_views.py) one view of the Nodes per set of credentials, and one of
each node group's own Pods and Jobs (`vocabulary.group_selector`) that reads its Nodes from the
first: as the API server last reported them, waking the waiters whenever a watch delivers a change.

The cache logic (`ClusterView`) knows nothing of HTTP: it reads a `Source` per kind, which
lists and watches. `KubernetesSource` (gpu_nodes/kube/cluster_source.py) is the thin part that
calls the API server; tests give the view fakes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from gpu_nodes.errors import ClusterViewUnavailableError, WatchExpiredError
from gpu_nodes.vocabulary import JOB_NAME_LABEL

Kind = Literal["nodes", "pods", "jobs", "resourceslices"]
KINDS: tuple[Kind, ...] = ("nodes", "pods", "jobs", "resourceslices")

# Waiters re-check at least this often even without events: a safety net, not the mechanism.
RECHECK_SECONDS = 5.0
# After a failed list or watch: first wait, and the cap of its doubling.
BACKOFF_SECONDS = (0.5, 10.0)

T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Listing:
    items: list[dict[str, Any]]
    resource_version: str


class Source(Protocol):
    """One kind's list and watch: the Kubernetes API in production, a fake in tests."""

    def list(self) -> Listing:
        """All objects, as JSON dicts, and the resourceVersion to watch from."""
        ...

    def watch(self, resource_version: str) -> Iterator[dict[str, Any]]:
        """Watch events (`{"type", "object"}`) after `resource_version`, until the server ends the watch.

        Raises WatchExpiredError if the server refuses that resourceVersion outright.
        """
        ...

    def close(self) -> None:
        """Unblock a watch in progress (the view is stopping)."""
        ...


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    metadata = obj.get("metadata") or {}
    return metadata.get("namespace") or "", metadata.get("name") or ""


def _pod_index_keys(pod: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """Where a pod is filed besides its key: under its node, and under its Job."""
    metadata = pod.get("metadata") or {}
    namespace = metadata.get("namespace") or ""
    keys = []
    if node := (pod.get("spec") or {}).get("nodeName"):
        keys.append(("node", namespace, node))
    if job := (metadata.get("labels") or {}).get(JOB_NAME_LABEL):
        keys.append(("job", namespace, job))
    return keys


def _slim(obj: dict[str, Any]) -> dict[str, Any]:
    # managedFields is often the bulk of an object and nobody here reads it (kubectl hides it too).
    metadata = obj.get("metadata")
    if isinstance(metadata, dict) and "managedFields" in metadata:
        obj = {**obj, "metadata": {k: v for k, v in metadata.items() if k != "managedFields"}}
    return obj


def describe_error(error: BaseException) -> str:
    status = getattr(error, "status", None)
    if status:
        # ApiException's str() carries headers and the whole body; the status and reason say enough.
        return f"HTTP {status} {getattr(error, 'reason', '')}".rstrip()
    text = str(error) or type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."


class ClusterView:
    """Nodes, and our pods and Jobs, as the API server last reported them; one watch per kind it
    has a source for. The providers read it as a `ClusterReader` (gpu_nodes/proof/reader.py).

    Returned objects are the cache's own dicts (replaced on each event, never changed in
    place): read them, do not modify them.
    """

    def __init__(
        self,
        sources: Mapping[Kind, Source],
        server: str = "the Kubernetes API server",
        backoff: tuple[float, float] = BACKOFF_SECONDS,
        recheck_seconds: float = RECHECK_SECONDS,
        nodes: ClusterView | None = None,
        slices: ClusterView | None = None,
    ):
        """nodes: the view whose Nodes this one reads, and whose changes wake its waiters too (the
        views of several groups' pods and Jobs share one node watch); None: its own "nodes" source's.
        slices: likewise, the view whose ResourceSlices this one reads (DRA groups only)."""
        self._sources = dict(sources)
        self._nodes = nodes
        self._slices = slices
        # Called, outside the lock, after each change: the views that read their Nodes from this one.
        self._listeners: list[Callable[[], None]] = []
        self._server = server
        self._backoff = backoff
        self._recheck_seconds = recheck_seconds
        # One lock for everything: readers, waiters and the three watch threads.
        self._changed = threading.Condition(threading.Lock())
        self._objects: dict[Kind, dict[tuple[str, str], dict[str, Any]]] = {kind: {} for kind in KINDS}
        # Every waiter looks its pods up again after each event, of any node: filed by node and
        # by Job, a lookup costs what it finds, not a walk over the fleet's pods.
        self._pod_index: dict[tuple[str, str, str], dict[tuple[str, str], dict[str, Any]]] = {}
        self._generation = 0
        self._listed: set[Kind] = set()
        self._errors: dict[Kind, str] = {}
        self._synced = threading.Event()
        self._stopped = threading.Event()
        self._threads: list[threading.Thread] = []

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start one daemon thread per kind: list, then watch from the list's resourceVersion."""
        if self._threads:
            return
        for other in self._others():
            other._listen(self._woken)
        for kind, source in self._sources.items():
            thread = threading.Thread(target=self._run, args=(kind, source), name=f"cluster-view-{kind}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def stop(self) -> None:
        self._stopped.set()
        for other in self._others():
            other._unlisten(self._woken)
        for source in self._sources.values():
            source.close()
        with self._changed:
            self._changed.notify_all()

    def wait_synced(self, timeout: float) -> None:
        """Return once every kind has been listed (the Nodes it reads too); raise
        ClusterViewUnavailableError naming the cause."""
        deadline = time.monotonic() + timeout
        for other in self._others():
            other.wait_synced(timeout)
        if self._synced.wait(max(deadline - time.monotonic(), 0.0)):
            return
        with self._changed:
            missing = [kind for kind in self._sources if kind not in self._listed]
            causes = "; ".join(f"{kind}: {self._errors.get(kind, 'no answer yet')}" for kind in missing)
        raise ClusterViewUnavailableError(
            f"cannot read the cluster: {self._server} did not answer the list of {', '.join(missing)} "
            f"within {timeout:g}s ({causes}). Check kubernetes:kubeconfig and kubernetes:context, "
            "and that the API server is reachable from here"
        )

    def _others(self) -> list[ClusterView]:
        """The views this one reads Nodes or ResourceSlices from."""
        return [view for view in (self._nodes, self._slices) if view is not None]

    # ------------------------------------------------------------------ reads

    def node(self, name: str) -> dict[str, Any] | None:
        """The Node as a JSON dict (camelCase keys, as `kubectl get -o json`), None if absent."""
        if self._nodes is not None:
            return self._nodes.node(name)
        with self._changed:
            return self._objects["nodes"].get(("", name))

    def nodes_labelled(self, labels: Mapping[str, str]) -> list[dict[str, Any]]:
        """The Nodes whose labels include all of `labels`, sorted by name."""
        if self._nodes is not None:
            return self._nodes.nodes_labelled(labels)
        wanted = labels.items()
        with self._changed:
            found = [n for n in self._objects["nodes"].values() if wanted <= ((n["metadata"].get("labels") or {}).items())]
        return sorted(found, key=lambda node: str(node["metadata"].get("name")))

    def pods(self, namespace: str, labels: Mapping[str, str], node: str | None = None) -> list[dict[str, Any]]:
        """Pods in `namespace` whose labels include all of `labels`, and that run on `node`
        when it is given, sorted by name."""
        wanted = labels.items()
        with self._changed:
            if node is not None:
                candidates = list(self._pod_index.get(("node", namespace, node), {}).values())
            elif JOB_NAME_LABEL in labels:
                candidates = list(self._pod_index.get(("job", namespace, labels[JOB_NAME_LABEL]), {}).values())
            else:
                candidates = [pod for (pod_namespace, _), pod in self._objects["pods"].items() if pod_namespace == namespace]
        found = [pod for pod in candidates if wanted <= ((pod["metadata"].get("labels") or {}).items())]
        return sorted(found, key=lambda pod: str(pod["metadata"].get("name")))

    def job(self, namespace: str, name: str) -> dict[str, Any] | None:
        with self._changed:
            return self._objects["jobs"].get((namespace, name))

    def resource_slices(self, node: str) -> list[dict[str, Any]]:
        """The ResourceSlices that name `node` (`spec.nodeName`), sorted by name."""
        if self._slices is not None:
            return self._slices.resource_slices(node)
        with self._changed:
            found = [s for s in self._objects["resourceslices"].values() if (s.get("spec") or {}).get("nodeName") == node]
        return sorted(found, key=lambda item: str(item["metadata"].get("name")))

    def wait_for(self, check: Callable[[], T], done: Callable[[T], bool], timeout: float) -> T:
        """Evaluate `check()` now and again after each change the watches deliver (and at least
        every few seconds as a safety net), until `done(result)` or `timeout` seconds passed;
        return the last result either way (the caller decides what a timeout means)."""
        deadline = time.monotonic() + timeout
        while True:
            with self._changed:
                seen = self._generation
            # Outside the lock: check() takes it itself, and may take its time.
            result = check()
            remaining = deadline - time.monotonic()
            # A stopped view will not change again: waiting on would only burn the timeout.
            if done(result) or remaining <= 0 or self._stopped.is_set():
                return result
            with self._changed:
                # A change applied while check() ran moved the generation: look again at once.
                if self._generation == seen:
                    self._changed.wait(min(remaining, self._recheck_seconds))

    # ------------------------------------------------------------------ the watch threads

    def _run(self, kind: Kind, source: Source) -> None:
        resource_version: str | None = None
        backoff = self._backoff[0]
        while not self._stopped.is_set():
            try:
                if resource_version is None:
                    listing = source.list()
                    self._replace(kind, listing.items)
                    resource_version = listing.resource_version
                started, events = time.monotonic(), 0
                for event in source.watch(resource_version):
                    if self._stopped.is_set():
                        return
                    resource_version = self._apply(kind, event) or resource_version
                    events += 1
                with self._changed:
                    self._errors.pop(kind, None)
                # The server ends every watch after its timeout: resume at once, unless it ended
                # an empty watch straight away, which would make this loop spin.
                if events or time.monotonic() - started >= 1.0:
                    backoff = self._backoff[0]
                    continue
                self._stopped.wait(backoff)
                backoff = min(backoff * 2, self._backoff[1])
            except WatchExpiredError as expired:
                log.info("cluster view: %s watch expired (%s); listing again", kind, expired)
                resource_version = None
            except Exception as error:
                if self._stopped.is_set():
                    return
                cause = describe_error(error)
                with self._changed:
                    self._errors[kind] = cause
                log.warning("cluster view: %s list/watch failed (%s); retrying in %.1fs", kind, cause, backoff)
                # Resume the watch from where it was; a resourceVersion too old by then gets a 410
                # and a new list.
                self._stopped.wait(backoff)
                backoff = min(backoff * 2, self._backoff[1])

    def _replace(self, kind: Kind, items: list[dict[str, Any]]) -> None:
        # A list is the whole truth: objects deleted while we were not watching disappear.
        objects = {_key(item): _slim(item) for item in items}
        with self._changed:
            self._objects[kind] = objects
            if kind == "pods":
                self._pod_index = {}
                for key, pod in objects.items():
                    self._file_pod(key, None, pod)
            self._errors.pop(kind, None)
            self._listed.add(kind)
            if self._listed >= set(self._sources):
                self._synced.set()
            self._generation += 1
            self._changed.notify_all()
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    def _apply(self, kind: Kind, event: Mapping[str, Any]) -> str | None:
        """Apply one watch event; return the resourceVersion to resume from (None: unchanged)."""
        kind_of_event = event.get("type")
        obj = event.get("object") or {}
        if kind_of_event == "ERROR":
            # A Status object; 410 means our resourceVersion fell out of the server's history.
            if obj.get("code") == 410:
                raise WatchExpiredError(obj.get("message") or "410 Gone")
            raise RuntimeError(f"watch error {obj.get('code')} {obj.get('reason')}: {obj.get('message')}")
        resource_version: str | None = (obj.get("metadata") or {}).get("resourceVersion")
        if kind_of_event == "BOOKMARK":
            # Only a newer resourceVersion to resume from; nothing changed for the waiters.
            return resource_version
        if kind_of_event not in ("ADDED", "MODIFIED", "DELETED"):
            log.warning("cluster view: %s watch sent an unknown event type %r; ignored", kind, kind_of_event)
            return resource_version
        key = _key(obj)
        with self._changed:
            if kind_of_event == "DELETED":
                old, new = self._objects[kind].pop(key, None), None
            else:
                old, new = self._objects[kind].get(key), _slim(dict(obj))
                self._objects[kind][key] = new
            if kind == "pods":
                self._file_pod(key, old, new)
            self._generation += 1
            self._changed.notify_all()
            listeners = list(self._listeners)
        for listener in listeners:
            listener()
        return resource_version

    # ------------------------------------------------------------------ the views that read our Nodes

    def _listen(self, listener: Callable[[], None]) -> None:
        with self._changed:
            self._listeners.append(listener)

    def _unlisten(self, listener: Callable[[], None]) -> None:
        with self._changed:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def _woken(self) -> None:
        """The view whose Nodes this one reads changed: this one's waiters look again."""
        with self._changed:
            self._generation += 1
            self._changed.notify_all()

    def _file_pod(self, key: tuple[str, str], old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        """Move a pod's index entries from its old version to its new one (None: absent). Under the lock."""
        for index_key in _pod_index_keys(old) if old is not None else ():
            filed = self._pod_index.get(index_key, {})
            filed.pop(key, None)
            if not filed:
                self._pod_index.pop(index_key, None)
        if new is not None:
            for index_key in _pod_index_keys(new):
                self._pod_index.setdefault(index_key, {})[key] = new
