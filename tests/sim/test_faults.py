"""Fault injection: down, slow, flaky and unhealthy workloads, via the admin endpoint and the Python API."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from federation.members.client import KubernetesMemberClient
from federation.members.errors import MemberError
from federation.sim import RunningSimulator
from tests.members.helpers import deployment, wait_for


def _admin(sim: RunningSimulator, token: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token or sim.token}"}
    return httpx.Client(base_url=sim.url, headers=headers, verify=False, timeout=5)


def test_down_fails_every_request_but_admin_heals(sim: RunningSimulator) -> None:
    client = KubernetesMemberClient("member1", sim.kubeconfig)
    with _admin(sim) as admin:
        assert admin.post("/_sim/faults", json={"down": True}).json()["down"] is True
        result = client.probe()
        assert result.online and not result.healthy and result.status_code == 503
        with pytest.raises(MemberError) as exc:
            client.version()
        assert exc.value.status == 503
        assert admin.get("/_sim/faults").json()["down"] is True
        admin.post("/_sim/faults", json={"down": False})
    assert client.probe().ok


def test_admin_endpoint_needs_the_token(sim: RunningSimulator) -> None:
    with _admin(sim, token="wrong") as admin:
        assert admin.post("/_sim/faults", json={"down": True}).status_code == 401
    with _admin(sim) as admin:
        assert admin.post("/_sim/faults", json={"error_rate": 2}).status_code == 400
        assert admin.get("/_sim/faults").json()["down"] is False


def test_slow_member_times_out_the_client(sim: RunningSimulator) -> None:
    sim.set_faults(latency_ms=1000)
    client = KubernetesMemberClient("member1", sim.kubeconfig, timeout=0.3)
    with pytest.raises(MemberError) as exc:
        client.version()
    assert exc.value.kind == "timeout"
    result = client.probe()
    assert not result.online and "timeout" in (result.error or "")


def test_flaky_member_fails_a_deterministic_share(start_sim: Any) -> None:
    def failures(seed: int) -> list[int]:
        sim = start_sim(error_rate=0.5, seed=seed)
        with _admin(sim) as admin:
            codes = [admin.get("/version").status_code for _ in range(20)]
        return [i for i, code in enumerate(codes) if code == 500]

    first, second = failures(7), failures(7)
    assert first == second
    assert 0 < len(first) < 20


def test_unhealthy_workload_crash_loops(sim: RunningSimulator) -> None:
    client = KubernetesMemberClient("member1", sim.kubeconfig)
    sim.set_faults(unhealthy=["default/sick"])
    client.apply(deployment("sick", 2))
    client.apply(deployment("fine", 1))
    wait_for(
        lambda: (client.get("apps/v1", "Deployment", "default", "fine") or {})["status"].get("readyReplicas")
    )

    def restarted() -> Any:
        pods = client.request("GET", "/api/v1/namespaces/default/pods", query=[("labelSelector", "app=sick")])
        counts = [p["status"]["containerStatuses"][0]["restartCount"] for p in pods["items"]]
        return pods["items"] if counts and min(counts) >= 1 else None

    pods = wait_for(restarted, what="sick pods restarting")
    assert all(
        p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "CrashLoopBackOff" for p in pods
    )
    status = (client.get("apps/v1", "Deployment", "default", "sick") or {})["status"]
    assert "readyReplicas" not in status and status["unavailableReplicas"] == 2
    sim.set_faults(unhealthy=[])
    wait_for(
        lambda: (
            (client.get("apps/v1", "Deployment", "default", "sick") or {})["status"].get("readyReplicas") == 2
        )
    )
