"""What the proof reads of a pod beyond its object (gpu_nodes/proof/reader.py `PodOutputs`): a container's log
and a page its port serves, through the API server (`kubectl logs`, and `kubectl get --raw .../pods/<pod>:<port>/
proxy/<path>`), and the cache that keeps a wait from asking again on every event of the fleet.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

from gpu_nodes.kube.cluster_view import describe_error
from gpu_nodes.proof.reader import PodOutputs, Scraped

if TYPE_CHECKING:
    from kubernetes.client import ApiClient, CoreV1Api

# How long one call may take: a page or a log is small, and a wait looks again.
REQUEST_SECONDS = 15


class KubernetesPodOutputs:
    """Reads through an API client made when first needed: most looks read nothing (no Job has ended yet)."""

    def __init__(self, api: Callable[[], ApiClient]):
        self._api = api

    @cached_property
    def _core(self) -> CoreV1Api:
        from kubernetes import client

        return client.CoreV1Api(self._api())

    def log(self, namespace: str, pod: str, container: str) -> str | None:
        from kubernetes.client.exceptions import ApiException

        try:
            text: str = self._core.read_namespaced_pod_log(
                pod, namespace, container=container, _request_timeout=REQUEST_SECONDS
            )
        except ApiException:
            # Gone, or its node cannot say (a node lost with its logs): the Job's own story says more.
            return None
        return text

    def scrape(self, namespace: str, pod: str, port: int, path: str) -> Scraped:
        from kubernetes.client.exceptions import ApiException

        try:
            # The API server connects to the pod's IP (kubernetes pkg/registry/core/pod/strategy.go, ResourceLocation).
            text: str = self._core.connect_get_namespaced_pod_proxy_with_path(
                f"{pod}:{port}", namespace, path.lstrip("/"), _request_timeout=REQUEST_SECONDS
            )
        except ApiException as error:
            return Scraped(None, describe_error(error))
        except OSError as error:  # the connection itself (urllib3's errors are OSErrors)
            return Scraped(None, describe_error(error))
        return Scraped(text)


class RecentPodOutputs:
    """Keeps each container's log once read (a finished container's log does not change) and each page for
    `max_age` seconds: a wait looks at its node again on every event of the fleet."""

    def __init__(self, outputs: PodOutputs, max_age: float, clock: Callable[[], float] = time.monotonic):
        self._outputs = outputs
        self._max_age = max_age
        self._clock = clock
        self._logs: dict[tuple[str, str, str], str] = {}
        self._pages: dict[tuple[str, str, int, str], tuple[float, Scraped]] = {}

    def log(self, namespace: str, pod: str, container: str) -> str | None:
        key = (namespace, pod, container)
        if key not in self._logs:
            text = self._outputs.log(namespace, pod, container)
            if text is None:
                return None
            self._logs[key] = text
        return self._logs[key]

    def scrape(self, namespace: str, pod: str, port: int, path: str) -> Scraped:
        key, now = (namespace, pod, port, path), self._clock()
        seen = self._pages.get(key)
        if seen is None or now - seen[0] >= self._max_age:
            seen = self._pages[key] = (now, self._outputs.scrape(namespace, pod, port, path))
        return seen[1]
