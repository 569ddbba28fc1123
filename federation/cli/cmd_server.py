"""Server-side commands: `serve`, `db upgrade`, `token create`."""

from __future__ import annotations

import logging

import click

from federation.cli import server
from federation.cli.context import CliContext, pass_cli
from federation.settings import Settings, load_settings
from federation.store import migrate
from federation.store.db import UnitOfWork, make_engine
from federation.store.errors import AlreadyExists
from federation.store.tokens import TokenRepository


def settings_from(cli: CliContext, data_dir: str | None, database_url: str | None, **api: object) -> Settings:
    try:
        return load_settings(cli.config_file, data_dir=data_dir, database_url=database_url, api=api or None)
    except ValueError as exc:
        raise click.ClickException(f"bad settings: {exc}") from exc


data_dir_option = click.option("--data-dir", default=None, help="Where the embedded database and key live.")
database_option = click.option(
    "--database-url", default=None, help="SQLAlchemy URL (default: embedded SQLite)."
)


@click.command("serve")
@click.option("--host", default=None, help="Address to listen on (default 127.0.0.1).")
@click.option("--port", type=int, default=None, help="Port (default 7080; 0 picks a free one).")
@data_dir_option
@database_option
@pass_cli
def serve_command(
    cli: CliContext, host: str | None, port: int | None, data_dir: str | None, database_url: str | None
) -> None:
    """Run the API server and the controllers on the configured database (migrated first)."""
    settings = settings_from(cli, data_dir, database_url, host=host, port=port)
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    process = server.build(settings)
    announce(process)
    process.run()


def configure_logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    # One line per job run at INFO drowns everything else.
    logging.getLogger("apscheduler").setLevel(logging.WARNING)


def announce(process: server.ServerProcess) -> None:
    click.echo(f"federation API server listening on {process.url}")
    if process.admin_token:
        click.echo(f"created the admin token; the CLI is configured in {process.client_config_path}")
    else:
        click.echo(f"using the existing client config in {process.client_config_path}")


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
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    migrate.upgrade(url, revision)
    click.echo(f"database at revision {migrate.current(url)}")


@click.group("token")
def token_group() -> None:
    """API tokens."""


@token_group.command("create")
@click.option("--name", default=None, help="Token name (default: role[-cluster]).")
@click.option("--role", type=click.Choice(["admin", "viewer", "agent"]), required=True)
@click.option("--cluster", default=None, help="The cluster an agent token is bound to.")
@data_dir_option
@database_option
@pass_cli
def token_create_command(
    cli: CliContext,
    name: str | None,
    role: str,
    cluster: str | None,
    data_dir: str | None,
    database_url: str | None,
) -> None:
    """Create a token and print it once (only its hash is stored)."""
    if (role == "agent") != bool(cluster):
        raise click.UsageError("--cluster is required with --role agent, and only with it")
    settings = settings_from(cli, data_dir, database_url)
    url = settings.resolved_database_url()
    migrate.upgrade(url)
    uow = UnitOfWork.for_engine(make_engine(url))
    token_name = name or (f"agent-{cluster}" if cluster else role)
    try:
        with uow() as session:
            _, plaintext = TokenRepository(session).create(token_name, role, cluster)
    except AlreadyExists as exc:
        raise click.ClickException(f"a token named {token_name!r} already exists; pass --name") from exc
    click.echo(plaintext)
