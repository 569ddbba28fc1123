"""Work sync's pass as a pipeline (``batch_pipeline``), against a real simulator on both backends: a pass of
several batches applies every Work once and records each once; on Postgres the records and the claims of the
next batches run on threads of their own while a batch's member I/O goes on, on SQLite on the pass's thread
in order; and a record that fails reaches the pass, whose claims (those taken ahead included) are then
forgotten with it."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from sqlalchemy import select, update

from federation.controllers.work_sync import SyncResult, WorkSync
from federation.sim import RunningSimulator
from federation.store import claims
from federation.store.tables import WorkRow
from federation.store.works import WorkRepository
from tests.controllers.test_execution_support import Harness, harness, member_object, nginx, start_sim
from tests.store.support import count_statements

__all__ = ["harness", "start_sim"]  # fixtures, re-exported for pytest

StartSim = Callable[..., RunningSimulator]
WORKLOADS = 7


def _queue_works(h: Harness, start: StartSim) -> RunningSimulator:
    member = start("member1")
    h.add_cluster("member1", member)
    for i in range(WORKLOADS):
        template = h.add_template(nginx(f"web{i}", replicas=1))
        h.add_binding(template, [{"name": "member1", "replicas": 1}])
    h.execution.reconcile()
    return member


def _applied(work: dict[str, Any]) -> bool:
    conditions = (work.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Applied" and c["status"] == "True" for c in conditions)


def test_a_pass_of_several_batches_applies_and_records_every_work_once(
    harness: Harness, start_sim: StartSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    member = _queue_works(harness, start_sim)
    recorded: Counter[int] = Counter()
    threads: set[str] = set()
    lock = threading.Lock()
    record = WorkSync._record

    def counting(self: WorkSync, results: Sequence[SyncResult]) -> int:
        with lock:
            recorded.update(r.task.claim.id for r in results)
            threads.add(threading.current_thread().name)
        return record(self, results)

    monkeypatch.setattr(WorkSync, "_record", counting)
    harness.sync.batch_size = 2  # four batches, the last one short

    assert harness.sync.reconcile().processed == WORKLOADS
    assert len(recorded) == WORKLOADS and set(recorded.values()) == {1}
    for i in range(WORKLOADS):
        assert member_object(member, "Deployment", f"web{i}") is not None
    works = _all_works(harness)
    assert len(works) == WORKLOADS and all(_applied(w) for w in works)
    # On Postgres the full batches were recorded behind, the short last one on the pass's own thread.
    behind = {t for t in threads if t.startswith("work-sync-record")}
    assert bool(behind) is harness.uow.is_postgres()
    assert harness.sync.reconcile().processed == 0  # nothing claimed twice, nothing left


def test_a_record_that_fails_reaches_the_pass(
    harness: Harness, start_sim: StartSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    _queue_works(harness, start_sim)
    record = WorkSync._record
    calls = []

    def failing(self: WorkSync, results: Sequence[SyncResult]) -> int:
        calls.append(len(results))
        if len(calls) == 1:
            raise RuntimeError("the database went away")
        return record(self, results)

    monkeypatch.setattr(WorkSync, "_record", failing)
    harness.sync.batch_size = 2
    with pytest.raises(RuntimeError, match="went away"):
        harness.sync.reconcile()
    # The runner forgets the pass's claims once its job returns (``forget_held`` on the pass's thread): the
    # claims taken ahead on the claim thread are the pass's too, so none is renewed after it, and they
    # run out as any failed pass's claims do.
    claims.forget_held(harness.sync.identity)
    ours = set(_work_ids(harness))
    assert ours and not ours & set(claims.HOLDINGS.of(harness.sync.identity).get(WorkRow, []))


def _work_ids(h: Harness) -> list[int]:
    with h.uow() as session:
        return list(session.scalars(select(WorkRow.id)))


def _all_works(h: Harness) -> list[dict[str, Any]]:
    with h.uow() as session:
        rows, _ = WorkRepository(session).objects.list()
    return list(rows)


def test_a_batchs_record_is_a_fixed_handful_of_statements_whatever_its_size(
    harness: Harness, start_sim: StartSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The statuses go as column values (``status_writes.write_works``): reading the Works, their revisions
    and change-log rows, one UPDATE, the claims' release; no statement per Work."""
    _queue_works(harness, start_sim)
    captured: list[SyncResult] = []
    record = WorkSync._record_batch

    def capturing(self: WorkSync, results: Sequence[SyncResult], now: Any) -> bool:
        captured.extend(results)
        return record(self, results, now)

    monkeypatch.setattr(WorkSync, "_record_batch", capturing)
    assert harness.sync.reconcile().processed == WORKLOADS
    counts = []
    for results in (captured[:2], captured):
        with harness.uow() as session:  # every Work's status to write again
            session.execute(update(WorkRow).values(status={}, resource_version=WorkRow.resource_version + 1))
        with count_statements(harness.engine) as log:
            assert record(harness.sync, results, harness.clock.now())
        counts.append(log.count)
    # Postgres releases the claims by one statement, SQLite by two.
    assert counts == ([5, 5] if harness.uow.is_postgres() else [6, 6]), (counts, log.statements)
    works = _all_works(harness)
    assert all(_applied(w) for w in works)
