"""Workload controllers in miniature: Deployments, StatefulSets and ReplicaSets own simulated pods.

Invariants:
- Pure functions over dicts; the cluster facade stores what they return.
- A workload wants ``spec.replicas`` (default 1) pods built from its pod template. Pods are owned directly by
  the workload (ownerReferences with ``controller: true``); no intermediate ReplicaSet objects are made.
- Pods carry the template hash (``pod-template-hash`` / ``controller-revision-hash``); pods of an older
  template are replaced at once (a Recreate rollout), so ``updatedReplicas`` counts current-template pods.
- StatefulSet pods are named ``<name>-<ordinal>`` and created in parallel; scale-down removes the highest
  ordinals. Deployment and ReplicaSet pods get random suffixes; scale-down removes the newest.
- Status is computed from the pods on every read, with the zero-valued counters omitted as the API server
  does (``readyReplicas`` is absent, not 0, while nothing is ready).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Any

from federation import jsoncodec
from federation.model.jsonvalue import clone
from federation.sim.pods import is_ready

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "ReplicaSet")
_SAFE = "bcdfghjklmnpqrstvwxz2456789"


@dataclass(frozen=True, slots=True)
class PodPlan:
    """What the workload controller wants done: pods to create (full objects) and pod names to delete."""

    create: list[dict[str, Any]]
    delete: list[str]


def template_hash(template: Any) -> str:
    """The pod template's hash (Kubernetes' ``pod-template-hash``: ten characters of its digest). Every read
    of a workload's status asks it of every pod, so the sorted JSON is orjson's (``jsoncodec.canonical``)."""
    digest = hashlib.sha256(jsoncodec.canonical(template)).digest()
    return "".join(_SAFE[b % len(_SAFE)] for b in digest[:10])


def desired_replicas(workload: dict[str, Any]) -> int:
    replicas = (workload.get("spec") or {}).get("replicas")
    return 1 if replicas is None else int(replicas)


def _hash_label(kind: str) -> str:
    return "controller-revision-hash" if kind == "StatefulSet" else "pod-template-hash"


def current_hash(workload: dict[str, Any]) -> str:
    spec_hash = template_hash((workload.get("spec") or {}).get("template") or {})
    return f"{workload['metadata']['name']}-{spec_hash}" if workload["kind"] == "StatefulSet" else spec_hash


def current_pods(workload: dict[str, Any], pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pods of the workload's current template (its hash taken once, not once per pod)."""
    if not pods:
        return []
    label, current = _hash_label(workload["kind"]), current_hash(workload)
    return [p for p in pods if (p["metadata"].get("labels") or {}).get(label) == current]


def plan_pods(workload: dict[str, Any], pods: list[dict[str, Any]], rng: random.Random) -> PodPlan:
    """Pods to create and delete so the workload has ``replicas`` pods of its current template."""
    current = current_pods(workload, pods)
    kept = {p["metadata"]["name"] for p in current}
    stale = [p["metadata"]["name"] for p in pods if p["metadata"]["name"] not in kept]
    want = desired_replicas(workload)
    if workload["kind"] == "StatefulSet":
        return _plan_ordinals(workload, current, stale, want)
    # Newest first, so scale-down removes the most recently created pods.
    current.sort(key=lambda p: p["metadata"].get("creationTimestamp", ""), reverse=True)
    extra = [p["metadata"]["name"] for p in current[: max(0, len(current) - want)]]
    create = [_new_pod(workload, _random_name(workload, rng)) for _ in range(want - len(current))]
    return PodPlan(create, stale + extra)


def _plan_ordinals(
    workload: dict[str, Any], current: list[dict[str, Any]], stale: list[str], want: int
) -> PodPlan:
    name = workload["metadata"]["name"]
    have = {p["metadata"]["name"] for p in current}
    wanted = {f"{name}-{i}" for i in range(want)}
    create = [_new_pod(workload, n) for n in sorted(wanted - have - set(stale), key=_ordinal)]
    return PodPlan(create, stale + sorted(have - wanted, key=_ordinal, reverse=True))


def _ordinal(pod_name: str) -> int:
    return int(pod_name.rsplit("-", 1)[1])


def _random_name(workload: dict[str, Any], rng: random.Random) -> str:
    suffix = "".join(rng.choice(_SAFE) for _ in range(5))
    name = workload["metadata"]["name"]
    if workload["kind"] == "Deployment":
        return f"{name}-{current_hash(workload)}-{suffix}"
    return f"{name}-{suffix}"


def _new_pod(workload: dict[str, Any], name: str) -> dict[str, Any]:
    template = clone((workload.get("spec") or {}).get("template") or {})
    meta = template.get("metadata") or {}
    labels = dict(meta.get("labels") or {})
    labels[_hash_label(workload["kind"])] = current_hash(workload)
    if workload["kind"] == "StatefulSet":
        labels["statefulset.kubernetes.io/pod-name"] = name
    spec = template.get("spec") or {}
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("schedulerName", "default-scheduler")
    owner = workload["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": owner.get("namespace", "default"),
            "labels": labels,
            "annotations": dict(meta.get("annotations") or {}),
            "ownerReferences": [owner_reference(workload)],
        },
        "spec": spec,
    }


def owner_reference(workload: dict[str, Any]) -> dict[str, Any]:
    meta = workload["metadata"]
    return {
        "apiVersion": workload.get("apiVersion", "apps/v1"),
        "kind": workload["kind"],
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def owned_by(pod: dict[str, Any], workload: dict[str, Any]) -> bool:
    uid = workload["metadata"].get("uid")
    return any(ref.get("uid") == uid for ref in pod["metadata"].get("ownerReferences") or [])


def _counts(workload: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, int]:
    ready = sum(1 for p in pods if is_ready(p))
    return {
        "replicas": len(pods),
        "updatedReplicas": len(current_pods(workload, pods)),
        "readyReplicas": ready,
        "availableReplicas": ready,
    }


def workload_status(workload: dict[str, Any], pods: list[dict[str, Any]], changed_at: str) -> dict[str, Any]:
    """The status a real controller would report for ``workload`` given its rendered pods."""
    counts = _counts(workload, pods)
    status: dict[str, Any] = {"observedGeneration": workload["metadata"].get("generation", 1)}
    kind = workload["kind"]
    if kind == "Deployment":
        unavailable = max(0, desired_replicas(workload) - counts["availableReplicas"])
        counts["unavailableReplicas"] = unavailable
        status["conditions"] = _deployment_conditions(workload, counts, changed_at)
    elif kind == "StatefulSet":
        counts["currentReplicas"] = counts["updatedReplicas"]
        status["currentRevision"] = status["updateRevision"] = current_hash(workload)
        status["collisionCount"] = 0
    else:
        counts["fullyLabeledReplicas"] = counts["replicas"]
        del counts["updatedReplicas"]
    status.update({k: v for k, v in counts.items() if v or k == "replicas"})
    return status


def _max_unavailable(workload: dict[str, Any]) -> int:
    strategy = (workload.get("spec") or {}).get("strategy") or {}
    raw = (strategy.get("rollingUpdate") or {}).get("maxUnavailable", "25%")
    want = desired_replicas(workload)
    if isinstance(raw, str) and raw.endswith("%"):
        return want * int(raw[:-1]) // 100
    return int(raw)


def _deployment_conditions(workload: dict[str, Any], counts: dict[str, int], at: str) -> list[dict[str, Any]]:
    want = desired_replicas(workload)
    available = counts["availableReplicas"] >= want - _max_unavailable(workload)
    rs_name = f"{workload['metadata']['name']}-{current_hash(workload)}"
    complete = counts["updatedReplicas"] == want and counts["availableReplicas"] >= want
    return [
        {
            "type": "Available",
            "status": "True" if available else "False",
            "reason": "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
            "message": f"Deployment {'has' if available else 'does not have'} minimum availability.",
            "lastUpdateTime": at,
            "lastTransitionTime": at,
        },
        {
            "type": "Progressing",
            "status": "True",
            "reason": "NewReplicaSetAvailable" if complete else "ReplicaSetUpdated",
            "message": f'ReplicaSet "{rs_name}" '
            + ("has successfully progressed." if complete else "is progressing."),
            "lastUpdateTime": at,
            "lastTransitionTime": at,
        },
    ]
