"""What a round of Work status collection sees of a member: the Works it tracks (``Tracked``: identities
and a digest, not manifests), and one cluster's objects matched to them a LIST page (or a GET) at a time
(``Sightings``), the way of reading a member that cannot be watched.

Invariants:
- A tracked Work keeps its cluster, one ``Identity`` tuple per manifest (strings interned: the Works of one
  template share them) and a 16-byte digest of its stored manifest statuses (~0.3 KB each).
- A LIST is matched a page at a time (``visit_labelled``) and only the manifest statuses found are kept,
  never the member's objects (~8 KB each decoded). A kind the member refuses to list (403, 404, 405) is read
  one GET per object; any other failure propagates and ends the cluster's round.
- A manifest without a namespace is looked up as given and, failing that, in "default" (where a namespaced
  kind was applied).
"""

from __future__ import annotations

import hashlib
import logging
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from federation import jsoncodec
from federation.controllers.rendering import MANAGED_LABEL
from federation.members.client import MemberClient
from federation.members.errors import MemberError
from federation.model.status_interpreter import manifest_status

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Observed:
    """What one round saw for one Work: its manifest statuses, or that an object is missing."""

    work_id: int
    statuses: tuple[dict[str, Any], ...]
    missing: bool


class Identity(NamedTuple):
    """What ``manifest_status`` and the member lookup read of a manifest (None: the field is absent)."""

    api_version: Any
    kind: Any
    namespace: Any
    name: Any

    @staticmethod
    def of(manifest: Mapping[str, Any]) -> Identity:
        meta = manifest.get("metadata") or {}
        return Identity(
            interned(manifest.get("apiVersion")),
            interned(manifest.get("kind")),
            interned(meta.get("namespace")),
            interned(meta.get("name")),
        )

    def manifest(self) -> dict[str, Any]:
        """The manifest as far as its identity goes (what ``manifest_status`` is given)."""
        meta = {k: v for k, v in (("namespace", self.namespace), ("name", self.name)) if v is not None}
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": meta}


@dataclass(frozen=True, slots=True)
class Tracked:
    """What a round needs of one applied Work: its cluster, its manifests (identity only) and the digest
    of its stored manifest statuses."""

    cluster: str
    manifests: tuple[Identity, ...]
    digest: bytes


def digest(statuses: Sequence[Any]) -> bytes:
    """Manifest statuses compared by a digest of their canonical JSON (a tracked Work keeps 16 bytes, not
    its statuses)."""
    return hashlib.blake2b(jsoncodec.canonical(list(statuses)), digest_size=16).digest()


def interned(value: Any) -> Any:
    """Strings shared by many tracked Works (cluster, kind, namespace, a name on several clusters) once."""
    return sys.intern(value) if type(value) is str else value


Kind = tuple[str, str]  # (apiVersion, kind)
Slot = tuple[int, int]  # (index of the Work in the round, ordinal of the manifest)
LIST_REFUSED = frozenset({403, 404, 405})  # no list verb, no LIST route: read the objects one by one


def kind_of(identity: Identity) -> Kind:
    return str(identity.api_version), str(identity.kind)


class Sightings:
    """One cluster's round: the member object of each manifest of its Works, matched a LIST page (or a
    GET) at a time, and what that makes of each Work. Keeps the manifest statuses found (small), never
    the member's objects."""

    def __init__(self, works: Sequence[tuple[int, Tracked]]) -> None:
        self._works = works
        self._statuses: list[list[dict[str, Any] | None]] = [[None] * len(w.manifests) for _, w in works]
        self._resolved: list[list[bool]] = [[False] * len(w.manifests) for _, w in works]
        # kind → (namespace, name) → slots: where a listed object goes. A manifest without a namespace is
        # looked up as given and, failing that, in "default" (where a namespaced kind was applied).
        self._exact: dict[Kind, dict[tuple[str, str], list[Slot]]] = defaultdict(lambda: defaultdict(list))
        self._fallback: dict[Kind, dict[tuple[str, str], list[Slot]]] = defaultdict(lambda: defaultdict(list))
        self._fallback_hits: dict[Slot, dict[str, Any]] = {}
        for index, (_, work) in enumerate(works):
            for ordinal, identity in enumerate(work.manifests):
                namespace, name = str(identity.namespace or ""), str(identity.name)
                self._exact[kind_of(identity)][(namespace, name)].append((index, ordinal))
                if not namespace:
                    self._fallback[kind_of(identity)][("default", name)].append((index, ordinal))

    def kinds(self) -> set[Kind]:
        return set(self._exact)

    def wanted(self, kind: Kind) -> list[tuple[Slot, Identity]]:
        return [(slot, self._identity(slot)) for slots in self._exact[kind].values() for slot in slots]

    def page(self, kind: Kind, objects: Sequence[Mapping[str, Any]]) -> None:
        """Match one LIST page of ``kind``; the objects are not kept, only their manifest statuses."""
        exact, fallback = self._exact[kind], self._fallback.get(kind, {})
        for obj in objects:
            meta = obj.get("metadata") or {}
            key = (str(meta.get("namespace") or ""), str(meta.get("name")))
            for slot in exact.get(key, ()):
                self._set(slot, self._status(slot, obj))
            for slot in fallback.get(key, ()):
                self._fallback_hits[slot] = self._status(slot, obj)

    def listed(self, kind: Kind) -> None:
        """Every page of ``kind`` was matched: a manifest not listed as given takes its "default" sighting,
        if any; the rest are missing from the member."""
        for slots in self._exact[kind].values():
            for index, ordinal in slots:
                hit = self._fallback_hits.pop((index, ordinal), None)
                if self._statuses[index][ordinal] is None and hit is not None:
                    self._statuses[index][ordinal] = hit
                self._resolved[index][ordinal] = True

    def resolve(self, slot: Slot, obj: Mapping[str, Any] | None) -> None:
        """One manifest read by GET (None: not on the member)."""
        if obj is not None:
            self._set(slot, self._status(slot, obj))
        self._resolved[slot[0]][slot[1]] = True

    def outcomes(self) -> list[Observed]:
        """The Works seen whole (every manifest resolved) whose statuses changed or that miss an object."""
        found: list[Observed] = []
        for index, (work_id, work) in enumerate(self._works):
            if not all(self._resolved[index]):
                continue  # the round stopped before this Work was seen whole
            seen = self._statuses[index]
            statuses = tuple(
                status if status is not None else manifest_status(identity.manifest(), ordinal, None)
                for ordinal, (identity, status) in enumerate(zip(work.manifests, seen, strict=True))
            )
            missing = any(status is None for status in seen)
            if missing or digest(statuses) != work.digest:
                found.append(Observed(work_id, statuses, missing=missing))
        return found

    def _identity(self, slot: Slot) -> Identity:
        return self._works[slot[0]][1].manifests[slot[1]]

    def _status(self, slot: Slot, obj: Mapping[str, Any]) -> dict[str, Any]:
        return manifest_status(self._identity(slot).manifest(), slot[1], obj)

    def _set(self, slot: Slot, status: dict[str, Any]) -> None:
        self._statuses[slot[0]][slot[1]] = status


def list_kind(client: MemberClient, kind: Kind, sightings: Sightings) -> bool:
    """Match the member's managed objects of ``kind`` a page at a time; False when it will not list them
    (the caller GETs them one by one). Connectivity failures propagate: the cluster is skipped this round."""
    try:
        client.visit_labelled(
            kind[0], kind[1], f"{MANAGED_LABEL}=true", lambda page: sightings.page(kind, page)
        )
    except MemberError as err:
        if err.status not in LIST_REFUSED:
            raise
        log.info("work status: %s refuses to list %s (%s); reading them one by one", client.name, kind, err)
        return False
    sightings.listed(kind)
    return True


def get_object(client: MemberClient, identity: Identity) -> dict[str, Any] | None:
    found: dict[str, Any] | None = client.get(
        str(identity.api_version), str(identity.kind), identity.namespace, str(identity.name)
    )
    return found
