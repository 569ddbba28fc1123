"""`federation join`, `unjoin`, `taint cluster`, `cordon` and `uncordon`: member clusters from the CLI.

- `join` reads the kubeconfig here, inlines every file it names (`load_kubeconfig(...).minimal`, one
  context) and sends that to the server, which probes the member before accepting. `join --update`
  replaces a joined cluster's credentials and endpoint the same way (`api.rejoin`), keeping its Works.
- `taint`, `cordon` and `uncordon` edit `spec.taints` with a read-modify-write that carries the
  `resourceVersion`, retried on a Conflict (the cluster-status controller writes automatic taints too).
  Taint syntax is kubectl's: `key[=value]:Effect` adds, `key[=value]:Effect-` or `key-` removes.
- `cordon` is karmadactl's: the taint `cluster.karmada.io/unschedulable:NoSchedule`.
Errors are one line and a non-zero exit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import click

from federation.cli.client import ApiError, FederationClient
from federation.cli.context import CliContext, pass_cli
from federation.members.errors import MemberError
from federation.members.kubeconfig import load_kubeconfig, read_kubeconfig_file

JOIN_PATH = "/federation/v1/clusters/join"
REJOIN_PATH = "/federation/v1/clusters/{name}/rejoin"
CLUSTERS_PATH = "/apis/cluster.karmada.io/v1alpha1/clusters"
UNSCHEDULABLE_TAINT = "cluster.karmada.io/unschedulable"
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
CONFLICT_RETRIES = 5

Taints = list[dict[str, Any]]


# -- join / unjoin -----------------------------------------------------------------------------------


@click.command("join")
@click.argument("name")
@click.option(
    "--kubeconfig", "kubeconfig_path", type=click.Path(dir_okay=False), help="The member's kubeconfig."
)
@click.option("--context", default=None, help="Kubeconfig context (default: its current-context).")
@click.option("--mode", "sync_mode", type=click.Choice(["Push", "Pull"]), default="Push", show_default=True)
@click.option("--region", default=None)
@click.option("--zone", default=None)
@click.option("--provider", default=None)
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="A label (repeatable).")
@click.option(
    "--update",
    is_flag=True,
    help="Replace a joined cluster's credentials and endpoint (with the options given) without unjoining.",
)
@pass_cli
def join_command(
    cli: CliContext,
    name: str,
    kubeconfig_path: str | None,
    context: str | None,
    sync_mode: str,
    region: str | None,
    zone: str | None,
    provider: str | None,
    labels: tuple[str, ...],
    update: bool,
) -> None:
    """Join a member cluster (the server probes it first); --region/--zone also set the
    topology.kubernetes.io labels."""
    if kubeconfig_path is None and (sync_mode == "Push" or update):
        raise click.UsageError("--kubeconfig is required to join a cluster in Push mode (and with --update)")
    if update and sync_mode == "Pull":
        raise click.UsageError(
            "--update replaces a Push cluster's credentials; a Pull cluster's agent holds its own"
        )
    body: dict[str, Any] = {"name": name, "syncMode": sync_mode, "labels": _labels(labels)}
    body.update({k: v for k, v in (("region", region), ("zone", zone), ("provider", provider)) if v})
    if kubeconfig_path is not None:
        body["kubeconfig"] = _read_kubeconfig(kubeconfig_path, context, name)
    with cli.client() as client:
        client.request("POST", REJOIN_PATH.format(name=name) if update else JOIN_PATH, body=body)
    click.echo(f"cluster/{name} {'updated (credentials replaced)' if update else 'joined'}")


def _labels(pairs: tuple[str, ...]) -> dict[str, str]:
    labels: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--label")
        labels[key] = value
    return labels


def _read_kubeconfig(path: str, context: str | None, name: str) -> dict[str, Any]:
    try:
        return load_kubeconfig(read_kubeconfig_file(path, name), context, cluster=name).minimal
    except MemberError as err:
        raise click.ClickException(f"kubeconfig {path}: {err.reason}") from err


@click.command("unjoin")
@click.argument("name")
@click.option("--force", is_flag=True, help="Unjoin even while bindings target it or the member is down.")
@pass_cli
def unjoin_command(cli: CliContext, name: str, force: bool) -> None:
    """Unjoin a member cluster: delete its Works from the member, then its record."""
    params = {"force": "true"} if force else None
    with cli.client() as client:
        result = client.request("DELETE", f"/federation/v1/clusters/{name}", params=params) or {}
    click.echo(result.get("message") or f"cluster/{name} unjoined")


# -- taints ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TaintChange:
    """One `key[=value]:Effect[-]` or `key-` argument."""

    key: str
    value: str | None
    effect: str | None
    remove: bool

    def matches(self, taint: dict[str, Any]) -> bool:
        return taint.get("key") == self.key and (self.effect is None or taint.get("effect") == self.effect)

    def render(self) -> str:
        text = self.key + (f"={self.value}" if self.value else "")
        return text + (f":{self.effect}" if self.effect else "")


def parse_taint(arg: str) -> TaintChange:
    """kubectl's taint argument syntax; raises click.BadParameter naming what is wrong."""
    remove = arg.endswith("-")
    text = arg[:-1] if remove else arg
    spec, colon, effect = text.partition(":")
    key, equals, value = spec.partition("=")
    if not key:
        raise click.BadParameter(f"invalid taint spec {arg!r}: the key is empty")
    if colon and effect not in EFFECTS:
        raise click.BadParameter(
            f"invalid taint effect {effect!r} in {arg!r}; use one of {', '.join(EFFECTS)}"
        )
    if not remove and not colon:
        raise click.BadParameter(f"invalid taint spec {arg!r}: adding needs key[=value]:Effect")
    return TaintChange(key, value if equals else None, effect or None, remove)


def changed_taints(
    current: Taints, changes: list[TaintChange], overwrite: bool, now: str
) -> tuple[Taints, str]:
    """The taints after `changes`, and kubectl's verb (tainted, untainted, modified)."""
    adds = [c for c in changes if not c.remove]
    removes = [c for c in changes if c.remove]
    result = list(current)
    for change in removes:
        if not any(change.matches(t) for t in result):
            raise click.ClickException(f'taint "{change.render()}" not found')
        result = [t for t in result if not change.matches(t)]
    for change in adds:
        existing = [t for t in result if change.matches(t)]
        if existing and not overwrite:
            raise click.ClickException(
                f"already has the taint {change.key}:{change.effect} (same key and effect); "
                "pass --overwrite to replace it"
            )
        result = [t for t in result if not change.matches(t)] + [_taint(change, now)]
    verb = "modified" if adds and removes else ("tainted" if adds else "untainted")
    return result, verb


def _taint(change: TaintChange, now: str) -> dict[str, Any]:
    taint: dict[str, Any] = {"key": change.key, "effect": change.effect}
    if change.value:
        taint["value"] = change.value
    if change.effect == "NoExecute":  # tolerationSeconds count from here (kubectl does the same)
        taint["timeAdded"] = now
    return taint


def update_taints(
    client: FederationClient, name: str, change: Callable[[Taints], Taints]
) -> tuple[Taints, Taints]:
    """Read-modify-write `spec.taints`, retrying on Conflict; returns (before, after)."""
    for attempt in range(CONFLICT_RETRIES):
        cluster = client.request("GET", f"{CLUSTERS_PATH}/{name}")
        before = list((cluster.get("spec") or {}).get("taints") or [])
        after = change(before)
        if after == before:
            return before, after
        cluster.setdefault("spec", {})["taints"] = after
        cluster.pop("status", None)
        try:
            client.request("PUT", f"{CLUSTERS_PATH}/{name}", body=cluster)
        except ApiError as err:
            if err.reason != "Conflict" or attempt == CONFLICT_RETRIES - 1:
                raise
            continue
        return before, after
    raise AssertionError("unreachable")  # the loop returns or raises


@click.command("taint")
@click.argument("kind")
@click.argument("name")
@click.argument("taints", nargs=-1, required=True)
@click.option("--overwrite", is_flag=True, help="Replace a taint with the same key and effect.")
@pass_cli
def taint_command(cli: CliContext, kind: str, name: str, taints: tuple[str, ...], overwrite: bool) -> None:
    """Add or remove taints: `federation taint cluster NAME key[=value]:Effect` (`key:Effect-` removes)."""
    if kind.lower() not in ("cluster", "clusters"):
        raise click.UsageError(f'only clusters can be tainted, not "{kind}"')
    changes = [parse_taint(arg) for arg in taints]
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    verb = ""

    def change(current: Taints) -> Taints:
        nonlocal verb
        result, verb = changed_taints(current, changes, overwrite, now)
        return result

    with cli.client() as client:
        update_taints(client, name, change)
    click.echo(f"cluster/{name} {verb}")


def _cordon(cli: CliContext, name: str, cordon: bool) -> None:
    marker = TaintChange(UNSCHEDULABLE_TAINT, None, "NoSchedule", remove=not cordon)

    def change(current: Taints) -> Taints:
        present = any(marker.matches(t) for t in current)
        if cordon:
            return current if present else [*current, {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}]
        return [t for t in current if not marker.matches(t)]

    with cli.client() as client:
        before, after = update_taints(client, name, change)
    word = "cordoned" if cordon else "uncordoned"
    click.echo(f"cluster/{name} {word}" if before != after else f"cluster/{name} already {word}")


@click.command("cordon")
@click.argument("name")
@pass_cli
def cordon_command(cli: CliContext, name: str) -> None:
    """Mark a cluster unschedulable (taint cluster.karmada.io/unschedulable:NoSchedule)."""
    _cordon(cli, name, cordon=True)


@click.command("uncordon")
@click.argument("name")
@pass_cli
def uncordon_command(cli: CliContext, name: str) -> None:
    """Mark a cluster schedulable again."""
    _cordon(cli, name, cordon=False)


COMMANDS = (join_command, unjoin_command, taint_command, cordon_command, uncordon_command)
