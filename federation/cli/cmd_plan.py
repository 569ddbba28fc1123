"""`federation plan`: the placement the control plane would write, without writing it.

With `--clusters FILE` it plans offline (no server): the scheduling settings come from `--config` (or the
defaults), HTTP extenders included. Without it, FILE's manifests are POSTed to the server's plan endpoint,
which plans against the live clusters, policies and existing bindings with the server's extenders. Either
way extenders are called as the scheduler calls them (filter, prioritize, replicas), never to bind.

The default output is a table (one row per binding); `-o json|yaml` prints the Kubernetes `List` of the
ResourceBindings exactly as they would be written.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import click
import yaml

from federation.cli.context import CliContext, pass_cli
from federation.cli.manifests import ManifestError, read_manifests
from federation.cli.printers import render_rows
from federation.extenders import build_extenders, close_extenders
from federation.scheduling import offline
from federation.scheduling.planner import engine_config
from federation.settings import load_settings

PLAN_PATH = "/federation/v1/plan"
OUTPUTS = click.Choice(["table", "json", "yaml"])


@click.command("plan")
@click.option("-f", "--filename", "source", required=True, help="Templates, policies, bindings: FILE|DIR|-.")
@click.option(
    "--clusters", "clusters_source", default=None, help="Cluster objects: plan offline against them."
)
@click.option("-o", "--output", type=OUTPUTS, default="table", show_default=True)
@pass_cli
def plan_command(cli: CliContext, source: str, clusters_source: str | None, output: str) -> None:
    """Show where FILE's workloads would be placed (dry run: nothing is written)."""
    manifests = read_manifests(source)
    if clusters_source:
        items = _plan_offline(cli, manifests, read_manifests(clusters_source))
    else:
        with cli.client() as client:
            answer = client.request("POST", PLAN_PATH, body=offline.as_list(manifests))
        items = list((answer or {}).get("items") or [])
    click.echo(render(items, output))


def _plan_offline(
    cli: CliContext, manifests: Sequence[dict[str, Any]], clusters: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    try:
        settings = load_settings(cli.config_file).scheduler
        extenders = build_extenders(settings.extenders)
    except ValueError as exc:
        raise ManifestError(str(exc)) from exc
    try:
        return offline.plan_manifests(
            manifests, clusters, engine_config(settings), now=datetime.now(UTC), extenders=extenders
        )
    except offline.PlanError as exc:
        raise ManifestError(str(exc)) from exc
    finally:
        close_extenders(extenders)


def render(items: Sequence[dict[str, Any]], output: str) -> str:
    if output == "json":
        return json.dumps(offline.as_list(items), indent=2)
    if output == "yaml":
        return yaml.safe_dump(offline.as_list(items), sort_keys=False).rstrip()
    if not items:
        return "No bindings would be created."
    return render_rows(plan_rows(items))


def plan_rows(items: Sequence[dict[str, Any]]) -> list[list[str]]:
    rows = [["BINDING", "RESULT", "CLUSTERS", "MESSAGE"]]
    for item in items:
        meta = item.get("metadata") or {}
        name = (
            f"{meta['namespace']}/{meta.get('name', '')}" if meta.get("namespace") else meta.get("name", "")
        )
        condition = _scheduled(item)
        rows.append(
            [
                str(name),
                str(condition.get("reason") or "<none>"),
                _clusters(item),
                str(condition.get("message") or ""),
            ]
        )
    return rows


def _scheduled(item: dict[str, Any]) -> dict[str, Any]:
    for condition in (item.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Scheduled":
            return dict(condition)
    return {}


def _clusters(item: dict[str, Any]) -> str:
    targets = (item.get("spec") or {}).get("clusters") or []
    text = ",".join(f"{t['name']}:{t['replicas']}" if t.get("replicas") else str(t["name"]) for t in targets)
    return text or "<none>"
