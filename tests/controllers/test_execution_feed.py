"""The change feed the execution and binding-status controllers queue by (pure, no database)."""

from __future__ import annotations

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
