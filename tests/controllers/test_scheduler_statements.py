"""The scheduler's hot path has a pinned SQL cost: clusters, WorkloadPolicies and templates are read once
per cycle whatever the batch size, and the batch's writes are a fixed handful of statements, child rows
included (``store.childwrites``): a binding adds none of its own."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.controllers.test_scheduler import DYNAMIC, Harness, deployment, policy
from tests.store.support import count_statements

# Per cycle: claim changed clusters, claim bindings (the rows whole, by the claim's RETURNING),
# WorkloadPolicies, clusters, templates.
PER_CYCLE = 5
# Per batch write (``store.binding_writes``, from the rows the cycle read: none read again): the batch's
# global revisions (one statement) and change-log rows (one executemany); the bindings' UPDATEs (one
# executemany, each row checking the resourceVersion it was read at); one event upsert; the claims'
# release, clearing the dirty flags (one statement on Postgres, two elsewhere: ``claims.release``).
# (Bindings placed before would add one DELETE of their old target rows; these are placed for the first
# time.)
PER_BATCH = {"postgresql": 5, "sqlite": 6}
# Per binding: nothing of its own.
PER_BINDING = 0
# The target rows of every binding of the batch: one INSERT (executemany); the decision records: one.
ROW_INSERTS = 2


@pytest.fixture
def harness(database_url: str) -> Iterator[Harness]:
    running = Harness(database_url)
    yield running
    running.close()


def _reads_of(statements: list[str], table: str) -> int:
    pattern = re.compile(rf"\bFROM {table}\b")
    return sum(1 for s in statements if s.lstrip().upper().startswith("SELECT") and pattern.search(s))


@pytest.mark.parametrize("count", [1, 8])
def test_statement_count_is_pinned(harness: Harness, count: int) -> None:
    harness.add_cluster("member1")
    harness.add_cluster("member2")
    harness.create(policy("all", {"replicaScheduling": DYNAMIC}))
    for index in range(count):
        harness.create(deployment(f"app{index}", 2))
    harness.detector.reconcile()
    harness.scheduler._requeue_for_cluster_changes()  # the clusters' creation, outside the measured cycle
    with count_statements(harness.engine) as log:
        outcome = harness.scheduler.reconcile()
    assert outcome.processed == count
    assert _reads_of(log.statements, "clusters") == 1
    assert _reads_of(log.statements, "workload_policies") == 1
    assert _reads_of(log.statements, "resource_templates") == 1
    expected = PER_CYCLE + PER_BATCH[harness.engine.dialect.name] + PER_BINDING * count + ROW_INSERTS
    assert log.count == expected, "\n".join(log.statements)


def test_a_pass_reads_clusters_and_workload_policies_once_for_all_its_batches(database_url: str) -> None:
    harness = Harness(database_url, batch_size=2)
    try:
        harness.add_cluster("member1")
        harness.create(policy("all", {"replicaScheduling": DYNAMIC}))
        for index in range(5):
            harness.create(deployment(f"app{index}", 1))
        harness.detector.reconcile()
        harness.scheduler._requeue_for_cluster_changes()
        with count_statements(harness.engine) as log:
            assert harness.scheduler.reconcile().processed == 5
        assert _reads_of(log.statements, "clusters") == 1
        assert _reads_of(log.statements, "workload_policies") == 1
        assert _reads_of(log.statements, "resource_templates") == 3  # one per batch: 2 + 2 + 1
    finally:
        harness.close()
