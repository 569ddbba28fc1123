"""The idle gate's SELECT does not fill the engine's compiled cache (issue 12, memory): its shape (which
probes it asks) changes with the reconcilers running, up to 2^n statements of ~33 KB compiled each, all
kept by the engine-wide LRU. Only shapes asked while no probed reconciler runs are cached, a few at most."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from sqlalchemy import ColumnElement, Engine, literal_column

from federation.controllers.idle_gate import CACHED_SHAPES, IdleGate
from federation.store import migrate
from federation.store.db import UnitOfWork, make_engine
from tests.controllers.test_change_feed_and_idle_gate import Monotonic

NAMES = [f"r{i}" for i in range(6)]


def _nothing(index: int) -> ColumnElement[bool]:
    """A probe that finds nothing, distinct per reconciler (as real probes are: each its own EXISTS)."""
    return literal_column(f"{index} < 0")  # type: ignore[no-any-return]


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    migrate.upgrade(database_url)
    made = make_engine(database_url)
    yield made
    made.dispose()


def _compiled(engine: Engine) -> int:
    cache = engine._compiled_cache  # type: ignore[attr-defined]
    return len(cache) if cache is not None else 0


def test_shapes_asked_while_passes_run_are_compiled_for_one_use(engine: Engine) -> None:
    clock = Monotonic()
    probes = {n: (lambda i=i: _nothing(i)) for i, n in enumerate(NAMES)}
    gate = IdleGate(UnitOfWork.for_engine(engine), probes, 0.5, clock)
    for name in NAMES:  # a first pass never asks
        assert gate.begin(name)
        gate.end(name, busy=False)
    clock.at += 1
    assert not gate.begin("r0")  # idle: every probe asked, cached
    assert (gate.evaluations, gate.cached_shapes) == (1, 1)
    before = _compiled(engine)
    shapes = 0
    for running in itertools.combinations(NAMES[1:], 2):  # 10 shapes: two passes running, r0 asks
        for name in running:
            gate.wake(name)
            assert gate.begin(name)
        clock.at += 1
        assert not gate.begin("r0")
        shapes += 1
        for name in running:
            gate.end(name, busy=False)
    assert gate.evaluations == 1 + shapes
    assert gate.cached_shapes == 1
    assert _compiled(engine) - before <= 1  # was one compiled statement per shape
    clock.at += 1
    assert not gate.begin("r0")  # idle again: the cached shape
    assert gate.cached_shapes == 1


def test_at_most_a_few_idle_shapes_are_cached(engine: Engine) -> None:
    answers: dict[str, object] = {n: _nothing(i) for i, n in enumerate(NAMES)}
    clock = Monotonic()
    gate = IdleGate(UnitOfWork.for_engine(engine), {n: (lambda n=n: answers[n]) for n in NAMES}, 0.5, clock)
    for name in NAMES:
        gate.begin(name)
        gate.end(name, busy=False)
    for constant in itertools.combinations(NAMES[1:], 2):  # probes answering without SQL shape the SELECT
        answers.update({n: (True if n in constant else _nothing(i)) for i, n in enumerate(NAMES)})
        clock.at += 1
        assert not gate.begin("r0")
    assert gate.cached_shapes == CACHED_SHAPES
