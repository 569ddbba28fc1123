"""Resource-template kinds that exist in the store (for resolving a URL plural nobody registered).

A template of any kind may be created (the body names its kind); later GETs by URL only know the plural,
so the API asks which kinds of that apiVersion are stored and matches plurals itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, defer

from federation.store.dialect import among
from federation.store.manifest import view
from federation.store.repository import manifests_by_id
from federation.store.tables import ResourceTemplateRow


def template_kinds(session: Session, api_version: str) -> list[str]:
    statement = (
        select(ResourceTemplateRow.kind).where(ResourceTemplateRow.api_version == api_version).distinct()
    )
    return sorted(session.scalars(statement))


def templates_by_id(session: Session, ids: Sequence[int]) -> list[dict[str, Any]]:
    """The templates with these row ids, as manifests, in id order (one query)."""
    return list(manifests_by_id(session, ResourceTemplateRow, ids).values())


def template_views_by_uid(session: Session, uids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """uid → template manifest for these uids (one query; absent uids are missing), for a reader that never
    mutates them and never reads status (rendering, the scheduler): the manifests share the rows' JSON
    (``manifest.view``) and the status column is not loaded. Rows, not bare columns, so a Secret's data is
    unsealed as on every load (``sealing``)."""
    if not uids:
        return {}
    statement = (
        select(ResourceTemplateRow)
        .where(among(session, ResourceTemplateRow.uid, uids))
        .options(defer(ResourceTemplateRow.status))
    )
    return {row.uid: view(row, with_status=False) for row in session.scalars(statement)}
