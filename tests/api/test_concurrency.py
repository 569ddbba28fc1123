"""Two writers holding the same resourceVersion: exactly one wins, on both backends."""

from __future__ import annotations

import copy
import threading

from tests.api import manifests as m
from tests.conftest import start_server

BASE = "/apis/apps/v1/namespaces/default/deployments"


def test_two_concurrent_writers_exactly_one_wins(tmp_path, database_url):
    server = start_server(tmp_path, database_url=database_url)
    try:
        with server.client() as http:
            created = http.post(BASE, json=m.DEPLOYMENT).json()
        for round_ in range(5):
            with server.client() as http:
                current = http.get(f"{BASE}/nginx").json()
            codes = _race(server, current, round_)
            assert sorted(codes) == [200, 409], codes
        with server.client() as http:
            final = http.get(f"{BASE}/nginx").json()
        assert final["metadata"]["generation"] == created["metadata"]["generation"] + 5
    finally:
        server.process.stop()


def _race(server, current: dict, round_: int) -> list[int]:
    barrier = threading.Barrier(2)
    codes: list[int] = []

    def write(replicas: int) -> None:
        body = copy.deepcopy(current)
        body["spec"]["replicas"] = replicas
        with server.client() as http:
            barrier.wait()
            codes.append(http.put(f"{BASE}/nginx", json=body).status_code)

    threads = [threading.Thread(target=write, args=(10 + round_ * 2 + i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return codes
