"""`federation agent`: the pull-mode agent of one member cluster, in the foreground until Ctrl-C.

The federation's server, CA and token come from its kubeconfig (`federation --kubeconfig F [--context C]
agent ...` or `KUBECONFIG`; this command's own `--kubeconfig` is the member's), overridden by
`--server`/`--token` or `FEDERATION_SERVER`/`FEDERATION_TOKEN`, like every client command; the token should
be an agent token bound to the cluster (`federation token create --role agent --cluster NAME`). Before
looping, the agent reads its Cluster once, so a wrong token, a cluster that was never joined or a Push
cluster is one clear error, not a log loop.
"""

from __future__ import annotations

import click

from federation import gc_tuning
from federation.cli.context import CliContext, pass_cli
from federation.cli.process_setup import configure_logging
from federation.cli.signals import wait_for_stop
from federation.members.agent import Agent, AgentConfig
from federation.members.agent_api import AgentApi, AgentApiError
from federation.members.errors import MemberError
from federation.members.kubeconfig import load_kubeconfig, read_kubeconfig_file


@click.command("agent")
@click.option("--cluster", required=True, help="The (Pull mode) cluster this agent serves.")
@click.option(
    "--kubeconfig",
    "kubeconfig_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="The member's kubeconfig.",
)
@click.option("--context", default=None, help="Kubeconfig context (default: its current-context).")
@click.option(
    "--lease-duration", type=click.IntRange(4, 3600), default=40, show_default=True, help="Seconds."
)
@click.option(
    "--sync-interval", type=click.FloatRange(min=0.1), default=2.0, show_default=True, help="Seconds."
)
@click.option(
    "--status-interval", type=click.FloatRange(min=1), default=10.0, show_default=True, help="Seconds."
)
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="info")
@pass_cli
def agent_command(
    cli: CliContext,
    cluster: str,
    kubeconfig_path: str,
    context: str | None,
    lease_duration: int,
    sync_interval: float,
    status_interval: float,
    log_level: str,
) -> None:
    """Run the pull-mode agent: renew the lease, apply the cluster's Works, report their status."""
    configure_logging(log_level)
    target = cli.client_config()
    if not target.token:
        raise click.UsageError("an agent token is required: --token, FEDERATION_TOKEN or the kubeconfig")
    config = AgentConfig(
        cluster=cluster,
        server=target.server,
        token=target.token,
        kubeconfig=_member_kubeconfig(kubeconfig_path, context, cluster),
        lease_duration_seconds=lease_duration,
        sync_interval_seconds=sync_interval,
        status_interval_seconds=status_interval,
        transport=cli.transport,
        ca_pem=target.ca_pem,
        insecure=target.insecure,
    )
    _check_cluster(config)
    agent = Agent(config)
    click.echo(f"agent of cluster {cluster} syncing Works from {target.server} (Ctrl-C stops)")
    _run_until_signalled(agent)


def _member_kubeconfig(path: str, context: str | None, cluster: str) -> dict[str, object]:
    try:
        return load_kubeconfig(read_kubeconfig_file(path, cluster), context, cluster=cluster).minimal
    except MemberError as err:
        raise click.ClickException(f"cannot use the kubeconfig {path}: {err.reason}") from err


def _check_cluster(config: AgentConfig) -> None:
    api = AgentApi(
        config.server,
        config.token,
        config.cluster,
        transport=config.transport,
        ca_pem=config.ca_pem,
        insecure=config.insecure,
    )
    try:
        cluster = api.get_cluster()
    except AgentApiError as err:
        reached = f"{err.code} {err.reason}: " if err.code else ""
        raise click.ClickException(
            f"cannot serve cluster {config.cluster!r}: {reached}{err.message}"
        ) from err
    finally:
        api.close()
    mode = (cluster.get("spec") or {}).get("syncMode")
    if mode != "Pull":
        raise click.ClickException(
            f"cluster {config.cluster!r} is in {mode} mode: the control plane syncs it itself; "
            f"join it with --mode Pull to use an agent"
        )


def _run_until_signalled(agent: Agent) -> None:
    agent.run_in_thread()
    gc_tuning.tune()  # a long-running process: the same collector settings as `serve` (gc_tuning)
    try:
        wait_for_stop()
    finally:
        agent.stop()
