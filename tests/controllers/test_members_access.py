"""MemberAccess: one read of every member's credentials per pass, clients reused while they are unchanged."""

from __future__ import annotations

import pytest

from federation.controllers.members_access import MemberAccess
from federation.members.errors import MemberError
from federation.settings import MemberSettings
from federation.store import migrate
from federation.store.clusters import ClusterRepository
from federation.store.crypto import SecretBox, generate_key
from federation.store.db import UnitOfWork, make_engine
from federation.store.repository import ObjectRepository
from tests.sql_counter import count_statements


def kubeconfig(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": name, "cluster": {"server": "https://127.0.0.1:9", "insecure-skip-tls-verify": True}}
        ],
        "users": [{"name": name, "user": {"token": f"token-{name}"}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
    }


@pytest.fixture
def access(database_url):
    migrate.upgrade(database_url)
    engine = make_engine(database_url)
    uow = UnitOfWork.for_engine(engine)
    box = SecretBox(generate_key())
    with uow() as session:
        for name in ("m1", "m2", "m3", "pull"):
            ObjectRepository(session, "Cluster", "cluster.karmada.io/v1alpha1").create(
                {
                    "apiVersion": "cluster.karmada.io/v1alpha1",
                    "kind": "Cluster",
                    "metadata": {"name": name},
                    "spec": {"syncMode": "Pull" if name == "pull" else "Push"},
                }
            )
            if name != "pull":
                ClusterRepository(session).set_kubeconfig(name, kubeconfig(name), box)
    members = MemberAccess(uow, box, MemberSettings())
    yield members, engine
    members.close()
    engine.dispose()


def test_one_read_for_every_cluster_of_a_pass(access):
    members, engine = access
    found: dict = {}
    statements = count_statements(engine, lambda: found.update(members.clients(["m1", "m2", "m3", "pull"])))
    assert len(statements) == 1
    assert {name for name, c in found.items() if not isinstance(c, MemberError)} == {"m1", "m2", "m3"}
    assert isinstance(found["pull"], MemberError) and "no credentials" in found["pull"].reason
    again = members.clients(["m1"])
    assert again["m1"] is found["m1"], "an unchanged kubeconfig reuses the cached client"
    with pytest.raises(MemberError):
        members.client("pull")
