"""What a fleet of periodic callers costs the API server per call: Pull agents, each with a client of its own,
calling every ``--interval`` seconds over TLS (issue 12: the API under a fleet's heartbeats; `listening`'s
idle-connection times).

One command: ``bench/bench_keep_alive.py [--agents 100] [--interval 10] [--seconds 40] [--json]``.

Set-up (not timed): ``federation serve --no-controllers`` as an operator runs it (TLS, its own embedded
database in a temporary data directory, nothing else running in it), and ``--agents`` clients made as
``federation agent`` makes its client (``federation.apiclient.ApiClient``: the kubeconfig's CA and token).
Timed: every client calls ``GET /version`` (no database, no auth: the connection's cost, not a handler's)
once per ``--interval`` seconds, the clients' first calls spread evenly over the first interval, for
``--seconds``. bench_leases.py, by contrast, renews leases back to back from a few keep-alive clients and
never leaves a connection idle.

Figures: calls, connections opened (distinct client ports per agent: a reused connection keeps its port), the
server's CPU over the timed window (``/proc``, the `serve` process and its children) per call, call latency
p50 / p99. The code under test is the ``federation`` this interpreter imports (``PYTHONPATH`` names another
checkout): the server's idle timeout and the client's both.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from pipeline_bench.processes import child_pids, free_port, process_cpu_seconds

import federation
from federation.apiclient import ApiClient, tls_verify
from federation.cli.clientconfig import ClientFlags, resolve


def start_server(data_dir: Path, log: Path) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    port = free_port()
    kubeconfig = data_dir / "federation.kubeconfig"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FEDERATION_")}
    command = [sys.executable, "-m", "federation", "serve", "--no-controllers", "--port", str(port)]
    with log.open("ab") as out:
        process = subprocess.Popen([*command, "--data-dir", str(data_dir)], env=env, stdout=out, stderr=out)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if kubeconfig.exists():
            config = resolve(ClientFlags(kubeconfig=str(kubeconfig)))
            try:
                ready = httpx.get(f"{config.server}/readyz", verify=tls_verify(config.ca_pem), timeout=2)
                if ready.status_code == 200:
                    return process, {"server": config.server, "token": config.token, "ca": config.ca_pem}
            except httpx.HTTPError:
                pass
        time.sleep(0.1)
    process.kill()
    raise SystemExit(f"serve did not become ready; see {log}")


def server_cpu(pid: int) -> float:
    return process_cpu_seconds(pid) + sum(process_cpu_seconds(child) for child in child_pids(pid))


def run_agents(config: dict[str, Any], agents: int, interval: float, seconds: float) -> dict[str, Any]:
    clients = [ApiClient(config["server"], config["token"], ca_pem=config["ca"]) for _ in range(agents)]
    latencies: list[float] = []
    ports: list[set[int]] = [set() for _ in range(agents)]
    lock = threading.Lock()
    start = time.monotonic() + 0.5

    def agent(index: int) -> None:
        http = clients[index]._http  # the client's own pool, read for the connection's port
        at = start + interval * index / agents
        while at < start + seconds:
            time.sleep(max(0.0, at - time.monotonic()))
            began = time.perf_counter()
            response = http.get("/version")
            took = time.perf_counter() - began
            port = response.extensions["network_stream"].get_extra_info("client_addr")[1]
            response.raise_for_status()
            with lock:
                latencies.append(took)
                ports[index].add(port)
            at += interval

    threads = [threading.Thread(target=agent, args=(i,)) for i in range(agents)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for client in clients:
        client.close()
    ordered = sorted(latencies)
    return {
        "calls": len(latencies),
        "connections": sum(len(p) for p in ports),
        "call_p50_ms": round(1000 * statistics.median(ordered), 2),
        "call_p99_ms": round(1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--interval", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-keep-alive-") as scratch:
        process, config = start_server(Path(scratch) / "data", Path(scratch) / "serve.log")
        try:
            time.sleep(2.0)  # past the start's own work
            before = server_cpu(process.pid)
            figures = run_agents(config, args.agents, args.interval, args.seconds)
            cpu = server_cpu(process.pid) - before
        finally:
            process.terminate()
            process.wait(timeout=60)
    figures.update(
        agents=args.agents,
        interval_s=args.interval,
        seconds=args.seconds,
        server_cpu_s=round(cpu, 3),
        server_cpu_ms_per_call=round(1000 * cpu / max(1, figures["calls"]), 3),
        code=str(Path(federation.__file__).parent.parent),
        machine=f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores",
        python=platform.python_version(),
    )
    if args.json:
        print(json.dumps(figures))
    else:
        for key, value in figures.items():
            print(f"{key:>24}: {value}")


if __name__ == "__main__":
    main()
