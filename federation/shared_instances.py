"""One instance of each distinct value a long-lived cache holds many equal copies of.

Why: an informer keeps a projection per member object and work status a manifests tuple per Work; most are
equal to many others (10,000 Deployments of one replica, all ready, project to the same bytes; a
template's Works on three clusters carry the same identities). Each equal copy is a few hundred bytes of a
process that holds tens of thousands of them.

Invariants:
- ``share(value)`` returns the instance already kept for an equal value, or keeps ``value`` and returns it.
- The table never grows past twice what its owner uses plus a slack: ``prune`` rebuilds it from the values
  in use once it is larger, so values no entry holds any more do not pile up (amortised O(1) per value).
- Not thread-safe: one owner, one thread (an informer's thread; the collector's passes).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)
SLACK = 1024  # distinct values kept beyond twice the owner's count before a rebuild


class SharedInstances(Generic[T]):
    def __init__(self, slack: int = SLACK) -> None:
        self._table: dict[T, T] = {}
        self._slack = slack

    def share(self, value: T) -> T:
        return self._table.setdefault(value, value)

    def prune(self, in_use: int, values: Callable[[], Iterable[T]]) -> None:
        """Rebuild from ``values()`` (the ``in_use`` values the owner holds) once the table holds more
        than twice as many as that, plus the slack."""
        if len(self._table) > 2 * in_use + self._slack:
            self._table = {}
            for value in values():
                self._table.setdefault(value, value)

    def __len__(self) -> int:
        return len(self._table)
