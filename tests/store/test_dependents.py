"""Deleting an object updates its dependents in the same transaction (store/dependents.py)."""

from __future__ import annotations

from sqlalchemy import select

from federation.store.repository import ObjectRepository
from federation.store.tables import ResourceBindingRow, ResourceTemplateRow

from .factories import make_binding, make_cluster, make_deployment, make_propagation_policy

BINDINGS = "work.karmada.io/v1alpha2"


def _flags(session, table, flag):
    return dict(session.execute(select(table.name, getattr(table, flag))).all())


def test_deleting_a_cluster_queues_the_bindings_that_target_it(uow):
    with uow() as session:
        ObjectRepository(session, "Cluster", "cluster.karmada.io/v1alpha1").create(make_cluster("member1"))
        repo = ObjectRepository(session, "ResourceBinding", BINDINGS)
        repo.create(make_binding("on", clusters=[{"name": "member1", "replicas": 1}]))
        repo.create(make_binding("off", clusters=[{"name": "member2", "replicas": 1}]))
        session.execute(ResourceBindingRow.__table__.update().values(needs_scheduling=False))
    with uow() as session:
        ObjectRepository(session, "Cluster", "cluster.karmada.io/v1alpha1").delete(None, "member1")
    with uow() as session:
        assert _flags(session, ResourceBindingRow, "needs_scheduling") == {"on": True, "off": False}


def test_deleting_a_policy_queues_the_templates_it_claimed(uow):
    with uow() as session:
        template = ObjectRepository(session, "Deployment", "apps/v1").create(make_deployment("nginx"))
        other = ObjectRepository(session, "Deployment", "apps/v1").create(make_deployment("other"))
        ObjectRepository(session, "PropagationPolicy", "policy.karmada.io/v1alpha1").create(
            make_propagation_policy("pp")
        )
        claimed = make_binding("nginx-deployment", spec={"resource": {"uid": template["metadata"]["uid"]}})
        claimed["metadata"]["labels"] = {
            "propagationpolicy.karmada.io/name": "pp",
            "propagationpolicy.karmada.io/namespace": "default",
        }
        ObjectRepository(session, "ResourceBinding", BINDINGS).create(claimed)
        session.execute(ResourceTemplateRow.__table__.update().values(needs_detection=False))
        assert other["metadata"]["uid"] != template["metadata"]["uid"]
    with uow() as session:
        ObjectRepository(session, "PropagationPolicy", "policy.karmada.io/v1alpha1").delete("default", "pp")
    with uow() as session:
        assert _flags(session, ResourceTemplateRow, "needs_detection") == {"nginx": True, "other": False}
        # Karmada keeps the binding (and the member objects) when its policy goes away.
        assert ObjectRepository(session, "ResourceBinding", BINDINGS).get("default", "nginx-deployment")


def test_deleting_a_template_deletes_its_bindings(uow):
    with uow() as session:
        template = ObjectRepository(session, "Deployment", "apps/v1").create(make_deployment("nginx"))
        ObjectRepository(session, "ResourceBinding", BINDINGS).create(
            make_binding("nginx-deployment", spec={"resource": {"uid": template["metadata"]["uid"]}})
        )
    with uow() as session:
        ObjectRepository(session, "Deployment", "apps/v1").delete("default", "nginx")
    with uow() as session:
        assert (
            ObjectRepository(session, "ResourceBinding", BINDINGS).get("default", "nginx-deployment") is None
        )
