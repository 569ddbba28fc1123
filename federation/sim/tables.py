"""Server-side printing: ``meta.k8s.io/v1 Table`` responses, which ``kubectl get`` asks for.

Invariants:
- Served only when the Accept header asks for ``as=Table``; every row embeds the full object, so kubectl's
  ``-o wide``, ``--show-labels`` and sorting have what they need.
- Columns and cells are kube-apiserver's, from the printers the federation's API server uses too
  (``federation.model.tables_builtin``): Deployment, StatefulSet, Pod, Node, Namespace, Service, ... ; a kind
  without a printer gets the default Name and Created At.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request

from federation.model import tables
from federation.model.tables_builtin import printer_for
from federation.sim.kinds import ResourceType


def wants_table(request: Request) -> bool:
    return "as=Table" in request.headers.get("accept", "")


def table_for(
    rtype: ResourceType, items: list[dict[str, Any]], now: float, resource_version: str
) -> dict[str, Any]:
    return tables.table(
        printer_for(rtype.group, rtype.kind),
        items,
        now=datetime.fromtimestamp(now, UTC),
        include_object="Object",
        resource_version=resource_version,
    )
