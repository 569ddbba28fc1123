"""Clusters: indexed extracts, region queries, encrypted credentials, Ready and taints."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from federation.store import ClusterRepository, NotFound, SecretBox, generate_key, objects
from federation.store.errors import DecryptionError
from federation.store.tables import ChangeLogRow, ClusterRow

from .factories import make_cluster
from .support import T0

CLUSTER = ("cluster.karmada.io/v1alpha1", "Cluster")


def row(session: Session, name: str) -> ClusterRow:
    found = session.scalars(select(ClusterRow).where(ClusterRow.name == name)).one()
    session.refresh(found)
    return found


def test_extracted_columns(session: Session) -> None:
    objects(session, *CLUSTER).create(
        make_cluster("m1", spec={"taints": [{"key": "k", "effect": "NoSchedule"}]})
    )
    stored = row(session, "m1")
    assert (stored.region, stored.zone, stored.provider, stored.sync_mode) == (
        "us-east-1",
        "us-east-1a",
        "aws",
        "Push",
    )
    assert stored.taints == [{"key": "k", "effect": "NoSchedule"}]
    assert stored.ready is None


def test_region_and_ready_queries(session: Session) -> None:
    repo = objects(session, *CLUSTER)
    repo.create(make_cluster("m1"))
    repo.create(make_cluster("m2", spec={"region": "eu-west-1"}))
    clusters = ClusterRepository(session)
    assert [c["metadata"]["name"] for c in clusters.in_region("us-east-1")] == ["m1"]
    clusters.set_ready("m2", True, reason="ClusterReady", message="ok", now=T0)
    assert [c["metadata"]["name"] for c in clusters.ready()] == ["m2"]
    assert clusters.names() == ["m1", "m2"]


def test_ready_condition_transition_time_moves_only_on_flip(session: Session) -> None:
    objects(session, *CLUSTER).create(make_cluster("m1"))
    clusters = ClusterRepository(session)
    clusters.set_ready("m1", True, reason="ClusterReady", message="ok", now=T0)
    later = clusters.set_ready(
        "m1", True, reason="ClusterReady", message="still", now=T0 + timedelta(minutes=1)
    )
    assert later["status"]["conditions"][0]["lastTransitionTime"] == "2025-01-01T12:00:00Z"
    assert later["metadata"]["generation"] == 1
    down = clusters.set_ready(
        "m1", False, reason="ClusterNotReachable", message="x", now=T0 + timedelta(minutes=2)
    )
    assert down["status"]["conditions"] == [
        {
            "type": "Ready",
            "status": "False",
            "reason": "ClusterNotReachable",
            "message": "x",
            "lastTransitionTime": "2025-01-01T12:02:00Z",
        }
    ]
    assert row(session, "m1").ready is False


def test_set_taints_is_a_spec_change(session: Session) -> None:
    objects(session, *CLUSTER).create(make_cluster("m1"))
    taint = {"key": "cluster.karmada.io/not-ready", "effect": "NoExecute"}
    updated = ClusterRepository(session).set_taints("m1", [taint])
    assert updated["spec"]["taints"] == [taint]
    assert updated["metadata"]["generation"] == 2
    assert row(session, "m1").taints == [taint]
    with pytest.raises(NotFound):
        ClusterRepository(session).set_taints("nope", [])


def test_credentials_are_encrypted_and_never_returned(session: Session) -> None:
    objects(session, *CLUSTER).create(make_cluster("m1"))
    box = SecretBox(generate_key())
    clusters = ClusterRepository(session)
    clusters.set_credentials("m1", b"kubeconfig-secret", box)
    assert clusters.credentials("m1", box) == b"kubeconfig-secret"
    raw = session.scalar(select(ClusterRow.credentials).where(ClusterRow.name == "m1"))
    assert raw is not None and b"kubeconfig-secret" not in raw
    obj = clusters.get("m1")
    assert obj is not None and "kubeconfig-secret" not in repr(obj)
    # Credentials are not part of the object: writing them takes no revision.
    assert session.scalar(
        select(ChangeLogRow.revision).order_by(ChangeLogRow.revision.desc()).limit(1)
    ) == int(obj["metadata"]["resourceVersion"])
    with pytest.raises(DecryptionError):
        clusters.credentials("m1", SecretBox(generate_key()))
    with pytest.raises(NotFound):
        clusters.set_credentials("nope", b"x", box)
    objects(session, *CLUSTER).replace(make_cluster("m1", spec={"region": "x"}))
    assert clusters.credentials("m1", box) == b"kubeconfig-secret"  # a replace keeps them
