"""Karmada's own unit-test cases (``tests/data/karmada-cases.json``, a copy of the reference's) as table rows:
taints and what they evict.

- noexecute-eviction, toleration-time, purge-mode: the taint manager (``failover.taint_verdict``, the
  controller's enablement gate, ``taint_manager.cluster_purge_mode``).
- cluster-taints: Ready's automatic NoSchedule taints (``cluster_status.planned_taints``).
- cluster-taint-policy: ClusterTaintPolicy evaluation (``taintpolicy.planned_taints``).
- cluster-health-threshold: covered case by case in ``tests/members/test_health.py``; here only a check
  that every such case is named there.

Each area has a small converter from the case's neutral input to our API; expected values are never
adapted. Times in the cases ("T", "T-1m", "now-2s", RFC 3339) are read against one fixed base (UTC).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from federation.controllers import cluster_status
from federation.controllers.runtime import Outcome
from federation.controllers.taint_manager import TaintManager, cluster_purge_mode
from federation.model import failover, taintpolicy
from federation.model.placement import Taint, Toleration
from federation.settings import FailoverSettings
from federation.store.manifest import format_timestamp

CASES_PATH = Path(__file__).parents[1] / "data" / "karmada-cases.json"
HEALTH_TESTS = Path(__file__).parents[1] / "members" / "test_health.py"
MY_AREAS = {
    "noexecute-eviction", "toleration-time", "purge-mode", "cluster-taints", "cluster-taint-policy",
}  # fmt: skip
HEALTH_AREA = "cluster-health-threshold"  # all its cases are in tests/members/test_health.py (checked below)


def _load(areas: set[str]) -> list[dict[str, Any]]:
    return [c for c in json.loads(CASES_PATH.read_text()) if c["area"] in areas]


CASES = _load(MY_AREAS)

# The Go tests' fixed time (taint_manager_test.go, taint_test.go): 2025-09-23T12:00:00Z.
BASE = datetime(2025, 9, 23, 12, 0, 0, tzinfo=UTC)
_RELATIVE = re.compile(r"^(?:T|now)(?:([+-])(\d+)([smh]))?$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours"}


def _time(text: str | None) -> datetime | None:
    """A case's time: None, "T"/"now" (the base), "T-1m"/"now-2s" (relative to it), or RFC 3339."""
    if text is None:
        return None
    match = _RELATIVE.match(text)
    if match is None:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    sign, amount, unit = match.groups()
    if sign is None:
        return BASE
    delta = timedelta(**{_UNITS[unit]: int(amount)})
    return BASE + delta if sign == "+" else BASE - delta


def _stamp(text: str | None) -> str | None:
    """A case's time as our manifests write it (``metav1.Time``)."""
    moment = _time(text)
    return None if moment is None else format_timestamp(moment)


# ---------------------------------------------------------------------------------------------- converters
def _taint(raw: Mapping[str, Any], effect: str | None = None) -> Taint:
    body = {k: v for k, v in raw.items() if k != "timeAdded"}
    if effect is not None:
        body["effect"] = effect
    return Taint.model_validate({**body, "timeAdded": _time(raw.get("timeAdded"))})


def _wait_seconds(verdict: failover.TaintVerdict, now: datetime) -> int:
    """Karmada's duration: 0 = evict now, -1 = tolerated for good, else seconds until the check again."""
    if verdict.evict:
        return 0
    if verdict.at is None:
        return -1
    return int((verdict.at - now).total_seconds())


class _NoDatabase:
    """A unit of work the disabled taint manager must never open."""

    def __call__(self) -> Any:
        raise AssertionError("the taint manager read the database although eviction is disabled")


class _Clock:
    def now(self) -> datetime:
        return BASE


def noexecute_eviction(inp: dict[str, Any]) -> dict[str, Any]:
    """``needEvictionWithCurrentTime``. Karmada's ``--enable-no-execute-taint-eviction`` is our
    ``failover.enabled``: off, the controller's pass does nothing at all (no read, no memo of a deadline);
    on, a pass judges a binding on a tainted cluster by ``failover.taint_verdict``."""
    if not inp["enable_no_execute_taint_eviction"]:
        manager = TaintManager(_NoDatabase(), _Clock(), FailoverSettings(enabled=False))  # type: ignore[arg-type]
        outcome = manager.reconcile()
        assert manager.pending() is False
        deadlines = [memo[2] for memo in manager._judged.values() if memo[2] is not None]
        wait = int((min(deadlines) - BASE).total_seconds()) if deadlines else -1
        return {"need_eviction": outcome != Outcome(), "wait_seconds": wait}
    now = _time(inp["now"])
    assert now is not None
    taints = [_taint(t) for t in inp["cluster_taints"]]
    tolerations = [Toleration.model_validate(t) for t in inp["placement_tolerations"]]
    verdict = failover.taint_verdict(taints, tolerations, now)
    return {"need_eviction": verdict.evict, "wait_seconds": _wait_seconds(verdict, now)}


def toleration_time(inp: dict[str, Any]) -> dict[str, Any]:
    """``GetMinTolerationTimeWithCurrentTime`` over the NoExecute taints (the Go test's taints carry
    ``Effect: NoExecute``; the case names the list for it) and the tolerations in use. Without a "now" the
    Go test's fixed time."""
    now = _time(inp.get("now")) or BASE
    taints = [_taint(t, effect="NoExecute") for t in inp["noexecute_taints"]]
    tolerations = [Toleration.model_validate(t) for t in inp["used_tolerations"]]
    return {"wait_seconds": _wait_seconds(failover.taint_verdict(taints, tolerations, now), now)}


def purge_mode(inp: dict[str, Any]) -> dict[str, Any]:
    """``getPurgeMode``: the global flag is ``failover.no_execute_taint_eviction_purge_mode``."""
    settings = FailoverSettings.model_validate(
        {"no_execute_taint_eviction_purge_mode": inp["global_no_execute_taint_eviction_purge_mode"]}
    )
    spec = {} if inp["binding_failover"] is None else {"failover": inp["binding_failover"]}
    return {"purge_mode": cluster_purge_mode({"spec": spec}, settings.no_execute_taint_eviction_purge_mode)}


def cluster_taints(inp: dict[str, Any]) -> dict[str, Any]:
    """``taintClusterByCondition``. Karmada's test clears ``timeAdded`` before comparing (``cleanUpCluster``);
    so do we, after checking that an added taint is stamped now."""
    now = format_timestamp(BASE)
    before = [dict(t) for t in inp["taints_before"]]
    after = cluster_status.planned_taints(before, inp["ready_condition"], now)
    for taint in after:
        if taint not in before:
            assert taint["timeAdded"] == now, taint
    return {"taints_after": [{k: v for k, v in t.items() if k != "timeAdded"} for t in after]}


def _cluster(conditions: Mapping[str, str], taints: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {"name": "member"},
        "spec": {"taints": taints},
        "status": {"conditions": [{"type": k, "status": v} for k, v in conditions.items()]},
    }


PROBE = {"key": "probe", "effect": "NoSchedule"}


def taint_policy(inp: dict[str, Any]) -> dict[str, Any]:
    if "match_conditions" in inp:
        return _condition_matches(inp)
    return _add_taints(inp)


def _condition_matches(inp: dict[str, Any]) -> dict[str, Any]:
    """``conditionMatches``: as a policy's addOnConditions (the probe taint is added) and as its
    removeOnConditions (the probe taint is removed); both must agree."""
    conditions, match = inp["cluster_conditions"], inp["match_conditions"]
    adds = taintpolicy.ClusterTaintPolicySpec.model_validate({"addOnConditions": match, "taints": [PROBE]})
    removes = taintpolicy.ClusterTaintPolicySpec.model_validate(
        {"removeOnConditions": match, "taints": [PROBE]}
    )
    stamp = format_timestamp(BASE)
    added = any(
        t["key"] == "probe" for t in taintpolicy.planned_taints(_cluster(conditions, []), [adds], stamp)
    )
    tainted = _cluster(conditions, [{**PROBE, "timeAdded": stamp}])
    removed = not any(t["key"] == "probe" for t in taintpolicy.planned_taints(tainted, [removes], stamp))
    assert added == removed, (added, removed)
    return {"matches": added}


def _add_taints(inp: dict[str, Any]) -> dict[str, Any]:
    """``addTaintsOnCluster``: a policy whose addOnConditions hold on the cluster. Our timestamps are written
    back in the case's notation."""
    now = inp["now"]
    names = {_stamp(now): now, **{_stamp(t["timeAdded"]): t["timeAdded"] for t in inp["taints_before"]}}
    before = [{**t, "timeAdded": _stamp(t["timeAdded"])} for t in inp["taints_before"]]
    policy = taintpolicy.ClusterTaintPolicySpec.model_validate(
        {
            "addOnConditions": [{"conditionType": "Ready", "operator": "In", "statusValues": ["True"]}],
            "taints": inp["policy_taints"],
        }
    )
    stamp = _stamp(now)
    assert stamp is not None
    after = taintpolicy.planned_taints(_cluster({"Ready": "True"}, before), [policy], stamp)
    return {"taints_after": [{**t, "timeAdded": names[t["timeAdded"]]} for t in after]}


CONVERTERS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "noexecute-eviction": noexecute_eviction,
    "toleration-time": toleration_time,
    "purge-mode": purge_mode,
    "cluster-taints": cluster_taints,
    "cluster-taint-policy": taint_policy,
}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_karmada_case(case: dict[str, Any]) -> None:
    actual = CONVERTERS[case["area"]](case["input"])
    for key, want in case["expected"].items():
        assert actual.get(key) == want, (key, actual)


def test_every_listed_area_has_cases() -> None:
    assert {c["area"] for c in CASES} == MY_AREAS
    assert _load({HEALTH_AREA})


def test_every_health_threshold_case_is_in_the_health_tests() -> None:
    named = HEALTH_TESTS.read_text()
    missing = [c["id"] for c in _load({HEALTH_AREA}) if f'"{c["id"]} ' not in named]
    assert not missing, f"cluster-health-threshold cases not covered by {HEALTH_TESTS.name}: {missing}"
