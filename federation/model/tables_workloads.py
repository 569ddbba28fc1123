"""kube-apiserver's printers for the workload kinds (Deployment, StatefulSet, ReplicaSet, DaemonSet, Job,
CronJob) and the label/selector formatting every printer shares.

Invariant: cells read the stored JSON defensively; defaults are the API's (a Deployment without
``spec.replicas`` wants 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from federation.model.labels import LabelSelector
from federation.model.tables import AGE, NAME, Cell, Column, Obj, get, since

_CONTAINERS = "Names of each container in the template."
_IMAGES = "Images referenced by each container in the template."


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def format_labels(labels: Any) -> str:
    """``labels.FormatLabels``: ``k=v`` pairs sorted by key, ``<none>`` when empty."""
    pairs = sorted(_mapping(labels).items())
    return ",".join(f"{k}={v}" for k, v in pairs) or "<none>"


def selector_text(selector: Any) -> str:
    """``LabelSelectorAsSelector(...).String()``: requirements sorted by key ("" for none, ``<invalid>``)."""
    if not isinstance(selector, Mapping) or not selector:
        return ""
    try:
        requirements = LabelSelector.model_validate(selector).to_selector().requirements
    except ValueError:
        return "<invalid>"
    return ",".join(str(r) for r in sorted(requirements, key=lambda r: r.key))


def format_selector(selector: Any) -> str:
    """``metav1.FormatLabelSelector``: as ``selector_text`` but ``<none>`` when empty."""
    return selector_text(selector) or "<none>"


def _pod_spec(*path: str) -> Cell:
    return lambda obj, _now: _mapping(get(obj, "spec", *path, "template", "spec"))


def _containers(spec_of: Cell) -> tuple[Column, Column]:
    def names(obj: Obj, now: datetime) -> str:
        return ",".join(
            str(_mapping(c).get("name") or "") for c in _items(spec_of(obj, now).get("containers"))
        )

    def images(obj: Obj, now: datetime) -> str:
        return ",".join(
            str(_mapping(c).get("image") or "") for c in _items(spec_of(obj, now).get("containers"))
        )

    return (
        Column("Containers", names, priority=1, description=_CONTAINERS),
        Column("Images", images, priority=1, description=_IMAGES),
    )


def _status_int(*path: str) -> Cell:
    return lambda obj, _now: _int(get(obj, "status", *path))


def _selector(*path: str, formatted: bool = True) -> Column:
    text = format_selector if formatted else selector_text
    return Column("Selector", lambda obj, _now: text(get(obj, "spec", *path, "selector")), priority=1)


def _desired(obj: Obj) -> int:
    return _int(get(obj, "spec", "replicas"), 1)


_TEMPLATE = _pod_spec()
DEPLOYMENT = (
    NAME,
    Column("Ready", lambda o, _n: f"{_int(get(o, 'status', 'readyReplicas'))}/{_desired(o)}"),
    Column("Up-to-date", _status_int("updatedReplicas")),
    Column("Available", _status_int("availableReplicas")),
    AGE,
    *_containers(_TEMPLATE),
    _selector(formatted=False),
)
STATEFUL_SET = (
    NAME,
    Column("Ready", lambda o, _n: f"{_int(get(o, 'status', 'readyReplicas'))}/{_desired(o)}"),
    AGE,
    *_containers(_TEMPLATE),
)
REPLICA_SET = (
    NAME,
    Column("Desired", lambda o, _n: _desired(o), "integer"),
    Column("Current", _status_int("replicas"), "integer"),
    Column("Ready", _status_int("readyReplicas"), "integer"),
    AGE,
    *_containers(_TEMPLATE),
    _selector(),
)
DAEMON_SET = (
    NAME,
    Column("Desired", _status_int("desiredNumberScheduled"), "integer"),
    Column("Current", _status_int("currentNumberScheduled"), "integer"),
    Column("Ready", _status_int("numberReady"), "integer"),
    Column("Up-to-date", _status_int("updatedNumberScheduled"), "integer"),
    Column("Available", _status_int("numberAvailable"), "integer"),
    Column("Node Selector", lambda o, n: format_labels(_TEMPLATE(o, n).get("nodeSelector"))),
    AGE,
    *_containers(_TEMPLATE),
    _selector(),
)


def _condition_true(obj: Obj, kind: str) -> bool:
    for condition in _items(get(obj, "status", "conditions")):
        if _mapping(condition).get("type") == kind:
            return _mapping(condition).get("status") == "True"
    return False


def _job_status(obj: Obj, _now: datetime) -> str:
    for kind, text in (("Complete", "Complete"), ("Failed", "Failed")):
        if _condition_true(obj, kind):
            return text
    if get(obj, "metadata", "deletionTimestamp"):
        return "Terminating"
    for kind in ("Suspended", "FailureTarget"):
        if _condition_true(obj, kind):
            return kind
    return "Running"


def _job_completions(obj: Obj, _now: datetime) -> str:
    succeeded = _int(get(obj, "status", "succeeded"))
    completions = get(obj, "spec", "completions")
    if isinstance(completions, int):
        return f"{succeeded}/{completions}"
    parallelism = _int(get(obj, "spec", "parallelism"))
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def _job_duration(obj: Obj, now: datetime) -> str:
    start = get(obj, "status", "startTime")
    if not start:
        return ""
    completed = get(obj, "status", "completionTime")
    if not completed:
        return since(start, now)
    end = datetime.fromisoformat(str(completed).replace("Z", "+00:00"))
    return since(start, end)


JOB = (
    NAME,
    Column("Status", _job_status, description="Status of the job."),
    Column("Completions", _job_completions),
    Column("Duration", _job_duration, description="Time required to complete the job."),
    AGE,
    *_containers(_TEMPLATE),
    _selector(),
)
_JOB_TEMPLATE = _pod_spec("jobTemplate", "spec")


def _bool_ptr(value: Any) -> str:
    return "True" if value is True else "False"


CRON_JOB = (
    NAME,
    Column("Schedule", lambda o, _n: get(o, "spec", "schedule") or ""),
    Column("Timezone", lambda o, _n: get(o, "spec", "timeZone") or "<none>"),
    Column("Suspend", lambda o, _n: _bool_ptr(get(o, "spec", "suspend")), "boolean"),
    Column("Active", lambda o, _n: len(_items(get(o, "status", "active"))), "integer"),
    Column(
        "Last Schedule",
        lambda o, n: (
            since(get(o, "status", "lastScheduleTime"), n)
            if get(o, "status", "lastScheduleTime")
            else "<none>"
        ),
    ),
    AGE,
    *_containers(_JOB_TEMPLATE),
    _selector("jobTemplate", "spec"),
)
