"""`federation get evictions` and the failover section of `describe rb`: the failover history, read from
``GET /federation/v1/evictions`` (taints, evictions, task removals, budget changes; newest first)."""

from __future__ import annotations

import json
from typing import Any

import click
import yaml

from federation.cli.client import FederationClient
from federation.cli.context import CliContext
from federation.cli.printers import render_rows

EVICTIONS_PATH = "/federation/v1/evictions"
# `get` KIND names that mean the history rather than an API kind.
HISTORY_NAMES = frozenset({"evictions", "eviction", "failoverhistory", "failover-history"})


def history(
    client: FederationClient,
    *,
    namespace: str | None = None,
    binding: str | None = None,
    cluster: str | None = None,
    limit: int = 500,
) -> list[dict[str, Any]]:
    params: dict[str, str] = {"limit": str(limit)}
    if namespace is not None:
        params["namespace"] = namespace
    if binding:
        params["binding"] = binding
    if cluster:
        params["cluster"] = cluster
    answer: dict[str, Any] = client.request("GET", EVICTIONS_PATH, params=params)
    return list(answer.get("items") or [])


def history_rows(items: list[dict[str, Any]], *, with_binding: bool = True) -> list[list[str]]:
    header = ["TIME", "ACTION", *(["BINDING"] if with_binding else []), "CLUSTER", "REASON", "MESSAGE"]
    rows = [header]
    for item in reversed(items):  # oldest first, as `describe` lists events
        binding = item.get("binding") or {}
        name = "/".join(p for p in (binding.get("namespace"), binding.get("name")) if p) or "<none>"
        rows.append(
            [
                str(item.get("time") or ""),
                str(item.get("action") or ""),
                *([name] if with_binding else []),
                str(item.get("cluster") or "<none>"),
                str(item.get("reason") or ""),
                str(item.get("message") or ""),
            ]
        )
    return rows


def print_history(
    cli: CliContext, namespace: str | None, cluster: str | None, output: str | None, limit: int
) -> None:
    with cli.client() as client:
        items = history(client, namespace=namespace, cluster=cluster, limit=limit)
    if output == "json":
        click.echo(json.dumps({"kind": "EvictionHistoryList", "items": items}, indent=2))
    elif output == "yaml":
        click.echo(yaml.safe_dump({"kind": "EvictionHistoryList", "items": items}, sort_keys=False).rstrip())
    elif not items:
        click.echo("No failover history found.")
    else:
        click.echo(render_rows(history_rows(items)))
