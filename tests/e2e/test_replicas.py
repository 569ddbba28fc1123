"""Two real `federation serve` processes on one Postgres (issue 12, "Replicas and fencing").

Both serve the API; one leads the controllers (each replica runs them in a child process of its own).
The leader (both its processes) is SIGKILLed while it is placing and pushing a burst of workloads: the
other replica takes the lease over, drops the dead leader's claims and finishes the work, and the final
state is exactly the expected one — every Deployment on both members with its share of replicas, one
Work per binding and cluster, none lost and none twice.

A SIGTERMed leader stops cleanly instead: it exits 0 and releases its lease on the way out, so the other
replica leads at its next try, long before that lease would have run out.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import pytest
import yaml
from sqlalchemy import select

from federation.model.work import work_name
from federation.sim import RunningSimulator, SimulatorConfig, run_simulator_in_thread
from federation.store.crypto import generate_key
from federation.store.db import make_engine
from federation.store.tables import LeaseRow
from tests.conftest import _reset_postgres
from tests.e2e.test_three_members import DEPLOYMENTS, POLICIES, join, member_replicas, put
from tests.members.helpers import deployment, wait_for

pytestmark = pytest.mark.postgres

WORKLOADS = 30
DEADLINE = 90.0
LEASE_SECONDS = 3
FAST = {
    "STATUS_INTERVAL_SECONDS": "0.5",
    "FAILURE_THRESHOLD_SECONDS": "1",
    "SUCCESS_THRESHOLD_SECONDS": "1",
    "SCHEDULER_INTERVAL_SECONDS": "0.2",
    "EXECUTION_INTERVAL_SECONDS": "0.2",
    "WORK_SYNC_INTERVAL_SECONDS": "0.2",
    "DETECTOR_INTERVAL_SECONDS": "0.2",
    "RETRY_BACKOFF_INITIAL_SECONDS": "0.2",
    "RETRY_BACKOFF_MAX_SECONDS": "1",
    "LEADER_LEASE_SECONDS": str(LEASE_SECONDS),
    "CLAIM_LEASE_SECONDS": str(LEASE_SECONDS),
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Replica:
    """One `federation serve` process (plain HTTP on its own port, its own data directory)."""

    def __init__(
        self,
        tmp_path: Path,
        name: str,
        database_url: str,
        key: str,
        controllers: dict[str, str] | None = None,
        args: tuple[str, ...] = (),
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data_dir = tmp_path / name
        env = {
            **os.environ,
            "FEDERATION_DATABASE_URL": database_url,
            "FEDERATION_SECRETS__ENCRYPTION_KEY": key,
            "FEDERATION_API__PORT": str(self.port),
            "FEDERATION_API__INSECURE_HTTP": "true",
            **{f"FEDERATION_CONTROLLERS__{k}": v for k, v in (FAST | (controllers or {})).items()},
        }
        for name_ in ("FEDERATION_CONFIG", "FEDERATION_SERVER", "FEDERATION_TOKEN", "FEDERATION_DATA_DIR"):
            env.pop(name_, None)
        self.log = (tmp_path / f"{name}.log").open("w")
        command = [sys.executable, "-m", "federation", "serve", "--data-dir", str(self.data_dir), *args]
        # A session of its own: ``crash`` kills the replica's process group, its controllers' child too.
        self.process = subprocess.Popen(
            command, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def crash(self) -> None:
        """SIGKILL the whole replica (`serve` and its controllers' process), as a node that dies does."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def ready(self) -> bool:
        try:
            return httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return self.process.poll() is not None and pytest.fail(f"{self.data_dir.name} exited")

    def admin_token(self) -> str:
        config = yaml.safe_load((self.data_dir / "federation.kubeconfig").read_text())
        return str(config["users"][0]["user"]["token"])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # whatever a failed test left of the group
        self.log.close()


@pytest.fixture
def database(postgres_server_url: str) -> str:
    _reset_postgres(postgres_server_url)
    return postgres_server_url


@pytest.fixture
def members() -> Iterator[dict[str, RunningSimulator]]:
    sims = {
        name: run_simulator_in_thread(SimulatorConfig(name=name, nodes=2, node_cpu="64", ready_delay=0.1))
        for name in ("member1", "member2")
    }
    try:
        yield sims
    finally:
        for sim in sims.values():
            sim.stop()


def leader(database_url: str) -> str | None:
    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            statement = select(LeaseRow.holder).where(LeaseRow.kind == "leader")
            return connection.execute(statement).scalar()
    finally:
        engine.dispose()


class LeaderLease(NamedTuple):
    holder: str | None
    acquired_at: datetime | None
    expires_at: datetime | None


def leader_lease(database_url: str) -> LeaderLease:
    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            columns = (LeaseRow.holder, LeaseRow.acquired_at, LeaseRow.expires_at)
            row = connection.execute(select(*columns).where(LeaseRow.kind == "leader")).one()
            return LeaderLease(*row)
    finally:
        engine.dispose()


def divided(name: str) -> dict[str, Any]:
    static = [{"targetCluster": {"clusterNames": [c]}, "weight": 1} for c in ("member1", "member2")]
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
            "placement": {
                "clusterAffinity": {"clusterNames": ["member1", "member2"]},
                "replicaScheduling": {
                    "replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"staticWeightList": static},
                },
            },
        },
    }


def scheduled(http: httpx.Client) -> int:
    bindings = http.get("/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings").json()["items"]
    return sum(1 for b in bindings if (b.get("spec") or {}).get("clusters"))


def works(http: httpx.Client, cluster: str) -> list[str]:
    listed = http.get(f"/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-{cluster}/works").json()
    return sorted(w["metadata"]["name"] for w in listed["items"])


def wait_for_shares(members: dict[str, RunningSimulator], want: dict[str, int]) -> None:
    """Until each Deployment named in ``want`` runs that many replicas (ready) on both members."""

    def converged() -> bool:
        return all(
            member_replicas(members[cluster], name) == (share, share)
            for name, share in want.items()
            for cluster in ("member1", "member2")
        )

    wait_for(converged, timeout=DEADLINE, interval=0.5, what="every workload on both members")


def test_sigkill_of_the_leader_hands_its_work_to_the_other_replica(
    tmp_path: Path, database: str, members: dict[str, RunningSimulator]
) -> None:
    key = generate_key().decode()  # both replicas seal and unseal member credentials with it
    first = Replica(tmp_path, "first", database, key)
    replicas = [first]
    try:
        wait_for(first.ready, timeout=DEADLINE, interval=0.1, what="the first replica to be ready")
        wait_for(lambda: leader(database), timeout=DEADLINE, interval=0.1, what="a leader")
        first_leader = leader(database)
        second = Replica(tmp_path, "second", database, key)
        replicas.append(second)
        wait_for(second.ready, timeout=DEADLINE, interval=0.1, what="the second replica to be ready")
        headers = {"Authorization": f"Bearer {first.admin_token()}"}
        with httpx.Client(base_url=second.url, headers=headers, timeout=30) as http:
            for name in ("member1", "member2"):
                join(http, name, members[name])
            put(http, POLICIES, divided("spread"))
            for index in range(WORKLOADS):  # through the follower: every replica serves the API
                put(http, DEPLOYMENTS, deployment(f"app{index:02d}", 2))
            wait_for(lambda: scheduled(http) > 0, timeout=DEADLINE, interval=0.05, what="the first placement")
            first.crash()  # mid-burst: claims held, Works half written
            assert leader(database) == first_leader  # its lease outlives it ...
            wait_for(
                lambda: leader(database) not in (None, first_leader),
                timeout=DEADLINE,
                interval=0.2,
                what="the second replica to take the lease",
            )
            put(http, DEPLOYMENTS, deployment("after-the-crash", 4))  # new work lands on the new leader
            want = {f"app{index:02d}": 1 for index in range(WORKLOADS)} | {"after-the-crash": 2}
            wait_for_shares(members, want)
            expected = sorted(work_name("default", name, "Deployment") for name in want)
            assert works(http, "member1") == expected
            assert works(http, "member2") == expected
            assert scheduled(http) == len(want)
    finally:
        for replica in replicas:
            replica.stop()


def test_sigterm_of_the_leader_releases_its_lease_to_the_other_replica(tmp_path: Path, database: str) -> None:
    # A long lease: were it not released, the other replica could not lead for a minute. It tries to take
    # the lease every lease/3 (20 s), and has taken it at the latest then.
    long_lease = {"LEADER_LEASE_SECONDS": "60", "CLAIM_LEASE_SECONDS": "60"}
    key = generate_key().decode()
    first = Replica(tmp_path, "first", database, key, long_lease)
    replicas = [first]
    try:
        wait_for(first.ready, timeout=DEADLINE, interval=0.1, what="the first replica to be ready")
        wait_for(lambda: leader(database), timeout=DEADLINE, interval=0.1, what="a leader")
        second = Replica(tmp_path, "second", database, key, long_lease)
        replicas.append(second)
        wait_for(second.ready, timeout=DEADLINE, interval=0.1, what="the second replica to be ready")
        held = leader_lease(database)
        assert held.holder is not None and held.expires_at is not None

        first.process.send_signal(signal.SIGTERM)
        assert first.process.wait(timeout=DEADLINE) == 0
        released = leader_lease(database)
        assert released.holder != held.holder  # given up on the way out, not left to run out
        if released.holder is None:  # (the second replica's first try may have taken it already)
            assert released.expires_at is not None and released.expires_at < held.expires_at

        def taken_by_another() -> LeaderLease | None:
            lease = leader_lease(database)
            return lease if lease.holder not in (None, held.holder) else None

        taken = wait_for(
            taken_by_another,
            timeout=DEADLINE,
            interval=0.2,
            what="the second replica to take the lease",
        )
        assert taken is not None and taken.acquired_at is not None
        assert taken.acquired_at < held.expires_at  # while the first one's lease would still be valid
        log = (tmp_path / "first.log").read_text()
        assert "stopping on SIGTERM" in log and "Traceback" not in log
    finally:
        for replica in replicas:
            replica.stop()


def test_an_api_only_replica_serves_writes_that_the_controller_replica_carries_out(
    tmp_path: Path, database: str, members: dict[str, RunningSimulator]
) -> None:
    """`serve --no-controllers` scales the API apart from the controllers: it never leads, not even when the
    only replica with controllers is gone, and what is written through it is placed and pushed by the
    replica that runs the controllers."""
    key = generate_key().decode()
    api_only = Replica(tmp_path, "api", database, key, args=("--no-controllers",))
    replicas = [api_only]
    try:
        wait_for(api_only.ready, timeout=DEADLINE, interval=0.1, what="the API replica to be ready")
        headers = {"Authorization": f"Bearer {api_only.admin_token()}"}
        with httpx.Client(base_url=api_only.url, headers=headers, timeout=30) as http:
            for name in ("member1", "member2"):
                join(http, name, members[name])
            put(http, POLICIES, divided("spread"))
            for index in range(4):
                put(http, DEPLOYMENTS, deployment(f"app{index:02d}", 2))
            assert leader(database) is None and scheduled(http) == 0  # nothing runs the controllers yet
            controllers = Replica(tmp_path, "controllers", database, key)
            replicas.append(controllers)
            want = {f"app{index:02d}": 1 for index in range(4)}
            wait_for_shares(members, want)
            held = leader_lease(database)
            assert held.holder is not None and held.expires_at is not None
            run_out = held.expires_at + timedelta(seconds=LEASE_SECONDS)
            controllers.crash()
            # Past the dead leader's lease and a few of the lease job's tries (every lease/3 s) it would make:
            # the API replica has no lease job, so the lease stays the dead one's.
            wait_for(
                lambda: datetime.now(run_out.tzinfo) > run_out,
                timeout=DEADLINE,
                interval=0.2,
                what="the dead leader's lease to run out",
            )
            assert leader_lease(database).holder == held.holder
            assert http.get("/readyz").status_code == 200  # and it still serves
            put(http, DEPLOYMENTS, deployment("while-no-controller-runs", 2))
        log = (tmp_path / "api.log").read_text()
        assert "API only (--no-controllers)" in log and "Traceback" not in log
    finally:
        for replica in replicas:
            replica.stop()
