"""A cluster's Ready=False condition, as the cluster-status controller stores it, says why (in kubectl's
words), and replacing the credentials (`api.rejoin`) heals a cluster whose member CA changed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from federation.api.join import JoinRequest
from federation.api.rejoin import rejoin_cluster
from federation.sim import RunningSimulator
from federation.store.clusters import ClusterRepository
from tests.controllers.test_cluster_status import Harness


@pytest.fixture
def harness(database_url: str, tmp_path: Path) -> Iterator[Harness]:
    running = Harness(database_url, tmp_path)
    yield running
    running.close()


def ready(cluster: dict[str, Any]) -> dict[str, Any]:
    return dict(next(c for c in cluster["status"]["conditions"] if c["type"] == "Ready"))


def with_ca_of(kubeconfig: dict[str, Any], other: RunningSimulator) -> dict[str, Any]:
    """``kubeconfig`` trusting ``other``'s CA instead of its own member's (as after a re-issued member CA)."""
    ca = other.kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"]
    kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"] = ca
    return kubeconfig


def test_an_unknown_authority_is_the_cause_and_new_credentials_heal_it(
    harness: Harness, start_sim: Callable[..., RunningSimulator]
) -> None:
    sim = start_sim(name="m1")
    harness.join(sim, "m1")
    harness.pass_at(0)
    stale = with_ca_of(sim.kubeconfig, start_sim(name="other"))
    with harness.uow() as session:
        ClusterRepository(session).set_kubeconfig("m1", stale, harness.box)
    harness.pass_at(10)
    assert harness.pass_at(30) == 1  # the failure threshold
    condition = ready(harness.cluster("m1"))
    assert (condition["status"], condition["reason"]) == ("False", "ClusterNotReachable")
    assert condition["message"].startswith(
        "cluster is not reachable: x509: certificate signed by unknown authority"
    )

    request = JoinRequest("m1", sim.kubeconfig)
    rejoin_cluster(harness.uow, harness.box, harness.settings.members, request, now=harness.clock.now())
    healed = ready(harness.cluster("m1"))
    assert (healed["status"], healed["reason"]) == ("True", "ClusterReady")


def test_a_stopped_member_says_connection_refused(
    harness: Harness, start_sim: Callable[..., RunningSimulator]
) -> None:
    sim = start_sim(name="m1")
    harness.join(sim, "m1")
    harness.pass_at(0)
    sim.stop()
    harness.pass_at(10)
    assert harness.pass_at(30) == 1
    condition = ready(harness.cluster("m1"))
    assert condition["status"] == "False"
    assert condition["message"].startswith("cluster is not reachable: connection refused")
