"""The scheduler and a binder extender (kube-scheduler's ``bindVerb``) over a real HTTP extender written to
kube-scheduler's wire, on both backends: every target of a decision is bound (``ExtenderBindingArgs``)
after the decision and before the write; a bind error leaves the binding unscheduled (or on its previous
placement) and retried with back-off; an ignorable binder's error does not stop the write."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from datetime import timedelta
from typing import Any

import pytest

from federation.extenders import build_extenders, close_extenders
from federation.store.repository import ObjectRepository
from tests.controllers.test_scheduler import T0, Harness, deployment, policy
from tests.extenders.extender_servers import KubeExtender, serving

STATIC = {
    "replicaScheduling": {
        "replicaSchedulingType": "Divided",
        "weightPreference": {
            "staticWeightList": [
                {"targetCluster": {"clusterNames": ["member1"]}, "weight": 1},
                {"targetCluster": {"clusterNames": ["member2"]}, "weight": 2},
            ]
        },
    }
}
BINDING = "web-deployment"
Start = Callable[..., tuple[Harness, KubeExtender, str]]


@pytest.fixture
def start(database_url: str) -> Iterator[Start]:
    """``start(**extender_entry)``: a harness whose scheduler has one binder extender on a live server."""
    with ExitStack() as stack:

        def started(**entry: Any) -> tuple[Harness, KubeExtender, str]:
            kube = KubeExtender()
            url = stack.enter_context(serving(kube))
            extenders = build_extenders([{"urlPrefix": url, "apiVersion": "v1", "bindVerb": "bind", **entry}])
            stack.callback(close_extenders, extenders)
            harness = Harness(database_url, extenders=extenders)
            stack.callback(harness.close)
            harness.add_cluster("member1")
            harness.add_cluster("member2")
            harness.create(deployment("web", 3))
            harness.create(policy("web", STATIC, ["web"]))
            return harness, kube, url

        yield started


def template_uid(harness: Harness) -> str:
    with harness.uow() as session:
        template = ObjectRepository(session, "Deployment", "apps/v1").get("default", "web")
    assert template is not None
    return str(template["metadata"]["uid"])


def bound_nodes(kube: KubeExtender) -> list[str]:
    return [args["node"] for verb, args in kube.calls if verb == "bind"]


def test_every_target_is_bound_before_the_write(start: Start) -> None:
    harness, kube, _ = start()
    assert harness.run() == 1
    assert harness.placement(BINDING) == {"member1": 1, "member2": 2}
    uid = template_uid(harness)
    assert kube.calls == [
        ("bind", {"podName": "web", "podNamespace": "default", "podUID": uid, "node": "member1"}),
        ("bind", {"podName": "web", "podNamespace": "default", "podUID": uid, "node": "member2"}),
    ]
    [decision] = harness.decisions(BINDING)
    assert decision.result == "Success" and "bind" not in decision.explanation


def test_a_bind_error_leaves_the_binding_unscheduled_and_retried_with_backoff(start: Start) -> None:
    harness, kube, url = start()
    kube.refuse_bind = {"member2"}
    assert harness.run() == 1
    assert harness.placement(BINDING) == {}  # nothing written
    condition = harness.condition(BINDING)
    assert (condition["status"], condition["reason"]) == ("False", "SchedulerError")
    assert condition["message"] == (
        f"extender {url} failed to bind default/web to cluster member2: node member2 refused the pod"
    )
    [decision] = harness.decisions(BINDING)
    assert decision.result == "SchedulerError"
    assert decision.explanation["bind"] == {
        "extender": url,
        "cluster": "member2",
        "error": "node member2 refused the pod",
    }
    retry_at = T0 + timedelta(seconds=1)
    assert harness.claim_state(BINDING) == (True, retry_at)
    calls = len(kube.calls)
    assert harness.run() == 0 and len(kube.calls) == calls  # not before its retry time
    kube.refuse_bind.clear()
    harness.clock.current = retry_at
    assert harness.run() == 1
    assert harness.placement(BINDING) == {"member1": 1, "member2": 2}
    assert harness.condition(BINDING)["reason"] == "Success"
    assert harness.claim_state(BINDING) == (False, None)
    assert bound_nodes(kube)[-2:] == ["member1", "member2"]


def test_a_bind_error_keeps_the_previous_placement(start: Start) -> None:
    harness, kube, _ = start()
    harness.run()
    assert harness.placement(BINDING) == {"member1": 1, "member2": 2}
    kube.refuse_bind = {"member1"}
    harness.replace(deployment("web", 6))
    harness.run()
    assert harness.placement(BINDING) == {"member1": 1, "member2": 2}
    assert harness.condition(BINDING)["reason"] == "SchedulerError"
    assert [d.result for d in harness.decisions(BINDING)] == ["SchedulerError", "Success"]  # newest first


def test_an_ignorable_binders_error_does_not_stop_the_write(start: Start) -> None:
    harness, kube, _ = start(ignorable=True)
    kube.refuse_bind = {"member1", "member2"}
    assert harness.run() == 1
    assert harness.placement(BINDING) == {"member1": 1, "member2": 2}
    assert harness.condition(BINDING)["reason"] == "Success"
    assert bound_nodes(kube) == ["member1"]  # the first refusal skipped the binder, as kube-scheduler does


def test_a_binder_not_interested_in_the_binding_is_not_called(start: Start) -> None:
    harness, kube, _ = start(managedResources=["nvidia.com/gpu"])
    assert harness.run() == 1
    assert harness.placement(BINDING) == {"member1": 1, "member2": 2}
    assert kube.calls == []
