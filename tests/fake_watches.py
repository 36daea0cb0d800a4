"""A fake API server's lists and watches, each narrowed by a label selector as the API server narrows it.

`FakeKind` holds one kind's objects in the cluster; `FakeKind.source(selector)` is one `Source`
(gpu_nodes/kube/cluster_view.py) over them. A selector is read with the grammar of apimachinery's
`labels.Parse` (kubernetes staging/src/k8s.io/apimachinery/pkg/labels/selector.go): requirements
joined by commas, `key=value`, `key==value` and `key in (v1,v2)`; the fake refuses the rest of the
grammar rather than guess. A watch sends what the API server's watch cache sends a selecting
watcher (staging/src/k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go `convertToWatchEvent`):
an object that comes to match is ADDED, one that still matches MODIFIED, one that stops matching
DELETED, one that never matches nothing.
"""

from __future__ import annotations

import copy
import queue
import re
from collections.abc import Iterator, Mapping
from typing import Any

from gpu_nodes.kube.cluster_view import ClusterView, Kind, Listing
from gpu_nodes.kube.shared_views import SLICES

_END = object()
_IN = re.compile(r"^\s*(?P<key>[^\s=!(),]+)\s+in\s+\((?P<values>[^()]*)\)\s*$")
_EQUALS = re.compile(r"^\s*(?P<key>[^\s=!(),]+)\s*==?\s*(?P<value>[^\s=!(),]*)\s*$")


def requirements(selector: str) -> list[tuple[str, set[str]]]:
    """Each requirement of `selector` as (key, the values it accepts); the commas inside `( )` belong to a set."""
    parts, depth, current = [], 0, ""
    for char in selector:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    found = []
    for part in parts:
        if not part.strip():
            continue
        if match := _IN.match(part):
            found.append((match["key"], {v.strip() for v in match["values"].split(",")}))
        elif match := _EQUALS.match(part):
            found.append((match["key"], {match["value"]}))
        else:
            raise ValueError(f"the fake API server reads only =, == and in: {part!r} of {selector!r}")
    return found


def selects(selector: str | None, obj: Mapping[str, Any]) -> bool:
    """Whether a list or watch with `selector` returns `obj`: every requirement holds (no selector: all do)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(key in labels and labels[key] in values for key, values in requirements(selector or ""))


class SelectedSource:
    """One kind's list and watch with a label selector, over the objects of its `FakeKind`."""

    def __init__(self, kind: FakeKind, selector: str | None):
        self.kind = kind
        self.selector = selector
        self.lists = 0
        self._events: queue.Queue[Any] = queue.Queue()

    def list(self) -> Listing:
        self.lists += 1
        if self.kind.list_error is not None:
            raise self.kind.list_error
        items = [copy.deepcopy(obj) for obj in self.kind.objects.values() if selects(self.selector, obj)]
        return Listing(items, str(self.kind.resource_version))

    def watch(self, resource_version: str) -> Iterator[dict[str, Any]]:
        while True:
            event = self._events.get()
            if event is _END:
                return
            yield event

    def close(self) -> None:
        self._events.put(_END)

    def changed(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        """An object of the kind went from `old` to `new` (None: absent): what this watch sees of it."""
        was, now = old is not None and selects(self.selector, old), new is not None and selects(self.selector, new)
        if now:
            self._events.put({"type": "MODIFIED" if was else "ADDED", "object": copy.deepcopy(new)})
        elif was:
            self._events.put({"type": "DELETED", "object": copy.deepcopy(old)})


class FakeKind:
    """One kind's objects in the fake cluster, and the watches on them."""

    def __init__(self, *objects: dict[str, Any]):
        self.objects = {_key(obj): obj for obj in objects}
        self.resource_version = 10
        self.sources: list[SelectedSource] = []
        # What every list of the kind raises (an API server that does not answer), if set.
        self.list_error: Exception | None = None

    def source(self, selector: str | None = None) -> SelectedSource:
        made = SelectedSource(self, selector)
        self.sources.append(made)
        return made

    def put(self, obj: dict[str, Any]) -> None:
        """Create or replace an object, as a write to the API server does."""
        self.resource_version += 1
        obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self.resource_version)}}
        old = self.objects.get(_key(obj))
        self.objects[_key(obj)] = obj
        for source in self.sources:
            source.changed(old, obj)


class FakeApi:
    """The fake cluster's Nodes, Pods and Jobs; `view` is what `shared_views.connect` makes of it."""

    def __init__(self) -> None:
        self.kinds: dict[Kind, FakeKind] = {
            "nodes": FakeKind(),
            "pods": FakeKind(),
            "jobs": FakeKind(),
            "resourceslices": FakeKind(),
        }
        # The selector of each view made, in order: None for the view of the Nodes.
        self.connected: list[str | None] = []
        # What each call of `connect` was given: kubeconfig, context and selector.
        self.connections: list[tuple[str | None, str | None, str | None]] = []

    def connect(
        self,
        kubeconfig: str | None,
        context: str | None,
        selector: str | None,
        nodes: ClusterView | None,
        slices: ClusterView | None = None,
    ) -> ClusterView:
        """The stand-in for `shared_views.connect`, taking what it takes."""
        self.connections.append((kubeconfig, context, selector))
        return self.view(selector, nodes, slices)

    def view(
        self, selector: str | None, nodes: ClusterView | None = None, slices: ClusterView | None = None, **options: Any
    ) -> ClusterView:
        """The Nodes' view when `selector` is None, the ResourceSlices' when it is `shared_views.SLICES`, else
        the view of the pods and Jobs it selects."""
        self.connected.append(selector)
        options.setdefault("backoff", (0.01, 0.05))
        if selector is None:
            return ClusterView({"nodes": self.kinds["nodes"].source()}, server="https://fake:6443", **options)
        if selector == SLICES:
            return ClusterView({"resourceslices": self.kinds["resourceslices"].source()}, server="https://fake:6443", **options)
        sources = {kind: self.kinds[kind].source(selector) for kind in ("pods", "jobs")}
        return ClusterView(sources, server="https://fake:6443", nodes=nodes, slices=slices, **options)


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    metadata = obj.get("metadata") or {}
    return metadata.get("namespace") or "", metadata["name"]
