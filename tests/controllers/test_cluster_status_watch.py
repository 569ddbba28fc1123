"""Cluster status takes a member's resource summary from informers on its nodes and pods (real simulators
over HTTPS, a fake clock for the controller; the informers run on their own threads in real time, so the
tests wait for them with deadlines), and from a LIST of nodes and pods when it cannot watch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from federation.api.join import unjoin_cluster
from federation.controllers.cluster_status import ClusterStatusController
from federation.controllers.members_access import MemberAccess
from federation.members import client as member_client
from federation.members import probe as member_probe
from federation.members.client import KubernetesMemberClient, MemberClient
from federation.members.probe import ProbeResult
from federation.members.summary import ClusterSummary
from federation.sim import RunningSimulator
from tests.controllers.test_cluster_status import Harness
from tests.members.helpers import deployment, wait_for

LISTS = ("GET /api/v1/nodes", "GET /api/v1/pods")


@pytest.fixture
def harness(database_url: str, tmp_path: Path) -> Iterator[Harness]:
    running = Harness(database_url, tmp_path)
    yield running
    running.controller.close()
    running.close()


@contextmanager
def member_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every kube API request (the informers' LISTs included) and every health probe inside the block."""
    calls: list[str] = []
    request, probe_get = member_client.KubernetesMemberClient.request, member_probe._get

    def recorded_request(self: Any, method: str, path: str, **kwargs: Any) -> Any:
        calls.append(f"{method} {path}")
        return request(self, method, path, **kwargs)

    def recorded_probe(client: Any, path: str, started: float) -> Any:
        calls.append(f"GET {path}")
        return probe_get(client, path, started)

    with monkeypatch.context() as patched:
        patched.setattr(member_client.KubernetesMemberClient, "request", recorded_request)
        patched.setattr(member_probe, "_get", recorded_probe)
        yield calls


def synced(harness: Harness, name: str = "m1") -> None:
    wait_for(
        lambda: (w := harness.controller.informers.get(name)) is not None and w.synced,
        what=f"the informers of {name} synced",
    )


def allocated(harness: Harness, name: str = "m1") -> dict[str, str]:
    return dict(harness.cluster(name)["status"]["resourceSummary"]["allocated"])


def watched_allocated(harness: Harness, name: str = "m1") -> dict[str, str] | None:
    watch = harness.controller.informers.get(name)
    found = watch.summary() if watch is not None else None
    return None if found is None else found.resource_summary["allocated"]


def test_a_pass_at_rest_probes_the_member_and_lists_nothing(
    harness: Harness, start_sim: Callable[..., RunningSimulator], monkeypatch: pytest.MonkeyPatch
) -> None:
    harness.join(start_sim(name="m1", nodes=2), "m1")
    harness.pass_at(0)  # the first pass after the join: discovery, and a LIST while the informers list
    synced(harness)
    with member_calls(monkeypatch) as calls:
        for _ in range(3):
            assert harness.pass_at(10) == 0
    assert calls == ["GET /readyz"] * 3


def test_scaling_a_deployment_changes_allocated_through_the_watch(
    harness: Harness, start_sim: Callable[..., RunningSimulator], monkeypatch: pytest.MonkeyPatch
) -> None:
    sim = start_sim(name="m1", nodes=2, node_cpu="4", node_memory="8Gi")
    harness.join(sim, "m1")
    harness.pass_at(0)
    synced(harness)
    member = KubernetesMemberClient("m1", sim.kubeconfig)
    try:
        for replicas in (3, 1):
            member.apply(deployment("web", replicas, cpu="500m", memory="1Gi"))
            expected = {"cpu": f"{500 * replicas}m", "memory": f"{replicas}Gi", "pods": str(replicas)}
            wait_for(lambda: watched_allocated(harness) == expected, what=f"{replicas} pods watched")  # noqa: B023
            with member_calls(monkeypatch) as calls:
                assert harness.pass_at(10) == 1
            assert allocated(harness) == expected
            assert not [c for c in calls if c in LISTS]
    finally:
        member.close()


class NoWatch:
    """A member client without watch support (as the tests' fakes are), counting its summaries."""

    def __init__(self, client: MemberClient) -> None:
        self._client = client
        self.name = client.name
        self.summaries = 0

    def probe(self) -> ProbeResult:
        return self._client.probe()

    def version(self) -> str:
        return self._client.version()

    def api_enablements(self) -> list[dict[str, Any]]:
        return self._client.api_enablements()

    def resource_summary(self) -> ClusterSummary:
        self.summaries += 1
        return self._client.resource_summary()

    def close(self) -> None:
        self._client.close()


class NoWatchAccess(MemberAccess):
    def _build(self, name: str, kubeconfig: dict[str, Any]) -> MemberClient:
        return NoWatch(super()._build(name, kubeconfig))  # type: ignore[return-value]


def test_a_client_without_watch_support_gets_the_summary_by_list(
    harness: Harness, start_sim: Callable[..., RunningSimulator]
) -> None:
    harness.members.close()
    harness.members = NoWatchAccess(harness.uow, harness.box, harness.settings.members)
    harness.controller = ClusterStatusController(
        harness.uow, harness.clock, harness.members, harness.settings.controllers, harness.settings.members
    )
    sim = start_sim(name="m1", nodes=2, node_cpu="4", node_memory="8Gi")
    harness.join(sim, "m1")
    member = KubernetesMemberClient("m1", sim.kubeconfig)
    try:
        member.apply(deployment("web", 2, cpu="500m", memory="1Gi"))
        harness.pass_at(0)
        assert allocated(harness) == {"cpu": "1", "memory": "2Gi", "pods": "2"}
        member.apply(deployment("web", 3, cpu="500m", memory="1Gi"))
        assert harness.pass_at(10) == 1
        assert allocated(harness) == {"cpu": "1500m", "memory": "3Gi", "pods": "3"}
    finally:
        member.close()
    client = harness.members.client("m1")
    assert isinstance(client, NoWatch) and client.summaries == 2  # one LIST of nodes and pods a pass
    assert len(harness.controller.informers) == 0


def test_with_status_watch_off_every_pass_lists(
    database_url: str,
    tmp_path: Path,
    start_sim: Callable[..., RunningSimulator],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    harness = Harness(database_url, tmp_path, status_watch=False)
    try:
        harness.join(start_sim(name="m1"), "m1")
        harness.pass_at(0)
        with member_calls(monkeypatch) as calls:
            harness.pass_at(10)
        assert sorted(c for c in calls if c in LISTS) == sorted(LISTS)
        assert len(harness.controller.informers) == 0
    finally:
        harness.controller.close()
        harness.close()


def test_informers_follow_the_clusters_and_their_clients_and_stop_at_close(
    harness: Harness, start_sim: Callable[..., RunningSimulator]
) -> None:
    harness.join(start_sim(name="m1"), "m1")
    harness.join(start_sim(name="m2"), "m2")
    harness.pass_at(0)
    synced(harness, "m1")
    synced(harness, "m2")
    first = harness.controller.informers.get("m1")
    assert first is not None
    harness.members.forget("m1")  # its client closed: what rotated credentials do to it
    harness.pass_at(10)
    rotated = harness.controller.informers.get("m1")
    assert rotated is not None and rotated is not first
    wait_for(lambda: not first.alive, what="the old client's informers ended")
    unjoin_cluster(harness.uow, harness.box, harness.settings.members, "m1")
    harness.pass_at(10)
    assert "m1" not in harness.controller.informers
    wait_for(lambda: not rotated.alive, what="the unjoined cluster's informers ended")
    other = harness.controller.informers.get("m2")
    assert other is not None and other.synced
    harness.controller.close()
    assert len(harness.controller.informers) == 0
    wait_for(lambda: not other.alive, what="every informer ended at close")
