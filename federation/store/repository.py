"""The generic repository for every API-object table, speaking plain Kubernetes-shaped dicts.

Invariants:
- ``resourceVersion`` is the global revision of the object's last write (``changelog``): every write that
  changes something takes the next one, across all kinds (a no-op replace writes nothing and keeps it).
  A stale ``metadata.resourceVersion`` is refused up front; a writer that raced past that check still
  loses at flush (``UPDATE ... WHERE resource_version = :seen``).
- ``generation`` starts at 1 and is bumped only when ``spec`` changes (for kinds without ``spec``: the
  top-level body beyond metadata/status). Status writes and metadata-only writes never bump it.
- ``replace`` keeps ``status``, ``uid`` and ``creationTimestamp``; status is written only by
  ``update_status``.
- Lists are ordered by (namespace, name) and paged by keyset (see ``pagination``).
- ``create`` reads nothing first: the table's unique key on the object's name is the existence check, so
  a taken name fails the INSERT and is ``AlreadyExists`` (only that key's violation: any other integrity
  error stays what it is). The flush has failed then, so the transaction is lost, as after any failed
  write: the caller rolls back (the API answers 409 and rolls back anyway).
- A caller that loaded a row (``find_row``) and writes it next hands it back (``replace``'s ``current``),
  so a read-modify-write reads the row once.
- Never commits; flushes so errors surface inside the call that caused them.
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, UniqueConstraint, and_, bindparam, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from sqlalchemy.orm.exc import StaleDataError

from federation.model.jsonvalue import clone
from federation.store import changelog, dependents, derive, pagination, template_writes
from federation.store.dialect import among
from federation.store.errors import AlreadyExists, Conflict, NotFound
from federation.store.kinds import table_for
from federation.store.manifest import Parts, generation_content, join, split, view
from federation.store.tables import ObjectMixin, ResourceTemplateRow, table_of
from federation.store.types import utcnow

Selector = Callable[[dict[str, str]], bool]
Clock = Callable[[], datetime]

# Rows fetched per round trip while a Python-side label selector filters a page.
SELECTOR_BATCH = 200


# The column bindings and templates stamp on every write but a status-only one (``ResourceBindingRow``).
CONTENT_STAMP = "content_updated_at"


class ObjectRepository:
    """CRUD for one kind (``apiVersion`` + ``kind``) on whichever table stores it."""

    def __init__(self, session: Session, kind: str, api_version: str, *, clock: Clock = utcnow) -> None:
        self.session = session
        self.kind = kind
        self.api_version = api_version
        choice = table_for(api_version, kind)
        self.table = choice.table
        self._match_kind = choice.match_kind
        self._match_api_version = choice.match_api_version
        self._clock = clock

    def clock(self) -> datetime:
        """The repository's clock (what it stamps ``updated_at`` with)."""
        return self._clock()

    # -- reads -----------------------------------------------------------------------------------------

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        row = self.find_row(namespace or "", name)
        return None if row is None else join(row)

    def list(
        self,
        namespace: str | None = None,
        *,
        selector: Selector | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> tuple[builtins.list[dict[str, Any]], str | None]:
        """One page of objects (all namespaces when ``namespace`` is None) and the token for the next."""
        cursor = pagination.decode(continue_token) if continue_token else None
        limit = limit if limit and limit > 0 else None
        rows = self._matching_rows(namespace, selector, limit, cursor)
        if limit is None or len(rows) <= limit:
            return [join(row) for row in rows], None
        page = rows[:limit]
        token = pagination.encode(pagination.Cursor(page[-1].namespace, page[-1].name))
        return [join(row) for row in page], token

    def _matching_rows(
        self,
        namespace: str | None,
        selector: Selector | None,
        limit: int | None,
        cursor: pagination.Cursor | None,
    ) -> builtins.list[ObjectMixin]:
        """Up to ``limit + 1`` matching rows after ``cursor`` (the extra one proves a next page exists)."""
        if limit is None:
            return [row for row in self._rows_after(namespace, cursor, None) if _selected(row, selector)]
        wanted = limit + 1
        batch = wanted if selector is None else max(wanted, SELECTOR_BATCH)
        matches: builtins.list[ObjectMixin] = []
        # A selector may reject rows, so keep reading batches until the page is full or rows run out.
        while len(matches) < wanted:
            rows = self._rows_after(namespace, cursor, batch)
            matches.extend(row for row in rows if _selected(row, selector))
            if len(rows) < batch:
                break
            cursor = pagination.Cursor(rows[-1].namespace, rows[-1].name)
        return matches[:wanted]

    def _rows_after(
        self, namespace: str | None, cursor: pagination.Cursor | None, limit: int | None
    ) -> builtins.list[ObjectMixin]:
        table = self.table
        statement = select(table).where(*self._scope(namespace)).order_by(table.namespace, table.name)
        if cursor is not None:
            statement = statement.where(_after(table, cursor))
        if limit is not None:
            statement = statement.limit(limit)
        return builtins.list(self.session.scalars(statement))

    def find_row(self, namespace: str, name: str) -> ObjectMixin | None:
        """The ORM row: for typed repositories in this package, and for a caller that reads an object and
        then writes it (``replace(..., current=row)``); other callers use ``get``."""
        params = {"namespace": namespace, "name": name}
        if self._match_kind:
            params["kind"] = self.kind
        if self._match_api_version:
            params["api_version"] = self.api_version
        statement = _find_statement(self.table, self._match_kind, self._match_api_version)
        return self.session.scalars(statement, params).one_or_none()

    def require_row(self, namespace: str, name: str) -> ObjectMixin:
        row = self.find_row(namespace, name)
        if row is None:
            raise NotFound(self.kind, namespace, name)
        return row

    def _scope(self, namespace: str | None) -> builtins.list[ColumnElement[bool]]:
        conditions: builtins.list[ColumnElement[bool]] = []
        if self._match_kind:
            conditions.append(self.table.kind == self.kind)
        if self._match_api_version:
            conditions.append(self.table.api_version == self.api_version)
        if namespace is not None:
            conditions.append(self.table.namespace == namespace)
        return conditions

    # -- writes ----------------------------------------------------------------------------------------

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Insert the object; ``AlreadyExists`` when its name is taken (from the INSERT itself: no SELECT
        first, see the module docstring)."""
        parts = split(obj)
        self._check_kind(parts)
        if self.table is ResourceTemplateRow and template_writes.insertable(parts):
            return self._insert_template(parts)
        row = self._new_row(parts)
        derive.refresh(self.session, row, old_spec=None, created=True)
        self.session.add(row)
        self._flush(row, creating=True)
        return join(row)

    def _insert_template(self, parts: Parts) -> dict[str, Any]:
        """``create`` of a template as column values (``template_writes``): the same row and event."""
        try:
            return template_writes.insert_new(self.session, parts, self.kind, self.api_version, self._clock())
        except IntegrityError as exc:
            if _violates(exc, _name_key(self.table)):
                raise AlreadyExists(self.kind, parts.namespace, parts.name) from exc
            raise

    def create_pending(self, obj: Mapping[str, Any], **columns: Any) -> ObjectMixin:
        """``create`` for batch writers: no existence check and no flush (the caller's one flush inserts
        the batch; a duplicate name fails it with ``IntegrityError``). ``columns`` presets derived
        columns the caller already knows (a Work's ``binding_id``), sparing their look-up."""
        parts = split(obj)
        self._check_kind(parts)
        row = self._new_row(parts)
        for column, value in columns.items():
            setattr(row, column, value)
        derive.refresh(self.session, row, old_spec=None, created=True)
        self.session.add(row)
        return row

    def _new_row(self, parts: Parts) -> ObjectMixin:
        now = self._clock()
        factory: Callable[..., ObjectMixin] = self.table
        return factory(
            uid=str(uuid.uuid4()),
            api_version=parts.api_version or self.api_version,
            kind=self.kind,
            namespace=parts.namespace,
            name=parts.name,
            generation=1,
            labels=parts.labels,
            annotations=parts.annotations,
            metadata_extra=parts.metadata_extra,
            spec=parts.spec,
            status=parts.status,
            extra=parts.extra,
            created_at=now,
            updated_at=now,
            **({CONTENT_STAMP: now} if hasattr(factory, CONTENT_STAMP) else {}),
        )

    def replace(self, obj: Mapping[str, Any], *, current: ObjectMixin | None = None) -> dict[str, Any]:
        """Replace labels, annotations, metadata and body; ``status`` and server metadata are kept.

        ``current``: the object's row, as this session's ``find_row`` returned it (spares reading it again).
        """
        parts = split(obj)
        self._check_kind(parts)
        row = current if current is not None else self.require_row(parts.namespace, parts.name)
        self.replace_loaded(row, parts)
        return join(row)

    def replace_loaded(self, row: ObjectMixin, parts: Parts, *, flush: bool = True) -> bool:
        """``replace`` on a row this session already loaded (batch writers load theirs in one query).

        With ``flush=False`` the UPDATE waits for the caller's flush, so a batch of rows is written by
        one flush; a lost race then surfaces there (``StaleDataError``). True when something changed.
        """
        self._check_version(row, parts.resource_version)
        if not _differs(row, parts):
            return False
        old_spec = row.spec
        if generation_content(row.spec, row.extra) != generation_content(parts.spec, parts.extra):
            row.generation += 1
        _assign(row, parts)
        row.updated_at = self._clock()
        if hasattr(row, CONTENT_STAMP):  # bindings and templates: what follows their content reads this
            setattr(row, CONTENT_STAMP, row.updated_at)
        derive.refresh(self.session, row, old_spec=old_spec, created=False)
        if flush:
            self._flush(row)
        return True

    def update_status(
        self,
        namespace: str | None,
        name: str,
        status: Any,
        expected_rv: str | int | None = None,
        *,
        current: ObjectMixin | None = None,
    ) -> dict[str, Any]:
        """Write ``status`` only; never bumps ``generation``. ``current`` as for ``replace``."""
        row = current if current is not None else self.require_row(namespace or "", name)
        self._check_version(row, None if expected_rv is None else str(expected_rv))
        self.update_status_loaded(row, status)
        return join(row)

    def update_status_loaded(
        self, row: ObjectMixin, status: Any, *, flush: bool = True, owned: bool = False
    ) -> bool:
        """``update_status`` on a loaded row (see ``replace_loaded``); True when the status changed.

        ``owned``: the caller built ``status`` for this write and never edits it again, so the row keeps it
        as it is instead of a copy."""
        if row.status == status:
            return False
        row.status = status if owned else clone(status)
        row.updated_at = self._clock()
        derive.refresh(self.session, row, old_spec=row.spec, created=False, content_changed=False)
        if flush:
            self._flush(row)
        return True

    def delete(
        self, namespace: str | None, name: str, expected_rv: str | int | None = None
    ) -> dict[str, Any]:
        """Delete now (no finalizers) and return the last state; child rows go by ON DELETE CASCADE."""
        row = self.require_row(namespace or "", name)
        self._check_version(row, None if expected_rv is None else str(expected_rv))
        last = join(row)
        dependents.before_delete(self.session, row)
        changelog.delete_returning(self.session, self.table, self.table.id == row.id)
        self.session.expunge(row)
        return last

    # -- helpers ---------------------------------------------------------------------------------------

    def _check_kind(self, parts: Parts) -> None:
        if parts.kind and parts.kind != self.kind:
            raise ValueError(f"object of kind {parts.kind!r} given to the {self.kind} repository")
        if not parts.name:
            raise ValueError(f"{self.kind} without metadata.name")

    def _check_version(self, row: ObjectMixin, expected: str | None) -> None:
        if expected is not None and expected != str(row.resource_version):
            detail = f"resourceVersion {expected} is stale (current {row.resource_version})"
            raise Conflict(self.kind, row.namespace, row.name, detail)

    def _flush(self, row: ObjectMixin, *, creating: bool = False) -> None:
        # Read the name first: after a failed flush the row's attributes can no longer be loaded.
        namespace, name = row.namespace, row.name
        try:
            self.session.flush()
        except StaleDataError as exc:
            raise Conflict(self.kind, namespace, name) from exc
        except IntegrityError as exc:
            if creating and _violates(exc, _name_key(type(row))):  # the name is taken (module docstring)
                raise AlreadyExists(self.kind, namespace, name) from exc
            raise


def objects(session: Session, api_version: str, kind: str, *, clock: Clock = utcnow) -> ObjectRepository:
    """The repository for ``apiVersion``/``kind``, whatever table stores it."""
    return ObjectRepository(session, kind, api_version, clock=clock)


def manifests_by_id(
    session: Session, table: type[ObjectMixin], ids: Sequence[int], *, shared: bool = False
) -> dict[int, dict[str, Any]]:
    """Row id → manifest for these ids of one table, in id order (one query; deleted ids are absent).
    ``shared``: views (``manifest.view``) instead of copies, for a reader that never mutates them."""
    if not ids:
        return {}
    statement = select(table).where(among(session, table.id, ids)).order_by(table.id)
    manifest = view if shared else join
    return {row.id: manifest(row) for row in session.scalars(statement)}


def _name_key(model: type[ObjectMixin]) -> UniqueConstraint:
    """The table's unique key on the object's identity (``name`` with namespace, and kind where shared)."""
    table = table_of(model)
    for constraint in table.constraints:
        if isinstance(constraint, UniqueConstraint) and "name" in constraint.columns:
            return constraint
    raise AssertionError(f"{table.name} has no unique key on name")


def _violates(exc: IntegrityError, key: UniqueConstraint) -> bool:
    """Whether ``exc`` is a violation of ``key``: Postgres names the constraint; SQLite names its columns
    (``UNIQUE constraint failed: t.a, t.b``)."""
    diag = getattr(exc.orig, "diag", None)
    if diag is not None:
        return bool(diag.constraint_name == key.name)
    columns = ", ".join(f"{column.table.name}.{column.name}" for column in key.columns)
    return str(exc.orig) == f"UNIQUE constraint failed: {columns}"


# ``find_row``'s statements by (table, matches kind, matches apiVersion); a race builds one twice, harmlessly.
_FIND_STATEMENTS: dict[tuple[Any, bool, bool], Select[Any]] = {}


def _find_statement(table: type[ObjectMixin], match_kind: bool, match_api_version: bool) -> Select[Any]:
    """``find_row``'s SELECT, built once per table and scope with its values as parameters: building it per
    call (the clauses, then the cache key SQLAlchemy derives from them) was half of a lookup's CPU."""
    key = (table, match_kind, match_api_version)
    statement = _FIND_STATEMENTS.get(key)
    if statement is None:
        conditions: builtins.list[ColumnElement[bool]] = []
        if match_kind:
            conditions.append(table.kind == bindparam("kind"))
        if match_api_version:
            conditions.append(table.api_version == bindparam("api_version"))
        conditions += [table.namespace == bindparam("namespace"), table.name == bindparam("name")]
        statement = _FIND_STATEMENTS[key] = select(table).where(*conditions)
    return statement


def _selected(row: ObjectMixin, selector: Selector | None) -> bool:
    return selector is None or selector(dict(row.labels or {}))


def _after(table: type[ObjectMixin], cursor: pagination.Cursor) -> ColumnElement[bool]:
    # Row-value comparison spelled out: (namespace, name) > (:ns, :name) on every backend.
    return or_(
        table.namespace > cursor.namespace,
        and_(table.namespace == cursor.namespace, table.name > cursor.name),
    )


def _differs(row: ObjectMixin, parts: Parts) -> bool:
    return (
        row.labels != parts.labels
        or row.annotations != parts.annotations
        or row.metadata_extra != parts.metadata_extra
        or row.spec != parts.spec
        or row.extra != parts.extra
        or (bool(parts.api_version) and row.api_version != parts.api_version)
    )


def _assign(row: ObjectMixin, parts: Parts) -> None:
    row.api_version = parts.api_version or row.api_version
    row.labels = parts.labels
    row.annotations = parts.annotations
    row.metadata_extra = parts.metadata_extra
    row.spec = parts.spec
    row.extra = parts.extra
