"""The `federation` command: server launchers and the HTTP client verbs.

Errors are one clear line on stderr and a non-zero exit; tracebacks are for bugs only.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click
from sqlalchemy.exc import OperationalError

from federation.cli.client import ApiError, ClientConfigError
from federation.cli.context import CliContext
from federation.cli.manifests import ManifestError
from federation.store.keycheck import KeyMismatch

# OperationalError: the database is unreachable or refuses us (server-side commands), not a bug.
EXPECTED_ERRORS = (ApiError, ClientConfigError, ManifestError, KeyMismatch, OperationalError)


class FederationGroup(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except EXPECTED_ERRORS as exc:
            click.echo(_one_line(exc), err=True)
            sys.exit(1)


def _one_line(exc: Exception) -> str:
    if isinstance(exc, ApiError):
        text = str(exc)
        fields = [str(c["field"]) for c in exc.causes if c.get("field")]
        if fields and not all(f in text for f in fields):
            text += f" (fields: {', '.join(fields)})"
        return text
    if isinstance(exc, OperationalError):
        cause = str(exc.orig or exc).strip().splitlines() or ["unknown error"]
        return f"error: the database is not available: {cause[0]}"
    return f"error: {exc}"


KUBECONFIG_HELP = "The federation's kubeconfig (default: $KUBECONFIG, else the one `up`/`serve` write)."
CONTEXT_HELP = "The kubeconfig context to use (default: its current-context)."


@click.group(cls=FederationGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--kubeconfig", default=None, help=KUBECONFIG_HELP)
@click.option("--context", default=None, help=CONTEXT_HELP)
@click.option(
    "--server", envvar="FEDERATION_SERVER", default=None, help="API server URL (over the kubeconfig's)."
)
@click.option(
    "--token", envvar="FEDERATION_TOKEN", default=None, help="Bearer token (over the kubeconfig's)."
)
@click.option("--certificate-authority", default=None, help="CA file that verifies the server.")
@click.option("--insecure-skip-tls-verify", is_flag=True, help="Do not verify the server's certificate.")
@click.option("--config", "config_file", envvar="FEDERATION_CONFIG", default=None, help="Settings file.")
@click.version_option(package_name="federation")
@click.pass_context
def cli(
    ctx: click.Context,
    kubeconfig: str | None,
    context: str | None,
    server: str | None,
    token: str | None,
    certificate_authority: str | None,
    insecure_skip_tls_verify: bool,
    config_file: str | None,
) -> None:
    """Multi-cluster Kubernetes federation: Karmada's objects, one Python service."""
    if ctx.obj is None:
        ctx.obj = CliContext()
    obj: CliContext = ctx.obj
    obj.server, obj.token, obj.config_file = server, token, config_file
    obj.kubeconfig, obj.context, obj.certificate_authority = kubeconfig, context, certificate_authority
    obj.insecure_skip_tls_verify = insecure_skip_tls_verify


def _store(field: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        if value is not None:
            setattr(ctx.ensure_object(CliContext), field, value)
        return value

    return callback


def connection_options(command: click.Command) -> None:
    """`--kubeconfig`/`--context` after the verb too (`federation get rb --context x`), as kubectl takes
    them anywhere; a command with its own (join, agent: the member's) keeps its meaning."""
    taken = {opt for param in command.params for opt in getattr(param, "opts", [])}
    for flag, field, text in (
        ("--kubeconfig", "kubeconfig", KUBECONFIG_HELP),
        ("--context", "context", CONTEXT_HELP),
    ):
        if flag not in taken:
            option = click.Option([flag], expose_value=False, callback=_store(field), help=text)
            command.params.append(option)


def _register() -> None:
    from federation.cli import (
        cmd_agent,
        cmd_apply,
        cmd_get,
        cmd_join,
        cmd_plan,
        cmd_rebalance,
        cmd_server,
        cmd_sim,
        cmd_up,
    )

    server_side = (
        cmd_server.serve_command,
        cmd_server.db_group,
        cmd_server.token_group,
        cmd_sim.sim_command,
        cmd_up.up_command,
        cmd_agent.agent_command,
    )
    client_side = (
        cmd_apply.apply_command,
        cmd_apply.delete_command,
        cmd_get.get_command,
        cmd_get.describe_command,
        *cmd_join.COMMANDS,
        cmd_plan.plan_command,
        cmd_rebalance.rebalance_command,
    )
    for command in client_side:
        connection_options(command)
    for command in (*server_side, *client_side):
        cli.add_command(command)


_register()


def main() -> None:
    cli(prog_name="federation")
