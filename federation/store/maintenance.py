"""VACUUM and ANALYZE of the store's own tables, for a Postgres server that runs without autovacuum.

Why: every queue flag, claim, status and applied write leaves a dead row version. Without autovacuum the
Works and bindings tables bloat (five dead versions per live row after one pass of 10,000 bindings) and
never get planner statistics, so Postgres plans each query for tables of unknown size: a one-row probe
of the change log or a queue flag becomes a sequential scan of the whole bloated table (100 to 250 ms at
10,000 bindings, in every API write and every idle tick).

What: the decisions autovacuum would take, taken by this server for its own tables only, with the
thresholds the server is configured with (``autovacuum_vacuum_threshold`` + ``_scale_factor`` times
rows for dead rows, the ``_insert_`` pair for rows inserted since the last vacuum, the ``analyze`` pair for
rows changed since the last analyze; a table never analyzed is analyzed once it has any row).

Invariants:
- Only on Postgres, and only while ``SHOW autovacuum`` says off: with autovacuum on, ``due`` is empty
  and nothing is run (one statement per check).
- ``due`` is one statement; ``run`` one VACUUM (ANALYZE) or ANALYZE per due table, one after the other on
  one autocommit connection (VACUUM refuses a transaction block), without the session's statement timeout
  (a large table may take longer) but with its lock timeout (it never waits long behind DDL).
- Neither reads nor writes a row of ours: it is safe from any process at any time, and running it twice
  costs a second look, nothing more.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import bindparam, text
from sqlalchemy.engine import Connection, Engine

from federation.store.tables import Base

log = logging.getLogger(__name__)

# One row per table of ours: the server's own setting first (so "on" needs nothing else), then the
# counters autovacuum reads (pg_stat_user_tables) against the thresholds it would apply (pg_settings; a
# table's own storage parameters are not read: this store sets none).
_DUE_SQL = text(
    """
    SELECT s.relname,
           s.n_dead_tup > t.vacuum_base + t.vacuum_scale * greatest(c.reltuples, 0) AS vacuum_dead,
           s.n_ins_since_vacuum > t.insert_base + t.insert_scale * greatest(c.reltuples, 0)
             AS vacuum_inserted,
           s.n_mod_since_analyze > t.analyze_base + t.analyze_scale * greatest(c.reltuples, 0)
             OR (s.last_analyze IS NULL AND s.last_autoanalyze IS NULL AND s.n_live_tup > 0) AS analyze
    FROM pg_stat_user_tables s
    JOIN pg_class c ON c.oid = s.relid
    CROSS JOIN (SELECT current_setting('autovacuum_vacuum_threshold')::float AS vacuum_base,
                       current_setting('autovacuum_vacuum_scale_factor')::float AS vacuum_scale,
                       current_setting('autovacuum_vacuum_insert_threshold')::float AS insert_base,
                       current_setting('autovacuum_vacuum_insert_scale_factor')::float AS insert_scale,
                       current_setting('autovacuum_analyze_threshold')::float AS analyze_base,
                       current_setting('autovacuum_analyze_scale_factor')::float AS analyze_scale) t
    WHERE (:regardless OR current_setting('autovacuum') = 'off')
      AND s.schemaname = current_schema()
      AND s.relname IN :names
    ORDER BY s.relname
    """
).bindparams(bindparam("names", expanding=True))


@dataclass(frozen=True, slots=True)
class Due:
    """A table and what autovacuum would do to it now: VACUUM (ANALYZE), or ANALYZE alone."""

    table: str
    vacuum: bool

    @property
    def statement(self) -> str:
        return f'{"VACUUM (ANALYZE)" if self.vacuum else "ANALYZE"} "{self.table}"'


def store_tables() -> list[str]:
    """The tables the store defines (Alembic's one-row version table is not among them)."""
    return sorted(Base.metadata.tables)


def due(
    connection: Connection, tables: Sequence[str] | None = None, *, regardless_of_autovacuum: bool = False
) -> list[Due]:
    """The tables (default: the store's) that need a VACUUM or an ANALYZE now; empty on SQLite and with
    autovacuum on, unless ``regardless_of_autovacuum`` (what the thresholds alone say)."""
    if connection.dialect.name != "postgresql":
        return []
    names = list(tables if tables is not None else store_tables())
    found = []
    parameters = {"names": names, "regardless": regardless_of_autovacuum}
    for table, vacuum_dead, vacuum_inserted, analyze in connection.execute(_DUE_SQL, parameters):
        if vacuum_dead or vacuum_inserted:
            found.append(Due(table, vacuum=True))
        elif analyze:
            found.append(Due(table, vacuum=False))
    return found


def run(engine: Engine, tables: Iterable[Due]) -> list[Due]:
    """VACUUM (ANALYZE) or ANALYZE each table; the ones done. One that fails (its lock timed out, the table
    went) is logged and left to the next pass."""
    done = []
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql("SET statement_timeout = 0")
        try:
            for item in tables:
                try:
                    connection.exec_driver_sql(item.statement)
                except Exception as exc:
                    log.warning("database maintenance: %s failed: %s", item.statement, exc)
                    continue
                done.append(item)
        finally:
            connection.exec_driver_sql("RESET statement_timeout")
    return done
