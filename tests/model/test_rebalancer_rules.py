"""The pure WorkloadRebalancer rules (``model/rebalancing``, ``model/rebalancer.canonical_form``) as tables:
Karmada's modification rules, trigger times, the verdict on one entry, finishTime, the TTL deadline and
the alias form."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from federation.model.rebalancer import canonical_form
from federation.model.rebalancing import (
    Action,
    BindingState,
    Entry,
    LatestDecision,
    Verdict,
    Workload,
    after_trigger,
    judge,
    next_status,
    observed_entries,
    settle,
    sync_workloads,
    trigger_for_added,
    ttl_deadline,
)
from federation.model.validation import validate_object

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
LATER = T0 + timedelta(minutes=5)
A = Workload("apps/v1", "Deployment", "a", "default")
B = Workload("apps/v1", "Deployment", "b", "default")
ROLE = Workload("rbac.authorization.k8s.io/v1", "ClusterRole", "reader")


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


# -- modification rules -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "spec", "observed", "expected"),
    [
        ("new workloads get pending entries at the add time", [A, B], [], [(A, "", LATER), (B, "", LATER)]),
        ("a kept workload keeps its entry", [A], [Entry(A, T0, "Successful")], [(A, "Successful", T0)]),
        ("a kept pending entry keeps its trigger", [A], [Entry(A, T0)], [(A, "", T0)]),
        (
            "removed after success: kept",
            [B],
            [Entry(A, T0, "Successful")],
            [(A, "Successful", T0), (B, "", LATER)],
        ),
        (
            "removed while failed: dropped",
            [B],
            [Entry(A, T0, "Failed", "ReferencedBindingNotFound")],
            [(B, "", LATER)],
        ),
        ("removed while pending: dropped", [B], [Entry(A, T0)], [(B, "", LATER)]),
        (
            "a modified entry is a removal plus an addition",
            [Workload("apps/v1", "Deployment", "a", "other")],
            [Entry(A, T0, "Successful")],
            [(A, "Successful", T0), (Workload("apps/v1", "Deployment", "a", "other"), "", LATER)],
        ),
        (
            "sorted by apiVersion kind namespace name",
            [B, ROLE, A],
            [],
            [(A, "", LATER), (B, "", LATER), (ROLE, "", LATER)],
        ),
    ],
)
def test_sync_workloads(
    case: str, spec: list[Workload], observed: list[Entry], expected: list[tuple]
) -> None:
    entries = sync_workloads(spec, observed, LATER)
    assert [(e.workload, e.result, e.triggered_at) for e in entries] == expected, case


def rebalancer(generation: int = 1, status: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metadata": {"name": "r", "generation": generation, "creationTimestamp": "2026-03-01T12:00:00Z"},
        "spec": {"workloads": [A.to_dict()]},
    }
    if status is not None:
        body["status"] = status
    return body


@pytest.mark.parametrize(
    ("case", "body", "expected"),
    [
        ("first sync of generation 1: the creation (Karmada)", rebalancer(), T0),
        ("first seen at generation 2: which were there at creation is unknown", rebalancer(2), LATER),
        ("added after the first sync: the time seen", rebalancer(2, {"observedGeneration": 1}), LATER),
    ],
)
def test_trigger_for_added(case: str, body: dict[str, Any], expected: datetime) -> None:
    assert trigger_for_added(body, LATER + timedelta(microseconds=700)) == expected, case


def test_entries_round_trip_and_an_entry_without_a_trigger_stands_for_the_creation() -> None:
    entry = Entry(ROLE, T0, "Failed", "ReferencedBindingNotFound")
    assert entry.to_dict() == {
        "workload": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": "reader"},
        "result": "Failed",
        "reason": "ReferencedBindingNotFound",
        "rescheduleTriggeredAt": "2026-03-01T12:00:00Z",
    }
    karmadas = {"observedWorkloads": [{"workload": A.to_dict(), "result": "Successful"}]}
    assert observed_entries({**rebalancer(status=karmadas)}) == [Entry(A, T0, "Successful")]
    assert observed_entries(rebalancer(status={"observedWorkloads": [entry.to_dict()]})) == [entry]


def test_binding_keys() -> None:
    assert A.binding_key() == ("default", "a-deployment")
    assert ROLE.binding_key() == ("", "reader-clusterrole")  # a ClusterResourceBinding
    assert Workload("v1", "ConfigMap", "x:y", "ns").binding_key() == ("ns", "x.y-configmap")


# -- the verdict on one pending entry ---------------------------------------------------------------------


def state(
    triggered: datetime | None, scheduled: datetime | None, decision: LatestDecision | None = None
) -> BindingState:
    return BindingState(generation=4, triggered_at=triggered, last_scheduled=scheduled, decision=decision)


ENTRY = Entry(A, at(10))


@pytest.mark.parametrize(
    ("case", "binding", "action", "reason"),
    [
        ("no binding", None, Action.NOT_FOUND, "ReferencedBindingNotFound"),
        ("never triggered", state(None, at(0)), Action.TRIGGER, ""),
        ("triggered earlier", state(at(5), at(6)), Action.TRIGGER, ""),
        ("a later trigger is never moved back", state(at(20), at(0)), Action.WAIT, ""),
        ("triggered, not scheduled since", state(at(10), at(0)), Action.WAIT, ""),
        ("scheduled at the trigger's second", state(at(10), at(10)), Action.SUCCEEDED, ""),
        ("scheduled after the trigger", state(at(10), at(12)), Action.SUCCEEDED, ""),
        (
            "the scheduler failed the spec carrying the trigger",
            state(at(10), at(0), LatestDecision(4, "NoClusterFit", "0/2 clusters are available")),
            Action.FAILED,
            "NoClusterFit",
        ),
        (
            "a failure of an older spec says nothing yet",
            state(at(10), at(0), LatestDecision(3, "Unschedulable")),
            Action.WAIT,
            "",
        ),
        (
            "a success of an older spec says nothing",
            state(at(10), at(0), LatestDecision(3, "Success")),
            Action.WAIT,
            "",
        ),
    ],
)
def test_judge(case: str, binding: BindingState | None, action: Action, reason: str) -> None:
    verdict = judge(ENTRY, binding)
    assert (verdict.action, verdict.reason) == (action, reason), case


def test_after_the_trigger_is_written_only_a_schedule_at_or_after_it_counts() -> None:
    failed = LatestDecision(4, "Unschedulable")  # of the spec before the trigger: the write bumped it
    assert after_trigger(ENTRY, state(at(10), at(0), failed)).action is Action.WAIT
    assert after_trigger(ENTRY, state(at(10), at(11))).action is Action.SUCCEEDED


@pytest.mark.parametrize(
    ("action", "reason", "expected"),
    [
        (Action.SUCCEEDED, "", ("Successful", "")),
        (Action.NOT_FOUND, "ReferencedBindingNotFound", ("Failed", "ReferencedBindingNotFound")),
        (Action.FAILED, "Unschedulable", ("Failed", "Unschedulable")),
        (Action.WAIT, "", ("", "")),
    ],
)
def test_settle(action: Action, reason: str, expected: tuple[str, str]) -> None:
    settled = settle(ENTRY, Verdict(action, reason))
    assert (settled.result, settled.reason, settled.triggered_at) == (*expected, ENTRY.triggered_at)


# -- status and TTL ---------------------------------------------------------------------------------------

DONE = [Entry(A, T0, "Successful")]
DONE_STATUS = {
    "observedWorkloads": [Entry(A, T0, "Successful").to_dict()],
    "observedGeneration": 1,
    "finishTime": "2026-03-01T12:00:30Z",
}


@pytest.mark.parametrize(
    ("case", "old", "entries", "generation", "finish"),
    [
        ("pending: no finishTime", None, [Entry(A, T0)], 1, None),
        ("every entry has a result: now", None, DONE, 1, "2026-03-01T12:05:00Z"),
        ("nothing changed: kept", DONE_STATUS, DONE, 1, "2026-03-01T12:00:30Z"),
        ("the generation moved: now", DONE_STATUS, DONE, 2, "2026-03-01T12:05:00Z"),
        ("a finished one gets a pending entry: none", DONE_STATUS, [*DONE, Entry(B, LATER)], 2, None),
    ],
)
def test_next_status(
    case: str, old: dict[str, Any] | None, entries: list[Entry], generation: int, finish: str | None
) -> None:
    status = next_status(old, entries, generation, LATER)
    assert status.get("finishTime") == finish, case
    assert status["observedGeneration"] == generation


@pytest.mark.parametrize(
    ("case", "ttl", "finish", "expected"),
    [
        ("unset: kept", None, "2026-03-01T12:00:00Z", None),
        ("not finished: kept", 5, None, None),
        ("zero: at once", 0, "2026-03-01T12:00:00Z", T0),
        ("seconds after finishTime", 5, "2026-03-01T12:00:00Z", at(5)),
    ],
)
def test_ttl_deadline(case: str, ttl: int | None, finish: str | None, expected: datetime | None) -> None:
    body = {"spec": {"workloads": [A.to_dict()]}, "status": {}}
    if ttl is not None:
        body["spec"]["ttlSecondsAfterFinished"] = ttl
    if finish is not None:
        body["status"]["finishTime"] = finish
    assert ttl_deadline(body) == expected, case


# -- the alias form ---------------------------------------------------------------------------------------

REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "a", "namespace": "default"}
REF_B = {**REF, "name": "b"}


def manifest(api_version: str = "policy.karmada.io/v1alpha1", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": "WorkloadRebalancer", "metadata": {"name": "r"}, "spec": spec}


@pytest.mark.parametrize(
    ("case", "given", "spec", "warned"),
    [
        (
            "the alias group with workloads",
            manifest(workloads=[REF]),
            {"workloads": [REF]},
            ["policy.karmada.io"],
        ),
        (
            "the alias group with workload",
            manifest(workload=REF, ttlSecondsAfterFinished=5),
            {"workloads": [REF], "ttlSecondsAfterFinished": 5},
            ["policy.karmada.io", "spec.workload "],
        ),
        (
            "workloadList",
            manifest(workloadList=[REF, REF_B]),
            {"workloads": [REF, REF_B]},
            ["policy", "workloadList"],
        ),
        (
            "Karmada's group with an alias field",
            manifest("apps.karmada.io/v1alpha1", workload=REF),
            {"workloads": [REF]},
            ["spec.workload "],
        ),
        (
            "Karmada's form: unchanged",
            manifest("apps.karmada.io/v1alpha1", workloads=[REF]),
            {"workloads": [REF]},
            [],
        ),
    ],
)
def test_canonical_form(case: str, given: dict[str, Any], spec: dict[str, Any], warned: list[str]) -> None:
    converted = canonical_form(given)
    assert converted.manifest["apiVersion"] == "apps.karmada.io/v1alpha1", case
    assert converted.manifest["spec"] == spec
    assert converted.errors == ()
    assert len(converted.warnings) == len(warned)
    assert all(w in text for w, text in zip(warned, converted.warnings, strict=True))
    assert validate_object(converted.manifest) == []


@pytest.mark.parametrize(
    ("case", "given", "fields"),
    [
        ("two spellings", manifest(workloads=[REF], workload=REF), ["spec.workload"]),
        (
            "three spellings",
            manifest(workload=REF, workloadList=[REF], workloads=[]),
            ["spec.workload", "spec.workloadList"],
        ),
        ("workload must be an object", manifest(workload=[REF]), ["spec.workload"]),
        ("workloadList must be a list", manifest(workloadList=REF), ["spec.workloadList"]),
    ],
)
def test_canonical_form_refuses_what_it_cannot_convert(
    case: str, given: dict[str, Any], fields: list[str]
) -> None:
    converted = canonical_form(given)
    assert [e.field for e in converted.errors] == fields, case


def test_other_kinds_pass_untouched() -> None:
    policy = {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "spec": {"workload": 1},
    }
    converted = canonical_form(policy)
    assert (converted.manifest, converted.warnings, converted.errors) == (policy, (), ())
