"""One bad object blocks nothing: each controller isolates items, backs the bad one off, says why on it.

Bad templates are written through the store directly (admission refuses them at the API today, but rows
written before that, CRD kinds and bugs must still not stop the batch).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from federation.controllers import execution, isolation
from federation.controllers.isolation import RetryBook
from federation.store.claims import Backoff
from federation.store.events import EventRepository
from federation.store.tables import ResourceTemplateRow
from tests.controllers.test_execution_support import Harness as ExecutionHarness
from tests.controllers.test_execution_support import harness, nginx
from tests.controllers.test_scheduler import Harness, deployment, policy

__all__ = ["harness"]


@pytest.fixture
def scheduling(database_url: str) -> Iterator[Harness]:
    running = Harness(database_url)
    yield running
    running.close()


def _events(h: Any, kind: str, name: str) -> list[tuple[str, str, str]]:
    with h.uow() as session:
        return [
            (e.type, e.reason, e.message) for e in EventRepository(session).for_object(kind, "default", name)
        ]


def _template_claim(h: Harness, name: str) -> tuple[bool, int, Any]:
    with h.uow() as session:
        row = session.execute(
            select(
                ResourceTemplateRow.needs_detection,
                ResourceTemplateRow.failures,
                ResourceTemplateRow.next_attempt_at,
            ).where(ResourceTemplateRow.name == name)
        ).one()
    return bool(row[0]), int(row[1]), row[2]


BAD_TEMPLATES = {
    "replicas null": {"replicas": None},
    "replicas abc": {"replicas": "abc"},
    "replicas a list": {"replicas": [3]},
    "cpu lots": {"cpu": "lots"},
    "requests a list": {"requests": ["cpu"]},
    "containers a string": {"containers": "nginx"},
    "spec a list": {"spec": ["replicas"]},
}


def _bad(name: str, defect: dict[str, Any]) -> dict[str, Any]:
    body = deployment(name, 2)
    container = body["spec"]["template"]["spec"]["containers"][0]
    if "replicas" in defect:
        body["spec"]["replicas"] = defect["replicas"]
    if "cpu" in defect:
        container["resources"]["requests"]["cpu"] = defect["cpu"]
    if "requests" in defect:
        container["resources"]["requests"] = defect["requests"]
    if "containers" in defect:
        body["spec"]["template"]["spec"]["containers"] = defect["containers"]
    if "spec" in defect:
        body["spec"] = defect["spec"]
    return body


@pytest.mark.parametrize("defect", BAD_TEMPLATES.values(), ids=list(BAD_TEMPLATES))
def test_a_bad_template_beside_a_good_one_the_good_one_is_bound(
    scheduling: Harness, defect: dict[str, Any]
) -> None:
    h = scheduling
    h.add_cluster("member1")
    h.create(policy("pp", {"clusterAffinity": {"clusterNames": ["member1"]}}, names=None))
    h.create(_bad("bad", defect))
    h.create(deployment("good", 2))
    h.run()
    assert h.placement("good-deployment") == {"member1": 2}
    needs, failures, retry_at = _template_claim(h, "bad")
    if failures:  # the detector could not read it: backed off and said why
        assert needs and retry_at is not None
        [(type_, reason, message)] = _events(h, "Deployment", "bad")
        assert (type_, reason) == ("Warning", "DetectionFailed")
        assert message
    else:  # the detector read what it could; nothing else may have failed because of it
        assert not needs


def test_a_failing_template_backs_off_and_an_edit_retries_it_at_once(
    scheduling: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = scheduling
    h.create(policy("pp", {"clusterAffinity": {"clusterNames": ["member1"]}}, names=None))
    h.create(deployment("bad", 2))
    h.create(deployment("good", 2))
    desired = execution_free_desired_binding(monkeypatch, failing="bad")
    h.detector.reconcile()
    assert _template_claim(h, "bad")[:2] == (True, 1)
    assert h.binding("good-deployment")["spec"]["replicas"] == 2
    assert h.detector.reconcile().processed == 0  # backing off: not even claimed
    h.clock.advance(1)
    h.detector.reconcile()
    assert _template_claim(h, "bad")[:2] == (True, 2)  # 1 s, then 2 s
    assert [e[1] for e in _events(h, "Deployment", "bad")] == ["DetectionFailed"]  # counted, not repeated
    desired.failing = None
    edited = deployment("bad", 5)
    h.replace(edited)  # a user's fix is looked at now, not after the back-off
    h.detector.reconcile()
    assert _template_claim(h, "bad")[:2] == (False, 0)
    assert h.binding("bad-deployment")["spec"]["replicas"] == 5


class _FailFor:
    """Wraps a function so that it raises for one object name."""

    def __init__(self, real: Any, failing: str | None) -> None:
        self.real, self.failing = real, failing

    def __call__(self, template: dict[str, Any], *args: Any) -> Any:
        if template["metadata"]["name"] == self.failing:
            raise RuntimeError(f"cannot handle {self.failing}")
        return self.real(template, *args)


def execution_free_desired_binding(monkeypatch: pytest.MonkeyPatch, failing: str) -> _FailFor:
    from federation.controllers import detector

    wrapper = _FailFor(detector.detection.desired_binding, failing)
    monkeypatch.setattr(detector.detection, "desired_binding", wrapper)
    return wrapper


def test_execution_isolates_a_binding_whose_works_cannot_be_written(
    harness: ExecutionHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = harness
    h.execution.retries = RetryBook(Backoff(initial=1, maximum=60))
    good = h.add_template(nginx(replicas=2))
    bad_template = copy.deepcopy(nginx(replicas=2))
    bad_template["metadata"]["name"] = "broken"
    bad = h.add_template(bad_template)
    h.add_binding(good, [{"name": "member1", "replicas": 2}])
    h.add_binding(bad, [{"name": "member1", "replicas": 2}])
    real = execution.rendering.plan_works

    def plan_works(binding: dict[str, Any], *args: Any) -> Any:
        if binding["spec"]["resource"]["name"] == "broken":
            raise RuntimeError("the Work cannot be written")
        return real(binding, *args)

    monkeypatch.setattr(execution.rendering, "plan_works", plan_works)
    h.execution.reconcile()
    assert set(h.works()) == {"member1"}  # the good binding's Work, despite the bad one
    [(type_, reason, message)] = _events(h, "ResourceBinding", "broken-deployment")
    assert (type_, reason) == ("Warning", "SyncWorkFailed") and "cannot be written" in message
    assert h.execution.retries.failures(_binding_id(h, "broken-deployment")) == 1
    monkeypatch.setattr(execution.rendering, "plan_works", real)
    h.execution.reconcile()  # still backing off: nothing new
    assert len(_works_of(h, "broken")) == 0
    h.clock.advance(1)
    h.execution.reconcile()  # due: retried and written
    assert len(_works_of(h, "broken")) == 1
    assert h.execution.retries.failures(_binding_id(h, "broken-deployment")) == 0


def _binding_id(h: ExecutionHarness, name: str) -> int:
    from federation.store.tables import ResourceBindingRow

    with h.uow() as session:
        return int(session.scalar(select(ResourceBindingRow.id).where(ResourceBindingRow.name == name)))


def _works_of(h: ExecutionHarness, template_name: str) -> list[Any]:
    from federation.store.tables import WorkRow

    with h.uow() as session:
        return list(session.scalars(select(WorkRow.name).where(WorkRow.name.like(f"{template_name}-%"))))


def test_isolated_rethrows_an_outage() -> None:
    from sqlalchemy.exc import OperationalError

    class Session:
        is_active = True

        def begin_nested(self) -> Any:
            from contextlib import nullcontext

            return nullcontext()

    def lost() -> None:
        raise OperationalError("SELECT 1", {}, Exception("server closed the connection"))

    with pytest.raises(OperationalError):
        isolation.isolated(Session(), lost)  # type: ignore[arg-type]
    assert isinstance(isolation.isolated(Session(), lambda: 1 / 0), isolation.Failed)  # type: ignore[arg-type]


def test_scheduler_isolates_a_binding_whose_decision_cannot_be_written(
    scheduling: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch's decisions go out in one transaction; a binding that fails it is written alone, backs
    off and says why, and the others are scheduled all the same."""
    from federation.controllers import scheduler

    h = scheduling
    h.add_cluster("member1")
    h.create(policy("pp", {"clusterAffinity": {"clusterNames": ["member1"]}}, names=None))
    for name in ("good", "bad", "fine"):
        h.create(deployment(name, 2))
    real = scheduler.planner.stored_status
    h.detector.reconcile()
    bad_uid = h.binding("bad-deployment")["spec"]["resource"]["uid"]

    def stored_status_for(status: dict[str, Any]) -> dict[str, Any]:
        if status.get("_bad"):  # marked by apply_result below: the bad binding's write fails
            raise RuntimeError("this decision cannot be written")
        return real(status)

    real_apply = scheduler.planner.apply_result

    def apply_result(binding: dict[str, Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
        out = real_apply(binding, *args, **kwargs)
        if binding["spec"]["resource"]["uid"] == bad_uid:
            out["status"]["_bad"] = True
        return out

    monkeypatch.setattr(scheduler.planner, "apply_result", apply_result)
    monkeypatch.setattr(scheduler.planner, "stored_status", stored_status_for)
    h.scheduler.reconcile()
    assert h.placement("good-deployment") == {"member1": 2}
    assert h.placement("fine-deployment") == {"member1": 2}
    assert h.placement("bad-deployment") == {}
    events = _events(h, "ResourceBinding", "bad-deployment")
    assert [(t, r) for t, r, _ in events] == [("Warning", "ScheduleBindingFailed")]
    assert "cannot be written" in events[0][2]
    needs, retry_at = h.claim_state("bad-deployment")
    assert needs and retry_at is not None  # backed off, still queued
    monkeypatch.setattr(scheduler.planner, "apply_result", real_apply)
    monkeypatch.setattr(scheduler.planner, "stored_status", real)
    h.clock.advance(60)
    h.scheduler.reconcile()
    assert h.placement("bad-deployment") == {"member1": 2}
