"""Work status collection reads a member by LIST (one per kind its Works carry), not one GET per Work.

Real simulator over TLS, the official client underneath; the member calls of one round are counted at
the client's ``request``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import update

from federation.members.client import KubernetesMemberClient
from federation.sim import RunningSimulator, run_simulator_in_thread
from federation.store.tables import WorkRow
from federation.store.works import WorkRepository
from tests.controllers.test_execution_support import Harness, member_object
from tests.members.helpers import deployment, make_config
from tests.store.support import count_statements

WORKLOADS = 12


@pytest.fixture
def harness(database_url: str) -> Iterator[Harness]:
    running = Harness(database_url)
    try:
        yield running
    finally:
        running.close()


@pytest.fixture
def sim() -> Iterator[RunningSimulator]:
    running = run_simulator_in_thread(make_config(name="member1", nodes=2, node_cpu="64", ready_delay=0.05))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def member_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    calls: list[tuple[str, str]] = []
    real = KubernetesMemberClient.request

    def counted(self: KubernetesMemberClient, method: str, path: str, **kwargs: Any) -> Any:
        calls.append((method, path))
        return real(self, method, path, **kwargs)

    monkeypatch.setattr(KubernetesMemberClient, "request", counted)
    return calls


def statuses_ready(harness: Harness, expected: int = 2 * WORKLOADS) -> bool:
    with harness.uow() as session:
        works, _ = WorkRepository(session).objects.list()
    return len(works) == expected and all((w.get("status") or {}).get("manifestStatuses") for w in works)


def test_a_round_lists_each_kind_once_whatever_the_number_of_works(
    harness: Harness, sim: RunningSimulator, member_calls: list[tuple[str, str]]
) -> None:
    harness.add_cluster("member1", sim)
    for index in range(WORKLOADS):
        template = harness.add_template(deployment(f"web{index:02d}", 1))
        harness.add_binding(template, [{"name": "member1", "replicas": 1}])
        config = harness.add_template(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"cfg{index:02d}", "namespace": "default"},
            }
        )
        harness.add_binding(config, [{"name": "member1"}])
    harness.until(lambda: statuses_ready(harness), what="every Work applied with its statuses")

    member_calls.clear()
    harness.collector.reconcile()
    gets = [path for method, path in member_calls if method == "GET" and not path.endswith(("/api", "/apis"))]
    listed = sorted(path for path in gets if "/namespaces/" not in path)
    assert listed == ["/api/v1/configmaps", "/apis/apps/v1/deployments"], member_calls
    assert len(gets) == 2, member_calls  # 24 Works, two kinds: two LISTs, no GET per object


def test_a_deleted_member_object_is_missing_in_the_list_and_recreated(
    harness: Harness, sim: RunningSimulator
) -> None:
    harness.add_cluster("member1", sim)
    template = harness.add_template(deployment("web", 1))
    harness.add_binding(template, [{"name": "member1", "replicas": 1}])
    harness.until(lambda: member_object(sim, "Deployment", "web") is not None, what="web on the member")
    client = KubernetesMemberClient(sim.name, sim.kubeconfig)
    try:
        assert client.delete("apps/v1", "Deployment", "default", "web")
    finally:
        client.close()
    harness.until(lambda: member_object(sim, "Deployment", "web") is not None, what="web recreated")


def test_the_collectors_own_status_writes_are_not_read_back(harness: Harness, sim: RunningSimulator) -> None:
    """The fake clock stands still, so every round's feed re-reads the Works written since the last one,
    its own status writes included: those are skipped without reading the Works (what it wrote is what it
    tracks)."""
    harness.add_cluster("member1", sim)
    for index in range(WORKLOADS):
        template = harness.add_template(deployment(f"web{index:02d}", 1))
        harness.add_binding(template, [{"name": "member1", "replicas": 1}])
    harness.until(lambda: statuses_ready(harness, WORKLOADS), what="every Work applied with its statuses")
    with count_statements(harness.engine) as log:
        harness.collector.reconcile()
    # Which Works were written is read, the Works themselves are not (the one query that reads them labels
    # the Pull clusters' Works ``on_pull``).
    assert sum("on_pull" in statement for statement in log.statements) == 0, "\n".join(log.statements)


def test_a_round_writes_the_changed_statuses_by_a_fixed_number_of_statements(
    harness: Harness, sim: RunningSimulator
) -> None:
    harness.add_cluster("member1", sim)
    for index in range(WORKLOADS):
        template = harness.add_template(deployment(f"web{index:02d}", 1))
        harness.add_binding(template, [{"name": "member1", "replicas": 1}])
    harness.until(lambda: statuses_ready(harness, WORKLOADS), what="every Work applied with its statuses")
    # Every stored status goes stale (written later than the collector's last read with a new version, as a
    # write would be).
    with harness.uow() as session:
        later = harness.clock.now() + timedelta(hours=1)
        bumped = WorkRow.resource_version + 1
        session.execute(update(WorkRow).values(status={}, updated_at=later, resource_version=bumped))
    with count_statements(harness.engine) as log:
        assert harness.collector.reconcile().processed == WORKLOADS
    # Which Works were written since the last read, those Works, the Push clusters, the members'
    # credentials; the rows to write; their revisions, change-log rows and one executemany UPDATE.
    assert log.count == 4 + 1 + 3, "\n".join(log.statements)
    assert statuses_ready(harness, WORKLOADS)
