"""`federation rebalance`, `get wr` and `describe wr` against a real API server.

The server runs without controllers, so the stored state is exactly what a test writes: a background
thread plays the rebalancer controller (moves the bindings, then writes the rebalancer's status through
`PUT .../workloadrebalancers/NAME/status`), the way the real controller will.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from federation.cli import cmd_rebalance
from federation.cli.client import ClientConfig, FederationClient
from federation.cli.context import CliContext
from federation.cli.main import cli
from tests.conftest import RunningServer, point_cli_at

WRS = "/apis/apps.karmada.io/v1alpha1/workloadrebalancers"
RBS = "/apis/work.karmada.io/v1alpha2/namespaces/{ns}/resourcebindings"
CRBS = "/apis/work.karmada.io/v1alpha2/clusterresourcebindings"
FINISHED_AT = "2026-03-01T12:00:00Z"
GENERATED = re.compile(r"^rebalance-nginx-[bcdfghjklmnpqrstvwxz2456789]{5}$")


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningServer]:
    """A real API server without controllers; the CLI finds it through the kubeconfig it wrote."""
    from federation.cli import server as launcher
    from federation.settings import load_settings

    point_cli_at(monkeypatch, tmp_path / "data" / "federation.kubeconfig")
    settings = load_settings(data_dir=str(tmp_path / "data"), api={"port": 0})
    process = launcher.build(settings, run_controllers=False)
    process.start_in_thread()
    try:
        yield RunningServer(process)
    finally:
        process.stop()


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def workload(
    kind: str, name: str, namespace: str = "default", api_version: str = "apps/v1"
) -> dict[str, str]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "namespace": namespace}


def put_binding(http: httpx.Client, ref: dict[str, str], placement: dict[str, int]) -> None:
    """Create or move the workload's ResourceBinding to ``placement`` (cluster → replicas)."""
    name = f"{ref['name']}-{ref['kind'].lower()}"
    path = f"{RBS.format(ns=ref['namespace'])}/{name}"
    current = http.get(path)
    body = (
        current.json()
        if current.status_code == 200
        else {
            "apiVersion": "work.karmada.io/v1alpha2",
            "kind": "ResourceBinding",
            "metadata": {"name": name, "namespace": ref["namespace"]},
            "spec": {"resource": ref, "replicas": sum(placement.values())},
        }
    )
    body["spec"]["clusters"] = [{"name": c, "replicas": r} for c, r in placement.items()]
    answer = http.put(path, json=body)
    assert answer.is_success, answer.text


def entry(ref: dict[str, str], result: str, reason: str | None = None) -> dict[str, Any]:
    return {"workload": ref, "result": result, **({"reason": reason} if reason else {})}


def write_status(http: httpx.Client, name: str, entries: list[dict[str, Any]], finished: bool) -> None:
    status: dict[str, Any] = {"observedWorkloads": entries, "observedGeneration": 1}
    if finished:
        status["finishTime"] = FINISHED_AT
    body = {
        "apiVersion": "apps.karmada.io/v1alpha1",
        "kind": "WorkloadRebalancer",
        "metadata": {"name": name},
    }
    answer = http.put(f"{WRS}/{name}/status", json={**body, "status": status})
    assert answer.is_success, answer.text


def the_rebalancer(http: httpx.Client, timeout: float = 10.0) -> dict[str, Any]:
    """The one rebalancer, as soon as the CLI has created it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        items = http.get(WRS).json()["items"]
        if items:
            assert len(items) == 1
            return dict(items[0])
        time.sleep(0.02)
    raise AssertionError("the CLI did not create a rebalancer")


def play_controller(
    server: RunningServer, act: Callable[[httpx.Client, str], None]
) -> tuple[ThreadPoolExecutor, Future[None]]:
    """Run ``act(http, rebalancer_name)`` in a thread once the rebalancer exists; ``.result()`` re-raises."""

    def controller() -> None:
        with server.client() as http:
            act(http, the_rebalancer(http)["metadata"]["name"])

    pool = ThreadPoolExecutor(max_workers=1)
    return pool, pool.submit(controller)


def data_lines(output: str) -> list[list[str]]:
    """The rows of a table (after its header), split on the column gaps."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(("WORKLOAD ", "NAME ")))
    return [re.split(r"\s{3,}", line.strip()) for line in lines[start + 1 :] if line.strip()]


NGINX = workload("Deployment", "nginx")
DB = workload("StatefulSet", "db")


# -- create ---------------------------------------------------------------------------------------------


def test_create_resolves_kinds_namespace_ttl_and_name(server: RunningServer) -> None:
    result = run(
        "rebalance", "deploy/nginx", "statefulsets.apps/db", "clusterrole/viewer", "deployment.apps/nginx",
        "-n", "shop", "--ttl", "30", "--name", "fail-back",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout == "workloadrebalancer.apps.karmada.io/fail-back created\n"
    with server.client() as http:
        stored = http.get(f"{WRS}/fail-back").json()
    assert stored["spec"] == {
        "workloads": [
            workload("Deployment", "nginx", "shop"),
            workload("StatefulSet", "db", "shop"),
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": "viewer"},
        ],
        "ttlSecondsAfterFinished": 30,
    }


def test_default_name_namespace_and_no_ttl(server: RunningServer) -> None:
    first, second = run("rebalance", "deployment/nginx"), run("rebalance", "deployments/nginx")
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    with server.client() as http:
        stored = http.get(WRS).json()["items"]
    names = sorted(item["metadata"]["name"] for item in stored)
    assert len(names) == 2 and all(GENERATED.match(n) for n in names), names
    assert {f"workloadrebalancer.apps.karmada.io/{n} created\n" for n in names} == {
        first.stdout,
        second.stdout,
    }
    assert stored[0]["spec"] == {"workloads": [NGINX]}


def test_generated_names_are_valid_for_any_workload_name() -> None:
    name = cmd_rebalance.generated_name("System:Controller.Very-" + "x" * 300)
    assert re.fullmatch(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?", name) and len(name) <= 63, name
    assert name.startswith("rebalance-system-controller-very-x")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["deployment"], "error: 'deployment' is not KIND/NAME (for example deployment/nginx)"),
        (["deployment/"], "error: 'deployment/' is not KIND/NAME (for example deployment/nginx)"),
        (["nope/x"], 'error: the server doesn\'t have a resource type "nope"'),
        (["deployment.batch/x"], 'error: the server doesn\'t have a resource type "deployment.batch"'),
        (["pp/x"], "error: 'pp/x': a PropagationPolicy is not a workload"),
        (["--ttl", "-1", "deploy/x"], "error: Invalid value for '--ttl': -1 is not in the range"),
        (["deploy/x", "--timeout", "5"], "error: --timeout only applies with --wait"),
        (["deploy/x", "--wait", "--timeout", "soon"], "error: Invalid value for '--timeout': 'soon'"),
        ([], "error: Missing argument 'KIND/NAME...'"),
    ],
)
def test_bad_arguments_are_one_line_and_create_nothing(
    server: RunningServer, args: list[str], message: str
) -> None:
    result = run("rebalance", *args)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(message), result.stderr
    with server.client() as http:
        assert http.get(WRS).json()["items"] == []


def test_a_server_side_rejection_is_one_line(server: RunningServer) -> None:
    assert run("rebalance", "deploy/nginx", "--name", "taken").exit_code == 0
    again = run("rebalance", "deploy/db", "--name", "taken")
    assert again.exit_code == 1
    assert again.stderr == (
        'Error from server (AlreadyExists): workloadrebalancers.apps.karmada.io "taken" already exists\n'
    )


# -- --wait -----------------------------------------------------------------------------------------------


def test_wait_shows_progress_once_then_results_and_placements(server: RunningServer) -> None:
    with server.client() as http:
        put_binding(http, NGINX, {"member2": 4})
        put_binding(http, DB, {"member1": 1})

    def controller(http: httpx.Client, name: str) -> None:
        put_binding(http, NGINX, {"member1": 2, "member2": 2})
        write_status(http, name, [entry(NGINX, "Successful")], finished=False)
        put_binding(http, DB, {"member3": 1})
        write_status(http, name, [entry(NGINX, "Successful"), entry(DB, "Successful")], finished=True)

    pool, done = play_controller(server, controller)
    with pool:
        result = run("rebalance", "deployment/nginx", "sts/db", "--wait", "--timeout", "20")
        done.result()
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith("workloadrebalancer.apps.karmada.io/rebalance-nginx-")
    assert result.stdout.splitlines()[1].split() == ["WORKLOAD", "RESULT", "REASON", "PLACEMENT"]
    assert data_lines(result.stdout) == [
        ["deployment/nginx", "Successful", "member2:4 → member1:2,member2:2"],
        ["statefulset/db", "Successful", "member1:1 → member3:1"],
    ]
    progress = [line for line in result.stderr.splitlines() if line.startswith("rebalancing ")]
    assert len(progress) == 1 and "2/2" in progress[0], result.stderr  # no redraws without a terminal


def test_wait_with_a_failed_workload_exits_1(server: RunningServer) -> None:
    ghost = workload("Deployment", "ghost")
    with server.client() as http:
        put_binding(http, NGINX, {"member2": 4})

    def controller(http: httpx.Client, name: str) -> None:
        put_binding(http, NGINX, {"member1": 4})
        entries = [entry(NGINX, "Successful"), entry(ghost, "Failed", "ReferencedBindingNotFound")]
        write_status(http, name, entries, finished=True)

    pool, done = play_controller(server, controller)
    with pool:
        result = run("rebalance", "deploy/nginx", "deploy/ghost", "--wait", "--timeout", "20")
        done.result()
    assert result.exit_code == 1
    assert data_lines(result.stdout) == [
        ["deployment/nginx", "Successful", "member2:4 → member1:4"],
        ["deployment/ghost", "Failed", "ReferencedBindingNotFound", "<none> → <none>"],
    ]
    assert result.stderr.splitlines()[-1] == "error: 1 of 2 workloads were not rebalanced: deployment/ghost"


def test_wait_times_out_with_a_clear_line_and_exit_1(server: RunningServer) -> None:
    with server.client() as http:
        put_binding(http, NGINX, {"member2": 4})

    def controller(http: httpx.Client, name: str) -> None:
        write_status(http, name, [entry(NGINX, "Successful")], finished=False)  # db never gets a result

    pool, done = play_controller(server, controller)
    started = time.monotonic()
    with pool:
        result = run("rebalance", "deploy/nginx", "statefulset/db", "--wait", "--timeout", "1.5")
        done.result()
    assert time.monotonic() - started >= 1.5  # it waited for the whole deadline before giving up
    assert result.exit_code == 1
    name = result.stdout.split()[0].removeprefix("workloadrebalancer.apps.karmada.io/")
    assert result.stderr.splitlines()[-1] == (
        f"error: timed out after 1.5s waiting for workloadrebalancer/{name}: 1 of 2 workloads have a result"
    )
    assert data_lines(result.stdout) == [
        ["deployment/nginx", "Successful", "member2:4 → member2:4"],
        ["statefulset/db", "Pending", "<none> → <pending>"],
    ]


def test_wait_when_the_rebalancer_disappears_is_one_line(server: RunningServer) -> None:
    def controller(http: httpx.Client, name: str) -> None:
        assert http.delete(f"{WRS}/{name}").is_success

    pool, done = play_controller(server, controller)
    with pool:
        result = run("rebalance", "deploy/nginx", "--wait", "--timeout", "20")
        done.result()
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1].startswith("error: workloadrebalancer/rebalance-nginx-")
    assert "was deleted before every workload had a result (0 of 1 seen)" in result.stderr


def test_wait_never_sleeps_past_the_deadline() -> None:
    now = [100.0]
    sleeps: list[float] = []
    polls: list[int] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds

    seen = cmd_rebalance.wait_for_results(
        lambda _seen: polls.append(1), 101.2, on_progress=lambda _n: None, clock=lambda: now[0], sleep=sleep
    )
    assert not seen.finished
    assert sleeps == [0.5, 0.5, pytest.approx(0.2)]
    assert len(polls) == 4  # a last look at the deadline itself


def test_after_placement_is_read_once_when_the_result_appears() -> None:
    """Later moves of the binding (another rebalance, a failover) are not what this rebalancer did."""
    status: dict[str, Any] = {}
    placement = {"clusters": [{"name": "member1", "replicas": 2}]}
    reads: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        reads.append(request.url.path)
        if request.url.path == f"{WRS}/demo":
            return httpx.Response(200, json={"metadata": {"name": "demo"}, "status": status})
        assert request.url.path == f"{RBS.format(ns='default')}/nginx-deployment"
        return httpx.Response(200, json={"spec": placement})

    client = FederationClient(ClientConfig("http://test", None), transport=httpx.MockTransport(answer))
    [nginx] = cmd_rebalance.parse_workloads(CliContext(), ["deploy/nginx"], "default")
    seen = cmd_rebalance.Progression()
    cmd_rebalance.observe(client, "demo", [nginx], seen)
    assert not seen.finished and seen.after == {} and len(reads) == 1  # no result, no binding read
    status["observedWorkloads"] = [entry(NGINX, "Successful")]
    cmd_rebalance.observe(client, "demo", [nginx], seen)
    placement["clusters"] = [{"name": "member9", "replicas": 2}]
    cmd_rebalance.observe(client, "demo", [nginx], seen)
    assert seen.finished and seen.after == {nginx.key(): "member1:2"}
    assert len(reads) == 4  # rebalancer, rebalancer + binding, rebalancer


# -- get / describe -------------------------------------------------------------------------------------


def test_get_wr_columns(server: RunningServer) -> None:
    assert run("rebalance", "deploy/nginx", "deploy/ghost", "--name", "done").exit_code == 0
    assert run("rebalance", "deploy/nginx", "--name", "fresh").exit_code == 0
    with server.client() as http:
        entries = [entry(NGINX, "Successful"), entry(workload("Deployment", "ghost"), "Failed", "X")]
        write_status(http, "done", entries, finished=True)
    result = run("get", "wr")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].split() == [
        "NAME",
        "WORKLOADS",
        "SUCCESSFUL",
        "FAILED",
        "FINISHED",
        "AGE",
    ]
    rows = {row[0]: row for row in (line.split() for line in result.stdout.splitlines()[1:])}
    assert rows["done"][1:5] == ["2", "1", "1", FINISHED_AT]
    assert rows["fresh"][1:5] == ["1", "0", "0", "<none>"]
    assert re.fullmatch(r"\d+s", rows["fresh"][5])


def test_describe_wr_shows_workloads_as_a_table(server: RunningServer) -> None:
    args = ("rebalance", "deploy/nginx", "sts/db", "clusterrole/viewer", "-n", "shop", "--ttl", "60")
    assert run(*args, "--name", "demo").exit_code == 0
    shop_nginx = workload("Deployment", "nginx", "shop")
    removed = workload("Deployment", "old", "shop")  # succeeded, then left the spec: status keeps it
    with server.client() as http:
        entries = [entry(shop_nginx, "Successful"), entry(removed, "Successful")]
        write_status(
            http, "demo", [*entries, entry(workload("StatefulSet", "db", "shop"), "Failed", "Boom")], True
        )
    result = run("describe", "wr", "demo")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "TTL After Finished:   60s" in text and f"Finished:             {FINISHED_AT}" in text
    assert "observedWorkloads" not in text and "ttlSecondsAfterFinished" not in text
    table = text[text.index("Workloads:") : text.index("\nEvents:")].splitlines()[1:]  # events come last
    assert [re.split(r"\s{3,}", line.strip()) for line in table] == [
        ["NAMESPACE", "WORKLOAD", "RESULT", "REASON"],
        ["shop", "deployment/nginx", "Successful"],
        ["shop", "statefulset/db", "Failed", "Boom"],
        ["<none>", "clusterrole/viewer", "Pending"],
        ["shop", "deployment/old", "Successful"],
    ]
