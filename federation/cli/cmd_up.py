"""`federation up`: the whole federation in one process, no setup.

SQLite under the data directory, the API server with every controller (`server.build`), and N simulated
member clusters (default 3, with different regions and capacities so placement has choices to make),
joined in Push mode through the join code path (`api.join.join_cluster`: validated, probed, stored
encrypted). The CLI is configured through the client config the server writes.

Invariants:
- Re-running on the same data directory works: the members come back on new ports with new tokens, and
  each existing Cluster is re-pointed (apiEndpoint, credentials, the status the join probe saw), its user
  edits (taints, other labels) kept, and its Works marked for sync so the fresh member gets them again.
- Whatever fails half-way is stopped again (simulators, server, controllers); Ctrl-C or SIGTERM stops
  everything: controllers and the API server first, then the members.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import click

from federation.api.app import ApiContext
from federation.api.join import JoinRequest, initial_status, join_cluster, probe_member, resolve_kubeconfig
from federation.api.status import StatusError
from federation.cli import server
from federation.cli.cmd_server import configure_logging, settings_from
from federation.cli.context import CliContext, pass_cli
from federation.cli.signals import wait_for_stop
from federation.members.sim import RunningSimulator, SimulatorConfig, run_simulator_in_thread
from federation.settings import Settings, default_client_config_path
from federation.store.clusters import ClusterRepository
from federation.store.works import WorkRepository

REGION_LABEL = "topology.kubernetes.io/region"
ZONE_LABEL = "topology.kubernetes.io/zone"
GPU_LABEL = "accelerator"


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
        labels = {REGION_LABEL: self.region, ZONE_LABEL: self.zone}
        return {**labels, GPU_LABEL: "nvidia-gpu"} if self.gpus else labels

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

    def stop(self) -> None:
        self.process.stop()
        _stop_all([sim for _, sim in self.members])


def _stop_all(simulators: list[RunningSimulator]) -> None:
    for sim in simulators:
        sim.stop()


def start_up(
    settings: Settings, client_config_path: Path, members: int = 3, ready_delay: float = 0.5
) -> UpStack:
    """Start the simulators, the server and the controllers, and join the members; stop all on failure."""
    specs = member_specs(members)
    simulators: list[RunningSimulator] = []
    try:
        for spec in specs:
            simulators.append(run_simulator_in_thread(spec.simulator(ready_delay)))
        process = server.build(settings, client_config_path)
    except BaseException:
        _stop_all(simulators)
        raise
    stack = UpStack(process, list(zip(specs, simulators, strict=True)))
    try:
        process.start_in_thread()
        for spec, sim in stack.members:
            if join_member(_context(process), spec, sim) == "rejoined":
                stack.rejoined.append(spec.name)
    except BaseException:
        stack.stop()
        raise
    return stack


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
        rejoin_member(ctx, request)
        result = "rejoined"
    ctx.notify("Cluster")
    return result


def rejoin_member(ctx: ApiContext, request: JoinRequest) -> None:
    """Point an existing Cluster at a restarted member: the join's checks and probe, then an update."""
    config = resolve_kubeconfig(request)
    assert config is not None  # a Push join always carries a kubeconfig
    facts = probe_member(request.name, config, ctx.settings.members)
    with ctx.uow() as session:
        clusters = ClusterRepository(session)
        cluster = clusters.get(request.name)
        if cluster is None:  # unjoined meanwhile: join it afresh
            raise StatusError(409, "Conflict", f"cluster {request.name} disappeared while re-joining it")
        cluster["spec"] = {**cluster.get("spec", {}), "apiEndpoint": config.server}
        cluster["metadata"]["labels"] = {**(cluster["metadata"].get("labels") or {}), **request.labels}
        updated = clusters.objects.replace(cluster)
        status = {**(updated.get("status") or {}), **initial_status(facts, datetime.now(UTC))}
        clusters.objects.update_status("", request.name, status)
        clusters.set_kubeconfig(request.name, config.minimal, ctx.secret_box)
        works = WorkRepository(session)
        for work in works.on_cluster(request.name):  # the restarted member is empty
            works.mark_needs_sync(work["metadata"]["namespace"], work["metadata"]["name"])
    ctx.notify("Work")


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
    if process.admin_token or process.client_config_path.exists():
        click.echo(f"the CLI is configured ({process.client_config_path}); try:")
    else:
        click.echo("no client config with a token was found; create one with")
        click.echo(f"  federation token create --role admin --data-dir {settings.data_dir}")
        click.echo("and pass it with --token or FEDERATION_TOKEN; then try:")
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
@pass_cli
def up_command(
    cli: CliContext, data_dir: str | None, port: int | None, members: int, ready_delay: float
) -> None:
    """Run everything locally: SQLite, the API server, all controllers and simulated members, joined."""
    settings = settings_from(cli, data_dir, "", port=port)  # always the embedded SQLite
    configure_logging("warning" if settings.log_level == "info" else settings.log_level)
    # A controller pass outlasting its interval is normal on a laptop; keep the console for real trouble.
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
    try:
        stack = start_up(settings, default_client_config_path(), members, ready_delay)
    except (StatusError, OSError, RuntimeError) as err:
        raise click.ClickException(f"federation up failed: {getattr(err, 'message', err)}") from err
    try:
        announce(stack, settings)
        wait_for_stop()
    finally:
        click.echo("stopping ...")
        stack.stop()
        click.echo("stopped")
