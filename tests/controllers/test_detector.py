"""The detector on both backends: templates meet policies, bindings follow, only queued rows are read."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from federation.controllers import detector as detector_module
from federation.controllers.detector import Detector
from federation.controllers.runtime import FakeClock
from federation.model.propagation import choose_policy
from federation.store import migrate
from federation.store.db import UnitOfWork, make_engine
from federation.store.repository import ObjectRepository
from tests.api import manifests as m
from tests.sql_counter import count_statements

POLICY = "policy.karmada.io/v1alpha1"
BINDINGS = "work.karmada.io/v1alpha2"


@pytest.fixture
def engine(database_url: str):
    migrate.upgrade(database_url)
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


@pytest.fixture
def uow(engine) -> UnitOfWork:
    return UnitOfWork.for_engine(engine)


def detector(uow: UnitOfWork) -> Detector:
    return Detector(uow, FakeClock(), "test", batch_size=10)


def put(uow: UnitOfWork, obj: dict[str, Any]) -> dict[str, Any]:
    with uow() as session:
        repo = ObjectRepository(session, obj["kind"], obj["apiVersion"])
        meta = obj["metadata"]
        current = repo.get(meta.get("namespace"), meta["name"])
        if current is None:
            return repo.create(obj)
        body = copy.deepcopy(obj)
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        return repo.replace(body)


def delete(uow: UnitOfWork, obj: dict[str, Any]) -> None:
    with uow() as session:
        meta = obj["metadata"]
        ObjectRepository(session, obj["kind"], obj["apiVersion"]).delete(meta.get("namespace"), meta["name"])


def binding(uow: UnitOfWork, namespace: str, name: str) -> dict[str, Any] | None:
    kind = "ResourceBinding" if namespace else "ClusterResourceBinding"
    with uow() as session:
        return ObjectRepository(session, kind, BINDINGS).get(namespace, name)


def policy(
    name: str, *, priority: int = 0, selector: dict | None = None, preemption: str | None = None
) -> dict:
    body = copy.deepcopy(m.PROPAGATION_POLICY)
    body["metadata"] = {"name": name, "namespace": "default"}
    body["spec"]["priority"] = priority
    if selector is not None:
        body["spec"]["resourceSelectors"] = [selector]
    if preemption:
        body["spec"]["preemption"] = preemption
    return body


def test_template_and_policy_make_one_binding(uow):
    template = put(uow, m.DEPLOYMENT)
    put(uow, m.PROPAGATION_POLICY)
    outcome = detector(uow).reconcile()
    assert outcome.processed >= 1 and "ResourceBinding" in outcome.wrote
    made = binding(uow, "default", "nginx-deployment")
    assert made is not None
    assert made["spec"]["resource"]["uid"] == template["metadata"]["uid"]
    assert made["spec"]["replicas"] == 2
    assert made["spec"]["placement"] == m.PROPAGATION_POLICY["spec"]["placement"]
    assert made["metadata"]["labels"]["propagationpolicy.karmada.io/name"] == "nginx-propagation"
    assert made["metadata"]["ownerReferences"][0]["uid"] == template["metadata"]["uid"]


def test_second_pass_reads_nothing_and_writes_nothing(uow, engine):
    put(uow, m.DEPLOYMENT)
    put(uow, m.PROPAGATION_POLICY)
    detector(uow).reconcile()
    before = binding(uow, "default", "nginx-deployment")
    statements = count_statements(engine, lambda: detector(uow).reconcile())
    # Three claim attempts (two policy tables, templates), nothing else: no row is read when none is queued.
    assert len(statements) == 3
    assert binding(uow, "default", "nginx-deployment") == before


def test_replicas_change_updates_binding_status_change_does_not(uow):
    put(uow, m.DEPLOYMENT)
    put(uow, m.PROPAGATION_POLICY)
    detector(uow).reconcile()
    first = binding(uow, "default", "nginx-deployment")
    with uow() as session:
        ObjectRepository(session, "Deployment", "apps/v1").update_status(
            "default", "nginx", {"readyReplicas": 1}
        )
    assert detector(uow).reconcile().processed == 0
    assert binding(uow, "default", "nginx-deployment") == first
    scaled = copy.deepcopy(m.DEPLOYMENT)
    scaled["spec"]["replicas"] = 6
    put(uow, scaled)
    detector(uow).reconcile()
    assert binding(uow, "default", "nginx-deployment")["spec"]["replicas"] == 6


def test_policy_created_after_template_claims_it(uow):
    put(uow, m.DEPLOYMENT)
    detector(uow).reconcile()
    assert binding(uow, "default", "nginx-deployment") is None
    put(uow, m.PROPAGATION_POLICY)
    detector(uow).reconcile()
    assert binding(uow, "default", "nginx-deployment") is not None


def test_template_deleted_takes_its_binding(uow):
    put(uow, m.DEPLOYMENT)
    put(uow, m.PROPAGATION_POLICY)
    detector(uow).reconcile()
    delete(uow, m.DEPLOYMENT)
    assert binding(uow, "default", "nginx-deployment") is None


def test_policy_deleted_keeps_binding_and_another_policy_takes_over(uow):
    put(uow, m.DEPLOYMENT)
    put(uow, policy("by-name", priority=5))
    put(uow, policy("kind-wide", selector={"apiVersion": "apps/v1", "kind": "Deployment"}))
    detector(uow).reconcile()
    assert (
        binding(uow, "default", "nginx-deployment")["metadata"]["labels"]["propagationpolicy.karmada.io/name"]
        == "by-name"
    )
    delete(uow, policy("by-name"))
    detector(uow).reconcile()
    kept = binding(uow, "default", "nginx-deployment")
    assert kept["metadata"]["labels"]["propagationpolicy.karmada.io/name"] == "kind-wide"


def test_cluster_scoped_template_takes_cluster_propagation_policy(uow):
    put(uow, m.CLUSTER_ROLE)
    put(uow, m.CLUSTER_PROPAGATION_POLICY)
    detector(uow).reconcile()
    made = binding(uow, "", "example-clusterrole-clusterrole")
    assert made is not None and made["kind"] == "ClusterResourceBinding"
    assert "replicas" not in made["spec"]


# -- policy choice (pure) -----------------------------------------------------------------------

DEPLOY = {**m.DEPLOYMENT, "metadata": {**m.DEPLOYMENT["metadata"], "uid": "u1"}}
KIND_WIDE = {"apiVersion": "apps/v1", "kind": "Deployment"}
BY_LABEL = {"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {"matchLabels": {"app": "nginx"}}}
BY_NAME = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}


@pytest.mark.parametrize(
    ("candidates", "winner"),
    [
        ([("a", 0, KIND_WIDE), ("b", 0, BY_LABEL), ("c", 0, BY_NAME)], "c"),  # name beats label beats kind
        ([("a", 0, KIND_WIDE), ("b", 0, BY_LABEL)], "b"),
        ([("z", 1, KIND_WIDE), ("c", 0, BY_NAME)], "z"),  # explicit priority first
        ([("b", 0, BY_NAME), ("a", 0, BY_NAME)], "a"),  # then the name, ascending
    ],
)
def test_policy_precedence(candidates, winner):
    policies = [policy(n, priority=p, selector=s) for n, p, s in candidates]
    assert choose_policy(DEPLOY, policies, [])["metadata"]["name"] == winner


def test_namespaced_policy_beats_cluster_policy_and_preemption_needs_always():
    cpp = {
        **m.CLUSTER_PROPAGATION_POLICY,
        "spec": {**m.CLUSTER_PROPAGATION_POLICY["spec"], "resourceSelectors": [BY_NAME], "priority": 100},
    }
    low = policy("low", selector=KIND_WIDE)
    assert choose_policy(DEPLOY, [low], [cpp])["metadata"]["name"] == "low"
    high = policy("high", priority=10, selector=BY_NAME)
    held = ("PropagationPolicy", "default", "low")
    assert choose_policy(DEPLOY, [low, high], [], current=held)["metadata"]["name"] == "low"
    preempting = policy("high", priority=10, selector=BY_NAME, preemption="Always")
    assert choose_policy(DEPLOY, [low, preempting], [], current=held)["metadata"]["name"] == "high"


def _reads_to_detect(uow, engine, prefix: str, count: int) -> int:
    names = [f"{prefix}{i}" for i in range(count)]
    for name in names:
        put(uow, {**copy.deepcopy(m.DEPLOYMENT), "metadata": {"name": name, "namespace": "default"}})
    put(uow, policy("all", selector={"apiVersion": "apps/v1", "kind": "Deployment"}))
    detector(uow).reconcile()  # first pass: the bindings are created
    for name in names:
        scaled = copy.deepcopy(m.DEPLOYMENT)
        scaled["metadata"] = {"name": name, "namespace": "default"}
        scaled["spec"]["replicas"] = 9
        put(uow, scaled)
    statements = count_statements(engine, lambda: detector(uow).reconcile())
    assert all(binding(uow, "default", f"{name}-deployment")["spec"]["replicas"] == 9 for name in names)
    # Drawing revisions is a SELECT on Postgres (``nextval``) but not a read.
    return sum(1 for s in statements if s.lstrip().upper().startswith("SELECT") and "nextval(" not in s)


def test_detector_reads_do_not_grow_with_the_batch(uow, engine):
    """Updating 1 or 6 bindings: the same reads (the templates, policies and existing bindings of a batch
    are each read once, and the rewritten rows are those already read)."""
    one = _reads_to_detect(uow, engine, "a", 1)
    six = _reads_to_detect(uow, engine, "b", 6)
    assert six == one


def _statements_to_create(uow, engine, prefix: str, count: int) -> list[str]:
    put(uow, policy(f"{prefix}-all", selector={"apiVersion": "apps/v1", "kind": "Deployment"}))
    detector(uow).reconcile()
    for i in range(count):
        put(
            uow, {**copy.deepcopy(m.DEPLOYMENT), "metadata": {"name": f"{prefix}{i}", "namespace": "default"}}
        )
    statements = count_statements(engine, lambda: detector(uow).reconcile())
    assert all(binding(uow, "default", f"{prefix}{i}-deployment") is not None for i in range(count))
    return statements


def test_a_batch_of_new_templates_is_a_fixed_number_of_statements(uow, engine):
    """Creating 1 or 8 bindings costs the same statements on Postgres (the ORM inserts a batch by one
    statement there; SQLite's driver goes row by row): the claims, policies, templates, bindings, taken
    names, the flush (revisions, change log, INSERT), the claims' release (one statement there): 12 on
    Postgres."""
    one = _statements_to_create(uow, engine, "a", 1)
    eight = _statements_to_create(uow, engine, "b", 8)
    inserts = [s for s in eight if s.lstrip().upper().startswith("INSERT INTO RESOURCE_BINDINGS")]
    if engine.dialect.name == "postgresql":
        assert len(eight) == len(one) == 12, "\n".join(eight)
        assert len(inserts) == 1
    else:
        assert len(eight) - len(inserts) == len(one) - 1, "\n".join(eight)


def test_a_batch_write_that_fails_falls_back_to_one_binding_at_a_time(uow, monkeypatch):
    """A binding name taken between the batch's check and its INSERT (a hand-made binding, a race) fails the
    batch's flush: the batch is rolled back and each binding is written alone, so the others are created
    and the taken name is left to its owner."""
    from federation.controllers import detector as detector_module

    put(uow, policy("all", selector={"apiVersion": "apps/v1", "kind": "Deployment"}))
    for name in ("a", "b", "c"):
        put(uow, {**copy.deepcopy(m.DEPLOYMENT), "metadata": {"name": name, "namespace": "default"}})
    by_hand = {
        "apiVersion": BINDINGS,
        "kind": "ResourceBinding",
        "metadata": {"name": "b-deployment", "namespace": "default"},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "other"}},
    }
    put(uow, by_hand)
    monkeypatch.setattr(
        detector_module, "_taken_names", lambda session, bindings: set()
    )  # the check missed it
    detector(uow).reconcile()
    assert binding(uow, "default", "a-deployment")["spec"]["resource"]["name"] == "a"
    assert binding(uow, "default", "c-deployment")["spec"]["resource"]["name"] == "c"
    assert binding(uow, "default", "b-deployment")["spec"]["resource"]["name"] == "other"


def test_a_batch_reads_only_its_namespaces_policies(uow, monkeypatch):
    """A PropagationPolicy claims templates of its own namespace only, so a batch reads the policies of
    its templates' namespaces, not every namespace's: what another namespace holds costs it nothing."""
    for namespace in ("team-a", "team-b", "team-c"):
        body = policy("all", selector={"apiVersion": "apps/v1", "kind": "Deployment"})
        body["metadata"]["namespace"] = namespace
        put(uow, body)
    put(uow, {**copy.deepcopy(m.DEPLOYMENT), "metadata": {"name": "web", "namespace": "team-b"}})
    loaded: list[str] = []
    real = detector_module.join

    def recording(row: Any) -> dict[str, Any]:
        manifest = real(row)
        if manifest["kind"] == "PropagationPolicy":
            loaded.append(manifest["metadata"]["namespace"])
        return manifest

    monkeypatch.setattr(detector_module, "join", recording)
    detector(uow).reconcile()
    assert binding(uow, "team-b", "web-deployment") is not None
    assert loaded == ["team-b"]
