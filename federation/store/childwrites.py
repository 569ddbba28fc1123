"""Child-row changes (a binding's target-cluster and eviction-task rows) collected for set-based writes.

A batch writer that rewrites hundreds of bindings opens ``bulkflush.deferred_children``: while it is open,
``derive`` records each binding's child-row changes here instead of editing the ORM collections, and
``bulkflush.flush_rows`` sends them as one DELETE, one UPDATE per shape and one INSERT per table.

Invariants:
- The same rows as the ORM collections would write (``derive`` computes both from the same diff).
- Deletes go first: a cluster that leaves and comes back in one batch must not trip
  ``UNIQUE(binding_id, cluster_name)``.
- The parents' collections are expired once written: in this transaction they are read again from the
  database, never from the stale in-memory lists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import inspect
from sqlalchemy.orm import Session

from federation.store.bulkrows import UpdateRow, delete_rows, insert_rows, update_rows

CHILD_WRITES = "federation.child_writes"


@dataclass
class ChildWrites:
    deletes: dict[Any, list[int]] = field(default_factory=dict)  # table -> row ids
    inserts: dict[Any, list[dict[str, Any]]] = field(default_factory=dict)  # table -> values
    updates: dict[tuple[Any, tuple[str, ...]], list[UpdateRow]] = field(default_factory=dict)

    def delete(self, child: Any) -> None:
        self.deletes.setdefault(_table(type(child)), []).append(child.id)

    def insert(self, model: type[Any], values: dict[str, Any]) -> None:
        self.inserts.setdefault(_table(model), []).append(values)

    def update(self, child: Any, values: dict[str, Any]) -> None:
        key = (_table(type(child)), tuple(sorted(values)))
        self.updates.setdefault(key, []).append(((child.id,), values))

    def __bool__(self) -> bool:
        return bool(self.deletes or self.inserts or self.updates)

    def write(self, session: Session) -> None:
        """Send the collected changes: per table one DELETE, one UPDATE per set of columns, one INSERT."""
        connection = session.connection()
        for table, ids in self.deletes.items():
            delete_rows(connection, table, ids)
        for (table, _), changed in self.updates.items():
            update_rows(connection, table, ("id",), changed)
        for table, added in self.inserts.items():
            insert_rows(connection, table, added)


def _table(model: type[Any]) -> Any:
    return inspect(model).local_table


__all__ = ["CHILD_WRITES", "ChildWrites"]
