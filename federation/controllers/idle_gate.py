"""The runner's idle gate: an interval tick of a reconciler with nothing to do runs no pass.

A reconciler may say what its next pass would find with ``pending()``: True (something, or it cannot
tell cheaply), False (nothing), or a SQL boolean (an EXISTS over its queue or its change feed, built from
``store.probes`` and ``claims.claimable``). When an interval tick comes, the gate evaluates the SQL
probes of every probed reconciler that is not running in one SELECT, and the ticks that fall together
(the jobs of one interval fire in the same scheduler wake-up) share the verdicts. An idle federation
then costs one query per tick for all its controllers, instead of one to six per controller, each in a
transaction of its own (and a claim's UPDATE, fenced, besides).

Invariants:
- A probe is conservative: it may say True when the pass would find nothing, never False when it would
  find something. It reads the reconciler's state but never changes it.
- A pass runs without asking when it was woken (a write in this process wakes the kinds' watchers), when
  its last pass did something or failed (the next may have more to do: a batch cap, a retry), when it has
  not run yet, and when the reconciler has no probe (it runs on every tick, as before).
- A verdict is used only if it was taken after the reconciler's last pass ended and at most
  ``fresh_seconds`` ago; otherwise the probes are evaluated again.
- Probes are evaluated under the gate's lock and only for reconcilers not running, and a pass begins only
  under that lock: a probe never reads state its own pass is changing.
- A probe that raises, or a SELECT that fails (the database is away), lets the pass run: it fails and
  says so as it would have without the gate.
- The SELECT's shape (which probes it asks) varies with the reconcilers running and the probes that
  answered without SQL: up to 2^n statements, each ~33 KB compiled. Only shapes asked while no probed
  reconciler runs (what idle looks like), at most ``CACHED_SHAPES`` of them, go to the engine's compiled
  cache; the others are compiled for their one use (~2 ms, while passes run anyway). Caching every
  shape filled the engine-wide cache with them (MBs, evicting the controllers' own statements).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import ColumnElement, select

from federation.store.db import UnitOfWork

log = logging.getLogger(__name__)

# A SQL probe is selected as a column; True/False need no query.
Probe = bool | ColumnElement[bool]
ProbeFn = Callable[[], Probe]
# Shapes of the probes' SELECT kept in the engine's compiled cache (see the module doc).
CACHED_SHAPES = 8


class Probed(Protocol):
    """A reconciler that can tell whether an interval tick would find anything to do."""

    name: str

    def pending(self) -> Probe: ...


def probes_of(reconcilers: Iterable[Any]) -> dict[str, ProbeFn]:
    """name → ``pending`` of the reconcilers that have one."""
    found: dict[str, ProbeFn] = {}
    for reconciler in reconcilers:
        pending = getattr(reconciler, "pending", None)
        if callable(pending):
            found[str(reconciler.name)] = pending
    return found


@dataclass(frozen=True, slots=True)
class _Verdict:
    at: float
    run: bool


class IdleGate:
    def __init__(
        self,
        uow: UnitOfWork,
        probes: Mapping[str, ProbeFn],
        fresh_seconds: float,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._uow = uow
        self._probes = dict(probes)
        self._fresh = fresh_seconds
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._running: set[str] = set()
        self._must_run: set[str] = set(self._probes)  # woken, busy, or not run yet
        self._ended: dict[str, float] = {}
        self._verdicts: dict[str, _Verdict] = {}
        self._cached_shapes: set[tuple[str, ...]] = set()  # SELECT shapes compiled into the engine's cache
        self.evaluations = 0  # SELECTs of probes run (a test's and an operator's view of the idle cost)

    @property
    def probed(self) -> frozenset[str]:
        """The reconcilers whose interval ticks ask a probe first."""
        return frozenset(self._probes)

    def wake(self, name: str) -> None:
        """``name`` runs its next pass without asking its probe (something was written for it)."""
        with self._lock:
            self._must_run.add(name)

    def begin(self, name: str) -> bool:
        """Whether this tick of ``name`` runs a pass; when True the pass has begun (call ``end``)."""
        with self._lock:
            if name in self._probes and name not in self._must_run and not self._has_work(name):
                return False
            self._must_run.discard(name)
            self._running.add(name)
            return True

    def end(self, name: str, *, busy: bool) -> None:
        """The pass of ``name`` ended; ``busy``: it did something or failed, so the next one runs."""
        with self._lock:
            self._running.discard(name)
            self._ended[name] = self._monotonic()
            if busy:
                self._must_run.add(name)

    def _has_work(self, name: str) -> bool:
        verdict = self._verdicts.get(name)
        now = self._monotonic()
        if verdict is None or verdict.at < self._ended.get(name, -math.inf) or now - verdict.at > self._fresh:
            self._evaluate(now)
            verdict = self._verdicts[name]
        return verdict.run

    def _evaluate(self, now: float) -> None:
        asked: dict[str, ColumnElement[bool]] = {}
        for name, probe in self._probes.items():
            if name in self._running:
                continue
            answer = self._ask(name, probe)
            if isinstance(answer, bool):
                self._verdicts[name] = _Verdict(now, answer)
            else:
                asked[name] = answer
        for name, run in self._select(asked).items():
            self._verdicts[name] = _Verdict(now, run)

    def _ask(self, name: str, probe: ProbeFn) -> Probe:
        try:
            return probe()
        except Exception:
            log.exception("controller %s: its idle probe failed; running its pass", name)
            return True

    def _select(self, asked: Mapping[str, ColumnElement[bool]]) -> dict[str, bool]:
        if not asked:
            return {}
        columns = [probe.label(f"p{i}") for i, probe in enumerate(asked.values())]
        options = {} if self._cacheable(tuple(asked)) else {"compiled_cache": None}
        try:
            with self._uow() as session:
                row = session.execute(select(*columns), execution_options=options).one()
        except Exception as exc:  # the passes will fail and log it in full
            log.warning("idle probes: %s; running the passes", type(exc).__name__)
            return dict.fromkeys(asked, True)
        finally:
            self.evaluations += 1
        return {name: bool(value) for name, value in zip(asked, row, strict=True)}

    def _cacheable(self, shape: tuple[str, ...]) -> bool:
        """Whether the SELECT asking ``shape`` may be kept compiled: a shape seen while no probed reconciler
        runs, up to ``CACHED_SHAPES`` of them (the idle ticks' few); any other is compiled for one use."""
        if shape in self._cached_shapes:
            return True
        if self._running & self._probes.keys() or len(self._cached_shapes) >= CACHED_SHAPES:
            return False
        self._cached_shapes.add(shape)
        return True

    @property
    def cached_shapes(self) -> int:
        """How many SELECT shapes this gate put in the engine's compiled cache (at most ``CACHED_SHAPES``)."""
        return len(self._cached_shapes)
