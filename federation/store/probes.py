"""Read-only EXISTS expressions that tell whether a controller's next pass would find anything: the parts
of the controllers' idle probes (``controllers.idle_gate``), selected all together in one statement.

Invariants:
- Each expression is the condition of the query the pass itself runs (the same columns, the same
  indexes), or a broader one: a probe may say "something" when the pass finds nothing, never the reverse.
- Nothing here writes, locks or loads a row: an idle tick of every controller together is one SELECT.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, Text, cast, exists, or_, select

from federation.store.tables import (
    ClusterRow,
    GracefulEvictionTaskRow,
    ResourceBindingRow,
    ResourceTemplateRow,
    WorkloadRebalancerRow,
    WorkRow,
)

PULL = "Pull"


def bindings_written_since(since: datetime) -> ColumnElement[bool]:
    """``BindingRepository.changed_since`` would return a row."""
    return exists().where(ResourceBindingRow.content_updated_at > since)


def bound_templates_written_since(since: datetime) -> ColumnElement[bool]:
    """``BindingRepository.changed_templates_since`` would return a row: a template that has a binding."""
    return exists().where(
        ResourceTemplateRow.uid == ResourceBindingRow.template_uid,
        ResourceTemplateRow.content_updated_at > since,
    )


def bound_works_written_since(since: datetime) -> ColumnElement[bool]:
    """``WorkRepository.binding_ids_changed_since`` would return a row."""
    return exists().where(WorkRow.binding_id.is_not(None), WorkRow.updated_at > since)


def push_works() -> ColumnElement[bool]:
    """Works on a cluster that is not Pull mode (what work sync claims; an agent does the rest)."""
    pull = select(ClusterRow.name).where(ClusterRow.sync_mode == PULL).scalar_subquery()
    return WorkRow.cluster_name.not_in(pull)


def orphan_works_to_tombstone(binding_annotations: frozenset[str]) -> ColumnElement[bool]:
    """A Work whose binding is gone (``binding_id`` NULL, as ``WorkRepository.orphans`` finds them), not
    tombstoned yet and rendered for a binding (one of ``binding_annotations``): what the execution
    controller would tombstone (``rendering.orphans_to_tombstone``)."""
    deletion = WorkRow.metadata_extra["deletionTimestamp"].as_string()
    return exists().where(
        WorkRow.binding_id.is_(None),
        or_(deletion.is_(None), deletion == ""),
        or_(*(WorkRow.annotations[key].as_string().is_not(None) for key in sorted(binding_annotations))),
    )


def application_failover_bindings() -> ColumnElement[bool]:
    return exists().where(ResourceBindingRow.application_failover.is_(True))


def graceful_eviction_tasks() -> ColumnElement[bool]:
    return exists(select(GracefulEvictionTaskRow.id))


def workload_rebalancers() -> ColumnElement[bool]:
    return exists(select(WorkloadRebalancerRow.id))


def clusters_maybe_no_execute() -> ColumnElement[bool]:
    """A cluster whose taints may hold a NoExecute one: the JSON text mentions it (broader than a parse,
    the same on both backends; the taint manager parses what it reads)."""
    return exists().where(cast(ClusterRow.taints, Text).like("%NoExecute%"))
