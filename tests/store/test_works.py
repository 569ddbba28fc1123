"""Works: derived cluster/binding/hash columns, per-cluster and per-binding queries, sync flag."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from federation.model.work import WorkStatusView
from federation.store import BindingRepository, NotFound, WorkRepository, execution_namespace, objects
from federation.store.applied_works import tracked_work_state_pages, work_states
from federation.store.tables import WorkRow

from .factories import make_binding, make_deployment, make_work
from .test_secret_sealing import make_secret

WORK = ("work.karmada.io/v1alpha1", "Work")
RB = ("work.karmada.io/v1alpha2", "ResourceBinding")


def work_row(session: Session, namespace: str, name: str) -> WorkRow:
    row = session.scalars(select(WorkRow).where(WorkRow.namespace == namespace, WorkRow.name == name)).one()
    session.refresh(row)
    return row


def test_work_columns_derive_from_body(session: Session) -> None:
    objects(session, *RB).create(make_binding())
    repo = objects(session, *WORK)
    repo.create(make_work())
    row = work_row(session, "karmada-es-member1", "nginx-687f7fb96f")
    assert row.cluster_name == "member1"
    assert row.binding_id is not None
    assert len(row.manifest_hash) == 64
    assert (row.needs_sync, row.applied) == (True, None)
    first_hash = row.manifest_hash
    repo.replace(make_work(spec={"workload": {"manifests": [make_deployment(spec={"replicas": 9})]}}))
    assert work_row(session, "karmada-es-member1", "nginx-687f7fb96f").manifest_hash != first_hash
    repo.update_status(
        "karmada-es-member1", "nginx-687f7fb96f", {"conditions": [{"type": "Applied", "status": "True"}]}
    )
    assert work_row(session, "karmada-es-member1", "nginx-687f7fb96f").applied is True


def test_queries_by_cluster_binding_and_orphans(session: Session) -> None:
    objects(session, *RB).create(make_binding())
    repo = objects(session, *WORK)
    repo.create(make_work("w1", "member1"))
    repo.create(make_work("w2", "member2"))
    repo.create(make_work("w3", "member1", binding=None))
    works = WorkRepository(session)
    assert [w["metadata"]["name"] for w in works.on_cluster("member1")] == ["w1", "w3"]
    assert [w["metadata"]["name"] for w in works.for_binding("default", "nginx-deployment")] == ["w1", "w2"]
    assert [w["metadata"]["name"] for w in works.orphans()] == ["w3"]
    assert execution_namespace("member1") == "karmada-es-member1"


def test_deleting_the_binding_orphans_its_works(session: Session) -> None:
    objects(session, *RB).create(make_binding())
    objects(session, *WORK).create(make_work())
    objects(session, *RB).delete("default", "nginx-deployment")
    session.expire_all()
    assert [w["metadata"]["name"] for w in WorkRepository(session).orphans()] == ["nginx-687f7fb96f"]
    assert BindingRepository(session).get("default", "nginx-deployment") is None


def test_mark_synced_respects_later_changes(session: Session) -> None:
    created = objects(session, *WORK).create(make_work(binding=None))
    works = WorkRepository(session)
    seq = work_row(session, "karmada-es-member1", "nginx-687f7fb96f").dirty_seq
    works.mark_needs_sync("karmada-es-member1", "nginx-687f7fb96f")  # a change lands mid-sync
    assert works.mark_synced("karmada-es-member1", "nginx-687f7fb96f", seen_seq=seq) is False
    row = work_row(session, "karmada-es-member1", "nginx-687f7fb96f")
    assert row.needs_sync is True
    assert works.mark_synced("karmada-es-member1", "nginx-687f7fb96f", seen_seq=row.dirty_seq) is True
    row = work_row(session, "karmada-es-member1", "nginx-687f7fb96f")
    assert row.needs_sync is False
    assert str(row.resource_version) == created["metadata"]["resourceVersion"]  # bookkeeping: no revision


def test_mark_synced_unknown_work(session: Session) -> None:
    with pytest.raises(NotFound, match='Work "karmada-es-x/nope" not found'):
        WorkRepository(session).mark_synced("karmada-es-x", "nope")


@pytest.mark.parametrize(
    "spec",
    [
        {"workload": {"manifests": [make_deployment()]}, "suspendDispatching": True},
        {"workload": {"manifests": []}},
        {"workload": {"manifests": [make_deployment()], "other": 1}},
        {"preserveResourcesOnDeletion": False},
    ],
)
def test_a_summary_digests_the_spec_as_python_does_without_loading_manifests(
    session: Session, spec: dict
) -> None:
    """The database strips ``workload.manifests`` (JSONB ``#-`` / ``json_remove``) exactly as
    ``spec_without_manifests`` does, and the stored hash is the one ``SpecDigest.of`` computes."""
    from federation.store.works import SpecDigest

    objects(session, *RB).create(make_binding())
    created = objects(session, *WORK).create(make_work(spec=spec))
    works = WorkRepository(session)
    [summary] = works.summaries_by_keys([("karmada-es-member1", "nginx-687f7fb96f")])
    assert summary.spec == SpecDigest.of(created["spec"])
    assert "manifests" not in ((summary.spec.rest or {}).get("workload") or {})
    assert works.summaries_for_binding_ids([summary.binding_id or 0]) == {summary.binding_id: [summary]}
    changed = {**created["spec"], "workload": {"manifests": [make_deployment(spec={"replicas": 9})]}}
    assert summary.spec != SpecDigest.of(changed)


def _configmap(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}


MANIFEST_LISTS = [
    [make_deployment()],
    [_configmap(f"cm{i}") for i in range(12)] + [make_deployment()],  # ordinals past 9 sort as numbers
    [_configmap("cm0"), "not an object", make_deployment()],  # it keeps its ordinal, with no identity
    [make_secret(), make_deployment()],  # sealed in the row: its identity is still readable
    [],
    None,
]


@pytest.mark.parametrize("manifests", MANIFEST_LISTS)
def test_a_status_view_reads_manifest_identities_as_the_whole_work_gives_them(
    session: Session, manifests: list | None
) -> None:
    """``status_views_for_binding_ids`` computes the identities in the database (``jsonb_array_elements``
    / ``json_each``) exactly as ``WorkStatusView.of`` takes them from the whole Work."""
    objects(session, *RB).create(make_binding())
    spec = {"workload": {"manifests": manifests}} if manifests is not None else {"workload": {}}
    created = objects(session, *WORK).create(make_work(spec=spec))
    objects(session, *WORK).update_status(
        "karmada-es-member1",
        created["metadata"]["name"],
        {"conditions": [{"type": "Applied", "status": "True"}]},
    )
    whole = objects(session, *WORK).get("karmada-es-member1", created["metadata"]["name"])
    assert whole is not None
    binding_id = work_row(session, "karmada-es-member1", created["metadata"]["name"]).binding_id or 0
    views = WorkRepository(session).status_views_for_binding_ids([binding_id])
    assert views == {binding_id: [WorkStatusView.of(whole)]}
    assert views[binding_id][0].cluster == "member1" and not views[binding_id][0].deleting


@pytest.mark.parametrize(
    "manifests",
    [
        *MANIFEST_LISTS,
        [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}],  # no namespace: None
        [{"kind": "ConfigMap", "metadata": {"name": 7}}, {"metadata": None}],  # as given, whatever it is
    ],
)
def test_status_collection_reads_manifest_identities_as_the_whole_work_gives_them(
    session: Session, manifests: list | None
) -> None:
    """``tracked_work_state_pages`` and ``work_states`` compute each manifest's identity in the database and
    answer the values the manifest holds (None where absent); of the status, the manifest statuses."""
    objects(session, *RB).create(make_binding())
    spec = {"workload": {"manifests": manifests}} if manifests is not None else {"workload": {}}
    created = objects(session, *WORK).create(make_work(spec=spec))
    name = created["metadata"]["name"]
    statuses = [{"identifier": {"ordinal": 0}, "health": "Healthy", "status": {"readyReplicas": 1}}]
    status = {"conditions": [{"type": "Applied", "status": "True"}], "manifestStatuses": statuses}
    objects(session, *WORK).update_status("karmada-es-member1", name, status)
    row = work_row(session, "karmada-es-member1", name)
    row.applied = True
    session.flush()
    whole = objects(session, *WORK).get("karmada-es-member1", name)
    assert whole is not None

    def entry(manifest: object) -> tuple:
        if not isinstance(manifest, dict):
            return (None, None, None, None)
        meta = manifest.get("metadata") or {}
        return (manifest.get("apiVersion"), manifest.get("kind"), meta.get("namespace"), meta.get("name"))

    expected = tuple(entry(m) for m in (whole["spec"]["workload"].get("manifests") or []))
    [[tracked]] = list(tracked_work_state_pages(session))
    assert (tracked.id, tracked.cluster, tracked.tracked) == (row.id, "member1", True)
    assert tuple(tracked.manifests) == expected
    assert list(tracked.manifest_statuses) == statuses
    assert work_states(session, [row.id]) == [tracked]
    row.metadata_extra = {**(row.metadata_extra or {}), "deletionTimestamp": "2026-05-01T12:00:00Z"}
    session.flush()
    [deleting] = work_states(session, [row.id])
    assert not deleting.tracked and deleting.manifests == tracked.manifests


def test_a_status_view_of_a_work_being_deleted_says_so(session: Session) -> None:
    objects(session, *RB).create(make_binding())
    objects(session, *WORK).create(make_work())
    row = work_row(session, "karmada-es-member1", "nginx-687f7fb96f")
    row.metadata_extra = {**(row.metadata_extra or {}), "deletionTimestamp": "2026-05-01T12:00:00Z"}
    session.flush()
    [view] = WorkRepository(session).status_views_for_binding_ids([row.binding_id or 0])[row.binding_id or 0]
    assert view.deleting


def test_the_full_read_of_tracked_works_comes_in_pages_of_the_size_asked(session: Session) -> None:
    """Every applied Work once, in id order, ``page_size`` at a time; Works not applied are not read."""
    objects(session, *RB).create(make_binding())
    names = []
    for index in range(5):
        spec = {"workload": {"manifests": [make_deployment(spec={"replicas": index})]}}
        created = objects(session, *WORK).create(make_work(name=f"w{index}", spec=spec))
        names.append(created["metadata"]["name"])
    rows = {name: work_row(session, "karmada-es-member1", name) for name in names}
    for name in names[:4]:
        rows[name].applied = True
    session.flush()
    pages = list(tracked_work_state_pages(session, page_size=2))
    assert [len(page) for page in pages] == [2, 2]
    assert [state.id for page in pages for state in page] == sorted(rows[name].id for name in names[:4])
