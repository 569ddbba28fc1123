"""The work queues' indexes serve the queries that read the queues, on both backends (migration 0012).

A queue's index holds only its dirty rows (``tables.base.queue_index``). A partial index serves a query
only when the planner can prove the query's condition implies the index's predicate, so these tests ask
each backend's planner for the plan of the idle probe (``claims.claimable``) and of the claim query
(``claims.claim``'s SELECT) and find the queue's index in it. On Postgres sequential scans are disabled for
the question, so the answer is whether the index *can* serve (it does not depend on the table's size or
its statistics, which is what made Postgres scan whole tables at rest with the old full indexes).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.sql import Select

from federation.store import claims
from federation.store.tables import (
    ClusterPropagationPolicyRow,
    ClusterRow,
    PropagationPolicyRow,
    ResourceBindingRow,
    ResourceTemplateRow,
    WorkRow,
    table_of,
)

# Every table ``claims.Claimable`` names.
QUEUES = (
    ClusterRow,
    ResourceTemplateRow,
    PropagationPolicyRow,
    ClusterPropagationPolicyRow,
    ResourceBindingRow,
    WorkRow,
)
NOW = datetime(2026, 11, 27, 16, 0, tzinfo=UTC)


def plan(engine: Engine, statement: Select[Any]) -> str:
    compiled = statement.compile(dialect=engine.dialect)
    params = compiled.construct_params()
    with engine.connect() as connection:
        if engine.dialect.name == "postgresql":
            connection.exec_driver_sql("SET enable_seqscan = off")
            rows = connection.exec_driver_sql(f"EXPLAIN {compiled.string}", params).fetchall()
        else:
            positional = tuple(params[name] for name in compiled.positiontup or ())
            rows = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled.string}", positional).fetchall()
    return "\n".join(str(row[-1]) for row in rows)


@pytest.mark.parametrize("table", QUEUES, ids=lambda t: t.__tablename__)
def test_the_idle_probe_of_a_queue_reads_its_partial_index(engine: Engine, table: Any) -> None:
    index = f"ix_{table.__tablename__}_{table.dirty_flag}_queued"
    assert index in plan(engine, select(claims.claimable(table, NOW)))


@pytest.mark.parametrize("table", QUEUES, ids=lambda t: t.__tablename__)
def test_the_claim_query_of_a_queue_reads_its_partial_index(engine: Engine, table: Any) -> None:
    index = f"ix_{table.__tablename__}_{table.dirty_flag}_queued"
    t = table_of(table)
    statement = select(t.c.id).where(*claims._claimable(table, NOW)).order_by(t.c.id).limit(100)
    assert index in plan(engine, statement)


def test_each_queue_index_holds_only_dirty_rows(engine: Engine) -> None:
    for table in QUEUES:
        (index,) = [i for i in table_of(table).indexes if i.name.endswith("_queued")]
        where = index.dialect_options[engine.dialect.name]["where"]
        assert f"{table.dirty_flag} IS" in str(where) and [c.name for c in index.columns] == ["id"]
