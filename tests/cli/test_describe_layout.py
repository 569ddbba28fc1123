"""`federation describe` in kubectl describe's layout, Events last: the layout's pieces, then the command
against a real server whose controllers recorded events about the object."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from click.testing import CliRunner

from federation.cli.kubectl_layout import content_lines, event_lines, header_lines, smart_label, tabbed
from federation.cli.main import cli
from federation.store.events import EventEntry, EventRepository, InvolvedObject
from tests.api import manifests as m

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_smart_labels() -> None:
    assert smart_label("apiVersion") == "API Version"
    assert smart_label("clusterAffinity") == "Cluster Affinity"
    assert smart_label("uid") == "UID"
    assert smart_label("proxyURL") == "Proxy URL"
    assert smart_label("app.kubernetes.io/name") == "app.kubernetes.io/name"


def test_layout_aligns_as_tabwriter() -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "default", "labels": {"b": "2", "a": "1"}, "uid": "u"},
        "data": {"key": "value", "list": None},
        "spec": {"items": [{"name": "x", "port": 80}, "plain"], "enabled": True},
    }
    text = tabbed([*header_lines(obj), *content_lines(obj)])
    assert text.splitlines() == [
        "Name:         cfg",
        "Namespace:    default",
        "Labels:       a=1",
        "              b=2",
        "Annotations:  <none>",
        "API Version:  v1",
        "Data:",
        "  Key:   value",
        "  List:  <nil>",
        "Kind:    ConfigMap",  # one run of tabbed lines with the two above: one column width
        "Metadata:",
        "  UID:  u",
        "Spec:",
        "  Enabled:  true",
        "  Items:",
        "    Name:  x",
        "    Port:  80",
        "    plain",
    ]


def test_events_section() -> None:
    assert tabbed(event_lines([], NOW)) == "Events:  <none>"
    repeated = {
        "type": "Warning",
        "reason": "SyncFailed",
        "source": {"component": "work-sync"},
        "message": "boom ",
        "firstTimestamp": (NOW - timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "lastTimestamp": (NOW - timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "count": 3,
    }
    once = {
        **repeated,
        "type": "Normal",
        "reason": "Ok",
        "count": 1,
        "lastTimestamp": repeated["firstTimestamp"],
    }
    assert tabbed(event_lines([repeated, once], NOW)).splitlines() == [
        "Events:",
        "  Type     Reason      Age                From       Message",
        "  ----     ------      ----               ----       -------",
        "  Normal   Ok          10m                work-sync  boom",
        "  Warning  SyncFailed  30s (x3 over 10m)  work-sync  boom",
    ]


def test_describe_prints_kubectls_layout_with_events_last(federation_server) -> None:
    with federation_server.client() as http:
        created = http.post("/apis/cluster.karmada.io/v1alpha1/clusters", json=m.CLUSTER).json()
    involved = InvolvedObject("Cluster", "member1", "", created["metadata"]["uid"])
    other = InvolvedObject("Cluster", "member1", "", "an-older-cluster-of-the-same-name")
    with federation_server.process.api_context.uow() as session:
        events = EventRepository(session)
        now = datetime.now(UTC)
        events.record_many(
            [EventEntry(involved, "Warning", "ClusterNotReady", "Ready is now False")],
            now=now,
            source="cluster-status-controller",
        )
        events.record_many(
            [EventEntry(involved, "Warning", "ClusterNotReady", "Ready is now False")],
            now=now,
            source="cluster-status-controller",
        )
        events.record_many([EventEntry(other, "Normal", "Stale", "not this one")], now=now)
    described = run("describe", "cluster", "member1")
    assert described.exit_code == 0, described.output
    lines = described.output.rstrip("\n").splitlines()
    assert lines[:4] == [
        "Name:         member1",
        "Namespace:",
        "Labels:       env=prod",
        "Annotations:  <none>",
    ]
    assert "Spec:" in lines and any(line.startswith("  Sync Mode:") for line in lines)
    assert lines[-4] == "Events:"
    assert lines[-3].split() == ["Type", "Reason", "Age", "From", "Message"]
    assert lines[-3].index("Reason") == lines[-1].index("ClusterNotReady")  # aligned columns
    kind, reason, age = lines[-1].split()[:3]
    assert (kind, reason) == ("Warning", "ClusterNotReady") and "(x2 over" in lines[-1]
    assert re.fullmatch(r"\d+s", age), age  # seconds since the events were written (a slow run says 1s)
    assert "Stale" not in described.output  # another object's uid: not this cluster's event
