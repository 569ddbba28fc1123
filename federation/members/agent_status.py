"""What the pull-mode agent writes, decided without I/O: member manifests, their hashes, and Work status.

Invariants (pure functions, no clock: the caller passes `now`):
- A manifest applied to a member carries the label `karmada.io/managed=true` and the annotations
  `work.karmada.io/namespace` / `work.karmada.io/name` (its Work, as Karmada marks them) and
  `federation.io/manifest-hash`. The hash covers the manifest as the Work holds it plus the Work
  identity, so an unchanged Work hashes the same on every pass and across agent restarts.
- Work status has Karmada's shape (semantics §8.2): an `Applied` condition (reason `AppliedSuccessful`
  or `AppliedFailed` with "Failed to apply all manifests (k/n): ..."), and `manifestStatuses[]` of
  `{identifier{ordinal, group, version, kind, resource, namespace, name}, status, health}` where
  `status` is the member object's raw status (workloads add Karmada's FederatedGeneration) and `health`
  is Healthy, Unhealthy or Unknown by the same rules as push work sync.
- Cluster status: Karmada's `CompleteAPIEnablements` condition from the collected API enablements.
- A condition's `lastTransitionTime` moves only when its status flips, so an unchanged Work produces an
  equal status and the agent writes nothing.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from federation.model.status_interpreter import UNKNOWN, interpret_health, reflect_status
from federation.model.work import (
    CONDITION_APPLIED,
    CONDITION_DISPATCHING,
    WORK_NAME_ANNOTATION,
    WORK_NAMESPACE_ANNOTATION,
)

MANAGED_LABEL = "karmada.io/managed"
HASH_ANNOTATION = "federation.io/manifest-hash"
REASON_APPLIED = "AppliedSuccessful"
REASON_APPLY_FAILED = "AppliedFailed"
REASON_SUSPENDED = "SuspendDispatching"
MESSAGE_APPLIED = "Manifest has been successfully applied"
MESSAGE_SUSPENDED = "Work dispatching is in a suspended state."
CONDITION_COMPLETE_APIS = "CompleteAPIEnablements"
_MARKS = frozenset({WORK_NAMESPACE_ANNOTATION, WORK_NAME_ANNOTATION, HASH_ANNOTATION})

Body = dict[str, Any]


@dataclass(frozen=True, slots=True, order=True)
class ObjectKey:
    """A member object's identity."""

    api_version: str
    kind: str
    namespace: str
    name: str

    @classmethod
    def of(cls, manifest: Body) -> ObjectKey:
        meta = manifest.get("metadata") or {}
        return cls(
            str(manifest.get("apiVersion", "")),
            str(manifest.get("kind", "")),
            str(meta.get("namespace") or ""),
            str(meta.get("name", "")),
        )


@dataclass(frozen=True, slots=True)
class WorkRef:
    namespace: str
    name: str


def manifest_hash(work: WorkRef, manifest: Body) -> str:
    canonical = json.dumps([work.namespace, work.name, manifest], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def member_manifest(work: WorkRef, manifest: Body) -> Body:
    """The manifest as applied to the member: marked with its Work and its hash."""
    body = copy.deepcopy(manifest)
    meta = body.setdefault("metadata", {})
    meta.setdefault("labels", {})[MANAGED_LABEL] = "true"
    annotations = meta.setdefault("annotations", {})
    annotations[WORK_NAMESPACE_ANNOTATION] = work.namespace
    annotations[WORK_NAME_ANNOTATION] = work.name
    annotations[HASH_ANNOTATION] = manifest_hash(work, manifest)
    return body


def unmarked_manifest(manifest: Body) -> Body:
    """The manifest without the marks that tie it to a Work (what a preserved object is left with)."""
    body = copy.deepcopy(manifest)
    meta = body.setdefault("metadata", {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != MANAGED_LABEL}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in _MARKS}
    meta["labels"], meta["annotations"] = labels, annotations
    return body


def work_of(member_object: Body) -> WorkRef | None:
    """The Work a member object was applied for, from its annotations (None: not the agent's)."""
    meta = member_object.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    if (meta.get("labels") or {}).get(MANAGED_LABEL) != "true":
        return None
    namespace, name = annotations.get(WORK_NAMESPACE_ANNOTATION), annotations.get(WORK_NAME_ANNOTATION)
    return WorkRef(str(namespace), str(name)) if namespace and name else None


def hash_of(member_object: Body) -> str | None:
    return ((member_object.get("metadata") or {}).get("annotations") or {}).get(HASH_ANNOTATION)


def identifier(ordinal: int, manifest: Body, resource: str | None = None) -> Body:
    group, _, version = str(manifest.get("apiVersion", "")).rpartition("/")
    key = ObjectKey.of(manifest)
    found: Body = {"ordinal": ordinal, "group": group, "version": version, "kind": key.kind, "name": key.name}
    if resource:
        found["resource"] = resource
    if key.namespace:
        found["namespace"] = key.namespace
    return found


@dataclass(frozen=True, slots=True)
class ManifestOutcome:
    """One manifest after a pass: its identifier, the member object (None if absent) and any error."""

    identifier: Body
    member_object: Body | None
    error: str | None = None


def manifest_status(outcome: ManifestOutcome) -> Body:
    # The same interpreter as push work sync (model.status_interpreter): one set of Karmada rules.
    observed = outcome.member_object
    entry: Body = {
        "identifier": outcome.identifier,
        "health": UNKNOWN if observed is None else interpret_health(observed),
    }
    reflected = _reflected(observed)
    if reflected is not None:
        entry["status"] = reflected
    return entry


def _reflected(observed: Body | None) -> Body | None:
    if observed is None:
        return None
    try:
        return reflect_status(observed)
    except (TypeError, ValueError):  # an unreadable status is reported as Unknown health, not a crash
        return None


def applied_condition(outcomes: list[ManifestOutcome], now: str) -> Body:
    errors = [o.error for o in outcomes if o.error]
    if not errors:
        return _condition(CONDITION_APPLIED, "True", REASON_APPLIED, MESSAGE_APPLIED, now)
    message = f"Failed to apply all manifests ({len(errors)}/{len(outcomes)}): {'; '.join(errors)}"
    return _condition(CONDITION_APPLIED, "False", REASON_APPLY_FAILED, message, now)


def work_status(previous: Body | None, outcomes: list[ManifestOutcome], now: str) -> Body:
    """The Work's new status: Applied + manifestStatuses, other conditions of `previous` kept."""
    return {
        **(previous or {}),
        "conditions": merge_condition(previous, applied_condition(outcomes, now)),
        "manifestStatuses": [manifest_status(o) for o in outcomes],
    }


def suspended_status(previous: Body | None, now: str) -> Body:
    condition = _condition(CONDITION_DISPATCHING, "False", REASON_SUSPENDED, MESSAGE_SUSPENDED, now)
    return {**(previous or {}), "conditions": merge_condition(previous, condition)}


def merge_condition(previous: Body | None, condition: Body) -> list[Body]:
    """Upsert `condition` by type; keep the old transition time when the status did not flip."""
    conditions = [dict(c) for c in (previous or {}).get("conditions") or []]
    for index, old in enumerate(conditions):
        if old.get("type") == condition["type"]:
            if old.get("status") == condition["status"] and old.get("lastTransitionTime"):
                condition = {**condition, "lastTransitionTime": old["lastTransitionTime"]}
            conditions[index] = condition
            return conditions
    return [*conditions, condition]


def with_enablements_condition(cluster_status: Body, now: str) -> Body:
    """Karmada's `CompleteAPIEnablements` condition, from whether any API enablement was collected."""
    if cluster_status.get("apiEnablements"):
        wanted = ("True", "Complete", "collected complete APIs from member cluster")
    else:
        wanted = ("False", "Empty", "collected empty APIs from member cluster")
    condition = _condition(CONDITION_COMPLETE_APIS, *wanted, now)
    return {**cluster_status, "conditions": merge_condition(cluster_status, condition)}


def _condition(kind: str, status: str, reason: str, message: str, now: str) -> Body:
    return {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": now}
