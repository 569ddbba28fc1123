"""`federation get` and `federation describe`."""

from __future__ import annotations

import json
from typing import Any

import click
import yaml

from federation.cli import cmd_evictions
from federation.cli.client import FederationClient, object_path
from federation.cli.context import CliContext, pass_cli
from federation.cli.describe import describe_text
from federation.cli.printers import render_rows, table
from federation.model.kinds import KindInfo

OUTPUTS = click.Choice(["wide", "yaml", "json", "name"])


@click.command("get")
@click.argument("kind")
@click.argument("names", nargs=-1)
@click.option("-n", "--namespace", default=None)
@click.option("-A", "--all-namespaces", is_flag=True)
@click.option("-l", "--selector", default=None, help="Label selector, e.g. app=nginx,tier!=db")
@click.option("-o", "--output", type=OUTPUTS, default=None)
@click.option("--cluster", default=None, help="With `get evictions`: only this cluster's history.")
@click.option(
    "--limit", type=click.IntRange(1, 5000), default=500, help="With `get evictions`: at most N rows."
)
@pass_cli
def get_command(
    cli: CliContext,
    kind: str,
    names: tuple[str, ...],
    namespace: str | None,
    all_namespaces: bool,
    selector: str | None,
    output: str | None,
    cluster: str | None,
    limit: int,
) -> None:
    """Show objects of KIND (plural, singular or short name: rb, pp, cpp, wr, deploy...).

    `get evictions` lists the failover history instead: taints, evictions, task removals, budget changes.
    """
    if kind.lower() in cmd_evictions.HISTORY_NAMES:
        cmd_evictions.print_history(cli, None if all_namespaces else namespace, cluster, output, limit)
        return
    info = cli.kind(kind)
    ns = None if (all_namespaces or not info.namespaced) else (namespace or "default")
    with cli.client() as client:
        if names:
            items = [_must_get(client, info, ns, name) for name in names]
        else:
            items = list(client.list(info, ns, selector))
    click.echo(format_items(info, items, output, single=len(names) == 1, all_namespaces=all_namespaces))


def _must_get(client: FederationClient, info: KindInfo, ns: str | None, name: str) -> dict[str, Any]:
    """GET that lets a 404 surface as the server's NotFound line."""
    return dict(client.request("GET", object_path(info, ns, name)))


def format_items(
    info: KindInfo, items: list[dict[str, Any]], output: str | None, *, single: bool, all_namespaces: bool
) -> str:
    if output in ("yaml", "json"):
        doc: Any = items[0] if single else {"apiVersion": "v1", "kind": "List", "items": items}
        return (
            json.dumps(doc, indent=2) if output == "json" else yaml.safe_dump(doc, sort_keys=False).rstrip()
        )
    if output == "name":
        prefix = f"{info.singular}.{info.group}" if info.group else info.singular
        return "\n".join(f"{prefix}/{item['metadata']['name']}" for item in items)
    if not items:
        return "No resources found."
    rows = table(info.kind, items, wide=output == "wide", with_namespace=all_namespaces and info.namespaced)
    return render_rows(rows)


@click.command("describe")
@click.argument("kind")
@click.argument("name")
@click.option("-n", "--namespace", default=None)
@pass_cli
def describe_command(cli: CliContext, kind: str, name: str, namespace: str | None) -> None:
    """Show one object in detail; for bindings, the scheduling explanation."""
    info = cli.kind(kind)
    ns = (namespace or "default") if info.namespaced else None
    with cli.client() as client:
        obj = _must_get(client, info, ns, name)
        failover = None
        decided = None
        if info.kind in ("ResourceBinding", "ClusterResourceBinding"):
            failover = cmd_evictions.history(client, namespace=ns or "", binding=name, limit=50)
            decided = latest_explanation(client, ns or "", name)
        events = object_events(client, obj)
    extra = None
    if failover:
        rows = cmd_evictions.history_rows(failover, with_binding=False)
        extra = "Failover events:\n" + "\n".join("  " + line for line in render_rows(rows).splitlines())
    click.echo(describe_text(obj, decided, events=events, extra=extra))


def object_events(client: FederationClient, obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The object's Events, found as kubectl describe finds them (fieldSelector on the involved object)."""
    meta = obj.get("metadata") or {}
    fields = {
        "involvedObject.name": meta.get("name"),
        "involvedObject.namespace": meta.get("namespace") or "",
        "involvedObject.kind": obj.get("kind"),
        "involvedObject.uid": meta.get("uid"),
    }
    selector = ",".join(f"{k}={v}" for k, v in fields.items() if v is not None)
    path = f"/api/v1/namespaces/{meta['namespace']}/events" if meta.get("namespace") else "/api/v1/events"
    items: list[dict[str, Any]] = []
    params: dict[str, Any] = {"fieldSelector": selector, "limit": EVENTS_PAGE}
    while True:
        page = client.request("GET", path, params=params)
        items += page.get("items") or []
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return items
        params = {**params, "continue": token}


EVENTS_PAGE = 500


DECISIONS_PATH = "/federation/v1/decisions"


def latest_explanation(client: FederationClient, namespace: str, name: str) -> dict[str, Any] | None:
    """The whole explanation of the binding's latest decision (the stored status keeps its summary)."""
    params = {"namespace": namespace, "binding": name, "limit": "1"}
    items = client.request("GET", DECISIONS_PATH, params=params).get("items") or []
    explanation = items[0].get("explanation") if items else None
    return explanation if isinstance(explanation, dict) and explanation else None
