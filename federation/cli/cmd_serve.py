"""`federation serve`: the API server and, on Postgres, the controllers in a child process of their own.

Why a module of its own, importing little: `serve` launches its controllers' child before it imports the
API, the store and the controllers (~1 s of a core): the child imports its own modules meanwhile, on the
other core (``controller_process``). The flags and settings helpers here are shared by `up` and the
database and token commands.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from federation.cli import controller_process
from federation.cli.context import CliContext, pass_cli
from federation.cli.signals import stop_signals
from federation.settings import Settings, load_settings

if TYPE_CHECKING:
    from federation.cli.server import ServerProcess


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
    apart = controllers and controller_process.runs_apart(settings)
    child = controller_process.ControllerProcess(settings) if apart else None
    if child is not None:
        child.launch()  # it imports while this process does; it gets its settings once the database is ready
    try:
        from federation.cli import server  # the API, the store, the controllers: the import that takes long

        server.tune_malloc()
        process = server.ServerProcess(
            settings, run_controllers=controllers, controllers_apart=apart, controller_process=child
        )
    except BaseException:
        if child is not None:
            child.stop()
        raise
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


def announce(process: ServerProcess) -> None:
    click.echo(f"federation API server listening on {process.url}")
    if not process.run_controllers:
        click.echo(
            "API only (--no-controllers): the controllers run in another `serve` on this database and see "
            "these writes at their next interval"
        )
    for line in kubeconfig_lines(process):
        click.echo(line)


def kubeconfig_lines(process: ServerProcess) -> list[str]:
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
