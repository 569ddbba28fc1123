"""Join and unjoin over real HTTP against simulated members (HTTPS, their own CA)."""

from __future__ import annotations

import copy
import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from federation.cli import server
from federation.members.client import KubernetesMemberClient
from federation.settings import load_settings
from federation.sim import RunningSimulator
from federation.store.clusters import ClusterRepository
from federation.store.tables import ClusterRow
from tests.conftest import RunningServer

JOIN = "/federation/v1/clusters/join"
CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
BINDINGS = "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings"
WORKS = "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-{}/works"


@pytest.fixture
def api_server(tmp_path: Path, database_url: str) -> Iterator[RunningServer]:
    """The API alone (no controllers), so nothing but the test moves bindings and Works."""
    settings = load_settings(data_dir=str(tmp_path / "data"), database_url=database_url, api={"port": 0})
    process = server.build(settings, run_controllers=False)
    process.start_in_thread()
    try:
        yield RunningServer(process)
    finally:
        process.stop()


def join_body(name: str, kubeconfig: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    return {"name": name, "kubeconfig": kubeconfig, "syncMode": "Push", **extra}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def assert_no_cluster(api: RunningServer, name: str) -> None:
    with api.client() as http:
        assert http.get(f"{CLUSTERS}/{name}").status_code == 404


def test_join_stores_credentials_encrypted_and_never_returns_them(
    api_server: RunningServer, start_sim: Callable[..., RunningSimulator]
) -> None:
    sim = start_sim(name="m1", nodes=2)
    body = join_body("m1", sim.kubeconfig, region="eu", zone="eu-1", provider="sim", labels={"env": "prod"})
    with api_server.client() as http:
        answer = http.post(JOIN, json=body)
        assert answer.status_code == 201, answer.text
        created = answer.json()
        assert created["spec"] == {
            "syncMode": "Push",
            "apiEndpoint": sim.url,
            "region": "eu",
            "zone": "eu-1",
            "provider": "sim",
        }
        assert created["metadata"]["labels"] == {  # region and zone give the topology labels too
            "env": "prod",
            "topology.kubernetes.io/region": "eu",
            "topology.kubernetes.io/zone": "eu-1",
        }
        status = created["status"]
        assert status["kubernetesVersion"] == "v1.32.0"
        assert {c["type"]: c["status"] for c in status["conditions"]} == {
            "Ready": "True",
            "CompleteAPIEnablements": "True",
        }
        assert status["nodeSummary"] == {"totalNum": 2, "readyNum": 2}
        for text in (answer.text, http.get(f"{CLUSTERS}/m1").text, http.get(CLUSTERS).text):
            assert sim.token not in text and "certificate-authority" not in text
    context = api_server.process.api_context
    assert context is not None
    with context.uow() as session:
        raw = session.scalar(select(ClusterRow.credentials).where(ClusterRow.name == "m1"))
        stored = ClusterRepository(session).kubeconfig("m1", context.secret_box)
    assert raw is not None and sim.token.encode() not in raw and b"server" not in raw
    assert stored is not None and stored["users"][0]["user"]["token"] == sim.token
    client = KubernetesMemberClient("m1", stored)  # what was stored is a working kubeconfig
    assert client.probe().ok
    client.close()


def test_rejoining_a_name_is_already_exists(
    api_server: RunningServer, start_sim: Callable[..., RunningSimulator]
) -> None:
    sim = start_sim(name="m1")
    with api_server.client() as http:
        assert http.post(JOIN, json=join_body("m1", sim.kubeconfig)).status_code == 201
        again = http.post(JOIN, json=join_body("m1", sim.kubeconfig))
    assert again.status_code == 409 and again.json()["reason"] == "AlreadyExists"


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda k: k.update({"current-context": "nope"}), "no context 'nope'"),
        (lambda k: k["users"][0]["user"].pop("token"), "has no credentials"),
        (lambda k: k["clusters"][0]["cluster"].update({"server": "ftp://x"}), "no usable server URL"),
        (lambda k: k["users"][0]["user"].update({"tokenFile": "/etc/passwd"}), "must be self-contained"),
        (lambda k: k["users"][0]["user"].update({"token": "wrong"}), "refused its credentials"),
    ],
    ids=["context", "credentials", "server", "file-reference", "wrong-token"],
)
def test_bad_kubeconfig_is_a_400_naming_the_problem_and_leaves_nothing(
    api_server: RunningServer,
    start_sim: Callable[..., RunningSimulator],
    mutate: Callable[[dict[str, Any]], Any],
    needle: str,
) -> None:
    kubeconfig = copy.deepcopy(start_sim(name="m1").kubeconfig)
    mutate(kubeconfig)
    with api_server.client() as http:
        answer = http.post(JOIN, json=join_body("m1", kubeconfig))
    assert answer.status_code == 400, answer.text
    assert answer.json()["reason"] == "BadRequest" and needle in answer.json()["message"]
    assert answer.json()["details"]["causes"][0]["field"] == "kubeconfig"
    assert_no_cluster(api_server, "m1")


def test_unreachable_member_is_refused_and_leaves_nothing(
    api_server: RunningServer, start_sim: Callable[..., RunningSimulator]
) -> None:
    stopped = start_sim(name="gone")
    gone = stopped.kubeconfig
    stopped.stop()
    nowhere = copy.deepcopy(gone)
    nowhere["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{free_port()}"
    with api_server.client() as http:
        for name, kubeconfig in (("gone", gone), ("nowhere", nowhere)):
            answer = http.post(JOIN, json=join_body(name, kubeconfig))
            assert answer.status_code == 503, answer.text
            assert f'cluster "{name}" is not reachable at https://127.0.0.1:' in answer.json()["message"]
            assert_no_cluster(api_server, name)


def test_unhealthy_member_and_invalid_fields_are_refused(
    api_server: RunningServer, start_sim: Callable[..., RunningSimulator]
) -> None:
    sim = start_sim(name="m1", down=True)
    with api_server.client() as http:
        down = http.post(JOIN, json=join_body("m1", sim.kubeconfig))
        assert down.status_code == 503 and "reachable but not healthy" in down.json()["message"]
        bad_name = http.post(JOIN, json=join_body("Not_A_Name", sim.kubeconfig))
        assert bad_name.status_code == 422
        assert bad_name.json()["details"]["causes"][0]["field"] == "metadata.name"
        no_config = http.post(JOIN, json=join_body("m1", None))
        assert no_config.status_code == 400 and "kubeconfig" in no_config.json()["message"]
        bad_mode = http.post(JOIN, json=join_body("m1", sim.kubeconfig, syncMode="Sideways"))
        assert bad_mode.status_code == 400 and "syncMode" in bad_mode.json()["message"]
    assert_no_cluster(api_server, "m1")
    assert_no_cluster(api_server, "Not_A_Name")


def test_pull_join_needs_no_credentials_and_no_probe(api_server: RunningServer) -> None:
    with api_server.client() as http:
        answer = http.post(JOIN, json={"name": "edge", "syncMode": "Pull", "region": "far"})
    assert answer.status_code == 201, answer.text
    assert answer.json()["spec"] == {"syncMode": "Pull", "region": "far"}
    context = api_server.process.api_context
    assert context is not None
    with context.uow() as session:
        assert ClusterRepository(session).with_credentials() == []


def test_only_admins_join_and_unjoin(api_server: RunningServer) -> None:
    viewer = api_server.create_token("viewer")
    agent = api_server.create_token("agent", cluster="edge")
    with api_server.client() as http:
        assert http.post(JOIN, json={"name": "edge", "syncMode": "Pull"}).status_code == 201
    for token in (viewer, agent):
        with api_server.client(token) as http:
            assert http.post(JOIN, json={"name": "other", "syncMode": "Pull"}).status_code == 403
            assert http.delete("/federation/v1/clusters/edge").status_code == 403
    with api_server.client("not-a-token") as http:
        assert http.post(JOIN, json={"name": "other", "syncMode": "Pull"}).status_code == 401


def binding(name: str, cluster: str) -> dict[str, Any]:
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": name},
            "clusters": [{"name": cluster, "replicas": 1}],
        },
    }


def work(cluster: str, manifest: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "work.karmada.io/v1alpha1",
        "kind": "Work",
        "metadata": {"name": manifest["metadata"]["name"], "namespace": f"karmada-es-{cluster}"},
        "spec": {"workload": {"manifests": [manifest]}},
    }


def config_map(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}


def test_unjoin_is_refused_while_bindings_target_the_cluster_unless_forced(
    api_server: RunningServer, start_sim: Callable[..., RunningSimulator]
) -> None:
    sim = start_sim(name="m1")
    member = KubernetesMemberClient("m1", sim.kubeconfig)
    member.apply(config_map("cfg"))  # as work sync would have
    with api_server.client() as http:
        assert http.post(JOIN, json=join_body("m1", sim.kubeconfig)).status_code == 201
        assert http.post(BINDINGS, json=binding("web", "m1")).status_code == 201
        assert http.post(WORKS.format("m1"), json=work("m1", config_map("cfg"))).status_code == 201
        refused = http.delete("/federation/v1/clusters/m1")
        assert refused.status_code == 409, refused.text
        assert "ResourceBinding default/web" in refused.json()["message"]
        assert "--force" in refused.json()["message"]
        assert http.get(f"{CLUSTERS}/m1").status_code == 200
        forced = http.delete("/federation/v1/clusters/m1", params={"force": "true"})
        assert forced.status_code == 200, forced.text
        assert forced.json()["message"] == "cluster/m1 unjoined; 1 object(s) deleted from the member"
        assert http.get(f"{CLUSTERS}/m1").status_code == 404
        assert http.get(WORKS.format("m1")).json()["items"] == []
        assert http.get(f"{BINDINGS}/web").status_code == 200  # re-queued for scheduling, not deleted
    assert member.get("v1", "ConfigMap", "default", "cfg") is None
    member.close()


def test_unjoin_without_bindings_and_with_the_member_down(
    api_server: RunningServer, start_sim: Callable[..., RunningSimulator]
) -> None:
    sim = start_sim(name="m1")
    with api_server.client() as http:
        assert http.post(JOIN, json=join_body("m1", sim.kubeconfig)).status_code == 201
        assert http.post(WORKS.format("m1"), json=work("m1", config_map("cfg"))).status_code == 201
        sim.set_faults(down=True)
        refused = http.delete("/federation/v1/clusters/m1")
        assert refused.status_code == 503, refused.text
        assert "nothing was unjoined" in refused.json()["message"]
        assert http.get(f"{CLUSTERS}/m1").status_code == 200
        forced = http.delete("/federation/v1/clusters/m1", params={"force": "true"})
        assert forced.status_code == 200
        assert "1 object(s) left on the member" in forced.json()["message"]
        assert http.get(f"{CLUSTERS}/m1").status_code == 404
        assert http.delete("/federation/v1/clusters/m1").status_code == 404
        sim.set_faults(down=False)
        assert http.post(JOIN, json=join_body("m1", sim.kubeconfig)).status_code == 201  # joinable again
        plain = http.delete("/federation/v1/clusters/m1")
    assert plain.status_code == 200 and plain.json()["message"] == "cluster/m1 unjoined"
    assert json.loads(plain.text)["status"] == "Success"
