"""The `federation` command: server launchers and the HTTP client verbs.

Errors are one clear line on stderr and a non-zero exit; tracebacks are for bugs only.
"""

from __future__ import annotations

import sys
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


@click.group(cls=FederationGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--server", envvar="FEDERATION_SERVER", default=None, help="API server URL.")
@click.option("--token", envvar="FEDERATION_TOKEN", default=None, help="Bearer token.")
@click.option("--config", "config_file", envvar="FEDERATION_CONFIG", default=None, help="Settings file.")
@click.version_option(package_name="federation")
@click.pass_context
def cli(ctx: click.Context, server: str | None, token: str | None, config_file: str | None) -> None:
    """Multi-cluster Kubernetes federation: Karmada's objects, one Python service."""
    if ctx.obj is None:
        ctx.obj = CliContext()
    ctx.obj.server, ctx.obj.token, ctx.obj.config_file = server, token, config_file


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

    commands = (
        cmd_server.serve_command,
        cmd_server.db_group,
        cmd_server.token_group,
        cmd_sim.sim_command,
        cmd_up.up_command,
        cmd_agent.agent_command,
        cmd_apply.apply_command,
        cmd_apply.delete_command,
        cmd_get.get_command,
        cmd_get.describe_command,
        *cmd_join.COMMANDS,
        cmd_plan.plan_command,
        cmd_rebalance.rebalance_command,
    )
    for command in commands:
        cli.add_command(command)


_register()


def main() -> None:
    cli(prog_name="federation")
