"""The change-feed controllers keep their feeds' checkpoint in the database: a restarted process (a new
controller object on the same database) resumes where the last committed pass left off instead of
rendering and aggregating every binding again, yet still sees what was written while it was down, keeps
the full resync's schedule, and falls back to a full pass when the checkpoint is not its own."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import delete, func, select, update

from federation.controllers.binding_status import BindingStatusController
from federation.controllers.change_feed import DEFAULT_RESYNC_SECONDS, ChangeFeed
from federation.controllers.execution import ExecutionController
from federation.controllers.feed_checkpoint import FeedCheckpoint
from federation.store import checkpoints
from federation.store.tables import ControllerCheckpointRow, ResourceBindingRow, WorkRow
from tests.controllers.test_execution_support import Harness, count_writes, harness, nginx
from tests.store.support import count_statements

__all__ = ["harness"]  # the fixture, re-exported for pytest

TWO = [{"name": "member1", "replicas": 1}, {"name": "member2", "replicas": 1}]


def _settled(h: Harness, count: int = 3) -> list[dict[str, Any]]:
    """``count`` bindings rendered and aggregated, the feeds' windows settled and checkpointed."""
    bindings = [h.add_binding(h.add_template(nginx(f"app{i}", replicas=2)), TWO) for i in range(count)]
    h.execution.reconcile()
    h.status.reconcile()
    h.clock.advance(60)
    h.execution.reconcile()
    h.status.reconcile()
    return bindings


def _work_count(h: Harness) -> int:
    with h.uow() as session:
        return int(session.scalar(select(func.count()).select_from(WorkRow)) or 0)


def _drop_one_work(h: Harness) -> None:
    """What no watermark can see: a Work row removed behind the controllers' backs."""
    with h.uow() as session:
        first = session.scalar(select(func.min(WorkRow.id)))
        session.execute(delete(WorkRow).where(WorkRow.id == first))


def test_a_restarted_execution_controller_resumes_and_renders_nothing(harness: Harness) -> None:
    _settled(harness)
    restarted = ExecutionController(harness.uow, harness.clock)
    with count_statements(harness.engine) as log, count_writes(harness.engine) as writes:
        assert restarted.reconcile().processed == 0
    # The checkpoint, the two feeds (nothing newer than the watermark) and the orphan scan; no binding,
    # template or Work read for rendering, and nothing written (the checkpoint did not move).
    assert log.count == 1 + 3, "\n".join(log.statements)
    assert writes == []


def test_a_binding_written_while_down_is_rendered_after_the_restart(harness: Harness) -> None:
    [binding, *_] = _settled(harness)
    harness.edit_binding(binding, clusters=[{"name": "member3", "replicas": 2}])
    restarted = ExecutionController(harness.uow, harness.clock)
    assert restarted.reconcile().processed == 3  # member3's Work new, member1's and member2's tombstoned
    clusters = {w["metadata"]["namespace"] for w in harness.works().values() if w["metadata"]["name"]}
    assert "karmada-es-member3" in clusters


def test_the_full_resync_keeps_its_schedule_across_a_restart(harness: Harness) -> None:
    _settled(harness)
    works = _work_count(harness)
    _drop_one_work(harness)
    restarted = ExecutionController(harness.uow, harness.clock)
    restarted.reconcile()
    assert _work_count(harness) == works - 1  # resumed: the watermark cannot see a removed row

    harness.clock.advance(DEFAULT_RESYNC_SECONDS)
    again = ExecutionController(harness.uow, harness.clock)
    assert again.reconcile().processed == 1  # the resync fell due: every binding rendered, one Work back
    assert _work_count(harness) == works


def test_a_checkpoint_of_another_version_is_not_resumed(harness: Harness) -> None:
    _settled(harness)
    works = _work_count(harness)
    _drop_one_work(harness)
    with harness.uow() as session:
        session.execute(update(ControllerCheckpointRow).values(code_version="0.0.0-older"))
    restarted = ExecutionController(harness.uow, harness.clock)
    assert restarted.reconcile().processed == 1  # a full pass: the removed Work is back
    assert _work_count(harness) == works
    with harness.uow() as session:  # and the checkpoint is this version's again
        assert checkpoints.load(session, "execution") is not None


@pytest.mark.parametrize(
    "state",
    [
        {},
        {"feeds": {"bindings": {"watermark": "yesterday"}}},
        {"feeds": {"bindings": None, "templates": None}},
        {"feeds": {"bindings": {"watermark": None, "moved_at": None, "last_full": None}}},
        {"feeds": {"bindings": {"watermark": None, "moved_at": None, "last_full": "2026-01-01T00:00:00"}}},
    ],
)
def test_a_malformed_checkpoint_means_a_full_pass(harness: Harness, state: dict[str, Any]) -> None:
    _settled(harness)
    works = _work_count(harness)
    _drop_one_work(harness)
    with harness.uow() as session:
        session.execute(update(ControllerCheckpointRow).values(state=state))
    restarted = ExecutionController(harness.uow, harness.clock)
    assert restarted.reconcile().processed == 1
    assert _work_count(harness) == works


def test_ids_to_revisit_survive_a_restart(harness: Harness) -> None:
    feeds = {"only": ChangeFeed()}
    feeds["only"].since(harness.clock.now())
    feeds["only"].commit(harness.clock.now())  # a full pass over an empty table
    saver = FeedCheckpoint("test")
    assert saver.save(harness.uow, feeds, {7, 5}, harness.clock.now())
    assert not saver.save(harness.uow, feeds, {5, 7}, harness.clock.now())  # unchanged: no write

    resumed = {"only": ChangeFeed()}
    loader = FeedCheckpoint("test")
    assert loader.resume(harness.uow, resumed) == {5, 7}
    assert resumed["only"].checkpoint() == feeds["only"].checkpoint()
    assert loader.resume(harness.uow, resumed) == set()  # once per controller object


def test_a_binding_backing_off_is_retried_by_the_restarted_controller(harness: Harness) -> None:
    [failing, other, *_] = _settled(harness)
    with harness.uow() as session:
        row_id = session.scalar(
            select(ResourceBindingRow.id).where(ResourceBindingRow.name == failing["metadata"]["name"])
        )
    assert row_id is not None
    harness.execution.retries.failed(row_id, harness.clock.now())  # as a failed render leaves it
    harness.edit_binding(other, schedulerName="another")  # moves the feed: the pass saves its checkpoint
    harness.execution.reconcile()
    assert row_id in harness.execution.retries.backing_off()

    restarted = ExecutionController(harness.uow, harness.clock)
    assert row_id in restarted._changed()  # handed to the first pass at once, backing off or not


def test_a_restarted_binding_status_controller_aggregates_nothing(harness: Harness) -> None:
    _settled(harness)
    restarted = BindingStatusController(harness.uow, harness.clock)
    with count_statements(harness.engine) as log, count_writes(harness.engine) as writes:
        assert restarted.reconcile().processed == 0
    assert log.count == 1 + 2, "\n".join(log.statements)  # the checkpoint and the two feeds
    assert writes == []
