"""The scheduler's hot path has a pinned SQL cost: clusters, WorkloadPolicies and templates are read once
per cycle whatever the batch size, the batch's writes are a fixed handful of statements, and each binding
adds only its own UPDATE."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.controllers.test_scheduler import DYNAMIC, Harness, deployment, policy
from tests.store.support import count_statements

# Per cycle: claim changed clusters, claim bindings, load the batch's bindings, WorkloadPolicies,
# clusters, templates.
PER_CYCLE = 6
# Per batch write: load the rows, their target rows and eviction-task rows; the batch's global revisions
# (one statement) and change-log rows (one executemany); one event upsert, clear the dirty flags
# (executemany), release the claims.
PER_BATCH = 8
# Per binding: its UPDATE (spec + status in one; not batched, because queueing is a SQL expression).
PER_BINDING = 1
# The 2 target rows and the decision record of each binding: one INSERT each on SQLite; on Postgres one
# batched INSERT (insertmanyvalues) per table for the whole batch.
ROW_INSERTS = {"sqlite": lambda count: 3 * count, "postgresql": lambda count: 2}


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
    inserts = ROW_INSERTS[harness.engine.dialect.name](count)
    expected = PER_CYCLE + PER_BATCH + PER_BINDING * count + inserts
    assert log.count == expected, "\n".join(log.statements)
