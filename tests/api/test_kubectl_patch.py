"""Real `kubectl` against the federation API through the kubeconfig `serve` writes: patch (merge and
strategic), scale, and server-side apply twice."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from tests.api import manifests as m


def _deployment(kubectl: Any) -> dict[str, Any]:
    shown = kubectl("get", "deployment", "nginx", "-n", "default", "-o", "json", "--show-managed-fields")
    assert shown.returncode == 0, shown.stderr
    loaded: dict[str, Any] = json.loads(shown.stdout)
    return loaded


def test_kubectl_server_side_apply_twice_patch_and_scale(kubectl: Any, tmp_path: Path) -> None:
    manifest = tmp_path / "nginx.yaml"
    manifest.write_text(yaml.safe_dump(m.DEPLOYMENT))
    first = kubectl("apply", "--server-side", "-f", str(manifest))
    assert first.returncode == 0, first.stderr
    assert "deployment.apps/nginx serverside-applied" in first.stdout
    applied = _deployment(kubectl)
    assert {e["manager"] for e in applied["metadata"]["managedFields"]} == {"kubectl"}

    second = kubectl("apply", "--server-side", "-f", str(manifest))
    assert second.returncode == 0, second.stderr
    assert _deployment(kubectl)["metadata"]["resourceVersion"] == applied["metadata"]["resourceVersion"]

    merged = kubectl(
        "patch", "deployment", "nginx", "-n", "default", "--type", "merge", "-p", '{"spec":{"replicas":3}}'
    )
    assert merged.returncode == 0, merged.stderr
    assert "deployment.apps/nginx patched" in merged.stdout
    assert _deployment(kubectl)["spec"]["replicas"] == 3

    sidecar = {"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "busybox"}]}}}}
    strategic = kubectl("patch", "deployment", "nginx", "-n", "default", "-p", json.dumps(sidecar))
    assert strategic.returncode == 0, strategic.stderr
    containers = _deployment(kubectl)["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["nginx", "sidecar"]

    scaled = kubectl("scale", "deployment/nginx", "-n", "default", "--replicas=5")
    assert scaled.returncode == 0, scaled.stderr
    assert "deployment.apps/nginx scaled" in scaled.stdout
    assert _deployment(kubectl)["spec"]["replicas"] == 5

    # The replicas kubectl scale set belong to another manager now: a plain re-apply conflicts.
    conflict = kubectl("apply", "--server-side", "-f", str(manifest))
    assert conflict.returncode != 0
    assert "conflict" in conflict.stderr.lower() and ".spec.replicas" in conflict.stderr
    forced = kubectl("apply", "--server-side", "--force-conflicts", "-f", str(manifest))
    assert forced.returncode == 0, forced.stderr
    assert _deployment(kubectl)["spec"]["replicas"] == 2


def test_kubectl_strategic_patch_of_a_policy_is_refused_and_merge_works(kubectl: Any, tmp_path: Path) -> None:
    manifest = tmp_path / "policy.yaml"
    manifest.write_text(yaml.safe_dump(m.PROPAGATION_POLICY))
    created = kubectl("create", "-f", str(manifest))
    assert created.returncode == 0, created.stderr
    label = '{"metadata":{"labels":{"team":"web"}}}'
    strategic = kubectl("patch", "propagationpolicy", "nginx-propagation", "-n", "default", "-p", label)
    assert strategic.returncode != 0
    assert "application/strategic-merge-patch+json is not supported" in strategic.stderr
    merged = kubectl("patch", "pp", "nginx-propagation", "-n", "default", "--type", "merge", "-p", label)
    assert merged.returncode == 0, merged.stderr
    shown = kubectl("get", "pp", "nginx-propagation", "-n", "default", "-o", "json")
    assert json.loads(shown.stdout)["metadata"]["labels"] == {"team": "web"}


def test_kubectl_client_side_apply_patches_what_changed(kubectl: Any, tmp_path: Path) -> None:
    manifest = tmp_path / "nginx.yaml"
    manifest.write_text(yaml.safe_dump(m.DEPLOYMENT))
    created = kubectl("apply", "-f", str(manifest))
    assert created.returncode == 0 and "deployment.apps/nginx created" in created.stdout, created.stderr
    unchanged = kubectl("apply", "-f", str(manifest))
    assert unchanged.returncode == 0 and "deployment.apps/nginx unchanged" in unchanged.stdout, (
        unchanged.stderr
    )

    changed = copy.deepcopy(m.DEPLOYMENT)
    changed["spec"]["replicas"] = 4
    changed["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "busybox"})
    manifest.write_text(yaml.safe_dump(changed))
    configured = kubectl("apply", "-f", str(manifest))  # a strategic merge patch with kubectl's directives
    assert configured.returncode == 0 and "deployment.apps/nginx configured" in configured.stdout, (
        configured.stderr
    )
    live = _deployment(kubectl)
    assert live["spec"]["replicas"] == 4
    assert [c["name"] for c in live["spec"]["template"]["spec"]["containers"]] == ["nginx", "sidecar"]

    manifest.write_text(yaml.safe_dump(m.DEPLOYMENT))
    reverted = kubectl("apply", "-f", str(manifest))  # the sidecar goes: a $patch: delete directive
    assert reverted.returncode == 0, reverted.stderr
    assert [c["name"] for c in _deployment(kubectl)["spec"]["template"]["spec"]["containers"]] == ["nginx"]

    deleted = kubectl("delete", "-f", str(manifest))
    assert deleted.returncode == 0 and 'deployment.apps "nginx" deleted' in deleted.stdout, deleted.stderr
    gone = kubectl("get", "deployment", "nginx", "-n", "default")
    assert gone.returncode != 0 and "NotFound" in gone.stderr
