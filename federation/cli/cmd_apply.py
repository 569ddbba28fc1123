"""`federation apply -f` and `federation delete`: create-or-update from manifests, idempotently.

Applying the same file twice changes nothing: an object whose labels, annotations and desired state
(everything but metadata and status) already match is reported `unchanged` and not written.
"""

from __future__ import annotations

from typing import Any

import click

from federation.cli.client import ApiError, FederationClient
from federation.cli.context import CliContext, pass_cli
from federation.cli.manifests import identity, kind_of, read_manifests
from federation.model.kinds import KindInfo

CONFLICT_RETRIES = 5
SERVER_OWNED_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields")


@click.command("apply")
@click.option("-f", "--filename", "source", required=True, help="File, directory or - for stdin.")
@click.option("-n", "--namespace", default=None, help="Namespace for manifests that name none.")
@pass_cli
def apply_command(cli: CliContext, source: str, namespace: str | None) -> None:
    """Create or update every object in FILE|DIR|- (multi-document YAML)."""
    manifests = read_manifests(source)
    with cli.client() as client:
        for manifest in manifests:
            info = kind_of(manifest)
            _default_namespace(manifest, info, namespace)
            outcome = apply_one(client, info, manifest)
            click.echo(f"{identity(manifest, info)} {outcome}")


def apply_one(client: FederationClient, info: KindInfo, manifest: dict[str, Any]) -> str:
    """Create, or replace what differs. A Conflict means a controller wrote the object (its status)
    between our read and our write: read again and retry, as kubectl apply does."""
    for attempt in range(CONFLICT_RETRIES):
        try:
            return _apply_once(client, info, manifest)
        except ApiError as exc:
            if exc.reason != "Conflict" or attempt == CONFLICT_RETRIES - 1:
                raise
    raise AssertionError("unreachable: the last attempt raises")


def _apply_once(client: FederationClient, info: KindInfo, manifest: dict[str, Any]) -> str:
    meta = manifest["metadata"]
    current = client.get(info, meta.get("namespace"), meta.get("name", ""))
    if current is None:
        client.create(info, manifest)
        return "created"
    if not differs(current, manifest):
        return "unchanged"
    desired = {**manifest, "metadata": {**meta, "resourceVersion": current["metadata"]["resourceVersion"]}}
    client.replace(info, desired)
    return "configured"


def differs(current: dict[str, Any], desired: dict[str, Any]) -> bool:
    """Whether writing `desired` would change what the user controls of `current`."""
    cur_meta, new_meta = current.get("metadata") or {}, desired.get("metadata") or {}
    for field in ("labels", "annotations"):
        if (cur_meta.get(field) or {}) != (new_meta.get(field) or {}):
            return True
    return _body(current) != _body(desired)


def _body(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def _default_namespace(manifest: dict[str, Any], info: KindInfo, namespace: str | None) -> None:
    meta = manifest.setdefault("metadata", {})
    if info.namespaced and not meta.get("namespace"):
        meta["namespace"] = namespace or "default"
    for field in SERVER_OWNED_METADATA:
        meta.pop(field, None)


@click.command("delete")
@click.argument("kind", required=False)
@click.argument("names", nargs=-1)
@click.option("-f", "--filename", "source", default=None, help="Delete the objects in FILE|DIR|-.")
@click.option("-n", "--namespace", default=None)
@click.option("--ignore-not-found", is_flag=True, help="Treat an absent object as deleted.")
@pass_cli
def delete_command(
    cli: CliContext,
    kind: str | None,
    names: tuple[str, ...],
    source: str | None,
    namespace: str | None,
    ignore_not_found: bool,
) -> None:
    """Delete KIND NAME... or every object in -f FILE."""
    targets = _delete_targets(cli, kind, names, source, namespace)
    with cli.client() as client:
        for info, ns, name in targets:
            if ignore_not_found and client.get(info, ns, name) is None:
                continue
            client.delete(info, ns, name)
            kind_label = f"{info.singular}.{info.group}" if info.group else info.singular
            click.echo(f'{kind_label} "{name}" deleted')


def _delete_targets(
    cli: CliContext, kind: str | None, names: tuple[str, ...], source: str | None, namespace: str | None
) -> list[tuple[KindInfo, str | None, str]]:
    if source:
        if kind:
            raise click.UsageError("give either KIND NAME or -f FILE, not both")
        targets = []
        for manifest in read_manifests(source):
            info = kind_of(manifest)
            meta = manifest.get("metadata") or {}
            ns = (meta.get("namespace") or namespace or "default") if info.namespaced else None
            targets.append((info, ns, str(meta.get("name", ""))))
        return targets
    if not kind or not names:
        raise click.UsageError("give KIND NAME [NAME...] or -f FILE")
    info = cli.kind(kind)
    ns = (namespace or "default") if info.namespaced else None
    return [(info, ns, name) for name in names]
