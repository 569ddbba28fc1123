"""`federation apply/get/describe/delete` against a real server."""

from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from federation.cli.main import cli
from tests.api import manifests as m

DOCS = [m.DEPLOYMENT, m.PROPAGATION_POLICY, m.CLUSTER_PROPAGATION_POLICY, m.CLUSTER, m.WORKLOAD_POLICY]


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def _write(tmp_path, docs) -> str:
    path = tmp_path / "app.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return str(path)


def test_apply_twice_second_time_unchanged(federation_server, tmp_path):
    path = _write(tmp_path, DOCS)
    first = run("apply", "-f", path)
    assert first.exit_code == 0, first.output
    assert first.output.splitlines() == [
        "deployment.apps/nginx created",
        "propagationpolicy.policy.karmada.io/nginx-propagation created",
        "clusterpropagationpolicy.policy.karmada.io/example-policy created",
        "cluster.cluster.karmada.io/member1 created",
        "workloadpolicy.kosmos.io/split created",
    ]
    second = run("apply", "-f", path)
    assert second.exit_code == 0
    assert all(line.endswith(" unchanged") for line in second.output.splitlines())
    changed = [dict(DOCS[0], spec={**DOCS[0]["spec"], "replicas": 7}), *DOCS[1:]]
    third = run("apply", "-f", _write(tmp_path, changed))
    assert third.output.splitlines()[0] == "deployment.apps/nginx configured"
    assert "unchanged" in third.output.splitlines()[1]


def test_apply_from_stdin_and_directory(federation_server, tmp_path):
    result = run("apply", "-f", "-", input=yaml.safe_dump(m.CONFIGMAP))
    assert result.output.strip() == "configmap/cfg created"
    folder = tmp_path / "dir"
    folder.mkdir()
    (folder / "a.yaml").write_text(yaml.safe_dump(m.CLUSTER_ROLE))
    (folder / "notes.txt").write_text("ignored")
    assert run("apply", "-f", str(folder)).output.strip() == (
        "clusterrole.rbac.authorization.k8s.io/example-clusterrole created"
    )


def test_get_in_every_output_format(federation_server, tmp_path):
    run("apply", "-f", _write(tmp_path, DOCS))
    table = run("get", "pp")
    assert table.output.splitlines()[0].split() == ["NAME", "CONFLICT-RESOLUTION", "PRIORITY", "AGE"]
    assert table.output.splitlines()[1].startswith("nginx-propagation")
    wide = run("get", "clusters", "-o", "wide")
    assert "REGION" in wide.output and "us-east-1" in wide.output and "maintenance:NoSchedule" in wide.output
    as_json = json.loads(run("get", "deploy", "nginx", "-o", "json").output)
    assert as_json["kind"] == "Deployment" and as_json["spec"]["replicas"] == 2
    as_yaml = yaml.safe_load(run("get", "propagationpolicies", "-o", "yaml").output)
    assert as_yaml["kind"] == "List" and as_yaml["items"][0]["metadata"]["name"] == "nginx-propagation"
    assert (
        run("get", "cpp", "-o", "name").output.strip()
        == "clusterpropagationpolicy.policy.karmada.io/example-policy"
    )
    everywhere = run("get", "deployments", "-A")
    assert everywhere.output.splitlines()[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert run("get", "deploy", "-l", "app=other").output.strip() == "No resources found."
    assert "Name:         member1" in run("describe", "cluster", "member1").output


def test_delete_by_name_and_by_file(federation_server, tmp_path):
    path = _write(tmp_path, DOCS)
    run("apply", "-f", path)
    assert run("delete", "pp", "nginx-propagation").output.strip() == (
        'propagationpolicy.policy.karmada.io "nginx-propagation" deleted'
    )
    result = run("delete", "-f", path, "--ignore-not-found")
    assert result.exit_code == 0
    assert len(result.output.splitlines()) == 4
    assert run("get", "deploy").output.strip() == "No resources found."


def test_errors_are_one_line_and_non_zero(federation_server, tmp_path):
    missing = CliRunner().invoke(cli, ["get", "pp", "nope"])
    assert missing.exit_code == 1
    assert missing.output.strip() == (
        'Error from server (NotFound): propagationpolicies.policy.karmada.io "nope" not found'
    )
    bad = dict(
        m.CLUSTER_PROPAGATION_POLICY, spec={**m.CLUSTER_PROPAGATION_POLICY["spec"], "resourceSelectors": []}
    )
    invalid = CliRunner().invoke(cli, ["apply", "-f", _write(tmp_path, [bad])])
    assert invalid.exit_code == 1
    assert invalid.output.startswith("Error from server (Invalid): ")
    assert "spec.resourceSelectors" in invalid.output
    unknown = CliRunner().invoke(cli, ["get", "gizmos"])
    assert unknown.exit_code == 2 and 'doesn\'t have a resource type "gizmos"' in unknown.output


def test_no_server_configured_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none.yaml"))
    monkeypatch.delenv("FEDERATION_SERVER", raising=False)
    result = CliRunner().invoke(cli, ["get", "rb"])
    assert result.exit_code == 1
    assert result.output.startswith("error: no server configured")


def test_apply_retries_when_a_controller_writes_between_read_and_write(federation_server, tmp_path):
    """A status write after apply's GET makes its PUT stale (409); apply reads again and succeeds."""
    import httpx

    from federation.cli import cmd_apply
    from federation.cli.client import ClientConfig, FederationClient
    from federation.model import kinds

    run("apply", "-f", _write(tmp_path, [m.DEPLOYMENT]))
    status_path = "/apis/apps/v1/namespaces/default/deployments/nginx/status"
    raced = {"done": False, "conflicts": 0}

    def racing(request: httpx.Request) -> httpx.Response:
        if request.method == "PUT" and not raced["done"]:
            raced["done"] = True
            with federation_server.client() as http:
                assert http.put(status_path, json={"status": {"readyReplicas": 1}}).status_code == 200
        with httpx.Client(base_url=federation_server.url, verify=federation_server.verify) as real:
            sent = real.send(
                real.build_request(
                    request.method,
                    request.url.path,
                    params=request.url.params,
                    headers=request.headers,
                    content=request.content,
                )
            )
            raced["conflicts"] += sent.status_code == 409
            return httpx.Response(sent.status_code, headers=sent.headers, content=sent.content)

    config = ClientConfig(federation_server.url, federation_server.admin_token)
    client = FederationClient(config, transport=httpx.MockTransport(racing))
    scaled = dict(m.DEPLOYMENT, spec={**m.DEPLOYMENT["spec"], "replicas": 9})
    assert cmd_apply.apply_one(client, kinds.lookup("deploy"), scaled) == "configured"
    assert raced["done"] and raced["conflicts"] == 1
    assert json.loads(run("get", "deploy", "nginx", "-o", "json").output)["spec"]["replicas"] == 9
