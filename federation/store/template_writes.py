"""A new resource template inserted as column values, without an ORM object: the API's create of a workload.

Why: every workload a user applies is one such insert, and through the ORM it was an instrumented object,
a unit-of-work flush and the change-log hook's scan of the session: a third of the API's CPU per Deployment
write, 1.2 ms where this takes 0.75 (bench/RESULTS.md, "Template creates as column values"). Here the row
is its column values, logged and inserted by ``changelog.insert_added`` (the change-log rows, then one
INSERT), as ``binding_writes`` and ``work_writes`` insert theirs.

Invariants:
- The same row and change-log event as ``ObjectRepository.create`` (tests compare them column by column):
  ``manifest.new_row_values``, ``content_updated_at`` stamped, and queued for the detector as ``derive``
  queues a created template (``needs_detection``, ``dirty_seq`` 1, no back-off).
- A Secret carries data that is sealed at rest by the ORM's flush hooks (``sealing``): ``insertable`` says
  no, and the caller takes the ORM path for it.
- A taken name fails the INSERT with the ``IntegrityError`` the ORM's flush raises (the caller turns it
  into ``AlreadyExists``); the transaction is lost then, as after any failed write.
- Takes ownership of the parts' JSON (the caller split a copy); never autoflushes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from federation.store import changelog, claims
from federation.store.manifest import Parts, new_row_values
from federation.store.sealing import is_secret
from federation.store.tables import ResourceTemplateRow


def insertable(parts: Parts) -> bool:
    """Whether ``insert_new`` may write this template: anything but a Secret (sealed by the ORM path)."""
    return not is_secret({"apiVersion": parts.api_version, "kind": parts.kind})


def insert_new(session: Session, parts: Parts, kind: str, api_version: str, now: datetime) -> dict[str, Any]:
    """Insert one new template with its ADDED event and revision; the object as a GET renders it (sharing
    the parts' JSON). ``IntegrityError`` when the name is taken."""
    if not insertable(parts):
        raise ValueError(f"{kind} {parts.namespace}/{parts.name}: a Secret is written by the ORM (sealing)")
    row = {
        **new_row_values(parts, kind, api_version, now),
        "content_updated_at": now,
        **claims.created_values(ResourceTemplateRow),  # ``derive.mark_dirty(created=True)``: to be detected
    }
    [manifest] = changelog.insert_added(session, ResourceTemplateRow, [row])
    return manifest
