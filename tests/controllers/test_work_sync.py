"""Work sync and status collection against real simulators (HTTPS sockets), on both backends: bindings
become member objects, member status comes back up to the binding and the template, deletions reach the
members, failures are recorded and retried with back-off on a fake clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Text, cast, select

from federation.controllers.execution import ExecutionController
from federation.controllers.work_sync import WorkSync, backoff_seconds
from federation.sim import RunningSimulator
from federation.store.db import UnitOfWork
from federation.store.repository import ObjectRepository
from federation.store.tables import WorkRow
from tests.controllers.test_execution_support import Harness, harness, member_object, nginx, ready, start_sim

__all__ = ["harness", "start_sim"]  # fixtures, re-exported for pytest

StartSim = Callable[..., RunningSimulator]
GRACEFUL = {"reason": "TaintUntolerated", "producer": "TaintManager", "purgeMode": "Gracefully"}


def _condition(obj: dict[str, Any] | None, type_: str) -> dict[str, Any] | None:
    for condition in ((obj or {}).get("status") or {}).get("conditions") or []:
        if condition["type"] == type_:
            return condition
    return None


def _healthy_works(h: Harness, clusters: set[str]) -> dict[str, dict[str, Any]] | None:
    works = h.works()
    if set(works) != clusters:
        return None
    for work in works.values():
        statuses = (work.get("status") or {}).get("manifestStatuses") or []
        if [s.get("health") for s in statuses] != ["Healthy"]:
            return None
    return works


def _template_status(h: Harness, template: dict[str, Any], ready_replicas: int) -> dict[str, Any] | None:
    found = h.template(template)
    status = (found or {}).get("status") or {}
    return status if status.get("readyReplicas") == ready_replicas else None


def _two_members(h: Harness, start: StartSim) -> tuple[RunningSimulator, RunningSimulator]:
    m1, m2 = start("member1"), start("member2")
    h.add_cluster("member1", m1)
    h.add_cluster("member2", m2)
    return m1, m2


def test_binding_to_members_and_back(harness: Harness, start_sim: StartSim) -> None:
    m1, m2 = _two_members(harness, start_sim)
    template = harness.add_template(nginx(replicas=3))
    binding = harness.add_binding(
        template, [{"name": "member1", "replicas": 1}, {"name": "member2", "replicas": 2}]
    )

    harness.until(
        lambda: ready(m1, "nginx", 1) and ready(m2, "nginx", 2), what="members run 1 and 2 replicas"
    )
    works = harness.until(lambda: _healthy_works(harness, {"member1", "member2"}), what="Works Healthy")
    for cluster, replicas in (("member1", 1), ("member2", 2)):
        status = works[cluster]["status"]
        assert _condition(works[cluster], "Applied") == {
            "type": "Applied",
            "status": "True",
            "reason": "AppliedSuccessful",
            "message": "Manifest has been successfully applied",
            "lastTransitionTime": status["conditions"][0]["lastTransitionTime"],
        }
        [entry] = status["manifestStatuses"]
        assert entry["identifier"] == {
            "ordinal": 0, "group": "apps", "version": "v1", "kind": "Deployment", "namespace": "default", "name": "nginx",
        }  # fmt: skip
        assert entry["status"]["readyReplicas"] == replicas
        assert entry["status"]["availableReplicas"] == replicas
        assert entry["status"]["resourceTemplateGeneration"] == 1

    fully = harness.until(lambda: _condition(harness.binding(binding), "FullyApplied"), what="FullyApplied")
    assert (fully["status"], fully["reason"]) == ("True", "FullyAppliedSuccess")
    current = harness.binding(binding)
    assert current is not None
    items = current["status"]["aggregatedStatus"]
    assert [(i["clusterName"], i["applied"], i["health"]) for i in items] == [
        ("member1", True, "Healthy"),
        ("member2", True, "Healthy"),
    ]
    status = harness.until(lambda: _template_status(harness, template, 3), what="template readyReplicas 3")
    assert status["replicas"] == status["availableReplicas"] == status["updatedReplicas"] == 3
    assert status["observedGeneration"] == 1

    # A new placement: the members follow.
    harness.edit_binding(
        binding, clusters=[{"name": "member1", "replicas": 2}, {"name": "member2", "replicas": 4}]
    )
    harness.until(
        lambda: ready(m1, "nginx", 2) and ready(m2, "nginx", 4), what="members run 2 and 4 replicas"
    )
    harness.until(lambda: _template_status(harness, template, 6), what="template readyReplicas 6")

    # member2 leaves the placement but a graceful-eviction task holds it: its Work and object stay.
    harness.edit_binding(
        binding,
        clusters=[{"name": "member1", "replicas": 6}],
        gracefulEvictionTasks=[{"fromCluster": "member2", **GRACEFUL}],
    )
    harness.until(lambda: ready(m1, "nginx", 6), what="member1 runs 6 replicas")
    for _ in range(3):
        harness.round()
    assert "deletionTimestamp" not in harness.works()["member2"]["metadata"]
    assert ready(m2, "nginx", 4)
    held = harness.binding(binding)
    assert held is not None
    assert [i["clusterName"] for i in held["status"]["aggregatedStatus"]] == ["member1", "member2"]

    # The task goes: so do the Work and the member object.
    harness.edit_binding(binding, gracefulEvictionTasks=None)
    harness.until(
        lambda: member_object(m2, "Deployment", "nginx") is None and "member2" not in harness.works(),
        what="member2 cleaned up",
    )
    cleaned = harness.until(
        lambda: _template_status(harness, template, 6), what="template counts member1 only"
    )
    assert cleaned["replicas"] == 6

    # Deleting the template deletes the binding; the orphaned Works take their member objects with them.
    harness.delete_template(template)
    harness.until(
        lambda: member_object(m1, "Deployment", "nginx") is None and not harness.works(),
        what="everything removed",
    )


def test_a_converged_pipeline_writes_nothing(harness: Harness, start_sim: StartSim) -> None:
    _two_members(harness, start_sim)
    template = harness.add_template(nginx(replicas=3))
    binding = harness.add_binding(
        template, [{"name": "member1", "replicas": 1}, {"name": "member2", "replicas": 2}]
    )
    harness.until(lambda: _template_status(harness, template, 3), what="template readyReplicas 3")
    harness.until(
        lambda: (_condition(harness.binding(binding), "FullyApplied") or {}).get("status") == "True"
    )
    harness.round()  # let the feeds' overlap windows settle on the last writes

    before = harness.versions()
    for _ in range(2):
        harness.round()
    assert harness.versions() == before


def test_a_down_member_is_retried_with_backoff_until_it_is_back(
    harness: Harness, start_sim: StartSim
) -> None:
    member = start_sim("member1")
    harness.add_cluster("member1", member)
    template = harness.add_template(nginx(replicas=2))
    binding = harness.add_binding(template, [{"name": "member1", "replicas": 2}])
    member.set_faults(down=True)

    harness.execution.reconcile()
    assert harness.sync.reconcile().processed == 1
    work = harness.works()["member1"]
    applied = _condition(work, "Applied")
    assert applied is not None
    assert (applied["status"], applied["reason"]) == ("False", "AppliedFailed")
    assert applied["message"].startswith("Failed to apply all manifests (0/1): cluster 'member1': ")
    assert "503" in applied["message"]
    harness.status.reconcile()
    failed = harness.binding(binding)
    assert failed is not None
    [item] = failed["status"]["aggregatedStatus"]
    assert item == {
        "clusterName": "member1",
        "applied": False,
        "appliedMessage": applied["message"],
        "health": "Unknown",
    }
    assert _condition(failed, "FullyApplied")["status"] == "False"  # type: ignore[index]

    # Back-off: 1s, 1s, 2s, 4s ... (as long as it has been failing); nothing is tried before that.
    assert harness.sync.reconcile().processed == 0
    for wait in (1, 1, 2):
        harness.clock.advance(wait - 0.5)
        assert harness.sync.reconcile().processed == 0
        harness.clock.advance(0.5)
        assert harness.sync.reconcile().processed == 1
    assert (
        _condition(harness.works()["member1"], "Applied")["lastTransitionTime"]
        == applied["lastTransitionTime"]
    )  # type: ignore[index]

    member.set_faults(down=False)
    harness.clock.advance(4)
    harness.until(lambda: ready(member, "nginx", 2), what="applied once the member is back")
    assert _condition(harness.works()["member1"], "Applied")["status"] == "True"  # type: ignore[index]
    harness.until(
        lambda: (_condition(harness.binding(binding), "FullyApplied") or {}).get("status") == "True"
    )


def test_pull_mode_works_are_left_to_the_agent(harness: Harness) -> None:
    harness.add_cluster("edge", None, sync_mode="Pull")
    template = harness.add_template(nginx(replicas=1))
    harness.add_binding(template, [{"name": "edge", "replicas": 1}])
    harness.execution.reconcile()
    assert harness.sync.reconcile().processed == 0
    with harness.uow() as session:
        assert session.scalar(select(WorkRow.needs_sync)) is True
    assert "status" not in harness.works()["edge"]


def test_a_member_object_deleted_by_hand_is_recreated(harness: Harness, start_sim: StartSim) -> None:
    member = start_sim("member1")
    harness.add_cluster("member1", member)
    template = harness.add_template(nginx(replicas=1))
    harness.add_binding(template, [{"name": "member1", "replicas": 1}])
    harness.until(lambda: ready(member, "nginx", 1))
    from federation.members.client import KubernetesMemberClient

    client = KubernetesMemberClient("member1", member.kubeconfig)
    assert client.delete("apps/v1", "Deployment", "default", "nginx")
    client.close()
    harness.until(lambda: ready(member, "nginx", 1), what="recreated by the next collection")


def test_a_configmap_is_propagated_whole_and_healthy(harness: Harness, start_sim: StartSim) -> None:
    m1, m2 = _two_members(harness, start_sim)
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "conf", "namespace": "default"},
        "data": {"k": "v"},
    }
    template = harness.add_template(configmap)
    binding = harness.add_binding(template, [{"name": "member1"}, {"name": "member2"}])
    for sim in (m1, m2):
        found = harness.until(lambda sim=sim: member_object(sim, "ConfigMap", "conf"))
        assert found["data"] == {"k": "v"}
    done = harness.until(
        lambda: (_condition(harness.binding(binding), "FullyApplied") or {}).get("status") == "True"
    )
    assert done
    current = harness.binding(binding)
    assert current is not None
    assert {i["health"] for i in current["status"]["aggregatedStatus"]} == {"Healthy"}
    stored = harness.template(template)
    assert stored is not None and "status" not in stored


def test_a_secret_reaches_its_member_in_plaintext_while_stored_sealed(
    harness: Harness, start_sim: StartSim
) -> None:
    """Work sync reads a claimed Work's spec as column values, past the ORM's load hook that unseals Secret
    data: it must unseal it itself, or the member would get the ciphertext."""
    m1 = start_sim("member1")
    harness.add_cluster("member1", m1)
    uow = UnitOfWork.for_engine(harness.engine, harness.box)  # as serve's controllers have it: with the key
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db", "namespace": "default"},
        "type": "Opaque",
        "data": {"password": "cGxhaW4tcGFzc3dvcmQ="},
    }
    with uow() as session:
        template = ObjectRepository(session, "Secret", "v1").create(secret)
    harness.add_binding(template, [{"name": "member1"}])
    ExecutionController(uow, harness.clock).reconcile()
    with harness.engine.connect() as connection:
        [stored] = connection.scalars(select(cast(WorkRow.__table__.c.spec, Text)))
    assert "cGxhaW4tcGFzc3dvcmQ=" not in stored and "sealedData" in stored

    sync = WorkSync(uow, harness.clock, "test-owner", harness.members)
    sync.reconcile()  # (the harness's own rounds have no key: they would fail to read the sealed template)
    found = member_object(m1, "Secret", "db")
    assert found is not None
    assert found["data"] == {"password": "cGxhaW4tcGFzc3dvcmQ="}
    assert "sealedData" not in found


def test_backoff_doubles_and_is_capped() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    from datetime import timedelta

    assert backoff_seconds(None, t0, 1, 60) == 1
    assert backoff_seconds(t0, t0, 1, 60) == 1
    assert backoff_seconds(t0, t0 + timedelta(seconds=2), 1, 60) == 2
    assert backoff_seconds(t0, t0 + timedelta(seconds=4), 1, 60) == 4
    assert backoff_seconds(t0, t0 + timedelta(hours=1), 1, 60) == 60
