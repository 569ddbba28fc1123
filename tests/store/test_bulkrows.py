"""``bulkrows``: many rows inserted or updated by one statement store exactly what SQLAlchemy's executemany
stores (types processed, defaults applied, JSON null kept), report the rows matched, and refuse a batch
whose rows disagree on their columns before sending anything; on both backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, Text, cast, insert, select
from sqlalchemy.exc import IntegrityError, StatementError

from federation.store import bulkrows
from federation.store.bulkrows import OnConflict, delete_rows, insert_columns, insert_rows, update_rows
from federation.store.tables import ChangeLogRow, EventRow, SchedulingDecisionRow, table_of

from .support import T0, count_statements

LOG = table_of(ChangeLogRow)
DECISIONS = table_of(SchedulingDecisionRow)


def _log_row(revision: int, **overrides: Any) -> dict[str, Any]:
    row = {
        "revision": revision,
        "event": "ADDED",
        "api_version": "v1",
        "kind": "ConfigMap",
        "namespace": "default",
        "name": f"c{revision}",
        # Characters a hand-built array literal would get wrong: quotes, braces, commas, backslashes.
        "object": {"data": {"k": "a'b\"c{d},e\\f", "n": revision, "ü": [1, None, True]}},
        "previous_labels": None,
        "created_at": T0 + timedelta(seconds=revision),
    }
    row.update(overrides)
    return row


def _stored(engine: Engine, table: Any, order: Any) -> list[dict[str, Any]]:
    with engine.connect() as connection:
        return [dict(r._mapping) for r in connection.execute(select(table).order_by(order))]


def test_inserted_rows_equal_the_executemany_ones(engine: Engine) -> None:
    rows = [_log_row(n) for n in range(1, 4)]
    with engine.begin() as connection:
        assert insert_rows(connection, LOG, rows) == 3
        same = [_log_row(n + 10, object=_log_row(n)["object"]) for n in range(1, 4)]
        connection.execute(insert(LOG), same)
    stored = _stored(engine, LOG, LOG.c.revision)
    bulk, each = stored[:3], stored[3:]
    for mine, theirs in zip(bulk, each, strict=True):
        assert mine["revision"] + 10 == theirs["revision"]
        assert mine["created_at"] + timedelta(seconds=10) == theirs["created_at"]
        for key in ("event", "kind", "object", "previous_labels"):
            assert mine[key] == theirs[key]
    assert bulk[0]["object"]["data"]["k"] == "a'b\"c{d},e\\f"
    # A Python None in a JSON column is JSON null for both, not SQL NULL (SQLAlchemy's none_as_null=False).
    with engine.connect() as connection:
        nulls = connection.execute(select(LOG.c.revision).where(LOG.c.previous_labels.is_(None))).all()
    assert nulls == []


def test_columns_left_out_get_their_python_defaults(engine: Engine) -> None:
    row = {
        "binding_uid": "u1",
        "binding_kind": "ResourceBinding",
        "binding_name": "b",
        "binding_generation": 1,
        "created_at": T0,
        "result": "Success",
    }
    with engine.begin() as connection:
        insert_rows(connection, DECISIONS, [row, {**row, "binding_uid": "u2"}])
    stored = _stored(engine, DECISIONS, DECISIONS.c.id)
    assert [
        (r["binding_uid"], r["binding_namespace"], r["message"], r["clusters"], r["explanation"])
        for r in stored
    ] == [
        ("u1", "", "", [], {}),
        ("u2", "", "", [], {}),
    ]


def test_one_statement_for_the_batch_on_postgres(engine: Engine) -> None:
    with engine.begin() as connection, count_statements(engine) as statements:
        insert_rows(connection, LOG, [_log_row(n) for n in range(1, 501)])
    if engine.dialect.name == "postgresql":
        assert statements.count == 1
    assert len(_stored(engine, LOG, LOG.c.revision)) == 500


def test_a_batch_past_the_byte_budget_goes_as_several_statements_of_one_transaction(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """libpq keeps a connection's output buffer as large as its largest message: a batch is cut into
    statements under ``MAX_STATEMENT_BYTES``, all rows written, matched rows counted across them."""
    monkeypatch.setattr(bulkrows, "MAX_STATEMENT_BYTES", 8_000)
    rows = [_log_row(n, object={"pad": "x" * 100, "n": n}) for n in range(1, 201)]  # ~30 KB of JSON
    with engine.begin() as connection, count_statements(engine) as statements:
        assert insert_rows(connection, LOG, rows) == 200
    if engine.dialect.name == "postgresql":
        assert 4 <= statements.count <= 8
    assert [r["object"]["n"] for r in _stored(engine, LOG, LOG.c.revision)] == list(range(1, 201))
    changes = [((n, f"c{n}"), {"object": {"pad": "y" * 100, "n": -n}}) for n in range(1, 201)]
    with engine.begin() as connection, count_statements(engine) as statements:
        assert update_rows(connection, LOG, ("revision", "name"), changes) == 200
    if engine.dialect.name == "postgresql":
        assert 4 <= statements.count <= 8
    assert [r["object"]["n"] for r in _stored(engine, LOG, LOG.c.revision)] == [-n for n in range(1, 201)]


def test_a_cut_batch_whose_last_statement_fails_leaves_no_row_of_it(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulkrows, "MAX_STATEMENT_BYTES", 8_000)
    rows = [_log_row(n, object={"pad": "x" * 100}) for n in range(1, 201)]
    rows[-1]["revision"] = 1  # the last statement repeats the first row's key
    with pytest.raises(IntegrityError), engine.begin() as connection:
        insert_rows(connection, LOG, rows)
    assert _stored(engine, LOG, LOG.c.revision) == []


def test_a_batch_whose_rows_differ_is_refused_before_anything_is_sent(engine: Engine) -> None:
    rows = [_log_row(1), {k: v for k, v in _log_row(2).items() if k != "previous_labels"}]
    with engine.begin() as connection, pytest.raises(ValueError, match="every row of a batch"):
        insert_rows(connection, LOG, rows)
    assert _stored(engine, LOG, LOG.c.revision) == []


def test_a_naive_datetime_is_refused_as_the_column_type_refuses_it(engine: Engine) -> None:
    naive = datetime(2026, 5, 1, 12, 0)
    with engine.begin() as connection, pytest.raises((ValueError, StatementError), match="naive datetime"):
        insert_rows(connection, LOG, [_log_row(1, created_at=naive)])


def test_update_sets_each_rows_values_and_the_shared_ones_and_counts_the_matched(engine: Engine) -> None:
    with engine.begin() as connection:
        insert_rows(connection, LOG, [_log_row(n) for n in range(1, 4)])
    later = datetime(2026, 6, 1, tzinfo=UTC)
    rows = [
        ((1, "c1"), {"event": "MODIFIED", "object": {"n": 1}}),
        ((2, "c2"), {"event": "MODIFIED", "object": {"n": 2}}),
        ((3, "not-its-name"), {"event": "MODIFIED", "object": {"n": 3}}),  # matches nothing
    ]
    shared = {"created_at": later, "previous_labels": None, "kind": LOG.c.kind + "s"}
    with engine.begin() as connection:
        matched = update_rows(connection, LOG, ("revision", "name"), rows, shared)
    assert matched == 2
    stored = {r["revision"]: r for r in _stored(engine, LOG, LOG.c.revision)}
    assert [(stored[n]["event"], stored[n]["object"], stored[n]["kind"]) for n in (1, 2)] == [
        ("MODIFIED", {"n": 1}, "ConfigMaps"),
        ("MODIFIED", {"n": 2}, "ConfigMaps"),
    ]
    assert stored[1]["created_at"] == later
    assert (stored[3]["event"], stored[3]["kind"], stored[3]["created_at"]) == (
        "ADDED",
        "ConfigMap",
        T0 + timedelta(seconds=3),
    )


def test_an_upsert_adds_and_replaces_the_named_columns_of_an_existing_row(engine: Engine) -> None:
    events = table_of(EventRow)
    repeated = OnConflict(keys=("dedup_key",), add=("count",), replace=("last_timestamp",))

    def event(key: str, count: int, at: datetime) -> dict[str, Any]:
        return {
            "dedup_key": key,
            "involved_kind": "ResourceBinding",
            "involved_name": key,
            "type": "Normal",
            "reason": "Scheduled",
            "count": count,
            "first_timestamp": at,
            "last_timestamp": at,
        }

    later = T0 + timedelta(minutes=5)
    with engine.begin() as connection:
        insert_rows(connection, events, [event("a", 1, T0), event("b", 2, T0)], repeated)
        insert_rows(connection, events, [event("b", 3, later), event("c", 1, later)], repeated)
    stored = {r["dedup_key"]: r for r in _stored(engine, events, events.c.dedup_key)}
    assert {k: (r["count"], r["first_timestamp"], r["last_timestamp"]) for k, r in stored.items()} == {
        "a": (1, T0, T0),
        "b": (5, T0, later),
        "c": (1, later, later),
    }


def test_delete_removes_exactly_the_rows_of_the_ids(engine: Engine) -> None:
    row = {"binding_uid": "u", "binding_kind": "ResourceBinding", "binding_name": "b", "created_at": T0}
    with engine.begin() as connection:
        insert_rows(
            connection, DECISIONS, [{**row, "binding_generation": g, "result": "Success"} for g in range(5)]
        )
    ids = [r["id"] for r in _stored(engine, DECISIONS, DECISIONS.c.id)]
    with engine.begin() as connection:
        assert delete_rows(connection, DECISIONS, [ids[1], ids[3], 10**9]) == 2
        assert delete_rows(connection, DECISIONS, []) == 0
    assert [r["binding_generation"] for r in _stored(engine, DECISIONS, DECISIONS.c.id)] == [0, 2, 4]


def test_rows_given_by_column_are_the_rows_given_by_row(engine: Engine) -> None:
    rows = [_log_row(n) for n in range(1, 4)]
    columns = {key: [row[key] for row in rows] for key in rows[0]}
    columns["revision"] = [n + 10 for n in columns["revision"]]
    columns["name"] = [f"{name}x" for name in columns["name"]]
    with engine.begin() as connection:
        insert_rows(connection, LOG, rows)
        assert insert_columns(connection, LOG, columns) == 3
        assert insert_columns(connection, LOG, {"revision": [], "event": []}) == 0
    stored = _stored(engine, LOG, LOG.c.revision)
    for by_row, by_column in zip(stored[:3], stored[3:], strict=True):
        assert by_column == {**by_row, "revision": by_row["revision"] + 10, "name": f"{by_row['name']}x"}


def test_columns_of_unequal_length_are_refused_before_anything_is_sent(engine: Engine) -> None:
    with (
        engine.begin() as connection,
        count_statements(engine) as log,
        pytest.raises(ValueError, match="every column"),
    ):
        insert_columns(connection, LOG, {"revision": [1, 2], "event": ["ADDED"]})
    assert log.count == 0


def test_values_orjson_refuses_or_writes_its_own_way_are_stored_as_the_executemany_stores_them(
    engine: Engine,
) -> None:
    """On Postgres a column travels as one JSON array written by orjson; a document orjson refuses (a key
    that is not a string, an integer past 64 bits) is written as the column's bind processing writes it.
    Text past ASCII, control characters, quotes and microseconds come back as they went in."""
    at = T0 + timedelta(microseconds=123456)
    odd = {
        "object": {1: "int key", "big": 2**70, "text": 'ü ☃ \x01 "q" \\ \u2028'},
        "name": 'nämé "x" \t',
        "previous_labels": {"app": "ü"},
        "created_at": at,
    }
    plain = {"object": {"k": "v"}, "name": "plain", "previous_labels": None, "created_at": at}
    with engine.begin() as connection:
        insert_rows(connection, LOG, [_log_row(1, **odd), _log_row(2, **plain)])
        connection.execute(insert(LOG), [_log_row(11, **odd), _log_row(12, **plain)])
    with engine.connect() as connection:
        texts = dict(connection.execute(select(LOG.c.revision, cast(LOG.c.object, Text))).all())
    stored = {r["revision"]: r for r in _stored(engine, LOG, LOG.c.revision)}
    for bulk, each in ((1, 11), (2, 12)):
        assert {**stored[bulk], "revision": each} == stored[each]
        assert texts[bulk] == texts[each]  # the json column keeps the text it was given: the same text
    assert stored[1]["object"] == {"1": "int key", "big": 2**70, "text": 'ü ☃ \x01 "q" \\ \u2028'}
    assert (stored[1]["name"], stored[1]["created_at"]) == ('nämé "x" \t', at)


def test_an_update_matches_on_text_columns_whatever_their_characters(engine: Engine) -> None:
    names = ["plain", 'quo"te', "back\\slash", "ünï", "com,ma {brace}"]
    with engine.begin() as connection:
        insert_rows(connection, LOG, [_log_row(n, name=name) for n, name in enumerate(names, 1)])
        rows = [((name,), {"event": "MODIFIED"}) for name in names]
        assert update_rows(connection, LOG, ("name",), rows) == len(names)
    assert {r["event"] for r in _stored(engine, LOG, LOG.c.revision)} == {"MODIFIED"}
