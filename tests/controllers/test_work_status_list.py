"""Work status collection reads a member by watches (informers: one LIST and one WATCH per kind its Works
carry), or, with ``watch_members`` off, by one LIST per kind per round; never one GET per Work.

Real simulator over TLS, the official client underneath; the member calls of one round are counted at
the client's ``request`` (LISTs, GETs) and ``watch``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from federation.controllers import work_status
from federation.members.client import KubernetesMemberClient
from federation.members.errors import MemberError
from federation.sim import RunningSimulator, run_simulator_in_thread
from federation.store import status_writes
from federation.store.errors import Conflict
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

    real_watch = KubernetesMemberClient.watch

    def counted_watch(self: KubernetesMemberClient, *args: Any, **kwargs: Any) -> Any:
        calls.append(("WATCH", f"{args[0]}/{args[1]}"))
        return real_watch(self, *args, **kwargs)

    monkeypatch.setattr(KubernetesMemberClient, "request", counted)
    monkeypatch.setattr(KubernetesMemberClient, "watch", counted_watch)
    return calls


def statuses_ready(harness: Harness, expected: int = 2 * WORKLOADS) -> bool:
    with harness.uow() as session:
        works, _ = WorkRepository(session).objects.list()
    return len(works) == expected and all((w.get("status") or {}).get("manifestStatuses") for w in works)


def add_workloads(harness: Harness, sim: RunningSimulator) -> None:
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


def stale_statuses(harness: Harness, sim: RunningSimulator, session: Session) -> None:
    """WORKLOADS Deployments applied with their statuses, then every stored status gone stale (written later
    than the collector's last read with a new version, as a write would be)."""
    harness.add_cluster("member1", sim)
    for index in range(WORKLOADS):
        template = harness.add_template(deployment(f"web{index:02d}", 1))
        harness.add_binding(template, [{"name": "member1", "replicas": 1}])
    harness.until(lambda: statuses_ready(harness, WORKLOADS), what="every Work applied with its statuses")
    later = harness.clock.now() + timedelta(hours=1)
    bumped = WorkRow.resource_version + 1
    session.execute(update(WorkRow).values(status={}, updated_at=later, resource_version=bumped))


def is_discovery(path: str) -> bool:
    parts = path.strip("/").split("/")
    return (parts[0] == "api" and len(parts) <= 2) or (parts[0] == "apis" and len(parts) <= 3)


def gets_of(calls: list[tuple[str, str]]) -> list[str]:
    return [path for method, path in calls if method == "GET" and not is_discovery(path)]


def test_a_round_lists_each_kind_once_whatever_the_number_of_works(
    harness: Harness, sim: RunningSimulator, member_calls: list[tuple[str, str]]
) -> None:
    harness.collector.watch_members = False
    add_workloads(harness, sim)
    harness.until(lambda: statuses_ready(harness), what="every Work applied with its statuses")

    member_calls.clear()
    harness.collector.reconcile()
    gets = gets_of(member_calls)
    listed = sorted(path for path in gets if "/namespaces/" not in path)
    assert listed == ["/api/v1/configmaps", "/apis/apps/v1/deployments"], member_calls
    assert len(gets) == 2, member_calls  # 24 Works, two kinds: two LISTs, no GET per object
    assert not [call for call in member_calls if call[0] == "WATCH"]


def test_watched_members_are_listed_once_per_kind_and_a_round_at_rest_calls_no_member(
    harness: Harness, sim: RunningSimulator, member_calls: list[tuple[str, str]]
) -> None:
    add_workloads(harness, sim)
    harness.until(lambda: statuses_ready(harness), what="every Work applied with its statuses")
    listed = sorted(path for path in gets_of(member_calls) if "/namespaces/" not in path)
    # One LIST per kind when its informer started (a second only if a watch was cut meanwhile).
    assert set(listed) == {"/api/v1/configmaps", "/apis/apps/v1/deployments"}, member_calls
    assert len(listed) <= 4, member_calls
    # An informer is synced by its LIST and opens its WATCH right after, on its own thread: the statuses
    # can be ready a moment before the second WATCH call is made.
    watches = {("WATCH", "v1/ConfigMap"), ("WATCH", "apps/v1/Deployment")}
    harness.until(
        lambda: {call for call in member_calls if call[0] == "WATCH"} == watches, what="two WATCHes"
    )

    member_calls.clear()
    for _ in range(3):
        harness.collector.reconcile()
    assert member_calls == []


def test_a_member_status_change_reaches_the_work_through_the_watch(
    harness: Harness, sim: RunningSimulator, member_calls: list[tuple[str, str]]
) -> None:
    """Scaling a Deployment on the member (its status changes there) is written into its Work without a
    LIST or GET: the informer's event carries it."""
    add_workloads(harness, sim)
    harness.until(lambda: statuses_ready(harness), what="every Work applied with its statuses")
    client = KubernetesMemberClient(sim.name, sim.kubeconfig)
    try:
        client.request(
            "PATCH",
            "/apis/apps/v1/namespaces/default/deployments/web03",
            body={"spec": {"replicas": 3}},
            content_type="application/merge-patch+json",
        )
    finally:
        client.close()
    member_calls.clear()

    def replicas_of_web03() -> int:
        with harness.uow() as session:
            works, _ = WorkRepository(session).objects.list()
        for work in works:
            for entry in (work.get("status") or {}).get("manifestStatuses") or []:
                if entry["identifier"]["name"] == "web03":
                    return int((entry.get("status") or {}).get("replicas") or 0)
        return 0

    harness.until(lambda: replicas_of_web03() == 3, what="web03's Work to show 3 replicas")
    collector_calls = [
        call for call in member_calls if call[0] in ("GET", "WATCH") and "web03" not in call[1]
    ]
    assert not [c for c in collector_calls if c[0] == "GET" and "/namespaces/" not in c[1]], member_calls


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
    with harness.uow() as session:
        stale_statuses(harness, sim, session)
    with count_statements(harness.engine) as log:
        assert harness.collector.reconcile().processed == WORKLOADS
    # Which Works were written since the last read, those Works, the Push clusters, the members'
    # credentials; the rows to write; their revisions, change-log rows and one executemany UPDATE.
    assert log.count == 4 + 1 + 3, "\n".join(log.statements)
    assert statuses_ready(harness, WORKLOADS)


def test_a_round_writes_many_changed_statuses_a_chunk_per_transaction(
    harness: Harness, sim: RunningSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write holds each Work whole: a round that finds thousands changed writes them ``WRITE_CHUNK`` at a
    time, each chunk its own transaction with the same few statements."""
    monkeypatch.setattr(work_status, "WRITE_CHUNK", 5)
    with harness.uow() as session:
        stale_statuses(harness, sim, session)
    with count_statements(harness.engine) as log:
        assert harness.collector.reconcile().processed == WORKLOADS
    # The reads as above, then per chunk (5, 5 and 2 Works): its rows, revisions, change-log rows, UPDATE.
    assert log.count == 4 + 3 * 4, "\n".join(log.statements)
    assert statuses_ready(harness, WORKLOADS)


def test_a_chunk_that_meets_a_concurrent_write_is_retried_and_the_others_stand(
    harness: Harness, sim: RunningSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(work_status, "WRITE_CHUNK", 5)
    with harness.uow() as session:
        stale_statuses(harness, sim, session)
    real_write, calls = status_writes.write_works, []

    def second_conflicts(*args: Any, **kwargs: Any) -> Any:
        calls.append(len(args[2]))
        if len(calls) == 2:
            raise Conflict("Work", "default", "", "written meanwhile")
        return real_write(*args, **kwargs)

    monkeypatch.setattr(status_writes, "write_works", second_conflicts)
    assert harness.collector.reconcile().processed == WORKLOADS - 5  # the first and the last chunk
    assert calls == [5, 5, 2]
    with harness.uow() as session:
        stale = session.scalars(select(WorkRow.id).where(WorkRow.status == {})).all()
    assert len(stale) == 5  # the conflicting chunk's Works, rolled back whole
    monkeypatch.setattr(status_writes, "write_works", real_write)
    harness.collector.reconcile()  # the next round writes what was left
    assert statuses_ready(harness, WORKLOADS)


def test_a_work_without_its_bindings_id_is_written_by_the_orm_which_finds_it(
    harness: Harness, sim: RunningSimulator
) -> None:
    """Statuses go as column values, but a Work whose binding id is not known yet (written before its
    binding) goes through the ORM, whose ``derive`` looks its binding up: the write fills it in."""
    with harness.uow() as session:
        stale_statuses(harness, sim, session)
        session.execute(update(WorkRow).where(WorkRow.name.like("web00-%")).values(binding_id=None))
    assert harness.collector.reconcile().processed == WORKLOADS
    assert statuses_ready(harness, WORKLOADS)
    with harness.uow() as session:
        assert None not in session.scalars(select(WorkRow.binding_id)).all()


def test_a_member_that_refuses_to_be_watched_is_read_by_list_rounds_and_not_asked_again(
    harness: Harness, sim: RunningSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    def refuse(self: KubernetesMemberClient, api_version: str, kind: str, *args: Any) -> str:
        asked.append(kind)
        raise MemberError(self.name, f"LIST {kind}: forbidden", kind="forbidden", status=403)

    monkeypatch.setattr(KubernetesMemberClient, "list_for_watch", refuse)
    add_workloads(harness, sim)
    harness.until(lambda: statuses_ready(harness), what="every Work's statuses, by LIST rounds")
    for _ in range(3):
        harness.collector.reconcile()
    assert sorted(asked) == ["ConfigMap", "Deployment"]  # once per kind, not once per round
