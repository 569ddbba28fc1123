"""``federation sim``: run one simulated member cluster in the foreground until Ctrl-C.

Invariant: the kubeconfig (when asked for) is written before the URL is printed, so a script that waits for
the URL line can use the file at once; it is 0600 (it holds the member's bearer token).
"""

from __future__ import annotations

import dataclasses

import click

from federation import gc_tuning
from federation.members.kubeconfig import write_kubeconfig
from federation.sim import Simulator, SimulatorConfig


@click.command("sim")
@click.option(
    "--name", default="member1", show_default=True, help="Cluster name (kubeconfig context, node prefix)."
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=0, show_default=True, type=int, help="Port; 0 picks a free one.")
@click.option("--nodes", default=3, show_default=True, type=click.IntRange(min=0), help="Simulated nodes.")
@click.option("--node-cpu", default="8", show_default=True, help="CPU per node (quantity).")
@click.option("--node-memory", default="32Gi", show_default=True, help="Memory per node (quantity).")
@click.option("--node-storage", default="200Gi", show_default=True, help="Ephemeral storage per node.")
@click.option(
    "--node-pods", default=110, show_default=True, type=click.IntRange(min=0), help="Pods per node."
)
@click.option(
    "--node-gpu", default=0, show_default=True, type=click.IntRange(min=0), help="nvidia.com/gpu per node."
)
@click.option("--region", default="", help="topology.kubernetes.io/region label on every node.")
@click.option("--zone", default="", help="topology.kubernetes.io/zone label on every node.")
@click.option(
    "--kubeconfig-out", type=click.Path(dir_okay=False, writable=True), help="Write a kubeconfig here."
)
@click.option(
    "--ready-delay",
    default=0.5,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Seconds until a pod is Ready.",
)
@click.option("--token", default=None, help="Bearer token clients must send (default: random).")
@click.option("--insecure-http", is_flag=True, help="Serve plain HTTP (kubectl will not send the token).")
@click.option("--down", is_flag=True, help="Fault: start down (every request 503).")
@click.option("--latency-ms", default=0, type=click.IntRange(min=0), help="Fault: added latency per request.")
@click.option(
    "--error-rate",
    default=0.0,
    type=click.FloatRange(0.0, 1.0),
    help="Fault: share of requests that fail (500).",
)
@click.option(
    "--unhealthy",
    multiple=True,
    metavar="NS/NAME",
    help="Fault: this workload's pods crash-loop (repeatable).",
)
@click.option("--seed", default=0, type=int, help="Seed for the error rate and pod names.")
def sim_command(
    name: str,
    host: str,
    port: int,
    nodes: int,
    node_cpu: str,
    node_memory: str,
    node_storage: str,
    node_pods: int,
    node_gpu: int,
    region: str,
    zone: str,
    kubeconfig_out: str | None,
    ready_delay: float,
    token: str | None,
    insecure_http: bool,
    down: bool,
    latency_ms: int,
    error_rate: float,
    unhealthy: tuple[str, ...],
    seed: int,
) -> None:
    """Run a simulated member cluster (a Kubernetes API subset with simulated nodes and pods)."""
    config = SimulatorConfig(
        name=name,
        host=host,
        port=port,
        nodes=nodes,
        node_cpu=node_cpu,
        node_memory=node_memory,
        node_storage=node_storage,
        node_pods=node_pods,
        node_gpu=node_gpu,
        region=region,
        zone=zone,
        ready_delay=ready_delay,
        tls=not insecure_http,
        seed=seed,
        down=down,
        latency_ms=latency_ms,
        error_rate=error_rate,
        unhealthy=unhealthy,
    )
    if token:
        config = dataclasses.replace(config, token=token)
    simulator = Simulator(config)
    if kubeconfig_out:
        write_kubeconfig(kubeconfig_out, simulator.kubeconfig)
        click.echo(f"kubeconfig written to {kubeconfig_out} (context {name})")
    click.echo(f"member cluster {name} serving at {simulator.url}")
    click.echo("faults: POST /_sim/faults {down, latency_ms, error_rate, unhealthy}; Ctrl-C stops")
    gc_tuning.tune()  # a member under load allocates as a control plane does (gc_tuning)
    simulator.serve_forever()
