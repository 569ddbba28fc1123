"""The failover history over HTTP and its Prometheus figures, on both backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from federation.store.history import EVICTED, TAINT_ADDED, TASK_REMOVED, HistoryEntry, HistoryRepository
from tests.conftest import start_server

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def _entry(at: float, action: str, cluster: str, reason: str, name: str = "web-deployment") -> HistoryEntry:
    return HistoryEntry(
        at=T0 + timedelta(seconds=at),
        action=action,
        cluster=cluster,
        reason=reason,
        producer="TaintManager",
        binding_uid=f"uid-{name}" if name else "",
        binding_kind="ResourceBinding" if name else "",
        binding_namespace="default" if name else "",
        binding_name=name,
    )


def test_evictions_endpoint_filters_and_metrics(tmp_path, database_url):
    server = start_server(tmp_path, database_url=database_url)
    try:
        with server.process.api_context.uow() as session:
            HistoryRepository(session).record(
                [
                    _entry(0, TAINT_ADDED, "member1", "TaintAdded", name=""),
                    _entry(1, EVICTED, "member1", "TaintUntolerated"),
                    _entry(2, EVICTED, "member2", "ApplicationFailure", name="api-deployment"),
                    _entry(3, TASK_REMOVED, "member1", "Healthy"),
                ]
            )
        viewer = server.create_token("viewer")
        with server.client(viewer) as http:
            everything = http.get("/federation/v1/evictions").json()["items"]
            assert [(i["action"], i["cluster"]) for i in everything] == [
                ("TaskRemoved", "member1"),
                ("Evicted", "member2"),
                ("Evicted", "member1"),
                ("TaintAdded", "member1"),
            ]
            assert everything[2]["binding"] == {
                "kind": "ResourceBinding",
                "namespace": "default",
                "name": "web-deployment",
                "uid": "uid-web-deployment",
            }
            assert everything[2]["time"] == "2026-05-01T12:00:01Z"
            evicted = http.get("/federation/v1/evictions", params={"action": "Evicted", "cluster": "member1"})
            assert [i["reason"] for i in evicted.json()["items"]] == ["TaintUntolerated"]
            assert http.get("/federation/v1/evictions", params={"limit": "0"}).status_code == 400
            unknown = http.get("/federation/v1/evictions", params={"namespace": "default", "binding": "nope"})
            assert unknown.json()["items"] == []
        with server.client(server.create_token("agent", "member1")) as http:
            assert http.get("/federation/v1/evictions").status_code == 403
        with server.client() as http:
            metrics = http.get("/metrics").text
        assert 'federation_evictions_total{reason="TaintUntolerated"} 1.0' in metrics
        assert 'federation_evictions_total{reason="ApplicationFailure"} 1.0' in metrics
        assert "federation_eviction_tasks_pending 0.0" in metrics
        assert "federation_failover_exhausted_bindings 0.0" in metrics
    finally:
        server.process.stop()
