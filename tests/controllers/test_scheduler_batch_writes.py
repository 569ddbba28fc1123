"""The scheduler's batch writes overlapping the next batch's decisions (``scheduler.BatchWrites``): with
depth 1 writes commit in batch order with at most one in flight, with depth 2 never more than two run at
once; a write's failure reaches the pass, a pass of several batches schedules every binding (on Postgres
with its writes on the worker threads, on SQLite without), and a batch that reads WorkloadPolicy counts
waits for the writes before it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from federation.controllers.batch_pipeline import BatchWrites
from federation.controllers.scheduler import Pending, Scheduler
from tests.controllers.test_scheduler import DYNAMIC, Harness, deployment, policy
from tests.controllers.test_scheduler_workload_policy import shared_policy, team


def batch(*items: int) -> Any:
    """Stand-ins for a batch's ``Pending`` decisions: the writes under test only pass them on."""
    return list(items)


class Recorder:
    """A batch write that records its batch, its thread and how many writes overlapped it."""

    def __init__(self, seconds: float = 0.02, fail_on: int | None = None) -> None:
        self.seconds, self.fail_on = seconds, fail_on
        self.batches: list[Any] = []
        self.threads: set[str] = set()
        self.running = 0
        self.most_at_once = 0
        self._lock = threading.Lock()

    def __call__(self, pending: Sequence[Any]) -> int:
        with self._lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        try:
            time.sleep(self.seconds)
            self.threads.add(threading.current_thread().name)
            if self.fail_on is not None and pending[0] == self.fail_on:
                raise RuntimeError("the database went away")
            self.batches.append(pending[0])
            return len(pending)
        finally:
            with self._lock:
                self.running -= 1


@pytest.mark.parametrize("overlap", [True, False])
def test_writes_commit_in_batch_order_one_at_a_time(overlap: bool) -> None:
    write = Recorder()
    with BatchWrites(overlap=overlap) as writes:
        for number in range(5):
            writes.submit(write, batch(number, number), last=number == 4)
            assert writes.in_flight() is (overlap and number < 4)
    assert write.batches == [0, 1, 2, 3, 4]
    assert writes.written == 10
    assert write.most_at_once == 1
    caller = threading.current_thread().name
    # The last batch is written on the pass's own thread, the others on the worker when overlapping.
    assert write.threads == ({"scheduler-write_0", caller} if overlap else {caller})


def test_up_to_depth_writes_run_at_once_and_every_one_is_counted() -> None:
    write = Recorder(seconds=0.05)
    with BatchWrites(overlap=True, depth=2) as writes:
        for number in range(6):
            writes.submit(write, batch(number, number), last=number == 5)
    assert sorted(write.batches) == list(range(6))
    assert writes.written == 12
    assert write.most_at_once == 2  # the last, on the pass's thread, beside the one still in flight


def test_with_two_in_flight_a_failed_write_is_raised_once_the_other_has_ended() -> None:
    write = Recorder(seconds=0.05, fail_on=0)
    with pytest.raises(RuntimeError, match="went away"), BatchWrites(overlap=True, depth=2) as writes:
        writes.submit(write, batch(0))
        writes.submit(write, batch(1))
    assert write.batches == [1] and write.running == 0


def test_a_failed_write_is_raised_in_the_pass() -> None:
    write = Recorder(fail_on=1)
    with pytest.raises(RuntimeError, match="went away"), BatchWrites(overlap=True) as writes:
        writes.submit(write, batch(0))
        writes.submit(write, batch(1))
        writes.submit(write, batch(2))  # raises: the write of batch 1 failed
    assert write.batches == [0]


def test_a_failed_last_write_is_raised_when_the_pass_ends() -> None:
    with pytest.raises(RuntimeError), BatchWrites(overlap=True) as writes:
        writes.submit(Recorder(fail_on=0), batch(0))


@pytest.fixture
def small_batches(database_url: str) -> Iterator[Harness]:
    running = Harness(database_url, batch_size=2)
    yield running
    running.close()


def test_a_pass_of_several_batches_schedules_every_binding(
    small_batches: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[tuple[int, str]] = []  # (the batch's first claimed row id, the thread that wrote it)
    real = Scheduler._write_batch

    def recording(self: Scheduler, pending: Sequence[Pending]) -> int:
        threads.append((min(p.item.id for p in pending), threading.current_thread().name))
        return real(self, pending)

    monkeypatch.setattr(Scheduler, "_write_batch", recording)
    for name in ("member1", "member2"):
        small_batches.add_cluster(name, pods=100)
    small_batches.create(policy("all", {"replicaScheduling": DYNAMIC}))
    names = [f"app{i}" for i in range(7)]
    for name in names:
        small_batches.create(deployment(name, 4))
    assert small_batches.run() == 7
    for name in names:
        assert sum(small_batches.placement(f"{name}-deployment").values()) == 4
        assert small_batches.claim_state(f"{name}-deployment") == (False, None)
        assert len(small_batches.decisions(f"{name}-deployment")) == 1
    assert len(threads) == 4  # 2 + 2 + 2 + 1
    # In the batches' order (a worker may start the third write after the pass has written the last one).
    on_worker = [t.startswith("scheduler-write") for _, t in sorted(threads)]
    on_postgres = small_batches.engine.dialect.name == "postgresql"
    assert on_worker == ([True, True, True, False] if on_postgres else [False] * 4)  # the last: the pass's
    assert small_batches.run() == 0  # nothing left queued


def test_a_batch_reading_policy_counts_waits_for_the_write_before_it(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three workloads sharing a WorkloadPolicy's 4 replicas, one per batch, each write slow: without the
    wait a batch would read the counts before the one before it is written and give out a share twice."""
    real = Scheduler._write_batch

    def slow(self: Scheduler, pending: Sequence[Pending]) -> int:
        time.sleep(0.3)
        return real(self, pending)

    monkeypatch.setattr(Scheduler, "_write_batch", slow)
    harness = Harness(database_url, batch_size=1)
    try:
        harness.add_cluster("member1", labels={"tier": "edge"})
        harness.add_cluster("member2", labels={"tier": "core"})
        harness.create(shared_policy())  # edge 1, core 3, shared by every `team: web` workload
        harness.create(policy("web", {"replicaScheduling": DYNAMIC}))
        for name in ("a", "b", "c"):
            harness.create(team(name, 2))
        harness.run()
        placed = {n: harness.placement(f"{n}-deployment") for n in ("a", "b", "c")}
        assert sum(sum(p.values()) for p in placed.values()) == 4, placed  # the policy's counts, no more
        assert placed["a"] == {"member1": 1, "member2": 1}
    finally:
        harness.close()


def test_the_next_batch_is_claimed_on_its_own_thread_while_the_pass_decides(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On Postgres each full batch starts the next claim on the claim thread; the claims are held for the
    pass's own thread (renewed while it runs, forgotten when it ends); every binding is scheduled once."""
    from federation.store import claims

    threads: list[str] = []
    real = Scheduler._claim_batch

    def recording(self: Scheduler, holder: int) -> Any:
        threads.append(threading.current_thread().name)
        return real(self, holder)

    monkeypatch.setattr(Scheduler, "_claim_batch", recording)
    harness = Harness(database_url, batch_size=2)
    try:
        harness.add_cluster("member1", pods=100)
        harness.create(policy("all", {"replicaScheduling": DYNAMIC}))
        for index in range(5):
            harness.create(deployment(f"app{index}", 1))
        harness.detector.reconcile()
        harness.scheduler._requeue_for_cluster_changes()
        assert harness.scheduler.reconcile().processed == 5
        for index in range(5):
            assert len(harness.decisions(f"app{index}-deployment")) == 1
        assert claims.HOLDINGS.of("test") == {}  # every claim given back, whichever thread took it
    finally:
        harness.close()
    on_claim_thread = [t.startswith("scheduler-claim") for t in threads]
    on_postgres = harness.engine.dialect.name == "postgresql"
    # Batches of 2, 2 and 1: the first is claimed by the pass, the next two while the one before is decided.
    assert on_claim_thread == ([False, True, True] if on_postgres else [False, False, False])
