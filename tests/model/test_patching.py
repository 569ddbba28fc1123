"""The shared patch semantics (federation.model.patching): merge, JSON and strategic merge patches, field
sets, and server-side apply ownership. The API and the simulator both serve these."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from federation.model.patching import (
    APPLY,
    JSON_PATCH,
    MERGE,
    STRATEGIC,
    ApplyConflict,
    PatchError,
    json_patch,
    merge_patch,
    patched,
    record_update,
    server_side_apply,
    strategic_merge_patch,
)
from federation.model.patching.fields import field_paths, from_fields_v1, to_fields_v1


def make_deployment(replicas: int = 2, image: str = "nginx") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
        },
    }


# RFC 7386 appendix A, every row.
MERGE_CASES = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "expected"), MERGE_CASES)
def test_merge_patch_rfc7386_appendix(target: Any, patch: Any, expected: Any) -> None:
    before = copy.deepcopy(target)
    assert merge_patch(target, patch) == expected
    assert target == before  # inputs are never mutated


STRATEGIC_CASES = [
    pytest.param(
        {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]},
        {
            "$setElementOrder/containers": [{"name": "a"}, {"name": "c"}],
            "containers": [
                {"name": "a", "image": "2"},
                {"name": "b", "$patch": "delete"},
                {"name": "c", "image": "3"},
            ],
        },
        True,
        {"containers": [{"name": "a", "image": "2"}, {"name": "c", "image": "3"}]},
        id="keyed-list-merge-delete-and-order-directive",
    ),
    pytest.param(
        {"containers": [{"name": "a", "image": "1"}]},
        {"containers": [{"name": "z"}]},
        False,
        {"containers": [{"name": "z"}]},
        id="custom-resource-lists-are-atomic",
    ),
    pytest.param(
        {"args": ["x", "y"]},
        {"args": ["z"]},
        True,
        {"args": ["z"]},
        id="unkeyed-list-replaces",
    ),
    pytest.param(
        {"spec": {"a": 1, "b": 2}},
        {"spec": {"$patch": "replace", "c": 3}},
        True,
        {"spec": {"c": 3}},
        id="map-replace-directive",
    ),
    pytest.param(
        {"spec": {"a": 1}, "keep": True},
        {"spec": {"$patch": "delete"}},
        True,
        {"keep": True},
        id="map-delete-directive",
    ),
    pytest.param(
        {"finalizers": ["a", "b", "c"]},
        {"$deleteFromPrimitiveList/finalizers": ["b"]},
        True,
        {"finalizers": ["a", "c"]},
        id="delete-from-primitive-list",
    ),
    pytest.param(
        {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}},
        {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}},
        True,
        {"strategy": {"type": "Recreate"}},
        id="retain-keys-clears-the-rest",
    ),
    pytest.param(
        {"ports": [{"containerPort": 80, "name": "http"}]},
        {"ports": [{"containerPort": 443, "name": "https"}]},
        True,
        {"ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443, "name": "https"}]},
        id="ports-merge-by-container-port",
    ),
]


@pytest.mark.parametrize(("target", "patch", "keyed", "expected"), STRATEGIC_CASES)
def test_strategic_merge_patch(target: Any, patch: Any, keyed: bool, expected: Any) -> None:
    before = copy.deepcopy(target)
    assert strategic_merge_patch(target, patch, keyed) == expected
    assert target == before


def test_json_patch_operations() -> None:
    doc = {"spec": {"replicas": 1, "list": [1, 2]}}
    ops = [
        {"op": "replace", "path": "/spec/replicas", "value": 3},
        {"op": "add", "path": "/spec/list/-", "value": 9},
        {"op": "remove", "path": "/spec/list/0"},
        {"op": "copy", "from": "/spec/replicas", "path": "/spec/copy"},
        {"op": "move", "from": "/spec/copy", "path": "/spec/moved"},
        {"op": "add", "path": "/spec/list/0", "value": 7},
        {"op": "add", "path": "/metadata~1x", "value": {"a~b": 1}},
        {"op": "test", "path": "/metadata~1x/a~0b", "value": 1},
    ]
    assert json_patch(doc, ops) == {
        "spec": {"replicas": 3, "list": [7, 2, 9], "moved": 3},
        "metadata/x": {"a~b": 1},
    }
    assert doc == {"spec": {"replicas": 1, "list": [1, 2]}}


JSON_PATCH_ERRORS = [
    pytest.param({"op": "test", "path": "/spec/replicas", "value": 2}, "Invalid", id="failed-test"),
    pytest.param({"op": "remove", "path": "/spec/missing"}, "Invalid", id="remove-missing"),
    pytest.param({"op": "replace", "path": "/spec/missing", "value": 1}, "Invalid", id="replace-missing"),
    pytest.param({"op": "add", "path": "/nothing/here", "value": 1}, "Invalid", id="add-under-missing"),
    pytest.param({"op": "add", "path": "/spec/list/9", "value": 1}, "Invalid", id="index-past-end"),
    pytest.param({"op": "add", "path": "/spec/list/x", "value": 1}, "Invalid", id="index-not-a-number"),
    pytest.param({"op": "add", "path": "spec", "value": 1}, "BadRequest", id="pointer-without-slash"),
    pytest.param({"op": "add", "path": 7, "value": 1}, "BadRequest", id="pointer-not-a-string"),
    pytest.param({"op": "add", "path": "/spec/x"}, "BadRequest", id="add-without-value"),
    pytest.param({"op": "remove", "path": ""}, "BadRequest", id="remove-the-document"),
    pytest.param({"op": "frobnicate", "path": "/spec"}, "BadRequest", id="unknown-operation"),
    pytest.param("replace", "BadRequest", id="operation-not-an-object"),
]


@pytest.mark.parametrize(("operation", "reason"), JSON_PATCH_ERRORS)
def test_json_patch_errors(operation: Any, reason: str) -> None:
    with pytest.raises(PatchError) as exc:
        json_patch({"spec": {"replicas": 1, "list": [1]}}, [operation])
    assert exc.value.reason == reason
    assert exc.value.code == (422 if reason == "Invalid" else 400)


def test_json_patch_must_be_a_list() -> None:
    with pytest.raises(PatchError):
        json_patch({}, {"op": "add"})


def test_patched_dispatches_by_content_type() -> None:
    live = {"spec": {"containers": [{"name": "a", "image": "1"}]}}
    assert patched(live, MERGE, {"spec": {"x": 1}}, True)["spec"]["x"] == 1
    assert patched(live, JSON_PATCH, [{"op": "add", "path": "/spec/x", "value": 1}], True)["spec"]["x"] == 1
    both = patched(live, STRATEGIC, {"spec": {"containers": [{"name": "b", "image": "2"}]}}, True)
    assert [c["name"] for c in both["spec"]["containers"]] == ["a", "b"]
    with pytest.raises(ValueError):
        patched(live, APPLY, {}, True)


def test_fields_v1_round_trip_with_keyed_elements() -> None:
    paths = field_paths(make_deployment(), keyed=True)
    rendered = to_fields_v1(paths)
    containers = rendered["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert "." in containers['k:{"name":"app"}']
    assert from_fields_v1(rendered) == paths
    assert ("f:metadata", "f:name") not in paths  # identity is never owned


def test_fields_v1_reads_malformed_stored_entries_without_failing() -> None:
    assert from_fields_v1({"f:spec": {"f:replicas": "junk"}}) == {("f:spec", "f:replicas")}


def _config_map(data: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "c"}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def test_apply_drops_fields_the_manager_stopped_setting() -> None:
    first = server_side_apply(None, _config_map({"x": "1", "y": "2"}, {"a": "1"}), "mgr", False, True, "t1")
    second = server_side_apply(first, _config_map({"x": "1"}, {"a": "1"}), "mgr", False, True, "t2")
    assert second["data"] == {"x": "1"}
    assert second["metadata"]["labels"] == {"a": "1"}


def test_apply_keeps_fields_owned_by_another_manager() -> None:
    base = _config_map({"x": "1"})
    applied = server_side_apply(None, base, "a", False, True, "t1")
    edited = {**applied, "data": {"x": "1", "mine": "b"}}
    edited["metadata"] = {
        **applied["metadata"],
        "managedFields": record_update(applied, edited, "editor", True, "t2"),
    }
    reapplied = server_side_apply(edited, base, "a", False, True, "t3")
    assert reapplied["data"] == {"x": "1", "mine": "b"}
    managers = {(e["manager"], e["operation"]) for e in reapplied["metadata"]["managedFields"]}
    assert managers == {("a", "Apply"), ("editor", "Update")}


def test_apply_conflict_names_the_manager_and_field_and_force_takes_ownership() -> None:
    live = server_side_apply(None, make_deployment(replicas=2), "ci", False, True, "t1")
    with pytest.raises(ApplyConflict) as exc:
        server_side_apply(live, make_deployment(replicas=5), "ops", False, True, "t2")
    assert (
        exc.value.message == 'Apply failed with 1 conflict: conflict with "ci" using apps/v1: .spec.replicas'
    )
    assert exc.value.causes() == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "ci" using apps/v1',
            "field": ".spec.replicas",
        }
    ]
    forced = server_side_apply(live, make_deployment(replicas=5), "ops", True, True, "t2")
    assert forced["spec"]["replicas"] == 5
    owners = {e["manager"]: e["fieldsV1"] for e in forced["metadata"]["managedFields"]}
    assert "f:replicas" in owners["ops"]["f:spec"]
    assert "f:replicas" not in owners["ci"]["f:spec"]


def test_apply_with_the_same_value_shares_ownership_without_conflict() -> None:
    live = server_side_apply(None, make_deployment(replicas=2), "ci", False, True, "t1")
    shared = server_side_apply(live, make_deployment(replicas=2), "ops", False, True, "t2")
    assert {e["manager"] for e in shared["metadata"]["managedFields"]} == {"ci", "ops"}


def test_update_takes_over_changed_fields_and_then_apply_conflicts() -> None:
    live = server_side_apply(None, make_deployment(replicas=2), "ci", False, True, "t1")
    scaled = copy.deepcopy(live)
    scaled["spec"]["replicas"] = 4
    scaled["metadata"]["managedFields"] = record_update(live, scaled, "kubectl", True, "t2")
    with pytest.raises(ApplyConflict) as exc:
        server_side_apply(scaled, make_deployment(replicas=2), "ci", False, True, "t3")
    assert [c.manager for c in exc.value.conflicts] == ["kubectl"]


def test_applying_the_same_configuration_twice_changes_nothing() -> None:
    config = make_deployment()
    once = server_side_apply(None, config, "ci", False, True, "t1")
    twice = server_side_apply(once, config, "ci", False, True, "t2")
    assert twice == once  # managedFields times included: nothing to write


def test_record_update_without_changes_keeps_managed_fields() -> None:
    live = server_side_apply(None, make_deployment(), "ci", False, True, "t1")
    assert record_update(live, copy.deepcopy(live), "other", True, "t2") == live["metadata"]["managedFields"]
