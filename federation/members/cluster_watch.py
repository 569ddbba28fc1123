"""A member's resource summary from watches: an informer on its nodes and one on its pods (as Karmada's
cluster-status controller has), so a pass at rest reads memory instead of LISTing every node and pod.

Invariants:
- An informer keeps a *view* of each object (``summary.node_view``/``pod_view``: a few small tuples),
  never the objects. ``summary`` gives exactly what ``summarize_totals`` gives over the same objects
  (``summarize_views``).
- The views are counted by multiplicity (``Counter`` of view → objects having it), kept up to date from
  the informers' changes (``drain`` hands out each changed key's view at the previous drain and now: the
  old one leaves the counts, the new one enters), so a pass costs its changes plus the number of distinct
  views (pods of one Deployment share one), not the member's pods; and no copy of the views is kept here
  (the informer's cache is the only one: 30,000 pods held a second key and name each).
- ``summary`` is None while either informer is not synced (not listed yet, or failed and not listed
  again) or was refused by the member: the caller reads the summary some other way (a LIST).
- One ``ClusterWatch`` per cluster in ``ClusterWatches``; a cluster's watch is replaced when its client
  is (rotated credentials), stopped when the cluster is no longer watched, and all by ``close``.
- ``summary`` may be called from a worker thread while an earlier pass's worker still runs (a member
  slower than the pass budget): the counts are changed under a lock.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from federation.members.informer import Informer, WatchingClient, joined_key
from federation.members.summary import (
    ClusterSummary,
    NodeView,
    PodView,
    node_view,
    pod_view,
    summarize_views,
)

V = TypeVar("V", bound=Hashable)
# Every node and every pod: the summary counts them all, whatever their labels.
ALL = ""


class _Counted(Generic[V]):
    """An informer's views counted by view."""

    def __init__(self, informer: Informer[V]) -> None:
        self.informer = informer
        self.counts: Counter[V] = Counter()

    def catch_up(self) -> None:
        for old, new in self.informer.drain().values():
            if old is not None:
                self.counts[old] -= 1
                if not self.counts[old]:
                    del self.counts[old]  # a view no object has any more must not count
            if new is not None:
                self.counts[new] += 1


class ClusterWatch:
    """The node and pod informers of one member, and the summary they give."""

    def __init__(self, client: WatchingClient) -> None:
        self.client = client
        self._nodes = _Counted(Informer[NodeView](client, "v1", "Node", ALL, node_view))
        # Pods by one string each (``joined_key``): their keys are never looked up here.
        self._pods = _Counted(Informer[PodView](client, "v1", "Pod", ALL, pod_view, key=joined_key))
        self._lock = threading.Lock()

    def start(self) -> ClusterWatch:
        self._nodes.informer.start()
        self._pods.informer.start()
        return self

    @property
    def synced(self) -> bool:
        return self._nodes.informer.synced and self._pods.informer.synced

    @property
    def alive(self) -> bool:
        """Whether an informer's thread still runs (after ``stop``, both end soon)."""
        return self._nodes.informer.alive or self._pods.informer.alive

    @property
    def refused(self) -> bool:
        return self._nodes.informer.refused is not None or self._pods.informer.refused is not None

    @property
    def listing(self) -> bool:
        """Taking in a LIST that nothing went wrong with yet (the first, or one after a 410): both informers
        running, neither failed nor refused, not both synced."""
        informers = (self._nodes.informer, self._pods.informer)
        return not self.synced and all(i.alive and i.error is None and i.refused is None for i in informers)

    def wait_listed(self, timeout: float, poll_seconds: float = 0.05) -> None:
        """Return once the LIST being taken in is done, has failed, or ``timeout`` seconds have passed."""
        deadline = time.monotonic() + timeout
        while self.listing and time.monotonic() < deadline:
            time.sleep(poll_seconds)

    def summary(self) -> ClusterSummary | None:
        """The member's summary as the informers have it; None when they cannot tell (not synced)."""
        with self._lock:
            # Asked before catching up: what is read then is at least as fresh as the last sync.
            synced = self.synced
            self._nodes.catch_up()  # even when not synced: the counts follow the informer's cache
            self._pods.catch_up()
            if not synced:
                return None
            return summarize_views(self._nodes.counts, self._pods.counts)

    def stop(self) -> None:
        for informer in (self._nodes.informer, self._pods.informer):
            informer.stop()  # cuts its own stream only


class ClusterWatches:
    """A ``ClusterWatch`` per watched cluster."""

    def __init__(self, factory: Callable[[WatchingClient], ClusterWatch] = ClusterWatch) -> None:
        self._factory = factory
        self._watches: dict[str, ClusterWatch] = {}

    def ensure(self, cluster: str, client: WatchingClient) -> ClusterWatch:
        """The cluster's watch through ``client`` (one through another client is stopped first)."""
        found = self._watches.get(cluster)
        if found is not None and found.client is not client:
            self.forget(cluster)
            found = None
        if found is None:
            found = self._watches[cluster] = self._factory(client).start()
        return found

    def get(self, cluster: str) -> ClusterWatch | None:
        return self._watches.get(cluster)

    def forget(self, cluster: str) -> None:
        found = self._watches.pop(cluster, None)
        if found is not None:
            found.stop()

    def retain(self, clusters: set[str]) -> None:
        """Stop the watches of every other cluster."""
        for cluster in [c for c in self._watches if c not in clusters]:
            self.forget(cluster)

    def close(self) -> None:
        self.retain(set())

    def __contains__(self, cluster: object) -> bool:
        return cluster in self._watches

    def __len__(self) -> int:
        return len(self._watches)


def summary_of(
    watch: ClusterWatch | None, fallback: Callable[[], ClusterSummary], *, listing_wait_seconds: float = 0.0
) -> ClusterSummary:
    """The summary from ``watch`` when it can tell, else from ``fallback`` (a LIST of nodes and pods). A
    watch taking in its LIST is waited for, up to ``listing_wait_seconds``, as Karmada's cluster-status
    controller waits for its informers' caches to sync: listing beside it made a start-up's member serve
    every pod twice, and decoding them twice cost the controllers' process as much."""
    if watch is None:
        return fallback()
    watch.wait_listed(listing_wait_seconds)  # at once when no LIST is being taken in
    found = watch.summary()
    return found if found is not None else fallback()
