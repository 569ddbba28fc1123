"""Failover end to end, the way an operator meets it: real simulators, the API server with every controller,
short real thresholds (a few seconds), polled with deadlines.

- A member's simulator is stopped: Ready=False, the default ClusterTaintPolicy taints it not-ready:NoExecute,
  the 2 s default toleration runs out, the binding moves to the survivor, which runs every replica ready,
  and the graceful-eviction task goes once the survivor is healthy.
- A user taints one of two clusters a Duplicated workload runs on (spread 2..2 over four): a replacement is
  chosen and the healthy one is kept.
- Every member down at once: nothing is evicted.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from federation.sim import RunningSimulator, SimulatorConfig, run_simulator_in_thread
from tests.conftest import RunningServer, start_server
from tests.e2e.test_three_members import DEPLOYMENTS, FAST, POLICIES, join, policy, put, wait_members
from tests.members.helpers import deployment, wait_for

pytestmark = pytest.mark.slow

BINDINGS = "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings"
CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
FAILOVER = {
    "default_not_ready_toleration_seconds": 2,
    "default_unreachable_toleration_seconds": 2,
    "interval_seconds": 0.2,
}
DEADLINE = 45.0


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    running = start_server(
        tmp_path, controllers={**FAST, "graceful_eviction_timeout_seconds": 60}, failover=FAILOVER
    )
    try:
        yield running
    finally:
        running.process.stop()


@pytest.fixture
def members() -> Iterator[dict[str, RunningSimulator]]:
    sims = {
        name: run_simulator_in_thread(SimulatorConfig(name=name, nodes=2, node_cpu="4", ready_delay=0.2))
        for name in ("member1", "member2", "member3", "member4")
    }
    try:
        yield sims
    finally:
        for sim in sims.values():
            if sim.thread.is_alive():
                sim.stop()


def binding(http: httpx.Client, name: str) -> dict[str, Any]:
    """The binding, or {} while the detector has not made it yet (a poll may come first: 404)."""
    answer = http.get(f"{BINDINGS}/{name}-deployment")
    if answer.status_code == 404:
        return {}
    answer.raise_for_status()
    found: dict[str, Any] = answer.json()
    return found


def placement(http: httpx.Client, name: str) -> dict[str, int]:
    clusters = (binding(http, name).get("spec") or {}).get("clusters") or []
    return {c["name"]: c.get("replicas", 0) for c in clusters}


def tasks(http: httpx.Client, name: str) -> list[str]:
    found = (binding(http, name).get("spec") or {}).get("gracefulEvictionTasks") or []
    return [t["fromCluster"] for t in found]


def test_a_stopped_member_fails_over_to_the_survivor(
    server: RunningServer, members: dict[str, RunningSimulator]
) -> None:
    with server.client() as http:
        for name in ("member1", "member2"):
            join(http, name, members[name])
        put(http, POLICIES, policy("web", "web", ["member1", "member2"], {"member1": 1, "member2": 2}))
        put(http, DEPLOYMENTS, deployment("web", 3))
        wait_members(members, "web", {"member1": 1, "member2": 2})

        members["member1"].stop()
        wait_for(
            lambda: placement(http, "web") == {"member2": 3}, timeout=DEADLINE, what="the move to member2"
        )
        assert tasks(http, "web") == ["member1"] or tasks(http, "web") == []
        wait_members(members, "web", {"member2": 3})
        wait_for(
            lambda: tasks(http, "web") == [], timeout=DEADLINE, what="the task to go once member2 is healthy"
        )
        taints = http.get(f"{CLUSTERS}/member1").json()["spec"]["taints"]
        assert {"cluster.karmada.io/not-ready"} <= {t["key"] for t in taints if t["effect"] == "NoExecute"}


def _spread_policy() -> dict[str, Any]:
    body = policy("dup", "dup", ["member1", "member2", "member3", "member4"])
    body["spec"]["placement"]["spreadConstraints"] = [
        {"spreadByField": "cluster", "minGroups": 2, "maxGroups": 2}
    ]
    return body


def test_a_tainted_cluster_of_a_duplicated_workload_is_replaced(
    server: RunningServer, members: dict[str, RunningSimulator]
) -> None:
    with server.client() as http:
        for name in members:
            join(http, name, members[name])
        put(http, POLICIES, _spread_policy())
        put(http, DEPLOYMENTS, deployment("dup", 2))
        first = wait_for(lambda: placement(http, "dup") or None, timeout=DEADLINE, what="the first placement")
        assert len(first) == 2
        victim, survivor = sorted(first)
        cluster = http.get(f"{CLUSTERS}/{victim}").json()
        cluster["spec"]["taints"] = [
            *cluster["spec"].get("taints", []),
            {"key": "maintenance", "effect": "NoExecute"},
        ]
        assert http.put(f"{CLUSTERS}/{victim}", json=cluster).status_code == 200

        def replaced() -> dict[str, int] | None:
            now = placement(http, "dup")
            return now if len(now) == 2 and victim not in now else None

        after = wait_for(replaced, timeout=DEADLINE, what="a replacement for the tainted cluster")
        assert survivor in after  # the healthy one is kept
        wait_members(members, "dup", {c: 2 for c in after})


def test_all_members_down_evicts_nothing(server: RunningServer, members: dict[str, RunningSimulator]) -> None:
    with server.client() as http:
        for name in ("member1", "member2"):
            join(http, name, members[name])
        put(http, POLICIES, policy("web", "web", ["member1", "member2"], {"member1": 1, "member2": 2}))
        put(http, DEPLOYMENTS, deployment("web", 3))
        wait_members(members, "web", {"member1": 1, "member2": 2})
        members["member1"].stop()
        members["member2"].stop()

        def both_tainted() -> bool:
            for name in ("member1", "member2"):
                taints = http.get(f"{CLUSTERS}/{name}").json()["spec"].get("taints") or []
                if not any(t["effect"] == "NoExecute" for t in taints):
                    return False
            return True

        wait_for(both_tainted, timeout=DEADLINE, what="both clusters to be tainted NoExecute")
        wait_for(lambda: _paused(server), timeout=DEADLINE, what="the taint manager to pause evictions")
        tolerated_until = time.monotonic() + FAILOVER["default_not_ready_toleration_seconds"] + 1
        wait_for(
            lambda: time.monotonic() > tolerated_until, timeout=DEADLINE, what="the toleration to run out"
        )
        assert placement(http, "web") == {"member1": 1, "member2": 2}
        assert tasks(http, "web") == []


def _paused(server: RunningServer) -> bool:
    from federation.store.events import EventRepository

    with server.process.api_context.uow() as session:
        events = EventRepository(session).for_object("Federation", "", "federation")
    return any(e.reason == "EvictionPaused" for e in events)


def _aggregated_with_application_failover() -> dict[str, Any]:
    body = policy("app", "app", ["member1", "member2", "member3"])
    spec = body["spec"]
    spec["propagateDeps"] = True
    spec["placement"]["replicaScheduling"] = {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Aggregated",
    }
    spec["failover"] = {
        "application": {"decisionConditions": {"tolerationSeconds": 1}, "purgeMode": "Directly"}
    }
    return body


def test_an_unhealthy_workload_moves_then_stops_when_its_budget_is_spent(
    server: RunningServer, members: dict[str, RunningSimulator]
) -> None:
    with server.client() as http:
        for name in ("member1", "member2", "member3"):
            join(http, name, members[name])
            members[name].set_faults(unhealthy=["default/app"])  # it fails wherever it runs
        put(http, POLICIES, _aggregated_with_application_failover())
        template = deployment("app", 2)
        template["metadata"]["annotations"] = {"failover.federation.io/max-reschedules": "2"}
        put(http, DEPLOYMENTS, template)

        def exhausted() -> dict[str, Any] | None:
            conditions = (binding(http, "app").get("status") or {}).get("conditions") or []
            found = next((c for c in conditions if c["type"] == "FailoverExhausted"), None)
            return found if found and found["status"] == "True" else None

        condition = wait_for(exhausted, timeout=DEADLINE * 2, what="the budget to be spent")
        annotations = http.get(f"{DEPLOYMENTS}/app").json()["metadata"]["annotations"]
        assert annotations["failover.federation.io/reschedule-count"] == "2"
        tried = json.loads(annotations["failover.federation.io/tried-clusters"])
        assert len(tried) == 2 and len(set(tried)) == 2
        last = placement(http, "app")
        assert len(last) == 1 and next(iter(last)) not in tried  # it stays on the third cluster
        assert "2" in condition["message"]
        moves = http.get(
            "/federation/v1/evictions", params={"action": "Evicted", "namespace": "default"}
        ).json()
        assert [i["reason"] for i in moves["items"]] == ["ApplicationFailure", "ApplicationFailure"]


REBALANCERS = "/apis/apps.karmada.io/v1alpha1/workloadrebalancers"


def _dynamic_policy() -> dict[str, Any]:
    body = policy("dyn", "dyn", ["member1", "member2"])
    body["spec"]["placement"]["replicaScheduling"] = {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Weighted",
        "weightPreference": {"dynamicWeight": "AvailableReplicas"},
    }
    return body


def _ready(http: httpx.Client, cluster: str, status: str) -> bool:
    conditions = (http.get(f"{CLUSTERS}/{cluster}").json().get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == status for c in conditions)


def test_fail_over_then_fail_back_with_a_rebalancer(
    server: RunningServer, members: dict[str, RunningSimulator]
) -> None:
    with server.client() as http:
        for name in ("member1", "member2"):
            join(http, name, members[name])
        put(http, POLICIES, _dynamic_policy())
        put(http, DEPLOYMENTS, deployment("dyn", 4))
        wait_for(
            lambda: set(placement(http, "dyn")) == {"member1", "member2"}, timeout=DEADLINE, what="a split"
        )

        members["member1"].set_faults(down=True)  # its API answers 503: Ready=False, tainted, evicted
        wait_for(lambda: placement(http, "dyn") == {"member2": 4}, timeout=DEADLINE, what="the fail-over")
        wait_members(members, "dyn", {"member2": 4})
        members["member1"].set_faults(down=False)
        wait_for(lambda: _ready(http, "member1", "True"), timeout=DEADLINE, what="member1 to recover")
        wait_for(lambda: tasks(http, "dyn") == [], timeout=DEADLINE, what="the eviction task to go")
        assert placement(http, "dyn") == {"member2": 4}  # inertia: recovering moves nothing by itself
        # Fail back only once member1 is schedulable again (its taints gone), as an operator would.
        wait_for(
            lambda: not http.get(f"{CLUSTERS}/member1").json()["spec"].get("taints"),
            timeout=DEADLINE,
            what="member1's taints to be removed",
        )

        rebalancer = {
            "apiVersion": "apps.karmada.io/v1alpha1",
            "kind": "WorkloadRebalancer",
            "metadata": {"name": "fail-back"},
            "spec": {
                "workloads": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "dyn", "namespace": "default"},
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "gone", "namespace": "default"},
                ],
                "ttlSecondsAfterFinished": 2,
            },
        }
        assert http.post(REBALANCERS, json=rebalancer).status_code == 201

        def results() -> dict[str, tuple[str, str]] | None:
            answer = http.get(f"{REBALANCERS}/fail-back").json()
            status = answer.get("status") or {}
            if not status.get("finishTime"):
                return None
            return {
                o["workload"]["name"]: (o.get("result", ""), o.get("reason", ""))
                for o in status.get("observedWorkloads") or []
            }

        finished = wait_for(results, timeout=DEADLINE, what="the rebalancer to finish")
        assert finished == {"dyn": ("Successful", ""), "gone": ("Failed", "ReferencedBindingNotFound")}
        assert set(placement(http, "dyn")) == {"member1", "member2"}  # fail-back: both run it again
        spread = placement(http, "dyn")
        wait_members(members, "dyn", spread)
        wait_for(
            lambda: http.get(f"{REBALANCERS}/fail-back").status_code == 404,
            timeout=DEADLINE,
            what="the TTL to remove the rebalancer",
        )
