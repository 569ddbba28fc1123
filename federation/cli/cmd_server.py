"""Server-side commands: `serve`, `db upgrade`, `token create|list|revoke`.

The token commands work on the database directly (whoever can read the database owns the federation
anyway): no server needs to run, and a lost admin token can be replaced.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import click

from federation.cli import controller_process, server
from federation.cli.context import CliContext, pass_cli
from federation.cli.printers import render_rows
from federation.cli.signals import stop_signals
from federation.settings import Settings, load_settings
from federation.store import migrate
from federation.store.db import UnitOfWork, make_engine, private_directory
from federation.store.errors import AlreadyExists, NotFound
from federation.store.manifest import format_timestamp
from federation.store.tokens import Token, TokenRepository


def settings_from(cli: CliContext, data_dir: str | None, database_url: str | None, **api: object) -> Settings:
    try:
        return load_settings(cli.config_file, data_dir=data_dir, database_url=database_url, api=api or None)
    except ValueError as exc:  # pydantic and YAML messages span lines; an error here is one
        raise click.ClickException(f"bad settings: {' '.join(str(exc).split())}") from exc


F = TypeVar("F", bound=Callable[..., Any])

data_dir_option = click.option("--data-dir", default=None, help="Where the embedded database and key live.")
database_option = click.option(
    "--database-url", default=None, help="SQLAlchemy URL (default: embedded SQLite)."
)


def tls_options(func: F) -> F:
    """`--tls-cert-file`, `--tls-private-key-file`, `--insecure-http` (kube-apiserver's names)."""
    func = click.option(
        "--insecure-http",
        is_flag=True,
        help="Serve plain HTTP (kubectl then never sends the token); only behind a TLS-terminating proxy.",
    )(func)
    func = click.option(
        "--tls-private-key-file", type=click.Path(dir_okay=False), help="The key of --tls-cert-file."
    )(func)
    return click.option(
        "--tls-cert-file",
        type=click.Path(dir_okay=False),
        help="Serving certificate (PEM); default: one made under the data directory by its own CA.",
    )(func)


def tls_settings(
    tls_cert_file: str | None, tls_private_key_file: str | None, insecure_http: bool
) -> dict[str, Any]:
    """The api section's TLS flags as `settings_from` takes them (None: not given, the settings decide)."""
    return {
        "tls_cert_file": tls_cert_file,
        "tls_private_key_file": tls_private_key_file,
        "insecure_http": True if insecure_http else None,
    }


@click.command("serve")
@click.option("--host", default=None, help="Address to listen on (default 127.0.0.1).")
@click.option("--port", type=int, default=None, help="Port (default 7080; 0 picks a free one).")
@click.option(
    "--controllers/--no-controllers",
    default=True,
    help="--no-controllers: serve the API only; this process never leads nor runs a controller. Scale "
    "the API apart from the controllers (at least one `serve` with controllers must run on the database).",
)
@tls_options
@data_dir_option
@database_option
@pass_cli
def serve_command(
    cli: CliContext,
    host: str | None,
    port: int | None,
    controllers: bool,
    tls_cert_file: str | None,
    tls_private_key_file: str | None,
    insecure_http: bool,
    data_dir: str | None,
    database_url: str | None,
) -> None:
    """Run the API server and the controllers on the configured database (migrated first)."""
    tls = tls_settings(tls_cert_file, tls_private_key_file, insecure_http)
    settings = settings_from(cli, data_dir, database_url, host=host, port=port, **tls)
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    server.cap_malloc_arenas()
    process = server.ServerProcess(
        settings, run_controllers=controllers, controllers_apart=controller_process.runs_apart(settings)
    )
    # From here on SIGINT and SIGTERM stop the process cleanly and it exits 0, also while it starts (the
    # controllers, and with them the leader lease, start before it serves).
    with stop_signals(process.request_stop):
        try:
            process.open()
        except ValueError as exc:  # settings checked only when built (extender TLS files, one binder)
            raise click.ClickException(f"bad settings: {' '.join(str(exc).split())}") from exc
        except OSError as exc:  # the port is taken, a file cannot be read: `up` says it so too
            raise click.ClickException(f"federation serve failed: {exc}") from exc
        announce(process)
        server.tune_collector(settings)
        process.run()


def announce(process: server.ServerProcess) -> None:
    click.echo(f"federation API server listening on {process.url}")
    if not process.run_controllers:
        click.echo(
            "API only (--no-controllers): the controllers run in another `serve` on this database and see "
            "these writes at their next interval"
        )
    for line in kubeconfig_lines(process):
        click.echo(line)


def kubeconfig_lines(process: server.ServerProcess) -> list[str]:
    """Where the kubeconfig is and how to use it; how to get a token when it has none."""
    path = process.kubeconfig_file
    if process.admin_token:
        lines = [f"created the admin token; kubeconfig (context federation) written to {path}"]
    elif process.kubeconfig_token:
        lines = [f"kubeconfig (context federation) written to {path}"]
    else:
        return [
            f"kubeconfig written to {path} without a token (the admin token was shown once); make one with",
            f"  federation token create --role admin --name admin2 --data-dir {process.settings.data_dir}",
            "and pass it with --token or FEDERATION_TOKEN",
        ]
    if process.tls is None:
        lines.append("plain HTTP (--insecure-http): kubectl will not send the token; the federation CLI does")
    return [*lines, "for kubectl and other clients:", f"  export KUBECONFIG={path}"]


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
