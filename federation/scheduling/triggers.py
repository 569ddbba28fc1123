"""When a binding needs (re)scheduling — Karmada ``doScheduleBinding`` (semantics §1.9). Pure decisions.

Invariants:
- ``needs_scheduling`` returns the first trigger that holds, in Karmada's order: placement changed,
  replicas changed, reschedule triggered, Duplicated/non-workload (always), a target cluster is gone or
  being deleted; ``None`` means only ``schedulerObservedGeneration`` should be synced.
- For ``clusterAffinities`` only the observed term counts as "the placement" (edits to other terms do not
  trigger), like Karmada's ``clusterAffinitiesChanged``.
- Times are passed in; nothing here reads a clock.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any

from federation.model.placement import Placement


def reschedule_required(triggered_at: datetime | None, last_scheduled: datetime | None) -> bool:
    """``RescheduleRequired``: both set and the trigger later than the last schedule."""
    return triggered_at is not None and last_scheduled is not None and triggered_at > last_scheduled


def replicas_changed(strategy: str | None, replicas: int, clusters: Mapping[str, int]) -> bool:
    """``IsBindingReplicasChanged``: Divided → sum differs; Duplicated → a cluster differs; None → False."""
    if strategy == "Duplicated":
        return any(count != replicas for count in clusters.values())
    if strategy == "Divided":
        return sum(clusters.values()) != replicas
    return False


def _observed_view(placement: Placement, observed: str) -> dict[str, Any]:
    """The placement with ``clusterAffinities`` reduced to the observed term (index 0 when none)."""
    data = placement.dump()
    terms = data.get("clusterAffinities")
    if terms:
        names = [t.get("affinityName") for t in terms]
        data["clusterAffinities"] = [terms[names.index(observed)] if observed in names else terms[0]]
    return data


def placement_changed(current: Placement, applied: Placement | None, observed_affinity: str = "") -> bool:
    """The placement differs from the ``policy.karmada.io/applied-placement`` one (None: never applied)."""
    if applied is None:
        return True
    if current is applied:  # equal JSON parses to one object (``planner.placement_of``)
        return False
    return _observed_view(current, observed_affinity) != _observed_view(applied, observed_affinity)


def needs_scheduling(
    *,
    placement: Placement,
    applied_placement: Placement | None,
    observed_affinity: str,
    replicas: int,
    is_workload: bool,
    clusters: Mapping[str, int],
    reschedule_triggered_at: datetime | None,
    last_scheduled_time: datetime | None,
    gone_clusters: Collection[str] = (),
) -> str | None:
    """The reason to schedule now, or None (``gone_clusters``: deleted or deleting cluster names)."""
    if placement_changed(placement, applied_placement, observed_affinity):
        return "PlacementChanged"
    strategy = None if placement.replica_scheduling is None else placement.replica_scheduling_type()
    if replicas_changed(strategy, replicas, clusters):
        return "ReplicasChanged"
    if reschedule_required(reschedule_triggered_at, last_scheduled_time):
        return "RescheduleTriggered"
    if placement.replica_scheduling_type() == "Duplicated" or not is_workload:
        return "DuplicatedOrNonWorkload"
    if any(name in gone_clusters for name in clusters):
        return "TargetClusterGone"
    return None
