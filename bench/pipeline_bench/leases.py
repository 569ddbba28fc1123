"""The lease load (``--lease-clusters``): N pull-mode agents renewing their cluster's heartbeat lease every
``--lease-interval`` seconds through the API while the pipeline runs, with the body ``federation agent``
sends (``members.agent_api.renew_lease``); each renewal's latency is kept apart from the Deployment writes.

The server renews a lease only for a cluster that exists (``api.agent``: 404 otherwise, 200 for the first
renewal and every later one), so the set-up (not timed) joins the N clusters as Pull clusters (nothing to
probe, no credentials), renews each lease once and waits until the status controller has published them
Ready: the timed phase then sees a steady fleet renewing, not N clusters turning Ready. The wait reads the
database, not the API: a LIST would start that server's change-log reader (``api.watchhub``), which then
polls for the rest of the process's life and would show in the idle figures.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import psycopg

LEASE_NAMESPACE = "karmada-cluster"
LEASE_PREFIX = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases"
LEASE_DURATION_SECONDS = 40  # what `federation agent` sends (Karmada's --cluster-lease-duration)
JOIN_PATH = "/federation/v1/clusters/join"
AGENT_PREFIX = "lease-agent-"
READY_AGENTS = "SELECT count(*) FROM clusters WHERE sync_mode = 'Pull' AND ready AND name LIKE %s"
# The agents stop with the timed phase. With Karmada's 40 s monitor grace their N clusters would turn
# Unknown (N status writes, NoSchedule taints, the bindings re-queued) during the idle window or the cold
# start; the servers get a grace longer than any run instead. The timed phase is not affected while the
# agents keep up (each lease is renewed every interval; ``behind`` counts the renewals that were not).
MONITOR_GRACE_ENV = "FEDERATION_CONTROLLERS__MONITOR_GRACE_PERIOD_SECONDS"
MONITOR_GRACE_SECONDS = 24 * 3600


def agent_names(count: int) -> list[str]:
    return [f"{AGENT_PREFIX}{i:04d}" for i in range(count)]


def lease_body(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": LEASE_NAMESPACE},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": LEASE_DURATION_SECONDS},
    }


def renew(http: httpx.Client, name: str) -> None:
    answer = http.put(f"{LEASE_PREFIX}/{name}", json=lease_body(name))
    if answer.status_code != 200:
        raise RuntimeError(f"renew lease {name}: {answer.status_code} {answer.text[:300]}")


def join_agents(http: httpx.Client, names: list[str]) -> None:
    """Set-up: join the agents' clusters (Pull) and renew each lease once."""
    for name in names:
        answer = http.post(JOIN_PATH, json={"name": name, "syncMode": "Pull"})
        if answer.status_code != 201:
            raise RuntimeError(f"join {name}: {answer.status_code} {answer.text[:300]}")
    for name in names:
        renew(http, name)


def ready_agents(db_url: str) -> int:
    """How many of the agents' clusters the status controller has published Ready (the ``ready`` column
    is derived from the Ready condition on each write)."""
    with psycopg.connect(db_url, autocommit=True) as conn:
        row = conn.execute(READY_AGENTS, (AGENT_PREFIX + "%",)).fetchone()
    return int(row[0]) if row else 0


@dataclass
class LeaseRenewals:
    """What the lease load did: each successful renewal's latency, how late each renewal started after its
    slot and how many more than one interval late (the generator could not keep up), the failed ones (not
    retried: the agent renews again one interval later)."""

    latencies_ms: list[float] = field(default_factory=list)
    late_ms: list[float] = field(default_factory=list)
    behind: int = 0
    failures: int = 0
    first_failure: str | None = None
    seconds: float = 0.0


class LeaseLoad:
    """Renewal k is agent k mod N's, due at start + k * interval / N: N renewals per interval, evenly
    spread. Each of ``threads`` threads (keep-alive, thread i talking to ``urls[i mod len(urls)]``) takes the
    next slot, waits for it and renews, so a slow answer delays only the slots that no other thread is free
    for; a slot taken late is still renewed (as an agent whose timer fired late), and counted."""

    def __init__(self, urls: list[str], token: str, names: list[str], interval: float, threads: int) -> None:
        self.urls = urls
        self.headers = {"Authorization": f"Bearer {token}"}
        self.names = names
        self.interval = interval
        self.spacing = interval / len(names)
        self.result = LeaseRenewals()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._next_slot = 0
        self._start = 0.0
        self._threads = [
            threading.Thread(target=self._renewer, args=(i,), name=f"lease-agents{i}", daemon=True)
            for i in range(max(threads, len(urls)))  # every target replica gets renewals
        ]

    def start(self) -> None:
        self._start = time.perf_counter()
        for thread in self._threads:
            thread.start()

    def stop(self) -> LeaseRenewals:
        """Stop taking slots; the renewals in flight finish."""
        self._stopping.set()
        for thread in self._threads:
            thread.join()
        self.result.seconds = time.perf_counter() - self._start
        return self.result

    def _take_slot(self) -> int:
        with self._lock:
            slot = self._next_slot
            self._next_slot += 1
            return slot

    def _renewer(self, index: int) -> None:
        url = self.urls[index % len(self.urls)]
        with httpx.Client(base_url=url, headers=self.headers, timeout=30) as http:
            while not self._stopping.is_set():
                slot = self._take_slot()
                due = self._start + slot * self.spacing
                if self._stopping.wait(max(0.0, due - time.perf_counter())):
                    return
                started = time.perf_counter()
                try:
                    renew(http, self.names[slot % len(self.names)])
                except (httpx.HTTPError, RuntimeError) as exc:
                    self._failed(started - due, exc)
                    continue
                self._renewed(started - due, (time.perf_counter() - started) * 1000)

    def _renewed(self, late: float, elapsed_ms: float) -> None:
        with self._lock:
            self.result.latencies_ms.append(elapsed_ms)
            self._started(late)

    def _failed(self, late: float, exc: BaseException) -> None:
        with self._lock:
            self.result.failures += 1
            self._started(late)
            if self.result.first_failure is None:
                self.result.first_failure = f"{type(exc).__name__}: {exc}"[:300]

    def _started(self, late: float) -> None:
        self.result.late_ms.append(late * 1000)
        if late > self.interval:
            self.result.behind += 1
