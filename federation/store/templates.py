"""Resource-template kinds that exist in the store (for resolving a URL plural nobody registered).

A template of any kind may be created (the body names its kind); later GETs by URL only know the plural,
so the API asks which kinds of that apiVersion are stored and matches plurals itself.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from federation.store.tables import ResourceTemplateRow


def template_kinds(session: Session, api_version: str) -> list[str]:
    statement = (
        select(ResourceTemplateRow.kind).where(ResourceTemplateRow.api_version == api_version).distinct()
    )
    return sorted(session.scalars(statement))
