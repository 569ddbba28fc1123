"""A cache of member clients, and bounded concurrent fan-out across clusters.

Invariants:
- One client per cluster name, reused while the cluster's kubeconfig hashes the same; a changed kubeconfig
  (rotated token, new CA, new server) builds a new client and closes the old one. Callers that find no
  client at once each build one; the first stored wins and the others' are closed unused, so a client
  handed out is never closed while its credentials stay the same.
- ``run_concurrently`` runs at most ``max_workers`` calls at once and returns by ``timeout``: a cluster whose
  call has not finished gets a timeout ``MemberError`` in its outcome, so one slow or dead member never
  holds up the others. Exceptions never escape; each outcome carries either a value or an error.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from federation.members.client import KubernetesMemberClient, MemberClient
from federation.members.errors import MemberError
from federation.members.kubeconfig import credentials_hash

R = TypeVar("R")
ClientFactory = Callable[[str, dict[str, Any]], MemberClient]


def default_factory(name: str, kubeconfig: dict[str, Any]) -> MemberClient:
    return KubernetesMemberClient(name, kubeconfig)


@dataclass(frozen=True, slots=True)
class Outcome(Generic[R]):
    """One cluster's result: ``value`` when ``error`` is None."""

    cluster: str
    value: R | None = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class MemberClientPool:
    """Clients cached per cluster name and rebuilt when the credentials change."""

    def __init__(self, factory: ClientFactory = default_factory) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._clients: dict[str, tuple[str, MemberClient]] = {}

    def get(self, name: str, kubeconfig: dict[str, Any]) -> MemberClient:
        """The cached client for ``name``, (re)built if absent or if ``kubeconfig`` changed."""
        digest = credentials_hash(kubeconfig)
        with self._lock:
            cached = self._clients.get(name)
            if cached is not None and cached[0] == digest:
                return cached[1]
        client = self._factory(name, kubeconfig)  # outside the lock: building may read files
        with self._lock:
            previous = self._clients.get(name)
            kept: MemberClient
            dropped: MemberClient | None
            if previous is not None and previous[0] == digest:
                # Another caller built one for the same credentials meanwhile (at a start every controller
                # asks at once) and may be using it: keep that one and drop ours, never the reverse.
                kept, dropped = previous[1], client
            else:
                self._clients[name] = (digest, client)
                kept, dropped = client, (previous[1] if previous is not None else None)
        if dropped is not None:
            dropped.close()
        return kept

    def evict(self, name: str) -> None:
        with self._lock:
            cached = self._clients.pop(name, None)
        if cached is not None:
            cached[1].close()

    def close(self) -> None:
        with self._lock:
            clients = list(self._clients.values())
            self._clients.clear()
        for _, client in clients:
            client.close()

    def __len__(self) -> int:
        with self._lock:
            return len(self._clients)


def run_concurrently(
    fn: Callable[[str], R], clusters: Iterable[str], max_workers: int = 8, timeout: float = 30.0
) -> dict[str, Outcome[R]]:
    """``fn(cluster)`` for every cluster, ``max_workers`` at a time; all done or abandoned by ``timeout``."""
    names = list(dict.fromkeys(clusters))
    if not names:
        return {}
    executor = ThreadPoolExecutor(
        max_workers=max(1, min(max_workers, len(names))), thread_name_prefix="member"
    )
    try:
        futures = {executor.submit(fn, name): name for name in names}
        wait(futures, timeout=timeout)
        return {name: _outcome(name, future, timeout) for future, name in futures.items()}
    finally:
        # Stragglers keep running until their own request timeouts; nobody waits for them.
        executor.shutdown(wait=False, cancel_futures=True)


def _outcome(name: str, future: Future[R], timeout: float) -> Outcome[R]:
    if not future.done():
        future.cancel()
        return Outcome(name, error=MemberError(name, f"no answer within {timeout}s", kind="timeout"))
    error = future.exception()
    if error is not None:
        return Outcome(name, error=error)
    return Outcome(name, value=future.result())
