"""The global revision and the change log, written in the writer's transaction, on both backends."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy import Text, cast, select
from sqlalchemy.orm import Session

from federation.store import UnitOfWork, WorkRepository, claim, objects, release, work_writes
from federation.store.tables import ChangeLogRow, ResourceBindingRow
from federation.store.types import utcnow

from .factories import (
    make_binding,
    make_cluster,
    make_configmap,
    make_deployment,
    make_propagation_policy,
    make_work,
)
from .support import T0
from .test_secret_sealing import ENCODED, PASSWORD, make_secret

DEPLOYMENT = ("apps/v1", "Deployment")
POLICY = ("policy.karmada.io/v1alpha1", "PropagationPolicy")
BINDING = ("work.karmada.io/v1alpha2", "ResourceBinding")
CLUSTER = ("cluster.karmada.io/v1alpha1", "Cluster")
WORK = ("work.karmada.io/v1alpha1", "Work")


def rv(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


def log(session: Session) -> list[tuple[int, str, str, str]]:
    """(revision, event, kind, name) of every log row, in revision order."""
    rows = session.execute(
        select(ChangeLogRow.revision, ChangeLogRow.event, ChangeLogRow.kind, ChangeLogRow.name).order_by(
            ChangeLogRow.revision
        )
    )
    return [(int(r), e, k, n) for r, e, k, n in rows]


def test_one_increasing_sequence_across_kinds(session: Session) -> None:
    written = [
        objects(session, *DEPLOYMENT).create(make_deployment()),
        objects(session, *POLICY).create(make_propagation_policy()),
        objects(session, *CLUSTER).create(make_cluster()),
        objects(session, *BINDING).create(make_binding()),
        objects(session, "v1", "ConfigMap").create(make_configmap()),
    ]
    written.append(objects(session, *DEPLOYMENT).replace(make_deployment(spec={"replicas": 5})))
    written.append(objects(session, *CLUSTER).update_status(None, "member1", {"kubernetesVersion": "v1.31"}))
    versions = [rv(obj) for obj in written]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    assert [r for r, *_ in log(session)] == versions  # each write is its own log row at its revision
    assert [e for _, e, *_ in log(session)] == ["ADDED"] * 5 + ["MODIFIED"] * 2


def test_each_event_carries_the_object_a_get_returns_at_that_revision(session: Session) -> None:
    repo = objects(session, *DEPLOYMENT)
    created = repo.create(make_deployment())
    relabelled = repo.replace(make_deployment(metadata={"labels": {"app": "nginx", "tier": "web"}}))
    last = repo.delete("default", "nginx")
    rows = list(session.scalars(select(ChangeLogRow).order_by(ChangeLogRow.revision)))
    assert [row.event for row in rows] == ["ADDED", "MODIFIED", "DELETED"]
    assert rows[0].object == created and rows[1].object == relabelled
    assert rows[1].previous_labels == {"app": "nginx"}  # a label-selected watch sees it enter or leave
    # The deletion is a revision of its own; the object is the last state, at that revision.
    assert rows[2].revision > rv(relabelled)
    assert rows[2].object == {
        **last,
        "metadata": {**last["metadata"], "resourceVersion": str(rows[2].revision)},
    }


def test_a_write_that_changes_nothing_or_only_bookkeeping_takes_no_revision(uow: UnitOfWork) -> None:
    with uow() as session:
        binding = objects(session, *BINDING).create(make_binding())
        work = objects(session, *WORK).create(make_work(binding=None))
    with uow() as session:
        assert objects(session, *BINDING).replace(make_binding()) == binding  # a no-op replace
        taken = claim(session, ResourceBindingRow, "sched", 10, T0, 30)
        release(session, ResourceBindingRow, taken, "sched", done=True)
        WorkRepository(session).mark_synced("karmada-es-member1", work["metadata"]["name"])
    with uow() as session:
        assert [r for r, *_ in log(session)] == [rv(binding), rv(work)]
        assert objects(session, *BINDING).get("default", binding["metadata"]["name"]) == binding


def test_the_log_commits_and_rolls_back_with_the_write(uow: UnitOfWork) -> None:
    with pytest.raises(RuntimeError), uow() as session:
        objects(session, *DEPLOYMENT).create(make_deployment())
        assert len(log(session)) == 1
        raise RuntimeError("the unit of work fails after the write")
    with uow() as session:
        assert log(session) == [] and objects(session, *DEPLOYMENT).get("default", "nginx") is None
        created = objects(session, *DEPLOYMENT).create(make_deployment())
    with uow() as session:
        assert log(session) == [(rv(created), "ADDED", "Deployment", "nginx")]


def test_deleting_a_template_logs_its_bindings_deleted(session: Session) -> None:
    template = objects(session, *DEPLOYMENT).create(make_deployment())
    binding = make_binding()
    binding["spec"]["resource"]["uid"] = template["metadata"]["uid"]
    objects(session, *BINDING).create(binding)
    objects(session, *DEPLOYMENT).delete("default", "nginx")
    events = [(e, k) for _, e, k, _ in log(session)]
    assert events == [
        ("ADDED", "Deployment"),
        ("ADDED", "ResourceBinding"),
        ("DELETED", "ResourceBinding"),
        ("DELETED", "Deployment"),
    ]


def test_a_batch_flush_draws_its_revisions_in_one_statement(session: Session) -> None:
    from tests.store.support import count_statements

    repo = objects(session, "v1", "ConfigMap")
    for i in range(5):
        repo.create_pending(make_configmap(f"c{i}"))
    with count_statements(session.get_bind()) as statements:
        session.flush()
    # One statement draws the revisions, one executemany logs them, whatever the batch.
    ours = [s for s in statements.statements if "revision" in s or "resource_version_seq" in s]
    assert len(ours) == 2, statements.statements
    versions = [rv(obj) for obj in repo.list("default")[0]]
    assert sorted(versions) == [r for r, *_ in log(session)]


def test_tombstones_are_logged_as_modified(session: Session) -> None:
    created = objects(session, *WORK).create(make_work(binding=None))
    row = WorkRepository(session).objects.require_row("karmada-es-member1", created["metadata"]["name"])
    extra = {**row.metadata_extra, "deletionTimestamp": "2026-05-01T12:00:00Z"}
    marked = work_writes.Tombstone(row.id, row.namespace, row.name, row.resource_version, extra)
    work_writes.tombstone(session, [marked], utcnow())
    _, (revision, modified) = [
        (r.revision, r.object) for r in session.scalars(select(ChangeLogRow).order_by(ChangeLogRow.revision))
    ]
    assert modified["metadata"]["deletionTimestamp"] == "2026-05-01T12:00:00Z"
    assert modified == objects(session, *WORK).get("karmada-es-member1", created["metadata"]["name"])
    assert modified["metadata"]["resourceVersion"] == str(revision) and revision > rv(created)


def test_secret_data_is_sealed_in_the_log(session: Session) -> None:
    objects(session, "v1", "Secret").create(make_secret())
    objects(session, *WORK).create(make_work(binding=None, spec={"workload": {"manifests": [make_secret()]}}))
    session.flush()
    texts = [str(t) for t in session.scalars(select(cast(ChangeLogRow.object, Text)))]
    assert len(texts) == 2
    for text in texts:
        assert PASSWORD not in text and ENCODED not in text and "sealedData" in text


def test_concurrent_writers_never_share_a_revision(uow: UnitOfWork) -> None:
    writers, writes = 4, 6
    barrier = threading.Barrier(writers)
    failures: list[BaseException] = []

    def write(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            for n in range(writes):
                with uow() as session:
                    objects(session, "v1", "ConfigMap").create(make_configmap(f"w{index}-{n}"))
                    if n % 2:
                        objects(session, *CLUSTER).create(make_cluster(f"m{index}-{n}"))
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert failures == []
    with uow() as session:
        configmaps, _ = objects(session, "v1", "ConfigMap").list()
        clusters, _ = objects(session, *CLUSTER).list()
        versions = [rv(obj) for obj in (*configmaps, *clusters)]
        logged = [r for r, *_ in log(session)]
    assert len(versions) == writers * writes + writers * (writes // 2)
    assert len(set(versions)) == len(versions)
    assert sorted(versions) == logged
