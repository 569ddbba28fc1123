"""Works: per-cluster and per-binding queries, orphans, the sync flag, and push-mode claiming.

Invariants:
- Sync bookkeeping (``needs_sync``) is written with Core statements, so marking a Work synced does not
  bump its ``resourceVersion`` (it is not an API change).
- ``claim_for_push`` never claims a Work of a Pull-mode cluster: its agent pulls it, and the flag stays
  set for the agent to see. A cluster without ``spec.syncMode`` (or without a Cluster row) is Push.
- Every query here is one statement, whatever the number of bindings or Works asked about.
- A ``WorkSummary`` is a Work without its manifests: they are represented by ``manifest_hash``, which
  ``derive`` recomputes on every write of the spec, so an equal ``SpecDigest`` means an equal spec.
- A ``WorkStatusView`` carries the identities of the manifests, computed by the database from the stored
  spec (Secret manifests are sealed only in their data, so their identities read as they were written).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ColumnElement, case, func, literal_column, select, type_coerce, update
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Session

from federation.model.work import ManifestIdentity, WorkStatusView
from federation.store import claims, work_writes
from federation.store.claims import Claim
from federation.store.derive import manifest_hash
from federation.store.dialect import among, pairs_among
from federation.store.errors import NotFound
from federation.store.kinds import WORK_API_VERSION
from federation.store.manifest import join
from federation.store.repository import Clock, ObjectRepository, manifests_by_id
from federation.store.sealing import SECRET_BOX, unseal_work_spec
from federation.store.tables import (
    EXECUTION_SPACE_PREFIX,
    ClusterRow,
    ObjectMixin,
    ResourceBindingRow,
    WorkRow,
    table_of,
)
from federation.store.types import utcnow

KIND = "Work"
PULL = "Pull"


@dataclass(frozen=True, slots=True)
class SpecDigest:
    """A Work spec as compared without loading its manifests: everything but ``workload.manifests``
    verbatim, and the manifests by their hash (``derive.manifest_hash``, the ``manifest_hash`` column)."""

    rest: Any
    manifests_hash: str

    @classmethod
    def of(cls, spec: Any) -> SpecDigest:
        """The digest of a spec in memory (what a stored Work with this spec summarises to)."""
        return cls(spec_without_manifests(spec), manifest_hash(spec if isinstance(spec, Mapping) else {}))


@dataclass(frozen=True, slots=True)
class WorkSummary:
    """A Work without its manifests: what deciding whether to rewrite it needs (see the invariants)."""

    id: int
    binding_id: int | None
    namespace: str
    name: str
    resource_version: int
    labels: dict[str, Any]
    annotations: dict[str, Any]
    metadata_extra: dict[str, Any]
    spec: SpecDigest


@dataclass(frozen=True, slots=True)
class WorkToSync:
    """What pushing a Work to its member reads of it: its execution namespace (which names the cluster),
    its spec (Secret data unsealed) and whether it is tombstoned. No status, labels or the other columns."""

    namespace: str
    spec: Mapping[str, Any]
    deleting: bool


def carries_secret(row: ObjectMixin) -> bool:
    """Whether the Work's manifests include a v1 Secret: its data is sealed by the ORM flush's hooks
    (``sealing``), so a writer that bypasses the ORM (``bulkflush``) must leave this row to the flush."""
    return work_writes.spec_carries_secret(row.spec)


def spec_without_manifests(spec: Any) -> Any:
    """``spec`` less ``workload.manifests`` (as ``_spec_without_manifests`` computes it in SQL)."""
    workload = spec.get("workload") if isinstance(spec, Mapping) else None
    if not isinstance(workload, Mapping) or "manifests" not in workload:
        return spec
    return {**spec, "workload": {k: v for k, v in workload.items() if k != "manifests"}}


def execution_namespace(cluster_name: str) -> str:
    """``karmada-es-<cluster>``: where a cluster's Works live."""
    return EXECUTION_SPACE_PREFIX + cluster_name


class WorkRepository:
    def __init__(self, session: Session, *, clock: Clock = utcnow) -> None:
        self.session = session
        self.objects = ObjectRepository(session, KIND, WORK_API_VERSION, clock=clock)

    def on_cluster(self, cluster_name: str) -> list[dict[str, Any]]:
        return self._where(WorkRow.cluster_name == cluster_name)

    def for_binding(self, namespace: str, name: str) -> list[dict[str, Any]]:
        """Works rendered from the binding ``namespace/name`` ("" namespace: a ClusterResourceBinding)."""
        statement = (
            select(WorkRow)
            .join(ResourceBindingRow, WorkRow.binding_id == ResourceBindingRow.id)
            .where(ResourceBindingRow.namespace == namespace, ResourceBindingRow.name == name)
            .order_by(WorkRow.namespace, WorkRow.name)
        )
        return [join(row) for row in self.session.scalars(statement)]

    def status_views_for_binding_ids(self, binding_ids: Sequence[int]) -> dict[int, list[WorkStatusView]]:
        """binding row id → its Works as status aggregation reads them (``WorkStatusView``: the status and
        the manifests' identities, computed by the database, so no manifest body reaches Python); by
        namespace, name; bindings without Works are absent."""
        if not binding_ids:
            return {}
        statement = (
            select(
                WorkRow.binding_id,
                WorkRow.cluster_name,
                WorkRow.metadata_extra,
                WorkRow.status,
                manifest_identities(self.session.get_bind().dialect.name),
            )
            .where(among(self.session, WorkRow.binding_id, binding_ids))
            .order_by(WorkRow.namespace, WorkRow.name)
        )
        found: dict[int, list[WorkStatusView]] = {}
        for binding_id, cluster, extra, status, identities in self.session.execute(statement):
            view = WorkStatusView(
                cluster=cluster,
                deleting=bool((extra or {}).get("deletionTimestamp")),
                status=status or {},
                manifests=_identities_by_ordinal(identities),
            )
            found.setdefault(int(binding_id or 0), []).append(view)
        return found

    def summaries_for_binding_ids(self, binding_ids: Sequence[int]) -> dict[int, list[WorkSummary]]:
        """binding row id → its Works as summaries (no manifest is loaded), by namespace, name; bindings
        without Works are absent."""
        if not binding_ids:
            return {}
        statement = (
            self._summaries()
            .where(among(self.session, WorkRow.binding_id, binding_ids))
            .order_by(WorkRow.namespace, WorkRow.name)
        )
        found: dict[int, list[WorkSummary]] = {}
        for summary in self._summarise(statement):
            found.setdefault(int(summary.binding_id or 0), []).append(summary)
        return found

    def summaries_by_keys(self, keys: Sequence[tuple[str, str]]) -> list[WorkSummary]:
        """``by_keys`` as summaries."""
        wanted = set(keys)
        if not wanted:
            return []
        statement = self._summaries().where(self._keyed(sorted(wanted)))
        return self._summarise(statement)

    def rows_by_ids(self, ids: Sequence[int]) -> dict[int, WorkRow]:
        """Work row id → row, for a writer that summarised first and loads only the Works it writes."""
        if not ids:
            return {}
        statement = select(WorkRow).where(among(self.session, WorkRow.id, sorted(set(ids))))
        return {row.id: row for row in self.session.scalars(statement)}

    def _keyed(self, keys: Sequence[tuple[str, str]]) -> ColumnElement[bool]:
        """Exactly these (namespace, name) keys: a row-value match, since two separate lists would read
        their cross product."""
        return pairs_among(self.session, (WorkRow.namespace, WorkRow.name), keys)

    def _summaries(self) -> Any:
        return select(
            WorkRow.id,
            WorkRow.binding_id,
            WorkRow.namespace,
            WorkRow.name,
            WorkRow.resource_version,
            WorkRow.labels,
            WorkRow.annotations,
            WorkRow.metadata_extra,
            _spec_without_manifests(self.session.get_bind().dialect.name),
            WorkRow.manifest_hash,
        )

    def _summarise(self, statement: Any) -> list[WorkSummary]:
        return [
            WorkSummary(
                id=row_id,
                binding_id=binding_id,
                namespace=namespace,
                name=name,
                resource_version=resource_version,
                labels=labels or {},
                annotations=annotations or {},
                metadata_extra=metadata_extra or {},
                spec=SpecDigest(rest, hashed),
            )
            for (
                row_id,
                binding_id,
                namespace,
                name,
                resource_version,
                labels,
                annotations,
                metadata_extra,
                rest,
                hashed,
            ) in self.session.execute(statement)
        ]

    def by_keys(self, keys: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
        """The Works at these (namespace, name) keys, whoever rendered them (one query)."""
        return [join(row) for row in self.rows_by_keys(keys)]

    def rows_by_keys(self, keys: Sequence[tuple[str, str]]) -> list[WorkRow]:
        """``by_keys`` as rows."""
        wanted = set(keys)
        if not wanted:
            return []
        # A row-value IN: exactly these keys (two separate INs would read their cross product).
        return list(self.session.scalars(select(WorkRow).where(self._keyed(sorted(wanted)))))

    def by_ids(self, ids: Sequence[int], *, shared: bool = False) -> dict[int, dict[str, Any]]:
        """Work row id → manifest for these ids (absent ids were deleted); ``shared``: views, not copies."""
        return manifests_by_id(self.session, WorkRow, ids, shared=shared)

    def to_sync(self, ids: Sequence[int]) -> dict[int, WorkToSync]:
        """Work row id → what work sync reads of it, for these ids (absent ids were deleted), by one
        query of four columns: loading whole rows decoded every Work's status and metadata for nothing."""
        if not ids:
            return {}
        box = self.session.info.get(SECRET_BOX)
        statement = (
            select(WorkRow.id, WorkRow.namespace, WorkRow.spec, WorkRow.metadata_extra)
            .where(among(self.session, WorkRow.id, ids))
            .order_by(WorkRow.id)
        )
        return {
            int(work_id): WorkToSync(
                namespace=namespace,
                spec=unseal_work_spec(spec, box) if isinstance(spec, Mapping) else {},
                deleting=bool((extra or {}).get("deletionTimestamp")),
            )
            for work_id, namespace, spec, extra in self.session.execute(statement)
        }

    def binding_ids_changed_since(self, since: datetime | None) -> list[tuple[int, datetime, int, int]]:
        """(binding id, updated_at, Work id, resourceVersion) of Works written after ``since`` (all Works
        when None): a change feed's rows (``ChangeFeed.take``)."""
        w = WorkRow
        statement = select(w.binding_id, w.updated_at, w.id, w.resource_version).where(
            w.binding_id.is_not(None)
        )
        if since is not None:
            statement = statement.where(w.updated_at > since)
        return [
            (int(b), at, int(i), int(rv)) for b, at, i, rv in self.session.execute(statement) if b is not None
        ]

    def applied_on_push_clusters(self) -> list[tuple[int, dict[str, Any]]]:
        """(id, manifest) of every applied Work on a Push-mode cluster: what status collection reads."""
        statement = (
            select(WorkRow)
            .where(WorkRow.applied.is_(True), WorkRow.cluster_name.not_in(_pull_clusters()))
            .order_by(WorkRow.cluster_name, WorkRow.id)
        )
        return [(row.id, join(row)) for row in self.session.scalars(statement)]

    def orphans(self) -> list[dict[str, Any]]:
        """Works whose binding is gone (or never resolved): the execution controller cleans them up."""
        return self._where(WorkRow.binding_id.is_(None))

    def _where(self, condition: ColumnElement[bool]) -> list[dict[str, Any]]:
        statement = select(WorkRow).where(condition).order_by(WorkRow.namespace, WorkRow.name)
        return [join(row) for row in self.session.scalars(statement)]

    def mark_synced(self, namespace: str, name: str, *, seen_seq: int | None = None) -> bool:
        """Clear ``needs_sync`` (with ``seen_seq``: only if no change arrived since); True if cleared."""
        conditions = [WorkRow.namespace == namespace, WorkRow.name == name]
        if seen_seq is not None:
            conditions.append(WorkRow.dirty_seq == seen_seq)
        cleared = self._update(conditions, {"needs_sync": False})
        if not cleared and self.objects.find_row(namespace, name) is None:
            raise NotFound(KIND, namespace, name)
        return cleared

    def mark_ids_need_sync(self, ids: Sequence[int]) -> None:
        """Queue these Works for sync (one statement); unknown ids are ignored."""
        if ids:
            self._update([among(self.session, WorkRow.id, ids)], claims.queue_values(WorkRow))

    def mark_needs_sync(self, namespace: str, name: str) -> None:
        if not self._update(
            [WorkRow.namespace == namespace, WorkRow.name == name], claims.queue_values(WorkRow)
        ):
            raise NotFound(KIND, namespace, name)

    def _update(self, conditions: list[ColumnElement[bool]], values: dict[str, Any]) -> bool:
        table = table_of(WorkRow)
        statement = update(table).where(*conditions).values(values)
        result = self.session.execute(statement)
        self._expire_loaded(conditions)
        return bool(result.rowcount)  # type: ignore[attr-defined]

    def _expire_loaded(self, conditions: list[ColumnElement[bool]]) -> None:
        # The Core UPDATE bypassed the identity map; make loaded Works reload the flags on next access.
        for obj in list(self.session.identity_map.values()):
            if isinstance(obj, WorkRow):
                self.session.expire(obj, ["needs_sync", "dirty_seq", "next_attempt_at"])


def _spec_without_manifests(dialect: str) -> ColumnElement[Any]:
    """``spec`` less ``workload.manifests``, computed by the database so the manifests (nearly all of a
    Work's bytes) never reach Python. Postgres refuses a path through a non-object, hence the CASE;
    SQLite's ``json_remove`` leaves a missing path alone."""
    if dialect == "postgresql":
        spec = type_coerce(WorkRow.spec, JSONB)
        return case(
            (func.jsonb_typeof(spec["workload"]) == "object", spec.delete_path(["workload", "manifests"])),
            else_=spec,
        )
    return type_coerce(func.json_remove(WorkRow.spec, "$.workload.manifests"), JSON)


# Each manifest of ``spec.workload.manifests`` as [ordinal, apiVersion, kind, namespace, name] (JSON nulls
# for what it lacks), in no promised order: the ordinal is in each entry (``identity_entries`` orders them).
# A correlated subquery on the outer ``works`` row; Postgres refuses to take elements of a non-array, hence
# the CASE.
_IDENTITIES_SQL = {
    "postgresql": (
        "(SELECT jsonb_agg(jsonb_build_array(m.ordinality - 1, m.value->'apiVersion', m.value->'kind', "
        "m.value->'metadata'->'namespace', m.value->'metadata'->'name')) "
        "FROM jsonb_array_elements(CASE WHEN jsonb_typeof(works.spec->'workload'->'manifests') = 'array' "
        "THEN works.spec->'workload'->'manifests' ELSE '[]'::jsonb END) WITH ORDINALITY AS m)"
    ),
    "sqlite": (
        "(SELECT json_group_array(json_array(m.key, json_extract(m.value, '$.apiVersion'), "
        "json_extract(m.value, '$.kind'), json_extract(m.value, '$.metadata.namespace'), "
        "json_extract(m.value, '$.metadata.name'))) "
        "FROM json_each(works.spec, '$.workload.manifests') AS m WHERE m.type = 'object')"
    ),
}


def manifest_identities(dialect: str) -> ColumnElement[Any]:
    """A Work's manifest identities as the database computes them (``identity_entries`` reads them), so no
    manifest body reaches Python."""
    json_type = JSONB if dialect == "postgresql" else JSON
    return literal_column(_IDENTITIES_SQL["postgresql" if dialect == "postgresql" else "sqlite"], json_type)


IdentityEntry = tuple[Any, Any, Any, Any]  # (apiVersion, kind, namespace, name) as given: None where absent
_NO_IDENTITY: IdentityEntry = (None, None, None, None)


def identity_entries(entries: Any) -> tuple[IdentityEntry, ...]:
    """``manifest_identities``'s entries in ordinal order, each field the JSON value as the manifest has it
    (None where absent); an ordinal without an object entry (a manifest that is not an object: Postgres
    gives it nulls, SQLite leaves it out) gets all None, so the others keep their ordinals."""
    by_ordinal: dict[int, IdentityEntry] = {
        int(entry[0]): (entry[1], entry[2], entry[3], entry[4])
        for entry in entries or []
        if isinstance(entry, list) and len(entry) == 5
    }
    return tuple(by_ordinal.get(ordinal, _NO_IDENTITY) for ordinal in range(max(by_ordinal, default=-1) + 1))


def _identities_by_ordinal(entries: Any) -> tuple[ManifestIdentity, ...]:
    """``identity_entries`` as ``ManifestIdentity`` values ("" for what a manifest lacks)."""
    entries_in_order = identity_entries(entries)
    return tuple(ManifestIdentity(*(str(value or "") for value in entry)) for entry in entries_in_order)


def _pull_clusters() -> Any:
    return select(ClusterRow.name).where(ClusterRow.sync_mode == PULL).scalar_subquery()


def claim_for_push(
    session: Session,
    owner: str,
    limit: int,
    now: datetime,
    lease_seconds: float,
    *,
    holder: int | None = None,
) -> list[Claim]:
    """``claims.claim`` for Works, restricted to Push-mode clusters (same statement shape and order);
    ``holder``: the thread whose pass holds the claims, when another thread claims for it."""
    push_only = table_of(WorkRow).c.cluster_name.not_in(_pull_clusters())
    return claims.claim(session, WorkRow, owner, limit, now, lease_seconds, where=[push_only], holder=holder)
