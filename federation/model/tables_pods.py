"""kube-apiserver's printers for Pods, Nodes and Events (``printPod``, ``printNode``, ``printEvent``): the
three with real logic in their cells, kept apart from the one-liners of ``tables_builtin``.

Invariant: the same texts kubectl shows for the same object (``Init:1/2``, ``CrashLoopBackOff``,
``3 (5m ago)``, ``Ready,SchedulingDisabled``, ``deployment/web``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from federation.model.tables import AGE, NAME, Column, Obj, get, parse_time, since


def _items(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# -- Pod ----------------------------------------------------------------------------------------------


class _PodView:
    """What ``printPod`` derives from one pod: ready/total containers, the status reason, restarts."""

    def __init__(self, pod: Obj) -> None:
        self.pod = pod
        self.spec = get(pod, "spec") or {}
        self.status = get(pod, "status") or {}
        restartable = {c.get("name") for c in _items(self.spec.get("initContainers")) if _sidecar(c)}
        self.restartable = restartable
        self.total = len(_items(self.spec.get("containers"))) + len(restartable)
        self.ready = 0
        self.restarts = 0
        self.last_restart: datetime | None = None
        self.reason = str(self.status.get("reason") or self.status.get("phase") or "")
        if any(
            c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated"
            for c in _items(self.status.get("conditions"))
        ):
            self.reason = "SchedulingGated"

    def _restarted(self, container: Mapping[str, Any]) -> None:
        self.restarts += _int(container.get("restartCount"))
        finished = parse_time(get(container, "lastState", "terminated", "finishedAt"))
        if finished is not None and (self.last_restart is None or finished > self.last_restart):
            self.last_restart = finished

    def initializing(self) -> bool:
        """Walk the init containers as printPod does; True when one is still running or failed."""
        inits = _items(self.spec.get("initContainers"))
        for index, container in enumerate(_items(self.status.get("initContainerStatuses"))):
            self._restarted(container)
            state = container.get("state") or {}
            terminated, waiting = state.get("terminated"), state.get("waiting")
            if isinstance(terminated, Mapping) and _int(terminated.get("exitCode")) == 0:
                continue
            if container.get("name") in self.restartable and container.get("started") is True:
                self.ready += 1 if container.get("ready") else 0
                continue
            if isinstance(terminated, Mapping):
                self.reason = "Init:" + _terminated_reason(terminated)
            elif isinstance(waiting, Mapping) and waiting.get("reason") not in (None, "", "PodInitializing"):
                self.reason = f"Init:{waiting['reason']}"
            else:
                self.reason = f"Init:{index}/{len(inits)}"
            return True
        return False

    def containers(self) -> None:
        """The regular containers, last first (the first one's state wins, as in printPod)."""
        running = False
        for container in reversed(_items(self.status.get("containerStatuses"))):
            self._restarted(container)
            state = container.get("state") or {}
            waiting, terminated = state.get("waiting"), state.get("terminated")
            if isinstance(waiting, Mapping) and waiting.get("reason"):
                self.reason = str(waiting["reason"])
            elif isinstance(terminated, Mapping):
                self.reason = str(terminated.get("reason") or "") or _terminated_reason(terminated)
            elif container.get("ready") and isinstance(state.get("running"), Mapping):
                running = True
                self.ready += 1
        if self.reason == "Completed" and running:
            ready = any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in _items(self.status.get("conditions"))
            )
            self.reason = "Running" if ready else "NotReady"


def _sidecar(container: Mapping[str, Any]) -> bool:
    return container.get("restartPolicy") == "Always"


def _terminated_reason(terminated: Mapping[str, Any]) -> str:
    if terminated.get("reason"):
        return str(terminated["reason"])
    signal = _int(terminated.get("signal"))
    return f"Signal:{signal}" if signal else f"ExitCode:{_int(terminated.get('exitCode'))}"


def pod_summary(pod: Obj, now: datetime) -> tuple[str, str, str]:
    """(ready ``1/2``, status reason, restarts ``3 (5m ago)``) as ``kubectl get pods`` shows them."""
    view = _PodView(pod)
    initializing = view.initializing()
    initialized = any(
        c.get("type") == "Initialized" and c.get("status") == "True"
        for c in _items(view.status.get("conditions"))
    )
    if not initializing or initialized:
        view.restarts = 0  # only restartable init containers count from here, as printPod resets them
        view.last_restart = None
        for container in _items(view.status.get("initContainerStatuses")):
            if container.get("name") in view.restartable:
                view._restarted(container)
        view.containers()
    if get(pod, "metadata", "deletionTimestamp"):
        if view.status.get("reason") == "NodeLost":
            view.reason = "Unknown"
        elif view.status.get("phase") not in ("Succeeded", "Failed"):
            view.reason = "Terminating"
    restarts = str(view.restarts)
    if view.restarts and view.last_restart is not None:
        restarts = f"{view.restarts} ({since(view.last_restart.isoformat(), now)} ago)"
    return f"{view.ready}/{view.total}", view.reason, restarts


def _pod_ip(pod: Obj, _now: datetime) -> str:
    ips = _items(get(pod, "status", "podIPs"))
    return str(ips[0].get("ip") or "<none>") if ips else str(get(pod, "status", "podIP") or "<none>")


def _readiness_gates(pod: Obj, _now: datetime) -> str:
    gates = _items(get(pod, "spec", "readinessGates"))
    if not gates:
        return "<none>"
    true = {c.get("type") for c in _items(get(pod, "status", "conditions")) if c.get("status") == "True"}
    return f"{sum(1 for g in gates if g.get('conditionType') in true)}/{len(gates)}"


POD = (
    NAME,
    Column(
        "Ready", lambda o, n: pod_summary(o, n)[0], description="The aggregate readiness state of this pod."
    ),
    Column(
        "Status", lambda o, n: pod_summary(o, n)[1], description="The aggregate status of the containers."
    ),
    Column("Restarts", lambda o, n: pod_summary(o, n)[2], description="Restarts, and when the last one was."),
    AGE,
    Column("IP", _pod_ip, priority=1),
    Column("Node", lambda o, _n: get(o, "spec", "nodeName") or "<none>", priority=1),
    Column("Nominated Node", lambda o, _n: get(o, "status", "nominatedNodeName") or "<none>", priority=1),
    Column("Readiness Gates", _readiness_gates, priority=1),
)


# -- Node ---------------------------------------------------------------------------------------------


def _node_status(node: Obj, _now: datetime) -> str:
    ready = next((c for c in _items(get(node, "status", "conditions")) if c.get("type") == "Ready"), None)
    states = ["Unknown" if ready is None else ("Ready" if ready.get("status") == "True" else "NotReady")]
    if get(node, "spec", "unschedulable") is True:
        states.append("SchedulingDisabled")
    return ",".join(states)


def _node_roles(node: Obj, _now: datetime) -> str:
    roles = set()
    for key, value in (get(node, "metadata", "labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/") and key.removeprefix("node-role.kubernetes.io/"):
            roles.add(key.removeprefix("node-role.kubernetes.io/"))
        elif key == "kubernetes.io/role" and value:
            roles.add(str(value))
    return ",".join(sorted(roles)) or "<none>"


def _address(kind: str) -> Any:
    def cell(node: Obj, _now: datetime) -> str:
        found = (a.get("address") for a in _items(get(node, "status", "addresses")) if a.get("type") == kind)
        return str(next(found, None) or "<none>")

    return cell


def _node_info(field: str) -> Any:
    return lambda node, _now: get(node, "status", "nodeInfo", field) or "<unknown>"


NODE = (
    NAME,
    Column("Status", _node_status, description="The status of the node"),
    Column("Roles", _node_roles, description="The roles of the node"),
    AGE,
    Column("Version", lambda o, _n: get(o, "status", "nodeInfo", "kubeletVersion") or ""),
    Column("Internal-IP", _address("InternalIP"), priority=1),
    Column("External-IP", _address("ExternalIP"), priority=1),
    Column("OS-Image", _node_info("osImage"), priority=1),
    Column("Kernel-Version", _node_info("kernelVersion"), priority=1),
    Column("Container-Runtime", _node_info("containerRuntimeVersion"), priority=1),
)


# -- Event (core/v1 and events.k8s.io/v1 alike) -------------------------------------------------------


def _event_field(event: Obj, core: str, new: str) -> Any:
    """A field under its core/v1 name, or its events.k8s.io/v1 name."""
    value = get(event, *core.split("."))
    return value if value not in (None, "") else get(event, *new.split("."))


def _first_seen(event: Obj, now: datetime) -> str:
    return since(
        _event_field(event, "firstTimestamp", "deprecatedFirstTimestamp") or get(event, "eventTime"), now
    )


def _last_seen(event: Obj, now: datetime) -> str:
    observed = get(event, "series", "lastObservedTime")
    if observed:
        return since(observed, now)
    last = _event_field(event, "lastTimestamp", "deprecatedLastTimestamp")
    return since(last, now) if last else _first_seen(event, now)


def _count(event: Obj, _now: datetime) -> int:
    series = get(event, "series", "count")
    if isinstance(series, int):
        return series
    return _int(_event_field(event, "count", "deprecatedCount")) or 1


def _target(event: Obj, _now: datetime) -> str:
    involved = get(event, "involvedObject") or get(event, "regarding") or {}
    kind = str(involved.get("kind") or "").lower()
    return f"{kind}/{involved['name']}" if involved.get("name") else kind


def _source(event: Obj, _now: datetime) -> str:
    component = get(event, "source", "component") or get(event, "reportingComponent")
    component = component or get(event, "reportingController") or get(event, "deprecatedSource", "component")
    instance = get(event, "source", "host") or get(event, "reportingInstance") or ""
    return f"{component or ''}, {instance}" if instance else str(component or "")


EVENT = (
    Column("Last Seen", _last_seen),
    Column("Type", lambda o, _n: get(o, "type") or ""),
    Column("Reason", lambda o, _n: get(o, "reason") or ""),
    Column("Object", _target),
    Column("Subobject", lambda o, _n: get(o, "involvedObject", "fieldPath") or "", priority=1),
    Column("Source", _source, priority=1),
    Column("Message", lambda o, _n: str(get(o, "message") or get(o, "note") or "").strip()),
    Column("First Seen", _first_seen, priority=1),
    Column("Count", _count, priority=1),
    Column("Name", lambda o, _n: get(o, "metadata", "name") or "", priority=1, format="name"),
)
