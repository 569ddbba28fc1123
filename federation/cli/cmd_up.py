"""`federation up`: the whole federation in one process, no setup.

SQLite under the data directory, the API server with every controller (`server.build`), and N simulated
member clusters (default 3, with different regions and capacities so placement has choices to make),
joined in Push mode through the join code path (`api.join.join_cluster`: validated, probed, stored
encrypted). The server writes the federation's kubeconfig (`<data_dir>/federation.kubeconfig`, what the CLI
reads by default); `up` adds `<data_dir>/members.kubeconfig`, one context per simulated member (Karmada's
local-up writes `karmada.config` and `members.config`), both 0600.

Invariants:
- Re-running on the same data directory works: the members come back on new ports with new tokens and
  CAs, and each existing Cluster is re-joined (`api.rejoin`: apiEndpoint, credentials, the status the probe
  saw), its user edits (taints, other labels) kept, and its Works marked for sync so the fresh member gets
  them again; the members' kubeconfig is written again.
- Whatever fails half-way is stopped again (simulators, server, controllers); Ctrl-C or SIGTERM stops
  everything: controllers and the API server first, then the members.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from federation.api.app import ApiContext
from federation.api.join import JoinRequest, join_cluster
from federation.api.rejoin import rejoin_cluster
from federation.api.status import StatusError
from federation.cli import server
from federation.cli.cmd_serve import (
    kubeconfig_lines,
    settings_from,
    tls_options,
    tls_settings,
)
from federation.cli.context import CliContext, pass_cli
from federation.cli.process_setup import configure_logging
from federation.cli.signals import wait_for_stop
from federation.members.kubeconfig import write_kubeconfig
from federation.settings import Settings
from federation.sim import RunningSimulator, SimulatorConfig, run_simulator_in_thread

GPU_LABEL = "accelerator"
MEMBERS_KUBECONFIG = "members.kubeconfig"


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """One simulated member: where it is and what it can hold."""

    name: str
    region: str
    zone: str
    nodes: int
    cpu: str
    memory: str
    storage: str
    gpus: int = 0

    def labels(self) -> dict[str, str]:
        """Beyond the topology labels the join sets from region and zone."""
        return {GPU_LABEL: "nvidia-gpu"} if self.gpus else {}

    def describe(self) -> str:
        gpu = f", {self.gpus} GPU" if self.gpus else ""
        return f"{self.nodes} node(s) x {self.cpu} CPU / {self.memory}{gpu}"

    def simulator(self, ready_delay: float) -> SimulatorConfig:
        return SimulatorConfig(
            name=self.name,
            nodes=self.nodes,
            node_cpu=self.cpu,
            node_memory=self.memory,
            node_storage=self.storage,
            node_gpu=self.gpus,
            region=self.region,
            zone=self.zone,
            ready_delay=ready_delay,
        )


# Small, large, tiny-with-a-GPU: Divided and dynamic-weight placements come out uneven on purpose.
SHAPES = (
    ("region-a", 2, "4", "16Gi", "100Gi", 0),
    ("region-b", 3, "8", "32Gi", "200Gi", 0),
    ("region-c", 1, "2", "8Gi", "50Gi", 1),
)


def member_specs(count: int) -> list[MemberSpec]:
    """member1..N; beyond three, the shapes repeat in new regions (region-d, region-e, ...)."""
    specs = []
    for index in range(count):
        region, nodes, cpu, memory, storage, gpus = SHAPES[index % len(SHAPES)]
        if index >= len(SHAPES):
            region = f"region-{chr(ord('a') + index)}"
        specs.append(
            MemberSpec(f"member{index + 1}", region, f"{region}-1", nodes, cpu, memory, storage, gpus)
        )
    return specs


@dataclass
class UpStack:
    """Everything `up` runs; `stop` takes it down in order."""

    process: server.ServerProcess
    members: list[tuple[MemberSpec, RunningSimulator]] = field(default_factory=list)
    rejoined: list[str] = field(default_factory=list)

    @property
    def members_kubeconfig(self) -> Path:
        return self.process.settings.data_dir / MEMBERS_KUBECONFIG

    def stop(self) -> None:
        self.process.stop()
        _stop_all([sim for _, sim in self.members])


def _stop_all(simulators: list[RunningSimulator]) -> None:
    for sim in simulators:
        sim.stop()


def start_up(
    settings: Settings, kubeconfig_path: Path | None = None, members: int = 3, ready_delay: float = 0.5
) -> UpStack:
    """Start the simulators, the server and the controllers, and join the members; stop all on failure."""
    specs = member_specs(members)
    simulators: list[RunningSimulator] = []
    try:
        for spec in specs:
            simulators.append(run_simulator_in_thread(spec.simulator(ready_delay)))
        process = server.build(settings, kubeconfig_path)
    except BaseException:
        _stop_all(simulators)
        raise
    stack = UpStack(process, list(zip(specs, simulators, strict=True)))
    try:
        process.start_in_thread()
        for spec, sim in stack.members:
            if join_member(_context(process), spec, sim) == "rejoined":
                stack.rejoined.append(spec.name)
        write_kubeconfig(stack.members_kubeconfig, members_kubeconfig([sim for _, sim in stack.members]))
    except BaseException:
        stack.stop()
        raise
    return stack


def members_kubeconfig(simulators: list[RunningSimulator]) -> dict[str, Any]:
    """One kubeconfig with a cluster, user and context per member, each named after it (the first current)."""
    merged: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [],
        "users": [],
        "contexts": [],
    }
    for sim in simulators:
        for section in ("clusters", "users", "contexts"):
            merged[section] += sim.kubeconfig[section]
    merged["current-context"] = simulators[0].name if simulators else ""
    merged["preferences"] = {}
    return merged


def _context(process: server.ServerProcess) -> ApiContext:
    assert process.api_context is not None  # build() prepared it
    return process.api_context


def join_member(ctx: ApiContext, spec: MemberSpec, sim: RunningSimulator) -> str:
    """Join one member ("joined"), or re-point the Cluster a previous `up` joined ("rejoined")."""
    request = JoinRequest(
        name=spec.name, kubeconfig=sim.kubeconfig, region=spec.region, zone=spec.zone, labels=spec.labels()
    )
    try:
        join_cluster(ctx.uow, ctx.secret_box, ctx.settings.members, request)
        result = "joined"
    except StatusError as err:
        if err.reason != "AlreadyExists":
            raise
        rejoin_cluster(ctx.uow, ctx.secret_box, ctx.settings.members, request)  # the restarted member
        ctx.notify("Work")
        result = "rejoined"
    ctx.notify("Cluster")
    return result


# -- the command ---------------------------------------------------------------------------------------


def examples_dir() -> Path:
    """`config/examples` as the user can type it: relative when run from the repository, else absolute."""
    relative = Path("config/examples")
    if relative.is_dir():
        return relative
    return Path(__file__).resolve().parents[2] / "config" / "examples"


def announce(stack: UpStack, settings: Settings) -> None:
    process = stack.process
    click.echo(f"federation is up: API server at {process.url} (data in {settings.data_dir})")
    click.echo("member clusters (simulated, Push mode):")
    for spec, sim in stack.members:
        again = " (re-joined)" if spec.name in stack.rejoined else ""
        click.echo(f"  {spec.name:<9} {spec.region:<9} {spec.describe():<34} {sim.url}{again}")
    for line in kubeconfig_lines(process):
        click.echo(line)
    members = stack.members_kubeconfig
    first = stack.members[0][0].name
    click.echo(f"the members' kubeconfig (a context per member) is {members}:")
    click.echo(f"  kubectl --kubeconfig {members} --context {first} get deploy -A")
    click.echo("try:")
    examples = examples_dir()
    click.echo(f"  federation apply -f {examples / 'divided-static-weight.yaml'}")
    click.echo("  federation get rb")
    click.echo("  federation get works -A")
    click.echo("Ctrl-C stops everything.")


@click.command("up")
@click.option("--data-dir", default=None, help="Where the embedded database and key live.")
@click.option("--port", type=int, default=None, help="API port (default from settings, 7080; 0 picks one).")
@click.option(
    "--members", type=click.IntRange(1, 20), default=3, show_default=True, help="Simulated members."
)
@click.option(
    "--ready-delay",
    type=click.FloatRange(min=0),
    default=0.5,
    show_default=True,
    help="Seconds until a pod is ready.",
)
@tls_options
@pass_cli
def up_command(
    cli: CliContext,
    data_dir: str | None,
    port: int | None,
    members: int,
    ready_delay: float,
    tls_cert_file: str | None,
    tls_private_key_file: str | None,
    insecure_http: bool,
) -> None:
    """Run everything locally: SQLite, the API server, all controllers and simulated members, joined."""
    tls = tls_settings(tls_cert_file, tls_private_key_file, insecure_http)
    settings = settings_from(cli, data_dir, "", port=port, **tls)  # always the embedded SQLite
    server.tune_malloc()
    configure_logging("warning" if settings.log_level == "info" else settings.log_level)
    # A controller pass outlasting its interval is normal on a laptop; keep the console for real trouble.
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
    try:
        stack = start_up(settings, None, members, ready_delay)
    except ValueError as err:  # settings checked only when built (the TLS files)
        raise click.ClickException(f"bad settings: {' '.join(str(err).split())}") from err
    except (StatusError, OSError, RuntimeError) as err:
        raise click.ClickException(f"federation up failed: {getattr(err, 'message', err)}") from err
    server.tune_collector(settings)
    try:
        announce(stack, settings)
        wait_for_stop()
    finally:
        click.echo("stopping ...")
        stack.stop()
        click.echo("stopped")
