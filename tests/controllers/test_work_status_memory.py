"""Work status collection holds little per Work and never a member's whole LIST (issue 12, memory).

- A tracked Work is its cluster, an ``Identity`` tuple per manifest (strings interned, the tuple shared by
  the Works of one template on several clusters) and a 16-byte digest: bounded bytes per Work, its entry
  in the index from member objects to Works (an id, not a set of one) included.
- A round matches a member's LIST a page at a time (``Sightings``) and keeps only the statuses that
  changed: no member object of an earlier page is alive when the next page is read, and the outcome is
  the same as matching the whole LIST (namespace-less manifests found in "default", missing objects).
"""

from __future__ import annotations

import json
import sys
import tracemalloc
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import update

from federation.controllers.status_sightings import Identity, Sightings, Tracked, digest
from federation.controllers.status_watches import StatusWatches
from federation.controllers.work_status import WorkStatusCollector
from federation.model.status_interpreter import manifest_status
from federation.sim import RunningSimulator
from federation.store import applied_works
from federation.store.applied_works import WorkState
from federation.store.tables import WorkRow
from federation.store.works import WorkRepository
from tests.controllers.test_execution_support import Harness
from tests.controllers.test_work_status_list import harness, sim
from tests.members.helpers import deployment
from tests.members.test_member_client_pages import alive_at_pages

__all__ = ["alive_at_pages", "harness", "sim"]  # fixtures, re-exported for pytest

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _decoded(value: Any) -> Any:
    """``value`` as the database hands it over: fresh objects, no string shared with another row."""
    return json.loads(json.dumps(value))


def _deep_size(obj: Any, seen: set[int]) -> int:
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        size += sum(_deep_size(k, seen) + _deep_size(v, seen) for k, v in obj.items())
    elif isinstance(obj, list | tuple | set | frozenset):
        size += sum(_deep_size(v, seen) for v in obj)
    elif hasattr(obj, "__slots__"):
        size += sum(_deep_size(getattr(obj, a), seen) for a in obj.__slots__)
    return size


def _track_templates(collector: WorkStatusCollector, templates: int) -> None:
    for index in range(templates):
        manifest = deployment(f"app{index:05d}", 1, namespace=f"team{index % 10}")
        for offset, cluster in enumerate(("member1", "member2", "member3")):
            statuses = [{"identifier": {"ordinal": 0}, "health": "Healthy"}]
            work = _decoded({"cluster": cluster, "manifest": manifest, "statuses": statuses})
            identity = (manifest["apiVersion"], manifest["kind"], f"team{index % 10}", f"app{index:05d}")
            entries = [tuple(_decoded(list(identity)))]  # decoded: the strings are not yet shared
            state = WorkState(3 * index + offset, NOW, 1, work["cluster"], True, entries, work["statuses"])
            collector._track(state)


def test_a_tracked_work_costs_a_few_hundred_bytes_and_shares_its_strings() -> None:
    collector = WorkStatusCollector(uow=None, clock=None, members=None)  # type: ignore[arg-type]
    templates = 200
    _track_templates(collector, templates)
    tracked = collector._tracked
    assert len(tracked) == 3 * templates
    # One template's Works on three clusters share its name, kind, namespace and the cluster names.
    first, second = tracked[0], tracked[1]
    assert first.manifests[0].name is second.manifests[0].name
    assert first.manifests is second.manifests  # one tuple of identities for the three
    assert first.manifests == (Identity("apps/v1", "Deployment", "team0", "app00000"),)
    assert first.digest == digest([{"identifier": {"ordinal": 0}, "health": "Healthy"}])
    # ~240 bytes a Work (the dict's slot included); ~320 with a tuple of identities each, ~870 with a
    # dict per manifest.
    assert _deep_size(tracked, set()) / len(tracked) < 300


def test_what_the_collector_holds_per_work_index_included_stays_a_few_hundred_bytes() -> None:
    """Everything tracking allocates and keeps (``Tracked``, the kinds counted, the index from member
    objects to Works), measured by what the controllers' lines still hold: ~270 bytes a Work; ~640 when
    each object of the index held a set of one Work and each Work its own tuple of identities."""
    collector = WorkStatusCollector(uow=None, clock=None, members=None)  # type: ignore[arg-type]
    tracemalloc.start()
    try:
        _track_templates(collector, 1000)
        # Only what the collector's own code allocated, whatever other threads do meanwhile.
        snapshot = tracemalloc.take_snapshot().filter_traces(
            [
                tracemalloc.Filter(True, "*/federation/controllers/*"),
                tracemalloc.Filter(True, "*/federation/shared_instances.py"),
            ]
        )
    finally:
        tracemalloc.stop()
    held = sum(stat.size for stat in snapshot.statistics("filename"))
    assert held / len(collector._tracked) < 450


def test_the_index_keeps_an_object_held_by_several_works_until_the_last_is_forgotten() -> None:
    watches = StatusWatches()
    app = Identity("apps/v1", "Deployment", "team0", "app")
    first, second = Tracked("member1", (app,), b""), Tracked("member1", (app,), b"")
    watches.index(1, first)
    watches.index(2, second)
    watches.index(2, second)  # indexed again (a Work re-read): still once
    assert watches._works_of == {("member1", ("apps/v1", "Deployment")): {("team0", "app"): {1, 2}}}
    watches.unindex(1, first)
    assert watches._works_of == {("member1", ("apps/v1", "Deployment")): {("team0", "app"): 2}}
    watches.unindex(1, first)  # forgotten twice: nothing changes
    assert watches._works_of == {("member1", ("apps/v1", "Deployment")): {("team0", "app"): 2}}
    watches.unindex(2, second)
    assert watches._works_of == {}


def _tracked(cluster: str, *identities: Identity, statuses: list[dict[str, Any]] | None = None) -> Tracked:
    return Tracked(cluster, identities, digest(statuses or []))


def _obj(kind: str, namespace: str, name: str, **status: Any) -> dict[str, Any]:
    api = "apps/v1" if kind == "Deployment" else "v1"
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": api, "kind": kind, "metadata": meta, "status": status}


DEPLOYMENT = ("apps/v1", "Deployment")
CONFIGMAP = ("v1", "ConfigMap")


def test_sightings_match_page_by_page_as_the_whole_list_would() -> None:
    web = Identity("apps/v1", "Deployment", "default", "web")
    bare = Identity("v1", "ConfigMap", None, "cfg")  # no namespace: applied to "default"
    ns = Identity("v1", "Namespace", None, "team")  # cluster-scoped: listed with no namespace
    gone = Identity("apps/v1", "Deployment", "default", "gone")
    seen_web = _obj("Deployment", "default", "web", replicas=1, readyReplicas=1)
    unchanged = [manifest_status(web.manifest(), 0, seen_web)]
    works = [
        (1, _tracked("m1", web, statuses=unchanged)),  # unchanged: not reported
        (2, _tracked("m1", bare)),  # found in "default"
        (3, _tracked("m1", ns)),  # found as given, not in "default"
        (4, _tracked("m1", web, gone)),  # one object missing
    ]
    sightings = Sightings(works)
    assert sightings.kinds() == {DEPLOYMENT, CONFIGMAP, ("v1", "Namespace")}
    sightings.page(DEPLOYMENT, [seen_web])
    sightings.page(DEPLOYMENT, [_obj("Deployment", "other", "web")])  # another namespace: not ours
    sightings.listed(DEPLOYMENT)
    sightings.page(CONFIGMAP, [_obj("ConfigMap", "default", "cfg", x=1)])
    sightings.listed(CONFIGMAP)
    namespaces = ("v1", "Namespace")
    sightings.page(namespaces, [_obj("Namespace", "default", "team", phase="Old")])
    sightings.page(namespaces, [_obj("Namespace", "", "team", phase="Active")])
    sightings.listed(namespaces)
    found = {o.work_id: o for o in sightings.outcomes()}
    assert set(found) == {2, 3, 4}
    assert found[2].statuses == (
        manifest_status(bare.manifest(), 0, _obj("ConfigMap", "default", "cfg", x=1)),
    )
    assert not found[2].missing
    assert found[3].statuses[0]["status"] == {"phase": "Active"}  # as given beats "default"
    assert found[4].missing
    assert found[4].statuses[1] == manifest_status(gone.manifest(), 1, None)


def test_a_work_not_seen_whole_is_not_reported() -> None:
    web = Identity("apps/v1", "Deployment", "default", "web")
    cfg = Identity("v1", "ConfigMap", "default", "cfg")
    sightings = Sightings([(1, _tracked("m1", web, cfg)), (2, _tracked("m1", web))])
    sightings.page(DEPLOYMENT, [_obj("Deployment", "default", "web", replicas=1)])
    sightings.listed(DEPLOYMENT)  # the ConfigMap LIST then failed: Work 1 is half seen
    assert [o.work_id for o in sightings.outcomes()] == [2]
    for slot, identity in sightings.wanted(CONFIGMAP):  # read one by one instead
        assert identity == cfg
        sightings.resolve(slot, None)
    assert {o.work_id: o.missing for o in sightings.outcomes()} == {1: True, 2: False}


def test_a_round_keeps_no_page_of_the_members_list_while_reading_the_next(
    harness: Harness, sim: RunningSimulator, alive_at_pages: dict[str, list[int]]
) -> None:
    harness.collector.watch_members = False  # the rounds of LISTs (an informer's LIST pages alike)
    workloads = 7  # pages of 3: three pages
    _applied_with_statuses(harness, sim, workloads)
    alive_at_pages.clear()
    harness.collector.reconcile()
    assert alive_at_pages["/apis/apps/v1/deployments"] == [0, 0, 0]
    assert len(harness.collector._tracked) == workloads


def test_a_full_read_tracks_the_works_page_by_page_and_forgets_those_it_did_not_find(
    harness: Harness, sim: RunningSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first read and every resync take the applied Works a page at a time (each page tracked before the
    next is read: no page's manifest statuses outlive it), and a Work the resync no longer finds applied is
    no longer tracked."""
    workloads = 7
    _applied_with_statuses(harness, sim, workloads)
    assert len(harness.collector._tracked) == workloads
    untracked = min(harness.collector._tracked)
    with harness.uow() as session:  # not a write the change feed sees: only a full read finds it out
        session.execute(update(WorkRow).where(WorkRow.id == untracked).values(applied=False))
    monkeypatch.setattr(applied_works, "PAGE_SIZE", 3)
    pages: list[tuple[int, int]] = []  # (Works in the page, Works tracked when it came)
    track_all = WorkStatusCollector._track_all

    def recording(collector: WorkStatusCollector, states: Any, read: set[int]) -> None:
        pages.append((len(states), len(read)))
        track_all(collector, states, read)

    monkeypatch.setattr(WorkStatusCollector, "_track_all", recording)
    harness.clock.advance(harness.collector.feed.resync_seconds)
    harness.collector.reconcile()
    assert pages == [(3, 0), (3, 3)]
    assert untracked not in harness.collector._tracked
    assert len(harness.collector._tracked) == workloads - 1


def _applied_with_statuses(harness: Harness, sim: RunningSimulator, workloads: int) -> None:
    """``workloads`` Deployments bound to member1 (the simulator), run until every Work is applied and
    carries its manifest statuses."""
    harness.add_cluster("member1", sim)
    for index in range(workloads):
        template = harness.add_template(deployment(f"web{index:02d}", 1))
        harness.add_binding(template, [{"name": "member1", "replicas": 1}])

    def statuses_ready() -> bool:
        with harness.uow() as session:
            works, _ = WorkRepository(session).objects.list()
        return len(works) == workloads and all((w.get("status") or {}).get("manifestStatuses") for w in works)

    harness.until(statuses_ready, what="every Work applied with its statuses")
