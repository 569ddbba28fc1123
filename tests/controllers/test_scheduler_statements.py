"""The scheduler's hot path has a pinned SQL cost: clusters, WorkloadPolicies and templates are read once
per cycle whatever the batch size, and each binding costs a fixed number of statements."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.controllers.test_scheduler import DYNAMIC, Harness, deployment, policy
from tests.store.support import count_statements

# Per cycle: claim changed clusters, claim bindings, load the batch's bindings, WorkloadPolicies,
# clusters, templates.
PER_CYCLE = 6
# Per binding: read it, re-read + lazy-load its target rows for the spec write, the spec UPDATE, the
# target-row INSERTs, re-read + status UPDATE, the decision INSERT, the event upsert + read-back, clear
# the dirty flag, release the claim.
PER_BINDING = 11
# The 2 target rows: one INSERT each on SQLite, one batched INSERT (insertmanyvalues) on Postgres.
TARGET_INSERTS = {"sqlite": 2, "postgresql": 1}


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
    per_binding = PER_BINDING + TARGET_INSERTS[harness.engine.dialect.name]
    assert log.count == PER_CYCLE + per_binding * count, "\n".join(log.statements)
