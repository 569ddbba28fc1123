"""Binding and template status: Karmada's aggregation rules as pure functions, and the controller's writes
(status-only, only when changed, never re-queueing detection or scheduling) on both backends."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select

from federation.controllers import binding_status as binding_status_module
from federation.controllers.binding_status import (
    FULLY_APPLIED_FAILED_MESSAGE,
    aggregated_items,
    binding_status,
    expected_clusters,
    fully_applied,
    template_status,
)
from federation.model.work import WorkStatusView
from federation.store.errors import Conflict
from federation.store.tables import ResourceBindingRow, ResourceTemplateRow
from federation.store.works import WorkRepository
from tests.controllers.test_execution_support import Harness, count_writes, harness, nginx
from tests.store.support import count_statements

__all__ = ["harness"]

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
RESOURCE = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "namespace": "default",
    "name": "nginx",
    "uid": "u1",
}


def _binding(clusters: list[str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "nginx-deployment", "namespace": "default"},
        "spec": {
            "resource": RESOURCE,
            "replicas": 3,
            "clusters": [{"name": c, "replicas": 1} for c in clusters],
            **spec,
        },
    }


def _work(
    cluster: str, applied: bool | None = True, ready: int = 1, health: str = "Healthy", **meta: Any
) -> WorkStatusView:
    return WorkStatusView.of(_work_manifest(cluster, applied, ready, health, **meta))


def _work_manifest(
    cluster: str, applied: bool | None = True, ready: int = 1, health: str = "Healthy", **meta: Any
) -> dict[str, Any]:
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "nginx", "namespace": "default"},
    }
    status: dict[str, Any] = {}
    if applied is not None:
        status["conditions"] = [
            {
                "type": "Applied",
                "status": "True" if applied else "False",
                "message": "" if applied else "boom",
            }
        ]
    if applied:
        identifier = {
            "ordinal": 0,
            "group": "apps",
            "version": "v1",
            "kind": "Deployment",
            "namespace": "default",
            "name": "nginx",
        }
        member = {
            "replicas": ready,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "updatedReplicas": ready,
        }
        member |= {"observedGeneration": 1, "generation": 1, "resourceTemplateGeneration": 2}
        status["manifestStatuses"] = [{"identifier": identifier, "status": member, "health": health}]
    return {
        "metadata": {"name": "nginx-x", "namespace": f"karmada-es-{cluster}", **meta},
        "spec": {"workload": {"manifests": [manifest]}},
        "status": status,
    }


def test_items_are_sorted_by_cluster_and_skip_works_being_deleted() -> None:
    works = [_work("b"), _work("a", applied=False), _work("c", deletionTimestamp="2026-01-01T00:00:00Z")]
    items = aggregated_items(_binding(["a", "b"]), works)
    assert [i["clusterName"] for i in items] == ["a", "b"]
    assert items[0] == {"clusterName": "a", "applied": False, "appliedMessage": "boom", "health": "Unknown"}
    assert items[1]["applied"] is True and items[1]["health"] == "Healthy"
    assert items[1]["status"]["readyReplicas"] == 1


def test_an_applied_work_without_collected_status_is_unknown() -> None:
    work = _work_manifest("a")
    work["status"].pop("manifestStatuses")
    assert aggregated_items(_binding(["a"]), [WorkStatusView.of(work)]) == [
        {"clusterName": "a", "applied": True, "health": "Unknown"}
    ]


def test_fully_applied_needs_exactly_the_expected_clusters_all_applied() -> None:
    def items(*clusters: str, applied: bool = True) -> list[dict[str, Any]]:
        return [{"clusterName": c, "applied": applied} for c in clusters]

    assert fully_applied(items("a", "b"), {"a", "b"})
    assert not fully_applied(items("a"), {"a", "b"})
    assert not fully_applied(items("a", "b", "c"), {"a", "b"})
    assert not fully_applied(items("a", "c"), {"a", "b"})
    assert not fully_applied(items("a", "b", applied=False), {"a", "b"})
    assert not fully_applied([], set())  # never scheduled


def test_expected_clusters_include_required_by_and_held_eviction_clusters() -> None:
    tasks = [
        {"fromCluster": "old", "reason": "X", "producer": "p", "purgeMode": "Gracefully"},
        {"fromCluster": "gone", "reason": "X", "producer": "p", "purgeMode": "Directly"},
    ]
    binding = _binding(
        ["a"], gracefulEvictionTasks=tasks, requiredBy=[{"name": "dep", "clusters": [{"name": "b"}]}]
    )
    assert expected_clusters(binding) == {"a", "b", "old"}


def test_binding_status_sets_fully_applied_and_keeps_other_conditions() -> None:
    binding = _binding(["a", "b"])
    binding["status"] = {"conditions": [{"type": "Scheduled", "status": "True", "reason": "Success"}]}
    status = binding_status(binding, [_work("a"), _work("b", applied=False)], NOW)
    assert [c["type"] for c in status["conditions"]] == ["Scheduled", "FullyApplied"]
    fully = status["conditions"][1]
    assert (fully["status"], fully["reason"], fully["message"]) == (
        "False",
        "FullyAppliedFailed",
        FULLY_APPLIED_FAILED_MESSAGE,
    )
    # Re-computing an unchanged status gives the same dict (so nothing is written).
    binding["status"] = status
    assert binding_status(binding, [_work("a"), _work("b", applied=False)], NOW.replace(hour=13)) == status


def test_template_status_sums_members_and_follows_generation_only_when_all_caught_up() -> None:
    template = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "nginx", "generation": 2},
        "status": {"observedGeneration": 1},
    }
    items = aggregated_items(_binding(["a", "b"]), [_work("a", ready=1), _work("b", ready=2)])
    status = template_status(template, items)
    assert status == {
        "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3, "unavailableReplicas": 0,
        "observedGeneration": 2,
    }  # fmt: skip
    lagging = _work_manifest("b", ready=2)
    lagging["status"]["manifestStatuses"][0]["status"]["resourceTemplateGeneration"] = 1
    works = [_work("a"), WorkStatusView.of(lagging)]
    behind = template_status(template, aggregated_items(_binding(["a", "b"]), works))
    assert behind is not None and behind["observedGeneration"] == 1  # kept until every member caught up


def test_only_deployments_and_statefulsets_get_a_template_status() -> None:
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    assert template_status(configmap, []) is None
    statefulset = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s", "generation": 1}}
    assert template_status(statefulset, [{"status": {"replicas": 2, "currentReplicas": 2}}]) == {
        "replicas": 2, "readyReplicas": 0, "currentReplicas": 2, "updatedReplicas": 0, "availableReplicas": 0,
        "observedGeneration": 0,
    }  # fmt: skip


# -- the controller on both backends -------------------------------------------------------------------


def _queues(h: Harness) -> tuple[Any, ...]:
    with h.uow() as session:
        binding = session.execute(
            select(ResourceBindingRow.needs_scheduling, ResourceBindingRow.dirty_seq)
        ).one()
        template = session.execute(
            select(ResourceTemplateRow.needs_detection, ResourceTemplateRow.dirty_seq)
        ).one()
    return tuple(binding), tuple(template)


def test_status_writes_neither_requeue_nor_repeat(harness: Harness) -> None:
    template = harness.add_template(nginx(replicas=3))
    binding = harness.add_binding(template, [{"name": "member1", "replicas": 3}])
    with harness.uow() as session:  # the scheduler and the detector are done with them
        session.execute(ResourceBindingRow.__table__.update().values(needs_scheduling=False))
        session.execute(ResourceTemplateRow.__table__.update().values(needs_detection=False))
    queues = _queues(harness)
    generation = harness.binding(binding)["metadata"]["generation"]  # type: ignore[index]

    harness.execution.reconcile()
    harness.sync.reconcile()  # no such cluster: work sync reports the Work not applied
    harness.status.reconcile()
    current = harness.binding(binding)
    assert current is not None
    assert current["status"]["aggregatedStatus"] == [
        {
            "clusterName": "member1",
            "applied": False,
            "appliedMessage": "Failed to apply all manifests (0/1): cluster 'member1' is not registered",
            "health": "Unknown",
        }
    ]
    assert current["metadata"]["generation"] == generation
    assert _queues(harness) == queues

    with count_writes(harness.engine) as writes:
        harness.status.reconcile()
    assert writes == []


def test_a_binding_that_was_never_scheduled_gets_no_status(harness: Harness) -> None:
    template = harness.add_template(nginx(replicas=3))
    binding = harness.add_binding(template, [])
    harness.execution.reconcile()
    harness.status.reconcile()
    current = harness.binding(binding)
    assert current is not None and "status" not in current


def _scheduled(harness: Harness, count: int) -> list[dict[str, Any]]:
    """``count`` bindings on two clusters, their Works written and reported not applied (no member)."""
    bindings = []
    for index in range(count):
        template = harness.add_template(nginx(f"app{index}", replicas=2))
        placement = [{"name": "member1", "replicas": 1}, {"name": "member2", "replicas": 1}]
        bindings.append(harness.add_binding(template, placement))
    harness.execution.reconcile()
    harness.sync.reconcile()
    return bindings


def test_a_placement_gets_a_status_once_a_work_of_it_is_reported_on(harness: Harness) -> None:
    """As Karmada's rb-status controller: neither the scheduler's write nor the Works' creation is news; the
    first report on a Work is, and then every Work of the binding is an item (the unreported one Unknown)."""
    template = harness.add_template(nginx(replicas=2))
    binding = harness.add_binding(
        template, [{"name": "member1", "replicas": 1}, {"name": "member2", "replicas": 1}]
    )
    harness.status.reconcile()  # scheduled, no Work yet
    harness.execution.reconcile()
    harness.status.reconcile()  # Works nobody has reported on
    current = harness.binding(binding)
    assert current is not None and "aggregatedStatus" not in (current.get("status") or {})
    assert harness.template(template).get("status") is None  # type: ignore[union-attr]

    work = next(w for w in harness.works().values() if w["metadata"]["namespace"] == "karmada-es-member1")
    applied = {"type": "Applied", "status": "True", "reason": "AppliedSuccessful", "message": ""}
    with harness.uow() as session:
        WorkRepository(session).objects.update_status(
            "karmada-es-member1", work["metadata"]["name"], {"conditions": [applied]}
        )
    harness.status.reconcile()
    current = harness.binding(binding)
    assert current is not None
    assert current["status"]["aggregatedStatus"] == [
        {"clusterName": "member1", "applied": True, "health": "Unknown"},
        {"clusterName": "member2", "applied": False, "health": "Unknown"},
    ]
    fully = next(c for c in current["status"]["conditions"] if c["type"] == "FullyApplied")
    assert (fully["status"], fully["reason"]) == ("False", "FullyAppliedFailed")


@pytest.mark.parametrize("count", [1, 8])
def test_a_batch_of_statuses_is_a_fixed_number_of_statements(harness: Harness, count: int) -> None:
    _scheduled(harness, count)
    with count_statements(harness.engine) as log:
        assert harness.status.reconcile().processed == 2 * count  # each binding's status and its template's
    # The two feeds; the batch's bindings, Works and templates; per table (bindings, templates) the
    # revisions, the change-log rows and one executemany UPDATE (savepoints are not counted); and the
    # feeds' checkpoint, read by a process's first pass and saved once its full pass is done.
    assert log.count == 2 + 3 + 2 * 3 + 2, "\n".join(log.statements)


def test_a_window_re_read_loads_nothing_until_a_row_is_written_again(harness: Harness) -> None:
    """The fake clock stands still, so every pass re-reads the whole overlap window: the rows a committed
    pass handed out, and the statuses the controller wrote itself, are skipped; a Work written since (at
    the same stamp, with a new resourceVersion) is news."""
    bindings = _scheduled(harness, 3)
    harness.status.reconcile()
    with count_statements(harness.engine) as log:
        assert harness.status.reconcile().processed == 0
    assert log.count == 2, "\n".join(log.statements)  # the two feeds; no binding, Work or template read
    work = next(w for w in harness.works().values() if w["metadata"]["namespace"] == "karmada-es-member1")
    applied = {"type": "Applied", "status": "True", "reason": "AppliedSuccessful", "message": ""}
    with harness.uow() as session:
        WorkRepository(session).objects.update_status(
            "karmada-es-member1", work["metadata"]["name"], {"conditions": [applied]}
        )
    assert harness.status.reconcile().processed >= 1
    name = work["metadata"]["annotations"]["resourcebinding.karmada.io/name"]
    current = harness.binding(next(b for b in bindings if b["metadata"]["name"] == name))
    assert current is not None
    items = {i["clusterName"]: i["applied"] for i in current["status"]["aggregatedStatus"]}
    assert items == {"member1": True, "member2": False}


def test_a_failed_batch_write_falls_back_to_one_binding_at_a_time(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    bindings = _scheduled(harness, 3)
    real = binding_status_module.binding_writes.rewrite

    def stale_once(session: Any, rewrites: Any, *args: Any) -> Any:
        monkeypatch.setattr(binding_status_module.binding_writes, "rewrite", real)
        real(session, rewrites, *args)  # written, then refused as a lost race would be: rolled back
        raise Conflict("ResourceBinding", "default", "b0", "a concurrent writer")

    monkeypatch.setattr(binding_status_module.binding_writes, "rewrite", stale_once)
    assert harness.status.reconcile().processed == 6
    for binding in bindings:
        current = harness.binding(binding)
        assert current is not None
        assert [item["clusterName"] for item in current["status"]["aggregatedStatus"]] == [
            "member1",
            "member2",
        ]
    with count_writes(harness.engine) as writes:
        harness.status.reconcile()
    assert writes == []
