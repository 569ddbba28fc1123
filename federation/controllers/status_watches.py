"""Work status from member watches: one informer per (Push cluster, kind its applied Works carry), selected
by ``karmada.io/managed=true`` as the LIST rounds were, so a member costs its changes, not its objects.

Invariants:
- An informer keeps, per member object, only the canonical JSON of what a ``manifestStatuses`` entry says
  of it (``observed_status``: reflected status and health, ~0.2 KB), so a Work's statuses are rebuilt from
  memory and an object whose status did not change hands out nothing. Its keys' names are interned
  (``shared_name_key``), as the tracked Works' are: one string per name for the informer, the Works and the
  index.
- A round evaluates only the Works that need it: those (re)read from the database this round, those an
  informer saw change (``affected``: an index from member object to Works, kept as Works are tracked and
  forgotten; an object held by one Work, the rule, maps to its id, not to a set of one), and those a
  previous round could not finish (``pending``). A federation at rest costs no member call and no evaluation.
- A Work is evaluated only while every informer it reads is synced; otherwise it waits in ``pending``.
- An object the informer does not hold may be one applied a moment ago whose event is still on its way:
  the Work is a *suspect* first and missing only when a GET ``missing_grace_seconds`` later still does not
  find it (then work sync recreates it, Karmada's ``recreateResourceIfNeeded``). A GET that finds it
  counts as its sighting.
- Informers of clusters and kinds no tracked Work needs any more are stopped; so are those whose client
  was replaced (rotated credentials): a new one starts with the new client.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

import orjson

from federation import jsoncodec
from federation.controllers.rendering import MANAGED_LABEL
from federation.controllers.status_sightings import (
    Identity,
    Kind,
    Observed,
    Tracked,
    digest,
    get_object,
    kind_of,
)
from federation.members.client import MemberClient
from federation.members.errors import MemberError
from federation.members.informer import Informer, Key, WatchingClient, shared_name_key
from federation.model.status_interpreter import identifier, manifest_status, observed_status

log = logging.getLogger(__name__)

SELECTOR = f"{MANAGED_LABEL}=true"
MISSING_GRACE_SECONDS = 2.0


def project(obj: Mapping[str, Any]) -> bytes:
    """What an informer keeps of a member object: the canonical JSON of its ``observed_status``, in
    memory of its own size (``jsoncodec.kept``: one is kept per member object)."""
    encoded = orjson.dumps(observed_status(obj), option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    return jsoncodec.kept(encoded)


def lookup_keys(identity: Identity) -> tuple[Key, ...]:
    """Where a manifest's object is: as given, and for one without a namespace also in "default" (where a
    namespaced kind was applied)."""
    namespace, name = str(identity.namespace or ""), str(identity.name)
    return ((namespace, name),) if namespace else (("", name), ("default", name))


class StatusWatches:
    """The informers of the Push clusters that can be watched, and which Works their objects belong to."""

    def __init__(
        self,
        notify: Callable[[], None] = lambda: None,
        *,
        missing_grace_seconds: float = MISSING_GRACE_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.notify = notify
        self._grace = missing_grace_seconds
        self._monotonic = monotonic
        self._informers: dict[tuple[str, Kind], Informer[bytes]] = {}
        # (cluster, kind) → member object → the Work holding it, or the Works when more than one does
        # (one per object as a rule: an int, not a set of one, for each of 10,000s of objects).
        self._works_of: dict[tuple[str, Kind], dict[Hashable, int | set[int]]] = {}
        self.pending: set[int] = set()
        self._suspects: dict[int, float] = {}  # Work id → when an object of it was first not found

    # --- the index from member objects to Works ---------------------------------------------------

    def index(self, work_id: int, work: Tracked) -> None:
        for identity in work.manifests:
            works_at = self._works_of.setdefault((work.cluster, kind_of(identity)), {})
            for key in lookup_keys(identity):
                held = works_at.get(key)
                if held is None:
                    works_at[key] = work_id
                elif isinstance(held, set):
                    held.add(work_id)
                elif held != work_id:
                    works_at[key] = {held, work_id}

    def unindex(self, work_id: int, work: Tracked) -> None:
        self.pending.discard(work_id)
        self._suspects.pop(work_id, None)
        for identity in work.manifests:
            ref = (work.cluster, kind_of(identity))
            works_at = self._works_of.get(ref)
            if works_at is None:
                continue
            for key in lookup_keys(identity):
                held = works_at.get(key)
                if held == work_id:
                    del works_at[key]
                elif isinstance(held, set):
                    held.discard(work_id)
                    if len(held) == 1:
                        works_at[key] = next(iter(held))
            if not works_at:
                del self._works_of[ref]

    # --- informers --------------------------------------------------------------------------------

    def refused(self, cluster: str, kinds: Iterable[Kind], client: WatchingClient) -> bool:
        """Whether the member refused to list or watch one of ``kinds`` through this client (then it is
        read by LIST rounds; a new client, rotated credentials, is asked again)."""
        return any(
            (informer := self._informers.get((cluster, kind))) is not None
            and informer.refused is not None
            and informer.client is client
            for kind in kinds
        )

    def ensure(self, cluster: str, client: WatchingClient, kinds: set[Kind]) -> None:
        """Informers for exactly ``kinds`` of ``cluster`` through ``client``."""
        for (name, kind), informer in list(self._informers.items()):
            if name == cluster and (kind not in kinds or informer.client is not client):
                self._stop((name, kind))
        for kind in kinds:
            if (cluster, kind) not in self._informers:
                self._informers[(cluster, kind)] = Informer(
                    client, kind[0], kind[1], SELECTOR, project, self._changed, key=shared_name_key
                ).start()

    def retain(self, clusters: set[str]) -> None:
        """Stop the informers of every other cluster."""
        for ref in [ref for ref in self._informers if ref[0] not in clusters]:
            self._stop(ref)

    def close(self) -> None:
        self.retain(set())

    def _stop(self, ref: tuple[str, Kind]) -> None:
        self._informers.pop(ref).stop()

    def _changed(self) -> None:
        self.notify()

    def affected(self) -> set[int]:
        """The Works whose member objects changed since the last call."""
        found: set[int] = set()
        for ref, informer in self._informers.items():
            changed = informer.drain()
            works_at = self._works_of.get(ref, {})
            for key in changed:
                held = works_at.get(key)
                if isinstance(held, set):
                    found |= held
                elif held is not None:
                    found.add(held)
        return found

    # --- evaluation -------------------------------------------------------------------------------

    def observe(
        self, works: Sequence[tuple[int, Tracked]], clients: Mapping[str, MemberClient]
    ) -> list[Observed]:
        """The Works among ``works`` whose statuses changed or whose objects are missing, from the
        informers; those that cannot be decided yet go to ``pending``."""
        found: list[Observed] = []
        evaluated = {work_id for work_id, _ in works}
        # Rebuilt, not discarded from: a set never shrinks its table (a start leaves every Work pending
        # until the informers sync).
        self.pending = {work_id for work_id in self.pending if work_id not in evaluated}
        for work_id, work in works:
            try:
                seen = self._evaluate(work_id, work, clients[work.cluster])
            except MemberError as err:  # the confirming GET failed: the member tells us nothing new
                log.info("work status: cluster %s: %s", work.cluster, err)
                seen = None
                self.pending.add(work_id)
            if seen is not None:
                found.append(seen)
        return found

    def _evaluate(self, work_id: int, work: Tracked, client: MemberClient) -> Observed | None:
        parts: list[bytes | None] = []
        for identity in work.manifests:
            informer = self._informers.get((work.cluster, kind_of(identity)))
            if informer is None or not informer.synced:
                self.pending.add(work_id)
                return None
            parts.append(next((p for k in lookup_keys(identity) if (p := informer.get(k)) is not None), None))
        if any(part is None for part in parts):
            first_missed = self._suspects.setdefault(work_id, self._monotonic())
            if self._monotonic() - first_missed < self._grace:
                self.pending.add(work_id)
                return None
            parts = [
                part if part is not None else self._confirm(client, identity)
                for identity, part in zip(work.manifests, parts, strict=True)
            ]
        self._suspects.pop(work_id, None)
        statuses = tuple(
            {"identifier": identifier(identity.manifest(), ordinal), **orjson.loads(part)}
            if part is not None
            else manifest_status(identity.manifest(), ordinal, None)
            for ordinal, (identity, part) in enumerate(zip(work.manifests, parts, strict=True))
        )
        missing = any(part is None for part in parts)
        if missing or digest(statuses) != work.digest:
            return Observed(work_id, statuses, missing=missing)
        return None

    def _confirm(self, client: MemberClient, identity: Identity) -> bytes | None:
        """A GET of an object the informer does not hold (None: the member does not have it either)."""
        found = get_object(client, identity)
        return project(found) if found is not None else None
