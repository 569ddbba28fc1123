"""The httpx extender adapter on its default cluster-shaped wire against a real HTTP extender server
(http.server on 127.0.0.1, port 0). kube-scheduler's own wire, TLS and settings: tests/extenders/."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from federation.extenders import HttpExtender
from federation.scheduling.engine import schedule
from federation.scheduling.extender import ExtenderError
from federation.settings_extenders import ExtenderSettings, duration_seconds
from tests.scheduling.sched_factories import DYNAMIC, make_binding, pods_only

REQUESTS: list[tuple[str, dict[str, Any]]] = []


def _names(args: dict[str, Any]) -> list[str]:
    return args.get("clusterNames") or [c["name"] for c in args["clusters"]]


def _answer(path: str, args: dict[str, Any]) -> Any:
    names = _names(args)
    if path.endswith("/filter"):
        keep = [n for n in names if n != "m2"]
        return {"clusterNames": keep, "failedClusters": {"m2": "cluster(s) had no GPU"}, "error": ""}
    if path.endswith("/prioritize"):
        return [{"host": n, "score": 10 if n == "m3" else 1} for n in names]
    if path.endswith("/replicas"):
        return {"clusters": [{"name": n, "replicas": 2} for n in names]}
    if path.endswith("/broken"):
        return {"error": "extender exploded"}
    return None


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        args = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        REQUESTS.append((self.path, args))
        if self.path.endswith("/slow"):
            time.sleep(1.0)
        body = _answer(self.path, args)
        if body is None:
            self.send_response(404)
            self.end_headers()
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/scheduler"
    finally:
        httpd.shutdown()
        httpd.server_close()


def extender(server: str, **entry: Any) -> HttpExtender:
    return HttpExtender(ExtenderSettings.model_validate({"urlPrefix": server, **entry}))


CLUSTERS = [pods_only("m1", 50), pods_only("m2", 50), pods_only("m3", 50)]


def test_filter_removes_clusters_and_reports_reason(server: str) -> None:
    ext = extender(server, filterVerb="filter")
    result = schedule(make_binding(4, DYNAMIC), CLUSTERS, extenders=[ext])
    assert result.succeeded
    assert {t.name for t in result.clusters} == {"m1", "m3"}
    m2 = result.explanation["clusters"]["m2"]["filter"]
    assert m2["plugin"] == f"Extender({server})"
    assert m2["reason"] == "cluster(s) had no GPU"


def test_filter_sends_full_clusters_or_names_only(server: str) -> None:
    REQUESTS.clear()
    extender(server, filterVerb="filter").filter(make_binding(1), CLUSTERS)
    extender(server, filterVerb="filter", clusterCacheCapable=True).filter(make_binding(1), CLUSTERS)
    full, names_only = REQUESTS[0][1], REQUESTS[1][1]
    assert [c["name"] for c in full["clusters"]] == ["m1", "m2", "m3"]
    assert full["clusters"][0]["allocatable"] == {"pods": 50}
    assert names_only["clusterNames"] == ["m1", "m2", "m3"] and "clusters" not in names_only
    assert full["binding"]["kind"] == "Deployment" and full["binding"]["replicas"] == 1


def test_prioritize_scores_are_weighted_in_explanation(server: str) -> None:
    ext = extender(server, prioritizeVerb="prioritize", weight=3)
    spread = {**DYNAMIC, "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}]}
    result = schedule(make_binding(2, spread), CLUSTERS, extenders=[ext])
    assert [t.name for t in result.clusters] == ["m3"]
    parts = result.explanation["clusters"]["m3"]["scores"]
    assert parts[f"Extender({server})"] == {"score": 100, "weight": 3}


def test_replicas_verb_bounds_capacity(server: str) -> None:
    ext = extender(server, replicasVerb="replicas")
    result = schedule(make_binding(6, DYNAMIC), CLUSTERS, extenders=[ext])
    assert sorted((t.name, t.replicas) for t in result.clusters) == [("m1", 2), ("m2", 2), ("m3", 2)]
    short = schedule(make_binding(7, DYNAMIC), CLUSTERS, extenders=[ext])
    assert short.result == "Unschedulable"


def test_timeout_fails_the_attempt_unless_ignorable(server: str) -> None:
    slow = extender(server, filterVerb="slow", httpTimeout="200ms")
    with pytest.raises(ExtenderError, match="timed out"):
        slow.filter(make_binding(1), CLUSTERS)
    result = schedule(make_binding(3, DYNAMIC), CLUSTERS, extenders=[slow])
    assert result.result == "SchedulerError" and "timed out" in result.message
    assert not result.writes_clusters
    lenient = extender(server, filterVerb="slow", httpTimeout=0.2, ignorable=True)
    assert schedule(make_binding(3, DYNAMIC), CLUSTERS, extenders=[lenient]).succeeded


def test_unreachable_and_error_answers(server: str) -> None:
    dead = HttpExtender(
        ExtenderSettings(urlPrefix="http://127.0.0.1:9/nothing", filterVerb="filter", httpTimeout=0.5)
    )
    assert schedule(make_binding(1, DYNAMIC), CLUSTERS, extenders=[dead]).result == "SchedulerError"
    broken = extender(server, filterVerb="broken")
    with pytest.raises(ExtenderError, match="extender exploded"):
        broken.filter(make_binding(1), CLUSTERS)
    missing = extender(server, filterVerb="nope")
    with pytest.raises(ExtenderError, match=r"failed nope with extender at URL .*, code 404"):
        missing.filter(make_binding(1), CLUSTERS)


def test_managed_resources_limit_interest(server: str) -> None:
    ext = extender(server, filterVerb="filter", managedResources=[{"name": "nvidia.com/gpu"}])
    assert not ext.is_interested(make_binding(1))
    assert ext.is_interested(make_binding(1, resource_request={"nvidia.com/gpu": 1}))
    result = schedule(make_binding(3, DYNAMIC), CLUSTERS, extenders=[ext])
    assert {t.name for t in result.clusters} == {"m1", "m2", "m3"}


def test_settings_parsing() -> None:
    assert duration_seconds("500ms") == 0.5 and duration_seconds("2s") == 2.0 and duration_seconds(3) == 3.0
    with pytest.raises(ValueError, match="urlPrefix"):
        ExtenderSettings.model_validate({})
    with pytest.raises(ValueError, match="httpTimeout"):
        ExtenderSettings.model_validate({"urlPrefix": "http://x", "httpTimeout": "soon"})
