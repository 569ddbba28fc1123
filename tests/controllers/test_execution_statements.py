"""The execution controller's hot path has a pinned SQL cost: a batch of bindings is read by a fixed
handful of queries (Works as summaries, without their manifests), only the Works a plan rewrites are
loaded whole, and the batch's writes are a fixed handful of statements, whatever the number of bindings.
An unchanged Work costs no write at all."""

from __future__ import annotations

import re
from typing import Any

import pytest

from federation.store.bindings import BindingRepository
from federation.store.repository import ObjectRepository
from federation.store.works import WorkRepository
from tests.controllers.test_execution_support import Harness, count_writes, harness, nginx
from tests.store.support import count_statements

__all__ = ["harness"]  # the fixture, re-exported for pytest

CLUSTERS = ("member1", "member2", "member3")

# Per pass: the two change feeds (bindings written, templates written) and the orphan scan.
PER_PASS = 3
# The feeds' checkpoint (``feed_checkpoint``): a process's first pass reads it and, its full pass done,
# saves one; a later pass saves one when its feeds moved (a binding written since).
CHECKPOINT_FIRST = 2
CHECKPOINT_SAVE = 1
# Per batch read: the bindings (no status), their templates, their Works as summaries, and the Works at
# desired keys that no binding of the batch owns yet (Works it may adopt).
PER_BATCH_READ = 4
# Creating the Works: the batch's global revisions (one statement) and change-log rows (one executemany).
CREATE_LOG = 2
# The Work INSERTs: one executemany for the batch on both backends (``work_writes.insert_new``; the ORM's
# flush went row by row on SQLite, where it cannot match a batch's RETURNING rows to its objects).
WORK_INSERTS = 1
# Rewriting Works: load the rewritten rows whole (one query), their revisions, their change-log rows and
# their UPDATE (one executemany, each row checking the resourceVersion it was read at: ``bulkflush``).
REWRITE = 4


def _placement(replicas: list[int]) -> list[dict[str, Any]]:
    return [{"name": c, "replicas": r} for c, r in zip(CLUSTERS, replicas, strict=True)]


def _setup(h: Harness, count: int, clusters: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """``count`` bindings of 6 replicas (by default 1, 2 and 3 on the three clusters)."""
    bindings = []
    for index in range(count):
        template = h.add_template(nginx(f"app{index}", replicas=6))
        bindings.append(h.add_binding(template, clusters or _placement([1, 2, 3])))
    return bindings


def _whole_work_reads(statements: list[str]) -> list[str]:
    """Reads of Works with their manifests (the orphan scan aside): summaries select ``spec`` only inside
    a JSON function."""
    return [
        s
        for s in statements
        if s.lstrip().upper().startswith("SELECT")
        and re.search(r"\bworks\.spec\b", s)
        and "json" not in s.lower()
        and "binding_id IS NULL" not in s
    ]


def _reads_of(statements: list[str], table: str) -> int:
    pattern = re.compile(rf"\bFROM {table}\b")
    return sum(1 for s in statements if s.lstrip().upper().startswith("SELECT") and pattern.search(s))


@pytest.mark.parametrize("count", [1, 8])
def test_first_render_of_a_batch_is_a_fixed_number_of_statements(harness: Harness, count: int) -> None:
    _setup(harness, count)
    with count_statements(harness.engine) as log:
        outcome = harness.execution.reconcile()
    assert outcome.processed == 3 * count
    assert _reads_of(log.statements, "resource_bindings") == 1 + 2  # the batch, and the two feeds
    assert _reads_of(log.statements, "resource_templates") == 1
    assert log.count == CHECKPOINT_FIRST + PER_PASS + PER_BATCH_READ + CREATE_LOG + WORK_INSERTS, "\n".join(
        log.statements
    )


@pytest.mark.parametrize("count", [1, 8])
def test_rewriting_every_work_of_a_batch_is_a_fixed_number_of_statements(
    harness: Harness, count: int
) -> None:
    bindings = _setup(harness, count)
    harness.execution.reconcile()
    for binding in bindings:
        harness.edit_binding(binding, clusters=_placement([3, 2, 1]))  # member2's Work stays as it is
    with count_statements(harness.engine) as log:
        outcome = harness.execution.reconcile()
    assert outcome.processed == 2 * count
    assert len(_whole_work_reads(log.statements)) == 1  # only the rewritten Works, by one query
    assert log.count == PER_PASS + PER_BATCH_READ - 1 + REWRITE + CHECKPOINT_SAVE, "\n".join(log.statements)


def test_a_binding_write_that_changes_no_work_writes_nothing(harness: Harness) -> None:
    [binding] = _setup(harness, 1)
    harness.execution.reconcile()
    before = harness.versions()
    harness.edit_binding(binding, schedulerName="default-scheduler")  # rendering does not read it
    with count_writes(harness.engine) as writes, count_statements(harness.engine) as log:
        outcome = harness.execution.reconcile()
    # No Work written: the one write is where the feeds now stand.
    assert [w.split()[2] for w in writes] == ["controller_checkpoints"] and outcome.processed == 0
    assert (
        log.count == PER_PASS + PER_BATCH_READ - 1 + CHECKPOINT_SAVE
    )  # every desired key owned: no adoption query
    after = harness.versions()
    assert {k: v for k, v in after.items() if k[0] == "Work"} == {
        k: v for k, v in before.items() if k[0] == "Work"
    }


# Tombstoning Works: their stored columns for the events (one query, no ORM rows), their revisions,
# their change-log rows and their UPDATE (one executemany, each row checking its resourceVersion).
TOMBSTONE = 4


@pytest.mark.parametrize("count", [1, 8])
def test_moving_a_batch_off_clusters_is_a_fixed_number_of_statements(harness: Harness, count: int) -> None:
    bindings = _setup(harness, count)
    harness.execution.reconcile()
    for binding in bindings:
        harness.edit_binding(binding, clusters=[{"name": "member1", "replicas": 6}])
    with count_statements(harness.engine) as log:
        outcome = harness.execution.reconcile()
    assert outcome.processed == 3 * count  # member1's Work rewritten, member2's and member3's tombstoned
    # The rewritten Works (ORM rows), and the tombstoned ones' columns for their events (Core rows).
    assert len(_whole_work_reads(log.statements)) == 2
    assert log.count == PER_PASS + PER_BATCH_READ - 1 + REWRITE + TOMBSTONE + CHECKPOINT_SAVE, "\n".join(
        log.statements
    )
    with harness.uow() as session:
        works, _ = WorkRepository(session).objects.list()
    deleting = sorted((w["metadata"]["namespace"], "deletionTimestamp" in w["metadata"]) for w in works)
    assert deleting == sorted(
        (f"karmada-es-{cluster}", cluster != "member1") for cluster in CLUSTERS for _ in range(count)
    )


@pytest.mark.parametrize("count", [1, 8])
def test_a_status_write_of_a_batch_is_read_but_not_rendered(harness: Harness, count: int) -> None:
    """Binding status writes every binding's status many times over its life: each shows the binding in the
    feed, but nothing its Works are rendered from changed: the binding and template reads, no Work read."""
    bindings = _setup(harness, count)
    harness.execution.reconcile()
    for binding in bindings:
        meta = binding["metadata"]
        with harness.uow() as session:
            objects = BindingRepository(session).objects(meta["namespace"])
            objects.update_status(meta["namespace"], meta["name"], {"conditions": [{"type": "FullyApplied"}]})
    with count_writes(harness.engine) as writes, count_statements(harness.engine) as log:
        outcome = harness.execution.reconcile()
    assert writes == [] and outcome.processed == 0
    assert _reads_of(log.statements, "works") == 1  # the orphan scan alone
    assert log.count == PER_PASS + 2, "\n".join(log.statements)  # the bindings and their templates


def test_status_writes_outside_the_window_do_not_show_in_the_feeds(harness: Harness) -> None:
    """The feeds follow ``content_updated_at``: once their window settled, a status write of a binding or
    of its template (binding status writes both for every Work status change) shows them nothing."""
    [binding] = _setup(harness, 1)
    harness.execution.reconcile()
    harness.clock.advance(60)
    harness.execution.reconcile()  # the window settles after the watermark stood still for its overlap
    meta = binding["metadata"]
    with harness.uow() as session:
        objects = BindingRepository(session).objects(meta["namespace"])
        objects.update_status(meta["namespace"], meta["name"], {"conditions": [{"type": "FullyApplied"}]})
        template = ObjectRepository(session, "Deployment", "apps/v1")
        template.update_status(meta["namespace"], "app0", {"replicas": 6})
    with count_statements(harness.engine) as log:
        assert harness.execution.reconcile().processed == 0
    assert log.count == PER_PASS, "\n".join(log.statements)  # the feeds and the orphan scan: nothing read


@pytest.mark.parametrize("count", [1, 8])
def test_a_batch_that_rewrites_and_creates_is_a_fixed_number_of_statements(
    harness: Harness, count: int
) -> None:
    """New Works and rewritten ones in one batch (a failover: replicas spread onto another cluster): the
    inserts must not flush the rewritten rows one by one before their batch UPDATE."""
    two = [{"name": "member1", "replicas": 3}, {"name": "member2", "replicas": 3}]
    bindings = _setup(harness, count, two)
    harness.execution.reconcile()
    for binding in bindings:
        harness.edit_binding(binding, clusters=_placement([2, 2, 2]))  # member3's Work is new
    with count_statements(harness.engine) as log:
        outcome = harness.execution.reconcile()
    assert outcome.processed == 3 * count
    assert log.count == PER_PASS + PER_BATCH_READ + REWRITE + CREATE_LOG + WORK_INSERTS + CHECKPOINT_SAVE, (
        "\n".join(log.statements)
    )
