"""Work sync talks to one member over several lanes at once (``members.applies_in_flight_per_cluster``):
every task gets exactly one result, the lanes really are in flight together, and a connectivity failure
in one lane stops every lane from starting more (one timeout per cluster, not one per task)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from federation.controllers.work_sync import ClusterLanes, SyncTask
from federation.members.errors import MemberError
from federation.store.claims import Claim
from tests.members.helpers import deployment


def _tasks(count: int) -> list[SyncTask]:
    return [
        SyncTask(
            Claim(i, f"uid-{i}", "Work", "karmada-es-member1", f"w{i}", 1),
            "member1",
            (deployment(f"d{i}", 1),),
        )
        for i in range(count)
    ]


class Member:
    """Answers applies; ``gate`` (a barrier) holds each apply until that many are in flight together."""

    name = "member1"

    def __init__(self, gate: threading.Barrier | None = None, down_after: int | None = None) -> None:
        self.gate = gate
        self.down_after = down_after
        self.lock = threading.Lock()
        self.started: list[str] = []
        self.in_flight = 0
        self.most_in_flight = 0

    def apply(self, manifest: dict[str, Any]) -> dict[str, Any]:
        name = manifest["metadata"]["name"]
        with self.lock:
            self.started.append(name)
            calls = len(self.started)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.down_after is not None and calls > self.down_after:
                raise MemberError(self.name, "connection refused", kind="unreachable")
            if self.gate is not None:
                self.gate.wait(timeout=10)  # BrokenBarrierError unless the lanes run side by side
            return {**manifest, "status": {"replicas": 1, "readyReplicas": 1}}
        finally:
            with self.lock:
                self.in_flight -= 1


def test_every_task_gets_one_result_and_the_lanes_run_side_by_side() -> None:
    tasks = _tasks(12)
    member = Member(gate=threading.Barrier(4))
    lanes = ClusterLanes(member, tasks)  # type: ignore[arg-type]
    results: list[Any] = []
    threads = [threading.Thread(target=lambda i=i: results.extend(lanes.run_lane(i, 4))) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(r.task.claim.id for r in results) == list(range(12))
    assert all(r.ok for r in results)
    assert member.most_in_flight == 4
    assert sorted(member.started) == sorted(f"d{i}" for i in range(12))


def test_one_lane_is_one_request_at_a_time() -> None:
    member = Member()
    results = ClusterLanes(member, _tasks(5)).run_lane(0, 1)  # type: ignore[arg-type]
    assert [r.task.claim.id for r in results] == [0, 1, 2, 3, 4]
    assert member.most_in_flight == 1


def test_a_lane_that_finds_the_member_unreachable_stops_the_others() -> None:
    tasks = _tasks(40)
    member = Member(down_after=2)  # the third apply finds the member gone
    lanes = ClusterLanes(member, tasks)  # type: ignore[arg-type]
    first = lanes.run_lane(0, 2)  # lane 0 alone: d0, d2 applied, d4 unreachable, the rest not tried
    assert [r.ok for r in first[:2]] == [True, True]
    assert all("connection refused" in r.errors[0] for r in first[2:])
    assert len(first) == 20
    tried = len(member.started)
    second = lanes.run_lane(1, 2)  # the other lane starts nothing once the cluster was found down
    assert len(member.started) == tried
    assert len(second) == 20 and all("connection refused" in r.errors[0] for r in second)


@pytest.mark.parametrize("in_flight", [1, 3])
def test_work_sync_uses_the_setting(in_flight: int) -> None:
    from federation.controllers.work_sync import WorkSync
    from federation.settings import MemberSettings

    class Access:
        settings = MemberSettings(applies_in_flight_per_cluster=in_flight)

    sync = WorkSync(uow=None, clock=None, identity="me", members=Access())  # type: ignore[arg-type]
    member = Member(gate=threading.Barrier(in_flight) if in_flight > 1 else None)
    results = sync._sync_cluster(member, _tasks(9))  # type: ignore[arg-type]
    assert sorted(r.task.claim.id for r in results) == list(range(9))
    assert member.most_in_flight == in_flight
