"""The member simulator under a federation's load: N managed Deployments applied one by one, then the paged
LISTs the federation's status collection makes every 10 s (issue 12: at 10,000 bindings the simulator,
not the federation, set the pace).

One command: ``bench/bench_sim.py [--deployments 3000] [--per-namespace 20] [--lists 3] [--nodes 20]
[--node-pods 2000] [--json]``; ``--nodes 1 --node-pods 300`` measures a member short of room (most pods
pending, as when a failover moves more replicas to a cluster than it can run).

One simulator in this process (real socket, TLS, by default 20 nodes with room for every pod, pods ready at
once),
driven through ``KubernetesMemberClient`` (the official ``kubernetes`` client), as work sync and work status
drive a member: server-side applies of 1-replica Deployments labelled ``karmada.io/managed=true``, 20 per
namespace; then, ``--lists`` times, the work status LIST (``visit_labelled``, pages of 500) and the cluster
status controller's resource summary (nodes and pods, paged). Figures: the applies' seconds in all and
per apply over the last 10%, and each LIST's seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from typing import Any

from pipeline_bench.workload import deployment

from federation.members.client import KubernetesMemberClient
from federation.sim import run_simulator_in_thread
from federation.sim.config import SimulatorConfig

MANAGED = "karmada.io/managed"


def managed_deployment(name: str, namespace: str) -> dict[str, Any]:
    """The pipeline's Deployment (1 replica) as work sync applies it: labelled managed."""
    body = deployment(name, namespace, 1)
    body["metadata"]["labels"][MANAGED] = "true"
    return body


class _Pages:
    """Counts what a paged LIST hands over, a page at a time."""

    def __init__(self) -> None:
        self.objects = 0

    def add(self, page: list[dict[str, Any]]) -> None:
        self.objects += len(page)


def run(args: argparse.Namespace) -> dict[str, Any]:
    config = SimulatorConfig(
        name="member1",
        nodes=args.nodes,
        node_cpu="400",
        node_memory="1600Gi",
        node_pods=args.node_pods,
        ready_delay=0.0,
    )
    sim = run_simulator_in_thread(config)
    try:
        member = KubernetesMemberClient("member1", sim.kubeconfig)
        seconds: list[float] = []
        for i in range(args.deployments):
            namespace = f"ns{i // args.per_namespace}"
            if i % args.per_namespace == 0:
                member.ensure_namespace(namespace)
            started = time.perf_counter()
            member.apply(managed_deployment(f"app{i}", namespace))
            seconds.append(time.perf_counter() - started)
        tail = seconds[-max(1, len(seconds) // 10) :]
        lists, summaries = [], []
        for _ in range(args.lists):
            started, pages = time.perf_counter(), _Pages()
            member.visit_labelled("apps/v1", "Deployment", f"{MANAGED}=true", pages.add)
            lists.append(round(time.perf_counter() - started, 3))
            assert pages.objects == args.deployments, pages.objects
            started = time.perf_counter()
            member.resource_summary()
            summaries.append(round(time.perf_counter() - started, 3))
    finally:
        sim.sim.server.should_exit = True
    return {
        "deployments": args.deployments,
        "pods_room": args.nodes * args.node_pods,
        "applies_seconds": round(sum(seconds), 2),
        "apply_ms_last_10_percent": round(1000 * statistics.mean(tail), 2),
        "list_deployments_seconds": lists,
        "resource_summary_seconds": summaries,
        "machine": f"{platform.system()} {platform.release()} {platform.machine()}, {os.cpu_count()} cores",
        "python": platform.python_version(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deployments", type=int, default=3000)
    parser.add_argument("--per-namespace", type=int, default=20)
    parser.add_argument("--lists", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--node-pods", type=int, default=2000, help="pods each node has room for")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args)
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
