"""What a LIST page or a watch event renders is a copy: the stored objects never change by being read, and
a workload is copied where rendering writes (top level, metadata), not deep-copied whole."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from federation.sim import cluster as cluster_module
from federation.sim.cluster import SimCluster
from federation.sim.config import Faults, SimulatorConfig
from tests.members.helpers import deployment


@pytest.fixture
def cluster() -> SimCluster:
    config = SimulatorConfig()
    return SimCluster(config, Faults(config))


@pytest.fixture
def deep_copies(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The objects the cluster deep-copies (``clone``) from now on."""
    copies: list[object] = []
    real = cluster_module.clone

    def counted(obj: Any) -> Any:
        copies.append(obj)
        return real(obj)

    monkeypatch.setattr(cluster_module, "clone", counted)
    return copies


def _deployments(cluster: SimCluster) -> Any:
    return cluster.registry.lookup("apps", "deployments")


def test_a_list_page_renders_workloads_without_deep_copies(
    cluster: SimCluster, deep_copies: list[object]
) -> None:
    rtype = _deployments(cluster)
    for name in ("a", "b", "c"):
        cluster.create(rtype, "default", deployment(name, 2), "test")
    stored = copy.deepcopy(cluster.store.peek_objects(rtype))
    deep_copies.clear()  # what creating them copied
    page, remaining, _ = cluster.list_page(rtype, None, "", None, None, None)
    assert [o["metadata"]["name"] for o in page] == ["a", "b", "c"] and remaining == 0
    assert all(o["status"]["replicas"] == 2 for o in page)  # rendered
    assert deep_copies == []
    for obj in page:  # what a reader does to its copy stays in its copy
        obj["metadata"]["resourceVersion"] = "0"
        obj["spec"] = {}
    assert cluster.store.peek_objects(rtype) == stored


def test_a_watch_render_leaves_the_stored_object_alone(cluster: SimCluster) -> None:
    rtype = _deployments(cluster)
    cluster.create(rtype, "default", deployment("web", 1), "test")
    [stored] = cluster.store.peek_objects(rtype)
    before = copy.deepcopy(stored)
    rendered = cluster.render(rtype, stored)
    rendered["metadata"]["resourceVersion"] = "999"  # what a watch event sets
    assert "status" in rendered
    assert stored == before


def test_a_list_page_renders_pods_without_deep_copies(cluster: SimCluster, deep_copies: list[object]) -> None:
    cluster.create(_deployments(cluster), "default", deployment("web", 3), "test")
    pods = cluster.registry.lookup("", "pods")
    stored = copy.deepcopy(cluster.store.peek_objects(pods))
    assert len(stored) == 3
    deep_copies.clear()  # what creating them copied
    page, remaining, _ = cluster.list_page(pods, None, "", None, None, None)
    assert len(page) == 3 and remaining == 0
    assert all(p["status"]["phase"] == "Running" for p in page)  # rendered
    assert deep_copies == []
    for obj in page:  # what a reader does to its copy stays in its copy
        obj["metadata"]["resourceVersion"] = "0"
        obj["spec"] = {}
    assert cluster.store.peek_objects(pods) == stored
