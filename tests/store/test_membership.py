"""``dialect.among`` / ``pairs_among``: the rows a long membership list matches are the ``IN`` list's on
both backends (empty lists, duplicates, values that match nothing), and on Postgres the statement's text
does not grow with the list (one array parameter per column)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Column, Engine, Integer, MetaData, String, Table, insert, select, tuple_
from sqlalchemy.orm import Session

from federation.store.dialect import among, pairs_among

from .support import count_statements

ROWS = Table(
    "membership_rows",
    MetaData(),
    Column("id", Integer, primary_key=True),
    Column("namespace", String(64), nullable=False),
    Column("name", String(64), nullable=False),
)
STORED = [(i, f"ns{i % 3}", f"n{i}") for i in range(1, 41)]


@pytest.fixture
def rows(engine: Engine) -> Engine:
    ROWS.create(engine, checkfirst=True)
    with engine.begin() as connection:
        connection.execute(ROWS.delete())
        connection.execute(insert(ROWS), [{"id": i, "namespace": ns, "name": n} for i, ns, n in STORED])
    return engine


def _ids(engine: Engine, condition: object) -> list[int]:
    with Session(engine) as session:
        return list(session.scalars(select(ROWS.c.id).where(condition).order_by(ROWS.c.id)))  # type: ignore[arg-type]


def _pair_ids(engine: Engine, pairs: Sequence[tuple[str, str]]) -> tuple[list[int], list[int]]:
    with Session(engine) as session:
        mine = pairs_among(session, (ROWS.c.namespace, ROWS.c.name), pairs)
        order = ROWS.c.id
        got = list(session.scalars(select(ROWS.c.id).where(mine).order_by(order)))
        want = list(
            session.scalars(
                select(ROWS.c.id).where(tuple_(ROWS.c.namespace, ROWS.c.name).in_(pairs)).order_by(order)
            )
        )
    return got, want


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(-5, 50), max_size=60))
def test_among_matches_the_in_list(rows: Engine, values: list[int]) -> None:
    with Session(rows) as session:
        assert _ids(rows, among(session, ROWS.c.id, values)) == _ids(rows, ROWS.c.id.in_(values))
    assert _ids(rows, ROWS.c.id.in_(values)) == sorted({v for v in values if 1 <= v <= 40})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["ns0", "ns1", "ns2", "other"]),
            st.sampled_from(["n1", "n2", "n3", "n4", "n39", "x"]),
        ),
        max_size=30,
    )
)
def test_pairs_among_matches_the_tuple_in_list(rows: Engine, pairs: list[tuple[str, str]]) -> None:
    got, want = _pair_ids(rows, pairs)
    assert got == want


def test_the_statement_does_not_grow_with_the_list_on_postgres(rows: Engine) -> None:
    texts = []
    for count in (2, 500):
        with count_statements(rows) as log, Session(rows) as session:
            session.scalars(select(ROWS.c.id).where(among(session, ROWS.c.id, range(count)))).all()
            pairs = [("ns1", f"n{i}") for i in range(count)]
            session.scalars(
                select(ROWS.c.id).where(pairs_among(session, (ROWS.c.namespace, ROWS.c.name), pairs))
            ).all()
        texts.append(log.statements)
    if rows.dialect.name == "postgresql":
        assert texts[0] == texts[1]  # one array parameter per column, whatever the count
    else:
        assert len(texts[1][0]) > len(texts[0][0])  # SQLite: the plain IN list
