"""``bulkflush.flush_rows``: a batch of loaded rows written by one UPDATE per shape, with the ORM flush's
optimistic check and change log, on both backends."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session
from sqlalchemy.orm.exc import StaleDataError

from federation.store import UnitOfWork, objects
from federation.store.bulkflush import deferred_children, flush_rows
from federation.store.manifest import join, split
from federation.store.repository import ObjectRepository
from federation.store.tables import BindingTargetClusterRow, ChangeLogRow, ResourceBindingRow

from .factories import make_binding
from .support import count_statements

BINDING = ("work.karmada.io/v1alpha2", "ResourceBinding")


def _create(uow: UnitOfWork, count: int) -> None:
    with uow() as session:
        repo = objects(session, *BINDING)
        for index in range(count):
            repo.create(make_binding(f"b{index}"))


def _rows(session: Session) -> list[ResourceBindingRow]:
    return list(session.scalars(select(ResourceBindingRow).order_by(ResourceBindingRow.name)))


def _rewrite(session: Session, row: ResourceBindingRow, **spec: object) -> None:
    """Replace the loaded ``row`` with these spec fields set (no flush: ``flush_rows`` writes it)."""
    body = join(row)
    body["spec"].update(spec)
    ObjectRepository(session, "ResourceBinding", BINDING[0]).replace_loaded(row, split(body), flush=False)


def _place(session: Session, row: ResourceBindingRow, cluster: str, replicas: int) -> None:
    _rewrite(session, row, clusters=[{"name": cluster, "replicas": replicas}])


def test_a_batch_is_one_update_with_revisions_log_rows_and_child_rows(
    uow: UnitOfWork, engine: Engine
) -> None:
    _create(uow, 5)
    with uow() as session:
        rows = _rows(session)
        before = {row.name: row.resource_version for row in rows}
        for index, row in enumerate(rows):
            _place(session, row, f"member{index}", index + 1)
        with count_statements(engine) as log:
            assert flush_rows(session, rows) == 5
        updates = [s for s in log.statements if s.lstrip().upper().startswith("UPDATE RESOURCE_BINDINGS")]
        assert len(updates) == 1  # one executemany for the five rows
        session.flush()  # the ORM now writes only the target-cluster rows
    with uow() as session:
        rows = _rows(session)
        assert [row.spec["clusters"] for row in rows] == [
            [{"name": f"member{i}", "replicas": i + 1}] for i in range(5)
        ]
        assert all(row.resource_version > before[row.name] for row in rows)
        versions = sorted(row.resource_version for row in rows)
        logged = session.scalars(select(ChangeLogRow.revision).where(ChangeLogRow.event == "MODIFIED")).all()
        assert sorted(logged) == versions  # one log row per write, at the row's new revision
        targets = session.execute(select(BindingTargetClusterRow.cluster_name)).scalars().all()
        assert sorted(targets) == [f"member{i}" for i in range(5)]


def test_the_orm_flush_afterwards_writes_no_row_again(uow: UnitOfWork, engine: Engine) -> None:
    _create(uow, 3)
    with uow() as session:
        rows = _rows(session)
        for row in rows:
            _place(session, row, "member1", 2)
        flush_rows(session, rows)
        with count_statements(engine) as log:
            session.flush()
        assert not [s for s in log.statements if s.lstrip().upper().startswith("UPDATE RESOURCE_BINDINGS")]
        assert not [s for s in log.statements if "change_log" in s]


def test_rows_written_by_children_deferred_are_clean_again(uow: UnitOfWork) -> None:
    """A batch writer's rows leave the session's modified set once written: a later autoflush (any query)
    and the commit do not compare their attributes again to find nothing to write."""
    _create(uow, 3)
    with uow() as session:
        rows = _rows(session)
        with deferred_children(session) as children:
            for row in rows:
                _place(session, row, "member1", 2)
        assert all(row in session.dirty for row in rows)
        flush_rows(session, rows, children)
        assert not [row for row in rows if row in session.dirty]
        assert [row.spec["clusters"] for row in rows] == [[{"name": "member1", "replicas": 2}]] * 3


def test_a_row_changed_by_another_writer_fails_the_batch_and_nothing_is_written(uow: UnitOfWork) -> None:
    _create(uow, 3)
    with uow() as session:
        rows = _rows(session)
        for row in rows:
            _place(session, row, "member1", 2)
        with uow() as other:  # a concurrent writer commits b1 after this session read it
            other_rows = _rows(other)
            _place(other, other_rows[1], "member9", 9)
        with pytest.raises(StaleDataError):
            flush_rows(session, rows)
        session.rollback()
    with uow() as session:
        assert [row.spec.get("clusters") for row in _rows(session)] == [
            None,
            [{"name": "member9", "replicas": 9}],
            None,
        ]


def test_queueing_expressions_are_evaluated_by_the_database(uow: UnitOfWork) -> None:
    _create(uow, 2)
    with uow() as session:
        seqs = {row.name: row.dirty_seq for row in _rows(session)}
    with uow() as session:
        rows = _rows(session)
        for row in rows:
            _place(session, row, "member1", 1)  # a spec change queues the binding: dirty_seq + 1 in SQL
        flush_rows(session, rows)
        session.flush()
    with uow() as session:
        assert {row.name: row.dirty_seq for row in _rows(session)} == {n: s + 1 for n, s in seqs.items()}


def test_unchanged_rows_write_nothing(uow: UnitOfWork, engine: Engine) -> None:
    _create(uow, 2)
    with uow() as session:
        rows = _rows(session)
        with count_statements(engine) as log:
            assert flush_rows(session, rows) == 0
        assert log.count == 0


def _evicting(session: Session, row: ResourceBindingRow, clusters: list[dict[str, object]]) -> None:
    """``clusters`` placed, member0 (if it was placed) moved to a graceful-eviction task."""
    task = {
        "fromCluster": "member0",
        "replicas": 1,
        "reason": "TaintUntolerated",
        "producer": "taint-manager",
    }
    _rewrite(session, row, clusters=clusters, gracefulEvictionTasks=[task])


def test_deferred_child_rows_are_written_set_based_and_match_the_specs(
    uow: UnitOfWork, engine: Engine
) -> None:
    _create(uow, 4)
    with uow() as session:
        rows = _rows(session)
        for row in rows:
            _place(session, row, "member0", 1)
        flush_rows(session, rows)
        session.flush()
    with uow() as session:
        rows = _rows(session)
        with deferred_children(session) as children:
            for row in rows:  # member0 removed, member1 added; b0 also changes member1's count below
                _evicting(session, row, [{"name": "member1", "replicas": 2}])
        with count_statements(engine) as log:
            assert flush_rows(session, rows, children) == 4
        targets = [s for s in log.statements if "binding_target_clusters" in s.lower()]
        tasks = [s for s in log.statements if "graceful_eviction_tasks" in s.lower()]
        assert len(targets) == 2  # one DELETE, one INSERT (executemany), whatever the number of bindings
        assert len(tasks) == 1  # one INSERT
        # The collections were expired: read now, they say what the database holds.
        assert [t.cluster_name for t in rows[0].targets] == ["member1"]
        assert [t.from_cluster for t in rows[0].eviction_tasks] == ["member0"]
        with deferred_children(session) as children:
            _evicting(
                session, rows[0], [{"name": "member1", "replicas": 5}, {"name": "member2", "replicas": 1}]
            )
        flush_rows(session, [rows[0]], children)
    with uow() as session:
        placed = session.execute(
            select(
                ResourceBindingRow.name,
                BindingTargetClusterRow.cluster_name,
                BindingTargetClusterRow.replicas,
            )
            .join(BindingTargetClusterRow, BindingTargetClusterRow.binding_id == ResourceBindingRow.id)
            .order_by(ResourceBindingRow.name, BindingTargetClusterRow.cluster_name)
        ).all()
        assert [tuple(p) for p in placed] == [
            ("b0", "member1", 5),
            ("b0", "member2", 1),
            ("b1", "member1", 2),
            ("b2", "member1", 2),
            ("b3", "member1", 2),
        ]
        for row in _rows(session):
            assert [(t.from_cluster, t.replicas, t.producer) for t in row.eviction_tasks] == [
                ("member0", 1, "taint-manager")
            ]
