"""The pull-mode agent's record of what it applied to its member, and how that record survives restarts.

Invariants:
- The record maps each member object the agent applied to its Work and manifest hash. It is kept in
  memory and mirrored on the objects themselves (label `karmada.io/managed=true`, the Work annotations,
  the hash annotation), so a restarted agent rebuilds it by listing the member: nothing is stored locally.
- The rebuild lists every listable resource type the member serves, filtered by the label server-side, and
  keeps only objects whose Work annotation points into this cluster's execution namespace (an object
  another tool labelled is never the agent's to delete).
- A member that cannot be reached aborts the rebuild (`MemberError`): a partial record could make the
  agent forget objects it must delete later. A type the member refuses to list is skipped.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Protocol

from federation.members.agent_status import MANAGED_LABEL, ObjectKey, WorkRef, hash_of, work_of
from federation.members.discovery import Discovery
from federation.members.errors import MemberError

log = logging.getLogger(__name__)

# Answers that mean "this type cannot be listed here", not "the member is gone".
_SKIPPABLE = frozenset({"not_found", "forbidden", "api", "invalid"})


class RequestingClient(Protocol):
    """What the rebuild needs from a member client: raw JSON requests (KubernetesMemberClient has it)."""

    def request(self, method: str, path: str, *, query: list[tuple[str, str]] | None = None) -> Any: ...


@dataclass(frozen=True, slots=True)
class Recorded:
    """What the agent knows about one member object it applied."""

    work: WorkRef
    hash: str | None


AppliedRecord = dict[ObjectKey, Recorded]


def _gv_path(group_version: str) -> str:
    return f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"


def _listable(resource_list: dict[str, Any]) -> list[tuple[str, str]]:
    """(plural, kind) of the top-level resources that can be listed."""
    return [
        (str(r["name"]), str(r.get("kind", "")))
        for r in resource_list.get("resources") or []
        if "/" not in r.get("name", "") and "list" in (r.get("verbs") or ["list"])
    ]


def rebuild_record(client: RequestingClient, execution_namespace: str) -> AppliedRecord:
    """The record, read back from the member's labelled objects (see the module docstring)."""
    discovery = Discovery(lambda path: client.request("GET", path))
    record: AppliedRecord = {}
    for resource_list in discovery.all_resource_lists():
        group_version = str(resource_list.get("groupVersion", ""))
        for plural, kind in _listable(resource_list):
            for obj in _labelled(client, f"{_gv_path(group_version)}/{plural}"):
                ref = work_of(obj)
                if ref is None or ref.namespace != execution_namespace:
                    continue
                meta = obj.get("metadata") or {}
                key = ObjectKey(group_version, kind, str(meta.get("namespace") or ""), str(meta.get("name")))
                record[key] = Recorded(ref, hash_of(obj))
    return record


def _labelled(client: RequestingClient, path: str) -> list[dict[str, Any]]:
    try:
        listing = client.request("GET", path, query=[("labelSelector", f"{MANAGED_LABEL}=true")])
    except MemberError as err:
        if err.kind not in _SKIPPABLE:
            raise
        log.debug("skipping %s while rebuilding the applied record: %s", path, err.reason)
        return []
    return list((listing or {}).get("items") or [])
