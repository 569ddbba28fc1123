"""One kind of a member's objects kept in memory by LIST, then WATCH from the list's resourceVersion: an
informer, as client-go's, on a thread of its own.

Invariants:
- It keeps a *projection* of each object (what its consumer reads, e.g. a few bytes of status), never the
  objects: a LIST is taken in a page at a time, and an event is projected and dropped.
- Equal projections are kept once (``_shared``): a member's objects mostly look alike to a consumer (10,000
  Deployments of one replica, all ready; pods with the same requests), so the cache holds one instance per
  distinct projection, not one per object (``SharedInstances``: projections no object has any more do not
  pile up). An object's key is what its consumer needs (``key``): by default (namespace, name) with the
  namespace interned (a member has few); ``shared_name_key`` interns the name too, for a consumer that holds
  the names itself (work status interns its Works': one string, not one per holder); ``joined_key`` is one
  string, for a consumer that never looks an object up (cluster watch: 30,000 pods' tuples and names).
- ``synced`` is True once a LIST has been taken in and while the watch that follows it runs. A failure (the
  member unreachable, the stream cut, an ``ERROR`` event) makes it False until the next LIST has been taken
  in, so a consumer reads the cache only while it reflects the member. A 410 (the watch's resourceVersion
  too old) lists again at once; other failures back off from 1 s to 30 s.
- A key whose projection changed (added, changed, deleted) is handed out once by ``drain``, with its
  projection at the previous drain and now (None: absent), so a consumer that keeps an aggregate of the
  projections (``cluster_watch``'s counts) needs no copy of them to take the old one out. A key changed
  and changed back between two drains is not handed out. A re-list compares the new projections with
  the ones held: a member that did not change hands out nothing.
- ``on_change`` is called when a change arrives while nothing was waiting to be drained: at most one
  wake-up of the consumer per pass it makes, however many events arrive.
- A member that refuses to list or watch the kind (403, 404, 405) ends the informer with ``refused`` set:
  the consumer reads that kind some other way. ``stop`` (or the client being closed) ends the thread.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import Any, Generic, Protocol, TypeVar

from federation.members.errors import MemberError
from federation.shared_instances import SharedInstances

log = logging.getLogger(__name__)

P = TypeVar("P", bound=Hashable)
Key = tuple[str, str]  # (namespace or "", name)
KeyOf = Callable[[Mapping[str, Any]], Hashable]  # an object → its key in the cache
REFUSED = frozenset({403, 404, 405})
BACKOFF_START_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 30.0
WATCH_TIMEOUT_SECONDS = 300  # a stream is ended by the server after this long, and started again


class WatchingClient(Protocol):
    """What an informer needs of a member client (``KubernetesMemberClient`` has it)."""

    name: str
    closed: bool

    def list_for_watch(
        self, api_version: str, kind: str, selector: str, visit: Callable[[list[dict[str, Any]]], None]
    ) -> str: ...

    def watch(
        self, api_version: str, kind: str, selector: str, resource_version: str, timeout_seconds: int
    ) -> Stream: ...


class Stream(Protocol):
    """An open WATCH: its events; ``close`` cuts it from another thread."""

    def __iter__(self) -> Iterator[dict[str, Any]]: ...

    def close(self) -> None: ...


def can_watch(client: object) -> bool:
    return all(hasattr(client, name) for name in ("list_for_watch", "watch", "closed"))


class Expired(Exception):
    """The watch's resourceVersion is older than the member keeps: list again."""


def key_of(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return (sys.intern(str(meta.get("namespace") or "")), str(meta.get("name") or ""))


def shared_name_key(obj: Mapping[str, Any]) -> Key:
    """``key_of`` with the name interned too."""
    namespace, name = key_of(obj)
    return namespace, sys.intern(name)


def joined_key(obj: Mapping[str, Any]) -> str:
    """ "namespace/name" (or "name"): one string per object instead of a tuple and a name."""
    meta = obj.get("metadata") or {}
    namespace, name = meta.get("namespace"), str(meta.get("name") or "")
    return f"{namespace}/{name}" if namespace else name


class Informer(Generic[P]):
    """The projections of one member's objects of one kind that match a label selector."""

    def __init__(
        self,
        client: WatchingClient,
        api_version: str,
        kind: str,
        selector: str,
        project: Callable[[Mapping[str, Any]], P],
        on_change: Callable[[], None] = lambda: None,
        *,
        watch_timeout_seconds: int = WATCH_TIMEOUT_SECONDS,
        key: KeyOf = key_of,
    ) -> None:
        self.client = client
        self.api_version, self.kind, self.selector = api_version, kind, selector
        self._project = project
        self._on_change = on_change
        self._watch_timeout = watch_timeout_seconds
        self._key = key
        self._lock = threading.Lock()
        self._cache: dict[Hashable, P] = {}
        self._shared: SharedInstances[P] = SharedInstances()  # touched by the informer's thread only
        # Key → its projection at the last drain (None: absent then), for the keys changed since.
        self._changed: dict[Hashable, P | None] = {}
        self._synced = False
        self.refused: MemberError | None = None
        self.error: MemberError | None = None
        self._stopping = threading.Event()
        self._stream: Stream | None = None  # the open WATCH, which ``stop`` cuts
        self._thread = threading.Thread(target=self._run, name=f"informer-{client.name}-{kind}", daemon=True)

    # --- what consumers read ----------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        return self._synced

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def get(self, key: Hashable) -> P | None:
        return self._cache.get(key)

    def drain(self) -> dict[Hashable, tuple[P | None, P | None]]:
        """The keys whose projection changed since the last drain: (projection then, projection now)."""
        with self._lock:
            changed, self._changed = self._changed, {}
            cache = self._cache
            return {key: (then, now) for key, then in changed.items() if (now := cache.get(key)) != then}

    def __len__(self) -> int:
        return len(self._cache)

    # --- lifecycle --------------------------------------------------------------------------------

    def start(self) -> Informer[P]:
        self._thread.start()
        return self

    def stop(self) -> None:
        """End the thread (its open stream is cut, no other); returns at once."""
        self._stopping.set()
        self._synced = False
        stream = self._stream
        if stream is not None:
            stream.close()

    def _running(self) -> bool:
        return not self._stopping.is_set() and not self.client.closed

    def _run(self) -> None:
        delay = BACKOFF_START_SECONDS
        while self._running():
            try:
                version = self._list()
                self.error, delay = None, BACKOFF_START_SECONDS
                while self._running():
                    began = time.monotonic()
                    version = self._watch(version)
                    if time.monotonic() - began < 1.0:  # a member that ends streams at once is not spun on
                        self._stopping.wait(1.0)
            except Expired:
                self._synced = False
                continue  # list again at once, as client-go's reflector does
            except MemberError as err:
                self._synced = False
                if err.status in REFUSED:
                    self.refused = err
                    log.info("informer %s/%s: the member refuses it (%s)", self.client.name, self.kind, err)
                    return
                self.error = err
            except Exception as exc:  # never let the thread die on a bad event
                self._synced = False
                self.error = MemberError(self.client.name, f"{type(exc).__name__}: {exc}")
                log.exception("informer %s/%s failed", self.client.name, self.kind)
            if self._running():
                log.info(
                    "informer %s/%s: %s; again in %.0f s", self.client.name, self.kind, self.error, delay
                )
                self._stopping.wait(delay)
                delay = min(delay * 2, BACKOFF_MAX_SECONDS)
        self._synced = False

    def _list(self) -> str:
        fresh: dict[Hashable, P] = {}

        def take(page: list[dict[str, Any]]) -> None:
            for obj in page:
                fresh[self._key(obj)] = self._projection(obj)

        version = self.client.list_for_watch(self.api_version, self.kind, self.selector, take)
        with self._lock:
            old = self._cache
            changed = {k: old.get(k) for k, p in fresh.items() if old.get(k) != p}
            changed.update((k, old[k]) for k in old.keys() - fresh.keys())
            self._cache = fresh
            self._mark(changed)
            self._synced = True
        self._shared.prune(len(self._cache), self._cache.values)
        return version

    def _projection(self, obj: Mapping[str, Any]) -> P:
        """The object's projection, as the instance already kept when an equal one is."""
        return self._shared.share(self._project(obj))

    def _watch(self, version: str) -> str:
        """One stream from ``version``; the resourceVersion it ends at."""
        stream = self.client.watch(self.api_version, self.kind, self.selector, version, self._watch_timeout)
        self._stream = stream
        if self._stopping.is_set():  # stopped while the stream was being opened
            stream.close()
        for event in stream:
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                code = obj.get("code")
                if code == 410:
                    raise Expired(obj.get("message"))
                raise MemberError(
                    self.client.name, f"watch of {self.kind}: {obj.get('message')}", status=code
                )
            version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
            if kind == "BOOKMARK":
                continue
            key = self._key(obj)
            with self._lock:
                if kind == "DELETED":
                    if (held := self._cache.pop(key, None)) is not None:
                        self._mark({key: held})
                else:
                    projected = self._projection(obj)
                    if (held := self._cache.get(key)) != projected:
                        self._cache[key] = projected
                        self._mark({key: held})
            self._shared.prune(len(self._cache), self._cache.values)
        return version

    def _mark(self, changes: Mapping[Hashable, P | None]) -> None:
        """Under ``_lock``: note changed keys with what they held before (the first change since the last
        drain keeps its own: what the consumer last saw); the consumer is told when it has nothing waiting."""
        if not changes:
            return
        quiet = not self._changed
        for key, held in changes.items():
            self._changed.setdefault(key, held)
        if quiet:
            try:
                self._on_change()
            except Exception:  # a consumer's wake-up must not end the informer
                log.exception("informer %s/%s: on_change failed", self.client.name, self.kind)
