"""Fifty concurrent writers against the embedded SQLite store, controllers running (`federation up`'s
setup): every write succeeds, none answers "database is locked" (issue 12, "SQLite stays correct")."""

from __future__ import annotations

import copy
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.api import manifests as m
from tests.conftest import start_server

WRITERS = 50
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def test_fifty_concurrent_writers_never_see_a_locked_database(tmp_path: Path) -> None:
    server = start_server(tmp_path)  # the embedded SQLite default, every controller on
    try:
        with server.client() as http:
            shared = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}, "data": {}}
            assert http.post(CONFIGMAPS, json=shared).status_code == 201

        def write(index: int) -> list[tuple[int, str]]:
            deployment = copy.deepcopy(m.DEPLOYMENT)
            deployment["metadata"]["name"] = f"app{index:02d}"
            config = {**shared, "data": {"writer": str(index)}}  # no resourceVersion: last writer wins
            with server.client() as http:
                answers = [
                    http.post(DEPLOYMENTS, json=deployment),
                    http.put(f"{CONFIGMAPS}/shared", json=config),
                    http.get(f"{DEPLOYMENTS}/app{index:02d}"),
                ]
            return [(a.status_code, a.text) for a in answers]

        with ThreadPoolExecutor(WRITERS) as pool:
            results = [answer for answers in pool.map(write, range(WRITERS)) for answer in answers]
        failed = [(code, text) for code, text in results if code >= 300]
        assert not failed, failed[:3]
        assert not any("locked" in text for _, text in results)
        with server.client() as http:
            listed = http.get(DEPLOYMENTS).json()["items"]
        assert len(listed) == WRITERS
    finally:
        server.process.stop()
