"""Real kubectl against `federation serve` (HTTPS, the kubeconfig it wrote): `get` prints the Table columns,
`explain` reads our OpenAPI v3, client-side `apply` validates on the server and says `unchanged` the second
time, `describe` and `get events` show what the controllers recorded."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import yaml

from tests.api import manifests as m


def header(output: str) -> list[str]:
    return output.splitlines()[0].split()


def test_apply_twice_then_get_prints_table_columns(kubectl: Any, tmp_path: Path) -> None:
    manifest = tmp_path / "app.yaml"
    manifest.write_text(yaml.safe_dump_all([m.DEPLOYMENT, m.PROPAGATION_POLICY]))
    first = kubectl("apply", "-f", str(manifest))  # client-side apply, validation on (the default)
    assert first.returncode == 0, first.stderr
    assert "deployment.apps/nginx created" in first.stdout
    assert "propagationpolicy.policy.karmada.io/nginx-propagation created" in first.stdout
    again = kubectl("apply", "-f", str(manifest))
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [
        "deployment.apps/nginx unchanged",
        "propagationpolicy.policy.karmada.io/nginx-propagation unchanged",
    ]

    deployments = kubectl("get", "deployments", "-o", "wide")
    assert deployments.returncode == 0, deployments.stderr
    assert header(deployments.stdout) == [
        "NAME",
        "READY",
        "UP-TO-DATE",
        "AVAILABLE",
        "AGE",
        "CONTAINERS",
        "IMAGES",
        "SELECTOR",
    ]
    assert deployments.stdout.splitlines()[1].split()[:2] == ["nginx", "0/2"]
    policies = kubectl("get", "pp")
    assert header(policies.stdout) == ["NAME", "CONFLICT-RESOLUTION", "PRIORITY", "AGE"], policies.stderr
    bindings = kubectl("get", "rb", "-A")
    assert header(bindings.stdout) == ["NAMESPACE", "NAME", "SCHEDULED", "FULLYAPPLIED", "AGE"], (
        bindings.stderr
    )
    clusters = kubectl("get", "clusters")
    assert clusters.returncode == 0 and "No resources found" in clusters.stderr


def test_a_crd_kind_prints_its_declared_columns(kubectl: Any, tmp_path: Path) -> None:
    from tests.api.test_tables_http import GADGET, GADGET_CRD

    manifest = tmp_path / "gadget.yaml"
    manifest.write_text(yaml.safe_dump(GADGET_CRD))
    assert kubectl("apply", "-f", str(manifest)).returncode == 0
    manifest.write_text(yaml.safe_dump({**GADGET, "metadata": {"name": "g1", "namespace": "default"}}))
    created = kubectl("apply", "-f", str(manifest))
    assert created.returncode == 0, created.stderr
    listed = kubectl("get", "gadgets")
    assert header(listed.stdout) == ["NAME", "SIZE", "AGE"], listed.stderr
    assert listed.stdout.splitlines()[1].split()[:2] == ["g1", "4"]


def test_explain_reads_the_field_docs(kubectl: Any) -> None:
    explained = kubectl("explain", "propagationpolicy.spec.placement")
    assert explained.returncode == 0, explained.stderr
    text = explained.stdout
    assert "KIND:       PropagationPolicy" in text and "GROUP:      policy.karmada.io" in text
    assert "FIELD: placement <Placement>" in text
    assert "Which clusters the claimed resources go to" in text
    assert "clusterAffinity\t<ClusterAffinity>" in text and "spreadConstraints\t<[]SpreadConstraint>" in text
    assert "The clusters the workload may be scheduled to" in text
    deeper = kubectl("explain", "pp.spec.placement.replicaScheduling.replicaSchedulingType")
    assert deeper.returncode == 0 and "Duplicated" in deeper.stdout, deeper.stderr


def test_describe_and_get_events_show_what_the_scheduler_said(kubectl: Any, tmp_path: Path) -> None:
    manifest = tmp_path / "app.yaml"
    manifest.write_text(yaml.safe_dump_all([m.DEPLOYMENT, m.PROPAGATION_POLICY]))
    assert kubectl("apply", "-f", str(manifest)).returncode == 0
    deadline = time.monotonic() + 30
    described = kubectl("describe", "rb", "nginx-deployment")
    while "ScheduleBindingFailed" not in described.stdout and time.monotonic() < deadline:
        time.sleep(0.2)
        described = kubectl("describe", "rb", "nginx-deployment")
    assert described.returncode == 0, described.stderr
    events = described.stdout[described.stdout.index("Events:") :].splitlines()
    assert events[1].split() == ["Type", "Reason", "Age", "From", "Message"]
    assert events[3].split()[:2] == ["Warning", "ScheduleBindingFailed"] and "scheduler" in events[3]
    listed = kubectl("get", "events")
    assert header(listed.stdout) == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"], listed.stderr
    assert "resourcebinding/nginx-deployment" in listed.stdout
    assert kubectl("get", "events.events.k8s.io", "-A").returncode == 0
