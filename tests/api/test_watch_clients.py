"""Watch as real clients use it against the federation API: the official Python client's ``watch.Watch``
(custom objects and Deployments) and ``kubectl get -w``, through the kubeconfig ``serve`` wrote."""

from __future__ import annotations

import queue
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as kconfig
from kubernetes import watch

from tests.api import manifests as m
from tests.conftest import RunningServer, start_server

DEADLINE_SECONDS = 30.0


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    running = start_server(tmp_path)
    try:
        yield running
    finally:
        running.process.stop()


@pytest.fixture
def api_client(server: RunningServer) -> Iterator[k8s.ApiClient]:
    client = kconfig.new_client_from_config(config_file=str(server.kubeconfig))
    # No idle keep-alive connections: one left open holds the TLS server's graceful stop until it gives up.
    client.set_default_header("Connection", "close")
    try:
        yield client
    finally:
        client.close()


def stream_in_thread(list_call: Callable[..., Any], **kwargs: Any) -> tuple[watch.Watch, queue.Queue[Any]]:
    """``Watch().stream(list_call, ...)`` in a thread; its events (then None) go to the queue."""
    watcher = watch.Watch()
    events: queue.Queue[Any] = queue.Queue()

    def run() -> None:
        try:
            for event in watcher.stream(list_call, timeout_seconds=int(DEADLINE_SECONDS), **kwargs):
                events.put(event)
        except Exception as exc:  # the server stopped under a watch the test had already stopped
            events.put(exc)
        finally:
            events.put(None)

    threading.Thread(target=run, daemon=True).start()
    return watcher, events


def wait_event(events: queue.Queue[Any], matches: Callable[[Any], bool]) -> Any:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        event = events.get(timeout=max(0.01, deadline - time.monotonic()))
        assert event is not None and not isinstance(event, Exception), f"the watch ended: {event!r}"
        if matches(event):
            return event


def test_python_client_watches_custom_objects(api_client: k8s.ApiClient) -> None:
    custom = k8s.CustomObjectsApi(api_client)
    group, version, plural = "policy.karmada.io", "v1alpha1", "propagationpolicies"
    watcher, events = stream_in_thread(
        custom.list_namespaced_custom_object, group=group, version=version, namespace="default", plural=plural
    )
    created = custom.create_namespaced_custom_object(group, version, "default", plural, m.PROPAGATION_POLICY)
    name = created["metadata"]["name"]
    added = wait_event(events, lambda e: e["type"] == "ADDED" and e["object"]["metadata"]["name"] == name)
    assert added["object"]["spec"] == created["spec"]
    custom.delete_namespaced_custom_object(group, version, "default", plural, name)
    deleted = wait_event(events, lambda e: e["type"] == "DELETED")
    assert deleted["object"]["metadata"]["name"] == name
    assert int(deleted["object"]["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    watcher.stop()


def test_python_client_watches_deployments_typed(api_client: k8s.ApiClient) -> None:
    apps = k8s.AppsV1Api(api_client)
    watcher, events = stream_in_thread(apps.list_namespaced_deployment, namespace="default")
    created = apps.create_namespaced_deployment("default", m.DEPLOYMENT)
    added = wait_event(events, lambda e: e["type"] == "ADDED")
    assert isinstance(added["object"], k8s.V1Deployment)
    assert added["object"].metadata.name == created.metadata.name
    changed = {**m.DEPLOYMENT, "metadata": {**m.DEPLOYMENT["metadata"], "labels": {"watched": "yes"}}}
    apps.replace_namespaced_deployment(created.metadata.name, "default", changed)
    modified = wait_event(events, lambda e: e["type"] == "MODIFIED" and e["object"].metadata.labels)
    assert modified["object"].metadata.labels["watched"] == "yes"
    # The client resumes from the last resourceVersion it saw when it watches again.
    assert watcher.resource_version == modified["object"].metadata.resource_version
    watcher.stop()


def test_kubectl_get_watch_sees_a_change(server: RunningServer, tmp_path: Path) -> None:
    with server.client() as api:
        api.post("/apis/apps/v1/namespaces/default/deployments", json=m.DEPLOYMENT)
    command = [
        "kubectl",
        f"--kubeconfig={server.kubeconfig}",
        f"--cache-dir={tmp_path / 'cache'}",
        "get",
        "deployments",
        "-n",
        "default",
        "-w",
        "--output-watch-events",
    ]
    kubectl = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert kubectl.stdout is not None
        for line in kubectl.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    try:
        first = next_line_with(lines, m.DEPLOYMENT["metadata"]["name"])
        assert first.split()[0] == "ADDED"
        other = {**m.DEPLOYMENT, "metadata": {"name": "watched-later", "namespace": "default"}}
        with server.client() as api:
            assert api.post("/apis/apps/v1/namespaces/default/deployments", json=other).status_code == 201
        assert next_line_with(lines, "watched-later").split()[0] == "ADDED"
    finally:
        kubectl.terminate()
        _, errors = kubectl.communicate(timeout=DEADLINE_SECONDS)
    assert "error" not in errors.lower(), errors


def next_line_with(lines: queue.Queue[str | None], text: str) -> str:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
        assert line is not None, f"kubectl exited before printing {text!r}"
        if text in line:
            return line
