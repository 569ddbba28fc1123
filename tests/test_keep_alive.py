"""Idle connections are kept as kube-apiserver and client-go keep them (``federation.listening``): a member's
health-probe client and a Pull agent's API client each reuse one connection across a gap longer than the
5 s uvicorn and httpx keep an idle one by default, against the simulator and against `serve` (both over
TLS). Before, every probe and every lease renewal, 10 s apart, opened a connection and did a handshake.
Each test waits out that gap once."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx

from federation.apiclient import ApiClient
from federation.members.kubeconfig import load_kubeconfig
from federation.members.probe import make_http_client
from tests.cli.test_server_commands import _serve, _stop, _wait_for_config, _wait_ready

GAP_SECONDS = 6.0  # past uvicorn's and httpx's default keep-alive of 5 s


def _client_port(response: httpx.Response) -> Any:
    """The local port of the connection that carried ``response``."""
    return response.extensions["network_stream"].get_extra_info("client_addr")[1]


def test_a_probe_client_reuses_its_connection_to_a_simulator_from_probe_to_probe(start_sim) -> None:
    sim = start_sim(name="keep-alive")
    with make_http_client(load_kubeconfig(sim.kubeconfig), timeout=5) as client:
        first = client.get("/readyz")
        first_port = _client_port(first)
        time.sleep(GAP_SECONDS)
        second = client.get("/readyz")
        assert _client_port(second) == first_port
    assert first.status_code == second.status_code == 200


def test_an_agents_api_client_reuses_its_connection_to_serve_from_renewal_to_renewal(tmp_path: Path) -> None:
    process = _serve(tmp_path)
    try:
        config = _wait_for_config(tmp_path / "data" / "federation.kubeconfig", process)
        _wait_ready(config["server"], config["ca"])
        api = ApiClient(config["server"], config["token"], ca_pem=config["ca"])
        try:
            # The client's own pool (what ``request`` sends through), read for the connection's port.
            first = api._http.get("/readyz")
            first_port = _client_port(first)
            time.sleep(GAP_SECONDS)
            second = api._http.get("/readyz")
            assert _client_port(second) == first_port
        finally:
            api.close()
    finally:
        _stop(process)
    assert first.status_code == second.status_code == 200
