"""The change feed's window (overlap, settling, resync) and the runner's idle gate (verdicts shared while
fresh, conservative on any failure), without a controller around them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import literal

from federation.controllers.change_feed import ChangeFeed
from federation.controllers.idle_gate import IdleGate
from federation.store import migrate
from federation.store.db import UnitOfWork, make_engine

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _pass(feed: ChangeFeed, now: datetime, stamps: list[datetime]) -> datetime | None:
    since = feed.since(now)
    feed.saw(stamps)
    feed.commit(now)
    return since


def test_the_window_re_reads_the_overlap_until_the_watermark_stood_still_for_as_long() -> None:
    feed = ChangeFeed(overlap=timedelta(seconds=5), resync_seconds=600)
    assert _pass(feed, _at(0), [_at(-1)]) is None  # the first pass reads everything
    assert feed.bound(_at(1)) == _at(-6)  # the full read's rows get their overlap
    assert _pass(feed, _at(2), [_at(2)]) == _at(-6)
    assert feed.bound(_at(6)) == _at(-3)  # moved at 2: open until 7
    assert feed.bound(_at(7)) == _at(2)  # settled: only rows newer than the watermark
    assert _pass(feed, _at(8), []) == _at(2)
    assert _pass(feed, _at(9), [_at(9)]) == _at(2)
    assert feed.bound(_at(10)) == _at(4)  # it moved again: the window is open again


def test_bound_has_no_side_effects_and_a_failed_pass_leaves_the_watermark() -> None:
    feed = ChangeFeed(overlap=timedelta(seconds=5), resync_seconds=600)
    _pass(feed, _at(0), [_at(0)])
    assert feed.bound(_at(1)) == feed.bound(_at(1)) == _at(-5)
    feed.since(_at(2))
    feed.saw([_at(2)])  # the pass failed: no commit
    assert feed.since(_at(3)) == _at(-5)


def test_a_full_read_every_resync_and_after_reset() -> None:
    feed = ChangeFeed(overlap=timedelta(seconds=5), resync_seconds=60)
    _pass(feed, _at(0), [_at(0)])
    assert feed.bound(_at(59)) is not None
    assert feed.bound(_at(60)) is None
    _pass(feed, _at(60), [])
    assert feed.bound(_at(61)) == _at(-5)
    feed.reset()
    assert feed.bound(_at(62)) is None


@pytest.fixture
def uow(database_url: str) -> Iterator[UnitOfWork]:
    migrate.upgrade(database_url)
    engine = make_engine(database_url)
    yield UnitOfWork.for_engine(engine)
    engine.dispose()


class Monotonic:
    at = 100.0

    def __call__(self) -> float:
        return self.at


def test_verdicts_are_one_select_shared_while_fresh_and_taken_after_the_last_pass(uow: UnitOfWork) -> None:
    answers = {"a": literal(False), "b": literal(True)}
    clock = Monotonic()
    gate = IdleGate(uow, {name: (lambda n=name: answers[n]) for name in answers}, 0.5, clock)
    for name in answers:  # a first pass never asks
        assert gate.begin(name)
        gate.end(name, busy=False)
    assert not gate.begin("a")
    assert gate.begin("b")
    assert gate.evaluations == 1  # both answered by one SELECT
    clock.at += 0.1
    gate.end("b", busy=False)
    assert gate.begin("b")  # its pass ended after the verdict: asked again
    assert gate.evaluations == 2
    gate.end("b", busy=True)
    assert gate.begin("b")  # busy: runs without asking
    assert gate.evaluations == 2
    gate.end("b", busy=False)
    clock.at += 1
    gate.wake("a")
    assert gate.begin("a")  # woken: runs without asking
    assert gate.evaluations == 2


def test_a_failing_probe_or_select_lets_the_pass_run(uow: UnitOfWork, free_tcp_port: int) -> None:
    def broken() -> bool:
        raise RuntimeError("probe bug")

    gate = IdleGate(uow, {"a": broken, "b": lambda: literal(False)}, 0.5, Monotonic())
    for name in ("a", "b"):
        gate.begin(name)
        gate.end(name, busy=False)
    assert gate.begin("a")
    assert not gate.begin("b")
    gone = make_engine(f"postgresql+psycopg://postgres@127.0.0.1:{free_tcp_port}/nothing")  # nobody listens
    away = IdleGate(UnitOfWork.for_engine(gone), {"c": lambda: literal(False)}, 0.5, Monotonic())
    away.begin("c")
    away.end("c", busy=False)
    assert away.begin("c")  # the database is away: the pass runs and fails as it would have
