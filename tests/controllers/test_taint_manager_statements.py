"""The taint manager's eviction pass has a pinned SQL cost that does not grow with the bindings evicted:
the batch's rows are read together, written by one UPDATE (``store.bulkflush``) and one change-log insert,
with the eviction-task rows, history and events as one statement each."""

from __future__ import annotations

import pytest

from tests.controllers.test_failover import STATIC_1_2, Failover
from tests.controllers.test_scheduler import deployment, policy
from tests.store.support import count_statements

# Everything but the eviction-task and target-row writes, whose statement count SQLite's driver makes
# per row (Postgres batches them: insertmanyvalues, executemany).
PER_PASS = {"sqlite": 10, "postgresql": 10}


def _evict_all(database_url: str, count: int) -> tuple[int, list[str], str]:
    fo = Failover(database_url)
    try:
        for index in range(1, 4):
            fo.add_cluster(f"member{index}")
        names = [f"web{i}" for i in range(count)]
        fo.create(policy("pp", STATIC_1_2, names=names))
        for name in names:
            fo.create(deployment(name, 3))
        fo.run()
        fo.taint("member1", "maintenance")
        with count_statements(fo.engine) as log:
            fo.taints.reconcile()
        assert all("member1" not in fo.placement(f"{n}-deployment") for n in names)
        per_row = [
            s
            for s in log.statements
            if s.lstrip().upper().startswith(("INSERT INTO GRACEFUL", "DELETE FROM BINDING_TARGET"))
        ]
        return log.count - len(per_row), log.statements, fo.engine.dialect.name
    finally:
        fo.close()


@pytest.mark.parametrize("count", [1, 6])
def test_an_eviction_pass_costs_the_same_statements_for_one_binding_or_many(
    database_url: str, count: int
) -> None:
    statements, log, dialect = _evict_all(database_url, count)
    assert statements == PER_PASS[dialect], "\n".join(log)
