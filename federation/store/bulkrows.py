"""Inserting and updating many rows by one statement: on Postgres one array per column, unnested;
elsewhere an executemany.

Why: SQLAlchemy sends a Core executemany without RETURNING through psycopg's pipeline as one statement
per row. 10,000 rows of (binding_id, cluster_name, replicas) took 134 to 166 ms that way and 34 to 39 ms
as ``INSERT ... SELECT * FROM unnest(CAST(%(c0)b AS BIGINT[]), ...)``: one statement, parsed and planned
once, one parameter per column whatever the row count. The arrays are sent in binary format (``%(c0)b``,
the driver's own placeholder): in text format psycopg escapes every element of an array by a regular
expression, which for 1,000 change-log objects (JSON, full of quotes) cost seconds; binary needs no
escaping. Where a column's values are plain JSON (text, integers, booleans, datetimes, JSON documents) they
are sent instead as ONE JSON array per column, written by orjson in C and split by Postgres
(``json_array_elements``): psycopg dumps a binary array element by element in Python, on the thread that
holds the GIL the scheduler's decisions need (bench_rebalance: the scheduler's pass 3-8% shorter). Other
columns (bytes, floats, a value orjson refuses) keep the binary array. SQLAlchemy's own multi-VALUES paging
(``insertmanyvalues``, which the psycopg dialect does not use without RETURNING) was no faster here.
The batch writers (bindings, their target clusters, Works and their tombstones, the change log,
decisions, failover history) write hundreds to thousands of rows per transaction.

Invariants:
- The same rows as the executemany would write: each value goes through its column type's bind
  processing (JSON serialised by the engine's serializer, Python ``None`` in a JSON column stored as JSON
  null exactly as SQLAlchemy stores it, ``UTCDateTime`` refusing naive datetimes), and an inserted row
  gets the Python-side default of every column it does not give, as SQLAlchemy gives it.
- Every row of one call has the same columns (executemany's contract too); a row that differs is a
  programming error, refused before anything is sent.
- ``update_rows`` reports the rows the database matched, so a caller's optimistic check (the
  resourceVersion it read among the matched columns) works as with one UPDATE per row. A batch never
  names one row twice.
- A statement's parameters stay under ``MAX_STATEMENT_BYTES``: a larger batch goes as several statements
  of consecutive rows, in the caller's transaction, so it commits or rolls back as one. Why: libpq keeps
  each connection's output buffer as large as the largest message it ever sent (it grows, it is never
  shrunk). One round of work status wrote 2,000 Works' change-log entries as a 9 MB statement, and every
  pooled connection that once sent such a batch held ~8 MB for the rest of the process's life (heaptrack:
  40 MB of the controllers' process at 5,000 bindings, the largest holder of its heap).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import orjson
from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Connection,
    Date,
    DateTime,
    Integer,
    String,
    Table,
    and_,
    bindparam,
    delete,
    insert,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.elements import ClauseElement

from federation import jsoncodec
from federation.store.dialect import among

MAX_STATEMENT_BYTES = 1 << 20  # the parameters' text and bytes, per statement (see the invariants)

# One row of ``update_rows``: the values of its ``match`` columns, and column name → its new value.
UpdateRow = tuple[Sequence[Any], Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class OnConflict:
    """An upsert: a row whose ``keys`` exist already adds its ``add`` columns to the stored ones and
    replaces its ``replace`` columns. A batch must not name one key twice (Postgres refuses to update a
    row twice in one statement)."""

    keys: tuple[str, ...]
    add: tuple[str, ...] = ()
    replace: tuple[str, ...] = ()


def insert_rows(
    connection: Connection,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    on_conflict: OnConflict | None = None,
) -> int:
    """Insert ``rows`` (column name → value) into ``table``; the rows inserted or upserted."""
    if not rows:
        return 0
    keys = _same_keys(table, rows)
    if connection.dialect.name != "postgresql":
        connection.execute(_upsert(table, on_conflict, connection.dialect), [dict(row) for row in rows])
        return len(rows)
    return insert_columns(connection, table, {key: [row[key] for row in rows] for key in keys}, on_conflict)


def insert_columns(
    connection: Connection,
    table: Table,
    columns: Mapping[str, Sequence[Any]],
    on_conflict: OnConflict | None = None,
) -> int:
    """``insert_rows`` for rows given by column (column name → its values, one per row, all as long), as
    a writer of many narrow rows builds them: no dict per row."""
    keys = tuple(columns)
    count = len(columns[keys[0]]) if keys else 0
    if any(len(values) != count for values in columns.values()):
        raise ValueError(f"{table.name}: every column of a batch must have a value for each of its rows")
    if not count:
        return 0
    dialect = connection.dialect
    if dialect.name != "postgresql":
        rows = [dict(zip(keys, values, strict=True)) for values in zip(*columns.values(), strict=True)]
        connection.execute(_upsert(table, on_conflict, dialect), rows)
        return count
    defaulted = _defaulted(table, keys)
    names = keys + tuple(column.name for column, _ in defaulted)
    given = [(table.c[key], list(columns[key])) for key in keys]
    given += [(column, [value] * count) for column, value in defaulted]
    params: dict[str, Any] = {}
    modes = tuple(
        _encode(params, f"c{i}", column, values, dialect) for i, (column, values) in enumerate(given)
    )
    step = _rows_per_statement(params, count)
    if step < count:
        for start in range(0, count, step):
            part = {key: values[start : start + step] for key, values in columns.items()}
            insert_columns(connection, table, part, on_conflict)
        return count
    connection.exec_driver_sql(_insert_sql(table, names, modes, on_conflict, dialect), params)
    return count


def update_rows(
    connection: Connection,
    table: Table,
    match: Sequence[str],
    rows: Sequence[UpdateRow],
    shared: Mapping[str, Any] | None = None,
) -> int:
    """For each row, ``UPDATE table SET <its values>, <shared> WHERE <match columns> = <its match values>``
    as one statement; ``shared`` values (constants or SQL expressions) are set on every row. The count of
    rows the database matched (the caller compares it with ``len(rows)``)."""
    if not rows:
        return 0
    match = tuple(match)
    keys = _same_keys(table, [values for _, values in rows])
    shared = dict(shared or {})
    dialect = connection.dialect
    if dialect.name != "postgresql":
        return _update_each(connection, table, match, keys, rows, shared)
    params: dict[str, Any] = {}
    modes = tuple(
        _encode(params, f"m{i}", table.c[name], [row[0][i] for row in rows], dialect)
        for i, name in enumerate(match)
    ) + tuple(
        _encode(params, f"c{i}", table.c[key], [row[1][key] for row in rows], dialect)
        for i, key in enumerate(keys)
    )
    constants: list[tuple[str, Any]] = []
    expressions: list[tuple[str, str]] = []
    for name, value in sorted(shared.items()):
        if isinstance(value, ClauseElement):
            expressions.append(
                (name, str(value.compile(dialect=dialect, compile_kwargs={"literal_binds": True})))
            )
        else:
            params[f"s{len(constants)}"] = _array(table.c[name], [value], dialect)[0]
            constants.append((name, table.c[name].type.compile(dialect=dialect)))
    step = _rows_per_statement(params, len(rows))
    if step < len(rows):
        return sum(
            update_rows(connection, table, match, rows[start : start + step], shared)
            for start in range(0, len(rows), step)
        )
    sql = _update_sql(table, match, keys, modes, tuple(constants), tuple(expressions), dialect)
    return int(connection.exec_driver_sql(sql, params).rowcount)


def _rows_per_statement(params: Mapping[str, Any], count: int) -> int:
    """How many of the batch's ``count`` rows one statement may carry: all of them while the encoded
    parameters stay under ``MAX_STATEMENT_BYTES``, else an even share of as many statements as the size
    needs (a row larger than the budget alone still goes, alone). The shares are encoded again: only a
    batch past the budget pays that (~10 ms of orjson per 9 MB), and its size is known only once encoded."""
    size = sum(_encoded_size(value) for value in params.values())
    if size <= MAX_STATEMENT_BYTES or count <= 1:
        return count
    statements = min(count, -(-size // MAX_STATEMENT_BYTES))
    return -(-count // statements)


def _encoded_size(value: Any) -> int:
    if isinstance(value, str | bytes):
        return len(value)
    if isinstance(value, list):  # a binary array: its text and bytes elements (numbers are small)
        return sum(len(item) for item in value if isinstance(item, str | bytes))
    return 0


def delete_rows(connection: Connection, table: Table, ids: Sequence[int]) -> int:
    """Delete the rows of ``table`` with these ids; the rows deleted. On Postgres the ids are one array
    (``id = ANY(...)``): an ``IN`` list of 10,000 ids is 10,000 parameters to render, split and bind."""
    if not ids:
        return 0
    return int(connection.execute(delete(table).where(among(connection, table.c.id, ids))).rowcount)


def _update_each(
    connection: Connection,
    table: Table,
    match: tuple[str, ...],
    keys: tuple[str, ...],
    rows: Sequence[UpdateRow],
    shared: dict[str, Any],
) -> int:
    values: dict[str, Any] = {key: bindparam(f"c_{key}", type_=table.c[key].type) for key in keys}
    values.update(shared)
    condition = and_(*(table.c[name] == bindparam(f"m_{name}", type_=table.c[name].type) for name in match))
    params = [
        {**{f"m_{name}": m for name, m in zip(match, matched, strict=True)}, **{f"c_{k}": v[k] for k in keys}}
        for matched, v in rows
    ]
    return int(connection.execute(update(table).where(condition).values(values), params).rowcount)


def _same_keys(table: Table, rows: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    keys = tuple(rows[0])
    for row in rows:
        if len(row) != len(keys) or any(key not in row for key in keys):
            raise ValueError(f"{table.name}: every row of a batch must have the columns {sorted(keys)}")
    return keys


def _array(column: Column[Any], values: list[Any], dialect: Dialect) -> list[Any]:
    process = column.type.dialect_impl(dialect).bind_processor(dialect)
    return values if process is None else [process(value) for value in values]


def _defaulted(table: Table, keys: tuple[str, ...]) -> list[tuple[Column[Any], Any]]:
    """The columns not given whose value SQLAlchemy computes in Python (scalar or callable defaults)."""
    out: list[tuple[Column[Any], Any]] = []
    for column in table.columns:
        default = column.default
        if column.name in keys or default is None or not (default.is_scalar or default.is_callable):
            continue
        # SQLAlchemy wraps a zero-argument callable (``dict``, ``utcnow``) to take the execution context.
        value = default.arg(None) if default.is_callable else default.arg  # type: ignore[attr-defined]
        out.append((column, value))
    return out


# How one column's values travel (``_encode``): a JSON array of scalars, a JSON array of JSON documents, or
# psycopg's binary array of the bind-processed values.
TEXT, DOCUMENT, ARRAY = "text", "document", "array"
_SCALARS = (String, Integer, Boolean, DateTime, Date)


def _encode(
    params: dict[str, Any], name: str, column: Column[Any], values: list[Any], dialect: Dialect
) -> str:
    """Put the column's values into ``params[name]`` and say how they travel (a mode above)."""
    processed = _array(column, values, dialect)
    impl = column.type.dialect_impl(dialect)
    if isinstance(impl, JSON) and all(value is not None for value in processed):
        # The bind processor wrapped each document for psycopg (None there would be SQL NULL: not JSON).
        params[name] = _documents_array([value.obj for value in processed])
        return DOCUMENT
    scalars = _scalars_array(processed) if isinstance(impl, _SCALARS) else None
    if scalars is not None:
        params[name] = scalars
        return TEXT
    params[name] = processed
    return ARRAY


def _scalars_array(values: list[Any]) -> str | None:
    """The JSON array of bind-processed scalars: orjson writes str, int, bool, None and aware datetimes as
    Postgres reads them back. None where orjson refuses one (an integer past 64 bits): the binary way."""
    try:
        return orjson.dumps(values).decode()
    except TypeError:
        return None


def _documents_array(documents: list[Any]) -> str:
    """The JSON array of ``documents``, each as the column's bind processing writes it alone
    (``jsoncodec.dumps``): orjson for the lot unless it refuses one, then document by document."""
    try:
        return orjson.dumps(documents).decode()
    except TypeError:
        return "[" + ",".join(jsoncodec.dumps(document) for document in documents) + "]"


def _source(name: str, mode: str, column: Column[Any], dialect: Dialect) -> tuple[str, str]:
    """The set-returning function that yields the column's values (one item of ``ROWS FROM``) and the
    typed value of its output ``r.<name>``."""
    type_ = column.type.compile(dialect=dialect)
    if mode == ARRAY:
        return f"unnest(CAST(%({name})b AS {type_}[]))", f"r.{name}"
    function = "json_array_elements" if mode == DOCUMENT else "json_array_elements_text"
    return f"{function}(CAST(%({name})s AS json))", f"CAST(r.{name} AS {type_})"


def _rows_from(sources: Sequence[tuple[str, str, Column[Any]]], dialect: Dialect) -> str:
    """``SELECT <typed values> FROM ROWS FROM (<one function per column>) AS r(<names>)`` over
    (parameter name, mode, column) triples: the batch as rows of typed columns named as the parameters."""
    made = [(name, *_source(name, mode, column, dialect)) for name, mode, column in sources]
    values = ", ".join(f"{value} AS {name}" for name, _, value in made)
    functions = ", ".join(function for _, function, _ in made)
    return f"SELECT {values} FROM ROWS FROM ({functions}) AS r({', '.join(name for name, _, _ in made)})"


def _upsert(table: Table, on_conflict: OnConflict | None, dialect: Dialect) -> Any:
    if on_conflict is None:
        return insert(table)
    statement = (postgresql.insert if dialect.name == "postgresql" else sqlite.insert)(table)
    excluded = statement.excluded
    set_ = {name: table.c[name] + excluded[name] for name in on_conflict.add}
    set_.update({name: excluded[name] for name in on_conflict.replace})
    return statement.on_conflict_do_update(index_elements=list(on_conflict.keys), set_=set_)


@lru_cache(maxsize=256)
def _insert_sql(
    table: Table,
    names: tuple[str, ...],
    modes: tuple[str, ...],
    on_conflict: OnConflict | None,
    dialect: Dialect,
) -> str:
    quote = dialect.identifier_preparer.quote
    sources = [(f"c{i}", mode, table.c[n]) for i, (n, mode) in enumerate(zip(names, modes, strict=True))]
    rows = _rows_from(sources, dialect)
    columns = ", ".join(quote(name) for name in names)
    target = dialect.identifier_preparer.format_table(table)
    sql = f"INSERT INTO {target} ({columns}) {rows}"
    if on_conflict is None:
        return sql
    assignments = [f"{quote(n)} = {target}.{quote(n)} + EXCLUDED.{quote(n)}" for n in on_conflict.add]
    assignments += [f"{quote(n)} = EXCLUDED.{quote(n)}" for n in on_conflict.replace]
    conflict = ", ".join(quote(n) for n in on_conflict.keys)
    return f"{sql} ON CONFLICT ({conflict}) DO UPDATE SET {', '.join(assignments)}"


@lru_cache(maxsize=256)
def _update_sql(
    table: Table,
    match: tuple[str, ...],
    keys: tuple[str, ...],
    modes: tuple[str, ...],
    constants: tuple[tuple[str, str], ...],
    expressions: tuple[tuple[str, str], ...],
    dialect: Dialect,
) -> str:
    quote = dialect.identifier_preparer.quote
    target = dialect.identifier_preparer.format_table(table)
    named = [(f"m{i}", table.c[name]) for i, name in enumerate(match)]
    named += [(f"c{i}", table.c[key]) for i, key in enumerate(keys)]
    rows = _rows_from([(n, mode, column) for (n, column), mode in zip(named, modes, strict=True)], dialect)
    assignments = [f"{quote(key)} = v.c{i}" for i, key in enumerate(keys)]
    assignments += [f"{quote(name)} = CAST(%(s{i})b AS {type_})" for i, (name, type_) in enumerate(constants)]
    assignments += [f"{quote(name)} = {sql}" for name, sql in expressions]
    where = " AND ".join(f"{target}.{quote(name)} = v.m{i}" for i, name in enumerate(match))
    return f"UPDATE {target} SET {', '.join(assignments)} FROM ({rows}) AS v WHERE {where}"


__all__ = ["OnConflict", "UpdateRow", "delete_rows", "insert_columns", "insert_rows", "update_rows"]
