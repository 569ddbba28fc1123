"""Scheduler extenders: the protocol the engine calls and the wire format an HTTP adapter speaks.

kube-scheduler's extender contract (``k8s.io/kube-scheduler/extender/v1``) lifted from nodes to clusters.
The engine only sees ``Extender``; ``federation.controllers.extender_http`` implements it over httpx.

Invariants:
- ``filter`` returns the clusters that stay (``cluster_names``); ``failed`` and ``failed_unresolvable`` map
  a cluster to its reason; ``error`` non-empty means the call failed as a whole.
- ``prioritize`` returns scores 0..10 (``MAX_EXTENDER_PRIORITY``); the engine scales them to 0..100 and
  multiplies by the extender's weight.
- ``max_replicas`` returns an upper bound of additional replicas per cluster, or None when the extender has
  no replicas verb; the engine takes the minimum with its own estimate.
- Any failure raises ``ExtenderError``; the engine fails the attempt (SchedulerError) unless ``ignorable``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from federation.scheduling.types import BindingInput, ClusterSnapshot

MAX_EXTENDER_PRIORITY = 10


class ExtenderError(Exception):
    """An extender could not answer (unreachable, timeout, bad reply, or its own ``error`` field)."""


@dataclass(frozen=True, slots=True)
class ExtenderFilterResult:
    cluster_names: tuple[str, ...]
    failed: Mapping[str, str] = field(default_factory=dict)
    failed_unresolvable: Mapping[str, str] = field(default_factory=dict)
    error: str = ""


@dataclass(frozen=True, slots=True)
class HostPriority:
    host: str
    score: int


class Extender(Protocol):
    """One configured extender (``name`` is its urlPrefix, used in explanations and errors)."""

    @property
    def name(self) -> str: ...

    @property
    def weight(self) -> int: ...

    @property
    def ignorable(self) -> bool: ...

    def is_interested(self, binding: BindingInput) -> bool: ...

    def filter(self, binding: BindingInput, clusters: Sequence[ClusterSnapshot]) -> ExtenderFilterResult: ...

    def prioritize(
        self, binding: BindingInput, clusters: Sequence[ClusterSnapshot]
    ) -> list[HostPriority]: ...

    def max_replicas(
        self, binding: BindingInput, clusters: Sequence[ClusterSnapshot]
    ) -> Mapping[str, int] | None: ...


def binding_payload(binding: BindingInput) -> dict[str, Any]:
    """The ``binding`` object of every request: what the workload is and what it asks for."""
    return {
        "apiVersion": binding.api_version,
        "kind": binding.kind,
        "namespace": binding.namespace,
        "name": binding.name,
        "uid": binding.uid,
        "replicas": binding.replicas,
        "resourceRequest": dict(binding.resource_request),
        "placement": binding.placement.dump(),
        "clusters": [{"name": n, "replicas": r} for n, r in binding.previous.items()],
    }


def cluster_payload(cluster: ClusterSnapshot) -> dict[str, Any]:
    """A cluster as sent when the extender is not cluster-cache capable."""
    return {
        "name": cluster.name,
        "labels": dict(cluster.labels),
        "provider": cluster.provider,
        "region": cluster.region,
        "zones": list(cluster.zones),
        "taints": [t.dump() for t in cluster.taints],
        "ready": cluster.ready,
        "allocatable": dict(cluster.allocatable) if cluster.allocatable is not None else None,
        "allocated": dict(cluster.allocated),
        "allocating": dict(cluster.allocating),
    }


def extender_args(
    binding: BindingInput, clusters: Sequence[ClusterSnapshot], names_only: bool
) -> dict[str, Any]:
    """``ExtenderArgs``: the binding plus either ``clusterNames`` (cache capable) or full ``clusters``."""
    args: dict[str, Any] = {"binding": binding_payload(binding)}
    if names_only:
        args["clusterNames"] = [c.name for c in clusters]
    else:
        args["clusters"] = [cluster_payload(c) for c in clusters]
    return args


def parse_filter_result(body: Any) -> ExtenderFilterResult:
    """``ExtenderFilterResult``; raises ExtenderError on a malformed body or a non-empty ``error``."""
    if not isinstance(body, Mapping):
        raise ExtenderError("filter must answer an object {clusterNames, failedClusters, error}")
    try:
        names = tuple(str(n) for n in body.get("clusterNames") or ())
        failed = {str(k): str(v) for k, v in (body.get("failedClusters") or {}).items()}
        hard = {str(k): str(v) for k, v in (body.get("failedAndUnresolvableClusters") or {}).items()}
        error = str(body.get("error") or "")
    except (AttributeError, TypeError) as exc:
        raise ExtenderError(f"malformed filter result: {exc}") from exc
    if error:
        raise ExtenderError(error)
    return ExtenderFilterResult(names, failed, hard, error)


def parse_priorities(body: Any) -> list[HostPriority]:
    """``HostPriorityList``: ``[{host, score}]`` with scores clamped to 0..10."""
    if not isinstance(body, list):
        raise ExtenderError("prioritize must answer a list of {host, score}")
    try:
        return [
            HostPriority(str(p["host"]), max(0, min(MAX_EXTENDER_PRIORITY, int(p["score"])))) for p in body
        ]
    except (KeyError, TypeError, ValueError) as exc:
        raise ExtenderError(f"malformed priority list: {exc}") from exc


def parse_replicas(body: Any) -> dict[str, int]:
    """``{"clusters": [{name, replicas}], "error": ""}`` → max additional replicas per cluster."""
    if not isinstance(body, Mapping):
        raise ExtenderError("replicas must answer an object {clusters: [{name, replicas}], error}")
    if body.get("error"):
        raise ExtenderError(str(body["error"]))
    try:
        return {str(c["name"]): max(0, int(c["replicas"])) for c in body.get("clusters") or ()}
    except (KeyError, TypeError, ValueError) as exc:
        raise ExtenderError(f"malformed replicas result: {exc}") from exc
