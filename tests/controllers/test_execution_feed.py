"""The change feed the execution and binding-status controllers queue by (pure, no database)."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta

from federation.controllers.change_feed import ChangeFeed

T0 = datetime(2026, 5, 1, tzinfo=UTC)


def test_first_pass_reads_everything_then_only_newer_rows_with_an_overlap() -> None:
    feed = ChangeFeed(overlap=timedelta(seconds=5), resync_seconds=600)
    assert feed.since(T0) is None
    feed.saw([T0 - timedelta(seconds=30), T0 - timedelta(seconds=10)])
    feed.commit(T0)
    assert feed.since(T0 + timedelta(seconds=1)) == T0 - timedelta(seconds=15)


def test_a_failed_pass_does_not_move_the_watermark() -> None:
    feed = ChangeFeed(overlap=timedelta(0))
    feed.since(T0)
    feed.saw([T0])
    feed.commit(T0)
    feed.since(T0)
    feed.saw([T0 + timedelta(seconds=9)])  # no commit: the pass failed
    assert feed.since(T0) == T0
    feed.commit(T0)
    assert feed.since(T0) == T0


def test_a_full_resync_comes_round_on_the_injected_clock() -> None:
    feed = ChangeFeed(overlap=timedelta(0), resync_seconds=60)
    feed.since(T0)
    feed.saw([T0])
    feed.commit(T0)
    assert feed.since(T0 + timedelta(seconds=59)) == T0
    assert feed.since(T0 + timedelta(seconds=60)) is None


def _rows(*rows: tuple[int, float, int]) -> list[tuple[int, datetime, int, int]]:
    """(id, seconds after T0, resourceVersion) as feed rows whose target is their own id."""
    return [(i, T0 + timedelta(seconds=s), i, rv) for i, s, rv in rows]


def _take(feed: ChangeFeed, now: float, rows: list[tuple[int, datetime, int, int]]) -> list[int]:
    feed.since(T0 + timedelta(seconds=now))
    fresh = [target for target, _ in feed.take(rows)]
    feed.commit(T0 + timedelta(seconds=now))
    return fresh


def test_a_row_re_read_in_the_window_at_the_version_handed_out_is_not_news() -> None:
    feed = ChangeFeed(overlap=timedelta(seconds=5), resync_seconds=600)
    assert _take(feed, 0, _rows((1, -1, 10), (2, -2, 20))) == [1, 2]  # the full pass hands out everything
    assert feed.since(T0 + timedelta(seconds=1)) == T0 - timedelta(seconds=6)  # the window re-reads both
    assert _take(feed, 1, _rows((1, -1, 10), (2, -2, 20))) == []
    # Written again at the same stamp (a clock standing still): the version says it is news.
    assert _take(feed, 2, _rows((1, -1, 11), (2, -2, 20))) == [1]
    assert _take(feed, 3, _rows((1, -1, 11), (2, -2, 20), (3, -1.5, 30))) == [3]  # committed late


def test_a_failed_pass_hands_its_rows_out_again_and_a_full_pass_hands_out_everything() -> None:
    feed = ChangeFeed(overlap=timedelta(seconds=5), resync_seconds=60)
    assert _take(feed, 0, _rows((1, 0, 10))) == [1]
    feed.since(T0 + timedelta(seconds=1))
    assert [t for t, _ in feed.take(_rows((1, 0, 10), (2, 1, 20)))] == [2]  # no commit: the pass failed
    assert _take(feed, 2, _rows((1, 0, 10), (2, 1, 20))) == [2]
    assert _take(feed, 60, _rows((1, 0, 10), (2, 1, 20))) == [1, 2]  # the resync forgets what was handled
    feed.reset()
    assert _take(feed, 61, _rows((1, 0, 10))) == [1]


def test_the_consumers_own_writes_are_not_handed_back() -> None:
    feed = ChangeFeed(overlap=timedelta(seconds=5), resync_seconds=600)
    feed.since(T0)
    assert [t for t, _ in feed.take(_rows((1, 0, 10)))] == [1]
    feed.own([(1, T0 + timedelta(seconds=1), 11)])  # it wrote row 1 (status) in this pass
    feed.commit(T0)
    assert _take(feed, 2, _rows((1, 1, 11))) == []
    assert _take(feed, 3, _rows((1, 1, 12))) == [1]  # someone else wrote it since


def test_what_is_remembered_is_bounded_by_the_window() -> None:
    feed = ChangeFeed(overlap=timedelta(seconds=5), resync_seconds=600)
    _take(feed, 0, _rows(*((i, i * 0.01, i) for i in range(1000))))
    # Stamped within 5 s of the watermark (9.99 s): the rest are never re-read before the next full pass.
    assert feed.remembered == 500
    _take(feed, 20, _rows((5000, 20, 1)))
    assert feed.remembered == 1
    # And its memory with it: the table that held 1,000 rows is not kept for the one left.
    assert sys.getsizeof(feed._delivered) == sys.getsizeof({5000: (T0, 1)})
