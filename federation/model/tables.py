"""Server-side printing: the ``meta.k8s.io`` Table that ``kubectl get`` asks for (``Accept: application/json;
as=Table;v=v1;g=meta.k8s.io``), one column set per kind. Shared by the API server and the member simulator.

Columns, as kube-apiserver and Karmada print them:
- Karmada's CRD kinds: the ``additionalPrinterColumns`` their CRDs declare (charts/karmada/_crds/bases), read
  with JSONPath exactly as kube-apiserver reads any CRD's (``crd_columns``); a CRD without columns gets
  ``Age``. An applied CRD's kind uses its own declared columns the same way.
- Karmada's Cluster: karmada-aggregated-apiserver's printer (``pkg/printers/internalversion``).
- Kubernetes kinds: kube-apiserver's printers (``tables_builtin``); a kind without one gets the default
  ``Name``/``Created At``.

Invariants:
- Pure: the caller passes ``now``; ages are ``human_duration`` of ``now - creationTimestamp``, as
  apimachinery's ``duration.HumanDuration`` prints them.
- The server prints every column, priority 1 ("wide") included; kubectl hides priority > 0 unless ``-o wide``.
- Every row carries the object as ``includeObject`` says: ``Metadata`` (the default) a
  ``PartialObjectMetadata``, ``Object`` the whole object, ``None`` nothing.
- A cell function never raises on a malformed object: a missing or mistyped field prints as kube prints
  the zero value (or ``None``, which kubectl prints as ``<none>``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from federation.model.jsonpath import compile_path

Obj = Mapping[str, Any]
Cell = Callable[[Obj, datetime], Any]

TABLE_GROUP = "meta.k8s.io"
TABLE_VERSIONS = ("v1", "v1beta1")
INCLUDE_OBJECT = ("None", "Metadata", "Object")
NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although some resources "
    "may allow a client to request the generation of an appropriate name automatically."
)
AGE_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not "
    "guaranteed to be set in happens-before order across separate operations. Clients may not set this value."
)
COLUMN_TYPES = frozenset({"string", "integer", "number", "boolean", "date"})


@dataclass(frozen=True, slots=True)
class Column:
    """One column: its ``TableColumnDefinition`` and how a row's cell is computed."""

    name: str
    cell: Cell
    type: str = "string"
    priority: int = 0
    description: str = ""
    format: str = ""

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description or self.name,
            "priority": self.priority,
        }


def get(obj: Any, *path: str) -> Any:
    """The value at ``path`` or None (never raises on a malformed object)."""
    current = obj
    for key in path:
        if not isinstance(current, Mapping):
            return None
        current = current.get(key)
    return current


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def human_duration(seconds: float) -> str:
    """apimachinery's ``duration.HumanDuration``: ``45s``, ``3m20s``, ``15m``, ``5h10m``, ``3d4h``, ``2y30d``
    (up to 2 s in the future counts as now: clocks differ a little)."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes, hours = whole // 60, whole // 3600
    if minutes < 10:
        return _pair(minutes, "m", whole % 60, "s")
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return _pair(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        return _pair(days, "d", hours % 24, "h")
    if hours < 24 * 365 * 2:
        return f"{days}d"
    if hours < 24 * 365 * 8:
        return _pair(days // 365, "y", days % 365, "d")
    return f"{days // 365}y"


def _pair(big: int, big_unit: str, small: int, small_unit: str) -> str:
    return f"{big}{big_unit}" if small == 0 else f"{big}{big_unit}{small}{small_unit}"


def since(value: Any, now: datetime) -> str:
    """``translateTimestampSince``: the age of a timestamp, ``<unknown>`` without one."""
    stamp = parse_time(value)
    return "<unknown>" if stamp is None else human_duration((now - stamp).total_seconds())


def age(obj: Obj, now: datetime) -> str:
    return since(get(obj, "metadata", "creationTimestamp"), now)


def name_cell(obj: Obj, _now: datetime) -> Any:
    return get(obj, "metadata", "name") or ""


NAME = Column("Name", name_cell, format="name", description=NAME_DESCRIPTION)
AGE = Column("Age", age, description=AGE_DESCRIPTION)
# kube-apiserver's default table convertor, for kinds without a printer (Role, LimitRange, the CRD itself).
CREATED_AT = Column(
    "Created At",
    lambda obj, _now: get(obj, "metadata", "creationTimestamp"),
    "date",
    description=AGE_DESCRIPTION,
)
DEFAULT_COLUMNS: tuple[Column, ...] = (NAME, CREATED_AT)


# -- CRD printer columns ------------------------------------------------------------------------------


def crd_columns(declared: Iterable[Any] | None) -> tuple[Column, ...]:
    """The columns of a CRD version's ``additionalPrinterColumns``, Name first; ``Age`` when none are
    declared (as kube-apiserver adds). An entry whose JSONPath or type is unusable is left out."""
    columns = [c for c in (_crd_column(entry) for entry in declared or ()) if c is not None]
    if not columns:
        columns = [
            Column("Age", _crd_cell("date", ".metadata.creationTimestamp"), "date", 0, AGE_DESCRIPTION)
        ]
    return (NAME, *columns)


def _crd_column(entry: Any) -> Column | None:
    if not isinstance(entry, Mapping):
        return None
    name, kind, path = entry.get("name"), entry.get("type"), entry.get("jsonPath")
    if not isinstance(name, str) or kind not in COLUMN_TYPES or not isinstance(path, str):
        return None
    try:
        cell = _crd_cell(str(kind), path)
    except ValueError:
        return None
    priority = entry.get("priority")
    description = entry.get("description")
    return Column(
        name,
        cell,
        str(kind),
        priority if isinstance(priority, int) and not isinstance(priority, bool) else 0,
        description if isinstance(description, str) else "",
        str(entry.get("format") or ""),
    )


def _crd_cell(kind: str, path: str) -> Cell:
    compiled = compile_path(path)

    def cell(obj: Obj, now: datetime) -> Any:
        found = compiled.find(obj)
        return None if not found else json_cell(kind, found[0], now)

    return cell


def json_cell(kind: str, value: Any, now: datetime) -> Any:
    """apiextensions' ``cellForJSONValue``: the first JSONPath result as the column type wants it."""
    if value is None:
        return None
    if kind == "string":
        return _text(value)
    if kind == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if kind == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "date" and isinstance(value, str):
        stamp = parse_time(value)
        return "<invalid>" if stamp is None else human_duration((now - stamp).total_seconds())
    return None


def _text(value: Any) -> str:
    """JSONPath ``PrintResults`` of one value: maps and lists as compact JSON, scalars as text."""
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# -- Karmada's kinds ----------------------------------------------------------------------------------


def _printer_columns(*entries: tuple[str, str, str]) -> tuple[Column, ...]:
    return crd_columns([{"name": n, "type": t, "jsonPath": p} for n, t, p in entries])


_AGE_ENTRY = ("AGE", "date", ".metadata.creationTimestamp")
_POLICY = _printer_columns(
    ("CONFLICT-RESOLUTION", "string", ".spec.conflictResolution"),
    ("PRIORITY", "string", ".spec.priority"),
    _AGE_ENTRY,
)
_BINDING = _printer_columns(
    ("SCHEDULED", "string", '.status.conditions[?(@.type=="Scheduled")].status'),
    ("FULLYAPPLIED", "string", '.status.conditions[?(@.type=="FullyApplied")].status'),
    _AGE_ENTRY,
)
_WORK = _printer_columns(
    ("WORKLOAD-KIND", "string", ".spec.workload.manifests[*].kind"),
    ("APPLIED", "string", '.status.conditions[?(@.type=="Applied")].status'),
    _AGE_ENTRY,
)
_AGE_ONLY = _printer_columns(_AGE_ENTRY)


def _cluster_ready(obj: Obj, _now: datetime) -> str:
    for condition in get(obj, "status", "conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return str(condition.get("status") or "")
    return "Unknown"


def _optional(*path: str) -> Cell:
    return lambda obj, _now: get(obj, *path) or "<none>"


def _zones(obj: Obj, _now: datetime) -> str:
    zones = get(obj, "spec", "zones") or ([get(obj, "spec", "zone")] if get(obj, "spec", "zone") else [])
    return ",".join(str(z) for z in zones) or "<none>"


_CLUSTER = (
    NAME,
    Column("Version", lambda obj, _now: get(obj, "status", "kubernetesVersion") or ""),
    Column("Mode", lambda obj, _now: get(obj, "spec", "syncMode") or ""),
    Column("Ready", _cluster_ready),
    AGE,
    Column("Zones", _zones, priority=1),
    Column("Region", _optional("spec", "region"), priority=1),
    Column("Provider", _optional("spec", "provider"), priority=1),
    Column("API-Endpoint", lambda obj, _now: get(obj, "spec", "apiEndpoint") or "", priority=1),
    Column("Proxy-URL", _optional("spec", "proxyURL"), priority=1),
)
FEDERATION_COLUMNS: dict[tuple[str, str], tuple[Column, ...]] = {
    ("policy.karmada.io", "PropagationPolicy"): _POLICY,
    ("policy.karmada.io", "ClusterPropagationPolicy"): _POLICY,
    ("policy.karmada.io", "ClusterTaintPolicy"): _AGE_ONLY,
    ("work.karmada.io", "ResourceBinding"): _BINDING,
    ("work.karmada.io", "ClusterResourceBinding"): _BINDING,
    ("work.karmada.io", "Work"): _WORK,
    ("cluster.karmada.io", "Cluster"): _CLUSTER,
    ("apps.karmada.io", "WorkloadRebalancer"): _AGE_ONLY,
    # The alias path serves the same kind under policy.karmada.io (kinds.alias_kinds).
    ("policy.karmada.io", "WorkloadRebalancer"): _AGE_ONLY,
    ("kosmos.io", "WorkloadPolicy"): _AGE_ONLY,  # Kosmos' CRD declares only AGE
}


# -- the Table ----------------------------------------------------------------------------------------


def table(
    columns: Sequence[Column],
    items: Sequence[Obj],
    *,
    now: datetime,
    include_object: str = "Metadata",
    version: str = "v1",
    resource_version: str = "",
    continue_token: str | None = None,
) -> dict[str, Any]:
    """A ``meta.k8s.io/{version}`` Table of ``items``, one row each, with every column's definition."""
    metadata: dict[str, Any] = {"resourceVersion": resource_version}
    if continue_token:
        metadata["continue"] = continue_token
    return {
        "kind": "Table",
        "apiVersion": f"{TABLE_GROUP}/{version}",
        "metadata": metadata,
        "columnDefinitions": [c.definition() for c in columns],
        "rows": [_row(columns, obj, now, include_object, version) for obj in items],
    }


def _row(columns: Sequence[Column], obj: Obj, now: datetime, include: str, version: str) -> dict[str, Any]:
    row: dict[str, Any] = {"cells": [_safe(c, obj, now) for c in columns]}
    if include == "Object":
        row["object"] = obj
    elif include == "Metadata":
        row["object"] = {
            "kind": "PartialObjectMetadata",
            "apiVersion": f"{TABLE_GROUP}/{version}",
            "metadata": obj.get("metadata") or {},
        }
    return row


def _safe(column: Column, obj: Obj, now: datetime) -> Any:
    """A cell; a printer that trips over a malformed object prints nothing rather than failing the list."""
    try:
        return column.cell(obj, now)
    except (TypeError, ValueError, KeyError, AttributeError, IndexError):
        return None
