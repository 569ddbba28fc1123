"""The cluster-shaped wire (``apiVersion: federation.io/v1``, the default): kube-scheduler's extender
messages with the pod replaced by the binding and nodes by clusters.

    ExtenderArgs   = {"binding": {...}, "clusterNames": [...]}      (clusterCacheCapable)
                   | {"binding": {...}, "clusters": [{...}, ...]}
    filter         → {"clusterNames", "failedClusters", "failedAndUnresolvableClusters", "error"}
    prioritize     → [{"host", "score"}]
    replicas       → {"clusters": [{"name", "replicas"}], "error"}
    bind           ← {"podName", "podNamespace", "podUID", "node", "replicas"} → {"error"}

Invariants: a malformed body or a non-empty ``error`` raises ``ExtenderError``; priorities are clamped to
0..``MAX_EXTENDER_PRIORITY``; replicas are never negative. The replicas and bind answers are shared with
the kube wire (kube-scheduler has no replicas verb; its bind answer is ``ExtenderBindingResult``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from federation.scheduling.extender import (
    MAX_EXTENDER_PRIORITY,
    ExtenderError,
    ExtenderFilterResult,
    HostPriority,
)
from federation.scheduling.types import BindingInput, ClusterSnapshot, TargetCluster


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


def bind_args(binding: BindingInput, target: TargetCluster) -> dict[str, Any]:
    """kube-scheduler's ``ExtenderBindingArgs`` with the workload as the pod and the cluster as the node,
    plus the replicas the cluster takes (a Go extender ignores the extra field)."""
    return {
        "podName": binding.name,
        "podNamespace": binding.namespace,
        "podUID": binding.uid,
        "node": target.name,
        "replicas": target.replicas,
    }


def parse_bind_result(body: Any) -> None:
    """``ExtenderBindingResult``: ``{"error": ""}``; a non-empty error raises."""
    if not isinstance(body, Mapping):
        raise ExtenderError("bind must answer an object {error}")
    error = next((v for k, v in body.items() if str(k).lower() == "error"), "")
    if error:
        raise ExtenderError(str(error))


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


def clamp_priorities(pairs: Sequence[tuple[Any, Any]]) -> list[HostPriority]:
    """``(host, score)`` pairs → priorities with scores clamped to 0..10."""
    try:
        return [HostPriority(str(h), max(0, min(MAX_EXTENDER_PRIORITY, int(s)))) for h, s in pairs]
    except (TypeError, ValueError) as exc:
        raise ExtenderError(f"malformed priority list: {exc}") from exc


class ClusterWire:
    """Requests and answers of the cluster-shaped wire."""

    def args(
        self, binding: BindingInput, clusters: Sequence[ClusterSnapshot], names_only: bool
    ) -> dict[str, Any]:
        """``ExtenderArgs``: the binding plus ``clusterNames`` (cache capable) or full ``clusters``."""
        args: dict[str, Any] = {"binding": binding_payload(binding)}
        if names_only:
            args["clusterNames"] = [c.name for c in clusters]
        else:
            args["clusters"] = [cluster_payload(c) for c in clusters]
        return args

    def filter_result(self, body: Any, offered: Sequence[str], names_only: bool) -> ExtenderFilterResult:
        """``ExtenderFilterResult``; a malformed body or a non-empty ``error`` raises."""
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

    def priorities(self, body: Any) -> list[HostPriority]:
        """``HostPriorityList``: ``[{host, score}]``."""
        if not isinstance(body, list):
            raise ExtenderError("prioritize must answer a list of {host, score}")
        try:
            return clamp_priorities([(p["host"], p["score"]) for p in body])
        except (KeyError, TypeError) as exc:
            raise ExtenderError(f"malformed priority list: {exc}") from exc

    def bind_args(self, binding: BindingInput, target: TargetCluster) -> dict[str, Any]:
        return bind_args(binding, target)
