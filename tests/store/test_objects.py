"""Contract of the generic object repository, on SQLite and Postgres."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from federation.store import AlreadyExists, Conflict, InvalidContinueToken, NotFound, objects
from federation.store.repository import ObjectRepository
from federation.store.tables import (
    ClusterPropagationPolicyRow,
    ClusterRow,
    PropagationPolicyRow,
    ResourceBindingRow,
    ResourceTemplateRow,
    WorkloadPolicyRow,
    WorkloadRebalancerRow,
    WorkRow,
)

from .factories import (
    make_binding,
    make_cluster,
    make_cluster_propagation_policy,
    make_configmap,
    make_deployment,
    make_propagation_policy,
    make_rebalancer,
    make_work,
    make_workload_policy,
)
from .support import FakeClock

FAMILIES: list[tuple[Callable[..., dict[str, Any]], type[Any]]] = [
    (make_cluster, ClusterRow),
    (make_deployment, ResourceTemplateRow),
    (make_configmap, ResourceTemplateRow),
    (make_propagation_policy, PropagationPolicyRow),
    (make_cluster_propagation_policy, ClusterPropagationPolicyRow),
    (make_workload_policy, WorkloadPolicyRow),
    (make_rebalancer, WorkloadRebalancerRow),
    (make_binding, ResourceBindingRow),
    (lambda: make_binding(name="crb", namespace=""), ResourceBindingRow),
    (make_work, WorkRow),
]
FAMILY_IDS = [
    "cluster",
    "deployment",
    "configmap",
    "pp",
    "cpp",
    "workloadpolicy",
    "rebalancer",
    "rb",
    "crb",
    "work",
]


def repo_for(session: Session, obj: dict[str, Any], clock: FakeClock | None = None) -> ObjectRepository:
    if clock is None:
        return objects(session, obj["apiVersion"], obj["kind"])
    return objects(session, obj["apiVersion"], obj["kind"], clock=clock)


def ns(obj: dict[str, Any]) -> str:
    return str(obj["metadata"].get("namespace", ""))


def body(obj: dict[str, Any]) -> dict[str, Any]:
    """The manifest without server-owned metadata (for round-trip comparison)."""
    server = {"uid", "resourceVersion", "generation", "creationTimestamp"}
    return {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k not in server}}


@pytest.mark.parametrize(("factory", "table"), FAMILIES, ids=FAMILY_IDS)
def test_round_trip_each_family(session: Session, factory: Any, table: type[Any], clock: FakeClock) -> None:
    manifest = factory()
    repo = repo_for(session, manifest, clock)
    created = repo.create(manifest)
    meta = created["metadata"]
    assert body(created) == manifest
    assert int(meta["resourceVersion"]) > 0
    assert meta["generation"] == 1
    assert meta["creationTimestamp"] == "2025-01-01T12:00:00Z"
    assert len(meta["uid"]) == 36
    assert repo.get(ns(manifest), manifest["metadata"]["name"]) == created
    assert session.scalar(select(func.count()).select_from(table)) == 1
    assert repo.delete(ns(manifest), manifest["metadata"]["name"]) == created
    assert repo.get(ns(manifest), manifest["metadata"]["name"]) is None


def test_create_ignores_server_metadata_and_keeps_extra_fields(session: Session) -> None:
    manifest = make_configmap(
        metadata={"uid": "mine", "resourceVersion": "99", "finalizers": ["x"], "ownerReferences": []},
        binaryData={"b": "AA=="},
    )
    created = objects(session, "v1", "ConfigMap").create(manifest)
    assert created["metadata"]["uid"] != "mine"
    assert created["metadata"]["resourceVersion"] != "99"
    assert created["metadata"]["finalizers"] == ["x"]
    assert created["data"] == {"key": "value"}
    assert created["binaryData"] == {"b": "AA=="}


def test_create_existing_name_is_already_exists(session: Session) -> None:
    repo = objects(session, "apps/v1", "Deployment")
    repo.create(make_deployment())
    with pytest.raises(AlreadyExists, match='Deployment "default/nginx" already exists'):
        repo.create(make_deployment())


def test_same_name_in_other_namespace_or_kind_is_distinct(session: Session) -> None:
    objects(session, "apps/v1", "Deployment").create(make_deployment())
    objects(session, "apps/v1", "Deployment").create(make_deployment(namespace="other"))
    objects(session, "apps/v1", "StatefulSet").create(make_deployment(kind="StatefulSet"))
    assert objects(session, "apps/v1", "StatefulSet").get("default", "nginx") is not None
    assert len(objects(session, "apps/v1", "Deployment").list()[0]) == 2


def test_a_lookup_by_name_finds_only_its_kind_and_namespace(session: Session) -> None:
    """``find_row``'s statement is built once per table and scope, its kind, apiVersion, namespace and name
    bound per call: each lookup still finds only its own."""
    deployments = objects(session, "apps/v1", "Deployment")
    statefulsets = objects(session, "apps/v1", "StatefulSet")
    deployments.create(make_deployment())
    statefulsets.create(make_deployment(kind="StatefulSet"))
    for _ in range(2):  # the second time from the built statement
        found = deployments.find_row("default", "nginx")
        assert found is not None and found.kind == "Deployment"
        found = statefulsets.find_row("default", "nginx")
        assert found is not None and found.kind == "StatefulSet"
        assert deployments.find_row("other", "nginx") is None
        assert objects(session, "apps/v1", "DaemonSet").find_row("default", "nginx") is None
    clusters = objects(session, "cluster.karmada.io/v1alpha1", "Cluster")
    clusters.create(make_cluster("member1"))
    assert clusters.find_row("", "member1") is not None and clusters.find_row("", "member2") is None


def test_missing_object_is_not_found(session: Session) -> None:
    repo = objects(session, "cluster.karmada.io/v1alpha1", "Cluster")
    assert repo.get(None, "nope") is None
    with pytest.raises(NotFound, match='Cluster "nope" not found'):
        repo.delete(None, "nope")
    with pytest.raises(NotFound):
        repo.replace(make_cluster("nope"))
    with pytest.raises(NotFound):
        repo.update_status(None, "nope", {})


def test_kind_mismatch_is_refused(session: Session) -> None:
    with pytest.raises(ValueError, match="StatefulSet"):
        objects(session, "apps/v1", "Deployment").create(make_deployment(kind="StatefulSet"))


def test_spec_change_bumps_generation_and_version(session: Session, clock: FakeClock) -> None:
    repo = objects(session, "apps/v1", "Deployment", clock=clock)
    created = repo.create(make_deployment())
    changed = make_deployment(spec={"replicas": 5})
    clock.advance(60)
    replaced = repo.replace(changed)
    assert replaced["metadata"]["generation"] == 2
    assert int(replaced["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert replaced["metadata"]["uid"] == created["metadata"]["uid"]
    assert replaced["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]
    assert replaced["spec"]["replicas"] == 5


def test_metadata_only_change_bumps_version_not_generation(session: Session) -> None:
    repo = objects(session, "apps/v1", "Deployment")
    created = repo.create(make_deployment())
    replaced = repo.replace(make_deployment(metadata={"labels": {"app": "nginx", "tier": "web"}}))
    assert replaced["metadata"]["generation"] == 1
    assert int(replaced["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert replaced["metadata"]["labels"]["tier"] == "web"


def test_identical_replace_writes_nothing(session: Session) -> None:
    repo = objects(session, "apps/v1", "Deployment")
    created = repo.create(make_deployment())
    assert repo.replace(make_deployment()) == created


def test_kind_without_spec_tracks_body_for_generation(session: Session) -> None:
    repo = objects(session, "v1", "ConfigMap")
    repo.create(make_configmap())
    assert repo.replace(make_configmap(data={"key": "other"}))["metadata"]["generation"] == 2
    relabeled = repo.replace(make_configmap(data={"key": "other"}, metadata={"labels": {"a": "b"}}))
    assert relabeled["metadata"]["generation"] == 2


def test_replace_keeps_status(session: Session) -> None:
    repo = objects(session, "apps/v1", "Deployment")
    repo.create(make_deployment())
    repo.update_status("default", "nginx", {"readyReplicas": 2})
    replaced = repo.replace(make_deployment(spec={"replicas": 3}, status={"readyReplicas": 99}))
    assert replaced["status"] == {"readyReplicas": 2}


def test_status_update_never_bumps_generation(session: Session) -> None:
    repo = objects(session, "apps/v1", "Deployment")
    created = repo.create(make_deployment())
    updated = repo.update_status("default", "nginx", {"readyReplicas": 1})
    assert updated["metadata"]["generation"] == 1
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert updated["status"] == {"readyReplicas": 1}
    assert repo.update_status("default", "nginx", {"readyReplicas": 1}) == updated  # no-op


def test_stale_resource_version_is_conflict(session: Session) -> None:
    repo = objects(session, "apps/v1", "Deployment")
    old = repo.create(make_deployment())["metadata"]["resourceVersion"]
    seen = repo.replace(make_deployment(spec={"replicas": 4}))["metadata"]["resourceVersion"]
    stale = make_deployment(metadata={"resourceVersion": old}, spec={"replicas": 9})
    with pytest.raises(Conflict, match='Deployment "default/nginx"'):
        repo.replace(stale)
    with pytest.raises(Conflict):
        repo.update_status("default", "nginx", {}, expected_rv=old)
    with pytest.raises(Conflict):
        repo.delete("default", "nginx", expected_rv=old)
    current = make_deployment(metadata={"resourceVersion": seen}, spec={"replicas": 9})
    assert int(repo.replace(current)["metadata"]["resourceVersion"]) > int(seen)


def test_returned_dicts_are_copies(session: Session) -> None:
    repo = objects(session, "apps/v1", "Deployment")
    created = repo.create(make_deployment())
    created["spec"]["replicas"] = 100
    got = repo.get("default", "nginx")
    assert got is not None
    assert got["spec"]["replicas"] == 2


# -- listing -------------------------------------------------------------------------------------------


def seed_configmaps(session: Session) -> ObjectRepository:
    repo = objects(session, "v1", "ConfigMap")
    for namespace in ("b", "a"):
        for index in range(7):
            labels = {"parity": "even" if index % 2 == 0 else "odd"}
            repo.create(make_configmap(f"cm-{index}", namespace, metadata={"labels": labels}))
    objects(session, "v1", "Secret").create(make_configmap("cm-0", "a", kind="Secret"))
    return repo


def names(items: list[dict[str, Any]]) -> list[str]:
    return [f"{item['metadata']['namespace']}/{item['metadata']['name']}" for item in items]


def test_list_is_ordered_by_namespace_then_name(session: Session) -> None:
    repo = seed_configmaps(session)
    items, token = repo.list()
    assert token is None
    assert names(items) == [f"{n}/cm-{i}" for n in ("a", "b") for i in range(7)]
    assert names(repo.list("b")[0]) == [f"b/cm-{i}" for i in range(7)]


def collect_pages(repo: ObjectRepository, limit: int, **kwargs: Any) -> list[list[str]]:
    pages: list[list[str]] = []
    token: str | None = None
    while True:
        items, token = repo.list(limit=limit, continue_token=token, **kwargs)
        pages.append(names(items))
        if token is None:
            return pages


@pytest.mark.parametrize("limit", [1, 3, 5, 14, 20])
def test_pages_are_exact_and_cover_everything(session: Session, limit: int) -> None:
    repo = seed_configmaps(session)
    pages = collect_pages(repo, limit)
    assert [name for page in pages for name in page] == names(repo.list()[0])
    assert all(len(page) == limit for page in pages[:-1])
    assert 0 < len(pages[-1]) <= limit  # never an empty last page


def test_pages_with_selector_are_exact(session: Session) -> None:
    repo = seed_configmaps(session)
    pages = collect_pages(repo, 3, selector=lambda labels: labels.get("parity") == "odd")
    assert pages == [["a/cm-1", "a/cm-3", "a/cm-5"], ["b/cm-1", "b/cm-3", "b/cm-5"]]
    pages = collect_pages(repo, 3, namespace="b", selector=lambda labels: labels.get("parity") == "even")
    assert pages == [["b/cm-0", "b/cm-2", "b/cm-4"], ["b/cm-6"]]


def test_selector_pages_span_many_batches(session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("federation.store.repository.SELECTOR_BATCH", 2)
    repo = seed_configmaps(session)
    pages = collect_pages(repo, 2, selector=lambda labels: labels.get("parity") == "even")
    expected = [f"{n}/cm-{i}" for n in ("a", "b") for i in (0, 2, 4, 6)]
    assert [name for page in pages for name in page] == expected
    assert [len(page) for page in pages] == [2, 2, 2, 2]


def test_continue_token_survives_deletion_of_last_item(session: Session) -> None:
    repo = seed_configmaps(session)
    first, token = repo.list("a", limit=2)
    repo.delete("a", "cm-1")
    second, _ = repo.list("a", limit=2, continue_token=token)
    assert names(first) == ["a/cm-0", "a/cm-1"]
    assert names(second) == ["a/cm-2", "a/cm-3"]


@pytest.mark.parametrize("token", ["garbage!", "e30", "eyJ2IjoyfQ"])
def test_bad_continue_token(session: Session, token: str) -> None:
    with pytest.raises(InvalidContinueToken):
        objects(session, "v1", "ConfigMap").list(continue_token=token)


def test_cluster_scoped_list(session: Session) -> None:
    repo = objects(session, "cluster.karmada.io/v1alpha1", "Cluster")
    for name in ("m3", "m1", "m2"):
        repo.create(make_cluster(name))
    items, _ = repo.list(None)
    assert [item["metadata"]["name"] for item in items] == ["m1", "m2", "m3"]
    assert "namespace" not in items[0]["metadata"]
    assert [item["metadata"]["name"] for item in repo.list("")[0]] == ["m1", "m2", "m3"]


def test_binding_kinds_share_a_table_but_not_a_listing(session: Session) -> None:
    objects(session, "work.karmada.io/v1alpha2", "ResourceBinding").create(make_binding())
    objects(session, "work.karmada.io/v1alpha2", "ClusterResourceBinding").create(make_binding("c", ""))
    rbs, _ = objects(session, "work.karmada.io/v1alpha2", "ResourceBinding").list()
    crbs, _ = objects(session, "work.karmada.io/v1alpha2", "ClusterResourceBinding").list()
    assert [rb["kind"] for rb in rbs] == ["ResourceBinding"]
    assert [crb["kind"] for crb in crbs] == ["ClusterResourceBinding"]
