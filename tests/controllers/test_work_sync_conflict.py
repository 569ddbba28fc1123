"""A Work written by another controller while work sync records its outcome: the batch's one transaction
gives way to one transaction per outcome, written at once over the concurrent write (kept); and a Work
written again while its own outcome is recorded is retried at once. Nothing is lost, and no claim is left
hanging until its lease expires."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from federation.store.repository import ObjectRepository
from federation.store.tables import WorkRow
from tests.controllers.test_execution_support import Harness, harness, nginx, ready, start_sim

__all__ = ["harness", "start_sim"]  # fixtures, re-exported for pytest


def _one_work(harness: Harness, start_sim: Any) -> tuple[Any, dict[str, Any]]:
    """A member and one Work rendered for it, not synced yet; the simulator and the Work's metadata."""
    sim = start_sim("member1")
    harness.add_cluster("member1", sim)
    template = harness.add_template(nginx(replicas=2))
    harness.add_binding(template, [{"name": "member1", "replicas": 2}])
    harness.execution.reconcile()
    work = next(iter(harness.works().values()))
    return sim, work["metadata"]


def test_a_concurrent_write_costs_one_retry_not_the_batch(harness: Harness, start_sim, monkeypatch) -> None:
    sim, meta = _one_work(harness, start_sim)

    original = harness.sync._record_one
    raced: list[bool] = []

    def record_after_a_concurrent_write(session, current, result, now):
        if not raced:
            raced.append(True)
            with harness.uow() as other:  # another controller writes the same Work in between
                repo = ObjectRepository(other, "Work", "work.karmada.io/v1alpha1")
                repo.update_status(meta["namespace"], meta["name"], {"note": "written concurrently"})
        return original(session, current, result, now)

    monkeypatch.setattr(harness.sync, "_record_batch", lambda results, now: False)  # one by one
    monkeypatch.setattr(harness.sync, "_record_one", record_after_a_concurrent_write)
    harness.sync.reconcile()
    assert raced
    with harness.uow() as session:
        row = session.scalars(select(WorkRow).where(WorkRow.name == meta["name"])).one()
        assert row.claimed_by is None, "the claim must be released, not held until its lease expires"
        assert row.needs_sync and row.next_attempt_at is not None
    harness.sync.reconcile()
    harness.until(lambda: ready(sim, "nginx", 2), what="applied on the retry")
    applied = next(iter(harness.works().values()))
    assert any(c["type"] == "Applied" and c["status"] == "True" for c in applied["status"]["conditions"])


def test_a_concurrent_write_during_the_batch_record_is_kept_and_the_outcome_recorded_at_once(
    harness: Harness, start_sim, monkeypatch
) -> None:
    sim, meta = _one_work(harness, start_sim)

    original = harness.sync._outcome
    raced: list[bool] = []

    def outcome_after_a_concurrent_write(current, result, now):
        if not raced:
            raced.append(True)
            with harness.uow() as other:  # the status collector writes the same Work in between
                repo = ObjectRepository(other, "Work", "work.karmada.io/v1alpha1")
                repo.update_status(meta["namespace"], meta["name"], {"note": "written concurrently"})
        return original(current, result, now)

    monkeypatch.setattr(harness.sync, "_outcome", outcome_after_a_concurrent_write)
    harness.sync.reconcile()
    assert raced
    assert ready(sim, "nginx", 2) or harness.until(lambda: ready(sim, "nginx", 2), what="applied")
    with harness.uow() as session:
        row = session.scalars(select(WorkRow).where(WorkRow.name == meta["name"])).one()
        assert row.claimed_by is None and not row.needs_sync
        assert row.status["note"] == "written concurrently"
        assert any(c["type"] == "Applied" and c["status"] == "True" for c in row.status["conditions"])
