"""The `federation` command: server launchers and the HTTP client verbs.

Errors are one clear line on stderr and a non-zero exit; tracebacks are for bugs only.

Each command's module is imported only when that command runs (`COMMANDS`): a client verb does not pay for
the server side (FastAPI, SQLAlchemy, the controllers, the Kubernetes client), and `federation --help`
lists every command from the summaries kept beside the map, importing none of them.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

import click

from federation.cli.client import ApiError, ClientConfigError
from federation.cli.context import CliContext
from federation.cli.manifests import ManifestError

# Every command: name -> ("module:attribute", summary). The summary is the first paragraph of the command's
# help, which is all `federation --help` shows of it (tests/cli/test_startup.py keeps the two equal).
SERVER_SIDE: dict[str, tuple[str, str]] = {
    "agent": (
        "federation.cli.cmd_agent:agent_command",
        "Run the pull-mode agent: renew the lease, apply the cluster's Works, report their status.",
    ),
    "db": ("federation.cli.cmd_server:db_group", "Database schema management."),
    "serve": (
        "federation.cli.cmd_serve:serve_command",
        "Run the API server and the controllers on the configured database (migrated first).",
    ),
    "sim": (
        "federation.cli.cmd_sim:sim_command",
        "Run a simulated member cluster (a Kubernetes API subset with simulated nodes and pods).",
    ),
    "token": ("federation.cli.cmd_server:token_group", "API tokens."),
    "up": (
        "federation.cli.cmd_up:up_command",
        "Run everything locally: SQLite, the API server, all controllers and simulated members, joined.",
    ),
}
# Commands a process starts for itself, never listed: the controllers' child process of `serve`.
INTERNAL: dict[str, str] = {"controllers": "federation.cli.controller_process:controllers_command"}
# Client verbs also take --kubeconfig/--context after the verb (`connection_options`, applied on loading).
CLIENT_SIDE: dict[str, tuple[str, str]] = {
    "apply": (
        "federation.cli.cmd_apply:apply_command",
        "Create or update every object in FILE|DIR|- (multi-document YAML).",
    ),
    "cordon": (
        "federation.cli.cmd_join:cordon_command",
        "Mark a cluster unschedulable (taint cluster.karmada.io/unschedulable:NoSchedule).",
    ),
    "delete": (
        "federation.cli.cmd_apply:delete_command",
        "Delete KIND NAME... or every object in -f FILE.",
    ),
    "describe": (
        "federation.cli.cmd_get:describe_command",
        "Show one object in detail; for bindings, the scheduling explanation.",
    ),
    "get": (
        "federation.cli.cmd_get:get_command",
        "Show objects of KIND (plural, singular or short name: rb, pp, cpp, wr, deploy...).",
    ),
    "join": (
        "federation.cli.cmd_join:join_command",
        "Join a member cluster (the server probes it first); --region/--zone also set the "
        "topology.kubernetes.io labels.",
    ),
    "plan": (
        "federation.cli.cmd_plan:plan_command",
        "Show where FILE's workloads would be placed (dry run: nothing is written).",
    ),
    "rebalance": (
        "federation.cli.cmd_rebalance:rebalance_command",
        "Reschedule workloads afresh (Karmada's WorkloadRebalancer): forget their current placement.",
    ),
    "taint": (
        "federation.cli.cmd_join:taint_command",
        "Add or remove taints: `federation taint cluster NAME key[=value]:Effect` (`key:Effect-` removes).",
    ),
    "uncordon": ("federation.cli.cmd_join:uncordon_command", "Mark a cluster schedulable again."),
    "unjoin": (
        "federation.cli.cmd_join:unjoin_command",
        "Unjoin a member cluster: delete its Works from the member, then its record.",
    ),
}
COMMANDS = {**SERVER_SIDE, **CLIENT_SIDE}

# Not bugs: one line on stderr and exit 1.
EXPECTED_ERRORS: tuple[type[Exception], ...] = (ApiError, ClientConfigError, ManifestError)
# Expected too, but looked up only if their module is imported already (whatever raised one has imported
# it): importing them here would load the store and SQLAlchemy for every command. OperationalError: the
# database is unreachable or refuses us (server-side commands).
SERVER_ERRORS = (("federation.store.keycheck", "KeyMismatch"), ("sqlalchemy.exc", "OperationalError"))


def _loaded(module: str, name: str) -> type[Exception] | None:
    """`module.name` if that module is imported already; None otherwise (and nothing is imported)."""
    found: type[Exception] | None = getattr(sys.modules.get(module), name, None)
    return found


def expected_errors() -> tuple[type[Exception], ...]:
    loaded = (_loaded(module, name) for module, name in SERVER_ERRORS)
    return (*EXPECTED_ERRORS, *(error for error in loaded if error is not None))


class FederationGroup(click.Group):
    """The root group: loads a command's module when that command is looked up (click's lazy loading)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in INTERNAL:
            module, attribute = INTERNAL[cmd_name].split(":")
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attribute = COMMANDS[cmd_name][0].split(":")
            command: click.Command = getattr(importlib.import_module(module), attribute)
            if cmd_name in CLIENT_SIDE:
                connection_options(command)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            # click suggests close names ("Did you mean 'get'?") from the commands loaded: offer them all.
            possible = self.list_commands(ctx)
            raise click.exceptions.NoSuchCommand(exc.command_name, possibilities=possible, ctx=ctx) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's listing, of the loaded commands and, for the others, a stand-in carrying the summary."""
        listed = {name: self._listed(name) for name in self.list_commands(ctx)}
        click.Group(self.name, commands=listed).format_commands(ctx, formatter)

    def _listed(self, name: str) -> click.Command:
        if name in self.commands:
            return self.commands[name]
        return click.Command(name, help=COMMANDS[name][1])

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except expected_errors() as exc:  # evaluated when an exception arrives: the modules loaded by then
            click.echo(_one_line(exc), err=True)
            sys.exit(1)


def _one_line(exc: Exception) -> str:
    if isinstance(exc, ApiError):
        text = str(exc)
        fields = [str(c["field"]) for c in exc.causes if c.get("field")]
        if fields and not all(f in text for f in fields):
            text += f" (fields: {', '.join(fields)})"
        return text
    operational = _loaded("sqlalchemy.exc", "OperationalError")
    if operational is not None and isinstance(exc, operational):
        cause = str(getattr(exc, "orig", None) or exc).strip().splitlines() or ["unknown error"]
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


def main() -> None:
    cli(prog_name="federation")
