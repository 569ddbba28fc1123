"""Server-side commands on the database: `db upgrade`, `token create|list|revoke` (`serve`: ``cmd_serve``).

The token commands work on the database directly (whoever can read the database owns the federation
anyway): no server needs to run, and a lost admin token can be replaced.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import click

from federation.cli.cmd_serve import data_dir_option, database_option, settings_from
from federation.cli.context import CliContext, pass_cli
from federation.cli.printers import render_rows
from federation.store import migrate
from federation.store.db import UnitOfWork, make_engine, private_directory
from federation.store.errors import AlreadyExists, NotFound
from federation.store.manifest import format_timestamp
from federation.store.tokens import Token, TokenRepository


@click.group("db")
def db_group() -> None:
    """Database schema management."""


@db_group.command("upgrade")
@click.option("--revision", default="head", show_default=True)
@data_dir_option
@database_option
@pass_cli
def db_upgrade_command(
    cli: CliContext, revision: str, data_dir: str | None, database_url: str | None
) -> None:
    """Apply the Alembic migrations (`serve` and `up` do this on start)."""
    settings = settings_from(cli, data_dir, database_url)
    url = settings.resolved_database_url()
    if url.startswith("sqlite"):
        private_directory(settings.data_dir)
    migrate.upgrade(url, revision)
    click.echo(f"database at revision {migrate.current(url)}")


@click.group("token")
def token_group() -> None:
    """API tokens."""


class Duration(click.ParamType):
    """A duration such as `90s`, `30m`, `12h`, `7d` or `1d12h` (units s, m, h, d), positive."""

    name = "duration"
    _PART = re.compile(r"(\d+)([smhd])")
    _UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> timedelta:
        if isinstance(value, timedelta):
            return value
        text = str(value).strip()
        parts = self._PART.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            self.fail(f"{value!r} is not a duration like 30m, 12h or 7d", param, ctx)
        total = sum((timedelta(**{self._UNITS[unit]: int(n)}) for n, unit in parts), timedelta())
        if total <= timedelta(0):
            self.fail("the duration must be positive", param, ctx)
        return total


def _token_store(cli: CliContext, data_dir: str | None, database_url: str | None) -> UnitOfWork:
    settings = settings_from(cli, data_dir, database_url)
    url = settings.resolved_database_url()
    if url.startswith("sqlite"):
        private_directory(settings.data_dir)
    migrate.upgrade(url)
    return UnitOfWork.for_engine(make_engine(url))


@token_group.command("create")
@click.option("--name", default=None, help="Token name (default: role[-cluster]).")
@click.option("--role", type=click.Choice(["admin", "viewer", "agent"]), required=True)
@click.option("--cluster", default=None, help="The cluster an agent token is bound to.")
@click.option("--ttl", type=Duration(), default=None, help="Expire after this long (30m, 12h, 7d).")
@data_dir_option
@database_option
@pass_cli
def token_create_command(
    cli: CliContext,
    name: str | None,
    role: str,
    cluster: str | None,
    ttl: timedelta | None,
    data_dir: str | None,
    database_url: str | None,
) -> None:
    """Create a token and print it once (only its hash is stored)."""
    if (role == "agent") != bool(cluster):
        raise click.UsageError("--cluster is required with --role agent, and only with it")
    uow = _token_store(cli, data_dir, database_url)
    token_name = name or (f"agent-{cluster}" if cluster else role)
    try:
        with uow() as session:
            _, plaintext = TokenRepository(session).create(token_name, role, cluster, ttl=ttl)
    except AlreadyExists as exc:
        raise click.ClickException(f"a token named {token_name!r} already exists; pass --name") from exc
    click.echo(plaintext)


@token_group.command("list")
@data_dir_option
@database_option
@pass_cli
def token_list_command(cli: CliContext, data_dir: str | None, database_url: str | None) -> None:
    """List tokens: name, role, cluster, created, expires, last used (never the token itself)."""
    uow = _token_store(cli, data_dir, database_url)
    with uow() as session:
        tokens = TokenRepository(session).list()
    if not tokens:
        click.echo("No tokens found.")
        return
    now = datetime.now(UTC)
    header = ["NAME", "ROLE", "CLUSTER", "CREATED", "EXPIRES", "LAST-USED"]
    click.echo(render_rows([header, *(_token_row(token, now) for token in tokens)]))


def _token_row(token: Token, now: datetime) -> list[str]:
    expires = "<never>"
    if token.expires_at is not None:
        expires = format_timestamp(token.expires_at) + (" (expired)" if token.expired(now) else "")
    last_used = format_timestamp(token.last_used_at) if token.last_used_at else "<never>"
    created = format_timestamp(token.created_at)
    return [token.name, token.role, token.cluster_name or "<none>", created, expires, last_used]


@token_group.command("revoke")
@click.argument("name")
@data_dir_option
@database_option
@pass_cli
def token_revoke_command(cli: CliContext, name: str, data_dir: str | None, database_url: str | None) -> None:
    """Revoke the token NAME: running servers refuse it within api.token_cache_seconds (5 s by default)."""
    uow = _token_store(cli, data_dir, database_url)
    try:
        with uow() as session:
            TokenRepository(session).delete(name)
    except NotFound as exc:
        raise click.ClickException(f"no token named {name!r} (see `federation token list`)") from exc
    click.echo(f'token "{name}" revoked')
