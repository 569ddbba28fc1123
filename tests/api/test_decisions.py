"""The scheduler's decision records over HTTP (``GET /federation/v1/decisions``), on both backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx

from federation.store.decisions import Decision, DecisionRepository
from tests.conftest import start_server

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def _decision(at: float, name: str, result: str, namespace: str = "default") -> Decision:
    return Decision(
        binding_uid=f"uid-{namespace}-{name}",
        binding_kind="ResourceBinding" if namespace else "ClusterResourceBinding",
        binding_namespace=namespace,
        binding_name=name,
        binding_generation=2,
        result=result,
        message=f"{result} for {name}",
        clusters=[{"name": "member1", "replicas": 2}] if result == "Success" else [],
        explanation={"result": result, "clusters": {"member1": {"selected": result == "Success"}}},
        created_at=T0 + timedelta(seconds=at),
    )


def test_decisions_endpoint_lists_newest_first_with_the_whole_explanation(tmp_path, database_url):
    # Decisions stamped in the past: keep them from the retention job (it deletes those over a week old).
    server = start_server(tmp_path, database_url=database_url, decisions={"ttl_seconds": 10 * 365 * 86400})
    try:
        with server.process.api_context.uow() as session:
            DecisionRepository(session).append_many(
                [
                    _decision(0, "web-deployment", "NoClusterFit"),
                    _decision(1, "web-deployment", "Success"),
                    _decision(2, "api-deployment", "Success"),
                    _decision(3, "web-deployment", "Success", namespace="other"),
                    _decision(4, "crd-binding", "Success", namespace=""),
                ]
            )
        with server.client(server.create_token("viewer")) as http:
            web = http.get(
                "/federation/v1/decisions", params={"namespace": "default", "binding": "web-deployment"}
            )
            assert web.status_code == 200
            items = web.json()["items"]
            assert [(i["result"], i["time"]) for i in items] == [
                ("Success", "2026-05-01T12:00:01Z"),
                ("NoClusterFit", "2026-05-01T12:00:00Z"),
            ]
            assert items[0]["explanation"]["clusters"]["member1"] == {"selected": True}
            assert items[0]["clusters"] == [{"name": "member1", "replicas": 2}]
            assert items[0]["binding"]["uid"] == "uid-default-web-deployment" and items[0]["generation"] == 2
            latest = http.get(
                "/federation/v1/decisions",
                params={"namespace": "default", "binding": "web-deployment", "limit": "1"},
            )
            assert [i["result"] for i in latest.json()["items"]] == ["Success"]
            # No namespace with a binding name: the cluster-scoped binding of that name.
            cluster_scoped = http.get("/federation/v1/decisions", params={"binding": "crd-binding"}).json()[
                "items"
            ]
            assert [i["binding"]["kind"] for i in cluster_scoped] == ["ClusterResourceBinding"]
            in_default = http.get("/federation/v1/decisions", params={"namespace": "default"}).json()["items"]
            assert {i["binding"]["name"] for i in in_default} == {"web-deployment", "api-deployment"}
            assert len(http.get("/federation/v1/decisions").json()["items"]) == 5
            for bad in ("0", "x", "1001"):
                answer = http.get("/federation/v1/decisions", params={"limit": bad})
                assert answer.status_code == 400 and "limit" in answer.json()["message"]
        with server.client(server.create_token("agent", "member1")) as http:
            assert http.get("/federation/v1/decisions").status_code == 403
        no_token = httpx.get(server.url + "/federation/v1/decisions", verify=server.verify)
        assert no_token.status_code == 401
    finally:
        server.process.stop()
