"""What the benchmark writes (a Divided PropagationPolicy per namespace, Deployments) and the client
threads that PUT it through the API, with each write's latency."""

from __future__ import annotations

import math
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

PLURALS = {"Deployment": "deployments", "PropagationPolicy": "propagationpolicies"}
CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"


def namespaces(count: int) -> list[str]:
    return ["default"] if count <= 1 else [f"bench{i:03d}" for i in range(count)]


def object_path(body: dict[str, Any]) -> str:
    meta = body["metadata"]
    prefix = "/apis/" + body["apiVersion"]
    return f"{prefix}/namespaces/{meta['namespace']}/{PLURALS[body['kind']]}/{meta['name']}"


def deployment(name: str, namespace: str, replicas: int) -> dict[str, Any]:
    requests = {"cpu": "10m", "memory": "16Mi"}
    container = {"name": "app", "image": "nginx", "resources": {"requests": requests}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}},
        },
    }


def divided_policy(namespace: str, clusters: list[str]) -> dict[str, Any]:
    weights = [{"targetCluster": {"clusterNames": [name]}, "weight": 1} for name in clusters]
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "bench-pipeline", "namespace": namespace},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
            "placement": {
                "clusterAffinity": {"clusterNames": clusters},
                "replicaScheduling": {
                    "replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"staticWeightList": weights},
                },
            },
        },
    }


def cluster_ready(http: httpx.Client, name: str) -> bool:
    answer = http.get(f"{CLUSTERS}/{name}")
    if answer.status_code != 200:
        return False
    status = answer.json().get("status") or {}
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or [])
    return ready and bool(status.get("resourceSummary"))


@dataclass
class Writes:
    latencies_ms: list[float] = field(default_factory=list)
    retried: int = 0
    started: float = 0.0
    finished: float = 0.0


def put(http: httpx.Client, body: dict[str, Any]) -> int:
    """PUT, retried on transport errors and 5xx (counted); the number of retries."""
    for attempt in range(5):
        try:
            answer = http.put(object_path(body), json=body)
        except httpx.TransportError:
            if attempt == 4:
                raise
            continue
        if answer.status_code in (200, 201):
            return attempt
        if answer.status_code < 500 or attempt == 4:
            raise RuntimeError(f"PUT {body['metadata']['name']}: {answer.status_code} {answer.text[:300]}")
    raise AssertionError("unreachable")


def write_all(urls: list[str], token: str, bodies: list[dict[str, Any]], writers: int) -> Writes:
    """PUT every Deployment from ``writers`` threads, thread i talking to replica i mod R (keep-alive)."""
    work: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
    for body in bodies:
        work.put(body)
    result = Writes()
    lock = threading.Lock()
    errors: list[BaseException] = []

    def writer(index: int) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=urls[index % len(urls)], headers=headers, timeout=120) as http:
            while not errors:
                try:
                    body = work.get_nowait()
                except queue.Empty:
                    return
                start = time.perf_counter()
                try:
                    retried = put(http, body)
                except BaseException as exc:
                    errors.append(exc)
                    return
                elapsed = (time.perf_counter() - start) * 1000
                with lock:
                    result.latencies_ms.append(elapsed)
                    result.retried += retried

    threads = [threading.Thread(target=writer, args=(i,), name=f"writer{i}") for i in range(writers)]
    result.started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result.finished = time.perf_counter()
    if errors:
        raise errors[0]
    return result


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]
